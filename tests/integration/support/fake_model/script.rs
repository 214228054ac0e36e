//! The script: what the fake model answers, turn by turn.

use std::time::Duration;

use serde_json::{Value, json};

/// One content block of a scripted model reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text(String),
    /// A tool call. `id` is generated when the turn is served unless set.
    ToolUse {
        id: Option<String>,
        name: String,
        input: Value,
    },
}

impl Block {
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text(text.into())
    }

    pub fn tool_use(name: impl Into<String>, input: Value) -> Block {
        Block::ToolUse {
            id: None,
            name: name.into(),
            input,
        }
    }

    /// Fixes the tool_use id (normally generated), e.g. to find its result later
    /// with [`FakeModel::tool_result`].
    pub fn with_id(self, id: impl Into<String>) -> Block {
        match self {
            Block::ToolUse { name, input, .. } => Block::ToolUse {
                id: Some(id.into()),
                name,
                input,
            },
            text => text,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Reply {
    Message(Vec<Block>),
    Error { status: u16, body: Value },
}

/// One scripted answer of the model: a message (text and tool_use blocks) or an
/// API error, with optional timing.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub(super) reply: Reply,
    pub(super) delay: Duration,
    pub(super) trickle: Duration,
    pub(super) repeat: usize,
    pub(super) when: Option<String>,
}

impl Turn {
    /// A reply of one text block (`stop_reason: end_turn`).
    pub fn text(text: impl Into<String>) -> Turn {
        Turn::blocks(vec![Block::text(text)])
    }

    /// A reply of one tool call (`stop_reason: tool_use`); the id is generated.
    pub fn tool_use(name: impl Into<String>, input: Value) -> Turn {
        Turn::blocks(vec![Block::tool_use(name, input)])
    }

    /// A reply of several blocks, e.g. a text then two tool calls in one turn.
    pub fn blocks(blocks: Vec<Block>) -> Turn {
        Turn::from_reply(Reply::Message(blocks))
    }

    /// An API error reply: HTTP `status` with the API's error JSON
    /// (`{"type":"error","error":{"type":..,"message":..}}`); the error type is
    /// the API's name for that status (401 `authentication_error`, 429
    /// `rate_limit_error`, 500 `api_error`, 529 `overloaded_error`, ...).
    pub fn error(status: u16, message: impl Into<String>) -> Turn {
        Turn::error_typed(status, error_type_for(status), message)
    }

    /// An API error reply with an explicit error type.
    pub fn error_typed(
        status: u16,
        error_type: impl Into<String>,
        message: impl Into<String>,
    ) -> Turn {
        Turn::error_body(status, api_error(&error_type.into(), &message.into()))
    }

    /// An error reply with any JSON body (for malformed or unusual errors).
    pub fn error_body(status: u16, body: Value) -> Turn {
        Turn::from_reply(Reply::Error { status, body })
    }

    /// Waits this long before answering at all (headers included).
    pub fn delay(mut self, delay: Duration) -> Turn {
        self.delay = delay;
        self
    }

    /// Streams slowly: waits this long after every SSE event, and splits text
    /// and tool input into small deltas, so a run can be timed out or signalled
    /// mid-stream. Ignored for non-streaming requests and errors.
    pub fn trickle(mut self, pause: Duration) -> Turn {
        self.trickle = pause;
        self
    }

    /// Serves this turn `times` times in a row (e.g. an error the CLI retries).
    pub fn repeat(mut self, times: usize) -> Turn {
        self.repeat = times;
        self
    }

    /// Serves this turn only to requests whose first user message contains
    /// `text`. A subagent's conversation starts with its own prompt, so this
    /// routes turns to a subagent that runs alongside the main thread.
    pub fn when(mut self, text: impl Into<String>) -> Turn {
        self.when = Some(text.into());
        self
    }

    fn from_reply(reply: Reply) -> Turn {
        Turn {
            reply,
            delay: Duration::ZERO,
            trickle: Duration::ZERO,
            repeat: 1,
            when: None,
        }
    }
}

fn error_type_for(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        _ => "api_error",
    }
}

pub(super) fn api_error(error_type: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": error_type, "message": message}})
}
