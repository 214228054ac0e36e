//! Temporary git repositories for tests.
//!
//! ```ignore
//! let repo = GitRepo::with_files(&[("src/a.txt", "alpha\n"), ("README.md", "hi\n")]);
//! repo.write_claude_settings(&json!({"hooks": {}}));
//! assert!(repo.path().join("src/a.txt").exists());
//! ```

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

/// A real git repository in a temporary directory, removed on drop. Its path is
/// canonical (symlinks resolved), so it compares equal to the `cwd` a tool reports.
pub struct GitRepo {
    dir: TempDir,
    path: PathBuf,
}

impl GitRepo {
    /// A repository with one commit holding a `README.md`.
    #[track_caller]
    pub fn new() -> GitRepo {
        GitRepo::with_files(&[("README.md", "test repository\n")])
    }

    /// A repository with one commit holding these files (relative paths,
    /// parent directories created).
    #[track_caller]
    pub fn with_files(files: &[(&str, &str)]) -> GitRepo {
        let dir = tempfile::Builder::new()
            .prefix("sl-repo-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temporary directory: {e}"));
        let path = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("cannot resolve {}: {e}", dir.path().display()));
        let repo = GitRepo { dir, path };
        repo.git(&["init", "--quiet", "--initial-branch=main"]);
        for (rel, contents) in files {
            repo.write(rel, contents);
        }
        repo.commit_all("initial commit");
        repo
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The absolute path of `rel` inside the repository.
    pub fn join(&self, rel: &str) -> PathBuf {
        self.path.join(rel)
    }

    /// Writes a file, creating parent directories.
    #[track_caller]
    pub fn write(&self, rel: &str, contents: &str) -> PathBuf {
        let path = self.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
        }
        fs::write(&path, contents)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
        path
    }

    /// A file's contents, or `None` if it cannot be read.
    pub fn read(&self, rel: &str) -> Option<String> {
        fs::read_to_string(self.join(rel)).ok()
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.join(rel).exists()
    }

    /// Writes `<repo>/.claude/settings.json` (project settings: hooks and the
    /// like, read by the CLI started in this repository).
    #[track_caller]
    pub fn write_claude_settings(&self, settings: &Value) -> PathBuf {
        let text = serde_json::to_string_pretty(settings)
            .unwrap_or_else(|e| panic!("cannot serialise settings: {e}"));
        self.write(".claude/settings.json", &text)
    }

    /// Stages everything and commits (allowing an empty commit).
    #[track_caller]
    pub fn commit_all(&self, message: &str) {
        self.git(&["add", "--all"]);
        self.git(&["commit", "--quiet", "--allow-empty", "-m", message]);
    }

    /// Runs git in the repository with a fixed identity and no user config;
    /// panics with git's stderr when it fails.
    #[track_caller]
    pub fn git(&self, args: &[&str]) -> Output {
        let output = self.git_unchecked(args);
        if !output.status.success() {
            panic!(
                "git {} failed in {}: {}",
                args.join(" "),
                self.path.display(),
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        output
    }

    /// Like [`GitRepo::git`], but returns the output whatever the exit status.
    #[track_caller]
    pub fn git_unchecked(&self, args: &[&str]) -> Output {
        git_command(&self.path)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run git: {e}"))
    }

    /// The temporary directory (kept alive as long as the repository).
    pub fn temp_dir(&self) -> &TempDir {
        &self.dir
    }
}

/// `git -C dir` isolated from the user's and system's configuration.
fn git_command(dir: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid");
    cmd
}
