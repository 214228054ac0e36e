//! The `copy` step: the plugin's output into the app's plugin folder.

use std::collections::BTreeSet;
use std::path::Path;

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Copied {
    pub files: usize,
    pub bytes: u64,
    /// Files in the target that the source does not have (left in place).
    pub extra: usize,
}

/// Copies the files of `from` into `to`, creating folders; files only in `to` stay.
pub fn copy_tree(from: &Path, to: &Path) -> Result<Copied, String> {
    let mut copied = Copied::default();
    let mut seen = BTreeSet::new();
    std::fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    for entry in walkdir::WalkDir::new(from).min_depth(1) {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        let rel = entry
            .path()
            .strip_prefix(from)
            .map_err(|e| format!("{}: {e}", entry.path().display()))?;
        let dest = to.join(rel);
        let is_dir =
            entry.file_type().is_dir() || (entry.file_type().is_symlink() && entry.path().is_dir());
        if is_dir {
            std::fs::create_dir_all(&dest)
                .map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
            continue;
        }
        let n = std::fs::copy(entry.path(), &dest).map_err(|e| {
            format!(
                "cannot copy {} to {}: {e}",
                entry.path().display(),
                dest.display()
            )
        })?;
        copied.files += 1;
        // What landed, read back: wine's CopyFileEx reports 0 bytes for a copy it made.
        copied.bytes += std::fs::metadata(&dest).map_or(n, |m| m.len());
        seen.insert(rel.to_path_buf());
    }
    for entry in walkdir::WalkDir::new(to).min_depth(1).into_iter().flatten() {
        if entry.file_type().is_file()
            && let Ok(rel) = entry.path().strip_prefix(to)
            && !seen.contains(rel)
        {
            copied.extra += 1;
        }
    }
    Ok(copied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_overwrites_and_leaves_extra_files() {
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("src");
        let to = dir.path().join("dst");
        std::fs::create_dir_all(from.join("lib")).unwrap();
        std::fs::write(from.join("index.js"), "new").unwrap();
        std::fs::write(from.join("lib/util.js"), "u").unwrap();
        std::fs::create_dir_all(&to).unwrap();
        std::fs::write(to.join("index.js"), "old").unwrap();
        std::fs::write(to.join("stale.js"), "s").unwrap();
        let c = copy_tree(&from, &to).unwrap();
        assert_eq!(
            c,
            Copied {
                files: 2,
                bytes: 4,
                extra: 1
            }
        );
        assert_eq!(std::fs::read_to_string(to.join("index.js")).unwrap(), "new");
        assert_eq!(
            std::fs::read_to_string(to.join("lib/util.js")).unwrap(),
            "u"
        );
    }
}
