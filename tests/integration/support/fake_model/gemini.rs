//! The Gemini API, as Gemini CLI calls it: `POST
//! /v1beta/models/<model>:streamGenerateContent?alt=sse` takes a turn and is
//! answered with one SSE chunk (`data: {"candidates": [...], "usageMetadata":
//! ...}`); the non-streaming `:generateContent` (the CLI's side calls) gets
//! [`super::SIDE_TEXT`]; `:countTokens` a rough count; any other `POST` a `404`.
//! A text block becomes a `text` part, a tool call a `functionCall` part (its id
//! the block's, its `args` the block's input). The tool outputs come back as
//! `functionResponse` parts of the next request's `contents`.

use std::io;

use serde_json::{Value, json};

use super::request::ToolResult;
use super::serve::{Plan, Reply, Route, Sse, not_found, rough_tokens};
use crate::support::http::Request;

pub(super) fn route(request: &Request, body: &Value) -> Route {
    let path = request.path();
    let method = path
        .strip_prefix("/v1beta/models/")
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, method)| method);
    match (request.method.as_str(), method) {
        ("POST", Some("streamGenerateContent")) => Route::Model { stream: true },
        ("POST", Some("generateContent")) => Route::Side { stream: false },
        ("POST", Some("countTokens")) => Route::plain(Plan::Json(
            200,
            json!({"totalTokens": rough_tokens(&body["contents"])}),
        )),
        _ => not_found(path),
    }
}

/// One response chunk holding the whole reply.
pub(super) fn chunk_json(reply: &Reply<'_>) -> Value {
    let parts: Vec<Value> = reply
        .blocks()
        .map(|block| {
            if block["type"] == "tool_use" {
                json!({"functionCall": {"id": block["id"], "name": block["name"],
                                        "args": block["input"]}})
            } else {
                json!({"text": block["text"]})
            }
        })
        .collect();
    let (prompt, candidates) = reply.usage();
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "totalTokenCount": prompt + candidates,
        },
        "modelVersion": "fake",
        "responseId": reply.request_id,
    })
}

pub(super) fn stream(sse: &mut Sse<'_>, reply: &Reply<'_>) -> io::Result<()> {
    sse.event(None, &chunk_json(reply))?;
    Ok(())
}

fn parts(body: &Value) -> impl Iterator<Item = (&Value, &Value)> {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| {
            c["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |p| (&c["role"], p))
        })
}

/// A `functionResponse.response` as text: its `output` or `error` when a string,
/// else its JSON.
fn response_text(response: &Value) -> (String, bool) {
    if let Some(error) = response["error"].as_str() {
        return (error.to_string(), true);
    }
    match &response["output"] {
        Value::String(s) => (s.clone(), false),
        _ => (response.to_string(), false),
    }
}

pub(super) fn tool_results(body: &Value) -> Vec<ToolResult> {
    parts(body)
        .filter_map(|(_, part)| part.get("functionResponse"))
        .map(|r| {
            let (content, is_error) = response_text(&r["response"]);
            ToolResult {
                tool_use_id: r["id"]
                    .as_str()
                    .or_else(|| r["name"].as_str())
                    .unwrap_or("")
                    .to_string(),
                content,
                is_error,
            }
        })
        .collect()
}

/// Every user part's text, joined by newlines.
pub(super) fn user_text(body: &Value) -> String {
    parts(body)
        .filter(|(role, _)| *role == "user")
        .filter_map(|(_, part)| part["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}
