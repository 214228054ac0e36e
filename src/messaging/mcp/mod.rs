//! `send-message mcp`: the two messaging tools as a stdio MCP server that a session's client
//! starts — `list_session_agents` and `send_session_message` (the spec's §4 and §5).
//!
//! The model calls them as `mcp__session-lock__list_session_agents` and
//! `mcp__session-lock__send_session_message`: no shell quoting, and they work where Bash is
//! restricted. Each call runs the very functions `send-message list` / `send` run
//! ([`super::list::list`], [`super::send::send`]) after the bus's field rules
//! ([`super::request`]), and its text is the same JSON the command line prints with `--json`
//! and the bus returns as `result`.
//!
//! **Who calls.** The client spawns this server as its child, so the caller is the session whose
//! client is this process's parent: the kernel's parent pid plus that process's start time,
//! looked up in the client's registry of running sessions, on every call (the registry entry
//! may appear after the server starts). No argument names the sender — unknown arguments are a
//! `bad_request` — and a server whose parent is not a live client session refuses every call.
//!
//! **Results.** Every answer of `list`/`send` is a tool result (`isError: false`), `ambiguous`,
//! `held` and `refused` included, so the model can act on them; its JSON is both the text
//! content and `structuredContent`. A malformed call (`bad_request`), a server outside a
//! session (`unauthenticated`) and an operation that could not run (`failed`) are tool results
//! with `isError: true` and `{"error": {"code", "message"}}`.
//!
//! Transport: newline-delimited JSON-RPC 2.0 on stdin/stdout, ending when stdin closes. The
//! protocol version is the client's when it is one of [`PROTOCOL_VERSIONS`] (Claude Code 2.1.328
//! asks for `2025-11-25`, after a `server/discover` probe that gets "method not found"), else
//! the newest of them.

pub mod tools;
pub mod wire;

use super::identity::{self, Caller};
use super::request::{self, BadRequest, Op};
use super::{Ctx, wake};
use serde_json::{Map, Value, json};
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// The server's name in `.mcp.json`: the model sees `mcp__session-lock__<tool>`.
pub const SERVER_NAME: &str = "session-lock";

/// The protocol versions this server speaks, newest first.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The name the model calls a tool by.
pub fn model_tool_name(tool: &str) -> String {
    format!("mcp__{SERVER_NAME}__{tool}")
}

/// The process that started the server, as the kernel names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Client {
    pub pid: u32,
    pub start: Option<String>,
}

impl Client {
    /// This process's parent, now.
    pub fn parent() -> Option<Client> {
        let pid = crate::liveness::parent_of(std::process::id())?;
        Some(Client {
            pid,
            start: crate::liveness::start_time(pid),
        })
    }
}

/// A tool call's failure that is not an answer of list/send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallError {
    pub code: &'static str,
    pub message: String,
}

impl From<BadRequest> for CallError {
    fn from(e: BadRequest) -> CallError {
        CallError {
            code: "bad_request",
            message: e.0,
        }
    }
}

/// The server's state: who it serves and how each call gets its context.
pub struct Server {
    /// The process that started the server (`None` when the kernel did not say).
    pub client: Option<Client>,
    /// The folder the server runs in (the session's project folder).
    pub cwd: PathBuf,
    pub waker: Arc<dyn wake::Waker>,
}

impl Server {
    /// The caller of every call: the live session whose client is this server's parent.
    fn caller(&self) -> Result<Caller, CallError> {
        let refuse = |why: String| CallError {
            code: "unauthenticated",
            message: format!(
                "{why}; this server answers only the Claude Code session that started it, so it refuses every call (start it through the session's .mcp.json, not by hand)"
            ),
        };
        match &self.client {
            None => Err(refuse("this server's parent process is unknown".into())),
            Some(client) => {
                // The parent now must still be the process that started us.
                let now = Client::parent();
                if now.as_ref() != Some(client) {
                    return Err(refuse(format!(
                        "the process that started this server (pid {}) is gone",
                        client.pid
                    )));
                }
                identity::of_client(client.pid, client.start.as_deref()).ok_or_else(|| {
                    refuse(format!(
                        "this server's parent (pid {}) is not a running session in the client's registry",
                        client.pid
                    ))
                })
            }
        }
    }

    /// The context a call runs in: loaded per call, as each command line run loads it.
    fn ctx(&self, caller: &Caller) -> Result<Ctx, CallError> {
        let cwd = if caller.terminal || caller.cwd.is_empty() {
            self.cwd.clone()
        } else {
            PathBuf::from(&caller.cwd)
        };
        Ctx::load(None, &cwd, self.waker.clone()).map_err(|e| CallError {
            code: "failed",
            message: e.to_string(),
        })
    }

    /// One tool call: the JSON text of its answer, or why it did not run.
    pub fn call(&self, tool: &str, args: Option<&Value>) -> Result<String, CallError> {
        let empty = Map::new();
        let args = match args {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(m)) => m,
            Some(_) => return Err(BadRequest("the arguments must be a JSON object".into()).into()),
        };
        let Some(def) = tools::find(tool) else {
            return Err(CallError {
                code: "bad_request",
                message: format!(
                    "no tool named '{tool}'; this server has {} and {}",
                    tools::LIST,
                    tools::SEND
                ),
            });
        };
        tools::check_fields(def, args)?;
        let mut fields = args.clone();
        fields.insert("op".into(), json!(def.op));
        let op = request::parse(Value::Object(fields))?;
        let caller = self.caller()?;
        let ctx = self.ctx(&caller)?;
        match op {
            Op::List(req) => Ok(render(&super::list::list(&ctx, &caller, &req))),
            Op::Send(req) => super::send::send(&ctx, &caller, &req)
                .map(|r| render(&r))
                .map_err(|e| CallError {
                    code: "failed",
                    message: e.to_string(),
                }),
        }
    }

    /// Answers one JSON-RPC message; `None` for notifications.
    pub fn handle(&self, msg: &Value) -> Option<Value> {
        let id = msg.get("id").cloned().filter(|v| !v.is_null())?;
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
        Some(match method {
            "initialize" => {
                let asked = msg
                    .pointer("/params/protocolVersion")
                    .and_then(Value::as_str);
                let version = asked
                    .filter(|v| PROTOCOL_VERSIONS.contains(v))
                    .unwrap_or(PROTOCOL_VERSIONS[0]);
                reply(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": SERVER_NAME, "title": "session-lock messaging", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": tools::INSTRUCTIONS,
                }))
            }
            "ping" => reply(json!({})),
            "tools/list" => reply(json!({"tools": tools::definitions(&self.limits())})),
            "tools/call" => {
                let name = msg
                    .pointer("/params/name")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                reply(tool_result(
                    self.call(name, msg.pointer("/params/arguments")),
                ))
            }
            other => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("method not found: {other}")}})
            }
        })
    }

    /// The limits the schemas state: the config of the folder the server runs in.
    fn limits(&self) -> crate::config::MessagingConfig {
        Ctx::load(None, &self.cwd, self.waker.clone())
            .map(|c| c.config.messaging)
            .unwrap_or_default()
    }
}

/// The JSON every channel answers with: what `send-message --json` prints and the bus returns.
pub fn render<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| {
        json!({"error": {"code": "failed", "message": format!("cannot render the answer: {e}")}})
            .to_string()
    })
}

/// A `tools/call` result: the answer's JSON as text and as structured content.
pub fn tool_result(answer: Result<String, CallError>) -> Value {
    let (text, is_error) = match answer {
        Ok(text) => (text, false),
        Err(e) => (
            json!({"error": {"code": e.code, "message": e.message}}).to_string(),
            true,
        ),
    };
    // Structured content only for answers: the output schemas describe those, not errors.
    let structured = (!is_error)
        .then(|| serde_json::from_str::<Value>(&text).ok())
        .flatten()
        .filter(Value::is_object);
    let mut r = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
    if let Some(s) = structured {
        r["structuredContent"] = s;
    }
    r
}

/// Serves `input` → `output` until `input` ends (the MCP stdio transport run-agent's proxy
/// uses too).
pub fn serve(server: &Server, input: impl BufRead, output: impl Write) -> std::io::Result<()> {
    crate::agent::mcp_proxy::serve_lines(input, output, &mut |msg| server.handle(msg))
}

/// `send-message mcp` on this process's stdin/stdout, serving the session that started it.
pub fn run(cwd: PathBuf, waker: Arc<dyn wake::Waker>) -> std::io::Result<()> {
    let server = Server {
        client: Client::parent(),
        cwd,
        waker,
    };
    serve(&server, std::io::stdin().lock(), std::io::stdout().lock())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messaging::directory::{Status, Target};
    use crate::messaging::list::{ListRequest, select};
    use crate::messaging::{SendResult, SendStatus};

    fn server(client: Option<Client>) -> Server {
        Server {
            client,
            cwd: std::env::temp_dir(),
            waker: Arc::new(wake::AgentWaker),
        }
    }

    fn rpc(s: &Server, lines: &[Value]) -> Vec<Value> {
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut out = Vec::new();
        serve(s, input.as_bytes(), &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn sample_list() -> crate::messaging::list::ListResult {
        let ctx = Ctx {
            home: std::env::temp_dir(),
            config: crate::config::Config::default(),
            repo_root: None,
            waker: Arc::new(wake::AgentWaker),
        };
        let me = Caller {
            id: "me".into(),
            workspace: "/r".into(),
            cwd: "/r".into(),
            ..Caller::default()
        };
        let t = |id: &str, status| Target {
            id: id.into(),
            name: format!("{id} \"quoted\" ünïcode"),
            cwd: "/r".into(),
            workspace: "/r".into(),
            status,
            ..Target::default()
        };
        let targets = [
            t("me", Status::Running),
            t("b", Status::Idle),
            t("c", Status::Offline),
        ];
        select(&ctx, &me, &targets, &ListRequest::default())
    }

    fn sample_send() -> SendResult {
        let mut r = SendResult::new(SendStatus::Ambiguous, "m-1", "two sessions are named 'w'");
        r.candidates = Some(vec![crate::messaging::TargetRef {
            name: "w".into(),
            id: "a1".into(),
            cwd: Some("/r".into()),
        }]);
        r
    }

    /// The command line prints `serde_json::to_string` (cli::print_json), the bus answers
    /// `{"ok":true,"result":…}`, the tool's text is `render`: the same bytes for the same answer.
    #[test]
    fn bus_cli_and_mcp_answers_are_the_same_bytes() {
        fn same<T: serde::Serialize>(r: &T) {
            let text = render(r);
            assert_eq!(text, serde_json::to_string(r).unwrap(), "the CLI's --json");
            let bus = json!({"ok": true, "result": r}).to_string();
            assert_eq!(bus, format!("{{\"ok\":true,\"result\":{text}}}"), "the bus");
            let tool = tool_result(Ok(text.clone()));
            assert_eq!(tool["content"][0]["text"], json!(text), "the tool's text");
            assert_eq!(tool["structuredContent"], serde_json::to_value(r).unwrap());
            assert_eq!(tool["isError"], false);
        }
        let list = sample_list();
        assert_eq!(list.agents.len(), 2);
        same(&list);
        same(&sample_send());
        // The answers carry what the output schemas require.
        let defs = tools::definitions(&crate::config::MessagingConfig::default());
        for (def, answer) in [
            (&defs[0], serde_json::to_value(&list).unwrap()),
            (&defs[1], serde_json::to_value(sample_send()).unwrap()),
        ] {
            for k in def["outputSchema"]["required"].as_array().unwrap() {
                assert!(answer.get(k.as_str().unwrap()).is_some(), "{k} in {answer}");
            }
        }
        for k in def_required_agent_fields() {
            assert!(
                serde_json::to_value(&list.agents[0])
                    .unwrap()
                    .get(&k)
                    .is_some(),
                "{k}"
            );
        }
    }

    fn def_required_agent_fields() -> Vec<String> {
        let defs = tools::definitions(&crate::config::MessagingConfig::default());
        defs[0]["outputSchema"]["properties"]["agents"]["items"]["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn protocol_versions_tools_and_methods() {
        let s = server(None);
        let out = rpc(
            &s,
            &[
                json!({"jsonrpc":"2.0","id":"probe","method":"server/discover","params":{}}),
                json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}),
                json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
                json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}),
                json!({"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}),
                json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
                json!({"jsonrpc":"2.0","id":4,"method":"ping"}),
            ],
        );
        assert_eq!(out.len(), 6, "the notification gets no answer: {out:?}");
        assert_eq!(out[0]["error"]["code"], -32601);
        assert_eq!(out[1]["result"]["protocolVersion"], "2025-11-25");
        assert_eq!(out[1]["result"]["serverInfo"]["name"], SERVER_NAME);
        assert_eq!(out[2]["result"]["protocolVersion"], "2024-11-05");
        assert_eq!(out[3]["result"]["protocolVersion"], PROTOCOL_VERSIONS[0]);
        let names: Vec<&Value> = out[4]["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| &t["name"])
            .collect();
        assert_eq!(names, [tools::LIST, tools::SEND]);
        assert_eq!(out[5]["result"], json!({}));
        let garbage = rpc(&s, &[json!("not an object")]);
        assert_eq!(garbage[0]["error"]["code"], -32700);
    }

    fn call(s: &Server, name: &str, args: Value) -> Value {
        let msg = json!({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":name,"arguments":args}});
        s.handle(&msg).unwrap()["result"].clone()
    }

    fn error_code(result: &Value) -> String {
        assert_eq!(result["isError"], true, "{result}");
        assert!(result.get("structuredContent").is_none());
        let text = result["content"][0]["text"].as_str().unwrap();
        let v: Value = serde_json::from_str(text).unwrap();
        v["error"]["code"].as_str().unwrap().to_string()
    }

    #[test]
    fn outside_a_session_every_call_is_refused() {
        // This test's parent is not a client session; nor is an unknown parent.
        for client in [Client::parent(), None] {
            let s = server(client);
            let r = call(&s, tools::LIST, json!({}));
            assert_eq!(error_code(&r), "unauthenticated");
            assert!(
                r["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .contains("refuses every call")
            );
            let r = call(&s, tools::SEND, json!({"to": "b", "message": "hi"}));
            assert_eq!(error_code(&r), "unauthenticated");
        }
    }

    #[test]
    fn malformed_calls_are_bad_requests() {
        let s = server(None);
        for (tool, args) in [
            (tools::LIST, json!({"limit": 0})),
            (tools::LIST, json!({"limit": "5"})),
            (tools::LIST, json!({"scope": "galaxy"})),
            (tools::LIST, json!({"include_subagents": 1})),
            (tools::LIST, json!([1])),
            (tools::SEND, json!({"message": "no target"})),
            (tools::SEND, json!({"to": "b"})),
            (tools::SEND, json!({"to": "b", "message": 7})),
            (
                tools::SEND,
                json!({"to": "b", "message": "m", "from": "someone-else"}),
            ),
            ("send_message", json!({})),
        ] {
            assert_eq!(
                error_code(&call(&s, tool, args.clone())),
                "bad_request",
                "{tool} {args}"
            );
        }
    }
}
