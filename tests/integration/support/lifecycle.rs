//! A temp git repo with plans, locks and a state home, and the real binaries run against it.
//! Shared by the selftest runner and the lifecycle/tools tests.
#![allow(dead_code)] // each test module uses a different part of it

use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Variables the caller's environment may carry that would change what the tools see.
const SCRUB: [&str; 8] = [
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_PID",
    "SESSION_LOCK_HOME",
    "SESSION_LOCK_LIVE_FILE",
    "SESSION_LOCK_GUARD_CRASH",
    "SESSION_LOCK_CLOCK_AHEAD_MS",
    "XDG_STATE_HOME",
];

/// Lists this `sh` as the session `$SL_TEST_SID`'s client in the suite's registry, then runs
/// the tool in its place (`exec` keeps the pid).
const CLIENT_SH: &str = r#"d="$SESSION_LOCK_HOME/sessions" && mkdir -p "$d" && printf '{"sessionId":"%s","cwd":"%s","pid":%s,"updatedAt":"2026-01-01T00:00:00.000Z"}' "$SL_TEST_SID" "$SL_TEST_CWD" "$$" > "$d/$SL_TEST_SID.json" && unset SL_TEST_SID SL_TEST_CWD && exec "$@""#;

/// The path of one of the suite's binaries.
pub fn bin(name: &str) -> &'static str {
    match name {
        "guard" => env!("CARGO_BIN_EXE_guard"),
        "claim" => env!("CARGO_BIN_EXE_claim"),
        "release" => env!("CARGO_BIN_EXE_release"),
        "status" => env!("CARGO_BIN_EXE_status"),
        "wait-milestone" => env!("CARGO_BIN_EXE_wait-milestone"),
        "build-renderer" => env!("CARGO_BIN_EXE_build-renderer"),
        "reload-plugin" => env!("CARGO_BIN_EXE_reload-plugin"),
        "run-agent" => env!("CARGO_BIN_EXE_run-agent"),
        "send-message" => env!("CARGO_BIN_EXE_send-message"),
        other => panic!("no binary {other}"),
    }
}

/// A session id that reads well in messages: `other` → `other000-0000-4000-8000-000000000000`
/// (short id `other000`).
pub fn sid(who: &str) -> String {
    format!("{who:0<8}-0000-4000-8000-000000000000")
}

/// A pid that belonged to a process which has exited.
pub fn dead_pid() -> u32 {
    static PID: OnceLock<u32> = OnceLock::new();
    *PID.get_or_init(|| {
        let mut c = Command::new("true").spawn().expect("spawn true");
        let pid = c.id();
        c.wait().expect("wait true");
        pid
    })
}

/// `5m`, `40s`, `2h`, `0s` → milliseconds.
pub fn parse_age(text: &str) -> Option<u64> {
    let (num, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: u64 = num.parse().ok()?;
    let mult = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    Some(n * mult)
}

/// A temp folder holding `repo/` (a git repo with one commit) and `home/` (SESSION_LOCK_HOME).
pub struct Repo {
    _tmp: tempfile::TempDir,
    pub base: PathBuf,
    pub root: PathBuf,
    pub home: PathBuf,
}

/// A git repo with one commit that every test copies (one `git init` per build, not per test).
/// It lives in cargo's temp folder for tests, built aside and renamed into place so parallel
/// runs never see half of it; bump the version when its content changes.
fn template() -> &'static Path {
    static TEMPLATE: OnceLock<PathBuf> = OnceLock::new();
    TEMPLATE.get_or_init(|| {
        let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let done = parent.join("lifecycle-template-v1");
        if done.join(".git").is_dir() {
            return done;
        }
        std::fs::create_dir_all(parent).expect("target tmp dir");
        let aside = tempfile::tempdir_in(parent).expect("template dir");
        let root = aside.path();
        std::fs::write(root.join("README.md"), "test repo\n").unwrap();
        git_in(root, &["init", "-q", "--template=", "-b", "main"]);
        git_in(root, &["add", "README.md"]);
        git_in(root, &["commit", "-q", "-m", "start"]);
        let built = aside.keep();
        if std::fs::rename(&built, &done).is_err() {
            // Another run put its template there first; use that one.
            let _ = std::fs::remove_dir_all(&built);
        }
        done
    })
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// Runs git in `dir` with a fixed identity and no signing; panics on failure.
pub fn git_in(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new("git")
        .args(["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Repo {
    /// A fresh copy of a template repo (one `git init` per test binary run).
    pub fn new() -> Repo {
        let tmp = tempfile::tempdir().expect("temp dir");
        let base = tmp.path().to_path_buf();
        let root = base.join("repo");
        copy_tree(template(), &root);
        let home = base.join("home");
        std::fs::create_dir_all(&home).unwrap();
        Repo {
            _tmp: tmp,
            base,
            root,
            home,
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.path(rel)).ok()
    }

    pub fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// `plans/r-ms-NN-<stream>/plan.md` owning `owns`.
    pub fn plan(&self, stream: &str, milestone: u32, owns: &[&str]) {
        let mut text = String::from("---\nowns:\n");
        for o in owns {
            text.push_str(&format!("  - \"{o}\"\n"));
        }
        text.push_str("---\n# plan\n");
        self.write(
            &format!("plans/r-ms-{milestone:02}-{stream}/plan.md"),
            &text,
        );
    }

    pub fn config(&self, v: &Value) {
        self.write("session-lock/config.json", &v.to_string());
    }

    pub fn git(&self, args: &[&str]) -> Output {
        git_in(&self.root, args)
    }

    /// `git add <paths> && git commit` (never `-A`: the state folder stays untracked).
    pub fn commit(&self, paths: &[&str], msg: &str) {
        let mut args = vec!["add", "--"];
        args.extend_from_slice(paths);
        self.git(&args);
        self.git(&["commit", "-q", "-m", msg]);
    }

    /// Writes a lock as the guard would, with the heartbeat `age_ms` in the past.
    pub fn lock(&self, stream: &str, who: &str, owns: &[&str], milestone: u32, age_ms: u64) {
        let at = session_lock::time::iso(session_lock::time::now_ms() - age_ms);
        let rec = json!({
            "stream": stream,
            "sessionId": sid(who),
            "owns": owns,
            "plan": format!("plans/r-ms-{milestone:02}-{stream}/plan.md"),
            "milestone": milestone,
            "claimedAt": at,
            "heartbeatAt": at,
            "round": 0,
            "cwd": self.root.to_string_lossy(),
        });
        self.write(
            &format!("session-lock/{stream}.lock"),
            &serde_json::to_string_pretty(&rec).unwrap(),
        );
    }

    /// Makes a lock name `pid` (with its start time) as its session's client process, as the
    /// guard records `CLAUDE_PID`.
    pub fn set_client(&self, stream: &str, pid: u32) {
        let mut lock = self.lock_json(stream).expect("no lock");
        lock["clientPid"] = json!(pid);
        lock["clientStart"] = json!(session_lock::liveness::start_time(pid));
        self.write(
            &format!("session-lock/{stream}.lock"),
            &serde_json::to_string_pretty(&lock).unwrap(),
        );
    }

    /// The parsed `<stream>.lock`, if any.
    pub fn lock_json(&self, stream: &str) -> Option<Value> {
        let text = self.read(&format!("session-lock/{stream}.lock"))?;
        serde_json::from_str(&text).ok()
    }

    /// A command for one of the suite's tools, run from the repo root with a clean environment:
    /// as a person at a terminal (no session's client process above it; Claude Code's registry
    /// pointed at an empty folder so a session running these tests is not seen).
    pub fn tool(&self, name: &str) -> Command {
        let mut c = Command::new(bin(name));
        self.clean_env(&mut c);
        c
    }

    /// `cmd` with the variables that would change what a tool sees removed, this repo's state
    /// home set, run from the repo root with stdin closed.
    pub fn scrubbed(&self, mut c: Command) -> Command {
        self.clean_env(&mut c);
        c
    }

    fn clean_env(&self, c: &mut Command) {
        for v in SCRUB {
            c.env_remove(v);
        }
        c.env("SESSION_LOCK_HOME", &self.home)
            .env("CLAUDE_CONFIG_DIR", self.home.join("claude"))
            .current_dir(&self.root)
            .stdin(Stdio::null());
    }

    /// A tool run by session `who`, as from its Bash tool: below `who`'s client process. A
    /// `sh` plays the client (listed in the suite's session registry by its pid, the way the
    /// guard lists a session) and then becomes the tool. `CLAUDE_CODE_SESSION_ID` is set too,
    /// as the client sets it, though no tool trusts it.
    pub fn tool_as(&self, name: &str, who: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(CLIENT_SH).arg("sh").arg(bin(name));
        self.clean_env(&mut c);
        c.env("CLAUDE_CODE_SESSION_ID", sid(who))
            .env("SL_TEST_SID", sid(who))
            .env("SL_TEST_CWD", &self.root);
        c
    }

    /// Runs a tool to the end and returns (exit code, stdout, stderr).
    pub fn run(&self, mut cmd: Command) -> (i32, String, String) {
        let out = cmd.output().expect("run tool");
        (
            out.status.code().unwrap_or(-1),
            text(&out.stdout),
            text(&out.stderr),
        )
    }

    /// Session `who` claims `stream` the way a session does: the guard sees `claim <stream>`.
    /// Panics unless the guard allowed it and recorded the lock.
    pub fn claim(&self, who: &str, stream: &str) {
        let out = self.bash(who, &format!("claim {stream}"));
        assert_eq!(
            verdict(&out),
            Ok(Verdict::Allow),
            "claim {stream} by {who}: {}",
            text(&out.stderr)
        );
        let lock = self.lock_json(stream).expect("the guard wrote no lock");
        assert_eq!(lock["sessionId"], sid(who));
    }

    /// Moves a lock's heartbeat `age_ms` into the past (as if its session had gone quiet).
    pub fn age_lock(&self, stream: &str, age_ms: u64) {
        let mut lock = self.lock_json(stream).expect("no lock to age");
        lock["heartbeatAt"] = json!(session_lock::time::iso(
            session_lock::time::now_ms() - age_ms
        ));
        self.write(
            &format!("session-lock/{stream}.lock"),
            &serde_json::to_string_pretty(&lock).unwrap(),
        );
    }

    /// The heartbeat of a lock, in ms since the epoch.
    pub fn heartbeat_ms(&self, stream: &str) -> Option<u64> {
        let lock = self.lock_json(stream)?;
        session_lock::time::parse_iso(lock["heartbeatAt"].as_str()?)
    }

    /// The guard as a hook: `payload` on stdin.
    pub fn guard(&self, payload: &Value) -> Output {
        run_with_stdin(self.tool("guard"), payload.to_string().as_bytes())
    }

    /// A PreToolUse payload of `session` for `tool` with `input`, cwd the repo root.
    pub fn payload(&self, who: &str, tool: &str, input: Value) -> Value {
        json!({
            "session_id": sid(who),
            "transcript_path": self.base.join("t.jsonl").to_string_lossy(),
            "cwd": self.root.to_string_lossy(),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": input,
            "tool_use_id": "toolu_test",
        })
    }

    /// The guard seeing `who` run `command` with the Bash tool.
    pub fn bash(&self, who: &str, command: &str) -> Output {
        self.guard(&self.payload(who, "Bash", json!({"command": command})))
    }

    /// The guard seeing `who` Edit the repo file `rel`.
    pub fn edit(&self, who: &str, rel: &str) -> Output {
        let path = self.path(rel);
        self.guard(&self.payload(
            who,
            "Edit",
            json!({"file_path": path.to_string_lossy(), "old_string": "a", "new_string": "b", "replace_all": false}),
        ))
    }
}

/// Runs `cmd` with `input` on stdin and collects its output.
pub fn run_with_stdin(mut cmd: Command, input: &[u8]) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(input);
    }
    child.wait_with_output().expect("wait")
}

/// What the guard decided, read strictly from its output in the JSON decision form.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Block(String),
}

/// Reads a guard run: exit 0 and empty stdout is an allow; exit 0 and exactly one JSON deny
/// document is a block. Anything else is an error describing the output.
pub fn verdict(out: &Output) -> Result<Verdict, String> {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => {}
        other => {
            return Err(format!(
                "guard exited {other:?}; stdout {stdout:?}; stderr {stderr:?}"
            ));
        }
    }
    if stdout.is_empty() {
        return Ok(Verdict::Allow);
    }
    let mut docs = serde_json::Deserializer::from_str(&stdout).into_iter::<Value>();
    let first = match docs.next() {
        Some(Ok(v)) => v,
        _ => return Err(format!("stdout is not one JSON document: {stdout:?}")),
    };
    if docs.next().is_some() {
        return Err(format!(
            "stdout holds more than one JSON document: {stdout:?}"
        ));
    }
    let hso = &first["hookSpecificOutput"];
    // A notice for the user (and context for the model) with no decision: an allow.
    if hso.get("permissionDecision").is_none() && first.get("systemMessage").is_some() {
        return Ok(Verdict::Allow);
    }
    if hso["hookEventName"] != "PreToolUse" || hso["permissionDecision"] != "deny" {
        return Err(format!("stdout is not a PreToolUse deny: {stdout}"));
    }
    match hso["permissionDecisionReason"].as_str() {
        Some(r) if !r.is_empty() => Ok(Verdict::Block(r.to_string())),
        _ => Err(format!("deny without a reason: {stdout}")),
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

/// Waits for `child` at most `limit`; kills it and panics when it does not finish.
pub fn wait_within(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        match child.try_wait().expect("try_wait") {
            Some(_) => return child.wait_with_output().expect("output"),
            None if start.elapsed() > limit => {
                let _ = child.kill();
                let out = child.wait_with_output().expect("output");
                panic!(
                    "still running after {limit:?}; stdout {:?}; stderr {:?}",
                    text(&out.stdout),
                    text(&out.stderr)
                );
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

pub use super::poll::until as eventually;

/// Every `selftest/<folder>/*.case` file, sorted: its display name (`selftest/<folder>/x.case`)
/// and its text. Both corpus runners read their cases through this.
pub fn case_files(folder: &str) -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("selftest")
        .join(folder);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "case"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|f| {
            let name = format!(
                "selftest/{folder}/{}",
                f.file_name().unwrap_or_default().to_string_lossy()
            );
            let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{name}: {e}"));
            (name, text)
        })
        .collect()
}
