//! Any path a tool payload can carry → a repo-relative POSIX path, or "outside the repo".
//!
//! Payload paths may be absolute, relative to the session's `cwd`, Windows `C:\…` or `C:/…`,
//! `\\?\C:\…`, rooted without a drive (`\Users\…`: on the cwd's drive for the file tools, see
//! [`lexical::Rooted`]), hold `.`/`..`, trailing slashes, or go through symlinks. The work is
//! lexical first ([`lexical`]: it must be cheap and must work for files that do not exist yet);
//! this module is the filesystem-aware layer above it: where the file or its parent exists,
//! symlinks are resolved too so a link into the repo is seen for what it is.

pub mod lexical; // the one lexical path normalizer: parse, join, place; no filesystem access

use lexical::{Lexical, Root, Rooted, parse};
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

fn relative(root: &Lexical, path: &Lexical, ci: bool) -> RepoPath {
    match path.below(root, ci) {
        None => RepoPath::Outside,
        Some([]) => RepoPath::Root,
        Some(rest) => RepoPath::Inside(rest.join("/")),
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
    root: Lexical<'static>,
    real_root: Option<Lexical<'static>>,
    case_insensitive: bool,
}

impl RepoPaths {
    pub fn new(root: &Path, case_insensitive: bool) -> RepoPaths {
        let text = root.to_string_lossy();
        let lexical_root = parse(&text).into_owned();
        let real_root = std::fs::canonicalize(root)
            .ok()
            .map(|p| parse(&p.to_string_lossy()).into_owned())
            .filter(|r| *r != lexical_root);
        RepoPaths {
            root: lexical_root,
            real_root,
            case_insensitive,
        }
    }

    pub fn case_insensitive(&self) -> bool {
        self.case_insensitive
    }

    /// Maps a payload path of a file tool (relative ones against the session's `cwd`) into the
    /// repo; a path rooted without a drive is on the cwd's drive ([`Rooted::CurrentDrive`]).
    pub fn locate(&self, cwd: &str, raw: &str) -> RepoPath {
        self.locate_as(cwd, raw, Rooted::CurrentDrive)
    }

    /// [`RepoPaths::locate`] for a tool that reads rooted paths `how` (Git Bash: [`Rooted::Msys`]).
    /// The cwd is read as the file tools read it: no cwd is the repo root, and one rooted without
    /// a drive (in a repo on a drive) is on the root's drive.
    pub fn locate_as(&self, cwd: &str, raw: &str, how: Rooted) -> RepoPath {
        let raw = raw.trim();
        if raw.is_empty() {
            return RepoPath::Outside;
        }
        let cwd_l = parse(cwd);
        let windows_root = self.root.root.as_ref().filter(|r| **r != Root::Posix);
        let base = match &cwd_l.root {
            Some(Root::Posix) if windows_root.is_some() => {
                self.root.clone().read(cwd, Rooted::CurrentDrive, None)
            }
            None if cwd.is_empty() => self.root.clone(),
            // A relative cwd is below no root, as before: the path lands nowhere in the repo.
            Some(_) | None => cwd_l,
        };
        let abs = base.read(raw, how, windows_root);
        let ci = self.case_insensitive;
        let direct = relative(&self.root, &abs, ci);
        // Symlinks only exist on the real filesystem: resolve when this platform can see the path.
        // On Windows a path still `/`-rooted here is below Git Bash's MSYS root, which is not
        // looked up: only drive and UNC paths resolve.
        let resolvable = match abs.root {
            Some(Root::Posix) => cfg!(unix),
            Some(_) => cfg!(windows),
            None => false,
        };
        if resolvable {
            let display = abs.render();
            if let Some(real) = resolve_existing(Path::new(&display)) {
                let real_text = real.to_string_lossy();
                let real_l = parse(&real_text);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rp(root: &str, ci: bool) -> RepoPaths {
        RepoPaths {
            root: parse(root).into_owned(),
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
        // Whatever the tool, a leading `/` is the root here: no drive to read it against.
        for how in [Rooted::CurrentDrive, Rooted::Msys] {
            assert_eq!(
                r.locate_as(cwd, "/nonexistent-repo/proj/a", how),
                inside("a")
            );
            assert_eq!(
                r.locate_as(cwd, "/c/nonexistent-repo/proj/a", how),
                RepoPath::Outside
            );
        }
    }

    #[test]
    fn rooted_paths_without_a_drive_are_on_the_cwd_s_drive() {
        let r = rp(r"C:\Users\me\proj", true);
        let cwd = r"C:\Users\me\proj";
        for raw in [
            r"\Users\me\proj\src\api\x.ts",
            "/Users/me/proj/src/api/x.ts",
            r"\users\ME\proj\src\api\x.ts",
            r"C:src\api\x.ts",
        ] {
            assert_eq!(r.locate(cwd, raw), inside("src/api/x.ts"), "{raw}");
        }
        assert_eq!(
            r.locate(r"C:\Users\me\proj\web", r"\Users\me\proj\src\a.ts"),
            inside("src/a.ts")
        );
        assert_eq!(
            r.locate("", r"\Users\me\proj\a.ts"),
            inside("a.ts"),
            "no cwd: the root's drive"
        );
        assert_eq!(
            r.locate("/Users/me/proj/src", "x.ts"),
            inside("src/x.ts"),
            "a cwd without a drive is on the root's"
        );
        // From another drive the same spelling is on that drive; another tree is another tree.
        assert_eq!(
            r.locate(r"D:\work", r"\Users\me\proj\src\api\x.ts"),
            RepoPath::Outside
        );
        assert_eq!(
            r.locate(cwd, r"\Users\me\other\src\api\x.ts"),
            RepoPath::Outside
        );
        // Git Bash: `/c/…` is the drive, any other `/…` is below the MSYS root.
        assert_eq!(
            r.locate_as(cwd, "/c/Users/me/proj/src/api/x.ts", Rooted::Msys),
            inside("src/api/x.ts")
        );
        for raw in ["/Users/me/proj/src/api/x.ts", "/tmp/x", "/usr/bin/git"] {
            assert_eq!(
                r.locate_as(cwd, raw, Rooted::Msys),
                RepoPath::Outside,
                "{raw}"
            );
        }
        let share = rp(r"\\srv\share\proj", true);
        assert_eq!(share.locate(r"\\srv\share\proj", r"\proj\a"), inside("a"));
    }

    #[test]
    fn odd_payload_paths_never_panic() {
        let r = rp(r"C:\Users\me\proj", true);
        let p = rp("/nonexistent-repo/proj", false);
        for raw in [
            "\\",
            "\\\\",
            "C:",
            "c:",
            "\\\\?\\",
            "\\\\.\\",
            "\\\\?\\UNC\\",
            "/",
            "//",
            ":",
            "\\\\?\\C:",
        ] {
            for cwd in ["", "\\", "C:", "/", "rel"] {
                for how in [Rooted::CurrentDrive, Rooted::Msys] {
                    let _ = r.locate_as(cwd, raw, how);
                    let _ = p.locate_as(cwd, raw, how);
                }
            }
        }
        assert_eq!(r.locate(r"C:\Users\me\proj", "C:"), RepoPath::Root);
        assert_eq!(r.locate(r"C:\Users\me\proj", "\\"), RepoPath::Outside);
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
}
