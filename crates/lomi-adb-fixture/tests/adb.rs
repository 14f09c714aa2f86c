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
        let deadline = Instant::now() + Duration::from_secs(60);
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

/// A zip with one stored plain-text `AndroidManifest.xml` and its central directory, which the
/// fixture's package manager reads (see `apk.rs`).
fn apk(package: &str, version_code: u32) -> Vec<u8> {
    let manifest = format!(
        r#"<manifest xmlns:android="http://schemas.android.com/apk/res/android" package="{package}" android:versionCode="{version_code}" android:versionName="1.{version_code}"/>"#
    );
    let name = b"AndroidManifest.xml";
    let size = u32::try_from(manifest.len()).expect("a small manifest");
    let mut zip = b"PK\x03\x04".to_vec();
    zip.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    zip.extend_from_slice(&size.to_le_bytes());
    zip.extend_from_slice(&size.to_le_bytes());
    zip.extend_from_slice(&u16::try_from(name.len()).expect("short").to_le_bytes());
    zip.extend_from_slice(&[0, 0]);
    zip.extend_from_slice(name);
    zip.extend_from_slice(manifest.as_bytes());
    let directory = u32::try_from(zip.len()).expect("a small zip");
    zip.extend_from_slice(b"PK\x01\x02");
    zip.extend_from_slice(&[20, 0, 20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    zip.extend_from_slice(&size.to_le_bytes());
    zip.extend_from_slice(&size.to_le_bytes());
    zip.extend_from_slice(&u16::try_from(name.len()).expect("short").to_le_bytes());
    zip.extend_from_slice(&[0; 16]); // extra, comment, disk, attributes; local header at 0
    zip.extend_from_slice(name);
    let directory_size = u32::try_from(zip.len()).expect("a small zip") - directory;
    zip.extend_from_slice(b"PK\x05\x06\0\0\0\0\x01\0\x01\0");
    zip.extend_from_slice(&directory_size.to_le_bytes());
    zip.extend_from_slice(&directory.to_le_bytes());
    zip.extend_from_slice(&[0, 0]);
    zip
}

#[test]
fn the_real_adb_client_pushes_pulls_installs_and_reads_the_log() {
    let Some(adb) = AdbServer::start() else {
        return;
    };
    let fixture = Fixture::start().expect("starting the fixture");
    let serial = fixture.serial();
    adb.connect(&fixture);
    let dir = std::env::temp_dir().join(format!("lomi-adb-fixture-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");

    // push and pull through the sync service; bigger than one DATA chunk and one packet.
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let local = dir.join("data.bin");
    std::fs::write(&local, &bytes).expect("writing the file");
    let local_path = local.to_string_lossy().into_owned();
    adb.run(&[
        "-s",
        &serial,
        "push",
        &local_path,
        "/data/local/tmp/data.bin",
    ]);
    assert_eq!(fixture.state().files["/data/local/tmp/data.bin"], bytes);
    let back = dir.join("back.bin");
    let back_path = back.to_string_lossy().into_owned();
    adb.run(&[
        "-s",
        &serial,
        "pull",
        "/data/local/tmp/data.bin",
        &back_path,
    ]);
    assert_eq!(std::fs::read(&back).expect("the pulled file"), bytes);
    let refused = Command::new("adb")
        .args([
            "-P",
            &adb.port.to_string(),
            "-s",
            &serial,
            "pull",
            "/data/local/tmp/none",
            &back_path,
        ])
        .output()
        .expect("running adb");
    assert!(!refused.status.success(), "{}", describe(&refused));

    // install, streamed (the default with the `cmd` feature) and pushed (--no-streaming).
    let apk_path = dir.join("demo.apk");
    std::fs::write(&apk_path, apk("org.lomi.demo", 3)).expect("writing the APK");
    let apk_path = apk_path.to_string_lossy().into_owned();
    let installed = adb.text(&["-s", &serial, "install", &apk_path]);
    assert!(installed.contains("Success"), "{installed}");
    std::fs::write(dir.join("demo.apk"), apk("org.lomi.demo", 4)).expect("writing the APK");
    let installed = adb.text(&["-s", &serial, "install", "-r", "--no-streaming", &apk_path]);
    assert!(installed.contains("Success"), "{installed}");
    let listed = adb.text(&[
        "-s",
        &serial,
        "shell",
        "pm",
        "list",
        "packages",
        "-3",
        "--show-versioncode",
    ]);
    assert_eq!(listed.trim(), "package:org.lomi.demo versionCode:4");
    assert!(
        !fixture
            .state()
            .files
            .keys()
            .any(|path| path.ends_with(".apk")),
        "adb removes the APK it pushed: {:?}",
        fixture.state().files.keys().collect::<Vec<_>>()
    );

    adb.run(&[
        "-s",
        &serial,
        "shell",
        "am",
        "start",
        "-n",
        "org.lomi.demo/.Main",
    ]);
    let log = adb.text(&["-s", &serial, "logcat", "-d"]);
    assert!(log.contains("org.lomi.demo started .Main"), "{log}");
    let pid = adb.text(&["-s", &serial, "shell", "pidof", "org.lomi.demo"]);
    let only_app = adb.text(&[
        "-s",
        &serial,
        "logcat",
        "-d",
        &format!("--pid={}", pid.trim()),
    ]);
    assert!(
        only_app.contains("started .Main") && !only_app.contains("PackageManager"),
        "{only_app}"
    );
    adb.run(&["-s", &serial, "shell", "am", "force-stop", "org.lomi.demo"]);
    assert!(fixture.state().processes.is_empty());
    let removed = adb.text(&["-s", &serial, "uninstall", "org.lomi.demo"]);
    assert!(removed.contains("Success"), "{removed}");
    assert!(
        fixture
            .state()
            .packages
            .keys()
            .all(|name| name != "org.lomi.demo")
    );

    adb.run(&[
        "-s",
        &serial,
        "shell",
        "settings",
        "put",
        "system",
        "user_rotation",
        "1",
    ]);
    let rotation = adb.text(&[
        "-s",
        &serial,
        "shell",
        "settings",
        "get",
        "system",
        "user_rotation",
    ]);
    assert_eq!(rotation.trim(), "1");

    adb.text(&["disconnect", &serial]);
    std::fs::remove_dir_all(&dir).expect("removing the temp dir");
}
