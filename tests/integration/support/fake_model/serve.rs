//! Serving connections: choosing a turn, logging, and writing the reply as JSON
//! or as the API's SSE stream.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::request::{LoggedRequest, MessagesRequest, RequestKind, ToolResult};
use super::script::{self, Block, Turn, api_error};
use super::{EXHAUSTED_TEXT, SIDE_TEXT, Shared, State, Wire, gemini, responses};
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
pub(super) fn fresh_id(prefix: &str) -> String {
    let n = IDS.fetch_add(1, Ordering::Relaxed);
    format!("{prefix}{:08x}{n:016x}", std::process::id())
}

/// What to send back for one request, decided under the lock.
pub(super) enum Plan {
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

/// How a request is answered, as the wire's routing says.
pub(super) enum Route {
    /// Without the script.
    Plain(Box<Plan>),
    /// From the script: the next turn.
    Model { stream: bool },
    /// With [`SIDE_TEXT`], taking no turn.
    Side { stream: bool },
}

impl Route {
    pub(super) fn plain(plan: Plan) -> Route {
        Route::Plain(Box::new(plan))
    }
}

fn answer(request: &Request, out: &mut TcpStream, shared: &Shared) -> io::Result<()> {
    let body = parse_body(&request.body);
    let (wire, plan) = plan_reply(request, &body, shared);
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
            let reply = Reply {
                request: &body,
                blocks,
                request_id: &request_id,
            };
            if !stream {
                let json = match wire {
                    Wire::Anthropic => message_json(&body, reply.blocks),
                    Wire::Responses => responses::response_json(&reply),
                    Wire::Gemini => gemini::chunk_json(&reply),
                };
                return write_response(out, 200, &json_headers, json.to_string().as_bytes(), false);
            }
            let mut sse = Sse::start(out, &request_id, trickle, shared)?;
            // Each `?` is a write error (the client went away); each `false` a stop.
            match wire {
                Wire::Anthropic => stream_message(&mut sse, &message_json(&body, reply.blocks))?,
                Wire::Responses => responses::stream(&mut sse, &reply)?,
                Wire::Gemini => gemini::stream(&mut sse, &reply)?,
            }
            sse.finish()
        }
    }
}

/// A scripted reply as the wires render it: the blocks (ids filled in, in the
/// Messages API's shape) and the request they answer.
pub(super) struct Reply<'a> {
    pub request: &'a Value,
    pub blocks: Value,
    pub request_id: &'a str,
}

impl Reply<'_> {
    pub fn blocks(&self) -> impl Iterator<Item = &Value> {
        self.blocks.as_array().into_iter().flatten()
    }

    /// About one token per four bytes of the request and of the reply.
    pub fn usage(&self) -> (u64, u64) {
        (rough_tokens(self.request), rough_tokens(&self.blocks))
    }
}

/// An SSE reply body that pauses `trickle` after every event, and stops early
/// when the server does.
pub(super) struct Sse<'a> {
    body: ChunkedResponse<'a, TcpStream>,
    trickle: Duration,
    shared: &'a Shared,
    /// The server stopped: every further event is dropped.
    stopped: bool,
}

impl<'a> Sse<'a> {
    fn start(
        out: &'a mut TcpStream,
        request_id: &str,
        trickle: Duration,
        shared: &'a Shared,
    ) -> io::Result<Sse<'a>> {
        let body = ChunkedResponse::start(
            out,
            200,
            &[
                ("content-type", "text/event-stream"),
                ("cache-control", "no-cache"),
                ("request-id", request_id),
            ],
        )?;
        Ok(Sse {
            body,
            trickle,
            shared,
            stopped: false,
        })
    }

    /// Sends one event (`event: <name>` when named) and pauses; false once the
    /// server stopped.
    pub fn event(&mut self, name: Option<&str>, data: &Value) -> io::Result<bool> {
        if self.stopped {
            return Ok(false);
        }
        let text = match name {
            Some(name) => format!("event: {name}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        };
        self.body.send(text.as_bytes())?;
        self.stopped = !self.shared.pause(self.trickle);
        Ok(!self.stopped)
    }

    /// Pieces to split streamed text into: whole unless trickling.
    pub fn piece(&self) -> usize {
        if self.trickle.is_zero() {
            usize::MAX
        } else {
            8
        }
    }

    fn finish(self) -> io::Result<()> {
        if self.stopped {
            return Ok(());
        }
        self.body.finish()
    }
}

fn parse_body(raw: &[u8]) -> Value {
    if raw.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(raw)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(raw).into()))
}

/// The Messages API's routes.
fn anthropic_route(request: &Request, body: &Value, state: &State) -> Route {
    match (request.method.as_str(), request.path()) {
        ("POST", "/v1/messages/count_tokens") => {
            let tokens = rough_tokens(&body["messages"]);
            Route::plain(Plan::Json(200, json!({"input_tokens": tokens})))
        }
        ("POST", "/v1/messages") if !body.is_object() => Route::plain(Plan::Json(
            400,
            api_error(
                "invalid_request_error",
                "fake model: body is not a JSON object",
            ),
        )),
        ("POST", "/v1/messages") => {
            let stream = body["stream"].as_bool().unwrap_or(false);
            let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
            if !has_tools && state.toolless_as_side {
                Route::Side { stream }
            } else {
                Route::Model { stream }
            }
        }
        (_, path) => not_found(path),
    }
}

pub(super) fn not_found(path: &str) -> Route {
    Route::plain(Plan::Json(
        404,
        api_error(
            "not_found_error",
            &format!("fake model: no endpoint {path}"),
        ),
    ))
}

/// Every tool output the model received in this request body, as `wire` carries them.
pub(super) fn tool_results(wire: Wire, body: &Value) -> Vec<ToolResult> {
    match wire {
        Wire::Anthropic => body.tool_results(),
        Wire::Responses => responses::tool_results(body),
        Wire::Gemini => gemini::tool_results(body),
    }
}

/// Chooses the reply and logs the request, both under one lock so the order of
/// the log is the order turns were taken.
fn plan_reply(request: &Request, body: &Value, shared: &Shared) -> (Wire, Plan) {
    let mut state = shared.lock();
    let wire = state.wire;
    let route = match (request.method.as_str(), wire) {
        ("HEAD", _) => Route::plain(Plan::Empty),
        ("GET", _) => Route::plain(Plan::Json(200, json!({}))),
        (_, Wire::Anthropic) => anthropic_route(request, body, &state),
        (_, Wire::Responses) => responses::route(request, body),
        (_, Wire::Gemini) => gemini::route(request, body),
    };
    let (kind, turn_index, plan) = match route {
        Route::Plain(plan) => (RequestKind::Other, None, *plan),
        Route::Side { stream } => {
            let blocks = json!([{"type": "text", "text": SIDE_TEXT}]);
            let plan = Plan::Message {
                turn: None,
                blocks,
                stream,
            };
            (RequestKind::Side, None, plan)
        }
        Route::Model { stream } => {
            let (index, turn) = take_turn(&mut state, body);
            let plan = match turn {
                Some(turn) => match &turn.reply {
                    script::Reply::Error { status, body } => Plan::Error {
                        status: *status,
                        json: body.clone(),
                        turn: turn.clone(),
                    },
                    script::Reply::Message(blocks) => Plan::Message {
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
    (wire, plan)
}

/// The first turn with servings left whose `when` matches this request.
fn take_turn(state: &mut State, body: &Value) -> (Option<usize>, Option<Turn>) {
    let first = match state.wire {
        Wire::Anthropic => body.first_user_text(),
        Wire::Responses => responses::user_text(body),
        Wire::Gemini => gemini::user_text(body),
    };
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

pub(super) fn rough_tokens(value: &Value) -> u64 {
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

/// Sends `message` as the Messages API's SSE event sequence.
fn stream_message(sse: &mut Sse<'_>, message: &Value) -> io::Result<()> {
    let mut event = |name: &str, data: Value| sse.event(Some(name), &data);
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    if !event(
        "message_start",
        json!({"type": "message_start", "message": start}),
    )? || !event("ping", json!({"type": "ping"}))?
    {
        return Ok(());
    }
    let piece = sse.piece();
    let mut event = |name: &str, data: Value| sse.event(Some(name), &data);
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
    event("message_stop", json!({"type": "message_stop"}))?;
    Ok(())
}

/// `text` cut into pieces of at most `size` characters (one piece if empty).
pub(super) fn split_chars(text: &str, size: usize) -> Vec<String> {
    if text.is_empty() || size == usize::MAX {
        return vec![text.to_string()];
    }
    let chars: Vec<char> = text.chars().collect();
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}
