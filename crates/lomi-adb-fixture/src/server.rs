//! A private `adb` server for tests (`adb -P PORT nodaemon server`), owned by pid, so tests
//! never touch a server on the default port 5037 and leave nothing running.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
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
        // One start at a time in this process, since on a new machine the first servers also
        // create the key adb keeps in ~/.android: once, on a fresh machine, a server started
        // beside another never listened (why was not found; three at once here did not do it
        // again). A server that exits is replaced; one that neither listens nor exits fails
        // the test with what it printed.
        static STARTING: Mutex<()> = Mutex::new(());
        let _one_at_a_time = STARTING.lock().unwrap_or_else(|e| e.into_inner());
        let mut said = String::new();
        for _attempt in 0..3 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|listener| listener.local_addr())
                .expect("a free loopback port")
                .port();
            let log = tempfile_for_log();
            let child = Command::new("adb")
                .args(["-P", &port.to_string(), "nodaemon", "server"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log.try_clone().map_or_else(|_| Stdio::null(), Stdio::from))
                .spawn()
                .expect("starting `adb nodaemon server`");
            let mut server = PrivateAdbServer { port, child };
            // Wait for it to listen: an `adb` client that finds no server would start its own.
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Some(server);
                }
                if let Ok(Some(status)) = server.child.try_wait() {
                    // It ended (its port taken meanwhile, say): start another.
                    said = format!("it exited ({status}): {}", read_log(&log));
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "the adb server did not listen on port {port} within 20 s: {}",
                    read_log(&log)
                );
                sleep(Duration::from_millis(50));
            }
        }
        panic!("the adb server did not start three times; the last time {said}");
    }
}

/// An unnamed temp file for an adb server's own messages.
fn tempfile_for_log() -> File {
    tempfile::tempfile().expect("a temp file for the adb server's messages")
}

/// What an adb server wrote to its log file (its last 2,000 bytes).
fn read_log(log: &File) -> String {
    let mut log = log;
    let mut text = String::new();
    let read = log
        .seek(SeekFrom::Start(0))
        .and_then(|_| log.read_to_string(&mut text));
    if let Err(error) = read {
        return format!("(its messages could not be read: {error})");
    }
    let tail = text.len().saturating_sub(2000);
    text[text.ceil_char_boundary(tail)..].trim().to_owned()
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
