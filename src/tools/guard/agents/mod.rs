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

use super::wiring;
use crate::clients::{Client, EVENTS, Event};
use crate::json_edit::Doc;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The hook command of the Codex and Gemini entries: the committed launcher, looked for from
/// the hook's folder up to `/` (Codex runs a hook in the call's folder), or a refusal saying it
/// is missing (a hook that finds no guard must not let the session run unguarded). Gemini
/// starts the hook in the session's folder but hands it the `PWD` of its own start (which bash
/// then keeps, even for `cd -P .`), so its `GEMINI_PROJECT_DIR` (that folder) comes first.
pub const HOOK_COMMAND: &str = concat!(
    "d=\"${GEMINI_PROJECT_DIR:-$PWD}\"; until [ -z \"$d\" ] || [ -f \"$d/session-lock/guard-hook\" ]; do d=\"${d%/*}\"; done; ",
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

/// Takes every guard entry out of `client`'s hook lists in `doc` (the lists and `hooks` object
/// that held only those go too; Gemini's hook settings beside the events stay).
pub fn strip_hooks(client: Client, doc: &Doc) -> Result<(), String> {
    wiring::strip_event_hooks(doc, EVENTS.into_iter().map(|e| e.name_for(client)))
}

/// One guard entry per event of `client` in `doc` (an old guard entry, whatever its command,
/// replaced), edited in the file's own text.
pub fn add_hooks(client: Client, doc: &Doc, command: &str, timeout_s: u64) -> Result<(), String> {
    strip_hooks(client, doc)?;
    wiring::append_groups(
        doc,
        EVENTS.into_iter().map(|event| {
            let mut group = Map::new();
            if let Some(m) = matcher(client, event) {
                group.insert("matcher".into(), json!(m));
            }
            group.insert("hooks".into(), json!([handler(client, command, timeout_s)]));
            (event.name_for(client), Value::Object(group))
        }),
    )
}

/// A JSON file's value (comments allowed), `None` when it is missing or not JSON.
pub(super) fn json_file(path: &Path) -> Option<Value> {
    crate::atomic::read_optional(path)
        .ok()
        .flatten()
        .and_then(|t| crate::json_edit::parse_value(&t).ok())
}

/// The clients besides Claude Code, each with its config file in `root`.
pub fn other_configs(root: &Path) -> Vec<(Client, PathBuf)> {
    [Client::Codex, Client::Gemini]
        .into_iter()
        .map(|c| (c, root.join(config_file(c))))
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

pub(super) fn name(client: Client, what: &str) -> &'static str {
    match (client, what) {
        (Client::Codex, "hooks") => "codex hooks",
        (Client::Codex, "runs") => "codex guard runs",
        (Client::Codex, _) => "codex trust",
        (_, "hooks") => "gemini hooks",
        (_, "runs") => "gemini guard runs",
        _ => "gemini trust",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` with the guard's entries added for `client`, as a value.
    fn merge(client: Client, text: &str, command: &str, timeout_s: u64) -> Result<Value, String> {
        let doc = Doc::parse(Some(text))?;
        add_hooks(client, &doc, command, timeout_s)?;
        Ok(doc.value())
    }

    fn strip(client: Client, value: &Value) -> Value {
        let doc = Doc::parse(Some(&value.to_string())).unwrap();
        strip_hooks(client, &doc).unwrap();
        doc.value()
    }

    #[test]
    fn each_clients_entries_come_and_go_keeping_the_rest() {
        for client in [Client::Codex, Client::Gemini] {
            let event = Event::PreTool.name_for(client);
            let doc = json!({"theme": "x", "hooks": {event: [{"hooks": [{"type": "command", "command": "other"}]}]}});
            let once = merge(client, &doc.to_string(), HOOK_COMMAND, 10).unwrap();
            assert_eq!(
                merge(client, &once.to_string(), HOOK_COMMAND, 10).unwrap(),
                once,
                "idempotent"
            );
            assert_eq!(once["theme"], "x");
            let pre = once["hooks"][event].as_array().unwrap();
            assert_eq!(pre.len(), 2);
            assert_eq!(pre[0]["hooks"][0]["command"], "other");
            assert_eq!(pre[1]["hooks"][0]["command"], HOOK_COMMAND);
            assert_eq!(strip(client, &once), doc, "strip undoes merge");
            let fresh = merge(client, "{}", "/bin/guard", 1).unwrap();
            assert_eq!(strip(client, &fresh), json!({}));
            let events: Vec<&String> = once["hooks"].as_object().unwrap().keys().collect();
            assert_eq!(events.len(), 6, "{events:?}");
        }
        let codex = merge(Client::Codex, "{}", "g", 10).unwrap();
        assert_eq!(
            codex["hooks"]["PreToolUse"],
            json!([{"hooks": [{"type": "command", "command": "g", "timeout": 10}]}]),
            "no matcher: Codex reads it as a regex"
        );
        assert!(codex["hooks"].get("Stop").is_some());
        let gemini = merge(Client::Gemini, "{}", "g", 10).unwrap();
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
        let merged = merge(Client::Gemini, &with_settings.to_string(), "guard", 1).unwrap();
        assert_eq!(strip(Client::Gemini, &merged), with_settings);
        assert!(merge(Client::Codex, "[]", "g", 1).is_err());
        assert!(merge(Client::Codex, r#"{"hooks": {"Stop": {}}}"#, "g", 1).is_err());
    }

    #[test]
    fn an_edit_keeps_the_files_own_text() {
        let text = "{\n  // the person's comment\n  \"theme\": \"x\"\n}\n";
        let doc = Doc::parse(Some(text)).unwrap();
        add_hooks(Client::Gemini, &doc, HOOK_COMMAND, 1).unwrap();
        let wired = doc.text();
        assert!(
            wired.starts_with("{\n  // the person's comment\n  \"theme\": \"x\","),
            "{wired}"
        );
        strip_hooks(Client::Gemini, &doc).unwrap();
        assert_eq!(
            crate::json_edit::parse_value(&doc.text()).unwrap(),
            json!({"theme": "x"})
        );
    }

    /// The hook command is a POSIX sh script (what Codex and Gemini CLI run their hooks with);
    /// Windows has no `sh` to run it with here.
    #[cfg(unix)]
    #[test]
    fn the_hook_command_finds_the_launcher_above_or_refuses() {
        use crate::tools::guard::doctor::run_hook_with;
        const LIMIT: std::time::Duration = std::time::Duration::from_secs(15);
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
            let o = run_hook_with("sh", &cwd, HOOK_COMMAND, b"", LIMIT).unwrap();
            let from = cwd.display();
            assert_eq!(
                (o.code, o.stdout.as_str()),
                (Some(0), "found"),
                "from {from}"
            );
        }
        // Under Gemini, a stale PWD from the client's environment does not mislead it.
        let bare = tempfile::tempdir().unwrap();
        for shell in ["sh", "bash"] {
            let o = std::process::Command::new(shell)
                .arg("-c")
                .arg(HOOK_COMMAND)
                .current_dir(&root)
                .env("PWD", bare.path())
                .env("GEMINI_PROJECT_DIR", &root)
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&o.stdout).trim(),
                "found",
                "{shell}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let o = run_hook_with("sh", bare.path(), HOOK_COMMAND, b"", LIMIT).unwrap();
        assert_eq!(o.code, Some(2));
        assert!(
            o.stderr.contains("no session-lock/guard-hook"),
            "{}",
            o.stderr
        );
        assert!(super::super::is_guard_command(HOOK_COMMAND));
    }
}
