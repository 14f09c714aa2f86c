//! The fuzz targets in the ordinary test build: every input of the kept corpus
//! (`fuzz/corpus/<target>/`) replayed, then a round of mutations of those inputs (bit flips,
//! byte changes, inserts, deletes, splices, interesting numbers). Uninstrumented, so this is a
//! regression check plus a short random walk, not coverage-guided fuzzing: that is
//! `scripts/fuzz`, with AFL++.
//!
//! The mutation round's seed is printed; `LOMI_FUZZ_SEED=N` repeats a round, and
//! `LOMI_FUZZ_MUTATIONS=N` sets how many mutated inputs each target gets (default 20,000).
//! An input that panics a target is written to the temp dir and named in the failure, ready to
//! be minimized and added to the corpus.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 3] = [
    ("tool_input", lomi_fuzz::tool_input),
    ("jsonrpc", lomi_fuzz::jsonrpc),
    ("snapshot", lomi_fuzz::snapshot),
];

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut inputs: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("a corpus entry").path();
            let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path.display().to_string(), bytes)
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "{} holds no inputs", dir.display());
    inputs
}

/// Runs one input; on a panic, keeps the input in the temp dir and fails naming it.
fn run(target: &str, function: Target, input: &[u8], origin: &str) {
    if catch_unwind(AssertUnwindSafe(|| function(input))).is_err() {
        let kept =
            std::env::temp_dir().join(format!("lomi-fuzz-{target}-crash-{}", std::process::id()));
        let note = match std::fs::write(&kept, input) {
            Ok(()) => format!("kept in {}", kept.display()),
            Err(e) => format!("not kept ({e}); {} bytes: {input:?}", input.len()),
        };
        panic!("{target} panicked on {origin}: the input is {note}");
    }
}

#[test]
fn the_kept_corpus_replays_without_a_crash() {
    for (target, function) in TARGETS {
        for (name, input) in corpus(target) {
            run(target, function, &input, &name);
        }
    }
}

/// splitmix64: small, seedable, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number below `n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const INTERESTING: [&[u8]; 12] = [
    b"0",
    b"-1",
    b"4294967296",
    b"1e309",
    b"\"\"",
    b"null",
    b"[]",
    b"{}",
    b"\\u0000",
    b"\xff",
    b"\0",
    b"\n",
];

/// One to four mutations of `input`, some taking bytes from `other` (a splice).
fn mutate(rng: &mut Rng, input: &[u8], other: &[u8]) -> Vec<u8> {
    let mut bytes = input.to_vec();
    for _ in 0..=rng.below(4) {
        let at = rng.below(bytes.len() + 1);
        match rng.below(7) {
            0 if !bytes.is_empty() => {
                let i = at.min(bytes.len() - 1);
                bytes[i] ^= 1 << rng.below(8);
            }
            1 if !bytes.is_empty() => {
                let i = at.min(bytes.len() - 1);
                bytes[i] = rng.next() as u8;
            }
            2 => bytes.insert(at, rng.next() as u8),
            3 if !bytes.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            4 => {
                let piece = INTERESTING[rng.below(INTERESTING.len())];
                bytes.splice(at..at, piece.iter().copied());
            }
            5 if !other.is_empty() => {
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(64)).min(other.len());
                bytes.splice(at..at, other[from..end].iter().copied());
            }
            _ if !bytes.is_empty() => {
                // Repeat a stretch: deep nesting and long runs.
                let from = at.min(bytes.len() - 1);
                let end = (from + 1 + rng.below(32)).min(bytes.len());
                let stretch = bytes[from..end].to_vec();
                for _ in 0..rng.below(8) {
                    bytes.splice(from..from, stretch.iter().copied());
                }
            }
            _ => bytes.push(rng.next() as u8),
        }
    }
    bytes
}

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {value:?}")),
    )
}

#[test]
fn a_round_of_mutations_of_the_corpus_crashes_nothing() {
    let seed = env_number("LOMI_FUZZ_SEED").unwrap_or_else(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let mutations = env_number("LOMI_FUZZ_MUTATIONS").unwrap_or(20_000);
    // Shown with the test's output on a failure (and with --nocapture).
    println!("mutation round: LOMI_FUZZ_SEED={seed}, {mutations} inputs per target");
    let mut rng = Rng(seed);
    for (target, function) in TARGETS {
        let inputs = corpus(target);
        for n in 0..mutations {
            let (name, input) = &inputs[rng.below(inputs.len())];
            let (_, other) = &inputs[rng.below(inputs.len())];
            let mutated = mutate(&mut rng, input, other);
            let origin = format!("mutation {n} of {name} (LOMI_FUZZ_SEED={seed})");
            run(target, function, &mutated, &origin);
        }
    }
}
