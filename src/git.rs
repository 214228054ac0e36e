//! git, run as a program: the one way the suite starts git ([`command`]), and `git status
//! --porcelain=v1 -z` of a tree, parsed in one place.

use std::path::Path;
use std::process::{Command, Stdio};

/// git as the suite runs it, in the tree at `root` (`-C`, so a missing folder is git's error
/// naming it): stdin closed, and never a prompt (a tool
/// runs inside a session, with no terminal to answer one): no credential or passphrase
/// question over HTTP (`GIT_TERMINAL_PROMPT=0`) or ssh (`BatchMode`, unless the user set
/// `GIT_SSH_COMMAND` themselves).
pub fn command(root: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(root)
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0");
    if std::env::var_os("GIT_SSH_COMMAND").is_none() {
        cmd.env("GIT_SSH_COMMAND", "ssh -o BatchMode=yes");
    }
    cmd
}

/// One entry of the porcelain status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The two status letters (`XY`): ` M`, `??`, `R `, …
    pub status: String,
    /// The path now (repo-relative, `/`).
    pub path: String,
    /// The path before, for a rename or copy (`R`/`C`).
    pub from: Option<String>,
}

impl Change {
    /// The path, then the original path of a rename or copy: both changed.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.path.as_str()).chain(self.from.as_deref())
    }
}

/// Why the status could not be had.
#[derive(Debug)]
pub enum StatusError {
    /// git did not start.
    Spawn(std::io::Error),
    /// git ran and failed; its stderr.
    Failed(String),
}

impl std::fmt::Display for StatusError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StatusError::Spawn(e) => write!(f, "cannot run git: {e}"),
            StatusError::Failed(stderr) => write!(f, "git status failed: {}", stderr.trim()),
        }
    }
}

impl std::error::Error for StatusError {}

/// Every changed, staged or untracked file of the tree at `root` (untracked folders listed file
/// by file).
pub fn status(root: &Path) -> Result<Vec<Change>, StatusError> {
    let out = command(root)
        .args(["status", "--porcelain=v1", "-z", "--untracked-files=all"])
        .output()
        .map_err(StatusError::Spawn)?;
    if !out.status.success() {
        return Err(StatusError::Failed(
            String::from_utf8_lossy(&out.stderr).to_string(),
        ));
    }
    Ok(parse_porcelain(&out.stdout))
}

/// Parses `git status --porcelain=v1 -z`: `XY path\0`, and for a rename or copy the original
/// path as the next field. Entries too short to hold a path are skipped.
pub fn parse_porcelain(out: &[u8]) -> Vec<Change> {
    let mut changes = Vec::new();
    let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        let text = String::from_utf8_lossy(entry);
        if text.len() < 4 || !text.is_char_boundary(2) || !text.is_char_boundary(3) {
            continue;
        }
        let status = text[..2].to_string();
        let from = if status.starts_with(['R', 'C']) {
            fields
                .next()
                .map(|f| String::from_utf8_lossy(f).to_string())
        } else {
            None
        };
        changes.push(Change {
            status,
            path: text[3..].to_string(),
            from,
        });
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_keeps_both_paths() {
        let out = b" M src/a.ts\0R  src/new name.ts\0src/old.ts\0?? notes/x y.md\0C  b.ts\0a.ts\0";
        let changes = parse_porcelain(out);
        assert_eq!(
            changes,
            vec![
                Change {
                    status: " M".into(),
                    path: "src/a.ts".into(),
                    from: None
                },
                Change {
                    status: "R ".into(),
                    path: "src/new name.ts".into(),
                    from: Some("src/old.ts".into())
                },
                Change {
                    status: "??".into(),
                    path: "notes/x y.md".into(),
                    from: None
                },
                Change {
                    status: "C ".into(),
                    path: "b.ts".into(),
                    from: Some("a.ts".into())
                },
            ]
        );
        assert_eq!(
            changes[1].paths().collect::<Vec<_>>(),
            ["src/new name.ts", "src/old.ts"]
        );
    }

    #[test]
    fn git_is_started_in_the_tree_and_never_asks() {
        let cmd = command(Path::new("/some/tree"));
        let args: Vec<_> = cmd.get_args().collect();
        assert_eq!(args, ["-C", "/some/tree"]);
        let env: Vec<_> = cmd.get_envs().collect();
        assert!(
            env.contains(&("GIT_TERMINAL_PROMPT".as_ref(), Some("0".as_ref()))),
            "{env:?}"
        );
    }

    #[test]
    fn short_and_empty_entries_are_skipped() {
        assert!(parse_porcelain(b"").is_empty());
        assert_eq!(parse_porcelain(b"M\0 M a\0").len(), 1);
    }

    #[test]
    fn status_of_a_real_tree_lists_a_rename() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(dir.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(["-c", "commit.gpgsign=false"])
                .args(args)
                .stdin(Stdio::null())
                .output()
                .map(|o| o.status.success());
            ok.unwrap_or(false)
        };
        if !git(&["init", "-q"]) {
            println!("skipped: git is not installed");
            return;
        }
        std::fs::write(dir.path().join("old.ts"), "x\n").unwrap();
        assert!(git(&["add", "old.ts"]) && git(&["commit", "-q", "-m", "one"]));
        assert!(git(&["mv", "old.ts", "new.ts"]));
        let changes = status(dir.path()).unwrap();
        assert_eq!(changes.len(), 1, "{changes:?}");
        assert_eq!(changes[0].paths().collect::<Vec<_>>(), ["new.ts", "old.ts"]);
        assert!(status(&dir.path().join("missing")).is_err());
    }
}
