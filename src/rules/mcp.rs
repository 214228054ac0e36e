//! MCP tool calls: blocked by tool name (`mcp__<server>__<tool>`, the tool part is
//! compared case-insensitively), and plugin toggles naming a protected plugin.

use serde_json::Value;

use super::args::mentions_id;
use super::{Hit, RuleId, Rules, clip};

/// Most characters of the input quoted in a hit.
const MAX_INPUT_TEXT: usize = 120;

/// The tool part of `mcp__<server>__<tool>` (the whole name when it has no such form).
pub(crate) fn tool_part(tool_name: &str) -> &str {
    tool_name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .map_or(tool_name, |(_, tool)| tool)
}

/// Whether any string in `v` (keys included) mentions `id`.
fn json_mentions(v: &Value, id: &str, budget: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    match v {
        Value::String(s) => mentions_id(s, id),
        Value::Array(a) => a.iter().any(|x| json_mentions(x, id, budget)),
        Value::Object(o) => o
            .iter()
            .any(|(k, x)| mentions_id(k, id) || json_mentions(x, id, budget)),
        _ => false,
    }
}

fn describe(tool_name: &str, input: &Value) -> String {
    let text = clip(input.to_string(), MAX_INPUT_TEXT);
    if text == "{}" || text == "null" {
        tool_name.to_string()
    } else {
        format!("{tool_name} {text}")
    }
}

pub(super) fn check(r: &Rules, tool_name: &str, input: &Value) -> Vec<Hit> {
    let tool = tool_part(tool_name).to_ascii_lowercase();
    let mut out = Vec::new();
    if r.enabled(RuleId::McpArbitraryCommand) && r.mcp_command_tools.contains(&tool) {
        out.push(Hit::new(
            RuleId::McpArbitraryCommand,
            describe(tool_name, input),
            &format!("is the MCP tool `{tool}`, which runs commands outside the guard's view"),
        ));
    }
    if r.enabled(RuleId::PluginProtectedToggle) && r.mcp_plugin_tools.contains(&tool) {
        for id in &r.protected_plugins {
            let mut budget = 10_000;
            if json_mentions(input, id, &mut budget) {
                out.push(Hit::new(
                    RuleId::PluginProtectedToggle,
                    describe(tool_name, input),
                    &format!("toggles the protected plugin `{id}`"),
                ));
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{RulesConfig, compile};
    use serde_json::json;

    #[test]
    fn tool_names() {
        assert_eq!(tool_part("mcp__app__kill_process"), "kill_process");
        assert_eq!(
            tool_part("mcp__my_server__execute_command"),
            "execute_command"
        );
        assert_eq!(tool_part("kill_process"), "kill_process");
        assert_eq!(tool_part("mcp__x"), "mcp__x");
    }

    #[test]
    fn checks() {
        let r = compile(&RulesConfig::default()).unwrap();
        let h = r.check_mcp("mcp__app__kill_process", &json!({"pid": 1}));
        assert_eq!(h.len(), 1);
        assert_eq!(h[0].rule, "mcp.arbitrary-command");
        assert_eq!(h[0].segment, r#"mcp__app__kill_process {"pid":1}"#);
        assert!(
            h[0].reason
                .starts_with("mcp.arbitrary-command: `mcp__app__kill_process")
        );
        assert!(r.check_mcp("mcp__app__Execute_Command", &json!({})).len() == 1);
        assert!(r.check_mcp("mcp__app__read_file", &json!({})).is_empty());
        let h = r.check_mcp(
            "mcp__app__live_plugin_toggle",
            &json!({"pluginId": "ai-chat"}),
        );
        assert_eq!(h[0].rule, "plugin.protected-toggle");
        let h = r.check_mcp(
            "mcp__app__live_plugin_toggle",
            &json!({"plugins": [{"id": "notes"}, {"id": "AI-CHAT"}]}),
        );
        assert_eq!(h.len(), 1);
        assert!(
            r.check_mcp(
                "mcp__app__live_plugin_toggle",
                &json!({"pluginId": "notes"})
            )
            .is_empty()
        );
    }
}
