//! The end-to-end test bed proves itself: first the fake Messages API on its
//! own (plain HTTP, no CLI needed), then the real Claude Code CLI round-tripping
//! through it (needs the CLI; see `support::claude`).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::claude::{Claude, Home, new_uuid, require_claude, run_all, write_executable};
use crate::support::e2e::Gate;
use crate::support::fake_model::{
    Block, EXHAUSTED_TEXT, FakeModel, MessagesRequest, RequestKind, SIDE_TEXT, Turn,
};
use crate::support::http::{Client, Framing, Response};
use crate::support::repo::GitRepo;

const SECS_10: Duration = Duration::from_secs(10);
/// Two real CLIs starting at once on a loaded machine: their first request may take longer.
const STARTUP: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------
// The fake model alone
// ---------------------------------------------------------------------------

fn model_request(prompt: &str, stream: bool) -> Vec<u8> {
    json!({
        "model": "claude-test",
        "max_tokens": 100,
        "stream": stream,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": prompt}],
    })
    .to_string()
    .into_bytes()
}

fn json_of(response: &Response) -> Value {
    serde_json::from_slice(&response.body)
        .unwrap_or_else(|e| panic!("reply is not JSON ({e}): {}", response.text()))
}

/// `(event name, data)` pairs of an SSE body.
fn sse_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut name = String::new();
            let mut data = Value::Null;
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_string();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d)
                        .unwrap_or_else(|e| panic!("bad SSE data ({e}): {d}"));
                }
            }
            (name, data)
        })
        .collect()
}

#[test]
fn fake_model_serves_turns_in_order_on_one_keep_alive_connection() {
    let model = FakeModel::start(vec![Turn::text("first"), Turn::text("second")]);
    let mut client = Client::connect(model.addr()).expect("connect");

    let answers: Vec<Value> = ["one", "two", "three"]
        .iter()
        .map(|prompt| {
            let reply = client
                .send(
                    "POST",
                    "/v1/messages",
                    &model_request(prompt, false),
                    Framing::ContentLength,
                )
                .expect("request on the same connection");
            assert_eq!(reply.status, 200, "{}", reply.text());
            json_of(&reply)
        })
        .collect();

    let texts: Vec<&str> = answers
        .iter()
        .map(|a| a["content"][0]["text"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(texts, ["first", "second", EXHAUSTED_TEXT]);
    assert_eq!(answers[0]["stop_reason"], "end_turn");
    assert_eq!(answers[0]["model"], "claude-test");
    assert!(answers[0]["usage"]["input_tokens"].as_u64() > Some(0));
    assert!(answers[0]["usage"]["output_tokens"].as_u64() > Some(0));

    let prompts: Vec<String> = model
        .requests()
        .iter()
        .map(|b| b.first_user_text())
        .collect();
    assert_eq!(prompts, ["one", "two", "three"]);
    let turns: Vec<Option<usize>> = model.log().iter().map(|r| r.turn).collect();
    assert_eq!(turns, [Some(0), Some(1), None]);
}

#[test]
fn fake_model_streams_a_tool_call_as_sse_for_a_chunked_request() {
    let model = FakeModel::start(vec![Turn::blocks(vec![
        Block::text("Running it."),
        Block::tool_use("Bash", json!({"command": "echo hi"})),
    ])]);
    let mut client = Client::connect(model.addr()).expect("connect");
    let reply = client
        .send(
            "POST",
            "/v1/messages?beta=true",
            &model_request("go", true),
            Framing::Chunked(3),
        )
        .expect("streamed request");

    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events = sse_events(&reply.text());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "ping",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    for (name, data) in &events {
        assert_eq!(
            data["type"],
            name.as_str(),
            "data type matches the event name"
        );
    }
    assert_eq!(events[0].1["message"]["content"], json!([]));
    assert_eq!(
        events[3].1["delta"],
        json!({"type": "text_delta", "text": "Running it."})
    );
    let tool_start = &events[5].1["content_block"];
    assert_eq!(tool_start["type"], "tool_use");
    assert_eq!(tool_start["name"], "Bash");
    assert_eq!(tool_start["input"], json!({}));
    let partial = events[6].1["delta"]["partial_json"].as_str().unwrap_or("");
    assert_eq!(
        serde_json::from_str::<Value>(partial).ok(),
        Some(json!({"command": "echo hi"}))
    );
    assert_eq!(events[8].1["delta"]["stop_reason"], "tool_use");
    assert!(events[8].1["usage"]["output_tokens"].as_u64() > Some(0));

    let served = model.tool_uses();
    assert_eq!(served.len(), 1);
    assert_eq!(tool_start["id"], served[0].id.as_str());
    assert!(served[0].id.starts_with("toolu_"));
    assert_eq!(
        model.requests()[0]["stream"],
        true,
        "the chunked body was parsed"
    );
}

#[test]
fn fake_model_answers_side_requests_head_and_count_tokens_without_taking_a_turn() {
    let model = FakeModel::start(vec![Turn::text("the real answer")]);
    let mut client = Client::connect(model.addr()).expect("connect");

    let head = client.send("HEAD", "/api/hello", b"", Framing::ContentLength);
    assert_eq!(head.expect("HEAD").status, 200);
    let title = json!({"model": "m", "max_tokens": 10,
                       "messages": [{"role": "user", "content": "name this session"}]});
    let side = client
        .send(
            "POST",
            "/v1/messages",
            title.to_string().as_bytes(),
            Framing::ContentLength,
        )
        .expect("side request");
    assert_eq!(json_of(&side)["content"][0]["text"], SIDE_TEXT);
    let count = client
        .send(
            "POST",
            "/v1/messages/count_tokens",
            &model_request("count me", false),
            Framing::ContentLength,
        )
        .expect("count_tokens");
    assert!(json_of(&count)["input_tokens"].as_u64() > Some(0));
    let main = client
        .send(
            "POST",
            "/v1/messages",
            &model_request("hi", false),
            Framing::ContentLength,
        )
        .expect("model request");
    assert_eq!(json_of(&main)["content"][0]["text"], "the real answer");

    let kinds: Vec<RequestKind> = model.log().iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            RequestKind::Other,
            RequestKind::Side,
            RequestKind::Other,
            RequestKind::Model
        ]
    );
    assert_eq!(model.requests().len(), 1);
}

#[test]
fn fake_model_replies_scripted_errors_then_recovers() {
    let model = FakeModel::start(vec![
        Turn::error(529, "busy").repeat(2),
        Turn::error(401, "bad key"),
        Turn::text("fine"),
    ]);
    model.push_turn(Turn::error_body(500, json!({"odd": "shape"})));
    let mut client = Client::connect(model.addr()).expect("connect");
    let mut send = || {
        client
            .send(
                "POST",
                "/v1/messages",
                &model_request("x", true),
                Framing::ContentLength,
            )
            .expect("request")
    };
    for _ in 0..2 {
        let reply = send();
        assert_eq!(reply.status, 529);
        assert_eq!(
            json_of(&reply),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})
        );
    }
    let reply = send();
    assert_eq!(reply.status, 401);
    assert_eq!(json_of(&reply)["error"]["type"], "authentication_error");
    let reply = send();
    assert_eq!(reply.status, 200);
    assert!(
        reply.text().contains("\"text\":\"fine\""),
        "{}",
        reply.text()
    );
    let reply = send();
    assert_eq!(
        (reply.status, json_of(&reply)),
        (500, json!({"odd": "shape"}))
    );
}

#[test]
fn fake_model_reads_tool_results_and_system_messages_from_a_request() {
    let body = json!({"messages": [
        {"role": "user", "content": [{"type": "text", "text": "do it"}]},
        {"role": "system", "content": "hook context here"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
             "content": [{"type": "text", "text": "line one"}, {"type": "text", "text": "line two"}]},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "plain"}]}
    ]});
    assert_eq!(body.first_user_text(), "do it");
    assert_eq!(body.system_messages(), ["hook context here"]);
    assert_eq!(body.user_texts(), ["do it"]);
    let results = body.last_tool_results();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].tool_use_id, "toolu_1");
    assert_eq!(results[0].content, "line one\nline two");
    assert!(results[0].is_error);
    assert_eq!(results[1].content, "plain");
    assert!(!results[1].is_error);
}

#[test]
fn fake_model_stops_promptly_while_a_reply_is_delayed() {
    let model = FakeModel::start(vec![Turn::text("late").delay(Duration::from_secs(60))]);
    let addr = model.addr();
    let pending = std::thread::spawn(move || {
        let mut client = Client::connect(addr).expect("connect");
        client.send(
            "POST",
            "/v1/messages",
            &model_request("x", false),
            Framing::ContentLength,
        )
    });
    assert!(model.wait_for_requests(1, SECS_10));
    let started = Instant::now();
    drop(model);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "drop took {:?}",
        started.elapsed()
    );
    let outcome = pending.join().expect("client thread");
    assert!(
        outcome.is_err(),
        "the delayed request is cut off, not answered: {outcome:?}"
    );
}

// ---------------------------------------------------------------------------
// The real CLI through the fake model
// ---------------------------------------------------------------------------

fn is_uuid(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.chars().all(|c| c.is_ascii_hexdigit()))
}

#[test]
fn cli_plain_text_turn_returns_result_and_session_id() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![Turn::text("Hello from the fake model.")]);
    let session_id = new_uuid();

    let run = claude
        .session(repo.path(), &model, "say hello, test bed")
        .session_id(&session_id)
        .run();

    run.assert_success();
    assert_eq!(run.result_text(), Some("Hello from the fake model."));
    assert_eq!(run.session_id(), Some(session_id.as_str()));
    assert!(is_uuid(&session_id));
    let result = run.result().expect("a result event");
    assert!(
        result["total_cost_usd"].as_f64() > Some(0.0),
        "usage gives a cost: {result}"
    );
    let init = run.init().expect("an init event");
    assert_eq!(init["cwd"], repo.path().to_string_lossy().as_ref());
    assert_eq!(init["permissionMode"], "bypassPermissions");

    let requests = model.requests();
    assert_eq!(requests.len(), 1, "one model request for one text turn");
    assert!(
        requests[0]
            .user_texts()
            .iter()
            .any(|t| t.contains("say hello, test bed")),
        "the prompt reached the model: {:?}",
        requests[0].user_texts()
    );
    assert_eq!(requests[0]["stream"], true);
    let header = model.log()[0]
        .header("x-claude-code-session-id")
        .map(str::to_string);
    assert_eq!(header.as_deref(), Some(session_id.as_str()));
    assert!(
        run.home().join(".claude").is_dir(),
        "the CLI used the temporary HOME"
    );
}

#[test]
fn cli_bash_tool_output_reaches_the_next_request() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![
        Turn::tool_use(
            "Bash",
            json!({"command": "echo hi-from-tool", "description": "echo a marker"}),
        ),
        Turn::text("saw it"),
    ]);

    let run = claude.session(repo.path(), &model, "run the echo").run();

    run.assert_success();
    assert_eq!(run.result_text(), Some("saw it"));
    let requests = model.requests();
    assert_eq!(
        requests.len(),
        2,
        "the tool result goes back in a second request"
    );
    let results = requests[1].last_tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].content.trim(), "hi-from-tool");
    assert!(!results[0].is_error);
    let served = model.tool_uses();
    assert_eq!(served[0].name, "Bash");
    assert_eq!(results[0].tool_use_id, served[0].id);
    assert_eq!(model.tool_result(&served[0].id), Some(results[0].clone()));
}

#[test]
fn cli_pretooluse_hook_from_project_settings_denies_a_write() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let hooks = tempfile::tempdir().expect("hook dir");
    let payload_log = hooks.path().join("payload.json");
    let hook = hooks.path().join("deny-write.sh");
    write_executable(
        &hook,
        &format!(
            "#!/bin/sh\ncat > '{}'\nprintf '%s\\n' '{}'\n",
            payload_log.display(),
            json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": "TESTBED-DENY: writes are blocked here"}})
        ),
    );
    repo.write_claude_settings(&json!({"hooks": {"PreToolUse": [{
        "matcher": "Write",
        "hooks": [{"type": "command", "command": hook, "timeout": 10}]}]}}));
    let target = repo.join("blocked.txt");
    let model = FakeModel::start(vec![
        Turn::tool_use(
            "Write",
            json!({"file_path": target, "content": "should not exist\n"}),
        ),
        Turn::text("understood"),
    ]);

    let run = claude.session(repo.path(), &model, "write a file").run();

    run.assert_success();
    assert!(
        !target.exists(),
        "the denied Write did not create {}",
        target.display()
    );
    let results = model.last_tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].is_error, "{results:?}");
    assert_eq!(
        results[0].content,
        "PreToolUse:Write hook error: TESTBED-DENY: writes are blocked here"
    );
    let payload: Value = std::fs::read_to_string(&payload_log)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .expect("the hook logged its stdin payload");
    assert_eq!(payload["hook_event_name"], "PreToolUse");
    assert_eq!(payload["tool_name"], "Write");
    assert_eq!(
        payload["tool_input"]["file_path"],
        target.to_string_lossy().as_ref()
    );
    assert_eq!(payload["session_id"], run.session_id().unwrap_or("?"));
}

#[test]
fn cli_two_sessions_at_once_each_see_their_own_model() {
    let claude = require_claude!();
    let (repo_a, repo_b) = (GitRepo::new(), GitRepo::new());
    let model_a = FakeModel::start(vec![
        Turn::tool_use(
            "Bash",
            json!({"command": "echo from-a", "description": "a"}),
        ),
        Turn::text("answer A"),
    ]);
    let model_b = FakeModel::start(vec![
        Turn::tool_use(
            "Bash",
            json!({"command": "echo from-b", "description": "b"}),
        ),
        Turn::text("answer B"),
    ]);

    let runs = run_all(vec![
        claude.session(repo_a.path(), &model_a, "prompt for session A"),
        claude.session(repo_b.path(), &model_b, "prompt for session B"),
    ]);

    for run in &runs {
        run.assert_success();
    }
    assert_eq!(runs[0].result_text(), Some("answer A"));
    assert_eq!(runs[1].result_text(), Some("answer B"));
    assert_ne!(runs[0].session_id(), runs[1].session_id());
    for (model, own, other, output) in [
        (&model_a, "session A", "session B", "from-a"),
        (&model_b, "session B", "session A", "from-b"),
    ] {
        let requests = model.requests();
        assert_eq!(requests.len(), 2);
        let first = requests[0].user_texts().join("\n");
        assert!(first.contains(&format!("prompt for {own}")), "{first}");
        assert!(!first.contains(&format!("prompt for {other}")), "{first}");
        assert_eq!(model.last_tool_results()[0].content.trim(), output);
    }
}

#[test]
fn cli_api_error_gives_an_error_result() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![Turn::error(401, "invalid x-api-key").repeat(5)]);

    let run = claude
        .session(repo.path(), &model, "this will fail")
        .max_retries(0)
        .run();

    assert!(!run.timed_out, "{}", run.describe("the run hung"));
    assert_eq!(run.exit_code(), Some(1), "{}", run.describe("exit code"));
    assert_eq!(run.is_error(), Some(true), "{}", run.describe("is_error"));
    let result = run.result().expect("a result event");
    assert_eq!(result["api_error_status"], 401);
    assert_eq!(
        model.requests().len(),
        1,
        "no retry with CLAUDE_CODE_MAX_RETRIES=0"
    );
}

#[test]
fn cli_run_that_outlives_its_timeout_is_killed() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let long_text = "slow ".repeat(200); // 125 deltas of 8 chars: over 25 s
    let model = FakeModel::start(vec![
        Turn::text(long_text).trickle(Duration::from_millis(200)),
    ]);

    let session = claude.session(repo.path(), &model, "stream slowly").spawn();
    let pid = session.pid();
    assert!(
        model.wait_for_requests(1, Duration::from_secs(30)),
        "the CLI asked the model"
    );
    let run = session.wait_timeout(Duration::from_millis(500));

    assert!(run.timed_out, "{}", run.describe("expected a timeout"));
    assert!(run.result().is_none(), "a killed run has no result");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the CLI process {pid} is gone and reaped"
    );
    assert!(
        run.duration < Duration::from_secs(20),
        "killed at once: {:?}",
        run.duration
    );
}

#[test]
fn cli_sessions_sharing_a_home_register_side_by_side() {
    let claude = require_claude!();
    let home = Home::new();
    let (repo_a, repo_b) = (GitRepo::new(), GitRepo::new());
    // Both sessions stay in a Bash call until the test has seen them registered.
    let scratch = tempfile::tempdir().expect("scratch folder");
    let both_seen = Gate::at(scratch.path().join("both-seen"));
    let slow = || {
        FakeModel::start(vec![
            Turn::tool_use(
                "Bash",
                json!({"command": both_seen.wait_command(), "description": "wait"}),
            ),
            Turn::text("ok"),
        ])
    };
    let (model_a, model_b) = (slow(), slow());

    let a = claude
        .session(repo_a.path(), &model_a, "a")
        .home(&home)
        .name("peer-a")
        .spawn();
    let b = claude
        .session(repo_b.path(), &model_b, "b")
        .home(&home)
        .name("peer-b")
        .spawn();
    assert!(model_a.wait_for_requests(1, STARTUP) && model_b.wait_for_requests(1, STARTUP));
    let registered = |pid: u32| home.sessions_dir().join(format!("{pid}.json"));
    wait_until(SECS_10, || {
        registered(a.pid()).exists() && registered(b.pid()).exists()
    });
    let entry_b: Value = std::fs::read_to_string(registered(b.pid()))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .expect("session B registered in the shared HOME");
    assert!(
        registered(a.pid()).exists(),
        "session A registered in the shared HOME"
    );
    assert_eq!(entry_b["name"], "peer-b");
    assert_eq!(entry_b["cwd"], repo_b.path().to_string_lossy().as_ref());

    both_seen.open();
    let (a, b) = (a.wait(), b.wait());
    a.assert_success();
    b.assert_success();
    assert_eq!(a.home(), home.path());
    let transcript = home.transcript(repo_b.path(), b.session_id().unwrap_or("?"));
    assert!(
        transcript.is_file(),
        "transcript at {}",
        transcript.display()
    );
}

use crate::support::poll::until as wait_until;

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<u32> {
    crate::support::e2e::processes_with(&[marker])
}

#[test]
fn runner_kills_what_a_stubborn_cli_leaves_in_other_sessions() {
    let dir = tempfile::tempdir().expect("temp dir");
    let marker = format!("testbed-marker-{}", new_uuid());
    let stub = dir.path().join("claude");
    // Ignores SIGTERM and starts a child in a session of its own, as the CLI
    // does for tools and hooks.
    write_executable(
        &stub,
        &format!(
            "#!/bin/sh\ntrap '' TERM\nsetsid sh -c 'sleep 300; : {marker}' &\n\
             echo '{{\"type\":\"system\",\"subtype\":\"init\"}}'\nwhile :; do sleep 1; done\n"
        ),
    );
    let repo = GitRepo::new();
    let model = FakeModel::start(vec![]);

    let session = Claude::from_bin(&stub)
        .session(repo.path(), &model, "x")
        .spawn();
    let init = session.wait_for_event(SECS_10, |e| e["subtype"] == "init");
    assert!(init.is_some(), "the stub started");
    assert!(
        wait_until(SECS_10, || !processes_with(&marker).is_empty()),
        "the stub's child started"
    );
    let run = session.wait_timeout(Duration::ZERO);

    assert!(run.timed_out);
    assert_eq!(
        run.signal(),
        Some(9),
        "SIGTERM was ignored, SIGKILL was not"
    );
    wait_until(Duration::from_secs(5), || {
        processes_with(&marker).is_empty()
    });
    assert_eq!(
        processes_with(&marker),
        Vec::<u32>::new(),
        "the child was killed too"
    );
}

#[test]
fn cli_timed_out_during_a_tool_call_leaves_no_process_behind() {
    let claude = require_claude!();
    let repo = GitRepo::new();
    let marker = format!("testbed-marker-{}", new_uuid());
    // The tool starts a command of its own that would outlive a plain kill.
    let command = format!("sh -c 'sleep 300; : {marker}'");
    let model = FakeModel::start(vec![
        Turn::tool_use("Bash", json!({"command": command, "description": "hang"})),
        Turn::text("unreachable"),
    ]);

    let session = claude
        .session(repo.path(), &model, "hang in a tool")
        .spawn();
    assert!(
        model.wait_for_requests(1, Duration::from_secs(30)),
        "the CLI asked the model"
    );
    assert!(
        wait_until(SECS_10, || !processes_with(&marker).is_empty()),
        "the tool's command started"
    );
    let run = session.wait_timeout(Duration::ZERO);

    assert!(run.timed_out, "{}", run.describe("expected a timeout"));
    wait_until(Duration::from_secs(5), || {
        processes_with(&marker).is_empty()
    });
    assert_eq!(
        processes_with(&marker),
        Vec::<u32>::new(),
        "nothing of the run is left"
    );
}
