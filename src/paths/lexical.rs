//! Lexical paths: parse, join and normalize without touching the filesystem. The crate's one
//! lexical path normalizer: `paths` (payload paths → the repo), `rules` (command arguments) and
//! `hook` (write targets, scripts, the read-only scope) all read paths through it.
//!
//! Forms: POSIX paths; Windows drives (`C:\x`, `C:/x`); network shares (`\\server\share\x`,
//! with forward slashes on Windows only: see [`unc_prefix`]); device paths (`\\?\C:\x`,
//! `\\.\C:\x`, `\\?\UNC\server\share\x`, and any other device such as `\\.\pipe\x` as a
//! root of its own); and the MSYS/WSL spellings of a drive (`/c/x`, `/mnt/c/x`) where a path is
//! placed against a drive root ([`place`]). Both separators split components everywhere. Drive
//! letters and share names compare case-insensitively.

use std::borrow::Cow;

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

/// Whether a leading `//` names a network share (or a device): always when written with
/// backslashes (`\\server\share`); with forward slashes only on Windows. POSIX leaves `//` to
/// the implementation and Linux and macOS read `//x` and `///x` as `/x`.
pub fn unc_prefix(raw: &str) -> bool {
    raw.starts_with("\\\\") || (cfg!(windows) && raw.starts_with("//"))
}

/// What an absolute path starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Root<'a> {
    /// `/`.
    Posix,
    /// A drive letter, lower case (`c` of `C:\`).
    Drive(u8),
    /// A network share: `\\server\share`.
    Share(Cow<'a, str>, Cow<'a, str>),
    /// A device that is neither a drive nor a share: `\\.\pipe`, `\\?\Volume{…}`.
    Device(Cow<'a, str>),
}

impl Root<'_> {
    /// The same root, as Windows compares them (drive letters, servers, shares and devices
    /// ignore ASCII case).
    pub fn same(&self, other: &Root) -> bool {
        match (self, other) {
            (Root::Posix, Root::Posix) => true,
            (Root::Drive(a), Root::Drive(b)) => a == b,
            (Root::Share(s, h), Root::Share(t, i)) => {
                s.eq_ignore_ascii_case(t) && h.eq_ignore_ascii_case(i)
            }
            (Root::Device(a), Root::Device(b)) => a.eq_ignore_ascii_case(b),
            _ => false,
        }
    }

    fn into_owned(self) -> Root<'static> {
        match self {
            Root::Posix => Root::Posix,
            Root::Drive(d) => Root::Drive(d),
            Root::Share(s, h) => Root::Share(s.into_owned().into(), h.into_owned().into()),
            Root::Device(d) => Root::Device(d.into_owned().into()),
        }
    }
}

/// A path split into its root and its components, with `.` and `..` folded: no empty or `.`
/// component, and `..` only at the start of a relative path (above a root it is dropped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lexical<'a> {
    pub root: Option<Root<'a>>,
    pub parts: Vec<Cow<'a, str>>,
}

fn is_sep(b: u8) -> bool {
    b == b'/' || b == b'\\'
}

/// `s` split at its first separator: (the first component, the rest after the separator).
fn first_component(s: &str) -> (&str, &str) {
    match s.find(['/', '\\']) {
        Some(i) => (&s[..i], &s[i + 1..]),
        None => (s, ""),
    }
}

/// The root and the rest of a path that starts with two separators ([`unc_prefix`]).
fn network_root(after: &str) -> (Root<'_>, &str) {
    let b = after.as_bytes();
    if b.len() >= 2 && (b[0] == b'?' || b[0] == b'.') && is_sep(b[1]) {
        let device = &after[2..];
        if is_drive(device) {
            return (
                Root::Drive(device.as_bytes()[0].to_ascii_lowercase()),
                &device[2..],
            );
        }
        let (name, rest) = first_component(device);
        if !name.eq_ignore_ascii_case("UNC") {
            return (Root::Device(name.into()), rest);
        }
        return share_root(rest);
    }
    share_root(after)
}

fn share_root(s: &str) -> (Root<'_>, &str) {
    let (server, rest) = first_component(s);
    let (share, rest) = first_component(rest);
    (Root::Share(server.into(), share.into()), rest)
}

/// One component against another, ignoring case (Unicode lower case) when `ci`.
fn same_name(a: &str, b: &str, ci: bool) -> bool {
    if ci {
        a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
    } else {
        a == b
    }
}

/// Parses `raw` lexically (see the module's forms).
pub fn parse(raw: &str) -> Lexical<'_> {
    let (root, rest) = if unc_prefix(raw) {
        let (root, rest) = network_root(&raw[2..]);
        (Some(root), rest)
    } else if is_drive(raw) {
        (
            Some(Root::Drive(raw.as_bytes()[0].to_ascii_lowercase())),
            &raw[2..],
        )
    } else if raw.as_bytes().first().is_some_and(|&b| is_sep(b)) {
        (Some(Root::Posix), raw)
    } else {
        (None, raw)
    };
    let mut out = Lexical {
        root,
        parts: Vec::new(),
    };
    for part in rest.split(['/', '\\']) {
        out.push(part);
    }
    out
}

impl<'a> Lexical<'a> {
    /// Adds one component, folding `.` and `..`.
    fn push(&mut self, part: &'a str) {
        match part {
            "" | "." => {}
            ".." => {
                if self.parts.last().is_some_and(|p| p != "..") {
                    self.parts.pop();
                } else if self.root.is_none() {
                    self.parts.push(Cow::Borrowed(".."));
                }
            }
            p => self.parts.push(Cow::Borrowed(p)),
        }
    }

    /// `rel` read from here: `rel` itself when it has a root, else these components followed
    /// by its own (its leading `..` climbing).
    pub fn join(mut self, rel: Lexical<'a>) -> Lexical<'a> {
        if rel.root.is_some() {
            return rel;
        }
        for p in rel.parts {
            if p == ".." {
                if self.parts.last().is_some_and(|l| l != "..") {
                    self.parts.pop();
                } else if self.root.is_none() {
                    self.parts.push(p);
                }
            } else {
                self.parts.push(p);
            }
        }
        self
    }

    /// Its components below `root` (none: `root` itself), or `None` when it is not at or below
    /// `root`. Roots compare as [`Root::same`]; components exactly, or ignoring case when `ci`.
    pub fn below(&self, root: &Lexical, ci: bool) -> Option<&[Cow<'a, str>]> {
        let roots_match = match (&root.root, &self.root) {
            (Some(a), Some(b)) => a.same(b),
            _ => false,
        };
        if !roots_match || self.parts.len() < root.parts.len() {
            return None;
        }
        root.parts
            .iter()
            .zip(&self.parts)
            .all(|(a, b)| same_name(a, b, ci))
            .then(|| &self.parts[root.parts.len()..])
    }

    /// The same path owning its text.
    pub fn into_owned(self) -> Lexical<'static> {
        Lexical {
            root: self.root.map(Root::into_owned),
            parts: self
                .parts
                .into_iter()
                .map(|p| Cow::Owned(p.into_owned()))
                .collect(),
        }
    }

    /// POSIX style: `/a/b`, `c:/a/b`, `//server/share/a`, `//./pipe/a`, `a/b`; `.` for an empty
    /// relative path.
    pub fn render(&self) -> String {
        let body: usize = self.parts.iter().map(|p| p.len() + 1).sum();
        let mut out = String::with_capacity(body + 8);
        match &self.root {
            None => {}
            Some(Root::Posix) => out.push('/'),
            Some(Root::Drive(d)) => {
                out.push(*d as char);
                out.push_str(":/");
            }
            Some(Root::Share(server, share)) => {
                out.push_str("//");
                out.push_str(server);
                if !share.is_empty() {
                    out.push('/');
                    out.push_str(share);
                }
            }
            Some(Root::Device(name)) => {
                out.push_str("//./");
                out.push_str(name);
            }
        }
        for p in &self.parts {
            if !(out.is_empty() || out.ends_with('/')) {
                out.push('/');
            }
            out.push_str(p);
        }
        if out.is_empty() {
            out.push('.');
        }
        out
    }
}

/// Normalize: forward slashes, no empty, `.` or resolvable `..` components, drive letter
/// lowercased. Relative paths stay relative (leading `..` kept).
pub fn normalize(p: &str) -> String {
    parse(p).render()
}

/// `base` joined with `rel` (or `rel` alone when it is absolute), normalized.
pub fn join(base: &str, rel: &str) -> String {
    if base.is_empty() {
        return normalize(rel);
    }
    parse(base).join(parse(rel)).render()
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
    fn device_and_share_forms() {
        assert_eq!(normalize(r"\\.\C:\repo\x"), "c:/repo/x");
        assert_eq!(normalize(r"\\?\UNC\srv\share\x"), "//srv/share/x");
        assert_eq!(normalize(r"\\?\unc\srv\share\x"), "//srv/share/x");
        // A device that is no drive is a root of its own, never a path below the cwd.
        assert_eq!(normalize(r"\\.\pipe\x"), "//./pipe/x");
        assert_eq!(parse(r"\\.\pipe\x").root, Some(Root::Device("pipe".into())));
        // `..` stops at the share, as it stops at a drive.
        assert_eq!(normalize(r"\\srv\share\..\..\x"), "//srv/share/x");
        assert_eq!(normalize(r"\\srv"), "//srv");
        if cfg!(windows) {
            assert_eq!(normalize("//?/C:/repo"), "c:/repo");
            assert_eq!(normalize("//srv/share/x"), "//srv/share/x");
        } else {
            assert_eq!(normalize("//?/C:/repo"), "/?/C:/repo");
        }
    }

    #[test]
    fn below_compares_roots_and_components() {
        let at = |root: &str, path: &str, ci: bool| {
            parse(path)
                .below(&parse(root), ci)
                .map(|rest| rest.join("/"))
        };
        assert_eq!(at("/r", "/r/a/b", false).as_deref(), Some("a/b"));
        assert_eq!(at("/r", "/r", false).as_deref(), Some(""));
        assert_eq!(at("/r", "/rr/a", false), None);
        assert_eq!(
            at("/r", "r/a", false),
            None,
            "a relative path is below no root"
        );
        assert_eq!(at(r"C:\R", r"c:\R\a", false).as_deref(), Some("a"));
        assert_eq!(at(r"C:\R", r"c:\r\a", false), None);
        assert_eq!(at(r"C:\R", r"c:\r\a", true).as_deref(), Some("a"));
        assert_eq!(
            at(r"\\SRV\Share", r"\\srv\share\a", false).as_deref(),
            Some("a")
        );
        assert_eq!(at(r"\\srv\share", r"\\srv\other\a", true), None);
        assert_eq!(at("c:/x", r"\\.\c:\x\a", false).as_deref(), Some("a"));
    }

    #[test]
    fn joining() {
        assert_eq!(join("/repo/web", "../dist"), "/repo/dist");
        assert_eq!(join("/repo", "/tmp/x"), "/tmp/x");
        assert_eq!(join(r"C:\repo", r"web\..\dist"), "c:/repo/dist");
        assert_eq!(join("/repo", "."), "/repo");
        assert_eq!(
            join("a", "../../b"),
            "../b",
            "a relative base keeps what it cannot climb"
        );
        assert_eq!(join("/r/web", "../dist"), "/r/dist");
        assert_eq!(join(r"C:\r\web", r"..\dist"), "c:/r/dist");
        assert_eq!(join("", "x/./y"), "x/y");
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
