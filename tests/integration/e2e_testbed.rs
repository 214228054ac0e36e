//! The end-to-end test bed proves itself: the fake Messages API on its own
//! (plain HTTP, no CLI needed).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::fake_model::{
    Block, EXHAUSTED_TEXT, FakeModel, MessagesRequest, RequestKind, SIDE_TEXT, Turn,
};
use crate::support::http::{Client, Framing, Response};

const SECS_10: Duration = Duration::from_secs(10);

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
