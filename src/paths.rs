//! Any path a tool payload can carry → a repo-relative POSIX path, or "outside the repo".
//!
//! Payload paths may be absolute, relative to the session's `cwd`, Windows `C:\…` or `C:/…`,
//! `\\?\C:\…`, hold `.`/`..`, trailing slashes, or go through symlinks. The work is lexical
//! first (it must be cheap and must work for files that do not exist yet); where the file or its
//! parent exists, symlinks are resolved too so a link into the repo is seen for what it is.

pub mod lexical; // pure lexical normalization: no filesystem access

use std::path::{Path, PathBuf};

/// Where a payload path lands relative to the repo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RepoPath {
    /// Inside the repo: the POSIX relative path (`src/api/x.ts`), never empty.
    Inside(String),
    /// The repo root itself.
    Root,
    /// Outside the repo.
    Outside,
}

/// Whether paths compare case-insensitively by default on this platform.
pub fn default_case_insensitive() -> bool {
    cfg!(any(windows, target_os = "macos"))
}

/// A path split into its root (`/`, `c:` for drive paths, `//server/share` for UNC) and its
/// components, with `.`/`..` folded lexically.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Lexical {
    root: Option<String>,
    parts: Vec<String>,
}

use lexical::is_drive;

/// Whether a leading `//` names a network share: always when written with backslashes
/// (`\\server\share`); with forward slashes only on Windows. POSIX leaves `//` to the
/// implementation and Linux and macOS read `//x` and `///x` as `/x`.
pub(crate) fn unc_prefix(raw: &str) -> bool {
    raw.starts_with("\\\\") || (cfg!(windows) && raw.starts_with("//"))
}

fn lexical(raw: &str) -> Lexical {
    let unc = unc_prefix(raw);
    let mut s = raw.replace('\\', "/");
    for prefix in ["//?/", "//./"] {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = match rest.strip_prefix("UNC/") {
                Some(unc) => format!("//{unc}"),
                None => rest.to_string(),
            };
        }
    }
    let (root, rest) = if is_drive(&s) {
        let drive = s[..2].to_ascii_lowercase();
        (Some(drive), s[2..].to_string())
    } else if let Some(unc) = s.strip_prefix("//").filter(|_| unc) {
        let mut it = unc.splitn(3, '/');
        let server = it.next().unwrap_or("");
        let share = it.next().unwrap_or("");
        (
            Some(format!("//{server}/{share}")),
            it.next().unwrap_or("").to_string(),
        )
    } else if s.starts_with('/') {
        (Some("/".to_string()), s.clone())
    } else {
        (None, s.clone())
    };
    let mut parts: Vec<String> = Vec::new();
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| p != "..") {
                    parts.pop();
                } else if root.is_none() {
                    parts.push("..".into());
                }
            }
            p => parts.push(p.to_string()),
        }
    }
    Lexical { root, parts }
}

fn join(base: &Lexical, rel: &Lexical) -> Lexical {
    if rel.root.is_some() {
        return rel.clone();
    }
    let mut out = base.clone();
    for p in &rel.parts {
        if p == ".." {
            out.parts.pop();
        } else {
            out.parts.push(p.clone());
        }
    }
    out
}

fn eq(a: &str, b: &str, ci: bool) -> bool {
    if ci {
        a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
    } else {
        a == b
    }
}

fn relative(root: &Lexical, path: &Lexical, ci: bool) -> RepoPath {
    let roots_match = match (&root.root, &path.root) {
        (Some(a), Some(b)) => eq(a, b, true),
        _ => false,
    };
    if !roots_match || path.parts.len() < root.parts.len() {
        return RepoPath::Outside;
    }
    for (a, b) in root.parts.iter().zip(&path.parts) {
        if !eq(a, b, ci) {
            return RepoPath::Outside;
        }
    }
    let rest = &path.parts[root.parts.len()..];
    if rest.is_empty() {
        RepoPath::Root
    } else {
        RepoPath::Inside(rest.join("/"))
    }
}

/// Resolves symlinks of the longest existing prefix of `path` (the file itself may not exist
/// yet), keeping the missing tail as written. `None` when nothing could be resolved.
fn resolve_existing(path: &Path) -> Option<PathBuf> {
    let mut tail: Vec<&std::ffi::OsStr> = Vec::new();
    let mut cur = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(cur) {
            let mut out = real;
            for t in tail.iter().rev() {
                out.push(t);
            }
            return Some(out);
        }
        tail.push(cur.file_name()?);
        cur = cur.parent()?;
    }
}

/// The repo root and how to compare paths against it; build once per call.
#[derive(Clone, Debug)]
pub struct RepoPaths {
    root: Lexical,
    real_root: Option<Lexical>,
    case_insensitive: bool,
}

impl RepoPaths {
    pub fn new(root: &Path, case_insensitive: bool) -> RepoPaths {
        let text = root.to_string_lossy();
        let real_root = std::fs::canonicalize(root)
            .ok()
            .map(|p| lexical(&p.to_string_lossy()))
            .filter(|r| *r != lexical(&text));
        RepoPaths {
            root: lexical(&text),
            real_root,
            case_insensitive,
        }
    }

    pub fn case_insensitive(&self) -> bool {
        self.case_insensitive
    }

    /// Maps a payload path (relative ones against the session's `cwd`) into the repo.
    pub fn locate(&self, cwd: &str, raw: &str) -> RepoPath {
        let raw = raw.trim();
        if raw.is_empty() {
            return RepoPath::Outside;
        }
        let cwd_l = if cwd.is_empty() {
            self.root.clone()
        } else {
            lexical(cwd)
        };
        let abs = join(&cwd_l, &lexical(raw));
        let ci = self.case_insensitive;
        let direct = relative(&self.root, &abs, ci);
        // Symlinks only exist on the real filesystem: resolve when this platform can see the path.
        // On Windows a `/`-rooted path is drive-relative: its resolved form (`C:\…`) would no
        // longer compare with a root written the same way, so only drive and UNC paths resolve.
        let resolvable = match abs.root.as_deref() {
            Some("/") => cfg!(unix),
            Some(_) => cfg!(windows),
            None => false,
        };
        if resolvable {
            let display = render(&abs);
            if let Some(real) = resolve_existing(Path::new(&display)) {
                let real_l = lexical(&real.to_string_lossy());
                for root in std::iter::once(&self.root).chain(self.real_root.as_ref()) {
                    let r = relative(root, &real_l, ci);
                    if r != RepoPath::Outside {
                        return r;
                    }
                }
                // A symlink inside the repo pointing outside: the write lands outside.
                if direct != RepoPath::Outside && real_l != abs {
                    return RepoPath::Outside;
                }
            }
        }
        if let (RepoPath::Outside, Some(real_root)) = (&direct, &self.real_root) {
            return relative(real_root, &abs, ci);
        }
        direct
    }
}

fn render(l: &Lexical) -> String {
    let body = l.parts.join("/");
    match l.root.as_deref() {
        Some("/") => format!("/{body}"),
        Some(r) => format!("{r}/{body}"),
        None => body,
    }
}

/// Joins `arg` onto `cwd` lexically and renders it POSIX style (for messages and rules).
pub fn join_lexical(cwd: &str, arg: &str) -> String {
    render(&join(&lexical(cwd), &lexical(arg)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(root: &str, ci: bool) -> RepoPaths {
        RepoPaths {
            root: lexical(root),
            real_root: None,
            case_insensitive: ci,
        }
    }

    fn inside(s: &str) -> RepoPath {
        RepoPath::Inside(s.into())
    }

    #[test]
    #[cfg(not(windows))]
    fn a_leading_double_or_triple_slash_is_the_posix_root() {
        let r = rp("/nonexistent-repo/proj", false);
        let cwd = "/nonexistent-repo/proj";
        for raw in [
            "//nonexistent-repo/proj/src/api/x.ts",
            "///nonexistent-repo/proj/src/api/x.ts",
            "//nonexistent-repo//proj/./src/api/x.ts",
        ] {
            assert_eq!(r.locate(cwd, raw), inside("src/api/x.ts"), "{raw}");
        }
        // Written with backslashes it is a network share, never this repo.
        assert_eq!(
            r.locate(cwd, r"\\nonexistent-repo\proj\src\api\x.ts"),
            RepoPath::Outside
        );
    }

    #[test]
    fn posix_forms() {
        let r = rp("/nonexistent-repo/proj", false);
        let cwd = "/nonexistent-repo/proj";
        assert_eq!(
            r.locate(cwd, "/nonexistent-repo/proj/src/a.ts"),
            inside("src/a.ts")
        );
        assert_eq!(r.locate(cwd, "src/a.ts"), inside("src/a.ts"));
        assert_eq!(r.locate(cwd, "./src//a.ts"), inside("src/a.ts"));
        assert_eq!(r.locate(cwd, "src/../lib/b.ts"), inside("lib/b.ts"));
        assert_eq!(r.locate(cwd, "src/dir/"), inside("src/dir"));
        assert_eq!(
            r.locate("/nonexistent-repo/proj/src", "../x.ts"),
            inside("x.ts")
        );
        assert_eq!(r.locate(cwd, "."), RepoPath::Root);
        assert_eq!(r.locate(cwd, "../other/x.ts"), RepoPath::Outside);
        assert_eq!(
            r.locate(cwd, "/nonexistent-repo/projector/x"),
            RepoPath::Outside
        );
        assert_eq!(r.locate(cwd, "/etc/passwd"), RepoPath::Outside);
        assert_eq!(r.locate(cwd, "/../../nonexistent-repo/proj/a"), inside("a"));
        assert_eq!(r.locate(cwd, ""), RepoPath::Outside);
    }

    #[test]
    fn windows_forms() {
        let r = rp(r"C:\Users\me\proj", true);
        let cwd = r"C:\Users\me\proj";
        assert_eq!(
            r.locate(cwd, r"C:\Users\me\proj\src\a.ts"),
            inside("src/a.ts")
        );
        assert_eq!(
            r.locate(cwd, "C:/Users/me/proj/src/a.ts"),
            inside("src/a.ts")
        );
        assert_eq!(
            r.locate(cwd, r"c:\users\ME\Proj\Src\a.ts"),
            inside("Src/a.ts")
        );
        assert_eq!(
            r.locate(cwd, r"\\?\C:\Users\me\proj\electron\store.ts"),
            inside("electron/store.ts")
        );
        assert_eq!(r.locate(cwd, r"src\api\x.ts"), inside("src/api/x.ts"));
        assert_eq!(
            r.locate(r"C:\Users\me\proj\web", r"..\dist\"),
            inside("dist")
        );
        assert_eq!(r.locate(cwd, r"D:\Users\me\proj\a.ts"), RepoPath::Outside);
        assert_eq!(r.locate(cwd, r"C:\Users\me\proj2\a.ts"), RepoPath::Outside);
        // A folder that exists nowhere: where `C:\Users` exists its real case is compared too
        // (wine's is `c:\users`).
        let cs = rp(r"C:\nonexistent-repo\me\proj", false);
        let cwd = r"C:\nonexistent-repo\me\proj";
        assert_eq!(
            cs.locate(cwd, r"C:\nonexistent-repo\me\Proj\a.ts"),
            RepoPath::Outside
        );
        assert_eq!(
            cs.locate(cwd, r"c:\nonexistent-repo\me\proj\a.ts"),
            inside("a.ts"),
            "drive letters never care"
        );
    }

    #[test]
    fn unc_forms() {
        let r = rp(r"\\server\share\proj", true);
        assert_eq!(
            r.locate(r"\\server\share\proj", r"\\SERVER\share\proj\a\b"),
            inside("a/b")
        );
        assert_eq!(
            r.locate(r"\\server\share\proj", r"\\other\share\proj\a"),
            RepoPath::Outside
        );
    }

    #[test]
    fn symlinks_are_followed_where_they_exist() {
        let top = tempfile::tempdir().unwrap();
        let repo = top.path().join("repo");
        let outside = top.path().join("elsewhere");
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(repo.join("src"), top.path().join("alias")).unwrap();
            std::os::unix::fs::symlink(&outside, repo.join("out")).unwrap();
        }
        if cfg!(not(unix)) {
            println!("skipped: symlinks need a privilege on Windows, and wine fakes them");
            return;
        }
        let r = RepoPaths::new(&repo, false);
        let cwd = repo.to_string_lossy().to_string();
        let via_alias = top.path().join("alias/new.ts");
        assert_eq!(
            r.locate(&cwd, &via_alias.to_string_lossy()),
            inside("src/new.ts")
        );
        assert_eq!(r.locate(&cwd, "out/x.ts"), RepoPath::Outside);
        assert_eq!(
            r.locate(&cwd, "src/not-yet/x.ts"),
            inside("src/not-yet/x.ts")
        );
    }

    #[test]
    fn join_lexical_renders_posix() {
        assert_eq!(join_lexical("/r/web", "../dist"), "/r/dist");
        assert_eq!(join_lexical(r"C:\r\web", r"..\dist"), "c:/r/dist");
    }
}
