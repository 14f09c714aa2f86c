//! Lexical checks on project-relative paths, done before the kernel resolves anything. They give
//! clear errors early; confinement itself is the kernel's `RESOLVE_BENEATH`, not these checks.

use crate::FilesError;

/// A file path split into its parent directory (`"."` for the root) and its final name.
pub(crate) struct FilePath<'a> {
    pub parent: String,
    pub name: &'a str,
}

fn check(rel: &str) -> Result<(), FilesError> {
    if rel.contains('\0') {
        return Err(FilesError::Escape(format!(
            "{:?} contains a NUL byte; paths are plain names separated by `/`",
            rel
        )));
    }
    if rel.starts_with('/') {
        return Err(FilesError::Escape(format!(
            "{rel} is absolute; give a path relative to the project root"
        )));
    }
    if rel.split('/').any(|part| part == "..") {
        return Err(FilesError::Escape(format!(
            "{rel} contains `..`; give a path from the project root without `..`"
        )));
    }
    Ok(())
}

/// A directory path; the empty path and `.` name the root.
pub(crate) fn dir(rel: &str) -> Result<String, FilesError> {
    check(rel)?;
    let parts: Vec<&str> = components(rel).collect();
    Ok(if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    })
}

/// A path that must name an entry (never the root itself).
pub(crate) fn file(rel: &str) -> Result<FilePath<'_>, FilesError> {
    check(rel)?;
    let mut parts: Vec<&str> = components(rel).collect();
    let Some(name) = parts.pop() else {
        return Err(FilesError::Escape(format!(
            "{rel:?} names the project root; give the path of a file inside it"
        )));
    };
    let parent = if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    };
    Ok(FilePath { parent, name })
}

/// The non-empty, non-`.` components: `a//./b` is `a/b`. Nothing is decoded (`%2e` stays literal).
fn components(rel: &str) -> impl Iterator<Item = &str> {
    rel.split('/')
        .filter(|part| !part.is_empty() && *part != ".")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_and_refuses() {
        let split = |rel: &str| file(rel).map(|p| (p.parent, p.name.to_owned()));
        assert_eq!(split("a/b/c.txt"), Ok(("a/b".into(), "c.txt".into())));
        assert_eq!(split("./c"), Ok((".".into(), "c".into())));
        assert_eq!(split("a//./%2e%2e"), Ok(("a".into(), "%2e%2e".into())));
        for bad in [
            "",
            ".",
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a\0b",
            "./..",
            "a/..",
        ] {
            assert!(matches!(file(bad), Err(FilesError::Escape(_))), "{bad:?}");
        }
        assert_eq!(dir(""), Ok(".".into()));
        assert_eq!(dir("./a/"), Ok("a".into()));
        assert!(matches!(dir(".."), Err(FilesError::Escape(_))));
    }
}
