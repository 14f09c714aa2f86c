//! A capture set's folder in the project: each capture compared with the file it replaces (or
//! a baseline's), written (or the old file kept), and the manifest of exactly what is there.
//! Blocking file IO through [`crate::confine`]; the browser and Android runtimes drive it.

use std::io::Read;
use std::path::PathBuf;

use lomi_broker::EffectOutcome;
use lomi_protocol::tools::browser::Viewport;
use lomi_protocol::tools::capture::{CaptureEntry, CaptureSetResult, Comparison};
use lomi_protocol::{EffectState, Timestamp, ToolError};
use sha2::{Digest, Sha256};

use crate::confine::{confined_existing_dir, open_confined, write_confined};

/// Most captures in one set.
pub const MAX_SET_CAPTURES: usize = 100;
/// The manifest's file name in the set's folder.
pub const MANIFEST: &str = "manifest.json";
/// An earlier PNG larger than this is not compared (the capture replaces it).
const MAX_COMPARED_BYTES: u64 = 64 << 20;

/// What a set asks for, checked before anything runs: names, folders and threshold.
pub fn check_set<'a>(
    folder: &str,
    baseline: Option<&str>,
    threshold: Option<f64>,
    names: impl ExactSizeIterator<Item = &'a str>,
) -> Result<(), String> {
    if names.len() == 0 || names.len() > MAX_SET_CAPTURES {
        return Err(format!(
            "give 1 to {MAX_SET_CAPTURES} captures (there are {})",
            names.len()
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        let fine = !name.is_empty()
            && name.len() <= 80
            && !name.starts_with('.')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        if !fine {
            return Err(format!(
                "name {name:?} must be 1 to 80 of A-Z a-z 0-9 . _ - (not starting with a dot); it becomes NAME.png"
            ));
        }
        if name == "manifest" || name.ends_with(".diff") {
            return Err(format!(
                "name {name:?} is taken by the set's own files (manifest.json, NAME.diff.png)"
            ));
        }
        if !seen.insert(name) {
            return Err(format!("name {name:?} is given twice"));
        }
    }
    for (what, path) in [("folder", Some(folder)), ("baseline", baseline)] {
        if let Some(path) = path
            && (path.len() > 1024 || path.starts_with('/') || path.contains('\0'))
        {
            return Err(format!(
                "{what} must be a project-relative folder of at most 1,024 bytes"
            ));
        }
    }
    if let Some(threshold) = threshold
        && !(0.0..=1.0).contains(&threshold)
    {
        return Err(format!("threshold must be 0 to 1 (is {threshold})"));
    }
    Ok(())
}

/// One capture to add to the set.
pub struct Shot {
    pub name: String,
    /// The URL, component or deep link captured.
    pub target: String,
    pub viewport: Option<Viewport>,
    pub scale: f64,
    pub png: Vec<u8>,
    pub captured_at: Timestamp,
}

/// The set being written; [`CaptureFolder::result`] is exactly what is in the project so far.
pub struct CaptureFolder {
    root: PathBuf,
    folder: String,
    baseline: String,
    threshold: f64,
    result: CaptureSetResult,
}

impl CaptureFolder {
    /// Checks that `folder` and `baseline` (default: `folder`) are folders of the project.
    pub fn open(
        root: PathBuf,
        folder: &str,
        baseline: Option<&str>,
        threshold: Option<f64>,
        total: usize,
        deterministic: bool,
    ) -> Result<CaptureFolder, String> {
        let folder = folder.trim_end_matches('/');
        let baseline = baseline.map_or(folder, |b| b.trim_end_matches('/'));
        confined_existing_dir(&root, folder)?;
        confined_existing_dir(&root, baseline)?;
        Ok(CaptureFolder {
            result: CaptureSetResult {
                manifest: join(folder, MANIFEST),
                done: 0,
                total: u32::try_from(total).unwrap_or(u32::MAX),
                deterministic,
                captures: Vec::new(),
            },
            root,
            folder: folder.to_owned(),
            baseline: baseline.to_owned(),
            threshold: threshold.unwrap_or(0.0),
        })
    }

    /// What the set has written (or kept) so far.
    pub fn result(&self) -> &CaptureSetResult {
        &self.result
    }

    /// Compares `shot` with the earlier file of its name and writes it, with a diff of what
    /// changed, unless the change is within the threshold (then the old file stays).
    pub fn add(&mut self, shot: Shot) -> Result<(), String> {
        let Shot {
            name,
            target,
            viewport,
            scale,
            png,
            captured_at,
        } = shot;
        let capture = lomi_capture::process(&png, &lomi_capture::CaptureOptions::default())
            .map_err(|error| format!("the capture of {name} is not a usable PNG: {error}"))?;
        let path = join(&self.folder, &format!("{name}.png"));
        let against = join(&self.baseline, &format!("{name}.png"));
        let earlier = self.earlier(&against)?;
        let difference = earlier
            .as_ref()
            .and_then(|old| lomi_capture::compare(old, &capture.png).ok());
        let kept = earlier.filter(|_| {
            difference
                .as_ref()
                .is_some_and(|difference| rounded(difference.ratio()) <= self.threshold)
        });
        let diff_path = join(&self.folder, &format!("{name}.diff.png"));
        let mut diff_written = false;
        let (path, width, height, bytes, sha256) = match &kept {
            // Within the threshold: the old file stays, and no diff is written.
            Some(old) => {
                let (width, height) = lomi_capture::inspect_png(old).unwrap_or((0, 0));
                let sha256 = hex::encode(Sha256::digest(old));
                (against.clone(), width, height, old.len() as u64, sha256)
            }
            None => {
                if let Some(diff) = difference.as_ref().and_then(|d| d.diff_png.as_ref()) {
                    write_confined(&self.root, &diff_path, diff, true)?;
                    diff_written = true;
                }
                write_confined(&self.root, &path, &capture.png, true)?;
                let bytes = capture.png.len() as u64;
                (path, capture.width, capture.height, bytes, capture.sha256)
            }
        };
        self.result.captures.push(CaptureEntry {
            name,
            path,
            target,
            viewport,
            scale,
            width,
            height,
            bytes,
            sha256,
            captured_at,
            written: kept.is_none(),
            comparison: difference.map(|difference| Comparison {
                against,
                changed_pixels: difference.changed,
                changed_ratio: rounded(difference.ratio()),
                diff: diff_written.then_some(diff_path),
            }),
        });
        self.result.done = u32::try_from(self.result.captures.len()).unwrap_or(u32::MAX);
        Ok(())
    }

    /// Writes the manifest: the result as it stands, JSON.
    pub fn write_manifest(&self) -> Result<(), String> {
        let mut json = serde_json::to_vec_pretty(&self.result)
            .map_err(|error| format!("the manifest: {error}"))?;
        json.push(b'\n');
        write_confined(&self.root, &self.result.manifest, &json, true)
    }

    /// The earlier PNG at `rel`, if there is one to compare with.
    fn earlier(&self, rel: &str) -> Result<Option<Vec<u8>>, String> {
        let (file, size) = match open_confined(&self.root, rel) {
            Ok(opened) => opened,
            // No earlier file (or not a regular file): nothing to compare with.
            Err(_) => return Ok(None),
        };
        if size > MAX_COMPARED_BYTES {
            return Ok(None);
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        file.take(MAX_COMPARED_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|error| format!("cannot read {rel:?}: {error}"))?;
        Ok(Some(bytes))
    }
}

/// Why a set stopped before its end.
pub enum Halt {
    /// Cancellation was asked for (seen between captures).
    Cancelled,
    /// A capture failed; the error says which and why.
    Failed(ToolError),
}

impl CaptureFolder {
    /// Writes the manifest of what the set wrote (blocking IO) and settles the set: succeeded,
    /// stopped part-way (`cancelled`, effect `partial`, the result listing exactly what was
    /// written), or failed with that same list in its details.
    pub fn settle(&self, halt: Option<Halt>) -> EffectOutcome {
        let manifest = self.write_manifest();
        let effect = if manifest.is_ok() || self.result.captures.iter().any(|c| c.written) {
            EffectState::Partial
        } else {
            EffectState::None
        };
        let result = match lomi_broker::to_json(&self.result) {
            Ok(result) => result,
            Err(error) => {
                return EffectOutcome::Unknown {
                    effect,
                    message: error.message,
                };
            }
        };
        match (halt, manifest) {
            (None, Ok(())) => EffectOutcome::Succeeded(result),
            (Some(Halt::Cancelled), Ok(())) => EffectOutcome::Stopped(result),
            (Some(Halt::Failed(error)), _) => EffectOutcome::Failed {
                effect,
                error: error.with_details(result),
            },
            (_, Err(why)) => EffectOutcome::Failed {
                effect,
                error: ToolError::invalid(format!("the manifest could not be written: {why}"))
                    .with_details(result),
            },
        }
    }
}

/// A ratio to 9 decimals: what the manifest and the receipt both say (a JSON number with all
/// of an f64's digits does not always read back the same), and what the threshold compares.
fn rounded(ratio: f64) -> f64 {
    (ratio * 1e9).round() / 1e9
}

/// A set's folder while the set runs: each capture is compared and written on a blocking
/// thread while the next one is taken, one at a time and in order.
pub struct Writing {
    folder: Option<CaptureFolder>,
    pending: Option<tokio::task::JoinHandle<(CaptureFolder, Result<(), String>)>>,
    /// The set as it stood when the last capture was written.
    so_far: CaptureSetResult,
    /// How many captures the operation's progress has shown.
    reported: u32,
}

impl Writing {
    /// Starts writing into `folder`, and shows the set as begun (none of `total` done yet) as
    /// the operation's progress: an agent waiting on the call learns at once how many
    /// captures are coming, even when the first one takes longer than the call waits.
    pub fn new(folder: CaptureFolder, context: &lomi_broker::EffectContext) -> Writing {
        let so_far = folder.result().clone();
        context.progress(
            0,
            u64::from(so_far.total),
            format!("capturing {} targets", so_far.total),
            &so_far,
        );
        Writing {
            so_far,
            folder: Some(folder),
            pending: None,
            reported: 0,
        }
    }

    /// Shows the captures written since the last report as the operation's progress.
    pub fn report(&mut self, context: &lomi_broker::EffectContext) {
        let result = &self.so_far;
        if result.done > self.reported {
            self.reported = result.done;
            let last = result.captures.last().map_or("", |c| c.name.as_str());
            context.progress(
                u64::from(result.done),
                u64::from(result.total),
                format!("captured {last}"),
                result,
            );
        }
    }

    /// The set as it stood when the last capture was written (one may be being written now).
    pub fn so_far(&self) -> &CaptureSetResult {
        &self.so_far
    }

    /// Waits until the capture being written is in the project; answers the set so far.
    pub async fn written(&mut self) -> Result<&CaptureSetResult, String> {
        if let Some(pending) = self.pending.take() {
            let (folder, added) = match pending.await {
                Ok(done) => done,
                // A panic there is the effect's own (the engine settles it outcome_unknown).
                Err(stopped) => match stopped.try_into_panic() {
                    Ok(panic) => std::panic::resume_unwind(panic),
                    Err(stopped) => return Err(format!("writing a capture stopped: {stopped}")),
                },
            };
            self.so_far = folder.result().clone();
            self.folder = Some(folder);
            added?;
        }
        self.folder
            .as_ref()
            .map(CaptureFolder::result)
            .ok_or_else(|| "the capture set's folder was lost".to_owned())
    }

    /// Starts comparing and writing `shot`, once the capture before it is written (whose
    /// failure this answers).
    pub async fn add(&mut self, shot: Shot) -> Result<(), String> {
        self.written().await?;
        let Some(mut folder) = self.folder.take() else {
            return Err("the capture set's folder was lost".to_owned());
        };
        self.pending = Some(tokio::task::spawn_blocking(move || {
            let added = folder.add(shot);
            (folder, added)
        }));
        Ok(())
    }

    /// Waits for the last capture, then writes the manifest and settles the set
    /// ([`CaptureFolder::settle`]).
    pub async fn settle(mut self, halt: Option<Halt>) -> EffectOutcome {
        let halt = match (self.written().await, halt) {
            (Err(why), None | Some(Halt::Cancelled)) => Some(Halt::Failed(ToolError::invalid(why))),
            (_, halt) => halt,
        };
        match self.folder {
            Some(folder) => lomi_broker::off_thread(move || folder.settle(halt)).await,
            None => EffectOutcome::Unknown {
                effect: EffectState::Unknown,
                message:
                    "the capture set's folder was lost; list the folder to see what was written"
                        .to_owned(),
            },
        }
    }
}

fn join(folder: &str, name: &str) -> String {
    if folder.is_empty() || folder == "." {
        name.to_owned()
    } else {
        format!("{folder}/{name}")
    }
}
