//! ARCHITECTURE.md's invariants that a scan of the repository's files can check: each test
//! reads the sources (or the Cargo.toml files) and names the file and line that breaks one.

use std::path::{Path, PathBuf};

/// The repository's root (this crate is `crates/lomi-protocol`).
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir` (relative to the root) whose name ends with one of `endings`, as
/// paths relative to the root, in order.
fn files_under(dir: &str, endings: &[&str]) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, endings: &[&str], found: &mut Vec<String>) {
        let entries = std::fs::read_dir(root.join(dir))
            .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
            let path = dir.join(entry.file_name());
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() {
                if name != "node_modules" && name != "target" {
                    walk(root, &path, endings, found);
                }
            } else if endings.iter().any(|ending| name.ends_with(ending)) {
                found.push(path.to_string_lossy().into_owned());
            }
        }
    }
    let mut found = Vec::new();
    walk(&root(), Path::new(dir), endings, &mut found);
    found.sort();
    found
}

fn read(file: &str) -> String {
    std::fs::read_to_string(root().join(file)).unwrap_or_else(|e| panic!("cannot read {file}: {e}"))
}

/// A line that is only a comment (`//`, `/*`, or a block comment's `*` line).
fn comment(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("//") || line.starts_with("/*") || line.starts_with('*')
}

/// Fails with every breach (`file:line: text`), saying which invariant they break.
fn hold(invariant: &str, breaches: Vec<String>) {
    assert!(
        breaches.is_empty(),
        "ARCHITECTURE.md's invariant {invariant} is broken at:\n  {}",
        breaches.join("\n  ")
    );
}

/// The lines of a Rust file outside `#[cfg(test)]` items, with their numbers (from 1). An item
/// ends where its braces close (or at a `;` before any brace: a `use`); braces inside string
/// literals are counted too, which Lomi's code does not unbalance.
fn lines_outside_tests(text: &str) -> Vec<(usize, &str)> {
    let mut kept = Vec::new();
    let mut skipping = false;
    let mut depth = 0i64;
    let mut opened = false;
    for (index, line) in text.lines().enumerate() {
        if !skipping && line.trim() == "#[cfg(test)]" {
            (skipping, depth, opened) = (true, 0, false);
            continue;
        }
        if !skipping {
            kept.push((index + 1, line));
            continue;
        }
        for c in line.chars() {
            match c {
                '{' => (depth, opened) = (depth + 1, true),
                '}' => depth -= 1,
                _ => {}
            }
        }
        let ends_without_braces = !opened && line.trim_end().ends_with(';');
        if (opened && depth <= 0) || ends_without_braces {
            skipping = false;
        }
    }
    kept
}

/// Invariant 3, only lomi-protocol knows the JSON shapes: the person's control requests
/// answer typed replies (lomi-protocol's `control.rs` or a tool's output type), so
/// lomi-mcp's `control.rs` builds no JSON by hand outside its tests.
#[test]
fn control_replies_are_typed_not_built_with_json_macros() {
    let file = "crates/lomi-mcp/src/control.rs";
    let text = read(file);
    let breaches = lines_outside_tests(&text)
        .into_iter()
        .filter(|(_, line)| !comment(line) && line.contains("json!"))
        .map(|(number, line)| {
            format!(
                "{file}:{number}: json! outside #[cfg(test)]: {}",
                line.trim()
            )
        })
        .collect();
    hold("3 (only lomi-protocol knows the JSON shapes)", breaches);
}

/// Invariant 3, only lomi-protocol knows the JSON shapes: the `lomi` command and the desktop
/// shell decode replies into lomi-protocol's types and read fields, never a JSON value by a
/// key (`v["data"]`, `reply["status"]`).
#[test]
fn the_cli_and_the_desktop_shell_read_no_json_by_key() {
    let mut breaches = Vec::new();
    for file in [
        files_under("crates/lomi-cli/src", &[".rs"]),
        files_under("src-tauri/src", &[".rs"]),
    ]
    .concat()
    {
        for (index, line) in read(&file).lines().enumerate() {
            if comment(line) {
                continue;
            }
            // `["` after a name, a call or an index is a read by key; after `(`, `&`, `!`,
            // `=` or a space it is an array literal.
            let by_key = line.match_indices("[\"").any(|(at, _)| {
                line[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ')' || c == ']')
            });
            if by_key {
                breaches.push(format!(
                    "{file}:{}: a JSON value read by key: {}",
                    index + 1,
                    line.trim()
                ));
            }
        }
    }
    hold("3 (only lomi-protocol knows the JSON shapes)", breaches);
}

/// A test file of the window (Vitest), or a file generated from lomi-protocol.
fn window_test_or_generated(file: &str) -> bool {
    file.contains("/generated/") || file.ends_with(".test.ts") || file.ends_with(".test.tsx")
}

/// Invariant 8, no code but a tool's definition matches its name: the window shows the
/// wording the broker sends (labels, the effect's sentence) and never names a tool (a string
/// `"lomi_…"`) to decide what to show.
#[test]
fn the_window_names_no_tool() {
    let mut breaches = Vec::new();
    for file in files_under("frontend/src", &[".ts", ".tsx"]) {
        if window_test_or_generated(&file) {
            continue;
        }
        for (index, line) in read(&file).lines().enumerate() {
            if comment(line) {
                continue;
            }
            let names_a_tool = ["\"lomi_", "'lomi_", "`lomi_"].iter().any(|quoted| {
                line.match_indices(quoted).any(|(at, _)| {
                    line[at + quoted.len()..]
                        .chars()
                        .next()
                        .is_some_and(|c| c.is_ascii_alphabetic())
                })
            });
            if names_a_tool {
                breaches.push(format!(
                    "{file}:{}: a tool's wire name: {}",
                    index + 1,
                    line.trim()
                ));
            }
        }
    }
    hold("8 (a tool is one definition)", breaches);
}

/// The window's timers, each with why it is not polling: none reads anything from Lomi.
/// (file, timer, how many, why.)
const WINDOW_TIMERS: &[(&str, &str, usize, &str)] = &[
    (
        "frontend/src/main.tsx",
        "setTimeout",
        1,
        "hides a toast after 5 s: a render of what the window holds, nothing is read",
    ),
    (
        "frontend/src/main.tsx",
        "setInterval",
        1,
        "moves relative times (\"5 s ago\") on every 15 s: a render only, nothing is read",
    ),
];

/// Invariant 9, the window reads nothing while nothing changes: it follows the overview
/// channel and the feeds, so every timer in its code is in [`WINDOW_TIMERS`] with the reason
/// it reads nothing. A new one is either the same (add it with its reason) or polling.
#[test]
fn the_window_polls_nothing() {
    let mut breaches = Vec::new();
    for file in files_under("frontend/src", &[".ts", ".tsx"]) {
        if window_test_or_generated(&file) {
            continue;
        }
        let text = read(&file);
        for timer in ["setInterval", "setTimeout"] {
            let lines: Vec<usize> = (text.lines().enumerate())
                .filter(|(_, line)| !comment(line) && line.contains(timer))
                .map(|(index, _)| index + 1)
                .collect();
            let allowed = WINDOW_TIMERS
                .iter()
                .find(|(f, t, _, _)| *f == file && *t == timer)
                .map_or(0, |(_, _, count, _)| *count);
            if lines.len() != allowed {
                let at: Vec<String> = lines.iter().map(|n| format!("{file}:{n}")).collect();
                breaches.push(format!(
                    "{file} has {} {timer} (at {}) where WINDOW_TIMERS allows {allowed}: a timer \
                     that reads from Lomi is polling; one that only renders goes into \
                     WINDOW_TIMERS with its reason",
                    lines.len(),
                    at.join(", ")
                ));
            }
        }
    }
    hold(
        "9 (the window reads nothing while nothing changes)",
        breaches,
    );
}

/// Every package's Cargo.toml: the crates, the desktop shell and the fuzz targets.
fn manifests() -> Vec<String> {
    let mut manifests: Vec<String> = std::fs::read_dir(root().join("crates"))
        .expect("cannot list crates/")
        .map(|entry| {
            format!(
                "crates/{}/Cargo.toml",
                entry.expect("crates/").file_name().to_string_lossy()
            )
        })
        .filter(|manifest| root().join(manifest).exists())
        .collect();
    manifests.extend([
        "src-tauri/Cargo.toml".to_owned(),
        "fuzz/Cargo.toml".to_owned(),
    ]);
    manifests.sort();
    manifests
}

/// A manifest's package name.
fn package_name(manifest: &str) -> String {
    read(manifest)
        .lines()
        .find_map(|line| {
            let value = line
                .trim()
                .strip_prefix("name")?
                .trim_start()
                .strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| panic!("{manifest} names no package"))
}

/// The dependencies a manifest names, with their lines: `(name, line, section)` for every
/// `[dependencies]`-like section (`[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]`, `[target.'…'.dependencies]`, and `[dependencies.name]` tables).
fn dependencies(manifest: &str) -> Vec<(String, usize, String)> {
    let mut found = Vec::new();
    let mut section = String::new();
    for (index, line) in read(manifest).lines().enumerate() {
        let line = line.trim();
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_owned();
            // `[dependencies.name]`: the table is one dependency.
            if let Some((_, name)) = section.rsplit_once("dependencies.") {
                found.push((
                    name.trim_matches('"').to_owned(),
                    index + 1,
                    section.clone(),
                ));
            }
            continue;
        }
        if !section.ends_with("dependencies") || line.is_empty() || line.starts_with('#') {
            continue;
        }
        let name = line
            .split(['=', '.', ' '])
            .next()
            .unwrap_or("")
            .trim_matches('"');
        if !name.is_empty() {
            found.push((name.to_owned(), index + 1, section.clone()));
        }
    }
    found
}

/// Invariant 3, only lomi-store knows SQL: no other package depends on rusqlite (in any
/// dependency section) and no other Rust file names it.
#[test]
fn only_the_store_uses_sqlite() {
    let mut breaches = Vec::new();
    for manifest in manifests() {
        if manifest == "crates/lomi-store/Cargo.toml" {
            continue;
        }
        for (name, line, section) in dependencies(&manifest) {
            if name == "rusqlite" {
                breaches.push(format!("{manifest}:{line}: rusqlite in [{section}]"));
            }
        }
    }
    for dir in ["crates", "src-tauri/src", "fuzz/src"] {
        for file in files_under(dir, &[".rs"]) {
            if file.starts_with("crates/lomi-store/") {
                continue;
            }
            // This file names the crate it looks for.
            if file.ends_with("lomi-protocol/tests/architecture.rs") {
                continue;
            }
            for (index, line) in read(&file).lines().enumerate() {
                if line.contains("rusqlite") {
                    breaches.push(format!("{file}:{}: {}", index + 1, line.trim()));
                }
            }
        }
    }
    hold("3 (only lomi-store knows SQL)", breaches);
}

/// The layers of invariant 4, lowest first: a package depends only on packages of lower
/// layers (within the runtimes, only on [`SHARED_BY_RUNTIMES`]). The test parts are on top,
/// so nothing Lomi ships depends on them.
const LAYERS: &[(&str, &[&str])] = &[
    ("protocol", &["lomi-protocol"]),
    ("store", &["lomi-store"]),
    ("broker", &["lomi-broker"]),
    (
        "runtimes",
        &[
            "lomi-files",
            "lomi-capture",
            "lomi-snapshot",
            "lomi-terminal",
            "lomi-browser",
            "lomi-android",
            "lomi-chat",
        ],
    ),
    ("mcp", &["lomi-mcp"]),
    ("cli / desktop shell", &["lomi-cli", "lomi-desktop"]),
    (
        "test and bench parts",
        &["lomi-adb-fixture", "lomi-fuzz", "lomi-load"],
    ),
    // fuzz/: AFL++'s entries over lomi-fuzz's targets.
    ("AFL++ entries", &["lomi-fuzz-afl"]),
];

/// The runtimes' shared parts, which the other runtimes may use (runtimes never depend on
/// each other otherwise): project files and their confinement (`write_into`, the terminal's
/// working directory), PNG captures, and snapshot text.
const SHARED_BY_RUNTIMES: &[&str] = &["lomi-files", "lomi-capture", "lomi-snapshot"];

fn layer_of(package: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, packages)| packages.contains(&package))
}

/// Invariant 4, dependencies point one way: protocol ← store ← broker ← runtimes ← mcp ←
/// cli / desktop shell, read from every package's `[dependencies]`.
#[test]
fn dependencies_point_one_way() {
    let mut breaches = Vec::new();
    for manifest in manifests() {
        let package = package_name(&manifest);
        let Some(layer) = layer_of(&package) else {
            breaches.push(format!(
                "{manifest}: {package} is in no layer of LAYERS; add it"
            ));
            continue;
        };
        for (name, line, section) in dependencies(&manifest) {
            // Dev-dependencies may reach up (a test drives real parts); build ones may not.
            if !name.starts_with("lomi") || section.contains("dev-dependencies") {
                continue;
            }
            let Some(on) = layer_of(&name) else {
                breaches.push(format!(
                    "{manifest}:{line}: {name} is in no layer of LAYERS"
                ));
                continue;
            };
            let shared = layer == on
                && LAYERS[layer].0 == "runtimes"
                && SHARED_BY_RUNTIMES.contains(&name.as_str());
            if (on >= layer && !shared) || name == package {
                breaches.push(format!(
                    "{manifest}:{line}: {package} ({}) depends on {name} ({})",
                    LAYERS[layer].0, LAYERS[on].0
                ));
            }
        }
    }
    hold("4 (dependencies point one way)", breaches);
}

/// The scans above see what they should: a planted line of each kind is found.
#[test]
fn the_scans_find_what_they_look_for() {
    let text =
        "fn a() { json!(1); }\n#[cfg(test)]\nmod tests {\n    fn b() { json!(2); }\n}\nfn c() {}\n";
    let kept: Vec<usize> = lines_outside_tests(text)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(kept, [1, 6]);
    assert!(comment("  // a note"));
    assert!(!comment("let x = 1; // a note"));
}
