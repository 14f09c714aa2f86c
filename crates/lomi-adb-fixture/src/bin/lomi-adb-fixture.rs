//! Starts one fake device and prints its port, for trying it by hand or from tests in other
//! languages: `lomi-adb-fixture [PORT]`, then `adb connect 127.0.0.1:PORT`. Every service the
//! host opens is printed as `service: NAME`. Runs until killed.

use std::io::Write;

use lomi_adb_fixture::Fixture;

fn main() -> std::io::Result<()> {
    let port = match std::env::args().nth(1) {
        None => 0,
        Some(port) => port.parse().map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("usage: lomi-adb-fixture [PORT] (got {port:?})"),
            )
        })?,
    };
    let fixture = Fixture::start_on(port, true)?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", fixture.port)?;
    stdout.flush()?;
    drop(stdout);
    // The fixture serves on its own threads until the process is killed; park may wake
    // spuriously, hence the loop.
    loop {
        std::thread::park();
    }
}
