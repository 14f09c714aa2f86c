//! The fixture driven by Debian's real `adb`: a private adb server, `adb connect`, then shell,
//! exec-out screencap, a tap and a `uiautomator` dump, the way Lomi will reach a phone.

use std::process::{Command, Output, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use lomi_adb_fixture::{Fixture, PrivateAdbServer, SCREEN_HEIGHT, SCREEN_WIDTH};

const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// The test's private adb server, with the client commands the test runs against it.
struct AdbServer {
    port: u16,
    _process: PrivateAdbServer,
}

impl AdbServer {
    fn start() -> Option<AdbServer> {
        let process = PrivateAdbServer::start()?;
        Some(AdbServer {
            port: process.port,
            _process: process,
        })
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
