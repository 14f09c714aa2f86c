//! Where Lomi keeps its data: `--data-dir`, else `LOMI_DATA_DIR`, else the XDG data dir. The
//! `lomi` command and the desktop app resolve it the same way.

use std::path::PathBuf;

use anyhow::Context;

/// The data directory to use, created (user-only) if missing.
pub fn resolve(explicit: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let dir = match explicit {
        Some(dir) => dir,
        None => dirs::data_dir()
            .context("no data directory: set --data-dir or LOMI_DATA_DIR (HOME is not set)")?
            .join("lomi"),
    };
    create_private_dir(&dir)?;
    Ok(dir)
}

fn create_private_dir(dir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", dir.display()))?;
    Ok(())
}
