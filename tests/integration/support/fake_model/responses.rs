//! The OpenAI Responses API, as Codex CLI calls it: `POST /v1/responses` with
//! `"stream": true`, answered with the SSE events Codex reads
//! (`response.created`, one `response.output_item.done` per output item,
//! `response.completed` with the response id and usage). Any other `POST` is a
//! `404`. A text block becomes an assistant `message` item; a tool call a
//! `function_call` (its input JSON as `arguments`), or a freeform
//! `custom_tool_call` when the input is a string (`apply_patch`). The tool
//! outputs come back as `function_call_output` / `custom_tool_call_output` items
//! of the next request's `input`.

use std::io;

use serde_json::{Value, json};

use super::request::ToolResult;
use super::serve::{Plan, Reply, Route, Sse, fresh_id, not_found};
use crate::support::http::Request;

pub(super) fn route(request: &Request, body: &Value) -> Route {
    match (request.method.as_str(), request.path()) {
        ("POST", "/v1/responses") if body.is_object() => Route::Model {
            stream: body["stream"].as_bool().unwrap_or(false),
        },
        ("POST", "/v1/responses") => Route::plain(Plan::Json(
            400,
            json!({"error": {"type": "invalid_request_error",
                             "message": "fake model: body is not a JSON object"}}),
        )),
        (_, path) => not_found(path),
    }
}

/// The output items of a reply.
fn items(reply: &Reply<'_>) -> Vec<Value> {
    reply
        .blocks()
        .map(|block| {
            if block["type"] != "tool_use" {
                return json!({
                    "type": "message", "id": fresh_id("msg_"), "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": block["text"], "annotations": []}],
                });
            }
            match &block["input"] {
                Value::String(input) => json!({
                    "type": "custom_tool_call", "id": fresh_id("ctc_"), "status": "completed",
                    "call_id": block["id"], "name": block["name"], "input": input,
                }),
                input => json!({
                    "type": "function_call", "id": fresh_id("fc_"), "status": "completed",
                    "call_id": block["id"], "name": block["name"],
                    "arguments": input.to_string(),
                }),
            }
        })
        .collect()
}

fn response(reply: &Reply<'_>, status: &str, output: Vec<Value>) -> Value {
    let (input_tokens, output_tokens) = reply.usage();
    json!({
        "id": format!("resp_{}", reply.request_id),
        "object": "response",
        "status": status,
        "model": reply.request["model"],
        "output": output,
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + output_tokens,
        },
    })
}

/// The whole response, for a request without `stream`.
pub(super) fn response_json(reply: &Reply<'_>) -> Value {
    response(reply, "completed", items(reply))
}

pub(super) fn stream(sse: &mut Sse<'_>, reply: &Reply<'_>) -> io::Result<()> {
    let created = json!({"type": "response.created",
                         "response": response(reply, "in_progress", Vec::new())});
    if !sse.event(Some("response.created"), &created)? {
        return Ok(());
    }
    let items = items(reply);
    for (index, item) in items.iter().enumerate() {
        let done =
            json!({"type": "response.output_item.done", "output_index": index, "item": item});
        if !sse.event(Some("response.output_item.done"), &done)? {
            return Ok(());
        }
    }
    let completed = json!({"type": "response.completed",
                           "response": response(reply, "completed", items)});
    sse.event(Some("response.completed"), &completed)?;
    Ok(())
}

/// The `input` items of a request.
fn input(body: &Value) -> &[Value] {
    body["input"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// A tool output: a string, or a list of content items whose texts are joined.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Object(_) if output.get("content").is_some() => output_text(&output["content"]),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

pub(super) fn tool_results(body: &Value) -> Vec<ToolResult> {
    input(body)
        .iter()
        .filter(|i| i["type"] == "function_call_output" || i["type"] == "custom_tool_call_output")
        .map(|i| ToolResult {
            tool_use_id: i["call_id"].as_str().unwrap_or("").to_string(),
            content: output_text(&i["output"]),
            is_error: false,
        })
        .collect()
}

/// Every user message's text, joined by newlines.
pub(super) fn user_text(body: &Value) -> String {
    input(body)
        .iter()
        .filter(|i| i["role"] == "user")
        .map(|i| output_text(&i["content"]))
        .collect::<Vec<_>>()
        .join("\n")
}
