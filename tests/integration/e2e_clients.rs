//! The bed for Codex CLI and Gemini CLI proves itself: the fake model's Responses
//! and Gemini wires on their own (plain HTTP), then each real CLI round-tripping
//! through them: a tool call runs, its result reaches the fake model, and a
//! pre-tool hook that refuses keeps the file untouched and hands its reason to
//! the model (needs the CLIs; see `support::codex`, `support::gemini`).

use serde_json::{Value, json};

use crate::support::claude::{Finished, write_executable};
use crate::support::codex::require_codex;
use crate::support::fake_model::{FakeModel, RequestKind, SIDE_TEXT, Turn, Wire};
use crate::support::gemini::require_gemini;
use crate::support::http::{Client, Framing, sse_events};
use crate::support::repo::GitRepo;

// ---------------------------------------------------------------------------
// The wires alone
// ---------------------------------------------------------------------------

#[test]
fn responses_wire_streams_a_function_call_and_a_freeform_call_and_reads_their_outputs() {
    let model = FakeModel::start_as(
        Wire::Responses,
        vec![
            Turn::tool_use("exec_command", json!({"cmd": "echo hi"})),
            Turn::tool_use("apply_patch", json!("*** Begin Patch\n*** End Patch\n")),
        ],
    );
    let mut client = Client::connect(model.addr()).expect("connect");
    let request = json!({"model": "gpt-5.5", "stream": true, "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}]});
    let reply = client
        .send(
            "POST",
            "/v1/responses",
            request.to_string().as_bytes(),
            Framing::ContentLength,
        )
        .expect("request");
    assert_eq!(reply.status, 200);
    assert_eq!(reply.header("content-type"), Some("text/event-stream"));
    let events = sse_events(&reply.text());
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "response.created",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let item = &events[1].1["item"];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["name"], "exec_command");
    let args: Value = serde_json::from_str(item["arguments"].as_str().expect("arguments")).unwrap();
    assert_eq!(args, json!({"cmd": "echo hi"}));
    let call_id = item["call_id"].as_str().expect("call_id").to_string();
    assert_eq!(call_id, model.tool_uses()[0].id);
    let done = &events[2].1["response"];
    assert!(
        done["id"].as_str().is_some_and(|id| !id.is_empty()),
        "{done}"
    );
    assert!(done["usage"]["total_tokens"].as_u64().is_some(), "{done}");

    let request = json!({"model": "gpt-5.5", "stream": true, "input": [
        {"type": "function_call", "call_id": call_id, "name": "exec_command", "arguments": "{}"},
        {"type": "function_call_output", "call_id": call_id, "output": "hi\n"}]});
    let reply = client
        .send(
            "POST",
            "/v1/responses",
            request.to_string().as_bytes(),
            Framing::Chunked(3),
        )
        .expect("request");
    let item = &sse_events(&reply.text())[1].1["item"];
    assert_eq!(item["type"], "custom_tool_call");
    assert_eq!(item["input"], "*** Begin Patch\n*** End Patch\n");
    let results = model.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        (results[0].tool_use_id.as_str(), results[0].content.as_str()),
        (call_id.as_str(), "hi\n")
    );
    let other = client
        .send(
            "POST",
            "/v1/chat/completions",
            b"{}",
            Framing::ContentLength,
        )
        .expect("request");
    assert_eq!(other.status, 404);
}

#[test]
fn gemini_wire_streams_a_function_call_answers_side_calls_and_reads_function_responses() {
    let model = FakeModel::start_as(
        Wire::Gemini,
        vec![Turn::tool_use(
            "write_file",
            json!({"file_path": "a.txt", "content": "x"}),
        )],
    );
    let mut client = Client::connect(model.addr()).expect("connect");
    let path = "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse";
    let request = json!({"contents": [{"role": "user", "parts": [{"text": "go"}]}]});
    let reply = client
        .send(
            "POST",
            path,
            request.to_string().as_bytes(),
            Framing::ContentLength,
        )
        .expect("request");
    assert_eq!(reply.status, 200);
    let events = sse_events(&reply.text());
    assert_eq!(events.len(), 1, "{events:?}");
    let candidate = &events[0].1["candidates"][0];
    assert_eq!(candidate["finishReason"], "STOP");
    let call = &candidate["content"]["parts"][0]["functionCall"];
    assert_eq!(call["name"], "write_file");
    assert_eq!(call["args"], json!({"file_path": "a.txt", "content": "x"}));
    let id = call["id"].as_str().expect("an id").to_string();

    let side = client
        .send(
            "POST",
            "/v1beta/models/gemini-2.5-flash:generateContent",
            b"{}",
            Framing::ContentLength,
        )
        .expect("request");
    let side: Value = serde_json::from_slice(&side.body).expect("JSON");
    assert_eq!(
        side["candidates"][0]["content"]["parts"][0]["text"],
        SIDE_TEXT
    );
    assert_eq!(model.log()[1].kind, RequestKind::Side);

    let request = json!({"contents": [
        {"role": "user", "parts": [{"text": "go"}]},
        {"role": "model", "parts": [{"functionCall": call}]},
        {"role": "user", "parts": [{"functionResponse": {"id": id, "name": "write_file",
            "response": {"error": "Tool execution blocked: no"}}}]}]});
    client
        .send(
            "POST",
            path,
            request.to_string().as_bytes(),
            Framing::ContentLength,
        )
        .expect("request");
    let results = model.tool_results();
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(results[0].tool_use_id, id);
    assert_eq!(results[0].content, "Tool execution blocked: no");
    assert!(results[0].is_error);
}

/// A pre-tool hook that logs each payload it gets and refuses with exit 2 and
/// `BED-REFUSES: not here` on stderr.
struct RefusingHook {
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
    log: std::path::PathBuf,
}

impl RefusingHook {
    fn new() -> RefusingHook {
        let dir = tempfile::tempdir().expect("hook dir");
        let log = dir.path().join("payloads.jsonl");
        let path = dir.path().join("refuse.sh");
        write_executable(
            &path,
            &format!(
                "#!/bin/sh\ncat >> '{}'\necho >> '{}'\necho 'BED-REFUSES: not here' >&2\nexit 2\n",
                log.display(),
                log.display()
            ),
        );
        RefusingHook {
            _dir: dir,
            path,
            log,
        }
    }

    /// The payloads it received, in order.
    fn payloads(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("a JSON payload"))
            .collect()
    }
}

/// The run ended well, `target.txt` kept its text, and each of the `calls` tool
/// calls' results carried the hook's reason to the model.
#[track_caller]
fn assert_refused(repo: &GitRepo, model: &FakeModel, run: &Finished, calls: usize) {
    run.assert_success();
    let kept = repo.read("target.txt");
    assert_eq!(
        kept.as_deref(),
        Some("original\n"),
        "{}",
        run.describe("written")
    );
    let results = model.tool_results();
    assert_eq!(
        results.len(),
        calls,
        "{results:?}\n{}",
        run.describe("results")
    );
    for r in &results {
        assert!(r.content.contains("BED-REFUSES: not here"), "{results:?}");
    }
}

// ---------------------------------------------------------------------------
// Codex CLI
// ---------------------------------------------------------------------------

const PATCH_ADD: &str =
    "*** Begin Patch\n*** Add File: added.txt\n+added by patch\n*** End Patch\n";

#[test]
fn codex_shell_and_apply_patch_run_and_their_results_reach_the_model() {
    let codex = require_codex!();
    let repo = GitRepo::with_files(&[("target.txt", "original\n")]);
    let model = FakeModel::start_as(
        Wire::Responses,
        vec![
            Turn::tool_use(
                "exec_command",
                json!({"cmd": "echo CODEX-SHELL > shell.txt && cat shell.txt"}),
            ),
            Turn::tool_use("apply_patch", json!(PATCH_ADD)),
            Turn::text("both done"),
        ],
    );

    let run = codex.session(repo.path(), &model, "write two files").run();

    run.assert_success();
    assert_eq!(
        repo.read("shell.txt").as_deref(),
        Some("CODEX-SHELL\n"),
        "{}",
        run.describe("no shell write")
    );
    assert_eq!(
        repo.read("added.txt").as_deref(),
        Some("added by patch\n"),
        "{}",
        run.describe("no patch")
    );
    let uses = model.tool_uses();
    let results = model.tool_results();
    assert_eq!(results.len(), 2, "{results:?}\n{}", run.describe("results"));
    assert_eq!(results[0].tool_use_id, uses[0].id);
    assert!(results[0].content.contains("CODEX-SHELL"), "{results:?}");
    assert_eq!(results[1].tool_use_id, uses[1].id);
    let tools: Vec<String> = model.requests()[0]["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    assert!(tools.iter().any(|t| t == "apply_patch"), "{tools:?}");
}

#[test]
fn codex_pretooluse_hook_that_exits_2_keeps_the_file_and_its_reason_reaches_the_model() {
    let codex = require_codex!();
    let repo = GitRepo::with_files(&[("target.txt", "original\n")]);
    let hook = RefusingHook::new();
    repo.write(
        ".codex/hooks.json",
        &json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": hook.path, "timeout": 10}]}]}})
        .to_string(),
    );
    let model = FakeModel::start_as(
        Wire::Responses,
        vec![
            Turn::tool_use("exec_command", json!({"cmd": "echo HIJACK > target.txt"})),
            Turn::tool_use(
                "apply_patch",
                json!(
                    "*** Begin Patch\n*** Update File: target.txt\n@@\n-original\n+HIJACK\n*** End Patch\n"
                ),
            ),
            Turn::text("refused twice"),
        ],
    );

    let run = codex
        .session(repo.path(), &model, "overwrite the target")
        .run();

    assert_refused(&repo, &model, &run, 2);
    let payloads = hook.payloads();
    let tools: Vec<&str> = payloads
        .iter()
        .filter_map(|p| p["tool_name"].as_str())
        .collect();
    assert_eq!(tools, ["Bash", "apply_patch"], "{payloads:?}");
    assert_eq!(payloads[0]["hook_event_name"], "PreToolUse");
    assert_eq!(
        payloads[0]["tool_input"],
        json!({"command": "echo HIJACK > target.txt"})
    );
    assert!(
        payloads[1]["tool_input"]["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("*** Begin Patch\n*** Update File: target.txt")),
        "{payloads:?}"
    );
}

// ---------------------------------------------------------------------------
// Gemini CLI
// ---------------------------------------------------------------------------

#[test]
fn gemini_shell_write_file_and_replace_run_and_their_results_reach_the_model() {
    let gemini = require_gemini!();
    let repo = GitRepo::with_files(&[("target.txt", "original\n")]);
    let model = FakeModel::start_as(
        Wire::Gemini,
        vec![
            Turn::tool_use(
                "run_shell_command",
                json!({"command": "echo GEMINI-SHELL > shell.txt && cat shell.txt", "description": "write"}),
            ),
            Turn::tool_use(
                "write_file",
                json!({"file_path": "written.txt", "content": "by write_file\n"}),
            ),
            Turn::tool_use(
                "replace",
                json!({"file_path": "target.txt", "old_string": "original", "new_string": "replaced",
                       "instruction": "replace the word"}),
            ),
            Turn::text("all three done"),
        ],
    );

    let run = gemini
        .session(repo.path(), &model, "write three files")
        .run();

    run.assert_success();
    assert_eq!(
        repo.read("shell.txt").as_deref(),
        Some("GEMINI-SHELL\n"),
        "{}",
        run.describe("no shell")
    );
    assert_eq!(
        repo.read("written.txt").as_deref(),
        Some("by write_file\n"),
        "{}",
        run.describe("no write")
    );
    assert_eq!(
        repo.read("target.txt").as_deref(),
        Some("replaced\n"),
        "{}",
        run.describe("no replace")
    );
    let uses = model.tool_uses();
    let results = model.tool_results();
    assert_eq!(results.len(), 3, "{results:?}\n{}", run.describe("results"));
    for (r, u) in results.iter().zip(&uses) {
        assert_eq!(r.tool_use_id, u.id, "{results:?}");
        assert!(!r.is_error, "{results:?}");
    }
    assert!(results[0].content.contains("GEMINI-SHELL"), "{results:?}");
}

#[test]
fn gemini_beforetool_hook_that_exits_2_keeps_the_file_and_its_reason_reaches_the_model() {
    let gemini = require_gemini!();
    let repo = GitRepo::with_files(&[("target.txt", "original\n")]);
    let hook = RefusingHook::new();
    repo.write(
        ".gemini/settings.json",
        &json!({"hooks": {"BeforeTool": [{"matcher": "*", "hooks": [
            {"name": "bed", "type": "command", "command": hook.path, "timeout": 10000}]}]}})
        .to_string(),
    );
    let model = FakeModel::start_as(
        Wire::Gemini,
        vec![
            Turn::tool_use(
                "run_shell_command",
                json!({"command": "echo HIJACK > target.txt", "description": "overwrite"}),
            ),
            Turn::tool_use(
                "write_file",
                json!({"file_path": "target.txt", "content": "HIJACK\n"}),
            ),
            Turn::tool_use(
                "replace",
                json!({"file_path": "target.txt", "old_string": "original", "new_string": "HIJACK",
                       "instruction": "overwrite"}),
            ),
            Turn::text("refused three times"),
        ],
    );

    let run = gemini
        .session(repo.path(), &model, "overwrite the target")
        .run();

    assert_refused(&repo, &model, &run, 3);
    let payloads = hook.payloads();
    let tools: Vec<&str> = payloads
        .iter()
        .filter_map(|p| p["tool_name"].as_str())
        .collect();
    assert_eq!(
        tools,
        ["run_shell_command", "write_file", "replace"],
        "{payloads:?}"
    );
    assert_eq!(payloads[0]["hook_event_name"], "BeforeTool");
}
