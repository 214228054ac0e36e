//! The stream lifecycle end to end, where users run it: the real Claude Code CLI
//! (driven by the fake model) in a repo wired by `guard install`, the suite's
//! tools on the sessions' PATH, and several sessions sharing the tree.
//!
//! Every test builds a [`Bed`]: a git repo with two plans (`api` owns
//! `src/api/**`, `ui` owns `src/ui/**`), a `session-lock/config.json`, the hooks
//! exactly as `guard install <repo>` writes them, and a state home of its own.
//! Sessions are scripted turn by turn; where one session must wait for the test
//! (to let another act meanwhile) it runs a Bash command that waits for a
//! [`Gate`] file. Every finished run whose hooks ran goes through
//! [`assert_guard_output`]: the guard never prints anything on stdout but one
//! decision.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use session_lock::time;

use crate::support::claude::{Claude, Finished, Home, SessionBuilder, new_uuid, require_claude};
use crate::support::fake_model::{Block, FakeModel, ToolResult, Turn};
use crate::support::repo::GitRepo;

const API_X: &str = "export const x = 1;\n";
const WAIT: Duration = Duration::from_secs(30);
const MINUTE_MS: u64 = 60_000;

// ---------------------------------------------------------------------------
// The bed
// ---------------------------------------------------------------------------

/// A repo wired for session-lock, with its own HOME, state home and scratch
/// folder.
struct Bed {
    repo: GitRepo,
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
    fn new(claude: Claude, config: Value) -> Bed {
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
        let out = Command::new(env!("CARGO_BIN_EXE_guard"))
            .arg("install")
            .arg(repo.path())
            .env_remove("CLAUDE_PROJECT_DIR")
            .output()
            .expect("run guard install");
        assert!(
            out.status.success(),
            "guard install failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let settings = repo.read(".claude/settings.json").unwrap_or_default();
        assert!(
            settings.contains(env!("CARGO_BIN_EXE_guard")),
            "the hooks run this guard: {settings}"
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
            home: Home::new(),
            state_home: temp("sl-state-"),
            scratch: temp("sl-scratch-"),
        }
    }

    /// A session in the repo: hook events in its stream, the suite's tools on
    /// PATH, this bed's state home, and a git identity for commits.
    fn session(&self, model: &FakeModel, label: &str) -> SessionBuilder {
        self.session_in(self.repo.path(), model, label)
    }

    /// [`Bed::session`] started in `cwd` (a folder of the repo).
    fn session_in(&self, cwd: &Path, model: &FakeModel, label: &str) -> SessionBuilder {
        let path = match std::env::var_os("PATH") {
            Some(rest) => {
                let mut dirs = vec![tools_dir()];
                dirs.extend(std::env::split_paths(&rest));
                std::env::join_paths(dirs).expect("PATH")
            }
            None => tools_dir().into_os_string(),
        };
        self.claude
            .session(
                cwd,
                model,
                format!("You are session {label}. Follow the session-lock protocol."),
            )
            .label(format!("session {label}"))
            .home(&self.home)
            .arg("--include-hook-events")
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
    fn claimed_by_finished_session(&self, stream: &str) -> Finished {
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

    fn lock_path(&self, stream: &str) -> PathBuf {
        self.repo.join(&format!("session-lock/{stream}.lock"))
    }

    /// The lock file of `stream`, parsed.
    fn lock(&self, stream: &str) -> Option<Value> {
        let text = std::fs::read_to_string(self.lock_path(stream)).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The lock's `heartbeatAt` in ms since the epoch.
    #[track_caller]
    fn heartbeat_ms(&self, stream: &str) -> u64 {
        let lock = self.lock(stream).expect("a lock");
        lock["heartbeatAt"]
            .as_str()
            .and_then(time::parse_iso)
            .unwrap_or_else(|| panic!("no heartbeatAt in {lock}"))
    }

    /// Rewrites the lock's `heartbeatAt` to `ago_ms` before now.
    #[track_caller]
    fn age_heartbeat(&self, stream: &str, ago_ms: u64) {
        let mut lock = self.lock(stream).expect("a lock to age");
        lock["heartbeatAt"] = json!(time::iso(time::now_ms() - ago_ms));
        let text = serde_json::to_string_pretty(&lock).expect("lock json");
        std::fs::write(self.lock_path(stream), text).expect("rewrite the lock");
    }

    /// One of the suite's tools run by hand in the repo (as a person would).
    fn tool(&self, name: &str) -> Command {
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
    fn status_row(&self, stream: &str) -> Value {
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
    fn registry(&self) -> Vec<Value> {
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
    fn gate(&self, name: &str) -> Gate {
        Gate {
            path: self.scratch.path().join(name),
        }
    }
}

const CRASH_SWITCH: &str = "SESSION_LOCK_GUARD_CRASH";

/// The folder of the suite's binaries (`claim`, `release`, `status`, `guard`).
fn tools_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_claim"))
        .parent()
        .expect("the binaries' folder")
        .to_path_buf()
}

fn output_text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A process run beside the sessions, killed if the test ends first.
struct Background {
    child: Option<Child>,
}

impl Background {
    #[track_caller]
    fn spawn(cmd: &mut Command) -> Background {
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
        Background { child: Some(child) }
    }

    fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Its output once it exits (killed first if it still runs).
    #[track_caller]
    fn finish(mut self) -> Output {
        let mut child = self.child.take().expect("a child");
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
        }
        child.wait_with_output().expect("the child's output")
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
struct Gate {
    path: PathBuf,
}

impl Gate {
    /// The Bash command that marks the gate reached, then waits for it to
    /// open (at most 30 s, then fails).
    fn wait_command(&self) -> String {
        let path = self.path.display();
        format!(
            "touch '{path}.reached'; for i in $(seq 600); do [ -e '{path}' ] && exit 0; sleep 0.05; done; echo 'gate stayed shut' >&2; exit 1"
        )
    }

    /// Waits until a session stands at the gate.
    #[track_caller]
    fn wait_reached(&self) {
        let marker = PathBuf::from(format!("{}.reached", self.path.display()));
        assert!(
            wait_until(WAIT, || marker.exists()),
            "no session reached the gate {}",
            self.path.display()
        );
    }

    fn open(&self) {
        std::fs::write(&self.path, "open\n").expect("open the gate");
    }
}

fn bash(command: &str) -> Turn {
    Turn::tool_use(
        "Bash",
        json!({"command": command, "description": "run a command"}),
    )
}

/// A Bash call with a fixed id.
fn bash_call(id: &str, command: &str) -> Turn {
    call(
        id,
        "Bash",
        json!({"command": command, "description": "run a command"}),
    )
}

/// A tool call with a fixed id, to find its result later.
fn call(id: &str, name: &str, input: Value) -> Turn {
    Turn::blocks(vec![Block::tool_use(name, input).with_id(id)])
}

fn read(id: &str, path: &Path) -> Turn {
    call(id, "Read", json!({"file_path": path}))
}

fn edit(id: &str, path: impl AsRef<Path>, old: &str, new: &str) -> Turn {
    call(
        id,
        "Edit",
        json!({"file_path": path.as_ref(), "old_string": old, "new_string": new}),
    )
}

fn write(id: &str, path: impl AsRef<Path>, content: &str) -> Turn {
    call(
        id,
        "Write",
        json!({"file_path": path.as_ref(), "content": content}),
    )
}

/// Polls `done` until it holds or `timeout` passes; whether it held.
fn wait_until(timeout: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    true
}

/// Processes whose command line holds every one of `parts`.
fn processes_with(parts: &[&str]) -> Vec<u32> {
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
fn explain(run: &Finished, model: &FakeModel, headline: &str) -> String {
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
fn result_of(run: &Finished, model: &FakeModel, id: &str) -> ToolResult {
    model
        .tool_result(id)
        .unwrap_or_else(|| panic!("{}", explain(run, model, &format!("no result for {id}"))))
}

/// Asserts the model saw tool call `id` blocked by the guard with a reason
/// containing `needle`.
#[track_caller]
fn assert_blocked(run: &Finished, model: &FakeModel, id: &str, needle: &str) -> ToolResult {
    let r = result_of(run, model, id);
    let ok = r.is_error && r.content.contains("session-lock: ") && r.content.contains(needle);
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
fn assert_ran(run: &Finished, model: &FakeModel, id: &str) -> ToolResult {
    let r = result_of(run, model, id);
    assert!(
        !r.is_error,
        "{}",
        explain(run, model, &format!("expected {id} to run"))
    );
    r
}

/// The `system/hook_response` events of a run (needs `--include-hook-events`).
fn hook_responses(run: &Finished) -> Vec<&Value> {
    run.events_of("system", Some("hook_response"))
}

/// The guard's contract with the client, checked on every hook it answered in
/// this run: stdout is empty or exactly one JSON object (a decision for that
/// event); the exit code is 0, or 2 with nothing on stdout (the exit-2
/// decision form); no hook timed out. At least one PreToolUse hook ran, so the
/// check is never vacuous. Every hook in these repos is the guard.
#[track_caller]
fn assert_guard_output(run: &Finished) {
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

/// The first hook_response for this tool's PreToolUse.
fn pre_tool_response<'a>(run: &'a Finished, tool: &str) -> Option<&'a Value> {
    let name = format!("PreToolUse:{tool}");
    hook_responses(run)
        .into_iter()
        .find(|e| e["hook_name"] == name.as_str())
}

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

#[test]
fn claim_records_the_real_session_id_and_a_second_claim_is_blocked() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let hold = bed.gate("a-may-finish");
    let model_a = FakeModel::start(vec![
        bash_call("toolu_a_claim", "claim api"),
        bash(&hold.wait_command()),
        Turn::text("A is done"),
    ]);
    let session_a = bed.session(&model_a, "A").spawn();
    hold.wait_reached();
    let registered = bed.registry();

    let model_b = FakeModel::start(vec![
        bash_call("toolu_b_claim", "claim api"),
        bash_call("toolu_b_release", "release api"),
        Turn::text("B gives up"),
    ]);
    let b = bed.session(&model_b, "B").run();
    hold.open();
    let a = session_a.wait();

    a.assert_success();
    b.assert_success();
    assert_guard_output(&a);
    assert_guard_output(&b);
    let a_id = a.session_id().expect("A's session id");
    let lock = bed.lock("api").expect("session-lock/api.lock exists");
    assert_eq!(
        lock["sessionId"], a_id,
        "the lock names A's real session id"
    );
    assert_eq!(
        lock["clientPid"], a.pid,
        "the lock names A's client process"
    );
    assert_eq!(lock["owns"], json!(["src/api/**"]));
    assert_eq!(lock["plan"], "plans/r-ms-01-api/plan.md");

    let claimed = assert_ran(&a, &model_a, "toolu_a_claim");
    for needle in [
        "## Rules for every session",
        "**Claim first.**",
        &format!(
            "Stream 'api' (milestone 01, round 0) is held by this session {}",
            &a_id[..8]
        ),
        "You own:\n  src/api/**\n",
    ] {
        assert!(
            claimed.content.contains(needle),
            "{}",
            explain(&a, &model_a, &format!("claim's output lacks {needle:?}"))
        );
    }

    let refused = assert_blocked(
        &b,
        &model_b,
        "toolu_b_claim",
        &format!(
            "stream 'api' is held by another session (session {}",
            &a_id[..8]
        ),
    );
    assert!(
        refused
            .content
            .starts_with("PreToolUse:Bash hook error: session-lock: "),
        "the JSON decision shows only the reason: {}",
        refused.content
    );
    assert!(
        !refused.content.contains("client process is gone"),
        "A was alive when B tried: {}",
        refused.content
    );
    assert_blocked(
        &b,
        &model_b,
        "toolu_b_release",
        "stream 'api' belongs to another session",
    );
    assert_eq!(
        bed.lock("api").map(|l| l["sessionId"].clone()),
        Some(json!(a_id)),
        "B's attempts left A's lock alone"
    );
    assert!(!bed.repo.exists("session-lock/api.done"));

    // The guard's own registry of live sessions: A was in it while it ran.
    let entry = registered
        .iter()
        .find(|e| e["sessionId"] == a_id)
        .unwrap_or_else(|| panic!("A in the registry while it ran: {registered:?}"));
    assert_eq!(entry["pid"], a.pid, "{entry}");
    assert_eq!(entry["cwd"], bed.repo.path().to_string_lossy().as_ref());
    assert_eq!(
        bed.registry(),
        Vec::<Value>::new(),
        "SessionEnd removed A and B"
    );
}

#[test]
fn writes_to_files_another_stream_owns_are_blocked_and_others_go_through() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let x = bed.repo.join("src/api/x.ts");
    let notes = bed.repo.join("docs/notes.md");
    let config = bed.repo.join("session-lock/config.json");
    let settings = bed.repo.join(".claude/settings.json");
    let (config_before, settings_before) = (
        bed.repo.read("session-lock/config.json"),
        bed.repo.read(".claude/settings.json"),
    );
    let hold = bed.gate("a-may-edit");
    let model_a = FakeModel::start(vec![
        bash("claim api"),
        bash(&hold.wait_command()),
        read("toolu_a_read", &x),
        edit("toolu_a_edit", &x, "x = 1", "x = 'from A'"),
        Turn::text("A edited its file"),
    ]);
    let session_a = bed.session(&model_a, "A").spawn();
    hold.wait_reached();

    let model_b = FakeModel::start(vec![
        read("toolu_b_read", &x),
        edit("toolu_b_edit", &x, "x = 1", "x = 'from B'"),
        write(
            "toolu_b_write",
            &x,
            "export const x = 'overwritten by B';\n",
        ),
        read("toolu_b_read_notes", &notes),
        edit("toolu_b_edit_notes", &notes, "notes", "notes by B"),
        read("toolu_b_read_config", &config),
        edit("toolu_b_edit_config", &config, "true", "false"),
        read("toolu_b_read_settings", &settings),
        write("toolu_b_write_settings", &settings, "{}\n"),
        Turn::text("B is done"),
    ]);
    let b = bed.session(&model_b, "B").run();
    let x_after_b = bed.repo.read("src/api/x.ts");
    hold.open();
    let a = session_a.wait();

    a.assert_success();
    b.assert_success();
    assert_guard_output(&a);
    assert_guard_output(&b);
    let a_short = &a.session_id().expect("A's id")[..8];
    let owned = format!("src/api/x.ts is owned by stream 'api' (session {a_short}");
    for (id, tool) in [("toolu_b_edit", "Edit"), ("toolu_b_write", "Write")] {
        let r = assert_blocked(&b, &model_b, id, &owned);
        assert!(
            r.content
                .starts_with(&format!("PreToolUse:{tool} hook error: ")),
            "{}",
            r.content
        );
    }
    assert_eq!(
        x_after_b.as_deref(),
        Some(API_X),
        "B's blocked Edit and Write left src/api/x.ts as it was"
    );
    assert_ran(&b, &model_b, "toolu_b_edit_notes");
    assert_eq!(
        bed.repo.read("docs/notes.md").as_deref(),
        Some("notes by B\n"),
        "B's edit of a file no stream owns went through"
    );
    for (id, rel) in [
        ("toolu_b_edit_config", "session-lock/config.json"),
        ("toolu_b_write_settings", ".claude/settings.json"),
    ] {
        assert_blocked(
            &b,
            &model_b,
            id,
            &format!("{rel} is part of the session-lock protocol and is frozen"),
        );
    }
    assert_eq!(bed.repo.read("session-lock/config.json"), config_before);
    assert_eq!(bed.repo.read(".claude/settings.json"), settings_before);
    assert_ran(&a, &model_a, "toolu_a_edit");
    assert_eq!(
        bed.repo.read("src/api/x.ts").as_deref(),
        Some("export const x = 'from A';\n"),
        "A's edit of its own file went through"
    );
}

#[test]
fn tool_calls_heartbeat_and_a_stale_lock_of_an_ended_session_can_be_taken() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let a_id = new_uuid();

    // A claims, then its session ends: the lock stays, its client is gone.
    let model_a1 = FakeModel::start(vec![bash("claim api"), Turn::text("claimed")]);
    let a1 = bed.session(&model_a1, "A").session_id(&a_id).run();
    a1.assert_success();
    assert_guard_output(&a1);
    assert_eq!(
        bed.lock("api").map(|l| l["sessionId"].clone()),
        Some(json!(a_id))
    );
    let row = bed.status_row("api");
    assert_eq!(row["state"], "active", "{row}");
    assert_eq!(row["orphaned"], true, "A's process is gone: {row}");
    assert_eq!(row["sessionId"], a_id.as_str(), "{row}");

    // Ten minutes without a heartbeat: orphaned but live, it still protects.
    bed.age_heartbeat("api", 10 * MINUTE_MS);
    let model_b1 = FakeModel::start(vec![
        bash_call("toolu_b1_claim", "claim api"),
        Turn::text("B waits"),
    ]);
    let b1 = bed.session(&model_b1, "B1").run();
    b1.assert_success();
    assert_guard_output(&b1);
    assert_blocked(
        &b1,
        &model_b1,
        "toolu_b1_claim",
        &format!(
            "stream 'api' is held by another session (session {}, heartbeat 10m ago, its client process is gone)",
            &a_id[..8]
        ),
    );

    // A resumes. While it stands inside a tool call, its heartbeat is aged
    // again; its next tool call moves it to now, and names the new process.
    let (first, second) = (bed.gate("a-first-call"), bed.gate("a-second-call"));
    let model_a2 = FakeModel::start(vec![
        bash(&first.wait_command()),
        bash(&second.wait_command()),
        Turn::text("resumed"),
    ]);
    let session_a2 = bed
        .session(&model_a2, "A resumed")
        .arg("--resume")
        .arg(&a_id)
        .spawn();
    first.wait_reached();
    bed.age_heartbeat("api", 10 * MINUTE_MS);
    let before = time::now_ms();
    first.open();
    second.wait_reached();
    let beat = bed.heartbeat_ms("api");
    let lock = bed.lock("api").expect("the lock");
    let row = bed.status_row("api");
    second.open();
    let a2 = session_a2.wait();
    a2.assert_success();
    assert_guard_output(&a2);
    assert_eq!(a2.session_id(), Some(a_id.as_str()), "the resumed run is A");
    assert!(
        beat >= before && beat <= time::now_ms(),
        "A's tool call moved heartbeatAt to now ({}), not left it 10 minutes back: {}",
        time::iso(before),
        time::iso(beat)
    );
    assert_eq!(lock["sessionId"], a_id.as_str());
    assert_eq!(
        lock["clientPid"], a2.pid,
        "the lock names the resumed client process"
    );
    assert_eq!(
        row["orphaned"], false,
        "the resumed session is running: {row}"
    );
    assert_eq!(row["state"], "active", "{row}");
    assert_eq!(
        bed.status_row("api")["orphaned"],
        true,
        "once the resumed session ended, its lock is orphaned again"
    );

    // Stale past the 30-minute limit: another session takes the stream.
    bed.age_heartbeat("api", 40 * MINUTE_MS);
    assert_eq!(bed.status_row("api")["state"], "stale");
    let model_b2 = FakeModel::start(vec![
        bash_call("toolu_b2_claim", "claim api"),
        Turn::text("B has it"),
    ]);
    let b2 = bed.session(&model_b2, "B2").run();
    b2.assert_success();
    assert_guard_output(&b2);
    let b_id = b2.session_id().expect("B2's id");
    let claimed = assert_ran(&b2, &model_b2, "toolu_b2_claim");
    assert!(
        claimed
            .content
            .contains(&format!("is held by this session {}", &b_id[..8])),
        "{}",
        explain(&b2, &model_b2, "claim of a stale stream")
    );
    let lock = bed.lock("api").expect("the lock");
    assert_eq!(lock["sessionId"], b_id, "the lock is B's now");
    assert!(
        bed.heartbeat_ms("api") + MINUTE_MS >= time::now_ms(),
        "with a fresh heartbeat"
    );
}

#[test]
fn release_needs_committed_owned_files_and_status_wait_returns_after_it() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"], "pollSeconds": 1}));
    let x = bed.repo.join("src/api/x.ts");
    let (before_edit, before_commit) = (bed.gate("a-may-edit"), bed.gate("a-may-commit"));
    let model = FakeModel::start(vec![
        bash("claim api"),
        bash(&before_edit.wait_command()),
        read("toolu_read", &x),
        edit("toolu_edit", &x, "x = 1", "x = 2"),
        bash_call("toolu_release_dirty", "release api"),
        bash(&before_commit.wait_command()),
        bash_call(
            "toolu_commit",
            "git add src/api/x.ts && git commit -q -m 'api: x is 2'",
        ),
        bash_call("toolu_release", "release api"),
        Turn::text("released"),
    ]);
    let session = bed.session(&model, "A").spawn();
    before_edit.wait_reached();

    // The end-of-round barrier, started while the stream is claimed.
    let mut barrier = Background::spawn(bed.tool("status").arg("--wait"));
    std::thread::sleep(Duration::from_millis(1200));
    assert!(
        barrier.running(),
        "status --wait waits for the claimed stream"
    );

    before_edit.open();
    // A tried to release and waits again.
    before_commit.wait_reached();
    std::thread::sleep(Duration::from_millis(1200));
    assert!(barrier.running(), "a failed release does not end the round");
    assert!(!bed.repo.exists("session-lock/api.done"));

    before_commit.open();
    // Whether api.done existed once status --wait was seen to have exited.
    let mut done_when_it_returned = None;
    wait_until(WAIT, || {
        if barrier.running() {
            return false;
        }
        done_when_it_returned = Some(bed.repo.exists("session-lock/api.done"));
        true
    });
    let run = session.wait();
    let barrier = barrier.finish();

    run.assert_success();
    assert_guard_output(&run);
    let dirty = result_of(&run, &model, "toolu_release_dirty");
    assert!(
        dirty.is_error
            && dirty.content.contains("Exit code 3")
            && dirty.content.contains("stream 'api' is not released")
            && dirty.content.contains("src/api/x.ts"),
        "{}",
        explain(&run, &model, "release with an uncommitted owned file")
    );
    assert_ran(&run, &model, "toolu_commit");
    let released = assert_ran(&run, &model, "toolu_release");
    assert!(
        released.content.contains("released 'api'"),
        "{}",
        explain(&run, &model, "release after the commit")
    );
    let done_record: Value = bed
        .repo
        .read("session-lock/api.done")
        .and_then(|t| serde_json::from_str(&t).ok())
        .expect("session-lock/api.done is written");
    assert_eq!(done_record["sessionId"], run.session_id().unwrap_or("?"));
    let head = bed.repo.git(&["rev-parse", "HEAD"]);
    assert_eq!(
        done_record["head"],
        String::from_utf8_lossy(&head.stdout).trim(),
        "the done record names the commit A made"
    );

    assert_eq!(
        done_when_it_returned,
        Some(true),
        "status --wait returned, and only once api.done existed: {}",
        output_text(&barrier)
    );
    assert_eq!(
        barrier.status.code(),
        Some(0),
        "status --wait: {}",
        output_text(&barrier)
    );
    assert!(
        String::from_utf8_lossy(&barrier.stderr).contains("every claimed stream is done"),
        "{}",
        output_text(&barrier)
    );
}

#[test]
fn a_crashing_guard_fails_open_with_its_note_in_the_hook_response() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    bed.claimed_by_finished_session("api");
    let x = bed.repo.join("src/api/x.ts");
    let model = FakeModel::start(vec![
        read("toolu_read", &x),
        edit("toolu_edit", &x, "x = 1", "x = 'crash let it through'"),
        Turn::text("edited"),
    ]);

    let run = bed.session(&model, "B").env(CRASH_SWITCH, "1").run();

    run.assert_success();
    assert_guard_output(&run);
    assert_ran(&run, &model, "toolu_edit");
    assert_eq!(
        bed.repo.read("src/api/x.ts").as_deref(),
        Some("export const x = 'crash let it through';\n"),
        "the edit of another stream's file went through: the guard fails open"
    );
    let response = pre_tool_response(&run, "Edit")
        .unwrap_or_else(|| panic!("{}", run.describe("no PreToolUse:Edit hook_response")));
    assert_eq!(response["exit_code"], 0, "{response}");
    assert_eq!(response["stdout"], "", "{response}");
    assert_eq!(
        response["stderr"].as_str().map(str::trim),
        Some("guard: internal error (crash requested by SESSION_LOCK_GUARD_CRASH); allowing"),
        "{response}"
    );
}

#[test]
fn exit2_decision_form_blocks_and_the_model_sees_the_reason() {
    let claude = require_claude!();
    let bed = Bed::new(
        claude,
        json!({"releaseChecks": ["true"], "decision": "exit2"}),
    );
    bed.claimed_by_finished_session("api");
    let x = bed.repo.join("src/api/x.ts");
    let model = FakeModel::start(vec![
        read("toolu_read", &x),
        edit("toolu_edit", &x, "x = 1", "x = 'from B'"),
        Turn::text("blocked"),
    ]);

    let run = bed.session(&model, "B").run();

    run.assert_success();
    assert_guard_output(&run);
    let r = assert_blocked(
        &run,
        &model,
        "toolu_edit",
        "session-lock: src/api/x.ts is owned by stream 'api'",
    );
    assert!(
        r.content.starts_with("PreToolUse:Edit hook error: [")
            && r.content.contains(env!("CARGO_BIN_EXE_guard")),
        "the exit-2 form shows the model the hook's command line too: {}",
        r.content
    );
    assert_eq!(bed.repo.read("src/api/x.ts").as_deref(), Some(API_X));
    let response = pre_tool_response(&run, "Edit").expect("a PreToolUse:Edit hook_response");
    assert_eq!(response["exit_code"], 2, "{response}");
    assert!(
        response["stderr"]
            .as_str()
            .is_some_and(|s| s.contains("src/api/x.ts is owned by stream 'api'")),
        "{response}"
    );
}

#[test]
fn writes_are_checked_from_the_directory_a_bash_cd_moved_to() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    bed.claimed_by_finished_session("api");
    let model = FakeModel::start(vec![
        bash("cd src"),
        write("toolu_rel_owned", "api/z.ts", "z\n"),
        write("toolu_abs_owned", bed.repo.join("src/api/w.ts"), "w\n"),
        write("toolu_rel_free", "ui/new.ts", "free\n"),
        write("toolu_rel_up", "../docs/new.md", "up\n"),
        Turn::text("done"),
    ]);

    let run = bed.session(&model, "B").run();

    run.assert_success();
    assert_guard_output(&run);
    // Relative to the repo root, `api/z.ts` is owned by nobody: it is blocked
    // only because the guard resolves it from the payload's cwd, `src/`.
    assert_blocked(
        &run,
        &model,
        "toolu_rel_owned",
        "src/api/z.ts is owned by stream 'api'",
    );
    assert_blocked(
        &run,
        &model,
        "toolu_abs_owned",
        "src/api/w.ts is owned by stream 'api'",
    );
    for blocked in ["src/api/z.ts", "api/z.ts", "src/api/w.ts"] {
        assert!(!bed.repo.exists(blocked), "{blocked} was not written");
    }
    assert_ran(&run, &model, "toolu_rel_free");
    assert_ran(&run, &model, "toolu_rel_up");
    assert_eq!(bed.repo.read("src/ui/new.ts").as_deref(), Some("free\n"));
    assert_eq!(bed.repo.read("docs/new.md").as_deref(), Some("up\n"));
}

#[test]
fn two_sessions_claiming_one_stream_at_once_get_one_lock() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let (go_a, go_b) = (bed.gate("a-claims-now"), bed.gate("b-claims-now"));
    let script = |go: &Gate| {
        FakeModel::start(vec![
            bash(&go.wait_command()),
            bash_call("toolu_claim", "claim api"),
            Turn::text("done"),
        ])
    };
    let (model_a, model_b) = (script(&go_a), script(&go_b));
    let session_a = bed.session(&model_a, "A").spawn();
    let session_b = bed.session(&model_b, "B").spawn();
    // Both stand at their gates; opened together, both claim at once.
    go_a.wait_reached();
    go_b.wait_reached();
    go_a.open();
    go_b.open();
    let (a, b) = (session_a.wait(), session_b.wait());

    a.assert_success();
    b.assert_success();
    assert_guard_output(&a);
    assert_guard_output(&b);
    let holder = bed.lock("api").expect("a lock")["sessionId"].clone();
    let (winner, loser) = if holder == a.session_id().unwrap_or("?") {
        ((&a, &model_a), (&b, &model_b))
    } else {
        ((&b, &model_b), (&a, &model_a))
    };
    let winner_id = winner.0.session_id().expect("the winner's id");
    assert_eq!(holder, winner_id, "the lock names one of the two sessions");
    let won = assert_ran(winner.0, winner.1, "toolu_claim");
    assert!(
        won.content
            .contains(&format!("is held by this session {}", &winner_id[..8])),
        "{}",
        explain(winner.0, winner.1, "the winner's claim")
    );
    // The hooks take the state folder's lock in turn: the second one finds
    // the first one's claim.
    assert_blocked(
        loser.0,
        loser.1,
        "toolu_claim",
        &format!(
            "stream 'api' is held by another session (session {}",
            &winner_id[..8]
        ),
    );
}

#[test]
fn a_session_started_below_the_repo_root_has_no_hooks_and_claim_says_so() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let model = FakeModel::start(vec![
        bash_call("toolu_claim", "claim api"),
        Turn::text("done"),
    ]);

    let run = bed.session_in(&bed.repo.join("src"), &model, "S").run();

    // The client reads .claude/settings.json from the folder it starts in.
    run.assert_success();
    assert_eq!(
        hook_responses(&run).len(),
        0,
        "{}",
        run.describe("no hook runs for a session started in src/")
    );
    let r = result_of(&run, &model, "toolu_claim");
    assert!(
        r.is_error
            && r.content.starts_with("Exit code 6\n")
            && r.content
                .contains("the guard hook did not record the claim")
            && r.content.contains("started at the repo root"),
        "{}",
        explain(
            &run,
            &model,
            "claim tells the session its hook is not running"
        )
    );
    assert!(bed.lock("api").is_none(), "no lock was written");
}

#[test]
fn wait_milestone_heartbeats_the_waiters_lock_and_returns_on_release() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"], "pollSeconds": 1}));
    let hold = bed.gate("a-may-release");
    let model_a = FakeModel::start(vec![
        bash("claim api"),
        bash(&hold.wait_command()),
        bash_call("toolu_a_release", "release api"),
        Turn::text("released"),
    ]);
    let session_a = bed.session(&model_a, "A").spawn();
    hold.wait_reached();

    // B claims ui and waits for api in one long tool call.
    let wait = format!(
        "wait-milestone api --stream ui --timeout 40 --repo '{}'",
        bed.repo.path().display()
    );
    let model_b = FakeModel::start(vec![
        bash("claim ui"),
        bash_call("toolu_b_wait", &wait),
        Turn::text("api is there"),
    ]);
    let session_b = bed.session(&model_b, "B").spawn();
    // The wait runs, so its PreToolUse hook (a heartbeat too) is over.
    let repo_arg = bed.repo.path().to_string_lossy().into_owned();
    assert!(
        wait_until(WAIT, || !processes_with(&["wait-milestone", &repo_arg])
            .is_empty()),
        "B's wait-milestone started"
    );
    bed.age_heartbeat("ui", 10 * MINUTE_MS);
    let aged_at = time::now_ms();
    let mut seen = 0;
    let refreshed = wait_until(Duration::from_secs(10), || {
        seen = bed.heartbeat_ms("ui");
        seen + 5_000 >= aged_at
    });
    let b_still_waiting = model_b.requests().len() == 2;
    hold.open();
    let (a, b) = (session_a.wait(), session_b.wait());

    a.assert_success();
    b.assert_success();
    assert_guard_output(&a);
    assert_guard_output(&b);
    assert!(
        refreshed,
        "wait-milestone --stream ui moved B's heartbeat while it waited; it stayed at {} (aged at {})",
        time::iso(seen),
        time::iso(aged_at)
    );
    assert!(b_still_waiting, "B was inside its wait all along");
    assert_ran(&a, &model_a, "toolu_a_release");
    let waited = assert_ran(&b, &model_b, "toolu_b_wait");
    assert!(
        waited.content.contains("api is done"),
        "{}",
        explain(&b, &model_b, "the wait ended with api done")
    );
    assert!(bed.repo.exists("session-lock/api.done"));
}
