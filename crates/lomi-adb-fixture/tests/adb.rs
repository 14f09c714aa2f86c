//! The fixture driven by Debian's real `adb`: a private adb server, `adb connect`, then shell,
//! exec-out screencap, a tap and a `uiautomator` dump, the way Lomi will reach a phone.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use lomi_adb_fixture::{Fixture, SCREEN_HEIGHT, SCREEN_WIDTH};

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// A private adb server (`adb -P PORT nodaemon server`) we own by pid, killed on drop.
struct AdbServer {
    port: u16,
    child: Child,
}

impl AdbServer {
    /// `None` when `adb` is not installed: a failure under CI, a skip elsewhere.
    fn start() -> Option<AdbServer> {
        if let Err(error) = Command::new("adb").arg("version").output() {
            let message =
                format!("`adb` could not be run ({error}); install Debian's `adb` package");
            assert!(std::env::var("CI").as_deref() != Ok("true"), "{message}");
            eprintln!("skipping: {message}");
            return None;
        }
        let port = free_port();
        let child = Command::new("adb")
            .args(["-P", &port.to_string(), "nodaemon", "server"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting `adb nodaemon server`");
        let server = AdbServer { port, child };
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

    fn run(&self, args: &[&str]) -> Output {
        let output = Command::new("adb")
            .args(["-P", &self.port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("running the adb client");
        assert!(
            output.status.success(),
            "adb {args:?} failed: {}",
            describe(&output)
        );
        output
    }

    fn text(&self, args: &[&str]) -> String {
        String::from_utf8(self.run(args).stdout).expect("adb printed UTF-8")
    }

    fn connect(&self, fixture: &Fixture) {
        let serial = fixture.serial();
        let connected = self.text(&["connect", &serial]);
        assert!(
            connected.contains("connected to"),
            "adb connect said: {connected}"
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let devices = self.text(&["devices"]);
            if devices
                .lines()
                .any(|line| line == format!("{serial}\tdevice"))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the fixture never became a device:\n{devices}"
            );
            sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for AdbServer {
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

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("binding a free port");
    listener.local_addr().expect("the bound address").port()
}

fn describe(output: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn screencap(adb: &AdbServer, serial: &str) -> Vec<u8> {
    let png = adb
        .run(&["-s", serial, "exec-out", "screencap", "-p"])
        .stdout;
    assert!(
        png.starts_with(PNG_SIGNATURE),
        "not a PNG: {:?}",
        &png[..png.len().min(16)]
    );
    let image = image::load_from_memory_with_format(&png, image::ImageFormat::Png)
        .expect("the capture decodes");
    assert_eq!(
        (image.width(), image.height()),
        (SCREEN_WIDTH, SCREEN_HEIGHT)
    );
    png
}

#[test]
fn the_real_adb_client_drives_the_fixture() {
    let Some(adb) = AdbServer::start() else {
        return;
    };
    let fixture = Fixture::start().expect("starting the fixture");
    let serial = fixture.serial();
    adb.connect(&fixture);

    let model = adb.text(&["-s", &serial, "shell", "getprop", "ro.product.model"]);
    assert_eq!(model.trim(), "LomiFixture");
    let sdk = adb.text(&["-s", &serial, "shell", "getprop", "ro.build.version.sdk"]);
    assert_eq!(sdk.trim(), "34");
    let size = adb.text(&["-s", &serial, "shell", "wm", "size"]);
    assert_eq!(size.trim(), "Physical size: 360x640");

    let before = screencap(&adb, &serial);
    let dump = adb.text(&["-s", &serial, "exec-out", "uiautomator", "dump", "/dev/tty"]);
    assert!(
        dump.contains("text=\"Press me\" resource-id=\"fixture:id/button\""),
        "{dump}"
    );

    adb.run(&["-s", &serial, "shell", "input", "tap", "100", "240"]);
    let dump = adb.text(&["-s", &serial, "shell", "uiautomator", "dump", "/dev/tty"]);
    assert!(
        dump.contains("text=\"Pressed\" resource-id=\"fixture:id/button\""),
        "{dump}"
    );
    assert!(
        dump.trim_end()
            .ends_with("UI hierchary dumped to: /dev/tty"),
        "{dump}"
    );
    let after = screencap(&adb, &serial);
    assert_ne!(before, after, "the capture did not change after the tap");

    // adb joins the words with spaces; the fixture unquotes them like a device's shell would.
    adb.run(&["-s", &serial, "shell", "input", "text", "'a;b $c'"]);
    adb.run(&["-s", &serial, "shell", "input", "keyevent", "66"]);
    let started = adb.text(&["-s", &serial, "shell", "am", "start", "-n", "pkg/.Act"]);
    assert_eq!(started.trim(), "Starting: Intent { cmp=pkg/.Act }");

    let state = fixture.state();
    assert!(state.button_pressed);
    assert_eq!(state.taps, [(100.0, 240.0)]);
    assert_eq!(state.texts, ["a;b $c"]);
    assert_eq!(state.keyevents, ["66"]);
    assert_eq!(state.activities, ["pkg/.Act"]);

    adb.text(&["disconnect", &serial]);
}
