//! `send-message` between REAL Claude Code sessions (the pinned CLI against the fake model).
//! The sessions share one HOME, so they see each other's registry entries and sockets.

use crate::messaging_common::read_jsonl;
use crate::support::claude::{Claude, Home, Session, SessionBuilder, require_claude};
use crate::support::fake_model::{FakeModel, MessagesRequest, Turn};
use crate::support::repo::GitRepo;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_send-message");
const GUARD: &str = env!("CARGO_BIN_EXE_guard");

pub(crate) struct World {
    pub(crate) home: Home,
    state: tempfile::TempDir,
    pub(crate) repo: GitRepo,
}

impl World {
    pub(crate) fn new() -> World {
        World {
            home: Home::new(),
            state: tempfile::tempdir().unwrap(),
            repo: GitRepo::new(),
        }
    }

    pub(crate) fn state(&self) -> &Path {
        self.state.path()
    }

    /// Flag settings wiring the guard as the hook (the suite's hook route and notices).
    fn settings(&self) -> PathBuf {
        let hook = json!([{"matcher": "*", "hooks": [{"type": "command", "command": GUARD, "timeout": 10}]}]);
        let path = self.state().join("settings.json");
        std::fs::write(
            &path,
            json!({"hooks": {"PostToolUse": hook, "UserPromptSubmit": hook, "SessionStart": hook}})
                .to_string(),
        )
        .unwrap();
        path
    }

    /// A session of `claude` in the shared HOME and state, named `name`, prompted with `prompt`.
    pub(crate) fn session(
        &self,
        claude: &Claude,
        model: &FakeModel,
        prompt: &str,
        name: &str,
    ) -> SessionBuilder {
        claude
            .session(self.repo.path(), model, prompt)
            .home(&self.home)
            .name(name)
            .env("SESSION_LOCK_HOME", self.state())
    }

    pub(crate) fn outbox_ids(&self) -> Vec<String> {
        std::fs::read_dir(self.state().join("messaging/outbox"))
            .map(|d| {
                d.flatten()
                    .filter_map(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .strip_suffix(".jsonl")
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The outbox of the one sender that is not the terminal.
    fn session_outbox(&self) -> Vec<Value> {
        let sender = self
            .outbox_ids()
            .into_iter()
            .find(|s| s != "terminal")
            .expect("a session's outbox");
        self.outbox(&sender)
    }

    pub(crate) fn outbox(&self, id: &str) -> Vec<Value> {
        read_jsonl(
            &self
                .state()
                .join("messaging/outbox")
                .join(format!("{id}.jsonl")),
        )
    }

    /// `send-message` run by the test (a person at a terminal in the repo).
    fn terminal(&self, model: &FakeModel, claude_bin: &Path) -> Command {
        let mut c = Command::new(BIN);
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().to_string();
            if k.starts_with("CLAUDE") || k.starts_with("ANTHROPIC_") || k.starts_with("XDG_") {
                c.env_remove(&k);
            }
        }
        c.env("HOME", self.home.path())
            .env("SESSION_LOCK_HOME", self.state())
            .env("SESSION_LOCK_CLAUDE_BIN", claude_bin)
            .env("ANTHROPIC_BASE_URL", model.base_url())
            .env("ANTHROPIC_API_KEY", "dummy")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("CLAUDE_CODE_MAX_RETRIES", "0")
            .env("IS_SANDBOX", "1")
            .current_dir(self.repo.path())
            .stdin(Stdio::null());
        c
    }
}

/// The command line a session's Bash runs to send.
fn send_cmd(to: &str, text: &str) -> String {
    format!("{BIN} --json send --to {to} '{text}'")
}

/// B's first turn: a Bash call slow enough for a message to arrive while it runs.
fn b_slow_turn() -> Turn {
    Turn::tool_use(
        "Bash",
        json!({"command": "sleep 6; echo slept", "description": "slow"}),
    )
    .when("B-PROMPT")
}

fn b_done_turn() -> Turn {
    Turn::text("B done").when("B-PROMPT").repeat(3)
}

/// A's turns: one send to `to`, then done.
fn a_send_turns(to: &str, text: &str) -> [Turn; 2] {
    [
        Turn::tool_use(
            "Bash",
            json!({"command": send_cmd(to, text), "description": "send"}),
        )
        .when("A-PROMPT"),
        Turn::text("A done").when("A-PROMPT").repeat(3),
    ]
}

/// Waits until worker-b is registered and in its first (slow) tool call.
fn wait_b_busy(w: &World, model: &FakeModel) {
    wait_for("B in its slow tool call", Duration::from_secs(30), || {
        registered(&w.home, "worker-b") && !conversation(model, "B-PROMPT").is_empty()
    });
}

/// Waits until A's send came back and returns its JSON result.
fn a_send_result(model: &FakeModel) -> Value {
    wait_for("A's send", Duration::from_secs(40), || {
        conversation(model, "A-PROMPT").len() >= 2
    });
    send_result(model, "A-PROMPT")
}

pub(crate) fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !f() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub(crate) fn registered(home: &Home, name: &str) -> bool {
    std::fs::read_dir(home.sessions_dir())
        .map(|d| {
            d.flatten().any(|e| {
                std::fs::read_to_string(e.path())
                    .is_ok_and(|t| t.contains(&format!("\"name\":\"{name}\"")))
            })
        })
        .unwrap_or(false)
}

/// Every model request (body) of the conversation that began with `marker`.
pub(crate) fn conversation(model: &FakeModel, marker: &str) -> Vec<Value> {
    model
        .requests()
        .into_iter()
        .filter(|r| r.first_user_text().contains(marker))
        .collect()
}

pub(crate) fn everything(r: &Value) -> String {
    let mut s = r.system_messages().join("\n");
    s.push('\n');
    s.push_str(&r.user_texts().join("\n"));
    for t in r.tool_results() {
        s.push('\n');
        s.push_str(&t.content);
    }
    s
}

fn send_result(model: &FakeModel, marker: &str) -> Value {
    let tr = conversation(model, marker)
        .last()
        .map(|r| r.tool_results())
        .unwrap_or_default();
    let text = tr.last().map(|t| t.content.clone()).unwrap_or_default();
    text.lines()
        .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
        .unwrap_or_else(|| panic!("no JSON in the send's tool result: {text}"))
}

fn finish(s: Session) {
    let f = s.wait_timeout(Duration::from_secs(60));
    f.assert_success();
}

#[test]
fn a_message_reaches_a_busy_session_at_its_next_request() {
    let claude = require_claude!();
    let w = World::new();
    let mut turns = vec![b_slow_turn(), b_done_turn()];
    turns.extend(a_send_turns("worker-b", "hello from A"));
    let model = FakeModel::start(turns);
    let b = w.session(&claude, &model, "B-PROMPT", "worker-b").spawn();
    wait_b_busy(&w, &model);
    std::thread::sleep(Duration::from_millis(500));
    let a = w.session(&claude, &model, "A-PROMPT", "alpha").spawn();
    let a_id = a_send_result(&model);
    finish(a);
    finish(b);
    assert_eq!(a_id["status"], "delivered", "{a_id}");
    let id = a_id["message_id"].as_str().unwrap();
    // B's next request (after the slow tool) holds the framed message.
    let b_reqs = conversation(&model, "B-PROMPT");
    let after: Vec<String> = b_reqs.iter().skip(1).map(everything).collect();
    let framed = format!("Session message {id} from alpha (");
    assert!(
        after.iter().any(|t| t.contains(&framed)),
        "B never saw it: {after:?}"
    );
    assert!(
        after
            .iter()
            .any(|t| t.contains("<cross-session-message") && t.contains("from-mode=\"bypass\"")),
        "{after:?}"
    );
    // A's ledger says delivered.
    let ops: Vec<String> = w
        .session_outbox()
        .iter()
        .filter(|l| l["messageId"] == id)
        .map(|l| l["op"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ops, vec!["queued", "sent", "delivered"]);
}

#[test]
fn a_prompting_sender_is_never_reported_delivered_to_a_bypass_session() {
    let claude = require_claude!();
    let w = World::new();
    let mut turns = vec![b_slow_turn(), b_done_turn()];
    turns.extend(a_send_turns("worker-b", "do it for me"));
    let model = FakeModel::start(turns);
    let b = w.session(&claude, &model, "B-PROMPT", "worker-b").spawn();
    wait_b_busy(&w, &model);
    let a = w
        .session(&claude, &model, "A-PROMPT", "alpha")
        .permission_mode(Some("default"))
        .args(["--allowedTools", "Bash"])
        .spawn();
    let r = a_send_result(&model);
    finish(a);
    finish(b);
    assert_eq!(r["status"], "held", "{r}");
    let detail = r["detail"].as_str().unwrap();
    assert!(
        detail.contains("bypassPermissions") && detail.contains("prompting"),
        "{detail}"
    );
    let id = r["message_id"].as_str().unwrap();
    for req in conversation(&model, "B-PROMPT") {
        assert!(!everything(&req).contains(id), "a held message reached B");
    }
    for s in w.outbox_ids() {
        assert!(
            !w.outbox(&s)
                .iter()
                .any(|l| l["messageId"] == id && l["op"] == "delivered")
        );
    }
}

#[test]
fn a_cold_session_is_woken_by_resume_once_for_two_senders() {
    let claude = require_claude!();
    let w = World::new();
    let model = FakeModel::start(vec![
        Turn::text("B first turn").when("B-PROMPT"),
        // The resumed run: slow enough that a second sender finds it running.
        Turn::text("woken")
            .when("B-PROMPT")
            .delay(Duration::from_secs(4)),
        Turn::text("again").when("B-PROMPT").repeat(5),
    ]);
    // A project hook that records every session start (startup, resume).
    let starts = w.state().join("starts.jsonl");
    let record = format!("sh -c 'cat >> {0}; echo >> {0}'", starts.display());
    w.repo.write_claude_settings(&json!({"hooks": {"SessionStart": [{"matcher": "*", "hooks": [{"type": "command", "command": record}]}]}}));
    let first = w.session(&claude, &model, "B-PROMPT", "worker-b").run();
    first.assert_success();
    let b_id = first.session_id().unwrap().to_string();
    assert!(
        std::fs::read_to_string(&starts)
            .unwrap_or_default()
            .contains("\"source\":\"startup\"")
    );
    assert!(!registered(&w.home, "worker-b"), "B is not running");
    let one = w
        .terminal(&model, claude.bin())
        .args(["--json", "send", "--to", "worker-b", "first sender"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let two = w
        .terminal(&model, claude.bin())
        .args([
            "--json",
            "send",
            "--to",
            "worker-b",
            "second sender",
            "--no-dedupe",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let r1: Value = serde_json::from_slice(&one.wait_with_output().unwrap().stdout).unwrap();
    let r2: Value = serde_json::from_slice(&two.wait_with_output().unwrap().stdout).unwrap();
    assert_eq!(r1["status"], "delivered", "{r1}");
    assert_eq!(r2["status"], "delivered", "{r2}");
    let reqs = conversation(&model, "B-PROMPT");
    // Every start of B ran the project's SessionStart hook: one startup, one resume.
    let starts = std::fs::read_to_string(&starts).unwrap_or_default();
    let resumes = starts.matches("\"source\":\"resume\"").count();
    assert_eq!(resumes, 1, "one resume for two senders: {starts}");
    let all: String = reqs.iter().map(everything).collect();
    for r in [&r1, &r2] {
        assert!(
            all.contains(r["message_id"].as_str().unwrap()),
            "{r} never reached B"
        );
    }
    let transcript = w.home.transcript(w.repo.path(), &b_id);
    let text = std::fs::read_to_string(transcript).unwrap();
    assert!(text.contains(r1["message_id"].as_str().unwrap()));
}

#[test]
fn hold_review_accept_delivers_and_an_unreviewed_one_expires() {
    let claude = require_claude!();
    let w = World::new();
    w.repo.write(
        "session-lock/config.json",
        &json!({"messaging": {"inbound": "hold", "holdExpirySeconds": 20}}).to_string(),
    );
    let accept = format!(
        "ID=$({BIN} --json review | python3 -c 'import sys,json; print(json.load(sys.stdin)[\"held\"][0][\"message_id\"])'); {BIN} review --accept $ID"
    );
    let mut turns = vec![
        b_slow_turn(),
        Turn::tool_use("Bash", json!({"command": accept, "description": "review"}))
            .when("B-PROMPT"),
        b_done_turn(),
    ];
    turns.extend(a_send_turns("worker-b", "please review me"));
    let model = FakeModel::start(turns);
    let b = w
        .session(&claude, &model, "B-PROMPT", "worker-b")
        .settings_file(w.settings())
        .spawn();
    wait_b_busy(&w, &model);
    let a = w.session(&claude, &model, "A-PROMPT", "alpha").spawn();
    let r = a_send_result(&model);
    finish(a);
    finish(b);
    assert_eq!(r["status"], "held", "{r}");
    let id = r["message_id"].as_str().unwrap();
    let b_reqs = conversation(&model, "B-PROMPT");
    // B was told at its next tool call, then accepted: the text is in its context.
    let seen: Vec<String> = b_reqs.iter().map(everything).collect();
    assert!(
        seen.iter().any(|t| t.contains("waits for your review")),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|t| t.contains(&format!("Session message {id} from alpha"))
                && t.contains("please review me")),
        "{seen:?}"
    );
    let status = w
        .terminal(&model, claude.bin())
        .args(["--json", "status", id])
        .output()
        .unwrap();
    // The terminal did not send it: not its message.
    assert_eq!(status.status.code(), Some(6));
    assert!(
        w.session_outbox()
            .iter()
            .any(|l| l["messageId"] == id && l["op"] == "delivered")
    );
    // An unreviewed one expires.
    w.repo.write(
        "session-lock/config.json",
        &json!({"messaging": {"inbound": "hold", "holdExpirySeconds": 1}}).to_string(),
    );
    let out = w
        .terminal(&model, claude.bin())
        .args(["--json", "send", "--to", "worker-b", "nobody reads this"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "held", "{v}");
    std::thread::sleep(Duration::from_millis(1500));
    let out = w
        .terminal(&model, claude.bin())
        .args(["--json", "status", v["message_id"].as_str().unwrap()])
        .output()
        .unwrap();
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["state"], "expired", "{s}");
}
