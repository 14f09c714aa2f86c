//! Atomic JSON files in the data dir: write a temp file, fsync, rename, fsync the directory, so
//! a crash leaves either the old file or the new one.

use std::io::Write;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let bytes = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    let (temp, mut file) = tempfile_in(dir, path)?;
    let written = file
        .write_all(&bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&temp, path));
    if let Err(error) = written {
        // Nothing replaced the old file; do not leave the half-written copy behind.
        if let Err(cleanup) = std::fs::remove_file(&temp) {
            tracing::warn!("could not remove {}: {cleanup}", temp.display());
        }
        return Err(error);
    }
    std::fs::File::open(dir)?.sync_all()
}

pub fn read_json<T: DeserializeOwned>(path: &Path) -> std::io::Result<Option<T>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn tempfile_in(dir: &Path, target: &Path) -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    use std::os::unix::fs::OpenOptionsExt;
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("file");
    let temp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    Ok((temp, file))
}
