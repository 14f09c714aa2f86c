//! The files runtime against a real filesystem: the confinement corpus, compare-and-swap, a
//! writer killed mid-write, encodings, revisions, caps and permissions. One temp dir per test.

use lomi_protocol::definition::Preview;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Barrier;
use std::time::Duration;

use lomi_files::{
    Encoding, EntryKind, Expected, FilesError, Limits, LineEndings, ProjectRoot, TEMP_PREFIX,
};
use lomi_protocol::ErrorCode;
use sha2::{Digest, Sha256};

const OUTSIDE_FILE: &[u8] = b"outside secret, never to change\n";

struct Setup {
    /// Holds `project/` and `outside/` side by side, so `../outside` from the root is real.
    base: tempfile::TempDir,
    root: ProjectRoot,
}

impl Setup {
    fn project(&self) -> PathBuf {
        self.base.path().join("project")
    }
    fn outside(&self) -> PathBuf {
        self.base.path().join("outside")
    }
    fn put(&self, rel: &str, bytes: &[u8]) {
        let path = self.project().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
        std::fs::write(path, bytes).expect("write fixture");
    }
    /// Everything under the base dir except the project: names, kinds and bytes.
    fn outside_snapshot(&self) -> BTreeMap<PathBuf, String> {
        let mut snapshot = BTreeMap::new();
        walk(self.base.path(), &self.project(), &mut snapshot);
        snapshot
    }
}

fn walk(dir: &Path, skip: &Path, into: &mut BTreeMap<PathBuf, String>) {
    for entry in std::fs::read_dir(dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        if path == skip {
            continue;
        }
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        let description = if meta.file_type().is_symlink() {
            format!("symlink {:?}", std::fs::read_link(&path).expect("readlink"))
        } else if meta.is_dir() {
            walk(&path, skip, into);
            "dir".to_owned()
        } else {
            format!(
                "file {} mode {:o} {}",
                meta.ino(),
                meta.mode(),
                hex::encode(Sha256::digest(std::fs::read(&path).expect("read")))
            )
        };
        into.insert(path, description);
    }
}

fn setup() -> Setup {
    let base = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(base.path().join("project")).expect("project dir");
    let outside = base.path().join("outside");
    std::fs::create_dir_all(outside.join("sub")).expect("outside dir");
    std::fs::write(outside.join("file"), OUTSIDE_FILE).expect("outside file");
    std::fs::write(outside.join("f"), OUTSIDE_FILE).expect("outside f");
    std::fs::write(outside.join("sub/g"), OUTSIDE_FILE).expect("outside g");
    let root = ProjectRoot::open(&base.path().join("project")).expect("open root");
    Setup { base, root }
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn read_all(root: &ProjectRoot, rel: &str) -> Result<Vec<u8>, FilesError> {
    root.read(rel, None, usize::MAX).map(|read| read.bytes)
}

/// What one operation of the corpus did, reduced to a comparable word.
fn outcome<T>(result: Result<T, FilesError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(FilesError::Escape(_)) => "escape",
        Err(FilesError::NotFound(_) | FilesError::ParentMissing { .. }) => "not_found",
        Err(FilesError::NotAFile(_)) => "not_a_file",
        Err(FilesError::NotADirectory(_)) => "not_a_directory",
        Err(FilesError::AlreadyExists(_)) => "already_exists",
        Err(FilesError::RevisionMismatch { .. }) => "revision_mismatch",
        Err(FilesError::DirectoryNotEmpty(_)) => "not_empty",
        Err(FilesError::TooLarge { .. }) => "too_large",
        Err(FilesError::NoSpace(path)) => panic!("unexpected full disk at {path}"),
        Err(FilesError::Io(message)) => panic!("unexpected I/O error: {message}"),
    }
}

const OPS: [&str; 7] = [
    "read",
    "write_create",
    "write_replace",
    "list",
    "delete",
    "rename_from",
    "rename_to",
];

/// Runs every operation on `path` and returns the outcome of each, in `OPS` order. Revisions
/// passed are the outside file's real revision, so only confinement can stop a write.
fn run_ops(setup: &Setup, path: &str) -> Vec<&'static str> {
    let root = &setup.root;
    let outside_revision = sha(OUTSIDE_FILE);
    vec![
        outcome(root.read(path, None, 1 << 20)),
        outcome(root.write(path, b"pwned", Expected::Absent)),
        outcome(root.write(path, b"pwned", Expected::Revision(outside_revision.clone()))),
        outcome(root.list(path, 0, 100)),
        outcome(root.delete(path, &outside_revision)),
        outcome(root.rename(path, "moved", Some(outside_revision))),
        outcome(root.rename("victim.txt", path, None)),
    ]
}

#[test]
fn traversal_and_symlink_corpus_is_refused_and_nothing_outside_changes() {
    let setup = setup();
    let project = setup.project();
    let outside = setup.outside();
    setup.put("victim.txt", b"victim");
    setup.put("in_dir/inside.txt", b"inside");
    std::fs::create_dir_all(project.join("a")).expect("a");
    std::fs::create_dir_all(project.join("deep/er")).expect("deep");
    symlink(&outside, project.join("out")).expect("symlink out");
    symlink("../outside", project.join("rel_out")).expect("symlink rel_out");
    symlink("../../../outside", project.join("deep/er/up")).expect("symlink up");
    symlink(outside.join("file"), project.join("file_out")).expect("symlink file_out");
    symlink("../outside/file", project.join("rel_file_out")).expect("symlink rel_file_out");
    let proc_target = format!("/proc/self/root{}", outside.display());
    symlink(&proc_target, project.join("proc_out")).expect("symlink proc_out");
    symlink("in_dir", project.join("in_link")).expect("symlink in_link");
    let before = setup.outside_snapshot();

    let absolute = format!("{}/file", outside.display());
    let all = |word: &'static str| vec![word; OPS.len()];
    // Each path with the outcome of every op in `OPS` order.
    let corpus: Vec<(&str, Vec<&str>)> = vec![
        ("../x", all("escape")),
        ("../outside/file", all("escape")),
        ("a/../../x", all("escape")),
        ("./../x", all("escape")),
        ("..", all("escape")),
        ("/etc/passwd", all("escape")),
        (&absolute, all("escape")),
        ("a\0b", all("escape")),
        ("in_dir/\0", all("escape")),
        // Through a symlink (absolute, relative, nested, via /proc) that leads outside.
        ("out/file", all("escape")),
        ("out/new", all("escape")),
        ("out/sub/g", all("escape")),
        ("rel_out/file", all("escape")),
        ("rel_out/new", all("escape")),
        ("deep/er/up/file", all("escape")),
        ("deep/er/up/sub", all("escape")),
        ("proc_out/file", all("escape")),
        // The symlink itself as the final name: followed only by read and list (refused there);
        // writes and deletes refuse to touch a symlink entry; the rename target exists.
        (
            "file_out",
            vec![
                "escape",
                "already_exists",
                "not_a_file",
                "escape",
                "not_a_file",
                "not_a_file",
                "already_exists",
            ],
        ),
        (
            "rel_file_out",
            vec![
                "escape",
                "already_exists",
                "not_a_file",
                "escape",
                "not_a_file",
                "not_a_file",
                "already_exists",
            ],
        ),
        (
            "out",
            vec![
                "escape",
                "already_exists",
                "not_a_file",
                "escape",
                "not_a_file",
                "not_a_file",
                "already_exists",
            ],
        ),
        // Percent-encoding is never decoded: `%2e%2e` is an ordinary (here missing) name.
        ("a/%2e%2e/x", all("not_found")),
    ];

    let mut failures = Vec::new();
    for (path, expected) in &corpus {
        let got = run_ops(&setup, path);
        for ((op, want), got) in OPS.iter().zip(expected).zip(&got) {
            if want != got {
                failures.push(format!("{path:?} {op}: expected {want}, got {got}"));
            }
        }
        assert_eq!(
            setup.outside_snapshot(),
            before,
            "something outside the project changed after {path:?}"
        );
        assert_eq!(
            std::fs::read(project.join("victim.txt")).expect("victim"),
            b"victim"
        );
    }
    assert!(
        failures.is_empty(),
        "corpus mismatches:\n{}",
        failures.join("\n")
    );

    // Symlinks that stay inside are followed.
    assert_eq!(
        read_all(&setup.root, "in_link/inside.txt"),
        Ok(b"inside".to_vec())
    );
    let listed = setup
        .root
        .list("in_link", 0, 10)
        .expect("list via inside link");
    assert_eq!(listed.entries[0].name, "inside.txt");
    let root_listing = setup.root.list("", 0, 100).expect("list root");
    let kind_of = |name: &str| {
        root_listing
            .entries
            .iter()
            .find(|entry| entry.name == name)
            .map(|entry| entry.kind)
    };
    assert_eq!(kind_of("out"), Some(EntryKind::Symlink));
    assert_eq!(kind_of("in_dir"), Some(EntryKind::Dir));

    // `%2e%2e` is just a name: a write lands inside, in a directory literally called that.
    std::fs::create_dir(project.join("a/%2e%2e")).expect("literal dir");
    setup
        .root
        .write("a/%2e%2e/x", b"literal", Expected::Absent)
        .expect("write literal name");
    assert_eq!(
        std::fs::read(project.join("a/%2e%2e/x")).expect("read"),
        b"literal"
    );

    // Moving a symlink moves the link; it stays refused wherever it goes.
    setup
        .root
        .rename("file_out", "in_dir/moved_link", None)
        .expect("move link");
    assert!(matches!(
        setup.root.read("in_dir/moved_link", None, 100),
        Err(FilesError::Escape(_))
    ));
    assert_eq!(setup.outside_snapshot(), before);
}

#[test]
fn a_symlink_swapped_in_between_calls_is_refused() {
    let setup = setup();
    setup.put("d/f", b"inside f");
    let before = setup.outside_snapshot();
    let read = setup.root.read("d/f", None, 100).expect("read inside");
    std::fs::rename(setup.project().join("d"), setup.project().join("d_old")).expect("move d");
    symlink(setup.outside(), setup.project().join("d")).expect("swap in symlink");
    let refused = [
        outcome(
            setup
                .root
                .write("d/f", b"pwned", Expected::Revision(read.disk_revision)),
        ),
        outcome(
            setup
                .root
                .write("d/f", b"pwned", Expected::Revision(sha(OUTSIDE_FILE))),
        ),
        outcome(setup.root.write("d/new", b"pwned", Expected::Absent)),
        outcome(setup.root.read("d/f", None, 100)),
        outcome(setup.root.delete("d/f", &sha(OUTSIDE_FILE))),
        outcome(setup.root.rename("d/f", "stolen", None)),
        outcome(setup.root.list("d", 0, 10)),
    ];
    assert_eq!(refused, ["escape"; 7]);
    assert_eq!(setup.outside_snapshot(), before);
}

#[test]
fn a_directory_flipping_to_an_outside_symlink_during_writes_never_leaks() {
    let setup = setup();
    let project = setup.project();
    setup.put("d/keep", b"k");
    let before = setup.outside_snapshot();
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut written, mut refused) = (0, 0);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Flip `d` between the real directory and a symlink to the outside directory,
            // holding each state briefly so writes meet both and the moments in between.
            let pause = Duration::from_micros(200);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::fs::rename(project.join("d"), project.join("d_real")).expect("hide d");
                symlink(setup.outside(), project.join("d")).expect("link d");
                std::thread::sleep(pause);
                std::fs::remove_file(project.join("d")).expect("unlink d");
                std::fs::rename(project.join("d_real"), project.join("d")).expect("restore d");
                std::thread::sleep(pause);
            }
        });
        let mut attempt = 0;
        while attempt < 500 || (attempt < 50_000 && (written < 20 || refused < 20)) {
            match setup
                .root
                .write(&format!("d/new{attempt}"), b"x", Expected::Absent)
            {
                Ok(_) => written += 1,
                Err(
                    FilesError::Escape(_)
                    | FilesError::NotFound(_)
                    | FilesError::ParentMissing { .. },
                ) => refused += 1,
                Err(other) => {
                    // Stop the flipping thread first, or the scope would wait for it forever.
                    stop.store(true, std::sync::atomic::Ordering::Relaxed);
                    panic!("unexpected {other:?}")
                }
            }
            attempt += 1;
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    assert_eq!(setup.outside_snapshot(), before, "a write leaked outside");
    assert!(
        written > 0 && refused > 0,
        "the race never flipped: {written} written, {refused} refused"
    );
    let inside = std::fs::read_dir(project.join("d")).expect("d").count();
    assert_eq!(
        inside,
        written + 1,
        "every successful write landed inside d"
    );
}

#[test]
fn a_write_replaces_a_hard_link_to_an_outside_file_instead_of_writing_through_it() {
    let setup = setup();
    let outside_file = setup.outside().join("file");
    std::fs::hard_link(&outside_file, setup.project().join("linked")).expect("hard link");
    let before = setup.outside_snapshot();
    let inode = std::fs::metadata(&outside_file).expect("meta").ino();
    // Indistinguishable by path: reading shows the outside bytes (documented).
    let read = setup.root.read("linked", None, 1000).expect("read link");
    assert_eq!(read.bytes, OUTSIDE_FILE);
    setup
        .root
        .write(
            "linked",
            b"new inside bytes",
            Expected::Revision(read.disk_revision),
        )
        .expect("write");
    assert_eq!(std::fs::read(&outside_file).expect("outside"), OUTSIDE_FILE);
    let outside_meta = std::fs::metadata(&outside_file).expect("meta");
    assert_eq!((outside_meta.ino(), outside_meta.nlink()), (inode, 1));
    assert_eq!(setup.outside_snapshot(), before);
    assert_eq!(
        read_all(&setup.root, "linked"),
        Ok(b"new inside bytes".to_vec())
    );
}

#[test]
fn two_writers_with_the_same_revision_exactly_one_wins() {
    let setup = setup();
    setup.put("shared.txt", b"start");
    // A second handle on the same root: the lock is the file's, not the handle's.
    let other = ProjectRoot::open(&setup.project()).expect("second handle");
    for round in 0..50 {
        let expected = sha(&read_all(&setup.root, "shared.txt").expect("read"));
        let barrier = Barrier::new(2);
        let contents = [
            format!("round {round} writer A"),
            format!("round {round} writer B"),
        ];
        let results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = [&setup.root, &other]
                .into_iter()
                .zip(&contents)
                .map(|(root, content)| {
                    let (barrier, expected) = (&barrier, expected.clone());
                    scope.spawn(move || {
                        barrier.wait();
                        root.write(
                            "shared.txt",
                            content.as_bytes(),
                            Expected::Revision(expected),
                        )
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("writer thread"))
                .collect()
        });
        let winners: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let current = read_all(&setup.root, "shared.txt").expect("read");
        assert_eq!(winners[0].disk_revision, sha(&current));
        let loser = results
            .iter()
            .find_map(|r| r.as_ref().err())
            .expect("a loser");
        assert_eq!(
            loser,
            &FilesError::RevisionMismatch {
                current: sha(&current)
            },
            "round {round}"
        );
        assert_eq!(loser.code(), ErrorCode::RevisionMismatch);
    }
}

const CHILD_DIR: &str = "LOMI_FILES_CHILD_WRITER_DIR";
const BIG: usize = 4 * 1024 * 1024;

fn big_contents() -> [Vec<u8>; 2] {
    let pattern = |seed: u8| {
        (0..BIG)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect()
    };
    [pattern(0x00), pattern(0xA5)]
}

/// Not a test on its own: the body of the child process of the crash test (a no-op otherwise).
/// It rewrites `big.bin` back and forth between the two contents until it is killed.
#[test]
fn child_writer() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else {
        return;
    };
    let root = ProjectRoot::open(Path::new(&dir)).expect("child root");
    let contents = big_contents();
    let first = sha(&contents[0]);
    // Read once; afterwards the loop is (almost) all writing, so a kill usually lands mid-write.
    let mut current = root
        .read("big.bin", None, 0)
        .expect("child read")
        .disk_revision;
    let mut announced = false;
    loop {
        let next = if current == first { 1 } else { 0 };
        current = root
            .write("big.bin", &contents[next], Expected::Revision(current))
            .expect("child write")
            .disk_revision;
        if !announced {
            println!("child-writer-ready");
            announced = true;
        }
    }
}

#[test]
fn a_writer_killed_mid_write_leaves_the_old_or_the_new_content() {
    let setup = setup();
    let contents = big_contents();
    setup.put("big.bin", &contents[0]);
    // 200 in the soak suite (scripts/soak), 20 in CI and a plain `cargo test`.
    let iterations = if std::env::var("LOMI_SOAK_TESTS").is_ok_and(|v| v == "1") {
        200
    } else {
        20
    };
    let mut random = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as u64
        | 1;
    let (mut saw_old, mut saw_new, mut leftovers) = (0, 0, 0);
    // At least `iterations` kills, and more (up to 10×) until one has visibly landed mid-write.
    let mut iteration = 0;
    while iteration < iterations || (leftovers == 0 && iteration < 10 * iterations) {
        iteration += 1;
        let mut child = Command::new(std::env::current_exe().expect("current exe"))
            .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
            .env(CHILD_DIR, setup.project())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        loop {
            match lines.next() {
                Some(Ok(line)) if line.contains("child-writer-ready") => break,
                Some(Ok(_)) => {}
                other => panic!("child ended before writing: {other:?}"),
            }
        }
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        std::thread::sleep(Duration::from_micros(random % 40_000));
        child.kill().expect("SIGKILL child");
        child.wait().expect("reap child");
        let now = std::fs::read(setup.project().join("big.bin")).expect("read after kill");
        if now == contents[0] {
            saw_old += 1;
        } else if now == contents[1] {
            saw_new += 1;
        } else {
            panic!("iteration {iteration}: big.bin is neither the old nor the new content");
        }
        let listing = setup.root.list("", 0, 10).expect("list");
        assert_eq!(listing.total, 1, "temp files are hidden from listings");
        assert_eq!(listing.entries[0].name, "big.bin");
        leftovers = std::fs::read_dir(setup.project())
            .expect("read_dir")
            .filter(|entry| {
                let entry = entry.as_ref().expect("entry");
                entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX)
            })
            .count();
    }
    eprintln!(
        "crash test: {iteration} kills, {saw_old}/{saw_new} even/odd content, \
         {leftovers} abandoned temp files at the end"
    );
    assert!(
        leftovers > 0,
        "no kill landed mid-write; the test did not test anything"
    );
}

#[test]
fn encodings_are_reported_and_survive_a_rewrite_byte_for_byte() {
    let setup = setup();
    let cases: &[(&str, &[u8], Encoding, LineEndings)] = &[
        ("plain.txt", b"one\ntwo\n", Encoding::Utf8, LineEndings::Lf),
        (
            "bom.txt",
            b"\xEF\xBB\xBFcaf\xC3\xA9\r\nnext\r\n",
            Encoding::Utf8Bom,
            LineEndings::Crlf,
        ),
        (
            "crlf.txt",
            b"a\r\nb\r\nc",
            Encoding::Utf8,
            LineEndings::Crlf,
        ),
        ("old_mac.txt", b"a\rb\r", Encoding::Utf8, LineEndings::Cr),
        (
            "mixed.txt",
            b"a\r\nb\nc\r",
            Encoding::Utf8,
            LineEndings::Mixed,
        ),
        (
            "latin1.txt",
            b"caf\xE9 cr\xE8me\n",
            Encoding::Latin1,
            LineEndings::Lf,
        ),
        (
            "utf16le.txt",
            b"\xFF\xFEh\x00i\x00\r\x00\n\x00",
            Encoding::Utf16Le,
            LineEndings::Crlf,
        ),
        (
            "utf16be.txt",
            b"\xFE\xFF\x00h\x00\n",
            Encoding::Utf16Be,
            LineEndings::Lf,
        ),
        (
            "binary.bin",
            b"\x00\x01\x02\r\n\xFF\x00",
            Encoding::Binary,
            LineEndings::None,
        ),
        ("empty.txt", b"", Encoding::Utf8, LineEndings::None),
    ];
    for (name, bytes, encoding, line_endings) in cases {
        let created = setup
            .root
            .write(name, bytes, Expected::Absent)
            .expect("create");
        assert_eq!(created.disk_revision, sha(bytes), "{name}");
        let read = setup.root.read(name, None, 1 << 20).expect("read");
        assert_eq!(
            (
                read.encoding,
                read.line_endings,
                read.bytes.as_slice(),
                read.size
            ),
            (*encoding, *line_endings, *bytes, bytes.len() as u64),
            "{name}"
        );
        assert_eq!(read.disk_revision, sha(bytes), "{name}");
        let rewritten = setup
            .root
            .write(
                name,
                &read.bytes,
                Expected::Revision(read.disk_revision.clone()),
            )
            .expect("rewrite");
        assert_eq!(rewritten.disk_revision, read.disk_revision, "{name}");
        assert_eq!(
            std::fs::read(setup.project().join(name)).expect("disk"),
            *bytes
        );
    }
    // A large file: encoding is detected across chunk boundaries.
    let big: Vec<u8> = "é\r\n".repeat(100_000).into_bytes();
    setup
        .root
        .write("big.txt", &big, Expected::Absent)
        .expect("big");
    let read = setup.root.read("big.txt", None, 1 << 30).expect("read big");
    assert_eq!(
        (read.encoding, read.line_endings),
        (Encoding::Utf8, LineEndings::Crlf)
    );
}

#[test]
fn ranges_and_max_bytes_return_part_with_the_whole_file_revision() {
    let setup = setup();
    let content: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8 | 0x20).collect();
    setup.put("data.txt", &content);
    let check = |range: Option<(u64, u64)>, max: usize, want: &[u8], truncated: bool| {
        let read = setup.root.read("data.txt", range, max).expect("read");
        assert_eq!(
            (read.bytes.as_slice(), read.truncated),
            (want, truncated),
            "{range:?} {max}"
        );
        assert_eq!((read.size, read.disk_revision), (200_000, sha(&content)));
    };
    check(None, usize::MAX, &content, false);
    check(None, 10, &content[..10], true);
    check(Some((65_530, 20)), 100, &content[65_530..65_550], false);
    check(Some((65_530, 20)), 5, &content[65_530..65_535], true);
    check(Some((199_990, 100)), 100, &content[199_990..], false);
    check(Some((300_000, 10)), 100, b"", false);
    check(Some((0, 0)), 100, b"", false);
}

#[test]
fn directory_and_entry_revisions_change_exactly_when_the_listing_does() {
    let setup = setup();
    setup.put("d/a.txt", b"a");
    setup.put("d/b.txt", b"b");
    setup.put("d/sub/inner.txt", b"i");
    let root = &setup.root;
    let listing = |rel: &str| root.list(rel, 0, 100).expect("list");
    let entry = |rel: &str, name: &str| {
        listing(rel)
            .entries
            .into_iter()
            .find(|entry| entry.name == name)
            .unwrap_or_else(|| panic!("{name} not listed in {rel}"))
    };
    let start = listing("d");
    assert_eq!(
        start
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.kind))
            .collect::<Vec<_>>(),
        [
            ("a.txt", EntryKind::File),
            ("b.txt", EntryKind::File),
            ("sub", EntryKind::Dir)
        ]
    );
    let a_revision = entry("d", "a.txt").entry_revision;

    // Reading and listing change nothing.
    let b = root.read("d/b.txt", None, 10).expect("read");
    root.read("d/a.txt", None, 10).expect("read");
    assert_eq!(listing("d"), start);

    // Paging: the revision and total cover the whole directory.
    let page = root.list("d", 1, 1).expect("page");
    assert_eq!((page.total, page.entries.len()), (3, 1));
    assert_eq!(page.entries[0].name, "b.txt");
    assert_eq!(page.directory_revision, start.directory_revision);

    // Each step must change the revision from the step before, and never touch a.txt's entry.
    let mut previous = start.directory_revision.clone();
    let mut changed = |what: &str| {
        let now = listing("d").directory_revision;
        assert_ne!(now, previous, "{what} did not change the revision");
        assert_eq!(
            entry("d", "a.txt").entry_revision,
            a_revision,
            "{what} changed a.txt"
        );
        previous = now.clone();
        now
    };
    root.write("d/b.txt", b"b2", Expected::Revision(b.disk_revision))
        .expect("write");
    let after_write = changed("writing a sibling");
    root.write("d/c.txt", b"c", Expected::Absent)
        .expect("create");
    changed("creating a file");
    root.rename("d/c.txt", "d/e.txt", None).expect("rename");
    changed("renaming a file");
    root.delete("d/e.txt", &sha(b"c")).expect("delete");
    let after_delete = changed("deleting a file");
    // The same entries as before the create: exactly the same revision again.
    assert_eq!(after_delete, after_write);
    root.write("d/sub/inner.txt", b"i2", Expected::Revision(sha(b"i")))
        .expect("write nested");
    changed("writing inside a subdirectory (its entry changes)");
    let stable = listing("d");
    assert_eq!(listing("d"), stable);
}

#[test]
fn writes_over_the_cap_are_refused_and_write_nothing() {
    let setup = setup();
    setup.put("small.txt", b"0123456789");
    let root = ProjectRoot::open(&setup.project())
        .expect("open")
        .with_limits(Limits {
            max_write_bytes: 10,
        });
    assert_eq!(Limits::default().max_write_bytes, 16 * 1024 * 1024);
    let too_big = root.write("new.txt", &[b'x'; 11], Expected::Absent);
    assert_eq!(
        too_big,
        Err(FilesError::TooLarge {
            limit: 10,
            size: 11
        })
    );
    assert_eq!(
        too_big.expect_err("too large").code(),
        ErrorCode::InvalidArgument
    );
    let replace = root.write(
        "small.txt",
        &[b'x'; 11],
        Expected::Revision(sha(b"0123456789")),
    );
    assert!(matches!(replace, Err(FilesError::TooLarge { .. })));
    root.write(
        "small.txt",
        b"abcdefghij",
        Expected::Revision(sha(b"0123456789")),
    )
    .expect("at the cap is fine");
    let names: Vec<_> = std::fs::read_dir(setup.project())
        .expect("read_dir")
        .map(|entry| entry.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["small.txt"], "no new file and no temp file");
}

#[test]
fn a_write_keeps_the_file_permissions() {
    let setup = setup();
    for mode in [0o640, 0o600, 0o755, 0o444] {
        let name = format!("mode{mode:o}.txt");
        setup.put(&name, b"old");
        let path = setup.project().join(&name);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
        setup
            .root
            .write(&name, b"new", Expected::Revision(sha(b"old")))
            .expect("write");
        let meta = std::fs::metadata(&path).expect("meta");
        assert_eq!(
            (meta.mode() & 0o7777, std::fs::read(&path).expect("read")),
            (mode, b"new".to_vec())
        );
    }
}

#[test]
fn writes_renames_and_deletes_check_what_they_expect() {
    let setup = setup();
    let root = &setup.root;
    setup.put("a.txt", b"a");
    setup.put("dir/x", b"x");
    std::fs::create_dir(setup.project().join("empty")).expect("empty dir");
    symlink("a.txt", setup.project().join("link")).expect("inside link");

    // Create never overwrites; replace needs the current revision.
    assert_eq!(
        root.write("a.txt", b"z", Expected::Absent),
        Err(FilesError::AlreadyExists("a.txt".into()))
    );
    assert_eq!(
        root.write("a.txt", b"z", Expected::Revision(sha(b"stale"))),
        Err(FilesError::RevisionMismatch { current: sha(b"a") })
    );
    assert!(matches!(
        root.write("missing.txt", b"z", Expected::Revision(sha(b"a"))),
        Err(FilesError::NotFound(_))
    ));
    // A missing folder says which one and how to make it.
    assert_eq!(
        root.write("nodir/new.txt", b"z", Expected::Absent),
        Err(FilesError::ParentMissing {
            path: "nodir/new.txt".to_owned(),
            parent: "nodir".to_owned(),
        })
    );
    assert!(matches!(
        root.write("a.txt/new", b"z", Expected::Absent),
        Err(FilesError::NotADirectory(_))
    ));
    assert!(matches!(
        root.write("dir", b"z", Expected::Revision(sha(b""))),
        Err(FilesError::NotAFile(_))
    ));
    // A symlink that points inside is readable, but a write names the real file.
    assert_eq!(read_all(root, "link"), Ok(b"a".to_vec()));
    assert!(matches!(
        root.write("link", b"z", Expected::Revision(sha(b"a"))),
        Err(FilesError::NotAFile(_))
    ));
    assert!(matches!(
        root.read("dir", None, 10),
        Err(FilesError::NotAFile(_))
    ));
    assert!(matches!(
        root.list("a.txt", 0, 10),
        Err(FilesError::NotADirectory(_))
    ));
    assert!(matches!(
        root.read("", None, 10),
        Err(FilesError::Escape(_))
    ));

    // Rename refuses to overwrite and checks the source's revision when given.
    assert_eq!(
        root.rename("a.txt", "dir/x", None),
        Err(FilesError::AlreadyExists("dir/x".into()))
    );
    assert_eq!(
        root.rename("a.txt", "b.txt", Some(sha(b"stale"))),
        Err(FilesError::RevisionMismatch { current: sha(b"a") })
    );
    root.rename("a.txt", "dir/a.txt", Some(sha(b"a")))
        .expect("rename");
    assert_eq!(read_all(root, "dir/a.txt"), Ok(b"a".to_vec()));
    assert!(matches!(
        root.rename("a.txt", "c.txt", None),
        Err(FilesError::NotFound(_))
    ));

    // Delete: files by disk revision, empty directories by directory revision, nothing else.
    assert_eq!(
        root.delete("dir/x", &sha(b"stale")),
        Err(FilesError::RevisionMismatch { current: sha(b"x") })
    );
    root.delete("dir/x", &sha(b"x")).expect("delete file");
    assert!(!setup.project().join("dir/x").exists());
    assert!(matches!(
        root.delete("link", &sha(b"a")),
        Err(FilesError::NotAFile(_))
    ));
    let dir_revision = root.list("dir", 0, 10).expect("list").directory_revision;
    assert_eq!(
        root.delete("dir", &dir_revision),
        Err(FilesError::DirectoryNotEmpty("dir".into()))
    );
    let empty_revision = root.list("empty", 0, 10).expect("list").directory_revision;
    assert!(matches!(
        root.delete("empty", &dir_revision),
        Err(FilesError::RevisionMismatch { .. })
    ));
    root.delete("empty", &empty_revision)
        .expect("delete empty dir");
    assert!(!setup.project().join("empty").exists());
}

#[test]
fn a_fifo_or_device_is_refused_without_blocking() {
    let setup = setup();
    let project = std::fs::File::open(setup.project()).expect("open project");
    rustix::fs::mknodat(
        &project,
        "pipe",
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .expect("mkfifo");
    assert!(matches!(
        setup.root.read("pipe", None, 10),
        Err(FilesError::NotAFile(_))
    ));
    assert!(matches!(
        setup.root.write("pipe", b"x", Expected::Revision(sha(b""))),
        Err(FilesError::NotAFile(_))
    ));
    let listing = setup.root.list("", 0, 10).expect("list");
    assert_eq!(listing.entries[0].kind, EntryKind::Other);
}

#[test]
fn errors_map_to_protocol_codes() {
    let cases = [
        (FilesError::Escape("x".into()), ErrorCode::InvalidArgument),
        (FilesError::NotFound("x".into()), ErrorCode::NotFound),
        (
            FilesError::RevisionMismatch {
                current: "c".into(),
            },
            ErrorCode::RevisionMismatch,
        ),
        (
            FilesError::AlreadyExists("x".into()),
            ErrorCode::RevisionMismatch,
        ),
        (
            FilesError::TooLarge { limit: 1, size: 2 },
            ErrorCode::InvalidArgument,
        ),
        (FilesError::NotAFile("x".into()), ErrorCode::InvalidArgument),
        (
            FilesError::NotADirectory("x".into()),
            ErrorCode::InvalidArgument,
        ),
        (
            FilesError::DirectoryNotEmpty("x".into()),
            ErrorCode::InvalidArgument,
        ),
        (FilesError::Io("x".into()), ErrorCode::Internal),
    ];
    for (error, code) in cases {
        assert_eq!(error.code(), code, "{error:?}");
    }
}

fn text_edit(start: u64, end: u64, text: &str) -> lomi_protocol::tools::editor::TextEdit {
    lomi_protocol::tools::editor::TextEdit {
        start,
        end,
        text: text.to_owned(),
    }
}

/// The person's edit in the desktop app raises the buffer revision, so an agent's edit made
/// against the text before it is refused with the current revision; saving keeps BOM and CRLF.
#[test]
fn a_persons_edit_makes_a_stale_agent_edit_fail() {
    let setup = setup();
    let original = b"\xEF\xBB\xBFone\r\ntwo\r\n";
    setup.put("doc.txt", original);
    let documents = lomi_files::documents::Documents::new();
    let workspace = lomi_protocol::WorkspaceId::parse("ws_test").expect("workspace id");
    let project = lomi_protocol::ProjectId::parse("pj_test").expect("project id");
    let id = lomi_protocol::DocumentId::parse("doc_test").expect("document id");
    let opened = documents
        .open(
            &workspace,
            &project,
            &setup.project(),
            "doc.txt",
            id.clone(),
        )
        .expect("open");
    assert_eq!(
        (opened.buffer_revision.as_str(), opened.text.as_str()),
        ("1", "one\r\ntwo\r\n")
    );
    let person = documents
        .edit_as_person(&id, 1, &[text_edit(0, 3, "ONE")], None)
        .expect("person's edit");
    assert_eq!(
        (person.buffer_revision.as_str(), person.rebased),
        ("2", false)
    );
    let stale = documents
        .edit(&id, 1, &[text_edit(5, 8, "TWO")])
        .expect_err("a stale agent edit is refused");
    assert_eq!(stale.code, ErrorCode::RevisionMismatch, "{stale:?}");
    assert_eq!(
        stale.details,
        Some(serde_json::json!({ "currentRevision": "2" }))
    );
    documents
        .edit(&id, 2, &[text_edit(5, 8, "TWO")])
        .expect("an edit at the current revision");
    documents.save(&id, 3).expect("save");
    assert_eq!(
        std::fs::read(setup.project().join("doc.txt")).expect("read back"),
        b"\xEF\xBB\xBFONE\r\nTWO\r\n"
    );
}

/// The person types against the text they saw while an agent's edit lands first: the
/// person's keystrokes are moved over it, never refused; every change is announced in order;
/// "keep mine" saves over a file changed on disk, reload takes it back.
#[test]
fn a_persons_late_edit_lands_on_the_agents_text() {
    let setup = setup();
    setup.put("doc.txt", b"fn main() {\n}\n");
    let documents = lomi_files::documents::Documents::new();
    let mut feed = documents.subscribe();
    let workspace = lomi_protocol::WorkspaceId::parse("ws_test").expect("workspace id");
    let project = lomi_protocol::ProjectId::parse("pj_test").expect("project id");
    let id = lomi_protocol::DocumentId::parse("doc_test").expect("document id");
    documents
        .open(
            &workspace,
            &project,
            &setup.project(),
            "doc.txt",
            id.clone(),
        )
        .expect("open");
    // The agent renames the function at revision 1 …
    documents
        .edit(&id, 1, &[text_edit(3, 7, "start")])
        .expect("the agent's edit");
    // … while the person, still at revision 1, typed inside the body, then again at 2.
    let first = documents
        .edit_as_person(&id, 1, &[text_edit(12, 12, "    go();")], Some("w1"))
        .expect("a late edit is moved, not refused");
    assert_eq!(
        (first.buffer_revision.as_str(), first.rebased),
        ("3", true),
        "{first:?}"
    );
    assert_eq!(first.edits, [text_edit(13, 13, "    go();")]);
    let stale_agent = documents
        .edit(&id, 2, &[text_edit(0, 0, "// ")])
        .expect_err("an agent's stale edit is still refused");
    assert_eq!(stale_agent.code, ErrorCode::RevisionMismatch);
    documents
        .edit_as_person(&id, 2, &[text_edit(13, 13, "\n")], Some("w1"))
        .expect("the second keystroke, also made before the first landed");
    let document = documents.get(&id).expect("open");
    assert_eq!(document.text, "fn start() {\n    go();\n}\n");
    assert_eq!(document.buffer_revision, 4);
    let mut seen = Vec::new();
    while let Ok(event) = feed.try_recv() {
        seen.push(serde_json::to_value(event).expect("json"));
    }
    let summary: Vec<(String, String)> = (seen.iter())
        .map(|e| {
            (
                e["bufferRevision"].as_str().unwrap_or_default().to_owned(),
                e["origin"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("2".to_owned(), "agent".to_owned()),
            ("3".to_owned(), "person".to_owned()),
            ("4".to_owned(), "person".to_owned())
        ],
        "{seen:?}"
    );
    assert_eq!(seen[1]["session"], "w1");

    // Someone rewrites the file: a plain save is refused, "keep mine" writes what the
    // person sees, and a reload after another outside write takes the file's text.
    setup.put("doc.txt", b"outside\n");
    assert_eq!(
        documents.disk_state(&id).expect("disk state"),
        lomi_protocol::tools::editor::DiskState::Changed
    );
    let refused = documents
        .save(&id, 4)
        .expect_err("the file changed on disk");
    assert_eq!(refused.tool_error().code, ErrorCode::RevisionMismatch);
    documents.save_over(&id, 4, true).expect("keep mine");
    assert_eq!(
        std::fs::read(setup.project().join("doc.txt")).expect("read back"),
        b"fn start() {\n    go();\n}\n"
    );
    setup.put("doc.txt", b"outside again\n");
    let reloaded = documents.reload(&id).expect("reload");
    assert_eq!(
        (reloaded.buffer_revision.as_str(), reloaded.dirty),
        ("5", false)
    );
    let document = documents.get(&id).expect("open");
    assert_eq!(
        (document.text.as_str(), document.dirty()),
        ("outside again\n", false)
    );
    // A keystroke made before the reload is still kept: the reload replaced the whole text,
    // so it lands after the reloaded text (the change applied first comes first).
    documents
        .edit_as_person(&id, 4, &[text_edit(0, 0, "> ")], Some("w1"))
        .expect("a keystroke from before the reload");
    assert_eq!(documents.get(&id).expect("open").text, "outside again\n> ");
}

// ---- capture sets ----

fn png(width: u32, height: u32, mark: Option<(u32, u32)>) -> Vec<u8> {
    let mut image = image::RgbaImage::from_pixel(width, height, image::Rgba([250, 250, 250, 255]));
    if let Some((x, y)) = mark {
        image.put_pixel(x, y, image::Rgba([0, 0, 0, 255]));
    }
    let mut bytes = Vec::new();
    image
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .expect("encode");
    bytes
}

fn shot(name: &str, png: Vec<u8>) -> lomi_files::capture_set::Shot {
    lomi_files::capture_set::Shot {
        name: name.to_owned(),
        target: format!("http://127.0.0.1/{name}"),
        viewport: None,
        scale: 1.0,
        png,
        captured_at: lomi_protocol::Timestamp::from_millis(0),
    }
}

#[test]
fn a_capture_set_compares_keeps_writes_and_its_manifest_lists_what_is_there() {
    use lomi_files::capture_set::CaptureFolder;
    let setup = setup();
    std::fs::create_dir(setup.project().join("shots")).expect("mkdir");
    let open = |threshold| {
        CaptureFolder::open(setup.project(), "shots", None, threshold, 3, true).expect("open")
    };
    let mut first = open(None);
    first.add(shot("a", png(10, 10, None))).expect("add");
    let entry = &first.result().captures[0];
    assert!(entry.written && entry.comparison.is_none(), "{entry:?}");
    assert_eq!(
        entry.sha256,
        sha(&std::fs::read(setup.project().join("shots/a.png")).expect("read"))
    );

    // The same pixels: kept, compared, no diff.
    let mut again = open(None);
    again.add(shot("a", png(10, 10, None))).expect("add");
    let entry = &again.result().captures[0];
    let comparison = entry.comparison.as_ref().expect("compared");
    assert!(!entry.written && comparison.changed_pixels == 0 && comparison.diff.is_none());

    // One pixel: written, with a diff of exactly it; under a threshold of 2 %, kept.
    let mut kept = open(Some(0.02));
    kept.add(shot("a", png(10, 10, Some((3, 4))))).expect("add");
    assert!(!kept.result().captures[0].written);
    let mut changed = open(None);
    changed
        .add(shot("a", png(10, 10, Some((3, 4)))))
        .expect("add");
    let entry = &changed.result().captures[0];
    let comparison = entry.comparison.as_ref().expect("compared");
    assert_eq!(
        (
            entry.written,
            comparison.changed_pixels,
            comparison.changed_ratio
        ),
        (true, 1, 0.01)
    );
    assert_eq!(comparison.diff.as_deref(), Some("shots/a.diff.png"));
    let diff = lomi_capture::decode_png(
        &std::fs::read(setup.project().join("shots/a.diff.png")).expect("diff"),
    )
    .expect("a PNG");
    let marked: Vec<_> = diff
        .enumerate_pixels()
        .filter(|(_, _, p)| p.0[3] != 0)
        .map(|(x, y, _)| (x, y))
        .collect();
    assert_eq!(marked, [(3, 4)]);
    changed.write_manifest().expect("manifest");
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(setup.project().join("shots/manifest.json")).expect("read"),
    )
    .expect("json");
    assert_eq!(
        manifest,
        serde_json::to_value(changed.result()).expect("json")
    );

    // Folders outside the project, or missing, are refused.
    for (folder, baseline) in [
        ("../outside", None),
        ("missing", None),
        ("shots", Some("../outside")),
    ] {
        assert!(
            CaptureFolder::open(setup.project(), folder, baseline, None, 1, false).is_err(),
            "{folder} {baseline:?}"
        );
    }
    let check = |names: &[&str], threshold| {
        lomi_files::capture_set::check_set("shots", None, threshold, names.iter().copied()).is_ok()
    };
    assert!(check(&["a", "b-1", "c.d_e"], Some(0.5)));
    for names in [
        &[][..],
        &["a", "a"],
        &["../a"],
        &[".hidden"],
        &["manifest"],
        &["x.diff"],
        &["a b"],
    ] {
        assert!(!check(names, None), "{names:?}");
    }
    assert!(!check(&["a"], Some(1.5)));
}

/// The broker's sight for previews, over this crate's reads (the host's has a phone's model too).
struct FilesSight;

impl lomi_broker::Sight for FilesSight {
    fn peek(
        &self,
        root: PathBuf,
        rel: String,
        max: usize,
    ) -> futures_util::future::BoxFuture<'static, Result<Option<lomi_broker::Peek>, String>> {
        Box::pin(lomi_files::preview::peek(root, rel, max))
    }

    fn staged(
        &self,
        root: PathBuf,
        max: usize,
    ) -> futures_util::future::BoxFuture<'static, Result<lomi_broker::Staged, String>> {
        Box::pin(async move { lomi_files::preview::staged(&root, max).await })
    }

    fn device_model(
        &self,
        _serial: String,
    ) -> futures_util::future::BoxFuture<'static, Option<String>> {
        Box::pin(async { None })
    }

    fn document(&self, _id: lomi_protocol::DocumentId) -> Option<lomi_broker::OpenDocument> {
        None
    }
}

/// What a person deciding on a delete or a write is shown is read beneath the project root
/// exactly as the file tools read: `..`, an absolute path and a symlink out are refused, and
/// not one byte from outside appears in the effect.
#[tokio::test]
async fn a_preview_never_reads_outside_the_project() {
    let s = setup();
    s.put("inside.txt", b"inside line\n");
    symlink("../outside/file", s.project().join("link")).expect("symlink out");
    let before = s.outside_snapshot();
    let data = tempfile::tempdir().expect("data dir");
    let broker =
        lomi_broker::Broker::start(lomi_broker::BrokerConfig::new(data.path())).expect("broker");
    let workspace = broker
        .workspace_add("W", &s.project())
        .expect("workspace")
        .id;
    let caller = broker.pairing_begin("agent", None).expect("pairing");
    broker
        .pairing_approve(&caller, std::slice::from_ref(&workspace))
        .expect("approve");
    broker.set_sight(std::sync::Arc::new(FilesSight));
    let effect = |tool: lomi_protocol::Tool, arguments: serde_json::Value| {
        let (broker, caller, workspace) = (broker.clone(), caller.clone(), workspace.clone());
        let path = arguments["path"].as_str().unwrap_or_default().to_owned();
        let preview = match tool {
            lomi_protocol::Tool::FileDelete => Preview::Delete { path },
            _ => Preview::Write {
                path,
                text: arguments["text"].as_str().map(str::to_owned),
                base64: None,
            },
        };
        async move {
            broker
                .effect(lomi_broker::Asked {
                    tool,
                    caller: &caller,
                    workspace: &workspace,
                    project: None,
                    preview: &preview,
                    panel: None,
                    arguments: &arguments,
                })
                .await
        }
    };
    let secret = String::from_utf8_lossy(OUTSIDE_FILE).trim().to_owned();
    let outside = s.outside().join("file");
    for path in ["../outside/file", outside.to_str().expect("utf-8"), "link"] {
        for tool in [
            lomi_protocol::Tool::FileDelete,
            lomi_protocol::Tool::FileWrite,
        ] {
            let shown = effect(tool, serde_json::json!({"path": path, "text": "new\n"})).await;
            let json = serde_json::to_string(&shown).expect("json");
            assert!(
                !json.contains(&secret),
                "{tool:?} {path}: read outside: {json}"
            );
            let value = serde_json::to_value(&shown).expect("json");
            assert!(
                value["note"].is_string(),
                "{tool:?} {path}: no refusal said: {json}"
            );
            assert!(
                value["size"].is_null() && value["sizeBefore"].is_null(),
                "{tool:?} {path}: a size from outside: {json}"
            );
        }
    }
    let inside = effect(
        lomi_protocol::Tool::FileDelete,
        serde_json::json!({"path": "inside.txt"}),
    )
    .await;
    assert_eq!(
        inside.detail,
        lomi_protocol::EffectDetail::FileDelete {
            path: "inside.txt".to_owned(),
            size: Some(12),
            first_lines: Some("inside line\n".to_owned()),
            truncated: false,
            binary: false,
            note: None,
        }
    );
    assert_eq!(
        s.outside_snapshot(),
        before,
        "a preview changed something outside"
    );
}

/// A commit's preview is what Git has staged now: the files and `git diff --cached`.
#[tokio::test]
async fn the_staged_changes_are_what_a_commit_would_record() {
    let s = setup();
    let git = |args: &[&str]| {
        let status = Command::new("git")
            .arg("-C")
            .arg(s.project())
            .args(args)
            .stdout(Stdio::null())
            .status()
            .expect("git");
        assert!(status.success(), "git {args:?}");
    };
    git(&["init", "-q"]);
    s.put("a.txt", b"hello\n");
    s.put("b.txt", b"not staged\n");
    git(&["add", "a.txt"]);
    let staged = lomi_files::preview::staged(&s.project(), 64 * 1024)
        .await
        .expect("staged");
    assert_eq!(staged.files, vec!["a.txt".to_owned()]);
    assert!(
        staged.diff.contains("+hello") && !staged.diff.contains("not staged"),
        "{}",
        staged.diff
    );
    assert!(!staged.truncated);
    let cut = lomi_files::preview::staged(&s.project(), 40)
        .await
        .expect("staged");
    assert!(cut.truncated && cut.diff.len() <= 40, "{cut:?}");
}
