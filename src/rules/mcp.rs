//! MCP tool calls: blocked by tool name (`mcp__<server>__<tool>`, the tool part is
//! compared case-insensitively), and plugin toggles naming a protected plugin.

use serde_json::Value;

use super::args::{has_url_path, mentions_id};
use super::{Found, Hit, RuleId, Rules, clip};

/// Most characters of the input quoted in a hit.
const MAX_INPUT_TEXT: usize = 120;

/// The tool part of `mcp__<server>__<tool>`: the last `__` component, so a server name that
/// holds `__` cannot hide the tool (the whole name when it has no such form).
pub(crate) fn tool_part(tool_name: &str) -> &str {
    tool_name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.rsplit_once("__"))
        .map_or(tool_name, |(_, tool)| tool)
}

/// Words of a tool name that make it a command runner (`run_shell_command`, `execute_code`,
/// `start_process`, `evaluate_script`, `bash`, …) or an app restarter (`restart_app`).
pub const EXEC_WORDS: &[&str] = &[
    "exec",
    "execute",
    "shell",
    "bash",
    "sh",
    "zsh",
    "pwsh",
    "powershell",
    "cmd",
    "command",
    "commands",
    "terminal",
    "process",
    "spawn",
    "script",
    "eval",
    "evaluate",
    "restart",
    "relaunch",
    "reboot",
    "kill",
];

/// Words that make it a plugin switch (`toggle_plugin`, `uninstall_plugin`).
pub const TOGGLE_WORDS: &[&str] = &[
    "toggle",
    "enable",
    "disable",
    "install",
    "uninstall",
    "reinstall",
    "activate",
    "deactivate",
];

/// Words that make it an HTTP client (`http_request`, `fetch`), checked like `curl`.
pub const HTTP_WORDS: &[&str] = &["http", "https", "fetch", "request", "curl", "wget", "url"];

/// The lower-case words of a tool name: split at `_`, `-`, `.` and lower→upper case steps.
pub fn name_words(tool: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in tool.chars() {
        if c == '_' || c == '-' || c == '.' || c == ' ' {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Words that make a tool a reader even when it names a runner (`kill_process_report`,
/// `list_processes`, `get_command_history`).
pub const READ_WORDS: &[&str] = &[
    "list", "get", "read", "show", "report", "status", "info", "describe", "search", "find",
    "view", "log", "logs", "history",
];

fn has_word(tool: &str, words: &[&str]) -> bool {
    let w = name_words(tool);
    w.iter().any(|x| words.contains(&x.as_str()))
        && !w.iter().any(|x| READ_WORDS.contains(&x.as_str()))
}

/// Every string in `v`, depth-first, at most `budget` values.
fn strings<'v>(v: &'v Value, budget: &mut usize, out: &mut Vec<&'v str>) {
    if *budget == 0 {
        return;
    }
    *budget -= 1;
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, budget, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, budget, out)),
        _ => {}
    }
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

/// The rules over an MCP call. `lookalike_ok`: the config says this tool only looks like a
/// command runner or toggle by name, so the name pattern does not count (the lists still do).
pub(super) fn check(r: &Rules, tool_name: &str, input: &Value, lookalike_ok: bool) -> Vec<Hit> {
    let named = tool_part(tool_name);
    let tool = named.to_ascii_lowercase();
    let mut out = Vec::new();
    let runs =
        r.mcp_command_tools.contains(&tool) || (!lookalike_ok && has_word(named, EXEC_WORDS));
    if r.enabled(RuleId::McpArbitraryCommand) && runs {
        out.push(Hit::new(
            RuleId::McpArbitraryCommand,
            describe(tool_name, input),
            Found::from(format!(
                "is the MCP tool `{tool}`, which runs commands outside the guard's view"
            )),
        ));
    }
    if has_word(named, HTTP_WORDS) {
        let mut found = Vec::new();
        strings(input, &mut 10_000, &mut found);
        if r.enabled(RuleId::AppRestart)
            && let Some(path) = r
                .relaunch_paths
                .iter()
                .find(|p| found.iter().any(|s| has_url_path(s, p)))
        {
            out.push(Hit::new(
                RuleId::AppRestart,
                describe(tool_name, input),
                Found::from(format!(
                    "calls the bridge's `{path}`, which relaunches the app"
                )),
            ));
        }
        if r.enabled(RuleId::PluginProtectedToggle)
            && let Some(path) = r
                .plugin_paths
                .iter()
                .find(|p| found.iter().any(|s| has_url_path(s, p)))
            && let Some(id) = r
                .protected_plugins
                .iter()
                .find(|id| json_mentions(input, id, &mut 10_000))
        {
            out.push(Hit::new(
                RuleId::PluginProtectedToggle,
                describe(tool_name, input),
                Found::from(format!(
                    "calls the bridge's `{path}` for the protected plugin `{id}`"
                )),
            ));
        }
    }
    let toggles = r.mcp_plugin_tools.contains(&tool)
        || (!lookalike_ok && has_word(named, TOGGLE_WORDS) && tool.contains("plugin"));
    if r.enabled(RuleId::PluginProtectedToggle) && toggles {
        for id in &r.protected_plugins {
            let mut budget = 10_000;
            if json_mentions(input, id, &mut budget) {
                out.push(Hit::new(
                    RuleId::PluginProtectedToggle,
                    describe(tool_name, input),
                    Found::from(format!("toggles the protected plugin `{id}`")),
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
        assert_eq!(
            tool_part("mcp__kazuo__ai__write_project_file"),
            "write_project_file"
        );
        assert_eq!(name_words("runShellCommand"), ["run", "shell", "command"]);
        assert_eq!(name_words("evaluate_script"), ["evaluate", "script"]);
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
        for name in [
            "start_process",
            "run_shell_command",
            "shell",
            "bash",
            "exec",
            "execute_code",
            "run_script",
            "evaluate_script",
            "interact_with_process",
            "restart_app",
            "relaunch_app",
            "mcp__a__b__runShellCommand",
        ] {
            let h = r.check_mcp(&format!("mcp__srv__{name}"), &json!({}));
            assert_eq!(h.len(), 1, "{name}");
            assert!(
                r.check_mcp_allowing(&format!("mcp__srv__{name}"), &json!({}), true)
                    .is_empty(),
                "{name} allowed as a lookalike"
            );
        }
        let h = r.check_mcp(
            "mcp__srv__http_request",
            &json!({"url": "http://127.0.0.1:9555/app/relaunch", "method": "POST"}),
        );
        assert_eq!(h[0].rule, "app.restart");
        let h = r.check_mcp(
            "mcp__srv__fetch",
            &json!({"url": "http://127.0.0.1:9555/plugins/toggle", "body": "{\"id\":\"ai-chat\"}"}),
        );
        assert_eq!(h[0].rule, "plugin.protected-toggle");
        assert!(
            r.check_mcp(
                "mcp__srv__fetch",
                &json!({"url": "https://example.com/docs"})
            )
            .is_empty()
        );
        let h = r.check_mcp("mcp__srv__toggle_plugin", &json!({"pluginId": "ai-chat"}));
        assert_eq!(h[0].rule, "plugin.protected-toggle");
        assert!(
            r.check_mcp("mcp__srv__uninstall_plugin", &json!({"id": "notes"}))
                .is_empty()
        );
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
