//! Starts one fake device and prints its port, for trying it by hand:
//! `adb connect 127.0.0.1:PORT`. Runs until killed.

use lomi_adb_fixture::Fixture;

fn main() -> std::io::Result<()> {
    let fixture = Fixture::start()?;
    println!("{}", fixture.port);
    // The fixture serves on its own threads until the process is killed; park may wake
    // spuriously, hence the loop.
    loop {
        std::thread::park();
    }
}
