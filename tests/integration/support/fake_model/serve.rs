//! Serving connections: choosing a turn, logging, and writing the reply as JSON
//! or as the API's SSE stream.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::request::{LoggedRequest, MessagesRequest, RequestKind};
use super::script::{Block, Reply, Turn, api_error};
use super::{EXHAUSTED_TEXT, SIDE_TEXT, Shared, State};
use crate::support::http::{ChunkedResponse, Connection, Request, write_response};

pub(super) fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else {
            // Out of descriptors or the like: do not spin.
            thread::sleep(Duration::from_millis(10));
            continue;
        };
        {
            let mut state = shared.lock();
            if state.stopped {
                return;
            }
            if let Ok(clone) = stream.try_clone() {
                state.connections.push(clone);
            }
        }
        let conn_shared = Arc::clone(&shared);
        // A connection thread that cannot start just drops the connection.
        let _ = thread::Builder::new()
            .name("fake-model-conn".into())
            .spawn(move || {
                let _ = serve_connection(stream, &conn_shared);
            });
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    let mut conn = Connection::new(stream)?;
    while let Some(request) = conn.next_request()? {
        if shared.lock().stopped {
            return Ok(());
        }
        answer(&request, conn.writer(), shared)?;
        if request.close {
            return Ok(());
        }
    }
    Ok(())
}

static IDS: AtomicU64 = AtomicU64::new(1);

/// A fresh id with this prefix, unique in this process.
fn fresh_id(prefix: &str) -> String {
    let n = IDS.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{:08x}{n:016x}", std::process::id())
}

/// What to send back for one request, decided under the lock.
enum Plan {
    Json(u16, Value),
    Empty,
    Message {
        turn: Option<Turn>,
        blocks: Value,
        stream: bool,
    },
    Error {
        turn: Turn,
        status: u16,
        json: Value,
    },
}

fn answer(request: &Request, out: &mut TcpStream, shared: &Shared) -> io::Result<()> {
    let body = parse_body(&request.body);
    let plan = plan_reply(request, &body, shared);
    let request_id = fresh_id("req_fake_");
    let json_headers = [
        ("content-type", "application/json"),
        ("request-id", request_id.as_str()),
    ];
    match plan {
        Plan::Empty => write_response(out, 200, &[], b"", request.method == "HEAD"),
        Plan::Json(status, value) => write_response(
            out,
            status,
            &json_headers,
            value.to_string().as_bytes(),
            false,
        ),
        Plan::Error { turn, status, json } => {
            if !shared.pause(turn.delay) {
                return Ok(());
            }
            write_response(
                out,
                status,
                &json_headers,
                json.to_string().as_bytes(),
                false,
            )
        }
        Plan::Message {
            turn,
            blocks,
            stream,
        } => {
            let (delay, trickle) =
                turn.map_or((Duration::ZERO, Duration::ZERO), |t| (t.delay, t.trickle));
            if !shared.pause(delay) {
                return Ok(());
            }
            let message = message_json(&body, blocks);
            if stream {
                stream_message(out, &request_id, &message, trickle, shared)
            } else {
                write_response(
                    out,
                    200,
                    &json_headers,
                    message.to_string().as_bytes(),
                    false,
                )
            }
        }
    }
}

fn parse_body(raw: &[u8]) -> Value {
    if raw.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(raw)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw).into()))
}

/// Chooses the reply and logs the request, both under one lock so the order of
/// the log is the order turns were taken.
fn plan_reply(request: &Request, body: &Value, shared: &Shared) -> Plan {
    let mut state = shared.lock();
    let path = request.path();
    let (kind, turn_index, plan) = match (request.method.as_str(), path) {
        ("HEAD", _) => (RequestKind::Other, None, Plan::Empty),
        ("GET", _) => (RequestKind::Other, None, Plan::Json(200, json!({}))),
        ("POST", "/v1/messages/count_tokens") => {
            let tokens = rough_tokens(&body["messages"]);
            (
                RequestKind::Other,
                None,
                Plan::Json(200, json!({"input_tokens": tokens})),
            )
        }
        ("POST", "/v1/messages") if !body.is_object() => (
            RequestKind::Other,
            None,
            Plan::Json(
                400,
                api_error(
                    "invalid_request_error",
                    "fake model: body is not a JSON object",
                ),
            ),
        ),
        ("POST", "/v1/messages") => {
            let stream = body["stream"].as_bool().unwrap_or(false);
            let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
            if !has_tools && state.toolless_as_side {
                let blocks = json!([{"type": "text", "text": SIDE_TEXT}]);
                let plan = Plan::Message {
                    turn: None,
                    blocks,
                    stream,
                };
                (RequestKind::Side, None, plan)
            } else {
                let (index, turn) = take_turn(&mut state, body);
                let plan = match turn {
                    Some(turn) => match &turn.reply {
                        Reply::Error { status, body } => Plan::Error {
                            status: *status,
                            json: body.clone(),
                            turn: turn.clone(),
                        },
                        Reply::Message(blocks) => Plan::Message {
                            blocks: blocks_json(blocks),
                            turn: Some(turn.clone()),
                            stream,
                        },
                    },
                    None => Plan::Message {
                        turn: None,
                        blocks: json!([{"type": "text", "text": EXHAUSTED_TEXT}]),
                        stream,
                    },
                };
                (RequestKind::Model, index, plan)
            }
        }
        _ => (
            RequestKind::Other,
            None,
            Plan::Json(
                404,
                api_error(
                    "not_found_error",
                    &format!("fake model: no endpoint {path}"),
                ),
            ),
        ),
    };
    let reply = match &plan {
        Plan::Message { blocks, .. } => blocks.clone(),
        Plan::Error { json, .. } | Plan::Json(_, json) => json.clone(),
        Plan::Empty => Value::Null,
    };
    let seq = state.log.len();
    state.log.push(LoggedRequest {
        seq,
        at: Instant::now(),
        method: request.method.clone(),
        target: request.target.clone(),
        headers: request.headers.clone(),
        body: body.clone(),
        kind,
        turn: turn_index,
        reply,
    });
    drop(state);
    shared.changed.notify_all();
    plan
}

/// The first turn with servings left whose `when` matches this request.
fn take_turn(state: &mut State, body: &Value) -> (Option<usize>, Option<Turn>) {
    let first = body.first_user_text();
    for (i, turn) in state.turns.iter().enumerate() {
        let matches = turn
            .when
            .as_ref()
            .is_none_or(|w| first.contains(w.as_str()));
        if state.left[i] > 0 && matches {
            state.left[i] -= 1;
            return (Some(i), Some(turn.clone()));
        }
    }
    (None, None)
}

fn blocks_json(blocks: &[Block]) -> Value {
    blocks
        .iter()
        .map(|b| match b {
            Block::Text(text) => json!({"type": "text", "text": text}),
            Block::ToolUse { id, name, input } => json!({
                "type": "tool_use",
                "id": id.clone().unwrap_or_else(|| fresh_id("toolu_")),
                "name": name,
                "input": input,
            }),
        })
        .collect()
}

fn rough_tokens(value: &Value) -> u64 {
    (value.to_string().len() as u64 / 4).max(1)
}

/// The complete assistant message for these blocks, with usage.
fn message_json(request: &Value, blocks: Value) -> Value {
    let has_tool_use = blocks
        .as_array()
        .is_some_and(|b| b.iter().any(|b| b["type"] == "tool_use"));
    let output_tokens = rough_tokens(&blocks);
    json!({
        "id": fresh_id("msg_fake_"),
        "type": "message",
        "role": "assistant",
        "model": request["model"].as_str().unwrap_or("claude-fake"),
        "content": blocks,
        "stop_reason": if has_tool_use { "tool_use" } else { "end_turn" },
        "stop_sequence": null,
        "usage": {
            "input_tokens": rough_tokens(&request["messages"]),
            "output_tokens": output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    })
}

/// Sends `message` as the API's SSE event sequence.
fn stream_message(
    out: &mut TcpStream,
    request_id: &str,
    message: &Value,
    trickle: Duration,
    shared: &Shared,
) -> io::Result<()> {
    let mut sse = ChunkedResponse::start(
        out,
        200,
        &[
            ("content-type", "text/event-stream"),
            ("cache-control", "no-cache"),
            ("request-id", request_id),
        ],
    )?;
    let mut event = |name: &str, data: Value| -> io::Result<bool> {
        sse.send(format!("event: {name}\ndata: {data}\n\n").as_bytes())?;
        Ok(shared.pause(trickle))
    };

    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    // Each `?` is a write error (the client went away); each `false` a stop.
    if !event(
        "message_start",
        json!({"type": "message_start", "message": start}),
    )? || !event("ping", json!({"type": "ping"}))?
    {
        return Ok(());
    }
    let piece = if trickle.is_zero() { usize::MAX } else { 8 };
    for (index, block) in message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let (opening, delta_type, delta_key, full) = if block["type"] == "tool_use" {
            let mut opening = block.clone();
            opening["input"] = json!({});
            (
                opening,
                "input_json_delta",
                "partial_json",
                block["input"].to_string(),
            )
        } else {
            let text = block["text"].as_str().unwrap_or("").to_string();
            (
                json!({"type": "text", "text": ""}),
                "text_delta",
                "text",
                text,
            )
        };
        let start =
            json!({"type": "content_block_start", "index": index, "content_block": opening});
        if !event("content_block_start", start)? {
            return Ok(());
        }
        for part in split_chars(&full, piece) {
            let delta = json!({"type": "content_block_delta", "index": index,
                               "delta": {"type": delta_type, delta_key: part}});
            if !event("content_block_delta", delta)? {
                return Ok(());
            }
        }
        if !event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )? {
            return Ok(());
        }
    }
    let delta = json!({
        "type": "message_delta",
        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null},
        "usage": {"output_tokens": message["usage"]["output_tokens"]},
    });
    if !event("message_delta", delta)? {
        return Ok(());
    }
    sse.send(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")?;
    sse.finish()
}

/// `text` cut into pieces of at most `size` characters (one piece if empty).
fn split_chars(text: &str, size: usize) -> Vec<String> {
    if text.is_empty() || size == usize::MAX {
        return vec![text.to_string()];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}
