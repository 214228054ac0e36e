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

/// One tool: its name, the operation it runs (the bus's `op`) and the arguments it takes.
pub struct Tool {
    pub name: &'static str,
    pub op: &'static str,
    pub fields: &'static [&'static str],
}

pub const TOOLS: [Tool; 2] = [
    Tool {
        name: LIST,
        op: "list",
        fields: &["scope", "include_subagents", "limit"],
    },
    Tool {
        name: SEND,
        op: "send",
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
        "description": format!("Send a plain-text message to another Claude Code session on this machine, by its name or id (see list_session_agents). It reaches that session's model at its next step, or wakes it if it is not running. The sender is always this session. The answer is never an error for a business outcome: read \"status\" — delivered (the target's model has it), accepted (its client took it; its model sees it at its next step), queued (recorded; handed over at its next step or run), waking (it was not running; it is being resumed with the message), held (the target reviews it, or its client holds it for your permission mode; do not resend), duplicate (the same message went there moments ago), refused (detail says why), not_found, ambiguous (several sessions have that name: pick one from \"candidates\" and send again with its id), self (that is you). Messages are at most {} bytes.", limits.max_message_bytes),
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
                "status": {"type": "string", "description": "delivered, accepted, queued, waking, held, duplicate, refused, not_found, ambiguous or self"},
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messaging::request;

    fn def(name: &str) -> Value {
        definitions(&MessagingConfig::default())
            .into_iter()
            .find(|d| d["name"] == name)
            .unwrap()
    }

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    #[test]
    fn exactly_the_two_tools_of_the_spec() {
        let names: Vec<Value> = definitions(&MessagingConfig::default())
            .iter()
            .map(|d| d["name"].clone())
            .collect();
        assert_eq!(names, vec![json!(LIST), json!(SEND)]);
        for d in definitions(&MessagingConfig::default()) {
            let name = d["name"].as_str().unwrap();
            let tool = find(name).unwrap();
            // What the server accepts is what the schema offers, and nothing else.
            assert_eq!(keys(&d["inputSchema"]["properties"]), tool.fields, "{name}");
            assert_eq!(d["inputSchema"]["additionalProperties"], false, "{name}");
            assert!(d["description"].as_str().unwrap().len() > 80, "{name}");
            for (field, schema) in d["inputSchema"]["properties"].as_object().unwrap() {
                assert!(
                    schema["description"]
                        .as_str()
                        .is_some_and(|s| !s.is_empty()),
                    "{name}.{field} has no description"
                );
            }
        }
    }

    #[test]
    fn list_schema_is_section_4() {
        let s = &def(LIST)["inputSchema"];
        let p = &s["properties"];
        assert_eq!(p["scope"]["type"], "string");
        assert_eq!(
            p["scope"]["enum"],
            json!(["workspace", "machine", "session"])
        );
        assert_eq!(p["scope"]["default"], "workspace");
        assert_eq!(p["include_subagents"]["type"], "boolean");
        assert_eq!(p["include_subagents"]["default"], false);
        assert_eq!(p["limit"]["type"], "integer");
        assert_eq!(
            (&p["limit"]["minimum"], &p["limit"]["maximum"]),
            (&json!(1), &json!(200))
        );
        assert!(s.get("required").is_none(), "every list field is optional");
        // The schema's range is the one the server enforces.
        for n in [0u64, 1, 50, 200, 201, 70_000] {
            let in_schema = (1..=200).contains(&n);
            let parsed = request::parse(json!({"op": "list", "limit": n}));
            assert_eq!(parsed.is_ok(), in_schema, "limit {n}");
        }
        for scope in p["scope"]["enum"].as_array().unwrap() {
            assert!(
                request::parse(json!({"op": "list", "scope": scope})).is_ok(),
                "{scope}"
            );
        }
        let out = &def(LIST)["outputSchema"];
        assert_eq!(
            keys(&out["properties"]["agents"]["items"]["properties"]),
            [
                "name",
                "id",
                "short_id",
                "cwd",
                "kind",
                "status",
                "name_source",
                "sendable"
            ]
        );
        for k in ["agents", "omitted", "note"] {
            assert!(out["properties"].get(k).is_some(), "{k}");
        }
    }

    #[test]
    fn send_schema_is_section_5() {
        let mut limits = MessagingConfig::default();
        let s = &def(SEND)["inputSchema"];
        let p = &s["properties"];
        assert_eq!(s["required"], json!(["to", "message"]));
        for f in ["to", "message", "summary"] {
            assert_eq!(p[f]["type"], "string", "{f}");
        }
        assert_eq!(p["to"]["minLength"], 1);
        assert_eq!(p["message"]["minLength"], 1);
        assert_eq!(p["summary"]["maxLength"], 200, "≤200 characters");
        // The summary's limit is the repo's.
        limits.max_summary_chars = 80;
        let d = definitions(&limits);
        assert_eq!(
            d[1]["inputSchema"]["properties"]["summary"]["maxLength"],
            80
        );
        let out = &def(SEND)["outputSchema"];
        assert_eq!(
            keys(&out["properties"]),
            ["status", "message_id", "detail", "target", "candidates"]
        );
        assert_eq!(out["required"], json!(["status", "message_id", "detail"]));
        // Every status the send can end in is named to the model.
        let desc = def(SEND)["description"].as_str().unwrap().to_string();
        for s in [
            "delivered",
            "accepted",
            "queued",
            "held",
            "duplicate",
            "refused",
            "not_found",
            "ambiguous",
            "self",
        ] {
            assert!(desc.contains(s), "{s}");
            assert!(
                out["properties"]["status"]["description"]
                    .as_str()
                    .unwrap()
                    .contains(s)
            );
        }
    }

    #[test]
    fn no_argument_names_the_sender() {
        let send = find(SEND).unwrap();
        for k in ["from", "sender", "sender_id", "token", "dedupe"] {
            let args = json!({"to": "a", "message": "m", k: "x"})
                .as_object()
                .cloned()
                .unwrap();
            let e = check_fields(send, &args).unwrap_err();
            assert_eq!(e.code, "bad_request");
            assert!(e.message.contains(&format!("'{k}'")), "{}", e.message);
        }
        let ok = json!({"to": "a", "message": "m", "summary": "s"})
            .as_object()
            .cloned()
            .unwrap();
        assert!(check_fields(send, &ok).is_ok());
    }
}
