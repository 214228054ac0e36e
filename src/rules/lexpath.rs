//! Lexical paths: join and normalize without touching the filesystem.
//!
//! Handles POSIX paths and Windows forms (`C:\x`, `C:/x`, `\\server\share`, `\\?\C:\x`),
//! and the MSYS/WSL spellings of a drive (`/c/x`, `/mnt/c/x`) when the repository root is
//! a drive path. Drive paths compare case-insensitively.

/// Where a path lies relative to the repository root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Place {
    /// Inside the root: the repo-relative path (`""` for the root itself).
    Inside(String),
    /// An ancestor of the root (deleting it deletes the whole repository).
    Contains,
    /// Elsewhere.
    Outside,
}

/// A drive-letter path (`C:\`, `c:/`).
pub fn is_drive(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// Absolute in POSIX or Windows terms.
pub fn is_absolute(p: &str) -> bool {
    p.starts_with('/') || p.starts_with('\\') || is_drive(p)
}

/// Normalize: forward slashes, no empty, `.` or resolvable `..` components, drive letter
/// lowercased. Relative paths stay relative (leading `..` kept).
pub fn normalize(p: &str) -> String {
    let p = p.strip_prefix(r"\\?\").unwrap_or(p);
    let p = p.replace('\\', "/");
    let (prefix, rest) = if is_drive(&p) {
        let drive = p[..1].to_ascii_lowercase();
        (format!("{drive}:/"), p[2..].to_string())
    } else if let Some(r) = p.strip_prefix("//") {
        ("//".to_string(), r.to_string())
    } else if let Some(r) = p.strip_prefix('/') {
        ("/".to_string(), r.to_string())
    } else {
        (String::new(), p.clone())
    };
    let mut parts: Vec<&str> = Vec::new();
    for c in rest.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if prefix.is_empty() {
                    parts.push("..");
                }
            }
            _ => parts.push(c),
        }
    }
    let joined = parts.join("/");
    if prefix.is_empty() && joined.is_empty() {
        ".".to_string()
    } else {
        format!("{prefix}{joined}")
    }
}

/// `base` joined with `rel` (or `rel` alone when it is absolute), normalized.
pub fn join(base: &str, rel: &str) -> String {
    if is_absolute(rel) || base.is_empty() {
        normalize(rel)
    } else {
        normalize(&format!("{base}/{rel}"))
    }
}

/// `/c/x` or `/mnt/c/x` → `c:/x` (only used when the root is a drive path).
fn msys_to_drive(p: &str) -> Option<String> {
    let rest = p.strip_prefix("/mnt/").or_else(|| p.strip_prefix('/'))?;
    let b = rest.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphabetic() || (b.len() > 1 && b[1] != b'/') {
        return None;
    }
    Some(normalize(&format!(
        "{}:/{}",
        &rest[..1],
        rest.get(2..).unwrap_or("")
    )))
}

/// Where the absolute, normalized `path` lies relative to the normalized `root`.
pub fn place(root: &str, path: &str) -> Place {
    let windows = is_drive(root);
    let (root, mut path) = if windows {
        (root.to_ascii_lowercase(), path.to_ascii_lowercase())
    } else {
        (root.to_string(), path.to_string())
    };
    if windows
        && !is_drive(&path)
        && let Some(p) = msys_to_drive(&path)
    {
        path = p;
    }
    let root = root.trim_end_matches('/');
    let path_t = path.trim_end_matches('/');
    if path_t == root {
        return Place::Inside(String::new());
    }
    if let Some(rest) = path_t.strip_prefix(root).and_then(|r| r.strip_prefix('/')) {
        return Place::Inside(rest.to_string());
    }
    if path_t.is_empty()
        || root
            .strip_prefix(path_t)
            .is_some_and(|r| r.starts_with('/'))
    {
        return Place::Contains;
    }
    Place::Outside
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizing() {
        assert_eq!(normalize("/a/./b//c/../d/"), "/a/b/d");
        assert_eq!(normalize("a/../../b"), "../b");
        assert_eq!(normalize("./"), ".");
        assert_eq!(normalize("/.."), "/");
        assert_eq!(normalize(r"C:\Users\x\..\y"), "c:/Users/y");
        assert_eq!(normalize(r"\\?\C:\repo"), "c:/repo");
        assert_eq!(normalize(r"\\server\share\x"), "//server/share/x");
    }

    #[test]
    fn joining() {
        assert_eq!(join("/repo/web", "../dist"), "/repo/dist");
        assert_eq!(join("/repo", "/tmp/x"), "/tmp/x");
        assert_eq!(join(r"C:\repo", r"web\..\dist"), "c:/repo/dist");
        assert_eq!(join("/repo", "."), "/repo");
    }

    #[test]
    fn places() {
        assert_eq!(place("/repo", "/repo/dist"), Place::Inside("dist".into()));
        assert_eq!(place("/repo", "/repo"), Place::Inside(String::new()));
        assert_eq!(place("/repo", "/"), Place::Contains);
        assert_eq!(place("/home/u/repo", "/home"), Place::Contains);
        assert_eq!(place("/repo", "/repository"), Place::Outside);
        assert_eq!(place("/repo", "/tmp/dist"), Place::Outside);
        assert_eq!(
            place("c:/repo", "C:/Repo/Dist"),
            Place::Inside("dist".into())
        );
        assert_eq!(
            place("c:/repo", "/c/repo/dist"),
            Place::Inside("dist".into())
        );
        assert_eq!(
            place("c:/repo", "/mnt/c/repo/dist"),
            Place::Inside("dist".into())
        );
        assert_eq!(place("c:/repo", "d:/repo/dist"), Place::Outside);
    }
}
