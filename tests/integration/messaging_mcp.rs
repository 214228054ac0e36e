//! The messaging tools over MCP (`send-message mcp`) between REAL Claude Code sessions against
//! the fake model: the repo is wired by `guard install` (its `.mcp.json` entry), the model calls
//! `mcp__session-lock__list_session_agents` and `…__send_session_message`, and the tests read
//! what every model saw.

use crate::agent_harness::RunAgent;
use crate::messaging_e2e::{World, conversation, everything, registered, wait_for};
use crate::support::claude::{Session, new_uuid, require_claude};
use crate::support::fake_model::{FakeModel, MessagesRequest, Turn};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const SEND_MESSAGE: &str = env!("CARGO_BIN_EXE_send-message");
const GUARD: &str = env!("CARGO_BIN_EXE_guard");
const LIST: &str = "mcp__session-lock__list_session_agents";
const SEND: &str = "mcp__session-lock__send_session_message";

/// A world whose repo is wired by `guard install` (hooks and the MCP entry).
fn wired() -> World {
    let w = World::new();
    // The hooks run this build's guard (not the committed launcher, which looks on PATH).
    let out = Command::new(GUARD)
        .arg("install")
        .arg("--no-user-scope")
        // The client shows a status line in place of its footer's "? for shortcuts", which the
        // interactive test waits for; the status line has tests of its own.
        .arg("--no-statusline")
        .arg(w.repo.path())
        .arg("--guard")
        .arg(GUARD)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mcp: Value = serde_json::from_str(&w.repo.read(".mcp.json").unwrap()).unwrap();
    assert_eq!(
        mcp["mcpServers"]["session-lock"]["command"], SEND_MESSAGE,
        "the server beside the guard"
    );
    w
}

/// A session's first turn: a Bash call that runs until the test releases it (at most two
/// minutes), so the others act while it is busy however slow the machine is.
fn busy_until_released(marker: &str, release: &Path) -> Turn {
    let wait = format!(
        "for i in $(seq 1200); do [ -e '{}' ] && break; sleep 0.1; done; echo released",
        release.display()
    );
    Turn::tool_use("Bash", json!({"command": wait, "description": "wait"})).when(marker)
}

/// Lets every `busy_until_released` call end.
fn release(w: &World) {
    std::fs::write(release_file(w), "").unwrap();
}

fn release_file(w: &World) -> std::path::PathBuf {
    w.state().join("release")
}

fn done(marker: &str) -> Turn {
    Turn::text("done").when(marker).repeat(3)
}

fn tool(name: &str, input: Value, marker: &str) -> Turn {
    Turn::tool_use(name, input).when(marker)
}

fn wait_busy(w: &World, model: &FakeModel, marker: &str, name: &str) {
    wait_for(
        &format!("{name} in its slow call"),
        Duration::from_secs(40),
        || registered(&w.home, name) && !conversation(model, marker).is_empty(),
    );
}

/// Every tool result's text in the conversation that began with `marker`, in order, once it
/// has `n` of them.
fn results(model: &FakeModel, marker: &str, n: usize) -> Vec<String> {
    let texts = || {
        conversation(model, marker)
            .last()
            .map(|r| r.tool_results())
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.content)
            .collect::<Vec<String>>()
    };
    wait_for(
        &format!("{n} tool results of {marker}"),
        Duration::from_secs(60),
        || texts().len() >= n,
    );
    texts()
}

/// The JSON answer in a tool result (its first line; the client may append a note).
fn answer(text: &str) -> Value {
    let line = text.lines().next().unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("no JSON answer ({e}): {text}"))
}

/// A send the target's client took or will take: what reaches its model is checked apart.
/// (`queued`: written, not yet confirmed in its transcript when the send returned.)
fn on_its_way(sent: &Value) -> bool {
    ["delivered", "accepted", "queued"].contains(&sent["status"].as_str().unwrap_or(""))
}

fn finish(s: Session) {
    s.wait_timeout(Duration::from_secs(60)).assert_success();
}

/// Everything under the state folder (ledgers and all), as text.
fn all_state(root: &Path) -> String {
    let mut out = String::new();
    for e in walkdir::WalkDir::new(root).into_iter().flatten() {
        if e.file_type().is_file() {
            out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
        }
    }
    out
}

/// A child process killed and reaped when the test ends, passed or not.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `send-message mcp` started by the test itself, outside any session.
struct Outside {
    child: Reaped,
    out: BufReader<std::process::ChildStdout>,
}

impl Outside {
    fn start(w: &World, pretend_session: &str) -> Outside {
        let mut child = Command::new(SEND_MESSAGE)
            .arg("mcp")
            .current_dir(w.repo.path())
            .env("HOME", w.home.path())
            .env("SESSION_LOCK_HOME", w.state())
            // What a session's children get; the server does not go by it.
            .env("CLAUDE_CODE_SESSION_ID", pretend_session)
            .env(
                "CLAUDE_CODE_MESSAGING_TOKEN",
                "0123456789abcdef0123456789abcdef",
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Outside {
            child: Reaped(child),
            out,
        }
    }

    fn ask(&mut self, msg: Value) -> Value {
        let input = self.child.0.stdin.as_mut().unwrap();
        writeln!(input, "{msg}").unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn call(&mut self, name: &str, args: Value) -> Value {
        self.ask(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": args}}))["result"].clone()
    }
}

#[test]
fn a_session_lists_and_sends_by_name_over_mcp_and_nobody_can_send_as_another() {
    let claude = require_claude!();
    let w = wired();
    let b_id = new_uuid();
    let model = FakeModel::start(vec![
        busy_until_released("B-PROMPT", &release_file(&w)),
        done("B-PROMPT"),
        tool(LIST, json!({}), "A-PROMPT"),
        // A forged sender: the tool has no such argument.
        tool(
            SEND,
            json!({"to": "worker-b", "message": "FORGED-TEXT", "from": "worker-b"}),
            "A-PROMPT",
        ),
        tool(
            SEND,
            json!({"to": "worker-b", "message": "hello over mcp", "summary": "greeting"}),
            "A-PROMPT",
        ),
        done("A-PROMPT"),
    ]);
    let b = w
        .session(&claude, &model, "B-PROMPT", "worker-b")
        .session_id(&b_id)
        .spawn();
    wait_busy(&w, &model, "B-PROMPT", "worker-b");

    // A server the test starts (outside any session) refuses, whatever its environment says.
    let mut outside = Outside::start(&w, &b_id);
    let init = outside.ask(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let tools = outside.ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(2));
    for (name, args) in [
        ("list_session_agents", json!({})),
        (
            "send_session_message",
            json!({"to": "worker-b", "message": "OUTSIDE-TEXT"}),
        ),
    ] {
        let r = outside.call(name, args);
        assert_eq!(r["isError"], true, "{r}");
        let a = answer(r["content"][0]["text"].as_str().unwrap());
        assert_eq!(a["error"]["code"], "unauthenticated", "{a}");
        assert!(
            a["error"]["message"]
                .as_str()
                .unwrap()
                .contains("refuses every call")
        );
    }
    drop(outside);

    let a = w.session(&claude, &model, "A-PROMPT", "alpha").spawn();
    let r = results(&model, "A-PROMPT", 3);
    release(&w);
    let a_done = a.wait_timeout(Duration::from_secs(60));
    a_done.assert_success();
    finish(b);
    let a_id = a_done.session_id().unwrap().to_string();

    let list = answer(&r[0]);
    assert_eq!(list["me"]["name"], "alpha", "{list}");
    assert_eq!(
        list["me"]["id"],
        a_id.as_str(),
        "the caller is the session that started the server"
    );
    let row = list["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "worker-b")
        .unwrap_or_else(|| panic!("worker-b not listed: {list}"));
    assert_eq!(row["id"], b_id.as_str());
    assert_eq!(row["sendable"], true);
    assert_eq!(row["status"], "running");

    let forged = answer(&r[1]);
    assert_eq!(forged["error"]["code"], "bad_request", "{forged}");
    assert!(
        forged["error"]["message"]
            .as_str()
            .unwrap()
            .contains("'from'")
    );

    let sent = answer(&r[2]);
    assert!(on_its_way(&sent), "{sent}");
    assert_eq!(sent["target"]["id"], b_id.as_str(), "{sent}");
    let id = sent["message_id"].as_str().unwrap();

    // B's model got it framed, from alpha, at its next request.
    let seen: Vec<String> = conversation(&model, "B-PROMPT")
        .iter()
        .skip(1)
        .map(everything)
        .collect();
    assert!(
        seen.iter().any(
            |t| t.contains(&format!("Session message {id} from alpha ("))
                && t.contains("hello over mcp")
                && t.contains("<cross-session-message")
        ),
        "B never saw {sent}: {seen:?}"
    );
    let everything_b: String = conversation(&model, "B-PROMPT")
        .iter()
        .map(everything)
        .collect();
    for never in ["FORGED-TEXT", "OUTSIDE-TEXT"] {
        assert!(!everything_b.contains(never), "{never} reached B");
    }
    // The sender on record is A, and nothing refused left a trace.
    assert!(
        w.outbox(&a_id).iter().any(|l| l["messageId"] == id),
        "{:?}",
        w.outbox_ids()
    );
    let state = all_state(w.state());
    for never in ["FORGED-TEXT", "OUTSIDE-TEXT"] {
        assert!(!state.contains(never), "{never} is in a ledger");
    }
}

#[test]
fn an_ambiguous_name_returns_candidates_and_a_retry_by_id_succeeds() {
    let claude = require_claude!();
    let w = wired();
    let (t1, t2) = (new_uuid(), new_uuid());
    let model = FakeModel::start(vec![
        busy_until_released("T1-PROMPT", &release_file(&w)),
        done("T1-PROMPT"),
        busy_until_released("T2-PROMPT", &release_file(&w)),
        done("T2-PROMPT"),
        tool(
            SEND,
            json!({"to": "twin", "message": "which one?"}),
            "A-PROMPT",
        ),
        tool(
            SEND,
            json!({"to": t1.as_str(), "message": "for the first twin"}),
            "A-PROMPT",
        ),
        done("A-PROMPT"),
    ]);
    let one = w
        .session(&claude, &model, "T1-PROMPT", "twin")
        .session_id(&t1)
        .spawn();
    let two = w
        .session(&claude, &model, "T2-PROMPT", "twin")
        .session_id(&t2)
        .spawn();
    wait_for(
        "both twins in their slow call",
        Duration::from_secs(120),
        || {
            !conversation(&model, "T1-PROMPT").is_empty()
                && !conversation(&model, "T2-PROMPT").is_empty()
        },
    );
    let a = w.session(&claude, &model, "A-PROMPT", "alpha").spawn();
    let r = results(&model, "A-PROMPT", 2);
    release(&w);
    finish(a);
    finish(one);
    finish(two);

    let amb = answer(&r[0]);
    assert_eq!(amb["status"], "ambiguous", "{amb}");
    let mut ids: Vec<&str> = amb["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    ids.sort();
    let mut want = vec![t1.as_str(), t2.as_str()];
    want.sort();
    assert_eq!(ids, want, "{amb}");

    let by_id = answer(&r[1]);
    assert!(on_its_way(&by_id), "{by_id}");
    assert_eq!(by_id["target"]["id"], t1.as_str());
    let first: String = conversation(&model, "T1-PROMPT")
        .iter()
        .map(everything)
        .collect();
    let second: String = conversation(&model, "T2-PROMPT")
        .iter()
        .map(everything)
        .collect();
    assert!(
        first.contains("for the first twin"),
        "the first twin never saw it"
    );
    for text in ["for the first twin", "which one?"] {
        assert!(!second.contains(text), "{text} reached the second twin");
    }
    assert!(
        !first.contains("which one?"),
        "an ambiguous send went somewhere"
    );
}

/// The same list through the command line (Bash), the bus (a Python client in Bash) and the
/// MCP tool, from one session: the same bytes.
#[test]
fn cli_bus_and_mcp_list_answer_the_same_bytes() {
    let claude = require_claude!();
    let w = wired();
    let sock = w.state().join("bus.sock");
    let client = w.state().join("bus_list.py");
    std::fs::write(
        &client,
        format!(
            "import json, os, socket\n\
             s = socket.socket(socket.AF_UNIX)\n\
             s.connect({sock:?})\n\
             s.sendall((json.dumps({{\"token\": os.environ[\"CLAUDE_CODE_MESSAGING_TOKEN\"], \"op\": \"list\", \"scope\": \"machine\"}}) + \"\\n\").encode())\n\
             print(s.makefile().readline().strip())\n",
            sock = sock.display().to_string()
        ),
    )
    .unwrap();
    let _bus = Reaped(
        Command::new(SEND_MESSAGE)
            .args(["serve", "--socket"])
            .arg(&sock)
            .env("HOME", w.home.path())
            .env("SESSION_LOCK_HOME", w.state())
            .current_dir(w.repo.path())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the bus", Duration::from_secs(10), || sock.exists());
    let model = FakeModel::start(vec![
        busy_until_released("B-PROMPT", &release_file(&w)),
        done("B-PROMPT"),
        tool(
            "Bash",
            json!({"command": format!("{SEND_MESSAGE} --json list --scope machine"), "description": "cli"}),
            "A-PROMPT",
        ),
        tool(
            "Bash",
            json!({"command": format!("python3 {}", client.display()), "description": "bus"}),
            "A-PROMPT",
        ),
        tool(LIST, json!({"scope": "machine"}), "A-PROMPT"),
        done("A-PROMPT"),
    ]);
    let b = w.session(&claude, &model, "B-PROMPT", "worker-b").spawn();
    wait_busy(&w, &model, "B-PROMPT", "worker-b");
    let a = w.session(&claude, &model, "A-PROMPT", "alpha").spawn();
    let r = results(&model, "A-PROMPT", 3);
    release(&w);
    finish(a);
    finish(b);

    let cli = r[0].trim();
    let bus_line = r[1].trim();
    let mcp = r[2].lines().next().unwrap_or("");
    let bus_result = bus_line
        .strip_prefix("{\"ok\":true,\"result\":")
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not a bus answer: {bus_line}"));
    assert!(
        answer(cli)["agents"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "{cli}"
    );
    assert_eq!(answer(cli)["me"]["name"], "alpha");
    assert_eq!(cli, mcp, "CLI and MCP");
    assert_eq!(bus_result, mcp, "bus and MCP");
}

/// run-agent's read-only contract keeps offering exactly its tools in a wired repo: the
/// messaging server's tools never reach its model.
#[test]
fn the_read_only_contract_does_not_offer_the_messaging_tools() {
    let claude = require_claude!();
    let w = wired();
    let model = FakeModel::start(vec![Turn::text("Reviewed.")]);
    let out = RunAgent::new(Some(&claude), &w.home, &model.base_url())
        .args([
            "--cwd",
            &w.repo.path().to_string_lossy(),
            "--prompt",
            "review",
        ])
        .args(["--read-only-scope-root", &w.repo.path().to_string_lossy()])
        .run();
    out.assert_ok();
    let requests = model.requests();
    assert!(!requests.is_empty());
    for body in &requests {
        let text = body.to_string();
        assert!(
            !text.contains("send_session_message"),
            "offered: {:?}",
            body.tool_names()
        );
        assert!(!text.contains("list_session_agents"));
    }
}

/// What `guard doctor` calls: the installed entry starts and lists both tools; a server that
/// never answers is reported, not waited for; `guard uninstall` takes it all out.
#[test]
fn the_installed_entry_lists_both_tools_and_uninstall_removes_it() {
    use session_lock::messaging::mcp::wire;
    let w = wired();
    let repo = w.repo.path();
    assert_eq!(
        wire::self_check(repo).unwrap(),
        ["list_session_agents", "send_session_message"]
    );
    let started = std::time::Instant::now();
    let e = wire::list_tools(
        Path::new("sleep"),
        &["30".to_string()],
        repo,
        Duration::from_secs(1),
    )
    .unwrap_err();
    assert!(e.contains("did not list its tools within 1s"), "{e}");
    assert!(started.elapsed() < Duration::from_secs(5), "it waited");
    let e = wire::list_tools(Path::new("cat"), &[], repo, Duration::from_secs(5)).unwrap_err();
    assert!(
        e.contains("does not offer list_session_agents"),
        "an echo is no server: {e}"
    );

    let out = Command::new(GUARD)
        .arg("uninstall")
        .arg(repo)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let gone: Value = serde_json::from_slice(&out.stdout).unwrap();
    for f in [".mcp.json", ".claude/settings.local.json"] {
        assert!(
            gone["changed"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c.as_str().is_some_and(|c| c.ends_with(f))),
            "{f}: {gone}"
        );
    }
    assert!(!repo.join(".mcp.json").exists());
    assert!(!repo.join(".claude/settings.local.json").exists());
    assert!(
        wire::self_check(repo)
            .unwrap_err()
            .contains("run guard install")
    );
}

/// A private tmux server (its own socket name) running one interactive CLI; killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// `None` (with the reason on stderr) when tmux is not installed.
    fn start(w: &World, claude: &std::path::Path, model: &FakeModel, n: usize) -> Option<Tmux> {
        if Command::new("tmux").arg("-V").output().is_err() {
            eprintln!("skipped: the interactive check needs tmux, which is not installed");
            return None;
        }
        let socket = format!("sl-mcp-{}-{n}", std::process::id());
        let path = std::env::var("PATH").unwrap_or_default();
        let status = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-x",
                "200",
                "-y",
                "50",
                "-c",
            ])
            .arg(w.repo.path())
            .arg("env")
            .arg("-i")
            .arg(format!("PATH={path}"))
            .arg("TERM=xterm-256color")
            .arg(format!("HOME={}", w.home.path().display()))
            .arg(format!("SESSION_LOCK_HOME={}", w.state().display()))
            .arg(format!("ANTHROPIC_BASE_URL={}", model.base_url()))
            .arg("ANTHROPIC_API_KEY=dummy")
            .arg("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
            .arg("CLAUDE_CODE_MAX_RETRIES=0")
            .arg(claude)
            .args(["--permission-mode", "default", "--allowedTools", LIST])
            .status()
            .unwrap();
        assert!(status.success());
        Some(Tmux { socket })
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Waits for `text` on the screen; every screen seen so far, joined.
    fn wait_screen(&self, text: &str) -> String {
        let mut seen = String::new();
        wait_for(
            &format!("'{text}' on the screen"),
            Duration::from_secs(40),
            || {
                let s = self.screen();
                seen.push_str(&s);
                s.contains(text)
            },
        );
        seen
    }

    fn keys(&self, keys: &str) {
        let ok = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", keys])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    /// Types `line`, waits until the input shows it, then presses Enter.
    fn type_line(&self, line: &str) {
        self.keys(line);
        self.wait_screen(line);
        self.keys("Enter");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// The interactive client asks before loading an unapproved project server; after
/// `guard install` it loads ours without asking, and the model's call is answered for it.
#[test]
fn an_interactive_session_loads_the_installed_server_without_asking() {
    let claude = require_claude!();
    let w = wired();
    // What a person did once: trusted the folder and the API key in the environment.
    std::fs::write(
        w.home.path().join(".claude.json"),
        json!({
            "hasCompletedOnboarding": true,
            "theme": "dark",
            "customApiKeyResponses": {"approved": ["dummy"], "rejected": []},
            "projects": {w.repo.path().to_string_lossy(): {"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
        })
        .to_string(),
    )
    .unwrap();
    let model = FakeModel::start(vec![
        tool(LIST, json!({}), "MCP-PROMPT"),
        Turn::text("Listed.").when("MCP-PROMPT").repeat(3),
    ]);
    // Without the approval the client asks.
    let local = w.repo.join(".claude/settings.local.json");
    let approval = std::fs::read_to_string(&local).unwrap();
    std::fs::remove_file(&local).unwrap();
    let Some(asking) = Tmux::start(&w, claude.bin(), &model, 1) else {
        return;
    };
    asking.wait_screen("New MCP server found in this project: session-lock");
    drop(asking);
    // The hooks run this build's guard (not the committed launcher, which looks on PATH).
    let out = Command::new(GUARD)
        .arg("install")
        .arg("--no-user-scope")
        // The client shows a status line in place of its footer's "? for shortcuts", which the
        // interactive test waits for; the status line has tests of its own.
        .arg("--no-statusline")
        .arg(w.repo.path())
        .arg("--guard")
        .arg(GUARD)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(std::fs::read_to_string(&local).unwrap(), approval);

    let Some(tui) = Tmux::start(&w, claude.bin(), &model, 2) else {
        return;
    };
    let seen = tui.wait_screen("for shortcuts");
    assert!(!seen.contains("New MCP server found"), "{seen}");
    tui.type_line("MCP-PROMPT list the sessions");
    let r = results(&model, "MCP-PROMPT", 1);
    tui.wait_screen("Listed.");
    let list = answer(&r[0]);
    assert!(list["agents"].is_array(), "{list}");
    assert!(
        list["me"]["id"].as_str().is_some_and(|id| !id.is_empty()),
        "the interactive session is the caller: {list}"
    );
}
