//! Where Lomi keeps its data: `--data-dir`, else `LOMI_DATA_DIR`, else the XDG data dir. The
//! `lomi` command and the desktop app resolve it the same way.

use std::path::PathBuf;

use anyhow::Context;

/// The data directory to use, created if missing, and user-only either way (its store holds
/// every operation's arguments, its socket takes the person's commands).
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
    if let Ok(metadata) = std::fs::metadata(dir)
        && metadata.is_dir()
    {
        // A folder the person made (or pointed Lomi at) is made private too.
        if metadata.permissions().mode() & 0o077 != 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .with_context(|| format!("cannot make {} private", dir.display()))?;
            tracing::info!("made the data directory {} user-only", dir.display());
        }
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

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(dir: &std::path::Path) -> u32 {
        std::fs::metadata(dir)
            .expect("metadata")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn the_data_dir_is_private_whether_lomi_made_it_or_not() {
        let parent = tempfile::tempdir().expect("temp dir");
        let made = parent.path().join("new/lomi");
        assert_eq!(resolve(Some(made.clone())).expect("made"), made);
        assert_eq!(mode(&made), 0o700);
        let existing = parent.path().join("existing");
        std::fs::create_dir(&existing).expect("a folder");
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        resolve(Some(existing.clone())).expect("existing");
        assert_eq!(mode(&existing), 0o700);
    }
}
