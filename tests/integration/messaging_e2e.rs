//! `send-message` between REAL Claude Code sessions (the pinned CLI against the fake model).
//! The sessions share one HOME, so they see each other's registry entries and sockets.

use crate::support::claude::{Claude, Home, Session, SessionBuilder, require_claude};
use crate::support::fake_model::{FakeModel, MessagesRequest, Turn};
use crate::support::messaging::read_jsonl;
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

    /// The marker that ends B's slow tool call.
    fn release(&self) -> PathBuf {
        self.state().join("release-b")
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

/// B's first turn: a Bash call that runs until the test creates `release` (at most 60 s), so
/// a message arrives while it runs.
fn b_slow_turn(release: &Path) -> Turn {
    let cmd = format!(
        "for i in $(seq 600); do [ -e '{}' ] && break; sleep 0.1; done; echo slept",
        release.display()
    );
    Turn::tool_use("Bash", json!({"command": cmd, "description": "slow"})).when("B-PROMPT")
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

pub(crate) use crate::support::poll::expect as wait_for;

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
    let mut turns = vec![b_slow_turn(&w.release()), b_done_turn()];
    turns.extend(a_send_turns("worker-b", "hello from A"));
    let model = FakeModel::start(turns);
    let b = w.session(&claude, &model, "B-PROMPT", "worker-b").spawn();
    wait_b_busy(&w, &model);
    let a = w.session(&claude, &model, "A-PROMPT", "alpha").spawn();
    let a_id = a_send_result(&model);
    // B is mid-tool: its client took the message; its model has not seen it.
    assert_eq!(a_id["status"], "accepted", "{a_id}");
    std::fs::write(w.release(), "").unwrap();
    finish(a);
    finish(b);
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
    // Anyone's next command confirms it from B's transcript: A's ledger says delivered.
    let out = w
        .terminal(&model, claude.bin())
        .args(["--json", "list"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let ops: Vec<String> = w
        .session_outbox()
        .iter()
        .filter(|l| l["messageId"] == id)
        .map(|l| l["op"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ops[..3], ["queued", "sent", "taken"], "{ops:?}");
    assert_eq!(ops.last().map(String::as_str), Some("delivered"), "{ops:?}");
}

#[test]
fn a_prompting_sender_is_never_reported_delivered_to_a_bypass_session() {
    let claude = require_claude!();
    let w = World::new();
    let mut turns = vec![b_slow_turn(&w.release()), b_done_turn()];
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
    std::fs::write(w.release(), "").unwrap();
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
        .args([
            "--json",
            "send",
            "--wait=90",
            "--to",
            "worker-b",
            "first sender",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The second sender comes while the woken run is up.
    wait_for("the woken B", Duration::from_secs(60), || {
        registered(&w.home, "worker-b")
    });
    let two = w
        .terminal(&model, claude.bin())
        .args([
            "--json",
            "send",
            "--wait=90",
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
    for r in [&r1, &r2] {
        assert!(
            r["state"] == "delivered" || r["status"] == "delivered",
            "{r}"
        );
    }
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
    let id1 = r1["message_id"].as_str().unwrap();
    assert!(text.contains(id1));
    // The first message rode the wake: the second sender's look did not write it to the woken
    // B's socket as well, so B's model was given it once.
    let vias: Vec<Value> = w
        .outbox("terminal")
        .into_iter()
        .filter(|l| l["messageId"] == id1 && l["op"] == "sent")
        .map(|l| l["via"].clone())
        .collect();
    assert_eq!(vias, [json!("wake")], "written once, by the wake");
    let user_turns = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["type"] == "user" && l.to_string().contains(id1))
        .count();
    assert_eq!(user_turns, 1, "B's model was given it once");
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
        b_slow_turn(&w.release()),
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
    std::fs::write(w.release(), "").unwrap();
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
    let mut s = Value::Null;
    wait_for(
        "the held message to expire",
        Duration::from_secs(20),
        || {
            let out = w
                .terminal(&model, claude.bin())
                .args(["--json", "status", v["message_id"].as_str().unwrap()])
                .output()
                .unwrap();
            s = serde_json::from_slice(&out.stdout).unwrap();
            s["state"] == "expired"
        },
    );
    assert_eq!(s["state"], "expired", "{s}");
}

/// Polls the outbox of `sender` until message `id` has a line of `op` (or `limit` passes).
fn wait_op(w: &World, sender: &str, id: &str, op: &str, limit: Duration) -> Vec<Value> {
    let mut lines = Vec::new();
    let ok = crate::support::lifecycle::eventually(limit, || {
        lines = w.outbox(sender);
        lines.iter().any(|l| l["messageId"] == id && l["op"] == op)
    });
    assert!(ok, "{id} never got '{op}': {lines:?}");
    lines
}

/// A cold B: one finished run, so a transcript to resume. Returns its session id.
fn cold_b(w: &World, claude: &Claude, model: &FakeModel) -> String {
    let first = w.session(claude, model, "B-PROMPT", "worker-b").run();
    first.assert_success();
    assert!(!registered(&w.home, "worker-b"), "B is not running");
    first.session_id().unwrap().to_string()
}

#[test]
fn issue13_bypass_sessions_reach_each_other_without_the_hook_after_a_long_turn() {
    let claude = require_claude!();
    let w = World::new();
    // A first fills its transcript (a long tool output, a model request), then sends.
    let mut turns = vec![b_slow_turn(&w.release()), b_done_turn()];
    turns.push(
        Turn::tool_use(
            "Bash",
            json!({"command": "seq 1 40000", "description": "long output"}),
        )
        .when("A-PROMPT"),
    );
    turns.extend(a_send_turns("worker-b", "bypass to bypass"));
    let model = FakeModel::start(turns);
    let b = w.session(&claude, &model, "B-PROMPT", "worker-b").spawn();
    wait_b_busy(&w, &model);
    let a = w.session(&claude, &model, "A-PROMPT", "alpha").spawn();
    // A's third request follows the send's tool result.
    wait_for("A's send", Duration::from_secs(60), || {
        conversation(&model, "A-PROMPT").len() >= 3
    });
    let r = send_result(&model, "A-PROMPT");
    std::fs::write(w.release(), "").unwrap();
    finish(a);
    finish(b);
    // No hook installed: the mode comes from A's transcript, however far back it is.
    let a_id = w
        .outbox_ids()
        .into_iter()
        .find(|s| s != "terminal")
        .unwrap();
    let t = std::fs::read_to_string(w.home.transcript(w.repo.path(), &a_id)).unwrap();
    let mode_at = t.rfind("\"permissionMode\"").unwrap();
    assert!(
        t.len() - mode_at > 128 * 1024,
        "the mode line is more than 128 KiB back ({} bytes)",
        t.len() - mode_at
    );
    assert_eq!(r["status"], "accepted", "{r}");
    let id = r["message_id"].as_str().unwrap();
    let after: Vec<String> = conversation(&model, "B-PROMPT")
        .iter()
        .skip(1)
        .map(everything)
        .collect();
    assert!(
        after
            .iter()
            .any(|t| t.contains(id) && t.contains("from-mode=\"bypass\"")),
        "B's model never saw it"
    );
}

#[test]
fn issue13_a_message_accepted_by_a_target_that_stopped_is_delivered_at_its_next_run() {
    let claude = require_claude!();
    let w = World::new();
    let mut turns = vec![
        b_slow_turn(&w.release()),
        // B's next request (the message in its input) is never answered: B stops first.
        Turn::text("too late")
            .when("B-PROMPT")
            .delay(Duration::from_secs(30)),
    ];
    turns.extend(a_send_turns("worker-b", "do not lose me"));
    // B's resumed run, woken for the message.
    turns.push(Turn::text("got it").when("B-PROMPT").repeat(3));
    let model = FakeModel::start(turns);
    let b = w.session(&claude, &model, "B-PROMPT", "worker-b").spawn();
    wait_b_busy(&w, &model);
    let a = w.session(&claude, &model, "A-PROMPT", "alpha").spawn();
    let r = a_send_result(&model);
    finish(a);
    assert_eq!(r["status"], "accepted", "{r}");
    let id = r["message_id"].as_str().unwrap().to_string();
    std::fs::write(w.release(), "").unwrap();
    wait_for(
        "B's request with the message",
        Duration::from_secs(60),
        || conversation(&model, "B-PROMPT").len() >= 2,
    );
    let before = conversation(&model, "B-PROMPT").len();
    // B stops before its model answers: the message was never seen.
    b.terminate().unwrap();
    let _ = b.wait_timeout(Duration::from_secs(30));
    // The next command of anyone sees it was never seen, queues it again and wakes B.
    let out = w
        .terminal(&model, claude.bin())
        .args(["--json", "list"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let sender = w
        .outbox_ids()
        .into_iter()
        .find(|s| s != "terminal")
        .unwrap();
    // Woken again (B and A both bypass: the woken run declares the class on stdin, or B's
    // client would hold the message), the resumed turn's model gets it: delivered.
    let lines = wait_op(&w, &sender, &id, "delivered", Duration::from_secs(90));
    let ops: Vec<&str> = lines
        .iter()
        .filter(|l| l["messageId"] == id.as_str())
        .map(|l| l["op"].as_str().unwrap())
        .collect();
    assert_eq!(
        ops,
        ["queued", "sent", "taken", "returned", "sent", "delivered"],
        "{lines:?}"
    );
    let delivered = lines
        .iter()
        .find(|l| l["messageId"] == id.as_str() && l["op"] == "delivered")
        .unwrap();
    assert_eq!(delivered["via"], "wake", "{delivered}");
    let woken: Vec<Value> = conversation(&model, "B-PROMPT")
        .into_iter()
        .skip(before)
        .collect();
    assert!(
        woken.iter().any(|q| everything(q).contains(&id)),
        "delivered only once the woken B's model got it"
    );
}

#[test]
fn issue13_a_wake_against_a_failing_model_stays_queued_and_create_fails() {
    let claude = require_claude!();
    let w = World::new();
    let model = FakeModel::start(vec![
        Turn::text("B first turn").when("B-PROMPT"),
        Turn::error(500, "the model is down").repeat(20),
    ]);
    cold_b(&w, &claude, &model);
    let out = w
        .terminal(&model, claude.bin())
        .args(["--json", "send", "--to", "worker-b", "are you up"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), v["status"].as_str()),
        (Some(0), Some("waking")),
        "{v}"
    );
    let id = v["message_id"].as_str().unwrap();
    let lines = wait_op(&w, "terminal", id, "unsent", Duration::from_secs(90));
    assert!(
        !lines
            .iter()
            .any(|l| l["messageId"] == id && l["op"] == "delivered"),
        "{lines:?}"
    );
    let out = w
        .terminal(&model, claude.bin())
        .args(["--json", "status", id])
        .output()
        .unwrap();
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(s["state"], "queued", "{s}");
    // create against the same failing model: failed, exit 1, the session id kept.
    let out = w
        .terminal(&model, claude.bin())
        .args(["--json", "create", "--cwd"])
        .arg(w.repo.path())
        .arg("start something")
        .output()
        .unwrap();
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), c["status"].as_str()),
        (Some(1), Some("failed")),
        "{c}"
    );
}

#[test]
fn issue13_three_large_pending_messages_ride_one_wake_on_stdin() {
    let claude = require_claude!();
    let w = World::new();
    let model = FakeModel::start(vec![
        Turn::text("B first turn").when("B-PROMPT"),
        Turn::text("read them all").when("B-PROMPT").repeat(5),
    ]);
    cold_b(&w, &claude, &model);
    w.repo.write(
        "session-lock/config.json",
        &json!({"messaging": {"allowColdWake": false}}).to_string(),
    );
    let mut ids = Vec::new();
    for i in 0..3 {
        let text = format!("{i}{}", "x".repeat(65_000));
        let out = w
            .terminal(&model, claude.bin())
            .args(["--json", "send", "--to", "worker-b", &text])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["status"], "queued", "{v}");
        ids.push(v["message_id"].as_str().unwrap().to_string());
    }
    w.repo.write("session-lock/config.json", "{}");
    let out = w
        .terminal(&model, claude.bin())
        .args([
            "--json",
            "send",
            "--wait=120",
            "--to",
            "worker-b",
            "and this one",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (out.status.code(), v["state"].as_str()),
        (Some(0), Some("delivered")),
        "{v}"
    );
    let all: String = conversation(&model, "B-PROMPT")
        .iter()
        .map(everything)
        .collect();
    for id in &ids {
        assert!(all.contains(id.as_str()), "{id} never reached B's model");
        let s: Value = serde_json::from_slice(
            &w.terminal(&model, claude.bin())
                .args(["--json", "status", id])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        assert_eq!(s["state"], "delivered", "{s}");
    }
}

#[test]
fn issue13_a_send_to_a_cold_target_returns_at_once_while_the_woken_turn_runs() {
    let claude = require_claude!();
    let w = World::new();
    let model = FakeModel::start(vec![
        Turn::text("B first turn").when("B-PROMPT"),
        Turn::text("slow answer")
            .when("B-PROMPT")
            .delay(Duration::from_secs(6)),
        Turn::text("again").when("B-PROMPT").repeat(3),
    ]);
    cold_b(&w, &claude, &model);
    let started = Instant::now();
    let out = w
        .terminal(&model, claude.bin())
        .args(["--json", "send", "--to", "worker-b", "no need to wait"])
        .output()
        .unwrap();
    let took = started.elapsed();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "waking", "{v}");
    assert!(took < Duration::from_secs(1), "send took {took:?}");
    let id = v["message_id"].as_str().unwrap();
    // --wait follows it to delivered, with progress on stderr.
    let out = w
        .terminal(&model, claude.bin())
        .args([
            "--json",
            "send",
            "--wait=90",
            "--to",
            "worker-b",
            "and wait for this",
        ])
        .output()
        .unwrap();
    let s: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        s["state"] == "delivered" || s["status"] == "delivered",
        "{s}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("send-message:"),
        "progress on stderr"
    );
    wait_op(&w, "terminal", id, "delivered", Duration::from_secs(60));
}

/// How many times `Session message <id> from` is in one request (its whole history).
fn times_in(req: &Value, id: &str) -> usize {
    everything(req)
        .matches(&format!("Session message {id} from"))
        .count()
}

#[test]
fn issue_29_ten_senders_at_once_reach_a_busy_session_once_each() {
    let claude = require_claude!();
    let w = World::new();
    let model = FakeModel::start(vec![
        b_slow_turn(&w.release()),
        Turn::text("B done").when("B-PROMPT").repeat(30),
    ]);
    // B prompts for permissions, as the terminal senders do: its client takes their messages.
    let b = w
        .session(&claude, &model, "B-PROMPT", "worker-b")
        .permission_mode(Some("default"))
        .args(["--allowedTools", "Bash"])
        .spawn();
    wait_b_busy(&w, &model);
    // Ten senders at once, each its own process, while B is in its slow tool call: each one's
    // look at what waits for B sees the others' messages half-way through their sends.
    let senders: Vec<_> = (0..10)
        .map(|i| {
            w.terminal(&model, claude.bin())
                .args(["--json", "send", "--to", "worker-b"])
                .arg(format!("message number {i} of ten"))
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let answers: Vec<Value> = senders
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "{out:?}");
            serde_json::from_slice(&out.stdout).unwrap()
        })
        .collect();
    let ids: Vec<String> = answers
        .iter()
        .map(|a| a["message_id"].as_str().unwrap().to_string())
        .collect();
    std::fs::write(w.release(), "").unwrap();
    // Each was taken into B's queue; B's next request (its last) holds the whole history.
    for a in &answers {
        assert_eq!(a["status"], "accepted", "{a}");
    }
    finish(b);
    let last = conversation(&model, "B-PROMPT").pop().unwrap();
    let twice: Vec<(&String, usize)> = ids
        .iter()
        .map(|id| (id, times_in(&last, id)))
        .filter(|(_, n)| *n != 1)
        .collect();
    assert!(
        twice.is_empty(),
        "messages B's model was given other than once (id, times): {twice:?}; answers {answers:?}"
    );
    // And each was written to B once.
    let outbox = w.outbox("terminal");
    for id in &ids {
        let sent = outbox
            .iter()
            .filter(|l| l["messageId"] == id.as_str() && l["op"] == "sent")
            .count();
        assert_eq!(sent, 1, "{id} written {sent} times");
    }
}
