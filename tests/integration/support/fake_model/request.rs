//! The request log, and reading a Messages API request body.

use std::time::Instant;

use serde_json::Value;

use crate::support::http::find_header;

/// What a logged request was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    /// A model request answered from the script (or with [`EXHAUSTED_TEXT`]):
    /// `POST /v1/messages`, `POST /v1/responses`, `…:streamGenerateContent`.
    Model,
    /// A side request, answered with [`SIDE_TEXT`]: `POST /v1/messages` without
    /// `tools`, Gemini's non-streaming `…:generateContent`.
    Side,
    /// Anything else: `HEAD /api/hello`, `count_tokens`, unknown paths.
    Other,
}

/// One request the server received, and what it answered.
#[derive(Debug, Clone)]
pub struct LoggedRequest {
    /// 0-based position in the whole log.
    pub seq: usize,
    pub at: Instant,
    pub method: String,
    /// Path and query as sent (`/v1/messages?beta=true`).
    pub target: String,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    /// The parsed JSON body; a body that is not JSON is a string, none is null.
    pub body: Value,
    pub kind: RequestKind,
    /// Index in the script of the turn served, if one was.
    pub turn: Option<usize>,
    /// The content blocks sent back (tool_use ids filled in), or the error JSON.
    pub reply: Value,
}

impl LoggedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

/// A `tool_result` block as the model received it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub tool_use_id: String,
    /// The content, with a list of text blocks joined by newlines.
    pub content: String,
    pub is_error: bool,
}

/// A tool call the server sent, with the id it carried.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    pub id: String,
    pub name: String,
    pub input: Value,
    /// Index in the script of the turn that made the call.
    pub turn: usize,
}

/// Reading a Messages API request body (what the model saw).
pub trait MessagesRequest {
    /// Every `tool_result` block in `messages`, oldest first.
    fn tool_results(&self) -> Vec<ToolResult>;
    /// The `tool_result` blocks of the last message (the newest tool outputs).
    fn last_tool_results(&self) -> Vec<ToolResult>;
    /// The text of every `role: "system"` message inside `messages` (hook
    /// context, peer messages, the environment block).
    fn system_messages(&self) -> Vec<String>;
    /// The text of every `role: "user"` message, tool results left out.
    fn user_texts(&self) -> Vec<String>;
    /// The text of the first user message (the prompt, for a main thread).
    fn first_user_text(&self) -> String;
    /// Names in the `tools` array.
    fn tool_names(&self) -> Vec<String>;
}

impl MessagesRequest for Value {
    fn tool_results(&self) -> Vec<ToolResult> {
        messages(self).iter().flat_map(tool_results_of).collect()
    }

    fn last_tool_results(&self) -> Vec<ToolResult> {
        messages(self)
            .last()
            .map(tool_results_of)
            .unwrap_or_default()
    }

    fn system_messages(&self) -> Vec<String> {
        messages_with_role(self, "system")
    }

    fn user_texts(&self) -> Vec<String> {
        messages_with_role(self, "user")
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect()
    }

    fn first_user_text(&self) -> String {
        messages(self)
            .iter()
            .find(|m| m["role"] == "user")
            .map(|m| text_of(&m["content"]))
            .unwrap_or_default()
    }

    fn tool_names(&self) -> Vec<String> {
        self["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn messages(body: &Value) -> &[Value] {
    body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn messages_with_role(body: &Value, role: &str) -> Vec<String> {
    messages(body)
        .iter()
        .filter(|m| m["role"] == role)
        .map(|m| text_of(&m["content"]))
        .collect()
}

fn tool_results_of(message: &Value) -> Vec<ToolResult> {
    message["content"]
        .as_array()
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| ToolResult {
                    tool_use_id: b["tool_use_id"].as_str().unwrap_or("").to_string(),
                    content: content_text(&b["content"]),
                    is_error: b["is_error"].as_bool().unwrap_or(false),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Text blocks of a message content (tool results excluded), joined by newlines.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A tool_result's content: a string, or a list whose text blocks are joined.
fn content_text(content: &Value) -> String {
    match content {
        Value::Array(_) => text_of(content),
        Value::Null => String::new(),
        other => other
            .as_str()
            .map_or_else(|| other.to_string(), str::to_string),
    }
}
