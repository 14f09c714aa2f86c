//! A private `adb` server for tests (`adb -P PORT nodaemon server`), owned by pid, so tests
//! never touch a server on the default port 5037 and leave nothing running.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The adb server process; `adb kill-server`, then a kill by pid, on drop.
pub struct PrivateAdbServer {
    pub port: u16,
    child: Child,
}

impl PrivateAdbServer {
    /// Starts one and waits until it listens. `None` when `adb` is not installed — a failed
    /// assertion instead under `CI=true`, where the test command installs Debian's `adb`.
    pub fn start() -> Option<PrivateAdbServer> {
        if let Err(error) = Command::new("adb").arg("version").output() {
            let message =
                format!("`adb` could not be run ({error}); install Debian's `adb` package");
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
            eprintln!("skipping: {message}");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let child = Command::new("adb")
            .args(["-P", &port.to_string(), "nodaemon", "server"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting `adb nodaemon server`");
        let server = PrivateAdbServer { port, child };
        // Wait for it to listen: an `adb` client that finds no server would start its own.
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "the adb server did not listen on port {port}"
            );
            sleep(Duration::from_millis(50));
        }
        Some(server)
    }
}

impl Drop for PrivateAdbServer {
    fn drop(&mut self) {
        let killed = Command::new("adb")
            .args(["-P", &self.port.to_string(), "kill-server"])
            .output();
        if !matches!(&killed, Ok(output) if output.status.success()) {
            eprintln!(
                "adb kill-server failed ({killed:?}); killing pid {}",
                self.child.id()
            );
            if let Err(error) = self.child.kill() {
                eprintln!("killing the adb server: {error}");
            }
        }
        if let Err(error) = self.child.wait() {
            eprintln!("waiting for the adb server: {error}");
        }
    }
}
