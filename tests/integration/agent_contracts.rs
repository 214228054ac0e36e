//! run-agent's restricted runs with the real Claude Code CLI: the read-only review contract
//! (only Read/Grep/Glob, the path boundary enforced by `guard scope`) and the workspace
//! single-tool contract (plus one MCP tool that reads the editor's state through run-agent's
//! own proxy, against a fake Streamable HTTP MCP server written here).

use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

use crate::agent_harness::RunAgent;
use crate::support::claude::{Home, require_claude};
use crate::support::fake_model::{FakeModel, MessagesRequest, Turn};
use crate::support::http::{Connection, write_response};
use crate::support::repo::GitRepo;

const TOP_SECRET: &str = "TOP-SECRET-CONTENT-4e1d";

fn path_str(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The tool names offered to the model, the deferred-tools placeholder left out, sorted.
fn offered(request: &Value) -> Vec<String> {
    let mut names: Vec<String> = request
        .tool_names()
        .into_iter()
        .filter(|n| n != "DeferredToolPlaceholder")
        .collect();
    names.sort();
    names
}

#[test]
fn agent_read_only_contract_offers_read_tools_and_denies_escapes() {
    let claude = require_claude!();
    let repo = GitRepo::with_files(&[
        ("src/a.txt", "inside content\n"),
        ("secret.txt", &format!("{TOP_SECRET}\n")),
    ]);
    std::os::unix::fs::symlink(repo.join("secret.txt"), repo.join("src/link.txt")).unwrap();
    // Project settings must not load: their hook would leave a marker.
    let marker = repo.join("project-hook-ran");
    repo.write_claude_settings(&json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": format!("touch {}", marker.display())}]}]}}));
    let model = FakeModel::start(vec![
        Turn::tool_use("Read", json!({"file_path": repo.join("src/a.txt")})),
        Turn::tool_use("Read", json!({"file_path": repo.join("secret.txt")})),
        Turn::tool_use("Read", json!({"file_path": repo.join("src/link.txt")})),
        Turn::tool_use("Glob", json!({"pattern": "../*", "path": repo.join("src")})),
        Turn::tool_use(
            "Grep",
            json!({"pattern": "SECRET", "path": repo.join("src")}),
        ),
        Turn::tool_use(
            "Bash",
            json!({"command": "cat secret.txt", "description": "peek"}),
        ),
        Turn::text("Reviewed."),
    ]);
    let home = Home::new();
    let unknown_session = "11111111-2222-4333-8444-555555555555";
    let out = RunAgent::new(Some(&claude), &home, &model.base_url())
        .args(["--cwd", &path_str(repo.path()), "--prompt", "review src"])
        .args(["--read-only-scope-root", &path_str(&repo.join("src"))])
        .args(["--session-id", unknown_session])
        .run();
    out.assert_ok();
    assert_eq!(out.result["text"], "Reviewed.");
    assert_ne!(
        out.result["sessionId"], unknown_session,
        "always a new session"
    );
    assert_eq!(out.events_of("started")[0]["contract"], "readOnlyScope");

    let requests = model.requests();
    assert_eq!(
        offered(&requests[0]),
        ["Glob", "Grep", "Read"],
        "only the read tools"
    );
    let results = model.tool_results();
    assert_eq!(results.len(), 6, "{results:?}");
    assert!(
        !results[0].is_error && results[0].content.contains("inside content"),
        "{results:?}"
    );
    let expect = [
        format!(
            "Path outside confirmed review scope: {}",
            repo.join("secret.txt").display()
        ),
        format!(
            "Path outside confirmed review scope: {}",
            repo.join("secret.txt").display()
        ),
        "pattern '../*' may leave the searched directory".to_string(),
        format!(
            "symlink {} points outside confirmed review scope",
            repo.join("src/link.txt").display()
        ),
        "No such tool available: Bash".to_string(),
    ];
    for (r, want) in results[1..].iter().zip(&expect) {
        assert!(r.is_error, "{r:?}");
        assert!(
            r.content.contains(want.as_str()),
            "{want}\n got: {}",
            r.content
        );
    }
    for (i, r) in results[1..5].iter().enumerate() {
        assert!(
            r.content.starts_with("PreToolUse:"),
            "hook reason #{i}: {}",
            r.content
        );
    }
    for body in &requests {
        assert!(
            !body.to_string().contains(TOP_SECRET),
            "the secret reached the model"
        );
    }
    assert!(!marker.exists(), "project settings were loaded");
}

/// One request the fake editor received.
#[derive(Clone, Debug)]
struct EditorRequest {
    method: String,
    session: Option<String>,
    body: Value,
}

/// A fake Unity editor's MCP endpoint (Streamable HTTP) on loopback: `initialize` answered as
/// JSON with a session id, `notifications/initialized` with 202, `tools/call` as an event
/// stream, `DELETE` with 200. It stops when dropped.
struct FakeEditor {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<EditorRequest>>>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

const STATE: &str = r#"{"IsPlaying":true,"IsPaused":false,"IsCompiling":false}"#;
const SESSION: &str = "editor-session-42";

impl FakeEditor {
    fn start() -> FakeEditor {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log2, stop2) = (Arc::clone(&log), Arc::clone(&stop));
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let log = Arc::clone(&log2);
                std::thread::spawn(move || serve(stream, &log));
            }
        });
        FakeEditor {
            addr,
            log,
            stop,
            acceptor: Some(acceptor),
        }
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    fn log(&self) -> Vec<EditorRequest> {
        self.log.lock().unwrap().clone()
    }
}

impl Drop for FakeEditor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Ok(s) = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1)) {
            let _ = s.shutdown(Shutdown::Both);
        }
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<EditorRequest>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(20)));
    let Ok(mut conn) = Connection::new(stream) else {
        return;
    };
    while let Ok(Some(req)) = conn.next_request() {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let method = if req.method == "DELETE" {
            "DELETE".to_string()
        } else {
            body["method"].as_str().unwrap_or("").to_string()
        };
        log.lock().unwrap().push(EditorRequest {
            method: method.clone(),
            session: req.header("mcp-session-id").map(str::to_string),
            body: body.clone(),
        });
        let out = conn.writer();
        let sent = match method.as_str() {
            "initialize" => {
                let reply = json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "fake-editor", "version": "1"}}});
                write_response(
                    out,
                    200,
                    &[
                        ("content-type", "application/json"),
                        ("mcp-session-id", SESSION),
                    ],
                    reply.to_string().as_bytes(),
                    false,
                )
            }
            "notifications/initialized" => write_response(out, 202, &[], b"", false),
            "tools/call" => {
                let reply = json!({"jsonrpc": "2.0", "id": body["id"], "result": {
                    "content": [{"type": "text", "text": STATE}]}});
                let sse = format!(
                    "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{{}}}}\n\n\
                     event: message\ndata: {reply}\n\n"
                );
                write_response(
                    out,
                    200,
                    &[("content-type", "text/event-stream")],
                    sse.as_bytes(),
                    false,
                )
            }
            "DELETE" => write_response(out, 200, &[], b"", false),
            _ => write_response(out, 400, &[], b"unexpected", false),
        };
        if sent.is_err() || req.close {
            break;
        }
    }
}

const TOOL: &str = "mcp__unity-state__editor-application-get-state";

#[test]
fn agent_workspace_contract_reads_the_editor_through_one_tool() {
    let claude = require_claude!();
    let editor = FakeEditor::start();
    let repo = GitRepo::new();
    let outside = GitRepo::with_files(&[("package.json", &format!("{{\"x\":\"{TOP_SECRET}\"}}"))]);
    let marker = repo.join("arkon-started");
    let mcp = json!({"mcpServers": {
        "ai-game-developer": {"type": "http", "url": editor.url()},
        "arkon": {"command": "sh", "args": ["-c", format!("touch {}", marker.display())],
                  "env": {"ARKON_TOKEN": "Bearer ARKON-CREDENTIAL-77"}},
    }});
    repo.write(".mcp.json", &mcp.to_string());
    let model = FakeModel::start(vec![
        Turn::tool_use(TOOL, json!({})),
        Turn::tool_use("Read", json!({"file_path": outside.join("package.json")})),
        Turn::tool_use("mcp__arkon__anything", json!({})),
        Turn::text("The editor is playing."),
    ]);
    let home = Home::new();
    let out = RunAgent::new(Some(&claude), &home, &model.base_url())
        .json(&json!({
            "cwd": path_str(repo.path()),
            "prompt": "is the editor playing?",
            "workspaceUnityState": true,
            "readOnlyScopeRoots": [path_str(outside.path())],
            "sessionId": "11111111-2222-4333-8444-555555555555",
        }))
        .env(
            "SESSION_LOCK_RUN_AGENT_BIN",
            crate::agent_harness::RUN_AGENT,
        )
        .run();
    out.assert_ok();
    assert_eq!(out.result["text"], "The editor is playing.");
    assert_eq!(
        out.events_of("started")[0]["contract"],
        "workspaceUnityState"
    );

    let requests = model.requests();
    assert_eq!(
        offered(&requests[0]),
        ["Glob", "Grep", "Read", TOOL],
        "exactly one MCP tool"
    );
    let results = model.tool_results();
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(!results[0].is_error, "{results:?}");
    assert!(results[0].content.contains(STATE), "{}", results[0].content);
    assert!(results[1].is_error);
    assert!(
        results[1].content.contains(&format!(
            "Path outside confirmed review scope: {}",
            outside.join("package.json").display()
        )),
        "readOnlyScopeRoots given along is ignored: {}",
        results[1].content
    );
    assert!(results[2].is_error, "{results:?}");
    for body in &requests {
        let text = body.to_string();
        assert!(!text.contains(TOP_SECRET) && !text.contains("ARKON-CREDENTIAL"));
    }
    assert!(!marker.exists(), "another server of .mcp.json was started");
    assert!(!out.all_output().contains("ARKON-CREDENTIAL"));

    // The editor saw one whole exchange: initialize, initialized, the call, the clean-up.
    let log = editor.log();
    let methods: Vec<&str> = log.iter().map(|r| r.method.as_str()).collect();
    assert_eq!(
        methods,
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "DELETE"
        ],
        "{log:?}"
    );
    assert_eq!(
        log[2].body["params"],
        json!({"name": "editor-application-get-state", "arguments": {}})
    );
    assert_eq!(log[0].session, None);
    for r in &log[1..] {
        assert_eq!(r.session.as_deref(), Some(SESSION));
    }
}

#[test]
fn agent_workspace_contract_refuses_a_doubtful_mcp_json_before_spawning() {
    let claude = require_claude!();
    let model = FakeModel::start(vec![Turn::text("must not be asked")]);
    let home = Home::new();
    let cases = [
        (
            json!({"mcpServers": {"ai-game-developer": {"type": "http", "url": "https://127.0.0.1:1/"}}}),
            "scheme",
        ),
        (
            json!({"mcpServers": {"ai-game-developer": {"type": "http", "url": "http://192.0.2.1:80/"}}}),
            "not loopback",
        ),
        (
            json!({"mcpServers": {"ai-game-developer": {"command": "node", "args": ["x.js"]}}}),
            "\"command\"",
        ),
        (
            json!({"mcpServers": {"other": {"type": "http", "url": "http://127.0.0.1:1/"}}}),
            "does not declare",
        ),
    ];
    for (doc, want) in cases {
        let repo = GitRepo::new();
        repo.write(".mcp.json", &doc.to_string());
        let out = RunAgent::new(Some(&claude), &home, &model.base_url())
            .args([
                "--cwd",
                &path_str(repo.path()),
                "--prompt",
                "state?",
                "--workspace-unity-state",
            ])
            .run();
        assert_eq!(out.code, Some(8), "{doc}: {}", out.describe("exit 8"));
        assert_eq!(out.result["error"], "refused");
        let error = out.result["errorDetail"].as_str().unwrap();
        assert!(
            error.starts_with("workspace-unity-state refused: ") && error.contains(want),
            "{error}"
        );
        assert!(out.events_of("started").is_empty());
    }
    // A subfolder of a declaring workspace does not inherit its file.
    let repo = GitRepo::with_files(&[("Assets/readme.txt", "x")]);
    repo.write(
        ".mcp.json",
        &json!({"mcpServers": {"ai-game-developer": {"type": "http", "url": "http://127.0.0.1:1/"}}}).to_string(),
    );
    let out = RunAgent::new(Some(&claude), &home, &model.base_url())
        .args([
            "--cwd",
            &path_str(&repo.join("Assets")),
            "--prompt",
            "state?",
            "--workspace-unity-state",
        ])
        .run();
    assert_eq!(out.code, Some(8), "{}", out.describe("exit 8"));
    assert!(model.log().is_empty(), "the model got no request");
}

#[test]
fn issue_29_no_contract_lets_the_model_read_a_clients_config_with_credentials() {
    let claude = require_claude!();
    let editor = FakeEditor::start();
    let repo = GitRepo::with_files(&[
        ("Assets/notes.txt", "inside content\n"),
        (
            ".claude/settings.local.json",
            r#"{"env": {"API_TOKEN": "Bearer SETTINGS-CREDENTIAL-91"}}"#,
        ),
    ]);
    let mcp = json!({"mcpServers": {
        "ai-game-developer": {"type": "http", "url": editor.url()},
        "arkon": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                  "headers": {"Authorization": "Bearer ARKON-CREDENTIAL-77"}},
    }});
    repo.write(".mcp.json", &mcp.to_string());
    std::os::unix::fs::symlink(repo.join(".mcp.json"), repo.join("Assets/alias.txt")).unwrap();
    let model = FakeModel::start(vec![
        Turn::tool_use("Read", json!({"file_path": repo.join(".mcp.json")})),
        Turn::tool_use("Read", json!({"file_path": "Assets/alias.txt"})),
        Turn::tool_use(
            "Read",
            json!({"file_path": repo.join(".claude/settings.local.json")}),
        ),
        Turn::tool_use(
            "Grep",
            json!({"pattern": "Bearer", "output_mode": "content"}),
        ),
        Turn::tool_use(
            "Grep",
            json!({"pattern": "inside", "path": repo.join("Assets/notes.txt")}),
        ),
        Turn::tool_use("Read", json!({"file_path": repo.join("Assets/notes.txt")})),
        Turn::text("Looked."),
    ]);
    let home = Home::new();
    let out = RunAgent::new(Some(&claude), &home, &model.base_url())
        .json(&json!({
            "cwd": path_str(repo.path()),
            "prompt": "what is configured here?",
            "workspaceUnityState": true,
        }))
        .env(
            "SESSION_LOCK_RUN_AGENT_BIN",
            crate::agent_harness::RUN_AGENT,
        )
        .run();
    out.assert_ok();
    let results = model.tool_results();
    assert_eq!(results.len(), 6, "{results:?}");
    for (i, r) in results[..4].iter().enumerate() {
        assert!(
            r.is_error
                && r.content.contains("a client config file")
                && r.content.contains("credentials"),
            "call {i} was not refused by the contract: {}",
            r.content
        );
    }
    assert!(
        !results[4].is_error,
        "a search that holds no such file passes: {results:?}"
    );
    assert!(
        !results[5].is_error && results[5].content.contains("inside content"),
        "{results:?}"
    );
    for body in model.requests() {
        let text = body.to_string();
        assert!(
            !text.contains("ARKON-CREDENTIAL") && !text.contains("SETTINGS-CREDENTIAL"),
            "a credential reached the model"
        );
    }
}
