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
    let unc = crate::paths::unc_prefix(p);
    let p = p.replace('\\', "/");
    let (prefix, rest) = if is_drive(&p) {
        let drive = p[..1].to_ascii_lowercase();
        (format!("{drive}:/"), p[2..].to_string())
    } else if let Some(r) = p.strip_prefix("//").filter(|_| unc) {
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

/// What a leading expansion in a path stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// The shell's working directory: `$PWD`, `${PWD}`, `$(pwd)`, `%CD%`.
    Cwd,
    /// The repository root: `$CLAUDE_PROJECT_DIR`, `$(git rev-parse --show-toplevel)`.
    Root,
    /// A temporary directory: `$TMPDIR`, `$TEMP`, `$env:TEMP`, `$(mktemp -d)`.
    Temp,
    /// The home directory: `~`, `$HOME`, `$env:USERPROFILE`.
    Home,
    /// Anything else.
    Other,
}

/// The variable named by a whole path component: `$X`, `${X}`, `$env:X`, `%X%`.
fn var_name(c: &str) -> Option<String> {
    let name = if let Some(v) = c.strip_prefix("${").and_then(|v| v.strip_suffix('}')) {
        v
    } else if let Some(v) = c.strip_prefix("$env:").or_else(|| c.strip_prefix("$ENV:")) {
        v
    } else if let Some(v) = c.strip_prefix('%').and_then(|v| v.strip_suffix('%')) {
        v
    } else {
        c.strip_prefix('$')?
    };
    let ok = !name.is_empty() && name.bytes().all(|b| b == b'_' || b.is_ascii_alphanumeric());
    ok.then(|| name.to_ascii_uppercase())
}

/// Split a path whose first component is an expansion into what it stands for and the
/// rest (`$PWD/dist` → `(Cwd, "/dist")`); `None` when the first component is literal.
pub fn anchor(text: &str) -> Option<(Anchor, &str)> {
    let end = text.find(['/', '\\']).unwrap_or(text.len());
    let (first, rest) = text.split_at(end);
    let dynamic =
        first.contains(['$', '`', '%']) || first.starts_with('~') || first.starts_with('(');
    if !dynamic {
        return None;
    }
    let cmd = first
        .strip_prefix("$(")
        .and_then(|c| c.strip_suffix(')'))
        .or_else(|| first.strip_prefix('`').and_then(|c| c.strip_suffix('`')))
        .or_else(|| first.strip_prefix('(').and_then(|c| c.strip_suffix(')')))
        .map(|c| c.trim().to_ascii_lowercase());
    let kind = match (cmd.as_deref(), var_name(first).as_deref()) {
        (Some("pwd" | "pwd -p" | "pwd -l" | "get-location" | "gl"), _) => Anchor::Cwd,
        (Some("git rev-parse --show-toplevel"), _) => Anchor::Root,
        (Some(c), _) if c.starts_with("mktemp") => Anchor::Temp,
        (_, Some("PWD" | "CD")) => Anchor::Cwd,
        (_, Some("CLAUDE_PROJECT_DIR")) => Anchor::Root,
        (_, Some("TMPDIR" | "TMP" | "TEMP" | "RUNNER_TEMP")) => Anchor::Temp,
        (_, Some("HOME" | "USERPROFILE")) => Anchor::Home,
        _ if first == "~" => Anchor::Home,
        _ => Anchor::Other,
    };
    Some((kind, rest))
}

/// A system temporary folder or a folder below it, spelled literally (`/tmp/x`, `/var/tmp`,
/// `/dev/shm`, `C:\Windows\Temp`, `C:\Users\u\AppData\Local\Temp`): what [`Anchor::Temp`]
/// stands for. `path` is absolute and normalized.
pub fn is_temp(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    let (drive, rest) = match lower.split_once(":/") {
        Some((d, r)) if is_drive(path) && d.len() == 1 => (true, r),
        _ => (false, lower.strip_prefix('/').unwrap_or("")),
    };
    let c: Vec<&str> = rest.split('/').filter(|c| !c.is_empty()).collect();
    if drive {
        return matches!(c.as_slice(), ["temp" | "tmp", ..] | ["windows", "temp", ..])
            || matches!(c.as_slice(), ["users", _, "appdata", "local", "temp", ..]);
    }
    matches!(
        c.as_slice(),
        ["tmp", ..]
            | ["var", "tmp", ..]
            | ["private", "tmp", ..]
            | ["private", "var", "tmp", ..]
            | ["dev", "shm", ..]
    )
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
        if cfg!(not(windows)) {
            assert_eq!(normalize("//home/dev/repo/dist"), "/home/dev/repo/dist");
            assert_eq!(normalize("///home/dev/repo"), "/home/dev/repo");
        }
    }

    #[test]
    fn joining() {
        assert_eq!(join("/repo/web", "../dist"), "/repo/dist");
        assert_eq!(join("/repo", "/tmp/x"), "/tmp/x");
        assert_eq!(join(r"C:\repo", r"web\..\dist"), "c:/repo/dist");
        assert_eq!(join("/repo", "."), "/repo");
    }

    #[test]
    fn anchors() {
        assert_eq!(anchor("$PWD/dist"), Some((Anchor::Cwd, "/dist")));
        assert_eq!(anchor("${PWD}"), Some((Anchor::Cwd, "")));
        assert_eq!(anchor("$(pwd)/x"), Some((Anchor::Cwd, "/x")));
        assert_eq!(anchor(r"$pwd\dist"), Some((Anchor::Cwd, r"\dist")));
        assert_eq!(
            anchor("$CLAUDE_PROJECT_DIR/dist"),
            Some((Anchor::Root, "/dist"))
        );
        assert_eq!(
            anchor("$(git rev-parse --show-toplevel)/dist").map(|a| a.0),
            Some(Anchor::Root)
        );
        assert_eq!(anchor("$TMPDIR/dist").map(|a| a.0), Some(Anchor::Temp));
        assert_eq!(anchor(r"$env:TEMP\dist").map(|a| a.0), Some(Anchor::Temp));
        assert_eq!(anchor("%TEMP%").map(|a| a.0), Some(Anchor::Temp));
        assert_eq!(anchor("$(mktemp -d)/dist").map(|a| a.0), Some(Anchor::Temp));
        assert_eq!(anchor("~/repo/dist"), Some((Anchor::Home, "/repo/dist")));
        assert_eq!(anchor("$HOME").map(|a| a.0), Some(Anchor::Home));
        assert_eq!(anchor("$OUT/dist").map(|a| a.0), Some(Anchor::Other));
        assert_eq!(anchor("$PWD-old/dist").map(|a| a.0), Some(Anchor::Other));
        assert_eq!(anchor("dist/$X"), None);
        assert_eq!(anchor("/abs/x"), None);
    }

    #[test]
    fn places() {
        assert_eq!(place("/repo", "/repo/dist"), Place::Inside("dist".into()));
        assert_eq!(place("/repo", "/repo"), Place::Inside(String::new()));
        assert_eq!(place("/repo", "/"), Place::Contains);
        assert_eq!(place("/home/u/repo", "/home"), Place::Contains);
        assert_eq!(place("/repo", "/repository"), Place::Outside);
        assert_eq!(place("/repo", "/tmp/dist"), Place::Outside);
        assert!(is_temp("/tmp") && is_temp("/tmp/x/dist") && is_temp("/var/tmp/y"));
        assert!(is_temp("c:/Windows/Temp/x") && is_temp("c:/Users/dev/AppData/Local/Temp"));
        assert!(!is_temp("/home/dev/repo") && !is_temp("/tmpfoo") && !is_temp("/var/lib/tmp"));
        assert!(!is_temp("c:/Users/dev/repo") && !is_temp("/"));
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
