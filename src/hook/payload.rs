//! The hook payload Claude Code writes on stdin (see PROTOCOL.md for the fields used).

use serde_json::Value;

/// The fields of a hook payload the suite uses; the rest stays in `raw`.
#[derive(Clone, Debug, Default)]
pub struct Payload {
    pub raw: Value,
    pub event: String,
    pub session_id: String,
    pub cwd: String,
    pub tool_name: String,
    pub tool_input: Value,
    pub transcript_path: String,
    pub permission_mode: String,
    /// Set only for calls made inside a subagent.
    pub agent_id: Option<String>,
}

fn text(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Payload {
    /// Parses stdin. Anything that is not a JSON object is an error (the guard then allows).
    pub fn parse(bytes: &[u8]) -> Result<Payload, String> {
        let raw: Value =
            serde_json::from_slice(bytes).map_err(|e| format!("payload is not JSON: {e}"))?;
        if !raw.is_object() {
            return Err("payload is not a JSON object".into());
        }
        Ok(Payload {
            event: text(&raw, "hook_event_name"),
            session_id: text(&raw, "session_id"),
            cwd: text(&raw, "cwd"),
            tool_name: text(&raw, "tool_name"),
            tool_input: raw.get("tool_input").cloned().unwrap_or(Value::Null),
            transcript_path: text(&raw, "transcript_path"),
            permission_mode: text(&raw, "permission_mode"),
            agent_id: raw
                .get("agent_id")
                .and_then(Value::as_str)
                .map(str::to_string),
            raw,
        })
    }

    /// A string field of `tool_input`.
    pub fn input_str(&self, key: &str) -> Option<&str> {
        self.tool_input.get(key).and_then(Value::as_str)
    }

    /// The MCP tool part of `mcp__<server>__<tool>`, if this is an MCP call.
    pub fn mcp_tool(&self) -> Option<&str> {
        let rest = self.tool_name.strip_prefix("mcp__")?;
        rest.split_once("__").map(|(_, tool)| tool)
    }
}
