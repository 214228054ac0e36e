//! The hook wiring of the clients besides Claude Code: which clients `guard install` wires, the
//! guard's entries in each one's project config, and the `guard doctor` checks that say whether
//! those hooks really run on this machine.
//!
//! ```text
//! Codex CLI    .codex/hooks.json       PreToolUse, PostToolUse, SessionStart, SessionEnd,
//!                                      UserPromptSubmit, Stop; timeouts in seconds; no matcher
//!                                      (Codex reads it as a regex: none is every tool)
//! Gemini CLI   .gemini/settings.json   BeforeTool, AfterTool (matcher "*"), SessionStart,
//!                                      SessionEnd, BeforeAgent, AfterAgent; timeouts in ms;
//!                                      each entry named "session-lock"
//! ```
//!
//! Both files share Claude Code's shape (`hooks.<event>: [{matcher?, hooks: [{type, command,
//! timeout}]}]`), and everything else in them is kept. Neither client says where the project is
//! to its hooks the way Claude Code's `$CLAUDE_PROJECT_DIR` does (Codex runs a hook in the
//! call's folder, which may be below the top), so their entries run [`HOOK_COMMAND`]: it looks
//! for the committed launcher from the hook's folder upward, with shell builtins only.
//!
//! Neither client runs a project's hooks just because they are there: Codex runs them only in a
//! trusted project and only once a person trusted each hook's definition (an untrusted one is
//! skipped without a word), and Gemini only in a trusted folder. `guard doctor` asks Codex
//! itself (`codex app-server`, `hooks/list`) and reads Gemini's trusted folders, and says
//! exactly how to give the trust that is missing.

mod checks; // doctor: the entries, the guard answering the client's payload, the trust
mod codex_trust; // what Codex itself says of the project's hooks (`codex app-server`)
mod gemini_trust; // Gemini's trusted folders and hook settings

pub use checks::checks;
pub use codex_trust::{CodexView, codex_trust_check};
pub use gemini_trust::gemini_rules_trust;

use super::install::shell_quote;
use crate::clients::{Client, EVENTS, Event};
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The hook command of the Codex and Gemini entries: the committed launcher, looked for from
/// the hook's folder up to `/` (Codex runs a hook in the call's folder), or a refusal saying it
/// is missing (a hook that finds no guard must not let the session run unguarded).
pub const HOOK_COMMAND: &str = concat!(
    "d=\"$PWD\"; until [ -z \"$d\" ] || [ -f \"$d/session-lock/guard-hook\" ]; do d=\"${d%/*}\"; done; ",
    "[ -n \"$d\" ] && exec sh \"$d/session-lock/guard-hook\"; ",
    "echo 'session-lock: no session-lock/guard-hook in this folder or above it; blocked' >&2; exit 2"
);

/// The name Gemini shows (and `hooksConfig.disabled` lists) for the guard's entries.
pub const GEMINI_HOOK_NAME: &str = "session-lock";

/// The project config file `client`'s hooks are read from, relative to the repo.
pub fn config_file(client: Client) -> &'static str {
    match client {
        Client::Claude => ".claude/settings.json",
        Client::Codex => ".codex/hooks.json",
        Client::Gemini => ".gemini/settings.json",
    }
}

/// The clients install wires: the ones named (`--agent`, each once), else Claude Code and every
/// other client whose program is on `PATH`.
pub fn chosen(named: &[Client]) -> Vec<Client> {
    if !named.is_empty() {
        return crate::clients::ALL
            .into_iter()
            .filter(|c| named.contains(c))
            .collect();
    }
    crate::clients::ALL
        .into_iter()
        .filter(|c| *c == Client::Claude || crate::agent::locate::on_path(c.program()).is_some())
        .collect()
}

/// The matcher of an entry for `event` in `client`'s config.
fn matcher(client: Client, event: Event) -> Option<&'static str> {
    (client == Client::Gemini && event.is_tool()).then_some("*")
}

/// The handler object of a guard entry.
fn handler(client: Client, command: &str, timeout_s: u64) -> Value {
    match client {
        Client::Gemini => json!({"name": GEMINI_HOOK_NAME, "type": "command", "command": command,
                                 "timeout": timeout_s.saturating_mul(1000)}),
        _ => json!({"type": "command", "command": command, "timeout": timeout_s}),
    }
}

/// `doc` without any guard entry (the lists and `hooks` object that held only those go too).
pub fn strip(client: Client, mut doc: Value) -> Result<Value, String> {
    let Some(root) = doc.as_object_mut() else {
        return Err("the file is not a JSON object".into());
    };
    let Some(hooks) = root.get_mut("hooks") else {
        return Ok(doc);
    };
    let Some(hooks) = hooks.as_object_mut() else {
        return Err("\"hooks\" is not an object".into());
    };
    for event in EVENTS {
        let name = event.name_for(client);
        let Some(list) = hooks.get_mut(name) else {
            continue;
        };
        let Some(groups) = list.as_array_mut() else {
            return Err(format!("\"hooks.{name}\" is not a list"));
        };
        let before = groups.len();
        for group in groups.iter_mut() {
            if let Some(inner) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                inner.retain(|h| {
                    !h.get("command")
                        .and_then(Value::as_str)
                        .is_some_and(super::is_guard_command)
                });
            }
        }
        groups.retain(|g| {
            g.get("hooks")
                .and_then(Value::as_array)
                .is_none_or(|h| !h.is_empty())
        });
        if groups.is_empty() && before > 0 {
            hooks.remove(name);
        }
    }
    // Gemini keeps its hook settings (`enabled`, `disabled`) beside the events: a `hooks` object
    // left with only those is not ours to remove.
    if hooks.is_empty() {
        root.remove("hooks");
    }
    Ok(doc)
}

/// `doc` with one guard entry per event (an old guard entry, whatever its command, replaced).
pub fn merge(client: Client, doc: Value, command: &str, timeout_s: u64) -> Result<Value, String> {
    let mut doc = strip(client, doc)?;
    let hooks = doc
        .as_object_mut()
        .expect("strip checked the shape")
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .expect("strip checked the shape");
    for event in EVENTS {
        let mut group = Map::new();
        if let Some(m) = matcher(client, event) {
            group.insert("matcher".into(), json!(m));
        }
        group.insert("hooks".into(), json!([handler(client, command, timeout_s)]));
        hooks
            .entry(event.name_for(client))
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .expect("strip checked the shape")
            .push(Value::Object(group));
    }
    Ok(doc)
}

fn pretty(doc: &Value) -> String {
    let mut text = serde_json::to_string_pretty(doc).expect("a JSON value serializes");
    text.push('\n');
    text
}

fn parse(path: &Path, text: Option<&str>) -> Result<Value, String> {
    match text {
        Some(t) if !t.trim().is_empty() => serde_json::from_str(t)
            .map_err(|e| format!("{}: not valid JSON ({e}); nothing changed", path.display())),
        _ => Ok(json!({})),
    }
}

/// A JSON file's value, `None` when it is missing or not JSON.
fn json_file(path: &Path) -> Option<Value> {
    read(path)
        .ok()
        .flatten()
        .and_then(|t| serde_json::from_str(&t).ok())
}

fn read(path: &Path) -> Result<Option<String>, String> {
    crate::atomic::read_optional(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// The new text of each non-Claude client's config install writes (`clients` as [`chosen`]).
/// `guard`: a guard program run directly instead of the launcher.
pub fn install_plan(
    root: &Path,
    clients: &[Client],
    guard: Option<&Path>,
    timeout_s: u64,
) -> Result<Vec<(PathBuf, Option<String>)>, String> {
    let command = match guard {
        Some(g) => shell_quote(&g.to_string_lossy()),
        None => HOOK_COMMAND.to_string(),
    };
    let mut plan = Vec::new();
    for &client in clients.iter().filter(|c| **c != Client::Claude) {
        let path = root.join(config_file(client));
        let doc = parse(&path, read(&path)?.as_deref())?;
        let merged = merge(client, doc, &command, timeout_s)
            .map_err(|e| format!("{}: {e}; nothing changed", path.display()))?;
        plan.push((path, Some(pretty(&merged))));
    }
    Ok(plan)
}

/// What uninstall leaves of each non-Claude client's config that holds guard entries: the file
/// as it was before install when only the guard's entries were added since (`before`, from the
/// install backup), else the file without them, or nothing when nothing else was in it.
pub fn uninstall_plan(
    root: &Path,
    before: impl Fn(&Path) -> Option<Option<String>>,
) -> Result<Vec<(PathBuf, Option<String>)>, String> {
    let mut plan = Vec::new();
    for client in [Client::Codex, Client::Gemini] {
        let path = root.join(config_file(client));
        let Some(text) = read(&path)? else { continue };
        let doc = parse(&path, Some(&text))?;
        let stripped = strip(client, doc.clone())
            .map_err(|e| format!("{}: {e}; nothing changed", path.display()))?;
        if stripped == doc {
            continue; // nothing of ours: its bytes stay
        }
        let keep = match before(&path) {
            Some(Some(orig))
                if serde_json::from_str::<Value>(&orig).ok().as_ref() == Some(&stripped) =>
            {
                Some(orig)
            }
            _ if stripped == json!({}) => None,
            _ => Some(pretty(&stripped)),
        };
        plan.push((path, keep));
    }
    Ok(plan)
}

/// The folders uninstall may remove once empty (`.codex`, `.gemini`).
pub fn config_dirs(root: &Path) -> Vec<PathBuf> {
    [Client::Codex, Client::Gemini]
        .into_iter()
        .filter_map(|c| root.join(config_file(c)).parent().map(Path::to_path_buf))
        .collect()
}

/// True when the repo is wired for another client but not for Claude Code (`guard install
/// --agent codex`): the doctor then says so instead of failing Claude Code's checks.
pub fn claude_skipped(root: &Path) -> bool {
    let wired = |client: Client| {
        json_file(&root.join(config_file(client)))
            .is_some_and(|d| !checks::guard_commands(client, &d).is_empty())
    };
    !wired(Client::Claude) && (wired(Client::Codex) || wired(Client::Gemini))
}

/// One line per wired client for install's report: what it reads, and what it still needs.
pub fn wired_note(client: Client) -> String {
    let file = config_file(client);
    match client {
        Client::Claude => format!("{} ({file})", client.label()),
        Client::Codex => format!(
            "{} ({file}): its hooks run only in a trusted project and once you trust them; guard doctor says how",
            client.label()
        ),
        Client::Gemini => format!(
            "{} ({file}): its hooks run only in a trusted folder; guard doctor says how",
            client.label()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::guard::doctor::run_hook_with;

    #[test]
    fn each_clients_entries_come_and_go_keeping_the_rest() {
        for client in [Client::Codex, Client::Gemini] {
            let event = Event::PreTool.name_for(client);
            let doc = json!({"theme": "x", "hooks": {event: [{"hooks": [{"type": "command", "command": "other"}]}]}});
            let once = merge(client, doc.clone(), HOOK_COMMAND, 10).unwrap();
            assert_eq!(
                merge(client, once.clone(), HOOK_COMMAND, 10).unwrap(),
                once,
                "idempotent"
            );
            assert_eq!(once["theme"], "x");
            let pre = once["hooks"][event].as_array().unwrap();
            assert_eq!(pre.len(), 2);
            assert_eq!(pre[0]["hooks"][0]["command"], "other");
            assert_eq!(pre[1]["hooks"][0]["command"], HOOK_COMMAND);
            assert_eq!(
                strip(client, once.clone()).unwrap(),
                doc,
                "strip undoes merge"
            );
            assert_eq!(
                strip(client, merge(client, json!({}), "/bin/guard", 1).unwrap()).unwrap(),
                json!({})
            );
            let events: Vec<&String> = once["hooks"].as_object().unwrap().keys().collect();
            assert_eq!(events.len(), 6, "{events:?}");
        }
        let codex = merge(Client::Codex, json!({}), "g", 10).unwrap();
        assert_eq!(
            codex["hooks"]["PreToolUse"],
            json!([{"hooks": [{"type": "command", "command": "g", "timeout": 10}]}]),
            "no matcher: Codex reads it as a regex"
        );
        assert!(codex["hooks"].get("Stop").is_some());
        let gemini = merge(Client::Gemini, json!({}), "g", 10).unwrap();
        assert_eq!(
            gemini["hooks"]["BeforeTool"],
            json!([{"matcher": "*", "hooks": [{"name": "session-lock", "type": "command", "command": "g", "timeout": 10000}]}])
        );
        assert_eq!(
            gemini["hooks"]["AfterAgent"],
            json!([{"hooks": [{"name": "session-lock", "type": "command", "command": "g", "timeout": 10000}]}])
        );
        // Gemini's own hook settings stay.
        let with_settings = json!({"hooks": {"enabled": true}});
        let merged = merge(Client::Gemini, with_settings.clone(), "guard", 1).unwrap();
        assert_eq!(strip(Client::Gemini, merged).unwrap(), with_settings);
        assert!(merge(Client::Codex, json!([]), "g", 1).is_err());
        assert!(merge(Client::Codex, json!({"hooks": {"Stop": {}}}), "g", 1).is_err());
    }

    #[test]
    fn the_hook_command_finds_the_launcher_above_or_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("session-lock")).unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(
            root.join("session-lock/guard-hook"),
            "echo found \"$@\"; exit 0\n",
        )
        .unwrap();
        for cwd in [root.clone(), root.join("a/b")] {
            let o = run_hook_with("sh", &cwd, HOOK_COMMAND, "", b"").unwrap();
            let from = cwd.display();
            assert_eq!(
                (o.code, o.stdout.as_str()),
                (Some(0), "found"),
                "from {from}"
            );
        }
        let bare = tempfile::tempdir().unwrap();
        let o = run_hook_with("sh", bare.path(), HOOK_COMMAND, "", b"").unwrap();
        assert_eq!(o.code, Some(2));
        assert!(
            o.stderr.contains("no session-lock/guard-hook"),
            "{}",
            o.stderr
        );
        assert!(super::super::is_guard_command(HOOK_COMMAND));
    }
}
