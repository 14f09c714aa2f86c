//! What the broker reads to show a person the effect of a change before they decide on it:
//! the start of a project file (confined exactly as the file tools are) and the changes
//! staged in a project's Git index. Reads only.

use std::path::{Path, PathBuf};

use lomi_broker::{OpenDocument, Peek, Staged, off_thread};
use lomi_protocol::DocumentId;

use crate::ProjectRoot;
use crate::documents::Documents;
use crate::git::repository::Repository;

/// The first `max` bytes of the regular file `rel` beneath `root` and its size; `Ok(None)`
/// when nothing is there. A path leading outside the root is refused, never read.
pub async fn peek(root: PathBuf, rel: String, max: usize) -> Result<Option<Peek>, String> {
    off_thread(move || {
        let root = ProjectRoot::open(&root).map_err(|e| e.to_string())?;
        match root.peek(&rel, max) {
            Ok(found) => Ok(found.map(|(bytes, size)| Peek { bytes, size })),
            Err(error) => Err(error.to_string()),
        }
    })
    .await
}

/// The files staged in the Git repository at `root` and `git diff --cached` (at most `max`
/// bytes): what a commit there would record now.
pub async fn staged(root: &Path, max: usize) -> Result<Staged, String> {
    let repository = Repository::open(root)
        .await
        .map_err(|e| e.to_tool_error().message)?;
    let names = repository
        .run(&["diff", "--cached", "--name-only", "-z"], &[], 1024 * 1024)
        .await
        .map_err(|e| e.to_tool_error().message)?;
    if !names.success {
        return Err(format!("git diff refused: {}", names.explanation()));
    }
    let files = names
        .stdout
        .split(|b| *b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| String::from_utf8_lossy(name).into_owned())
        .collect();
    // No external diff programs or text conversion filters: the bytes as Git stores them.
    let diff = repository
        .run(
            &[
                "diff",
                "--cached",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
            ],
            &[],
            max,
        )
        .await
        .map_err(|e| e.to_tool_error().message)?;
    if !diff.success && !diff.truncated {
        return Err(format!("git diff refused: {}", diff.explanation()));
    }
    let text = String::from_utf8_lossy(&diff.stdout);
    let (text, cut) = lomi_protocol::effect::bounded_to(&text, max);
    Ok(Staged {
        files,
        diff: text,
        truncated: diff.truncated || cut,
    })
}

/// An open document as a save of it would write it now.
pub fn document(documents: &Documents, id: &DocumentId) -> Option<OpenDocument> {
    let document = documents.get(id).ok()?;
    Some(OpenDocument {
        bytes: document.bytes(),
        workspace: document.workspace_id,
        project: document.project_id,
        path: document.path,
    })
}
