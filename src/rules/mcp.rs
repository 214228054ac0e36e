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

/// Git's commands a git MCP tool may name (`git_checkout`, `gitReset`, `git-stash`), each run
/// as that git command.
const GIT_SUBS: &[&str] = &[
    "checkout", "switch", "reset", "restore", "clean", "stash", "add", "rm", "mv", "commit",
    "merge", "rebase", "pull", "push", "branch", "tag", "am", "apply", "revert", "cherry",
];

/// Input keys of a git MCP tool whose values are the command's operands, in this order.
const GIT_ARG_KEYS: &[&str] = &[
    "branchname",
    "branch",
    "newbranch",
    "target",
    "ref",
    "revision",
    "rev",
    "commit",
    "treeish",
    "startpoint",
    "basebranch",
    "remote",
    "source",
    "files",
    "paths",
    "path",
    "file",
    "pathspec",
    "pathspecs",
];

/// The git command a git MCP tool runs, as a shell command the rules read, and the folder it
/// runs in when the input names one (`repo_path`): `mcp__git__git_checkout {branch_name: x}` is
/// `git checkout x`; `{mode: "hard"}` and boolean keys (`force`, `hard`) become options. `None`
/// for a tool that is not git's or names none of [`GIT_SUBS`] (`git_status`, `git_log`).
pub fn git_command(tool_name: &str, input: &Value) -> Option<(String, Option<String>)> {
    let server_git = tool_name
        .strip_prefix("mcp__")
        .and_then(|rest| rest.split("__").next())
        .is_some_and(|server| name_words(server).iter().any(|w| w == "git"));
    let words = name_words(tool_part(tool_name));
    if !server_git && !words.iter().any(|w| w == "git") {
        return None;
    }
    let sub = words.iter().find(|w| GIT_SUBS.contains(&w.as_str()))?;
    let sub = if sub == "cherry" { "cherry-pick" } else { sub };
    let q = |s: &str| crate::shell::word::quote_posix(s).into_owned();
    let mut cmd = format!("git {sub}");
    let Some(map) = input.as_object() else {
        return Some((cmd, None));
    };
    let norm = |k: &str| -> String {
        k.chars()
            .filter(|c| !matches!(c, '_' | '-'))
            .flat_map(char::to_lowercase)
            .collect()
    };
    let mut dir = None;
    for (k, v) in map {
        match (norm(k).as_str(), v) {
            (
                "repopath" | "repo" | "repository" | "cwd" | "workdir" | "directory",
                Value::String(d),
            ) => {
                dir = Some(d.clone());
            }
            ("mode" | "resettype", Value::String(m)) if !m.is_empty() => {
                cmd.push_str(&format!(" --{}", q(m.trim_start_matches('-'))));
            }
            (_, Value::Bool(true)) if k.chars().all(|c| c.is_ascii_lowercase()) => {
                cmd.push_str(&format!(" --{k}"));
            }
            _ => {}
        }
    }
    for key in GIT_ARG_KEYS {
        for v in map.iter().filter(|(k, _)| norm(k) == *key).map(|(_, v)| v) {
            match v {
                Value::String(a) if !a.is_empty() => cmd.push_str(&format!(" {}", q(a))),
                Value::Array(items) => {
                    for a in items.iter().filter_map(Value::as_str) {
                        cmd.push_str(&format!(" {}", q(a)));
                    }
                }
                _ => {}
            }
        }
    }
    Some((cmd, dir))
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
    fn git_tools_are_the_git_commands_they_run() {
        let g = |t: &str, v: serde_json::Value| git_command(t, &v);
        assert_eq!(
            g(
                "mcp__git__git_checkout",
                json!({"repo_path": "/r", "branch_name": "x y"})
            ),
            Some(("git checkout 'x y'".into(), Some("/r".into())))
        );
        assert_eq!(
            g(
                "mcp__git__git_reset",
                json!({"mode": "hard", "target": "HEAD~1"})
            ),
            Some(("git reset --hard 'HEAD~1'".into(), None))
        );
        assert_eq!(
            g(
                "mcp__vcs__gitClean",
                json!({"force": true, "dry_run": true})
            ),
            Some(("git clean --force".into(), None)),
            "only one-word boolean keys become options"
        );
        assert_eq!(
            g("mcp__git__git_add", json!({"files": ["a", "b"]})),
            Some(("git add a b".into(), None))
        );
        assert_eq!(
            g("mcp__git__stash", json!(null)),
            Some(("git stash".into(), None))
        );
        assert_eq!(g("mcp__git__git_status", json!({})), None);
        assert_eq!(
            g("mcp__fs__checkout_cart", json!({})),
            None,
            "not a git tool"
        );
        assert_eq!(
            g("mcp__github__create_branch", json!({})),
            None,
            "not this tree's git"
        );
    }

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
