//! `lomi-android` against Debian's real `adb`: a private adb server started by the test, the
//! fake device from `lomi-adb-fixture` connected to it, and the runtime driving both.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::thread::sleep;
use std::time::{Duration, Instant};

use lomi_adb_fixture::{Fixture, PrivateAdbServer, SCREEN_HEIGHT, SCREEN_WIDTH};
use lomi_android::{AdbServer, AndroidError, DeviceInfo, DeviceState, UiSnapshot};
use lomi_protocol::ErrorCode;

/// The test's private adb server and the runtime's handle on it.
struct PrivateAdb {
    _process: PrivateAdbServer,
    server: AdbServer,
}

impl PrivateAdb {
    fn start() -> Option<PrivateAdb> {
        let process = PrivateAdbServer::start()?;
        let server = AdbServer::new(SocketAddrV4::new(Ipv4Addr::LOCALHOST, process.port));
        Some(PrivateAdb {
            _process: process,
            server,
        })
    }

    /// Connects the fixture and waits until the server lists it as ready.
    fn attach(&self, fixture: &Fixture) -> DeviceInfo {
        let serial = fixture.serial();
        self.server
            .connect(SocketAddrV4::new(Ipv4Addr::LOCALHOST, fixture.port))
            .expect("adb connect to the fixture");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let devices = self.server.devices().expect("listing devices");
            if let Some(device) = devices
                .iter()
                .find(|device| device.serial == serial && device.state == DeviceState::Ready)
            {
                return device.clone();
            }
            assert!(
                Instant::now() < deadline,
                "the fixture never became ready: {devices:?}"
            );
            sleep(Duration::from_millis(100));
        }
    }
}

fn button(snapshot: &UiSnapshot) -> &lomi_android::UiNode {
    snapshot
        .nodes
        .iter()
        .find(|node| node.resource_id.as_deref() == Some("fixture:id/button"))
        .unwrap_or_else(|| panic!("no button in {snapshot:#?}"))
}

fn check_capture(png: &[u8]) {
    let image = image::load_from_memory_with_format(png, image::ImageFormat::Png)
        .expect("the capture decodes");
    assert_eq!(
        (image.width(), image.height()),
        (SCREEN_WIDTH, SCREEN_HEIGHT)
    );
}

#[test]
fn the_runtime_drives_a_device_through_a_private_adb_server() {
    let Some(adb) = PrivateAdb::start() else {
        return;
    };
    let fixture = Fixture::start().expect("starting the fixture");
    let listed = adb.attach(&fixture);
    assert_eq!(listed.model.as_deref(), Some("LomiFixture"), "{listed:?}");
    assert_eq!(listed.api_level, Some(34), "{listed:?}");
    // What the person is shown before an attach: the model from the server's listing (the
    // device is not asked; tests/e2e/test_engine.py checks that through the fixture's log).
    assert_eq!(
        adb.server.listed_model(&fixture.serial()).expect("listing"),
        Some("LomiFixture".to_owned())
    );
    assert_eq!(
        adb.server.listed_model("emulator-9999").expect("listing"),
        None
    );

    let device = adb.server.device(&fixture.serial());
    let generation = device.generation().expect("generation");
    let boot_id = fixture.state().boot_id;
    assert_eq!(
        generation.as_str(),
        format!("{}/LOMIFIXTURE0001/{boot_id}", fixture.serial())
    );
    assert_eq!(device.screen_size().expect("wm size"), (360, 640));

    let before = device.capture_png().expect("capture");
    check_capture(&before);

    let snapshot = device.ui_snapshot(64 * 1024).expect("ui snapshot");
    assert!(!snapshot.truncated);
    assert_eq!(snapshot.attempts, 1);
    let pressable = button(&snapshot);
    assert_eq!(pressable.text.as_deref(), Some("Press me"));
    assert!(pressable.clickable);
    let bounds = pressable.bounds.expect("the button has bounds");
    let (x, y) = bounds.center();
    device
        .tap(
            u32::try_from(x).expect("on screen"),
            u32::try_from(y).expect("on screen"),
        )
        .expect("tap");
    let after_tap = device.ui_snapshot(64 * 1024).expect("ui snapshot");
    assert_eq!(button(&after_tap).text.as_deref(), Some("Pressed"));
    let after = device.capture_png().expect("capture");
    check_capture(&after);
    assert_ne!(before, after, "the capture did not change after the tap");

    let literal = "a b;rm -rf /$(x)'q";
    device.text(literal).expect("typing text");
    device.keyevent("66").expect("key event");
    device
        .swipe((10, 600), (10, 100), Some(200))
        .expect("swipe");
    let started = device.launch("pkg/.Act").expect("launch");
    assert_eq!(started, "Starting: Intent { cmp=pkg/.Act }");
    let viewed = device
        .launch_intent(
            "android.intent.action.VIEW",
            Some("https://example.com/?a=1&b=$(x)"),
            None,
        )
        .expect("an implicit intent");
    assert_eq!(
        viewed,
        "Starting: Intent { act=android.intent.action.VIEW dat=https://example.com/?a=1&b=$(x) }"
    );
    let (output, truncated) = device.shell("getprop ro.product.model", 5).expect("shell");
    assert_eq!((output.as_slice(), truncated), (&b"LomiF"[..], true));
    let state = fixture.state();
    assert_eq!(state.texts, [literal]);
    assert_eq!(state.keyevents, ["66"]);
    assert_eq!(state.swipes, [[10.0, 600.0, 10.0, 100.0]]);
    assert_eq!(
        state.activities,
        [
            "pkg/.Act",
            "act=android.intent.action.VIEW dat=https://example.com/?a=1&b=$(x)"
        ]
    );

    let refused = device.text("50%s off").expect_err("`%s` cannot be typed");
    assert_eq!(refused.code(), ErrorCode::InvalidArgument, "{refused}");

    let unknown = adb.server.device("emulator-9999");
    let error = unknown.capture_png().expect_err("an unknown serial");
    assert!(
        matches!(error, AndroidError::DeviceNotFound { .. }),
        "{error:?}"
    );
    assert_eq!(error.code(), ErrorCode::NotFound);

    // A restarted device on the same port is another boot: another generation.
    let port = fixture.port;
    drop(fixture);
    let error = device
        .capture_png()
        .expect_err("a capture from a device that is gone");
    assert!(
        matches!(
            error,
            AndroidError::DeviceNotReady { .. }
                | AndroidError::DeviceLost { .. }
                | AndroidError::DeviceNotFound { .. }
        ),
        "{error:?}"
    );
    eprintln!(
        "capture after the device went away: {error} ({:?})",
        error.code()
    );
    let error = device
        .tap(1, 1)
        .expect_err("a tap on a device that is gone");
    assert!(error.device_gone(), "{error:?}");

    let restarted = Fixture::start_on(port, false).expect("restarting the fixture");
    adb.attach(&restarted);
    let again = device.generation().expect("generation after the restart");
    assert_ne!(again, generation);
    assert!(again.as_str().ends_with(&restarted.state().boot_id));
}
