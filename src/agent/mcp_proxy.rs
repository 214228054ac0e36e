//! `run-agent mcp-proxy --url <loopback url>`: the stdio MCP server of the workspace single-tool
//! contract. It offers exactly one tool, `editor-application-get-state`, with an empty input
//! schema (nothing the model could point elsewhere), and answers each call with one
//! [`fetch_editor_state`](super::mcp_http::fetch_editor_state) exchange. Newline-delimited
//! JSON-RPC 2.0 on stdin/stdout; it ends when stdin closes.

use super::mcp_http::{Limits, McpError, TOOL, fetch_editor_state};
use super::unity::check_url;
use serde_json::{Value, json};
use std::io::{BufRead, Write};

/// The server's name in the run's MCP config: the model sees `mcp__unity-state__<tool>`.
pub const SERVER_NAME: &str = "unity-state";
/// The one tool name the contract's hook lets through.
pub fn tool_name() -> String {
    format!("mcp__{SERVER_NAME}__{TOOL}")
}

fn tool() -> Value {
    json!({
        "name": TOOL,
        "description": "Read the state of this workspace's Unity Editor (play mode, pause, compilation, ...). Takes no arguments.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "openWorldHint": false},
    })
}

/// The `tools/call` result the model gets from the editor's answer: its text blocks (or its
/// structured content as text), and its error flag.
pub fn to_tool_result(upstream: Result<Value, McpError>) -> Value {
    match upstream {
        Ok(r) => {
            let mut content: Vec<Value> = r
                .get("content")
                .and_then(Value::as_array)
                .map(|items| {
                    items
                        .iter()
                        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                        .filter_map(|b| b.get("text").and_then(Value::as_str))
                        .map(|t| json!({"type": "text", "text": t}))
                        .collect()
                })
                .unwrap_or_default();
            if content.is_empty()
                && let Some(s) = r.get("structuredContent")
            {
                content.push(json!({"type": "text", "text": s.to_string()}));
            }
            if content.is_empty() {
                content.push(json!({"type": "text", "text": "the editor returned no state"}));
            }
            let is_error = r.get("isError").and_then(Value::as_bool).unwrap_or(false);
            json!({"content": content, "isError": is_error})
        }
        Err(e) => json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true}),
    }
}

/// Answers one message; `None` for notifications.
pub fn handle(msg: &Value, fetch: &mut dyn FnMut() -> Result<Value, McpError>) -> Option<Value> {
    let id = msg.get("id").cloned().filter(|v| !v.is_null())?;
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    let error = |code: i64, message: String| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    Some(match method {
        "initialize" => {
            let version = msg
                .pointer("/params/protocolVersion")
                .and_then(Value::as_str)
                .unwrap_or(super::mcp_http::PROTOCOL_VERSION);
            reply(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "session-lock-unity-state", "version": env!("CARGO_PKG_VERSION")},
            }))
        }
        "ping" => reply(json!({})),
        "tools/list" => reply(json!({"tools": [tool()]})),
        "tools/call" => {
            let name = msg.pointer("/params/name").and_then(Value::as_str);
            if name == Some(TOOL) {
                reply(to_tool_result(fetch()))
            } else {
                reply(json!({
                    "content": [{"type": "text", "text": format!("unknown tool {}", name.unwrap_or("(none)"))}],
                    "isError": true,
                }))
            }
        }
        other => error(-32601, format!("method not found: {other}")),
    })
}

/// Serves `input` → `output` until `input` ends.
pub fn serve(
    input: impl BufRead,
    output: impl Write,
    fetch: &mut dyn FnMut() -> Result<Value, McpError>,
) -> std::io::Result<()> {
    serve_lines(input, output, &mut |msg| handle(msg, fetch))
}

/// The stdio transport of an MCP server: each JSON object line of `input` goes to `handle`,
/// each answer it gives is one line on `output` (flushed); any other line gets a parse error.
/// Ends when `input` does.
pub fn serve_lines(
    input: impl BufRead,
    mut output: impl Write,
    handle: &mut dyn FnMut(&Value) -> Option<Value>,
) -> std::io::Result<()> {
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(msg) if msg.is_object() => handle(&msg),
            _ => Some(
                json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}),
            ),
        };
        if let Some(a) = answer {
            writeln!(output, "{a}")?;
            output.flush()?;
        }
    }
    Ok(())
}

/// `run-agent mcp-proxy --url <url>` on this process's stdin/stdout.
pub fn serve_stdio(url: &str) -> Result<(), super::options::Problem> {
    use super::options::{Failure, Problem};
    check_url(url).map_err(|e| Problem::new(Failure::Refused, e.to_string()))?;
    let url = url.to_string();
    let mut fetch = move || fetch_editor_state(&url, Limits::default());
    serve(
        std::io::stdin().lock(),
        std::io::stdout().lock(),
        &mut fetch,
    )
    .map_err(|e| Problem::new(Failure::Spawn, format!("mcp-proxy: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[Value], fetch: &mut dyn FnMut() -> Result<Value, McpError>) -> Vec<Value> {
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut out = Vec::new();
        serve(input.as_bytes(), &mut out, fetch).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn offers_one_tool_with_an_empty_schema_and_proxies_calls() {
        let mut calls = 0;
        let mut fetch = || {
            calls += 1;
            Ok(
                json!({"content": [{"type": "text", "text": "{\"IsPlaying\":true}"}, {"type": "image", "data": "x"}]}),
            )
        };
        let out = run(
            &[
                json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}),
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
                json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
                json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":TOOL,"arguments":{"url":"http://evil"}}}),
                json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"other"}}),
                json!({"jsonrpc":"2.0","id":4,"method":"resources/list"}),
            ],
            &mut fetch,
        );
        assert_eq!(out.len(), 5, "the notification gets no answer");
        assert_eq!(out[0]["result"]["protocolVersion"], "2025-11-25");
        let tools = out[1]["result"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(tools[0]["name"], TOOL);
        assert_eq!(tools[0]["inputSchema"]["properties"], json!({}));
        assert_eq!(
            out[2]["result"],
            json!({"content": [{"type": "text", "text": "{\"IsPlaying\":true}"}], "isError": false})
        );
        assert_eq!(out[3]["result"]["isError"], true);
        assert_eq!(out[4]["error"]["code"], -32601);
        assert_eq!(calls, 1, "only the editor tool reaches the editor");
        assert_eq!(
            tool_name(),
            "mcp__unity-state__editor-application-get-state"
        );
    }

    #[test]
    fn failures_become_error_results() {
        let r = to_tool_result(Err(McpError("http 500 from 127.0.0.1".into())));
        assert_eq!(r["isError"], true);
        assert_eq!(
            r["content"][0]["text"],
            "editor state unavailable: http 500 from 127.0.0.1"
        );
        let r = to_tool_result(Ok(json!({"structuredContent": {"a": 1}})));
        assert_eq!(r["content"][0]["text"], "{\"a\":1}");
        let r = to_tool_result(Ok(
            json!({"content": [{"type":"text","text":"bad"}], "isError": true}),
        ));
        assert_eq!(r["isError"], true);
        let out = run(&[json!("x")], &mut || Ok(json!({})));
        assert_eq!(out[0]["error"]["code"], -32700);
    }
}
