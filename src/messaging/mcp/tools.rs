//! The two tools as the model sees them: names, descriptions, input and output schemas (the
//! spec's §4 and §5 fields, with the command line's ranges and the repo's limits).

use super::CallError;
use crate::config::MessagingConfig;
use serde_json::{Map, Value, json};

pub const LIST: &str = "list_session_agents";
pub const SEND: &str = "send_session_message";

/// What the server tells the client about itself (shown to the model with the tools).
pub const INSTRUCTIONS: &str = "Messaging between the Claude Code sessions on this machine. \
list_session_agents shows the sessions you may message; send_session_message sends one of them \
a message by name or id. The sender is always this session.";

/// One tool: its name and the arguments it takes.
pub struct Tool {
    pub name: &'static str,
    pub fields: &'static [&'static str],
}

pub const TOOLS: [Tool; 2] = [
    Tool {
        name: LIST,
        fields: &["scope", "include_subagents", "limit"],
    },
    Tool {
        name: SEND,
        fields: &["to", "message", "summary"],
    },
];

pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Refuses arguments the tool does not take (a `from` or `sender` among them: the sender is
/// never an argument).
pub fn check_fields(tool: &Tool, args: &Map<String, Value>) -> Result<(), CallError> {
    match args.keys().find(|k| !tool.fields.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(CallError {
            code: "bad_request",
            message: format!(
                "'{k}' is not an argument of {}; it takes {} (the sender is always this session)",
                tool.name,
                tool.fields.join(", ")
            ),
        }),
    }
}

fn list_definition() -> Value {
    json!({
        "name": LIST,
        "title": "List sessions you can message",
        "description": "List the other Claude Code sessions on this machine that you may send a message to with send_session_message: running sessions first, then the most recently active, then sessions that are not running (status \"offline\"; a message wakes them). Each row gives the name and id to put in send_session_message's \"to\". Sessions you may not reach are only counted in \"omitted\". \"me\" is this session (the name others use to reach you); it is not listed.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "scope": {
                    "type": "string",
                    "enum": ["workspace", "machine", "session"],
                    "default": "workspace",
                    "description": "workspace: sessions working in this repo (default). machine: every session on this machine you may reach. session: only this session's own subagents."
                },
                "include_subagents": {
                    "type": "boolean",
                    "default": false,
                    "description": "Also list other sessions' subagents. They are shown with sendable: false; you cannot message them."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 200,
                    "default": 50,
                    "description": "At most this many rows (1 to 200); \"more\" counts the rest."
                }
            },
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "me": {"type": "object", "properties": {"name": {"type": "string"}, "id": {"type": "string"}}},
                "agents": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "id": {"type": "string"},
                            "short_id": {"type": "string"},
                            "cwd": {"type": "string"},
                            "kind": {"type": "string", "description": "peer or subagent"},
                            "status": {"type": "string", "description": "running, idle or offline"},
                            "name_source": {"type": "string", "description": "where the name comes from: user, generated, title, stream, subagent, fallback (the spec's title_source)"},
                            "sendable": {"type": "boolean"}
                        },
                        "required": ["name", "id", "short_id", "cwd", "kind", "status", "sendable"]
                    }
                },
                "omitted": {"type": "integer", "minimum": 0},
                "more": {"type": "integer", "minimum": 0},
                "note": {"type": "string"}
            },
            "required": ["agents", "omitted"]
        },
        "annotations": {"title": "List sessions you can message", "readOnlyHint": true, "openWorldHint": false}
    })
}

fn send_definition(limits: &MessagingConfig) -> Value {
    json!({
        "name": SEND,
        "title": "Send a message to another session",
        "description": format!("Send a plain-text message to another Claude Code session on this machine, by its name or id (see list_session_agents). It reaches that session's model at its next step, or wakes it if it is not running. The sender is always this session. The answer is never an error for a business outcome: read \"status\" — delivered (it is in the target's context), accepted or queued (recorded; handed over at its next step), held (the target reviews it, or its client holds it for your permission mode; do not resend), duplicate (the same message went there moments ago), refused (detail says why), not_found, ambiguous (several sessions have that name: pick one from \"candidates\" and send again with its id), self (that is you). Messages are at most {} bytes.", limits.max_message_bytes),
        "inputSchema": {
            "type": "object",
            "properties": {
                "to": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The target session: its exact id, its name (case-insensitive), or a stream it claimed. Use the id when a name is ambiguous."
                },
                "message": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The message, plain text. Say what you need and why; the receiver did not see your conversation."
                },
                "summary": {
                    "type": "string",
                    "maxLength": limits.max_summary_chars,
                    "description": format!("Optional one-line preview of 5-10 words (at most {} characters), shown in logs and when the message is held for review.", limits.max_summary_chars)
                }
            },
            "required": ["to", "message"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "status": {"type": "string", "description": "delivered, accepted, queued, held, duplicate, refused, not_found, ambiguous or self"},
                "message_id": {"type": "string"},
                "detail": {"type": "string"},
                "target": {"type": "object", "properties": {"name": {"type": "string"}, "id": {"type": "string"}}, "required": ["name", "id"]},
                "candidates": {
                    "type": "array",
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "id": {"type": "string"}, "cwd": {"type": "string"}}, "required": ["name", "id"]}
                }
            },
            "required": ["status", "message_id", "detail"]
        },
        "annotations": {"title": "Send a message to another session", "readOnlyHint": false, "destructiveHint": false, "idempotentHint": false, "openWorldHint": false}
    })
}

/// Both tools, with the limits of `limits` in their schemas.
pub fn definitions(limits: &MessagingConfig) -> Vec<Value> {
    vec![list_definition(), send_definition(limits)]
}
