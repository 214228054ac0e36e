//! The bed for end-to-end scenarios of the suite: a repo wired by the real
//! `guard install`, real Claude Code sessions in it (driven by the fake model)
//! with the suite's tools on their PATH, and the assertions those scenarios
//! share.
//!
//! A [`Bed`] is a git repo with two plans (`api` owns `src/api/**`, `ui` owns
//! `src/ui/**`), files in both and in unowned `docs/`, a
//! `session-lock/config.json` given by the test, the hooks exactly as
//! `guard install <repo>` writes them, one HOME for its sessions and a state
//! home of its own. Sessions are scripted turn by turn ([`bash`], [`read`],
//! [`edit`], [`write`]; ids fixed with [`call`] to find results later). Where a
//! session must wait for the test (to let another act meanwhile) it runs a
//! Bash command that waits for a [`Gate`] file.
//!
//! Every run whose hooks ran goes through [`assert_guard_output`]: the guard
//! never prints anything on stdout but one decision. Failures print the run
//! ([`Finished::describe`]) and every tool result its model received
//! ([`explain`]).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use session_lock::time;

use crate::support::claude::{Claude, Cli, CliKind, Finished, Home, SessionBuilder};
use crate::support::fake_model::{Block, FakeModel, ToolResult, Turn};
use crate::support::lines::Lines;
use crate::support::repo::GitRepo;

pub const API_X: &str = "export const x = 1;\n";
pub const WAIT: Duration = Duration::from_secs(30);
pub const MINUTE_MS: u64 = 60_000;

// ---------------------------------------------------------------------------
// The bed
// ---------------------------------------------------------------------------

/// A repo wired for session-lock, with its own HOME, state home and scratch
/// folder.
pub struct Bed {
    pub repo: GitRepo,
    claude: Claude,
    /// One user's HOME for every session (so `--resume` finds transcripts).
    home: Home,
    state_home: tempfile::TempDir,
    scratch: tempfile::TempDir,
}

impl Bed {
    /// Plans `api` (owns `src/api/**`) and `ui` (owns `src/ui/**`), files in
    /// both and in unowned `docs/`, `config` as `session-lock/config.json`,
    /// then `guard install <repo>` and a commit of it all.
    #[track_caller]
    pub fn new(claude: Claude, config: Value) -> Bed {
        Bed::wired_for(claude, config, &[])
    }

    /// [`Bed::new`] wired for these clients too (`guard install --agent claude --agent
    /// <each>`), for sessions of those CLIs beside Claude Code's ([`Bed::cli_session`]).
    #[track_caller]
    pub fn wired_for(claude: Claude, config: Value, others: &[&str]) -> Bed {
        let config = serde_json::to_string_pretty(&config).expect("config");
        let repo = GitRepo::with_files(&[
            (
                "plans/r-ms-01-api/plan.md",
                "---\nowns:\n  - src/api/**\n---\n# The api stream\n",
            ),
            (
                "plans/r-ms-01-ui/plan.md",
                "---\nowns:\n  - src/ui/**\n---\n# The ui stream\n",
            ),
            ("src/api/x.ts", API_X),
            ("src/ui/y.ts", "export const y = 1;\n"),
            ("docs/notes.md", "notes\n"),
            ("session-lock/config.json", &config),
        ]);
        // The sessions' HOME, where install writes the user-scope entry (never the HOME of
        // the person running the tests).
        let home = Home::new();
        let mut install = Command::new(env!("CARGO_BIN_EXE_guard"));
        install.arg("install").arg(repo.path());
        if !others.is_empty() {
            install.args(["--agent", "claude"]);
        }
        for agent in others {
            install.args(["--agent", agent]);
        }
        let out = install
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env("HOME", home.path())
            .output()
            .expect("run guard install");
        assert!(
            out.status.success(),
            "guard install failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let settings = repo.read(".claude/settings.json").unwrap_or_default();
        // The hooks run the committed launcher, which finds this guard first on the
        // sessions' PATH (see `session_in`).
        assert!(
            settings.contains("session-lock/guard-hook"),
            "the hooks run the launcher: {settings}"
        );
        repo.commit_all("wire session-lock");
        let temp = |prefix: &str| {
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .expect("temporary directory")
        };
        Bed {
            repo,
            claude,
            home,
            state_home: temp("sl-state-"),
            scratch: temp("sl-scratch-"),
        }
    }

    /// The sessions' user settings, where `guard install` put the user-scope entry.
    pub fn user_settings(&self) -> PathBuf {
        self.home.path().join(".claude").join("settings.json")
    }

    /// A session in the repo: hook events in its stream, the suite's tools on
    /// PATH, this bed's state home, and a git identity for commits.
    pub fn session(&self, model: &FakeModel, label: &str) -> SessionBuilder {
        self.session_in(self.repo.path(), model, label)
    }

    /// [`Bed::session`] started in `cwd` (a folder of the repo).
    pub fn session_in(&self, cwd: &Path, model: &FakeModel, label: &str) -> SessionBuilder {
        let session = self.claude.session(cwd, model, prompt(label));
        self.bed_env(session, label).arg("--include-hook-events")
    }

    /// A Codex or Gemini session in the repo, wired and set up as [`Bed::session`] (its
    /// model's tools and hooks: the suite's on PATH, this bed's state home and HOME, a git
    /// identity).
    pub fn cli_session(&self, cli: &Cli, model: &FakeModel, label: &str) -> SessionBuilder {
        let session = cli.session(self.repo.path(), model, prompt(label));
        self.bed_env(session, label)
    }

    /// What every session of the bed runs with.
    fn bed_env(&self, session: SessionBuilder, label: &str) -> SessionBuilder {
        let path = match std::env::var_os("PATH") {
            Some(rest) => {
                let mut dirs = vec![tools_dir()];
                dirs.extend(std::env::split_paths(&rest));
                std::env::join_paths(dirs).expect("PATH")
            }
            None => tools_dir().into_os_string(),
        };
        session
            .label(format!("session {label}"))
            .home(&self.home)
            .env("PATH", path)
            .env("SESSION_LOCK_HOME", self.state_home.path())
            .env_remove(CRASH_SWITCH)
            .env_remove("SESSION_LOCK_LIVE_FILE")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Session")
            .env("GIT_AUTHOR_EMAIL", "session@example.invalid")
            .env("GIT_COMMITTER_NAME", "Session")
            .env("GIT_COMMITTER_EMAIL", "session@example.invalid")
    }

    /// Runs a session that claims `stream` and ends (its lock stays live,
    /// orphaned, until it goes stale).
    #[track_caller]
    pub fn claimed_by_finished_session(&self, stream: &str) -> Finished {
        let model = FakeModel::start(vec![
            bash(&format!("claim {stream}")),
            Turn::text("claimed"),
        ]);
        let run = self.session(&model, "A").run();
        run.assert_success();
        assert_guard_output(&run);
        let claim = &model.tool_results()[0];
        assert!(!claim.is_error, "{}", explain(&run, &model, "claim failed"));
        run
    }

    pub fn lock_path(&self, stream: &str) -> PathBuf {
        self.repo.join(&format!("session-lock/{stream}.lock"))
    }

    /// The lock file of `stream`, parsed.
    pub fn lock(&self, stream: &str) -> Option<Value> {
        let text = std::fs::read_to_string(self.lock_path(stream)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The lock's `heartbeatAt` in ms since the epoch.
    #[track_caller]
    pub fn heartbeat_ms(&self, stream: &str) -> u64 {
        let lock = self.lock(stream).expect("a lock");
        lock["heartbeatAt"]
            .as_str()
            .and_then(time::parse_iso)
            .unwrap_or_else(|| panic!("no heartbeatAt in {lock}"))
    }

    /// Rewrites the lock's `heartbeatAt` to `ago_ms` before now (not under
    /// the suite's state lock: a concurrent heartbeat may win, never tear it).
    #[track_caller]
    pub fn age_heartbeat(&self, stream: &str, ago_ms: u64) {
        let mut lock = self.lock(stream).expect("a lock to age");
        lock["heartbeatAt"] = json!(time::iso(time::now_ms() - ago_ms));
        self.put_lock(stream, &lock);
    }

    /// Writes `lock` as the lock file of `stream`, replaced in one rename as
    /// the suite writes it: a tool reading the lock meanwhile must never see
    /// it half written.
    #[track_caller]
    pub fn put_lock(&self, stream: &str, lock: &Value) {
        let text = serde_json::to_string_pretty(lock).expect("lock json");
        let path = self.lock_path(stream);
        let dir = path.parent().expect("the lock's folder");
        let mut temp = tempfile::NamedTempFile::new_in(dir).expect("a temporary lock");
        std::io::Write::write_all(&mut temp, text.as_bytes()).expect("write the lock");
        temp.persist(&path).expect("write the lock");
    }

    /// One of the suite's tools run by hand in the repo (as a person would).
    pub fn tool(&self, name: &str) -> Command {
        let mut cmd = Command::new(tools_dir().join(name));
        cmd.arg("--repo")
            .arg(self.repo.path())
            .env("SESSION_LOCK_HOME", self.state_home.path())
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("CLAUDE_CODE_SESSION_ID")
            .stdin(Stdio::null());
        cmd
    }

    /// `status --json`, parsed; the row of `stream`.
    #[track_caller]
    pub fn status_row(&self, stream: &str) -> Value {
        let out = self
            .tool("status")
            .arg("--json")
            .output()
            .expect("run status");
        assert!(out.status.success(), "status --json: {}", output_text(&out));
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("status --json is not JSON ({e}): {}", output_text(&out)));
        report["streams"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["stream"] == stream))
            .cloned()
            .unwrap_or_else(|| panic!("no row for '{stream}' in {report}"))
    }

    /// The guard's registry of live sessions (`<state home>/sessions/*.json`).
    pub fn registry(&self) -> Vec<Value> {
        let Ok(entries) = std::fs::read_dir(self.state_home.path().join("sessions")) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|text| serde_json::from_str(&text).ok())
            .collect()
    }

    /// A gate file in the scratch folder.
    pub fn gate(&self, name: &str) -> Gate {
        Gate {
            path: self.scratch.path().join(name),
        }
    }
}

pub const CRASH_SWITCH: &str = "SESSION_LOCK_GUARD_CRASH";

/// The prompt of session `label`.
fn prompt(label: &str) -> String {
    format!("You are session {label}. Follow the session-lock protocol.")
}

/// The folder of the suite's binaries (`claim`, `release`, `status`, `guard`).
pub fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_claim"))
        .parent()
        .expect("the binaries' folder")
        .to_path_buf()
}

pub fn output_text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A process run beside the sessions, killed if the test ends first. Its stderr is read as it
/// comes, so a test can wait for the line that says what the process is doing.
pub struct Background {
    child: Option<Child>,
    stderr: Option<Lines>,
}

impl Background {
    #[track_caller]
    pub fn spawn(cmd: &mut Command) -> Background {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        let stderr = Lines::stderr(&mut child);
        Background {
            child: Some(child),
            stderr: Some(stderr),
        }
    }

    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Its stderr so far, and the lines still to come.
    pub fn stderr(&self) -> &Lines {
        self.stderr.as_ref().expect("a child")
    }

    /// Its output once it exits (killed first if it still runs).
    #[track_caller]
    pub fn finish(mut self) -> Output {
        let mut child = self.child.take().expect("a child");
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
        }
        let mut out = child.wait_with_output().expect("the child's output");
        out.stderr = self.stderr.take().expect("a child").finish().into_bytes();
        out
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A file a scripted session waits for in a Bash call, so the test can act
/// while the session is alive, inside a tool call whose PreToolUse hook has
/// run.
pub struct Gate {
    path: PathBuf,
}

impl Gate {
    /// A gate at `path` (its folder must exist), for scenarios without a [`Bed`].
    pub fn at(path: impl Into<PathBuf>) -> Gate {
        Gate { path: path.into() }
    }

    /// The Bash command that marks the gate reached, then waits for it to
    /// open (at most 30 s, then fails).
    pub fn wait_command(&self) -> String {
        let path = self.path.display();
        format!(
            "touch '{path}.reached'; for i in $(seq 600); do [ -e '{path}' ] && exit 0; sleep 0.05; done; echo 'gate stayed shut' >&2; exit 1"
        )
    }

    /// [`Gate::wait_command`] without command substitution, which Gemini CLI's shell tool
    /// refuses to run.
    pub fn wait_command_plain(&self) -> String {
        let path = self.path.display();
        format!(
            "touch '{path}.reached'; timeout 30 sh -c \"until [ -e '{path}' ]; do sleep 0.05; done\" || {{ echo 'gate stayed shut' >&2; exit 1; }}"
        )
    }

    /// Waits until a session stands at the gate.
    #[track_caller]
    pub fn wait_reached(&self) {
        assert!(
            self.reached(),
            "no session reached the gate {}",
            self.path.display()
        );
    }

    /// Waits (at most [`WAIT`]) for a session to stand at the gate; whether one did.
    pub fn reached(&self) -> bool {
        let marker = PathBuf::from(format!("{}.reached", self.path.display()));
        wait_until(WAIT, || marker.exists())
    }

    pub fn open(&self) {
        std::fs::write(&self.path, "open\n").expect("open the gate");
    }
}

pub fn bash(command: &str) -> Turn {
    Turn::tool_use(
        "Bash",
        json!({"command": command, "description": "run a command"}),
    )
}

/// A Bash call with a fixed id.
pub fn bash_call(id: &str, command: &str) -> Turn {
    call(
        id,
        "Bash",
        json!({"command": command, "description": "run a command"}),
    )
}

/// A tool call with a fixed id, to find its result later.
pub fn call(id: &str, name: &str, input: Value) -> Turn {
    Turn::blocks(vec![Block::tool_use(name, input).with_id(id)])
}

pub fn read(id: &str, path: &Path) -> Turn {
    call(id, "Read", json!({"file_path": path}))
}

pub fn edit(id: &str, path: impl AsRef<Path>, old: &str, new: &str) -> Turn {
    call(
        id,
        "Edit",
        json!({"file_path": path.as_ref(), "old_string": old, "new_string": new}),
    )
}

pub fn write(id: &str, path: impl AsRef<Path>, content: &str) -> Turn {
    call(
        id,
        "Write",
        json!({"file_path": path.as_ref(), "content": content}),
    )
}

pub use super::poll::until as wait_until;

/// Processes whose command line holds every one of `parts`.
pub fn processes_with(parts: &[&str]) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|raw| {
                let line = String::from_utf8_lossy(&raw).replace('\0', " ");
                parts.iter().all(|p| line.contains(p))
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Reading what happened
// ---------------------------------------------------------------------------

/// A failure message: the headline, the run (exit, last events, stderr) and
/// every tool result its model received.
pub fn explain(run: &Finished, model: &FakeModel, headline: &str) -> String {
    let mut out = run.describe(headline);
    out.push_str("\ntool results the model received:");
    for r in model.tool_results() {
        let mut content = r.content.clone();
        if content.len() > 600 {
            let cut = (0..=600)
                .rev()
                .find(|&i| content.is_char_boundary(i))
                .unwrap_or(0);
            content.truncate(cut);
            content.push_str("...");
        }
        out.push_str(&format!(
            "\n  {} (is_error {}): {content}",
            r.tool_use_id, r.is_error
        ));
    }
    out
}

/// The result the model got for tool call `id`, or a descriptive panic.
#[track_caller]
pub fn result_of(run: &Finished, model: &FakeModel, id: &str) -> ToolResult {
    model
        .tool_result(id)
        .unwrap_or_else(|| panic!("{}", explain(run, model, &format!("no result for {id}"))))
}

/// Whether a tool result is a hook's refusal, in the form the run's client hands it to its
/// model: an error result (Claude Code), `Command blocked by PreToolUse hook: <reason>. Command:
/// …` as the tool's output (Codex), `Tool execution blocked: <reason>` as an error (Gemini).
pub fn refused(run: &Finished, r: &ToolResult) -> bool {
    match run.kind {
        CliKind::Claude => r.is_error,
        CliKind::Codex => r.content.contains("blocked by PreToolUse hook: "),
        CliKind::Gemini => r.is_error && r.content.contains("Tool execution blocked: "),
    }
}

/// Asserts the model saw tool call `id` blocked by the guard with a reason
/// containing `needle`.
#[track_caller]
pub fn assert_blocked(run: &Finished, model: &FakeModel, id: &str, needle: &str) -> ToolResult {
    let r = result_of(run, model, id);
    let ok = refused(run, &r) && r.content.contains("session-lock: ") && r.content.contains(needle);
    assert!(
        ok,
        "{}",
        explain(
            run,
            model,
            &format!("expected {id} blocked by the guard with {needle:?}")
        )
    );
    r
}

#[track_caller]
pub fn assert_ran(run: &Finished, model: &FakeModel, id: &str) -> ToolResult {
    let r = result_of(run, model, id);
    assert!(
        !r.is_error && !refused(run, &r),
        "{}",
        explain(run, model, &format!("expected {id} to run"))
    );
    r
}

/// The `system/hook_response` events of a run (needs `--include-hook-events`).
pub fn hook_responses(run: &Finished) -> Vec<&Value> {
    run.events_of("system", Some("hook_response"))
}

/// The guard's contract with the client, checked on every hook it answered in
/// this run: stdout is empty or exactly one JSON object (a decision for that
/// event); the exit code is 0, or 2 with nothing on stdout (the exit-2
/// decision form); no hook timed out. At least one PreToolUse hook ran, so the
/// check is never vacuous. Every hook in these repos is the guard.
#[track_caller]
pub fn assert_guard_output(run: &Finished) {
    let responses = hook_responses(run);
    assert!(
        responses.iter().any(|e| e["hook_event"] == "PreToolUse"),
        "{}",
        run.describe("no PreToolUse hook_response: were the hooks installed and hook events on?")
    );
    for e in responses {
        let fail = |why: &str| -> ! { panic!("{}\nthe hook_response: {e}", run.describe(why)) };
        let stdout = e["stdout"]
            .as_str()
            .unwrap_or_else(|| fail("no stdout field"));
        let code = e["exit_code"].as_i64();
        if e["outcome"] == "cancelled" {
            fail("a guard hook did not answer in time");
        }
        match code {
            Some(0) => {}
            Some(2) if stdout.is_empty() => {}
            _ => fail("the guard exited with something other than 0, or 2 without stdout"),
        }
        if stdout.trim().is_empty() {
            if !stdout.is_empty() {
                fail("the guard printed whitespace on stdout");
            }
            continue;
        }
        // `from_str` fails on anything after the first document.
        match serde_json::from_str::<Value>(stdout) {
            Ok(doc) if doc["hookSpecificOutput"]["hookEventName"] == e["hook_event"] => {}
            Ok(_) => fail("the guard's stdout is JSON but not a decision for this event"),
            Err(_) => fail("the guard's stdout is not exactly one JSON document"),
        }
    }
}

/// The first hook_response for this tool's PreToolUse that said anything (output or an exit
/// code other than 0), else the first. A session at the repo root runs two guard entries, the
/// repo's and the user-scope one, which stays silent there.
pub fn pre_tool_response<'a>(run: &'a Finished, tool: &str) -> Option<&'a Value> {
    let name = format!("PreToolUse:{tool}");
    let all: Vec<&Value> = hook_responses(run)
        .into_iter()
        .filter(|e| e["hook_name"] == name.as_str())
        .collect();
    let said = |e: &&Value| {
        e["exit_code"] != 0
            || ["stdout", "stderr"]
                .iter()
                .any(|k| e[k].as_str().is_some_and(|t| !t.is_empty()))
    };
    all.iter().find(|e| said(e)).or(all.first()).copied()
}
