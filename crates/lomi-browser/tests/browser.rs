//! The browser runtime against Debian's real Chromium, with pages served on 127.0.0.1 by the
//! test itself: snapshots (iframes of two origins included), confirmed actions, stale refs
//! refused, captures checked by decoding them, a killed browser noticed, and pages left behind
//! not kept for Back.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use lomi_browser::{
    ActionError, Browser, BrowserError, BrowserOptions, CaptureArea, CaptureLimit, Destination,
    Exit, SnapshotOptions, Tab, Target,
};

/// Serves `pages` (path → HTML) on 127.0.0.1; returns the port.
fn serve(pages: Vec<(&'static str, String)>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a test port");
    let port = listener.local_addr().expect("local address").port();
    let pages: Arc<HashMap<&'static str, String>> = Arc::new(pages.into_iter().collect());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let pages = pages.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(match stream.try_clone() {
                    Ok(s) => s,
                    Err(_) => return,
                });
                let mut request = String::new();
                if reader.read_line(&mut request).is_err() {
                    return;
                }
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).map_or(true, |n| n == 0) || line == "\r\n" {
                        break;
                    }
                }
                let path = request.split_whitespace().nth(1).unwrap_or("/");
                let path = path.split('?').next().unwrap_or("/");
                let (status, body) = match pages.get(path) {
                    Some(body) => ("200 OK", body.clone()),
                    None => ("404 Not Found", "<h1>not found</h1>".to_owned()),
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _written = stream.write_all(answer.as_bytes());
            });
        }
    });
    port
}

const FORM: &str = r#"<!doctype html><title>Form</title>
<h1>Form</h1>
<label for="name">Name</label><input id="name">
<label for="color">Color</label>
<select id="color"><option value="red">Red</option><option value="green">Green</option></select>
<button id="go" onclick="document.getElementById('out').textContent = 'Sent ' + document.getElementById('name').value + ' ' + document.getElementById('color').value">Send</button>
<div id="out" role="status">nothing yet</div>"#;

const RERENDER: &str = r#"<!doctype html><title>Rerender</title>
<div id="box"><button id="b" onclick="render()">Press me</button></div>
<p id="count">0</p>
<script>
let n = 0;
function render() {
  n += 1;
  document.getElementById('count').textContent = String(n);
  document.getElementById('box').innerHTML = '<button id="b" onclick="render()">Press me</button>';
}
</script>"#;

async fn browser() -> Browser {
    Browser::launch(BrowserOptions::default(), "bg_test".to_owned())
        .await
        .expect("Chromium starts")
}

async fn open(browser: &Browser, url: &str) -> Tab {
    let tab = browser.active_tab().expect("a tab");
    tab.navigate(
        &Destination::Url(url.to_owned()),
        "load",
        Duration::from_secs(60),
    )
    .await
    .unwrap_or_else(|e| panic!("navigate {url}: {e:?}"));
    tab
}

async fn snapshot(tab: &Tab) -> lomi_browser::SnapshotText {
    tab.snapshot(&SnapshotOptions {
        max_bytes: 256 * 1024,
        asked_bytes: 256 * 1024,
        ..SnapshotOptions::default()
    })
    .await
    .expect("snapshot")
}

/// The ref on the line that contains `needle`.
fn ref_of(text: &str, needle: &str) -> String {
    let line = text
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?} in:\n{text}"));
    let start = line.find('[').expect("a ref") + 1;
    let end = line[start..].find(']').expect("ref end") + start;
    line[start..end].to_owned()
}

fn png_size(png: &[u8]) -> (u32, u32) {
    let image = image::load_from_memory_with_format(png, image::ImageFormat::Png).expect("a PNG");
    (image.width(), image.height())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_filled_and_read_back() {
    let port = serve(vec![("/form", FORM.to_owned())]);
    let browser = browser().await;
    let tab = open(&browser, &format!("http://127.0.0.1:{port}/form")).await;
    let snap = snapshot(&tab).await;
    assert!(snap.text.contains("heading \"Form\""), "{}", snap.text);
    let name = ref_of(&snap.text, "textbox \"Name\"");
    let color = ref_of(&snap.text, "combobox \"Color\"");
    let send = ref_of(&snap.text, "button \"Send\"");
    let typed = tab
        .type_text(&snap.snapshot_id, &name, "Ada", true)
        .await
        .expect("type");
    assert_eq!(typed.observed["value"], "Ada");
    let selected = tab
        .select(&snap.snapshot_id, &color, &["Green".to_owned()])
        .await
        .expect("select");
    assert_eq!(selected.observed["selected"][0], "green");
    let target = Target::Element {
        snapshot_id: &snap.snapshot_id,
        element_ref: &send,
    };
    let clicked = tab.click(target, "left", 1).await.expect("click");
    assert_eq!(clicked.observed["event"], "click");
    let after = snapshot(&tab).await;
    assert!(after.text.contains("Sent Ada green"), "{}", after.text);
    assert_eq!(browser.close().await, Exit::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iframes_of_both_origins_are_in_the_snapshot_and_clickable() {
    let inner = r#"<!doctype html><button onclick="this.textContent = 'clicked ' + location.port">Frame button</button>"#;
    let other = serve(vec![("/inner", inner.to_owned())]);
    let outer = format!(
        r#"<!doctype html><h1>Outer</h1>
        <iframe title="same" src="/inner" width="300" height="80"></iframe>
        <iframe title="cross" src="http://localhost:{other}/inner" width="300" height="80"></iframe>"#
    );
    let port = serve(vec![("/outer", outer), ("/inner", inner.to_owned())]);
    let browser = browser().await;
    let tab = open(&browser, &format!("http://127.0.0.1:{port}/outer")).await;
    let snap = snapshot(&tab).await;
    assert_eq!(snap.frames.len(), 3, "{:?}", snap.frames);
    let buttons: Vec<String> = snap
        .text
        .lines()
        .filter(|l| l.contains("button \"Frame button\""))
        .map(|l| ref_of(l, "button"))
        .collect();
    assert_eq!(buttons.len(), 2, "{}", snap.text);
    for button in &buttons {
        assert!(button.starts_with('f'), "a frame ref: {button}");
        let target = Target::Element {
            snapshot_id: &snap.snapshot_id,
            element_ref: button,
        };
        tab.click(target, "left", 1)
            .await
            .expect("click in a frame");
    }
    let after = snapshot(&tab).await;
    assert!(
        after.text.contains(&format!("clicked {port}")),
        "{}",
        after.text
    );
    assert!(
        after.text.contains(&format!("clicked {other}")),
        "{}",
        after.text
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_refs_are_refused_never_retargeted() {
    let port = serve(vec![
        ("/r", RERENDER.to_owned()),
        ("/form", FORM.to_owned()),
    ]);
    let browser = browser().await;
    let tab = open(&browser, &format!("http://127.0.0.1:{port}/r")).await;
    let snap = snapshot(&tab).await;
    let button = ref_of(&snap.text, "button \"Press me\"");
    let target = Target::Element {
        snapshot_id: &snap.snapshot_id,
        element_ref: &button,
    };
    tab.click(target, "left", 1).await.expect("first click");
    // The button was replaced by an identical one: the old ref must not click it.
    match tab.click(target, "left", 1).await {
        Err(ActionError::Refused(BrowserError::Stale(_))) => {}
        other => panic!("expected a stale ref, got {other:?}"),
    }
    let count = snapshot(&tab).await;
    assert!(
        count.text.contains("\"1\""),
        "clicked once only: {}",
        count.text
    );
    // A fresh snapshot's ref works; after navigating, it is stale.
    let fresh = ref_of(&count.text, "button \"Press me\"");
    open(&browser, &format!("http://127.0.0.1:{port}/form")).await;
    let target = Target::Element {
        snapshot_id: &count.snapshot_id,
        element_ref: &fresh,
    };
    assert!(matches!(
        tab.click(target, "left", 1).await,
        Err(ActionError::Refused(BrowserError::Stale(_)))
    ));
    // A ref the snapshot never had is not a ref.
    let snap = snapshot(&tab).await;
    let target = Target::Element {
        snapshot_id: &snap.snapshot_id,
        element_ref: "e99999",
    };
    assert!(matches!(
        tab.click(target, "left", 1).await,
        Err(ActionError::Refused(BrowserError::Invalid(_)))
    ));
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captures_have_the_sizes_asked_for() {
    let page = r#"<!doctype html><style>body{margin:0;height:3000px} #box{position:absolute;left:40px;top:50px;width:200px;height:120px;background:#c33}</style><div id="box" role="img" aria-label="Box"></div>"#;
    let tall = r#"<!doctype html><style>body{margin:0;height:40000px;background:linear-gradient(#fff,#00f)}</style>"#;
    let port = serve(vec![("/c", page.to_owned()), ("/tall", tall.to_owned())]);
    let browser = browser().await;
    let tab = open(&browser, &format!("http://127.0.0.1:{port}/c")).await;
    let viewport = tab
        .capture(&CaptureArea::Viewport, 1.0, true, CaptureLimit::Screens)
        .await
        .expect("viewport")
        .png;
    assert!(viewport.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert_eq!(png_size(&viewport), (1280, 720));
    // Compressed for size, the same pixels take fewer bytes.
    let compact = tab
        .capture(&CaptureArea::Viewport, 1.0, false, CaptureLimit::Screens)
        .await
        .expect("viewport, compact")
        .png;
    assert_eq!(png_size(&compact), (1280, 720));
    assert!(
        compact.len() <= viewport.len(),
        "{} > {}",
        compact.len(),
        viewport.len()
    );
    let half = tab
        .capture(&CaptureArea::Viewport, 0.5, true, CaptureLimit::Screens)
        .await
        .expect("scaled")
        .png;
    assert_eq!(png_size(&half), (640, 360));
    let snap = snapshot(&tab).await;
    let area = CaptureArea::Element {
        snapshot_id: snap.snapshot_id.clone(),
        element_ref: ref_of(&snap.text, "img \"Box\""),
    };
    let element = tab
        .capture(&area, 1.0, true, CaptureLimit::Screens)
        .await
        .expect("element")
        .png;
    assert_eq!(png_size(&element), (200, 120));
    let clip = lomi_protocol::tools::browser::ClipRect {
        x: 10.0,
        y: 20.0,
        width: 300.0,
        height: 100.0,
    };
    let clipped = tab
        .capture(&CaptureArea::Clip(clip), 1.0, true, CaptureLimit::Screens)
        .await
        .expect("clip")
        .png;
    assert_eq!(png_size(&clipped), (300, 100));
    let full = tab
        .capture(&CaptureArea::FullPage, 1.0, false, CaptureLimit::Whole)
        .await
        .expect("full page");
    assert_eq!(png_size(&full.png), (1280, 3000));
    assert!((full.scale - 1.0).abs() < f64::EPSILON, "{}", full.scale);
    // The answer's limit: the top two screens, at full scale, and the whole area's height.
    let top = tab
        .capture(&CaptureArea::FullPage, 1.0, true, CaptureLimit::Screens)
        .await
        .expect("the top of the page");
    assert_eq!(png_size(&top.png), (1280, 1440));
    assert_eq!((top.area_height, top.screens_rows), (Some(3000.0), 1440));
    // Taller than 16,384 pixels: a capture set's file is scaled to fit, and the scale says by
    // how much; a save draws it whole.
    let tab = open(&browser, &format!("http://127.0.0.1:{port}/tall")).await;
    let fitted = tab
        .capture(&CaptureArea::FullPage, 1.0, false, CaptureLimit::FitSide)
        .await
        .expect("a tall page");
    let (width, height) = png_size(&fitted.png);
    let scale = fitted.scale;
    assert!((scale - 16_384.0 / 40_000.0).abs() < 1e-6, "{scale}");
    assert!((16_380..=16_384).contains(&height), "{width}x{height}");
    assert!((520..=526).contains(&width), "{width}x{height}");
    let whole = tab
        .capture(&CaptureArea::FullPage, 1.0, true, CaptureLimit::Whole)
        .await
        .expect("a tall page whole");
    assert_eq!(
        lomi_capture::inspect_png_within(&whole.png, lomi_capture::MAX_SAVED_SIDE).expect("a PNG"),
        (1280, 40_000)
    );
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_browser_is_noticed_and_its_processes_are_gone() {
    let browser = browser().await;
    let pid = browser.pid();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill Chromium");
    let exit = tokio::time::timeout(Duration::from_secs(60), browser.exited())
        .await
        .expect("the exit is noticed");
    assert!(matches!(exit, Exit::Crashed(_)), "{exit:?}");
    assert!(matches!(browser.active_tab(), Err(BrowserError::Gone(_))));
    // Nothing of its process group is left.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let left = group_members(pid);
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "left behind: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_browser_leaves_no_connection_behind() {
    let browser = browser().await;
    let port = listening_port(browser.pid()).expect("Chromium's DevTools port");
    assert_eq!(browser.close().await, Exit::Closed);
    // Lomi's end of the DevTools connection closes too, not left half-closed (CLOSE_WAIT)
    // with the state of the browser's pages behind it.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let left = own_half_closed_to(port);
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "sockets of this process still half-closed to {port}: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Inodes of the sockets process `pid` has open.
fn socket_inodes(pid: &str) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|fd| std::fs::read_link(fd.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            Some(
                target
                    .strip_prefix("socket:[")?
                    .strip_suffix(']')?
                    .to_owned(),
            )
        })
        .collect()
}

/// The rows of /proc/net/tcp: (local port, remote port, state, inode).
fn tcp_rows() -> Vec<(u16, u16, String, String)> {
    let port = |address: &str| {
        u16::from_str_radix(address.rsplit(':').next().unwrap_or(""), 16).unwrap_or(0)
    };
    let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (fields.len() > 9).then(|| {
                let (local, remote) = (port(fields[1]), port(fields[2]));
                (local, remote, fields[3].to_owned(), fields[9].to_owned())
            })
        })
        .collect()
}

/// The port a process listens on.
fn listening_port(pid: u32) -> Option<u16> {
    let inodes = socket_inodes(&pid.to_string());
    tcp_rows()
        .into_iter()
        .find(|(_, _, state, inode)| state == "0A" && inodes.contains(inode))
        .map(|(local, ..)| local)
}

/// Sockets of this process to `port` whose other end has closed (CLOSE_WAIT).
fn own_half_closed_to(port: u16) -> Vec<String> {
    let inodes = socket_inodes("self");
    tcp_rows()
        .into_iter()
        .filter(|(_, remote, state, inode)| {
            *remote == port && state == "08" && inodes.contains(inode)
        })
        .map(|(.., inode)| inode)
        .collect()
}

/// Live (not zombie) processes whose process group is `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // Fields after the command name in parentheses: state ppid pgrp …
        let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string() {
            found.push(pid);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_is_reported_and_answered() {
    let page = r#"<!doctype html><button onclick="document.getElementById('out').textContent = confirm('Really?') ? 'yes' : 'no'">Ask</button><p id="out">none</p>"#;
    let port = serve(vec![("/d", page.to_owned())]);
    let browser = browser().await;
    let tab = open(&browser, &format!("http://127.0.0.1:{port}/d")).await;
    let snap = snapshot(&tab).await;
    let ask = ref_of(&snap.text, "button \"Ask\"");
    let target = Target::Element {
        snapshot_id: &snap.snapshot_id,
        element_ref: &ask,
    };
    tab.click(target, "left", 1).await.expect("click");
    let dialog = tab.dialog().expect("the dialog is reported");
    assert_eq!(
        (dialog.kind.as_str(), dialog.message.as_str()),
        ("confirm", "Really?")
    );
    tab.dialog_answer(true, None).await.expect("accept");
    let after = snapshot(&tab).await;
    assert!(after.text.contains("\"yes\""), "{}", after.text);
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_left_behind_is_ended_not_kept_for_back() {
    const SHOWS: &str = r#"<!doctype html><title>A</title><p>A</p>
<script>
addEventListener('pageshow', (e) => {
  sessionStorage.shows = (sessionStorage.shows || '') + (e.persisted ? 'cache ' : 'load ');
});
</script>"#;
    let port = serve(vec![
        ("/a", SHOWS.to_owned()),
        ("/b", "<!doctype html><title>B</title><p>B</p>".to_owned()),
    ]);
    let browser = browser().await;
    let tab = open(&browser, &format!("http://127.0.0.1:{port}/a")).await;
    tab.navigate(
        &Destination::Url(format!("http://127.0.0.1:{port}/b")),
        "load",
        Duration::from_secs(60),
    )
    .await
    .expect("navigate to b");
    tab.evaluate("history.back()").await.expect("back");
    // Back is asynchronous: poll until page a has shown itself a second time.
    let mut shows = serde_json::Value::Null;
    for _ in 0..200 {
        if let Ok((value, _, None)) = tab
            .evaluate("location.pathname === '/a' ? sessionStorage.shows : null")
            .await
            && value
                .as_str()
                .is_some_and(|s| s.split_whitespace().count() == 2)
        {
            shows = value;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A page kept in the back/forward cache would show itself again as "cache".
    assert_eq!(shows, "load load ", "page a was not loaded again on Back");
    assert_eq!(browser.close().await, Exit::Closed);
}
