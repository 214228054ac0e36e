//! Lexical paths: parse, join and normalize without touching the filesystem. The crate's one
//! lexical path normalizer: `paths` (payload paths → the repo), `rules` (command arguments) and
//! `hook` (write targets, scripts, the read-only scope) all read paths through it.
//!
//! Forms: POSIX paths; Windows drives (`C:\x`, `C:/x`); network shares (`\\server\share\x`,
//! with forward slashes on Windows only: see [`unc_prefix`]); device paths (`\\?\C:\x`,
//! `\\.\C:\x`, `\\?\UNC\server\share\x`, and any other device such as `\\.\pipe\x` as a
//! root of its own). Both separators split components everywhere. Drive letters and share names
//! compare case-insensitively.
//!
//! A path read from a folder ([`Lexical::read`], [`join_as`]) is read as the tool naming it reads
//! it. In a POSIX context (the folder and the session's place have no drive) a leading `/` is the
//! root for every tool. In a Windows context a path rooted without a drive (`\x`, `/x`) depends
//! on the tool ([`Rooted`]): the current drive for the file tools and PowerShell, the MSYS root
//! for Git Bash except its drive mounts (`/c/x`, and WSL's `/mnt/c/x`); and `C:x` (a drive with a
//! relative path) is below the folder when the folder is on `C:`.

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

/// How the tool naming a path reads one rooted without a drive (`\x`, `/x`) in a Windows context:
/// when the folder it is read from, or the session's place, is on a drive or a share. In a POSIX
/// context a leading `/` is the root whatever the tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rooted {
    /// On the drive (or share) of the folder it is read from: `\x` from `C:\r` is `C:\x`. The
    /// file tools (the client resolves Edit, Write, Read, NotebookEdit and MCP paths with Node's
    /// `path.resolve` against its cwd), PowerShell and cmd.
    CurrentDrive,
    /// Git Bash (MSYS): `/c/x` is `C:\x` (and WSL's `/mnt/c/x`, for a `bash` that is WSL's); any
    /// other `/x` lies below the MSYS root (the Git for Windows folder) and keeps its POSIX root,
    /// below which no drive's repo lies. A leading `\` (only quoted: unquoted it is an escape) is
    /// a Win32 path to MSYS, on the current drive.
    Msys,
}

/// `raw`'s relative part when it is a drive with a relative path (`C:x`, `C:`), with its letter.
fn drive_relative(raw: &str) -> Option<(u8, &str)> {
    let b = raw.as_bytes();
    (is_drive(raw) && b.get(2).is_none_or(|&c| !is_sep(c)))
        .then(|| (b[0].to_ascii_lowercase(), &raw[2..]))
}

/// A single drive letter as Git Bash mounts it (`c` of `/c/x`).
fn mount_letter(part: &str) -> Option<u8> {
    let b = part.as_bytes();
    (b.len() == 1 && b[0].is_ascii_alphabetic()).then(|| b[0].to_ascii_lowercase())
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

    /// `raw` read from this folder by a tool that reads rooted paths `how` (see [`Rooted`]).
    /// `home` is the drive or share the session works on, for a folder that has none (Git Bash
    /// after `cd /tmp`); `None` with a folder that has none makes a POSIX context. Lexical: the
    /// MSYS root and the current folder of another drive are not looked up.
    pub fn read(self, raw: &'a str, how: Rooted, home: Option<&Root<'a>>) -> Lexical<'a> {
        let drive = match &self.root {
            Some(r) if *r != Root::Posix => r.clone(),
            _ => match home {
                Some(h) if *h != Root::Posix => h.clone(),
                _ => return self.join(parse(raw)),
            },
        };
        if let Some((letter, rest)) = drive_relative(raw)
            && self.root == Some(Root::Drive(letter))
        {
            return self.join(parse(rest));
        }
        let rel = parse(raw);
        if rel.root != Some(Root::Posix) {
            return self.join(rel);
        }
        match how {
            Rooted::Msys if !raw.starts_with('\\') => msys_mount(rel),
            _ => Lexical {
                root: Some(drive),
                parts: rel.parts,
            },
        }
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

/// `base` joined with `rel` (or `rel` alone when it is absolute), normalized; a path rooted
/// without a drive is on `base`'s drive ([`Rooted::CurrentDrive`]).
pub fn join(base: &str, rel: &str) -> String {
    join_as(base, rel, Rooted::CurrentDrive, None)
}

/// `rel` read from `base` as [`Lexical::read`] reads it, normalized.
pub fn join_as(base: &str, rel: &str, how: Rooted, home: Option<&Root>) -> String {
    parse(base).read(rel, how, home).render()
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

/// The variable named by a whole path component: `$X`, `${X}`, `$env:X`, `%X%` (uppercased,
/// as Windows compares names).
fn var_name(c: &str) -> Option<String> {
    var_written(c).map(str::to_ascii_uppercase)
}

/// The variable a path's first component names, as written: `$X/…`, `${X}/…`, `$env:X\…`,
/// `%X%\…`; `None` when that component is anything else.
pub fn leading_var(text: &str) -> Option<&str> {
    let end = text.find(['/', '\\']).unwrap_or(text.len());
    var_written(&text[..end])
}

fn var_written(c: &str) -> Option<&str> {
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
    ok.then_some(name)
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

/// A POSIX-rooted path as Git Bash reads it: `/c/x` or `/mnt/c/x` → `c:/x`; anything else keeps
/// its (MSYS) root.
fn msys_mount(rel: Lexical<'_>) -> Lexical<'_> {
    let (letter, skip) = match rel.parts.as_slice() {
        [m, d, ..] if m.eq_ignore_ascii_case("mnt") && mount_letter(d).is_some() => {
            (mount_letter(d), 2)
        }
        [d, ..] => (mount_letter(d), 1),
        [] => (None, 0),
    };
    match letter {
        Some(d) => Lexical {
            root: Some(Root::Drive(d)),
            parts: rel.parts.into_iter().skip(skip).collect(),
        },
        None => rel,
    }
}

/// True when `path` is `dir` or below it, by whole components after normalizing both (POSIX or
/// Windows forms; case ignored with `ci`). The one containment check of paths as text; an empty
/// or relative side is never within.
pub fn within(path: &str, dir: &str, ci: bool) -> bool {
    parse(path).below(&parse(dir), ci).is_some()
}

/// Where the absolute, normalized `path` lies relative to the normalized `root`. Both are read
/// already (a Git Bash `/c/x` is `c:/x` by now: [`join_as`]); this only compares.
pub fn place(root: &str, path: &str) -> Place {
    let (root, path) = if is_drive(root) {
        (root.to_ascii_lowercase(), path.to_ascii_lowercase())
    } else {
        (root.to_string(), path.to_string())
    };
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
        assert_eq!(place("c:/repo", "d:/repo/dist"), Place::Outside);
        // `place` only compares: a Git Bash spelling is read first (`join_as`).
        assert_eq!(place("c:/repo", "/c/repo/dist"), Place::Outside);
    }

    fn read(base: &str, raw: &str, how: Rooted) -> String {
        join_as(base, raw, how, None)
    }

    #[test]
    fn rooted_paths_take_the_current_drive_for_file_tools_and_powershell() {
        let cd = Rooted::CurrentDrive;
        assert_eq!(
            read(r"C:\Users\me\proj", r"\Users\me\proj\src\x.ts", cd),
            "c:/Users/me/proj/src/x.ts"
        );
        assert_eq!(
            read(r"C:\Users\me\proj", "/Users/me/proj/src/x.ts", cd),
            "c:/Users/me/proj/src/x.ts"
        );
        assert_eq!(
            read(r"D:\work", r"\x", cd),
            "d:/x",
            "the folder's drive, not C:"
        );
        assert_eq!(
            read(r"\\srv\share\proj", r"\x\y", cd),
            "//srv/share/x/y",
            "a share is the drive"
        );
        assert_eq!(
            read(r"C:\r", r"\..\..\x", cd),
            "c:/x",
            "`..` stops at the drive"
        );
        assert_eq!(read(r"C:\r", "/", cd), "c:/");
        assert_eq!(
            join(r"C:\r", r"\x"),
            "c:/x",
            "join reads as the file tools do"
        );
        // Paths that carry their own root are not touched.
        assert_eq!(read(r"C:\r", r"D:\x", cd), "d:/x");
        assert_eq!(read(r"C:\r", r"\\srv\share\x", cd), "//srv/share/x");
        assert_eq!(read(r"C:\r", r"\\?\D:\x", cd), "d:/x");
        assert_eq!(read(r"C:\r", r"src\x", cd), "c:/r/src/x");
    }

    #[test]
    fn a_drive_with_a_relative_path_is_below_the_folder_on_that_drive() {
        let cd = Rooted::CurrentDrive;
        assert_eq!(
            read(r"C:\Users\me\proj", r"C:src\x.ts", cd),
            "c:/Users/me/proj/src/x.ts"
        );
        assert_eq!(read(r"C:\Users\me\proj", r"c:..\x", cd), "c:/Users/me/x");
        assert_eq!(read(r"C:\Users\me\proj", "C:", cd), "c:/Users/me/proj");
        // Another drive's current folder is not known: that drive's root, as before.
        assert_eq!(read(r"C:\Users\me\proj", r"D:src\x.ts", cd), "d:/src/x.ts");
        assert_eq!(read("/home/me", "C:src", cd), "c:/src");
    }

    #[test]
    fn git_bash_reads_its_drive_mounts_and_keeps_the_msys_root() {
        let msys = Rooted::Msys;
        assert_eq!(
            read(r"C:\Users\me\proj", "/c/Users/me/proj/src/x.ts", msys),
            "c:/Users/me/proj/src/x.ts"
        );
        assert_eq!(read(r"C:\Users\me\proj", "/D/data", msys), "d:/data");
        assert_eq!(read(r"C:\Users\me\proj", "/c", msys), "c:/");
        assert_eq!(
            read(r"C:\Users\me\proj", "/mnt/c/Users/x", msys),
            "c:/Users/x"
        );
        assert_eq!(read(r"\\srv\share\proj", "/c/x", msys), "c:/x");
        // Anything else is below the MSYS root: a POSIX root, below no drive's repo.
        for raw in [
            "/Users/me/proj/src/x.ts",
            "/tmp/x",
            "/usr/bin/git",
            "/cc/x",
            "/mnt/cc",
            "/",
            "/mnt",
        ] {
            assert_eq!(
                read(r"C:\Users\me\proj", raw, msys),
                normalize(raw),
                "{raw}"
            );
            assert_eq!(
                parse(&read(r"C:\Users\me\proj", raw, msys)).root,
                Some(Root::Posix),
                "{raw}"
            );
        }
        // A folder below the MSYS root (`cd /tmp`) still maps the mounts, from the session's drive.
        let home = Root::Drive(b'c');
        assert_eq!(join_as("/tmp", "/c/r/x", msys, Some(&home)), "c:/r/x");
        assert_eq!(join_as("/tmp", "x", msys, Some(&home)), "/tmp/x");
        assert_eq!(
            join_as("/tmp", r"\r\x", msys, Some(&home)),
            "c:/r/x",
            "a quoted `\\` is Win32"
        );
        assert_eq!(
            join_as("/tmp", r"\r\x", Rooted::CurrentDrive, Some(&home)),
            "c:/r/x"
        );
        // A quoted backslash path is a Win32 path to MSYS: the current drive.
        assert_eq!(
            read(r"C:\Users\me\proj", r"\Users\me\x", msys),
            "c:/Users/me/x"
        );
    }

    #[test]
    fn in_a_posix_context_a_leading_slash_is_the_root_for_every_tool() {
        for how in [Rooted::CurrentDrive, Rooted::Msys] {
            assert_eq!(read("/home/me/proj", "/c/x", how), "/c/x");
            assert_eq!(read("/home/me/proj", "/Users/me/x", how), "/Users/me/x");
            assert_eq!(read("/home/me/proj", "/mnt/c/x", how), "/mnt/c/x");
            assert_eq!(read("/home/me/proj", r"\x", how), "/x");
            assert_eq!(read("", "/x/./y", how), "/x/y");
            assert_eq!(read("", "x/../y", how), "y");
            assert_eq!(join_as("/tmp", "/c/x", how, Some(&Root::Posix)), "/c/x");
            if cfg!(not(windows)) {
                assert_eq!(read("/home/me/proj", "//home/me/x", how), "/home/me/x");
                assert_eq!(read("/home/me/proj", "///x", how), "/x");
            }
        }
    }

    #[test]
    fn odd_input_never_panics() {
        let odd = [
            "",
            "\\",
            "\\\\",
            "\\\\\\",
            "/",
            "//",
            "///",
            "C:",
            "c:",
            "C:\\",
            "C:/",
            ":",
            "::",
            "C::",
            "1:",
            "\\\\?",
            "\\\\?\\",
            "\\\\.\\",
            "\\\\?\\UNC",
            "\\\\?\\UNC\\",
            "\\\\?\\C:",
            "\\\\?\\C",
            "\\\\.\\C:x",
            "\\\\srv",
            "\\\\srv\\",
            "//?/",
            "/c",
            "/c/",
            "/mnt",
            "/mnt/",
            "/mnt/c",
            "..",
            "/..",
            "\\..\\..",
            "C:..",
            "é:\\x",
            "/é/x",
            "\\é",
            "\u{0}",
            " ",
        ];
        let bases = [
            "",
            "/",
            "/r",
            "C:\\r",
            "C:",
            "\\\\srv\\share",
            "\\\\.\\pipe",
            "rel",
            "\\",
        ];
        for base in bases {
            for raw in odd {
                for how in [Rooted::CurrentDrive, Rooted::Msys] {
                    for home in [None, Some(Root::Drive(b'c')), Some(Root::Posix)] {
                        let out = join_as(base, raw, how, home.as_ref());
                        let _ = place(&normalize(base), &out);
                        let _ = parse(&out).below(&parse(base), true);
                    }
                }
            }
        }
    }
}
