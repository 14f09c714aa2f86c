//! Drives real shells and programs in real PTYs through `Terminal`; each test in its own temp dir.
//!
//! Timeouts here are deadlines for failure only; every assertion is about behaviour.

use std::path::Path;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use lomi_terminal::{
    KEY_NAMES, Terminal, TerminalConfig, TerminalError, WaitFor, WaitOutcome, key_bytes,
};

/// Deadline for anything that should happen promptly.
// Outer limit of a wait that ends on its event: far above what a slow, busy machine needs.
const DEADLINE: Duration = Duration::from_secs(60);

/// A temp dir for the test, and this process made a subreaper: the processes a test's terminal
/// orphans are re-parented here instead of to a PID 1 that may never reap them, so `gone` can
/// reap them and their /proc entries really disappear.
fn setup() -> tempfile::TempDir {
    nix::sys::prctl::set_child_subreaper(true).expect("become a child subreaper");
    tempfile::tempdir().expect("temp dir")
}

fn config(dir: &Path, argv: &[&str]) -> TerminalConfig {
    let mut config = TerminalConfig::new(dir);
    config.argv = argv.iter().map(|arg| (*arg).to_owned()).collect();
    config.env = vec![
        ("HISTFILE".into(), dir.join("history").display().to_string()),
        ("PS1".into(), "$ ".into()),
    ];
    config
}

/// bash without the user's rc files, so the test does not depend on them.
fn bash(dir: &Path) -> Terminal {
    Terminal::spawn(config(dir, &["bash", "--norc", "--noprofile", "-i"])).expect("spawn bash")
}

/// Everything a person needs to see why a wait failed.
fn dump(terminal: &Terminal) -> String {
    let output = terminal.output_since(0, usize::MAX);
    format!(
        "pid {}, exit {:?}\nscreen:\n{}\nlast output:\n{:?}",
        terminal.pid(),
        terminal.exit_status(),
        terminal.screen().lines.join("\n"),
        String::from_utf8_lossy(&output.bytes[output.bytes.len().saturating_sub(2000)..]),
    )
}

async fn expect_text(terminal: &Terminal, text: &str, since: u64) -> u64 {
    match terminal
        .wait(WaitFor::Text(text.into()), since, DEADLINE)
        .await
    {
        WaitOutcome::Matched { at } => at,
        other => panic!("waiting for {text:?}: {other:?}\n{}", dump(terminal)),
    }
}

/// Runs a command line in the shell and waits for a marker the line itself does not contain
/// (the shell echoes what is typed, so the marker is computed: `$((1+1))`).
async fn run(terminal: &Terminal, line: &str, marker: &str) -> u64 {
    let since = terminal.output_cursor();
    terminal
        .write(format!("{line}\r").as_bytes())
        .await
        .expect("write");
    expect_text(terminal, marker, since).await
}

/// Fields of /proc/PID/stat after the command name: (state, ppid, pgrp, session).
fn stat(pid: i32) -> Option<(char, i32, i32, i32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    Some((
        fields.first()?.chars().next()?,
        fields.get(1)?.parse().ok()?,
        fields.get(2)?.parse().ok()?,
        fields.get(3)?.parse().ok()?,
    ))
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// Processes of `session` other than its leader, with their command names.
fn session_members(session: i32) -> Vec<(i32, String)> {
    let mut members: Vec<(i32, String)> = std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != session)
        .filter(|&pid| stat(pid).is_some_and(|(state, _, _, sid)| sid == session && state != 'Z'))
        .map(|pid| (pid, comm(pid)))
        .collect();
    members.sort();
    members
}

/// Polls /proc until the session has `count` processes named `name`.
async fn wait_for_members(terminal: &Terminal, name: &str, count: usize) -> Vec<i32> {
    let session = i32::try_from(terminal.pid()).expect("pid");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let found: Vec<i32> = session_members(session)
            .into_iter()
            .filter(|(_, comm)| comm == name)
            .map(|(pid, _)| pid)
            .collect();
        if found.len() >= count {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "expected {count} {name:?} in session {session}, found {:?}\n{}",
            session_members(session),
            dump(terminal)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// True when `pid` no longer runs. A zombie is dead: if it was orphaned to this process (the
/// subreaper), it is reaped so it leaves /proc. Never pass a terminal's own pid (its reaper owns it).
fn gone(pid: i32) -> bool {
    match stat(pid) {
        None => true,
        Some(('Z' | 'X', parent, _, _)) => {
            if u32::try_from(parent).ok() == Some(std::process::id()) {
                let reaped = nix::sys::wait::waitpid(
                    nix::unistd::Pid::from_raw(pid),
                    Some(nix::sys::wait::WaitPidFlag::WNOHANG),
                );
                assert!(reaped.is_ok(), "reaping orphan {pid}: {reaped:?}");
            }
            true
        }
        Some(_) => false,
    }
}

async fn wait_until_gone(pids: &[i32], terminal: Option<&Terminal>) {
    let deadline = Instant::now() + DEADLINE;
    loop {
        let left: Vec<(i32, String)> = pids
            .iter()
            .filter(|&&pid| !gone(pid))
            .map(|&pid| (pid, comm(pid)))
            .collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "still running: {left:?}\n{}",
            terminal.map(dump).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn echo_shows_on_screen_and_in_output_in_the_given_cwd() {
    let dir = setup();
    let terminal = bash(dir.path());
    assert!(
        terminal.first_output(DEADLINE).await,
        "no prompt\n{}",
        dump(&terminal)
    );

    run(&terminal, "echo hello-$((6*7))", "hello-42").await;
    let screen = terminal.screen();
    assert!(
        screen.lines.iter().any(|line| line == "hello-42"),
        "screen: {:?}",
        screen.lines
    );
    assert_eq!((screen.rows, screen.cols), (24, 80));
    let output = terminal.output_since(0, usize::MAX);
    assert!(!output.truncated_before && !output.more);
    assert_eq!(output.end, terminal.output_cursor());
    assert!(String::from_utf8_lossy(&output.bytes).contains("hello-42"));

    let cwd = dir.path().display().to_string();
    let since = terminal.output_cursor();
    terminal.write(b"pwd\r").await.expect("write");
    expect_text(&terminal, &format!("\n{cwd}\n"), since).await;
    terminal.close(DEADLINE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn argv_runs_and_its_exit_code_is_kept() {
    let dir = setup();
    let terminal =
        Terminal::spawn(config(dir.path(), &["sh", "-c", "printf ready; exit 3"])).expect("spawn");
    let mut progress = terminal.progress();
    assert!(terminal.first_output(DEADLINE).await);
    let exited = terminal.wait(WaitFor::Exit, 0, DEADLINE).await;
    assert!(
        matches!(exited, WaitOutcome::Exited(status) if status.code == Some(3)),
        "{exited:?}"
    );
    assert_eq!(
        terminal.exit_status().and_then(|status| status.code),
        Some(3)
    );
    let output = terminal.output_since(0, usize::MAX);
    assert_eq!(output.bytes, b"ready");
    let last = *progress.borrow_and_update();
    assert_eq!(
        (last.output_cursor, last.exited),
        (5, terminal.exit_status())
    );

    // A text that never came: the wait ends with the exit, not the timeout.
    let never = terminal
        .wait(WaitFor::Text("never".into()), 0, DEADLINE)
        .await;
    assert!(matches!(never, WaitOutcome::Exited(_)), "{never:?}");
    assert_eq!(terminal.write(b"x").await, Err(TerminalError::Exited));
    assert_eq!(terminal.interrupt(), Err(TerminalError::Exited));
    // close after exit, twice: the same status.
    let status = terminal.exit_status();
    assert_eq!(Some(terminal.close(DEADLINE).await), status);
    assert_eq!(Some(terminal.close(DEADLINE).await), status);
}

#[tokio::test(flavor = "multi_thread")]
async fn spawn_refuses_a_missing_cwd_a_missing_program_and_a_zero_size() {
    let dir = setup();
    let missing = TerminalConfig::new(dir.path().join("missing"));
    assert!(matches!(
        Terminal::spawn(missing),
        Err(TerminalError::Spawn(_))
    ));
    let no_program = config(dir.path(), &["/nonexistent/program"]);
    assert!(matches!(
        Terminal::spawn(no_program),
        Err(TerminalError::Spawn(_))
    ));
    let mut zero = TerminalConfig::new(dir.path());
    zero.rows = 0;
    assert_eq!(
        Terminal::spawn(zero).err(),
        Some(TerminalError::InvalidSize)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn full_screen_program_uses_the_alternate_screen() {
    let dir = setup();
    let Some(less) = ["/usr/bin/less", "/bin/less"]
        .into_iter()
        .find(|path| Path::new(path).is_file())
    else {
        eprintln!("SKIPPED full_screen_program_uses_the_alternate_screen: `less` is not installed");
        return;
    };
    let file = dir.path().join("lines.txt");
    let lines: Vec<String> = (1..=200).map(|n| format!("line-{n:04}")).collect();
    std::fs::write(&file, lines.join("\n") + "\n").expect("write file");
    let mut config = config(dir.path(), &[less, file.to_str().expect("utf-8 path")]);
    // The user's LESS could hold -X (no alternate screen); history would land in $HOME.
    config.env.push(("LESS".into(), String::new()));
    config.env.push(("LESSHISTFILE".into(), "-".into()));
    let terminal = Terminal::spawn(config).expect("spawn less");

    // 24 rows: 23 lines of the file, then the prompt line; drawn top to bottom.
    expect_text(&terminal, "line-0023", 0).await;
    let screen = terminal.screen();
    assert!(screen.alternate_screen, "{}", dump(&terminal));
    assert_eq!(screen.lines[..23], lines[..23], "{}", dump(&terminal));

    terminal.write(b"q").await.expect("write q");
    let exited = terminal.wait(WaitFor::Exit, 0, DEADLINE).await;
    assert!(
        matches!(exited, WaitOutcome::Exited(status) if status.code == Some(0)),
        "{exited:?}"
    );
    assert!(!terminal.screen().alternate_screen, "{}", dump(&terminal));
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_stops_the_foreground_job_and_the_shell_comes_back() {
    let dir = setup();
    let terminal = bash(dir.path());
    run(&terminal, "echo ready-$((1+1))", "ready-2").await;
    terminal.write(b"sleep 1000\r").await.expect("write");
    let sleeps = wait_for_members(&terminal, "sleep", 1).await;

    let interrupted = terminal.interrupt().expect("interrupt");
    // With job control the job has its own group, led by the sleep.
    assert_eq!(interrupted.process_group, sleeps[0]);
    run(&terminal, "echo after-$((1+1))", "after-2").await;
    wait_until_gone(&sleeps, Some(&terminal)).await;
    assert_eq!(
        terminal.exit_status(),
        None,
        "the shell survives the interrupt"
    );
    terminal.close(DEADLINE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn interrupt_reaches_every_process_in_the_foreground_group() {
    let dir = setup();
    // A foreground pipeline with a subshell: all of it is in the shell's group. (Not `sleep &`:
    // without job control, POSIX shells start background commands with SIGINT ignored.)
    let script = "(sleep 1000; echo unreachable) | sleep 1001; echo unreachable";
    let terminal = Terminal::spawn(config(dir.path(), &["sh", "-c", script])).expect("spawn");
    let sleeps = wait_for_members(&terminal, "sleep", 2).await;

    let interrupted = terminal.interrupt().expect("interrupt");
    assert_eq!(
        interrupted.process_group,
        i32::try_from(terminal.pid()).expect("pid")
    );
    wait_until_gone(&sleeps, Some(&terminal)).await;
    let exited = terminal.wait(WaitFor::Exit, 0, DEADLINE).await;
    assert!(matches!(exited, WaitOutcome::Exited(_)), "{exited:?}");
    let output = terminal.output_since(0, usize::MAX);
    assert!(!String::from_utf8_lossy(&output.bytes).contains("unreachable"));
}

#[tokio::test(flavor = "multi_thread")]
async fn close_kills_background_jobs_and_pipelines_of_the_session() {
    let dir = setup();
    let terminal = bash(dir.path());
    run(&terminal, "echo ready-$((1+1))", "ready-2").await;
    terminal
        .write(b"sleep 1000 & sleep 1001 & sleep 1002 & sleep 1003 | sleep 1004\r")
        .await
        .expect("write");
    let sleeps = wait_for_members(&terminal, "sleep", 5).await;
    assert_eq!(sleeps.len(), 5);

    let status = terminal.close(DEADLINE).await;
    assert_eq!(terminal.exit_status(), Some(status));
    // bash dies of the SIGHUP.
    assert_eq!(status.signal, Some(Signal::SIGHUP as i32), "{status:?}");
    wait_until_gone(&sleeps, Some(&terminal)).await;
    assert_eq!(
        terminal.close(DEADLINE).await,
        status,
        "a second close is harmless"
    );
}

/// Live processes (of any session) whose command line is exactly `cmdline`.
fn running(cmdline: &str) -> Vec<i32> {
    std::fs::read_dir("/proc")
        .expect("/proc")
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|raw| {
                raw.split(|b| *b == 0)
                    .filter(|a| !a.is_empty())
                    .collect::<Vec<_>>()
                    .join(&b' ')
                    == cmdline.as_bytes()
            })
        })
        .filter(|&pid| !gone(pid))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn close_ends_what_left_the_session_by_its_marker() {
    let dir = setup();
    let mut marked = config(dir.path(), &["bash", "--norc", "--noprofile", "-i"]);
    let marker = format!(
        "test.{}/t{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    );
    marked.marker = Some(marker);
    let terminal = Terminal::spawn(marked).expect("spawn bash");
    run(&terminal, "echo ready-$((2+2))", "ready-4").await;
    // Two ways a program leaves its terminal's session: its own setsid, and nohup + setsid.
    let (daemon, nohup) = ("sleep 1007.5", "sleep 1008.5");
    terminal
        .write(format!("setsid -f {daemon}; nohup setsid {nohup} >/dev/null 2>&1 &\r").as_bytes())
        .await
        .expect("write");
    let deadline = Instant::now() + DEADLINE;
    let escaped = loop {
        let found = [running(daemon), running(nohup)].concat();
        if found.len() == 2 {
            break found;
        }
        assert!(
            Instant::now() < deadline,
            "the two sleeps did not start: {found:?}\n{}",
            dump(&terminal)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let session = i32::try_from(terminal.pid()).expect("pid");
    for pid in &escaped {
        assert!(
            !session_members(session)
                .iter()
                .any(|(member, _)| member == pid),
            "{pid} was meant to leave the session"
        );
    }
    terminal.close(DEADLINE).await;
    wait_until_gone(&escaped, Some(&terminal)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn close_kills_what_ignores_hangup_and_terminate_after_the_grace() {
    let dir = setup();
    let script = "trap '' HUP TERM; printf ready; while :; do :; done";
    let terminal = Terminal::spawn(config(dir.path(), &["sh", "-c", script])).expect("spawn");
    expect_text(&terminal, "ready", 0).await;
    let status = terminal.close(Duration::from_millis(200)).await;
    assert_eq!(status.signal, Some(Signal::SIGKILL as i32), "{status:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn dropping_the_last_handle_kills_the_session() {
    let dir = setup();
    let terminal = bash(dir.path());
    run(&terminal, "echo ready-$((1+1))", "ready-2").await;
    terminal.write(b"sleep 1000 &\r").await.expect("write");
    let sleeps = wait_for_members(&terminal, "sleep", 1).await;
    let clone = terminal.clone();
    drop(terminal);
    assert!(!gone(sleeps[0]), "a clone still holds the terminal");
    let mut progress = clone.progress();
    drop(clone);
    wait_until_gone(&sleeps, None).await;
    let exited = tokio::time::timeout(DEADLINE, progress.wait_for(|p| p.exited.is_some())).await;
    assert!(exited.is_ok(), "the shell was reaped after the drop");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_keeps_memory_bounded_and_the_shell_answers() {
    let dir = setup();
    let mut config = config(dir.path(), &["bash", "--norc", "--noprofile", "-i"]);
    config.scrollback_bytes = 1024 * 1024;
    config.scrollback_lines = 1_000;
    let terminal = Terminal::spawn(config).expect("spawn");
    run(&terminal, "echo ready-$((1+1))", "ready-2").await;

    let since = terminal.output_cursor();
    terminal
        .write(b"head -c 100000000 /dev/zero | tr '\\0' a; echo flood-$((40+2))\r")
        .await
        .expect("write");
    // 100 MB through a PTY and a screen parser: a generous deadline, for failure only.
    let outcome = terminal
        .wait(
            WaitFor::Text("flood-42".into()),
            since,
            Duration::from_secs(300),
        )
        .await;
    assert!(
        matches!(outcome, WaitOutcome::Matched { .. }),
        "{outcome:?}\n{}",
        dump(&terminal)
    );

    assert!(terminal.output_cursor() > 100_000_000);
    let output = terminal.output_since(0, usize::MAX);
    assert!(output.truncated_before);
    assert!(output.bytes.len() <= 1024 * 1024);
    assert!(terminal.retained_bytes() <= 1024 * 1024);
    assert!(terminal.retained_lines() <= 1_000);
    let tail = String::from_utf8_lossy(&output.bytes);
    assert!(tail.contains("aaaa") && tail.contains("flood-42"));

    run(&terminal, "echo still-$((1+2))", "still-3").await;
    terminal.close(DEADLINE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn wait_from_a_cursor_does_not_see_older_output() {
    let dir = setup();
    let terminal = bash(dir.path());
    let first = run(&terminal, "echo mark-$((1+1))", "mark-2").await;
    let other = run(&terminal, "echo other-$((2+2))", "other-4").await;
    assert!(other > first);

    // mark-2 is only before `first`: from there it is not seen again.
    let again = terminal
        .wait(
            WaitFor::Text("mark-2".into()),
            first,
            Duration::from_millis(300),
        )
        .await;
    assert_eq!(again, WaitOutcome::TimedOut);
    let second = run(&terminal, "echo mark-$((1+1))", "mark-2").await;
    assert!(second > other);

    let regex = regex::Regex::new(r"value=(\d+)!").expect("regex");
    let since = terminal.output_cursor();
    terminal
        .write(b"echo value=$((20+3))!\r")
        .await
        .expect("write");
    let matched = terminal.wait(WaitFor::Regex(regex), since, DEADLINE).await;
    let WaitOutcome::Matched { at } = matched else {
        panic!("{matched:?}\n{}", dump(&terminal));
    };
    let output = terminal.output_since(since, usize::MAX);
    let upto = usize::try_from(at - since).expect("small");
    assert!(String::from_utf8_lossy(&output.bytes[..upto]).ends_with("value=23!"));

    let since = terminal.output_cursor();
    terminal.write(b"echo quiet\r").await.expect("write");
    let idle = terminal
        .wait(WaitFor::Idle(Duration::from_millis(200)), since, DEADLINE)
        .await;
    assert_eq!(idle, WaitOutcome::Idle);
    assert!(
        terminal.output_cursor() > since,
        "the echo came before the quiet"
    );
    terminal.close(DEADLINE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn resize_and_title_reach_the_program_and_the_screen() {
    let dir = setup();
    let terminal = bash(dir.path());
    run(&terminal, "echo ready-$((1+1))", "ready-2").await;
    terminal.resize(40, 100).expect("resize");
    let screen = terminal.screen();
    assert_eq!(
        (screen.rows, screen.cols, screen.lines.len()),
        (40, 100, 40)
    );
    run(&terminal, "stty size; echo size-$((1+1))", "40 100").await;
    assert_eq!(terminal.resize(0, 10), Err(TerminalError::InvalidSize));

    run(
        &terminal,
        r"printf '\033]0;my-%s\007' title; echo t-$((1+1))",
        "t-2",
    )
    .await;
    assert_eq!(terminal.screen().title, "my-title");
    terminal.close(DEADLINE).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_writes_do_not_interleave() {
    let dir = setup();
    // No echo: only cat's copy of each line comes back, so a split line shows.
    let script = "stty -echo; printf ready; exec cat";
    let terminal = Terminal::spawn(config(dir.path(), &["sh", "-c", script])).expect("spawn cat");
    let ready = expect_text(&terminal, "ready", 0).await;
    let line = |letter: u8| {
        let mut line = vec![letter; 3000];
        line.push(b'\n');
        line
    };
    let writers: Vec<_> = (b'a'..=b'h')
        .map(|letter| {
            let terminal = terminal.clone();
            tokio::spawn(async move { terminal.write(&line(letter)).await })
        })
        .collect();
    for writer in writers {
        writer.await.expect("join").expect("write");
    }
    terminal.write(b"end-\x04").await.expect("write");
    expect_text(&terminal, "end-", ready).await;
    let output = terminal.output_since(ready, usize::MAX).bytes;
    let output = String::from_utf8_lossy(&output).into_owned();
    for letter in 'a'..='h' {
        let run: String = std::iter::repeat_n(letter, 3000).collect();
        assert!(output.contains(&run), "{letter} was split:\n{output}");
    }
    terminal.close(DEADLINE).await;
}

#[test]
fn every_named_key_has_bytes() {
    for name in KEY_NAMES {
        assert!(key_bytes(name).is_some(), "{name}");
    }
    for letter in 'A'..='Z' {
        assert!(KEY_NAMES.contains(&format!("Ctrl-{letter}").as_str()));
    }
    for n in 1..=12 {
        assert!(KEY_NAMES.contains(&format!("F{n}").as_str()));
    }
    assert_eq!(key_bytes("Ctrl-C"), Some(&[0x03u8][..]));
    assert_eq!(key_bytes("Enter"), Some(&b"\r"[..]));
    assert_eq!(key_bytes("Up"), Some(&b"\x1b[A"[..]));
    assert_eq!(key_bytes("Hyper-Q"), None);
    assert_eq!(key_bytes("F13"), None);
}
