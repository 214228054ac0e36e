//! A fake model API on loopback, scripted per test: the Anthropic Messages API for
//! Claude Code, and (as its [`Wire`]) the OpenAI Responses API for Codex CLI or the
//! Gemini API for Gemini CLI.
//!
//! The real CLI is pointed at it (`ANTHROPIC_BASE_URL`, a Codex model provider's
//! `base_url`, `GOOGLE_GEMINI_BASE_URL`); hooks and tools then really run, and the
//! "model" is a queue of [`Turn`]s:
//!
//! ```ignore
//! let model = FakeModel::start(vec![
//!     Turn::tool_use("Bash", json!({"command": "echo hi", "description": "say hi"})),
//!     Turn::text("ok"),
//! ]);
//! // ... run the CLI with ANTHROPIC_BASE_URL = model.base_url() ...
//! let result = &model.tool_results()[0];
//! assert_eq!(result.content.trim(), "hi");
//! ```
//!
//! What it serves, on `127.0.0.1` at an ephemeral port, from its own threads:
//!
//! - `POST /v1/messages` (with or without `?beta=true`): each request takes the
//!   next unused turn of the script. With `"stream": true` the reply is the SSE
//!   sequence the real API sends (`message_start`, `ping`, per content block
//!   `content_block_start` / `content_block_delta` / `content_block_stop`,
//!   `message_delta` with `stop_reason` and usage, `message_stop`); otherwise one
//!   JSON message. `stop_reason` is `tool_use` when the turn has a tool_use block,
//!   else `end_turn`. Usage is about one token per four bytes, so the CLI reports
//!   a cost.
//! - **When the script is exhausted** every further request is answered with the
//!   plain text `done` (see [`EXHAUSTED_TEXT`]).
//! - **Requests without `tools`** (the CLI's side requests, such as a session
//!   title) get a short text ([`SIDE_TEXT`]) and take no turn. A run with
//!   `--tools ""` sends its real requests without `tools` too: build the server
//!   with [`FakeModelBuilder::toolless_as_side`]`(false)` for those.
//! - `POST /v1/messages/count_tokens`: a rough count. `HEAD` and `GET` of any path
//!   (the CLI sends `HEAD /api/hello`): `200`. Other `POST`s: a `404` API error.
//!
//! Every request is logged with its parsed JSON body ([`FakeModel::log`]);
//! [`FakeModel::requests`] gives the bodies of the model requests, which is what
//! the model "saw". The [`MessagesRequest`] trait reads them: tool results,
//! `role: "system"` messages, user text.
//!
//! The other wires (see `responses.rs` and `gemini.rs` for what each serves) take the
//! same script: a [`Block::ToolUse`] becomes the wire's tool call (its `input` is the
//! call's arguments; for Responses a string `input` is a freeform `custom_tool_call`,
//! the form Codex's `apply_patch` takes), and [`FakeModel::tool_results`] reads the
//! wire's tool outputs back out of the requests. [`Turn::when`] matches any user text
//! of the request there (the CLIs put their environment notes first).
//!
//! Connections are HTTP/1.1 keep-alive; request bodies may be `Content-Length`
//! or chunked. Dropping the [`FakeModel`] stops it: the listener closes, open
//! connections are shut down, and pending delays end at once.

mod gemini;
mod request;
mod responses;
mod script;
mod serve;

use std::collections::HashSet;
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::Value;

pub use request::{LoggedRequest, MessagesRequest, RequestKind, ToolResult, ToolUse};
pub use script::{Block, Turn};

/// The text of every model reply once the script has no turn left.
pub const EXHAUSTED_TEXT: &str = "done";
/// The text of replies to side requests (requests that carry no `tools`).
pub const SIDE_TEXT: &str = "Fake session title";

/// The model API a [`FakeModel`] speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// The Anthropic Messages API (`POST /v1/messages`), for Claude Code.
    Anthropic,
    /// The OpenAI Responses API (`POST /v1/responses`, SSE), for Codex CLI.
    Responses,
    /// The Gemini API (`POST /v1beta/models/<model>:streamGenerateContent`), for Gemini CLI.
    Gemini,
}

/// Starts a [`FakeModel`] with options.
pub struct FakeModelBuilder {
    turns: Vec<Turn>,
    toolless_as_side: bool,
    wire: Wire,
}

impl FakeModelBuilder {
    /// The API to speak (default [`Wire::Anthropic`]).
    pub fn wire(mut self, wire: Wire) -> FakeModelBuilder {
        self.wire = wire;
        self
    }

    /// Whether requests without `tools` are side requests that take no turn
    /// (default `true`). Set `false` for runs with `--tools ""`.
    pub fn toolless_as_side(mut self, yes: bool) -> FakeModelBuilder {
        self.toolless_as_side = yes;
        self
    }

    #[track_caller]
    pub fn start(self) -> FakeModel {
        let listener = TcpListener::bind("127.0.0.1:0")
            .unwrap_or_else(|e| panic!("fake model: cannot listen on 127.0.0.1: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("fake model: no local address: {e}"));
        let left = self.turns.iter().map(|t| t.repeat).collect();
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                turns: self.turns,
                left,
                log: Vec::new(),
                connections: Vec::new(),
                stopped: false,
                toolless_as_side: self.toolless_as_side,
                wire: self.wire,
            }),
            changed: Condvar::new(),
        });
        let accept_shared = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name(format!("fake-model-{}", addr.port()))
            .spawn(move || serve::accept_loop(listener, accept_shared))
            .unwrap_or_else(|e| panic!("fake model: cannot start a thread: {e}"));
        FakeModel {
            addr,
            shared,
            acceptor: Some(acceptor),
        }
    }
}

/// A running fake Messages API; see the module documentation.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

struct Shared {
    state: Mutex<State>,
    /// Signalled on every new log entry and on stop.
    changed: Condvar,
}

struct State {
    turns: Vec<Turn>,
    /// Times each turn can still be served.
    left: Vec<usize>,
    log: Vec<LoggedRequest>,
    connections: Vec<TcpStream>,
    stopped: bool,
    toolless_as_side: bool,
    wire: Wire,
}

impl State {
    fn model_requests(&self) -> impl Iterator<Item = &LoggedRequest> {
        self.log.iter().filter(|r| r.kind == RequestKind::Model)
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not make every later call panic too.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps `pause`, or less if the server stops; false once stopped.
    fn pause(&self, pause: Duration) -> bool {
        let state = self.lock();
        if pause.is_zero() {
            return !state.stopped;
        }
        let (state, _) = self
            .changed
            .wait_timeout_while(state, pause, |s| !s.stopped)
            .unwrap_or_else(|e| e.into_inner());
        !state.stopped
    }
}

impl FakeModel {
    /// Starts a server that answers with `turns`, in order.
    #[track_caller]
    pub fn start(turns: Vec<Turn>) -> FakeModel {
        FakeModel::builder(turns).start()
    }

    /// Starts a server speaking `wire`.
    #[track_caller]
    pub fn start_as(wire: Wire, turns: Vec<Turn>) -> FakeModel {
        FakeModel::builder(turns).wire(wire).start()
    }

    pub fn builder(turns: Vec<Turn>) -> FakeModelBuilder {
        FakeModelBuilder {
            turns,
            toolless_as_side: true,
            wire: Wire::Anthropic,
        }
    }

    pub fn wire(&self) -> Wire {
        self.shared.lock().wire
    }

    /// `http://127.0.0.1:<port>`, the value for `ANTHROPIC_BASE_URL` and
    /// `GOOGLE_GEMINI_BASE_URL` (a Codex provider's `base_url` adds `/v1`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Adds a turn at the end of the script, while the server runs.
    pub fn push_turn(&self, turn: Turn) {
        let mut state = self.shared.lock();
        state.left.push(turn.repeat);
        state.turns.push(turn);
    }

    /// Bodies of the model requests ([`RequestKind::Model`]), oldest first.
    pub fn requests(&self) -> Vec<Value> {
        let state = self.shared.lock();
        state.model_requests().map(|r| r.body.clone()).collect()
    }

    /// The newest model request body.
    pub fn last_request(&self) -> Option<Value> {
        self.requests().pop()
    }

    /// Every request received, side and other requests included.
    pub fn log(&self) -> Vec<LoggedRequest> {
        self.shared.lock().log.clone()
    }

    /// Waits until at least `n` model requests arrived; false on timeout.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let state = self.shared.lock();
        let (state, _) = self
            .shared
            .changed
            .wait_timeout_while(state, timeout, |s| s.model_requests().count() < n)
            .unwrap_or_else(|e| e.into_inner());
        state.model_requests().count() >= n
    }

    /// Every tool call served so far, with its id, oldest first.
    pub fn tool_uses(&self) -> Vec<ToolUse> {
        let state = self.shared.lock();
        let mut uses = Vec::new();
        for request in &state.log {
            let (Some(turn), Some(blocks)) = (request.turn, request.reply.as_array()) else {
                continue;
            };
            for block in blocks.iter().filter(|b| b["type"] == "tool_use") {
                uses.push(ToolUse {
                    id: block["id"].as_str().unwrap_or("").to_string(),
                    name: block["name"].as_str().unwrap_or("").to_string(),
                    input: block["input"].clone(),
                    turn,
                });
            }
        }
        uses
    }

    /// Every tool result the model received, across all model requests (so a
    /// subagent's too), each once, in order of first appearance.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        let mut seen = HashSet::new();
        let wire = self.wire();
        self.requests()
            .iter()
            .flat_map(|body| serve::tool_results(wire, body))
            .filter(|r| seen.insert(r.tool_use_id.clone()))
            .collect()
    }

    /// The result the model received for the tool call with this id.
    pub fn tool_result(&self, tool_use_id: &str) -> Option<ToolResult> {
        self.tool_results()
            .into_iter()
            .find(|r| r.tool_use_id == tool_use_id)
    }

    /// The tool results in the last message of the newest model request (Messages
    /// API only).
    pub fn last_tool_results(&self) -> Vec<ToolResult> {
        self.last_request()
            .map(|body| body.last_tool_results())
            .unwrap_or_default()
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.stopped = true;
            for conn in state.connections.drain(..) {
                let _ = conn.shutdown(Shutdown::Both);
            }
        }
        self.shared.changed.notify_all();
        // Wake the acceptor out of accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}
