//! Running the real Claude Code CLI headless against a [`FakeModel`].
//!
//! ```ignore
//! #[test]
//! fn some_test() {
//!     let claude = require_claude!(); // skips (or fails under CI) when missing
//!     let repo = GitRepo::new();
//!     let model = FakeModel::start(vec![Turn::text("hello")]);
//!     let run = claude.session(repo.path(), &model, "say hello").run();
//!     run.assert_success();
//!     assert_eq!(run.result_text(), Some("hello"));
//! }
//! ```
//!
//! **Where the CLI comes from**, first match wins:
//! 1. `SESSION_LOCK_CLAUDE_BIN` (if set, it must exist: no fallback);
//! 2. the cache entry of `scripts/install-claude-cli` for the pinned version
//!    ([`pinned_version`]): `${SESSION_LOCK_CACHE:-$HOME/.cache/session-lock}/claude-code-<version>/node_modules/.bin/claude`;
//! 3. `claude` on `PATH`.
//!
//! **When it is missing**, [`require_claude!`] fails the test if `CI` is set
//! (non-empty, not `false`/`0`), naming the install script; otherwise it prints
//! `skipped: <test>: Claude Code CLI not found; ...` to stderr and returns.
//!
//! **Each session** runs `claude -p <prompt> --output-format stream-json --verbose
//! --permission-mode bypassPermissions [extra args]` in the project directory,
//! in its own process group, with stdin `/dev/null`, and an environment that is
//! the test's minus anything a surrounding Claude Code session or CI would leak
//! (`CLAUDECODE`, `CLAUDE_*`, `ANTHROPIC_*`, `AI_AGENT`, `XDG_*`, `CI`), plus:
//! `HOME` (a fresh temporary one unless [`SessionBuilder::home`] shares one),
//! `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY=dummy`,
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`, `IS_SANDBOX=1` (bypass mode as
//! root) and `CLAUDE_CODE_MAX_RETRIES=0` (so each request takes exactly one
//! turn of the script; raise it with [`SessionBuilder::max_retries`]).
//! A run that outlives its timeout gets SIGTERM, then SIGKILL, on its whole
//! process group; so does a [`Session`] dropped while running.

mod finished;
mod session;

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use tempfile::TempDir;

use super::fake_model::FakeModel;

pub use finished::Finished;
#[allow(unused_imports)] // the API for test modules, whether or not one names it yet
pub use session::{Session, SessionBuilder, run_all};

/// How long a session may run before it is killed, unless set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The Claude Code version the tests are written against, from
/// `scripts/claude-cli-version` (the one place it is pinned).
pub fn pinned_version() -> &'static str {
    include_str!("../../../../scripts/claude-cli-version").trim()
}

/// Skips (or under CI fails) the calling test when the CLI is missing;
/// otherwise evaluates to a [`Claude`]. Use at the top of a `#[test]` fn.
macro_rules! require_claude {
    () => {{
        fn here() {}
        let name = ::std::any::type_name_of_val(&here);
        let name = name.strip_suffix("::here").unwrap_or(name);
        let name = name.split_once("::").map_or(name, |(_, rest)| rest);
        match $crate::support::claude::Claude::require(name) {
            Some(claude) => claude,
            None => return,
        }
    }};
}
pub(crate) use require_claude;

/// A located Claude Code CLI.
#[derive(Debug, Clone)]
pub struct Claude {
    bin: PathBuf,
}

impl Claude {
    /// Finds the CLI (see the module documentation), or says where it looked.
    pub fn locate() -> Result<Claude, String> {
        if let Some(bin) = std::env::var_os("SESSION_LOCK_CLAUDE_BIN").filter(|v| !v.is_empty()) {
            let bin = PathBuf::from(bin);
            return if bin.is_file() {
                Ok(Claude { bin })
            } else {
                Err(format!(
                    "SESSION_LOCK_CLAUDE_BIN={} does not exist",
                    bin.display()
                ))
            };
        }
        let cached = cached_bin();
        if let Some(bin) = cached.as_ref().filter(|b| b.is_file()) {
            return Ok(Claude { bin: bin.clone() });
        }
        if let Some(bin) = on_path("claude") {
            return Ok(Claude { bin });
        }
        let cached = cached.map_or_else(|| "(no HOME)".into(), |p| p.display().to_string());
        Err(format!("not at {cached} nor on PATH"))
    }

    /// The skip-or-fail policy for `test` (see [`require_claude!`]).
    #[track_caller]
    pub fn require(test: &str) -> Option<Claude> {
        match Claude::locate() {
            Ok(claude) => Some(claude),
            Err(why) if in_ci() => panic!(
                "{test}: Claude Code CLI not found ({why}); CI needs it: run \
                 scripts/install-claude-cli (or set SESSION_LOCK_CLAUDE_BIN to a claude executable)"
            ),
            Err(_) => {
                // Straight to stderr: the test harness captures print!/eprint!.
                let _ = writeln!(
                    io::stderr().lock(),
                    "skipped: {test}: Claude Code CLI not found; run scripts/install-claude-cli \
                     or set SESSION_LOCK_CLAUDE_BIN"
                );
                None
            }
        }
    }

    /// A stand-in executable in the CLI's place (to test the runner itself).
    pub fn from_bin(bin: impl Into<PathBuf>) -> Claude {
        Claude { bin: bin.into() }
    }

    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// A command for the CLI with the cleaned environment (no session set-up):
    /// for `--version` and the like.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        clean_env(&mut cmd);
        cmd.stdin(Stdio::null());
        cmd
    }

    /// A headless session in `project` talking to `model`, started by
    /// [`SessionBuilder::spawn`] or [`SessionBuilder::run`].
    pub fn session(
        &self,
        project: impl AsRef<Path>,
        model: &FakeModel,
        prompt: impl Into<String>,
    ) -> SessionBuilder {
        SessionBuilder::new(
            self.bin.clone(),
            project.as_ref().to_path_buf(),
            model.base_url(),
            prompt.into(),
        )
    }
}

pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn cached_bin() -> Option<PathBuf> {
    let root = match std::env::var_os("SESSION_LOCK_CACHE").filter(|v| !v.is_empty()) {
        Some(root) => PathBuf::from(root),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".cache/session-lock"),
    };
    Some(
        root.join(format!("claude-code-{}", pinned_version()))
            .join("node_modules/.bin/claude"),
    )
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Removes what a surrounding Claude Code session or CI would leak into the CLI.
fn clean_env(cmd: &mut Command) {
    for (key, _) in std::env::vars_os() {
        let k = key.to_string_lossy();
        let leaks = k == "CLAUDECODE"
            || k.starts_with("CLAUDE_")
            || k.starts_with("ANTHROPIC_")
            || k == "AI_AGENT"
            || k.starts_with("XDG_")
            || k == "CI";
        if leaks {
            cmd.env_remove(&key);
        }
    }
}

/// A user's home directory for sessions: share one between sessions that must
/// see each other (the session registry and messaging live under `~/.claude`).
pub struct Home {
    _dir: TempDir,
    path: PathBuf,
}

impl Home {
    #[track_caller]
    pub fn new() -> Home {
        let dir = tempfile::Builder::new()
            .prefix("sl-home-")
            .tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temporary home: {e}"));
        let path = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|e| panic!("cannot resolve {}: {e}", dir.path().display()));
        Home { _dir: dir, path }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `~/.claude/sessions`, where running sessions register (`<pid>.json`).
    pub fn sessions_dir(&self) -> PathBuf {
        self.path.join(".claude/sessions")
    }

    /// The transcript of `session_id` started in `cwd`:
    /// `~/.claude/projects/<cwd with non-alphanumerics as '-'>/<id>.jsonl`.
    pub fn transcript(&self, cwd: &Path, session_id: &str) -> PathBuf {
        let slug: String = cwd
            .to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        self.path
            .join(".claude/projects")
            .join(slug)
            .join(format!("{session_id}.jsonl"))
    }
}

/// Where a session's HOME is: its own (removed with the session's result) or
/// one the test shares between sessions.
enum HomeDir {
    Own(Home),
    Shared(PathBuf),
}

impl HomeDir {
    fn path(&self) -> &Path {
        match self {
            HomeDir::Own(home) => home.path(),
            HomeDir::Shared(path) => path,
        }
    }
}

/// Writes an executable file (a hook script, say), creating parent directories.
#[track_caller]
pub fn write_executable(path: &Path, contents: &str) {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
    }
    let mut file =
        File::create(path).unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
    file.write_all(contents.as_bytes())
        .and_then(|()| file.set_permissions(std::fs::Permissions::from_mode(0o755)))
        .and_then(|()| file.sync_all())
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// A fresh random UUID (for `--session-id`), from the kernel.
#[track_caller]
pub fn new_uuid() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/uuid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|e| panic!("cannot read a uuid from the kernel: {e}"))
}
