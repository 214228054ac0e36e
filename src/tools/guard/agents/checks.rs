//! `guard doctor` for Codex CLI and Gemini CLI: for each client wired in the repo, its entries,
//! the hook command answering a harmless call in the client's own payload form (run the way the
//! client runs it), and the trust the client needs before it runs a project's hooks.

use super::{Client, EVENTS, config_file, json_file, name};
use crate::tools::guard::doctor::{Check, GUARD_MISSING_FIX, Level, check, run_hook_with};
use serde_json::{Value, json};
use std::path::Path;

/// The doctor's checks for Codex and Gemini: for each client wired in the repo, its entries, the
/// hook command answering a harmless call in the client's own payload form, and the trust the
/// client needs before it runs them. A client on PATH but not wired gets a warning.
pub fn checks(root: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    for client in [Client::Codex, Client::Gemini] {
        let path = root.join(config_file(client));
        let doc = json_file(&path);
        let commands = doc
            .as_ref()
            .map(|d| guard_commands(client, d))
            .unwrap_or_default();
        let on_path = crate::agent::locate::on_path(client.program());
        if commands.is_empty() {
            if on_path.is_some() || path.exists() {
                out.push(check(
                    name(client, "hooks"),
                    Level::Warn,
                    format!(
                        "{} is on this machine but {} holds no guard entry: its sessions run unguarded",
                        client.label(),
                        path.display()
                    ),
                    Some(format!(
                        "guard install --agent {} {}",
                        client.name(),
                        crate::shell::word::quote_posix(&root.to_string_lossy())
                    )),
                ));
            }
            continue;
        }
        out.push(entries_check(client, &path, &commands));
        out.push(answers(root, client, &commands[0]));
        out.push(match client {
            Client::Codex => super::codex_trust::check_trust(root, on_path.as_deref()),
            _ => super::gemini_trust::check_trust(root),
        });
    }
    out
}

/// The guard commands of `doc`, one per wired event in order (`""` for an event without one).
pub(super) fn guard_commands(client: Client, doc: &Value) -> Vec<String> {
    let mut found = Vec::new();
    for event in EVENTS {
        let command = crate::tools::guard::guard_commands_of(doc, event.name_for(client));
        found.push(command.first().copied().unwrap_or("").to_string());
    }
    if found.iter().all(String::is_empty) {
        return Vec::new();
    }
    found
}

fn entries_check(client: Client, path: &Path, commands: &[String]) -> Check {
    let missing: Vec<&str> = EVENTS
        .iter()
        .zip(commands)
        .filter(|(_, c)| c.is_empty())
        .map(|(e, _)| e.name_for(client))
        .collect();
    let pre_missing = commands[0].is_empty();
    let level = if pre_missing {
        Level::Fail
    } else if missing.is_empty() {
        Level::Ok
    } else {
        Level::Warn
    };
    let detail = if missing.is_empty() {
        format!("{} runs the guard on every event", path.display())
    } else {
        format!(
            "{} has no guard entry for {}",
            path.display(),
            missing.join(", ")
        )
    };
    check(
        name(client, "hooks"),
        level,
        detail,
        (level != Level::Ok).then(|| format!("guard install --agent {}", client.name())),
    )
}

/// Runs the hook command as the client does (Codex `sh -c`, Gemini `bash -c`, in the repo) on
/// a harmless call in the client's payload form, and expects an allow.
fn answers(root: &Path, client: Client, command: &str) -> Check {
    let session = format!("guard-doctor-{}", std::process::id());
    let payload = match client {
        Client::Codex => json!({"session_id": session, "turn_id": "doctor",
            "transcript_path": null, "cwd": root, "hook_event_name": "PreToolUse",
            "model": "doctor", "permission_mode": "default", "tool_name": "Bash",
            "tool_input": {"command": "git status"}, "tool_use_id": "doctor"}),
        _ => json!({"session_id": session, "transcript_path": "", "cwd": root,
            "hook_event_name": "BeforeTool", "timestamp": crate::time::iso(crate::time::now_ms()),
            "tool_name": "read_file", "tool_input": {"file_path": "README.md"}}),
    };
    let shell = if client == Client::Gemini {
        "bash"
    } else {
        "sh"
    };
    let fix = Some(GUARD_MISSING_FIX.to_string());
    match run_hook_with(
        shell,
        root,
        command,
        payload.to_string().as_bytes(),
        std::time::Duration::from_secs(15),
    ) {
        Err(e) => check(name(client, "runs"), Level::Fail, e, fix),
        Ok(o) if o.code == Some(0) && o.stdout.is_empty() => check(
            name(client, "runs"),
            Level::Ok,
            format!(
                "the hook command answered a {} test call with allow",
                client.label()
            ),
            None,
        ),
        Ok(o) => check(
            name(client, "runs"),
            Level::Fail,
            format!(
                "the hook command answered a harmless {} call with {}",
                client.label(),
                o.describe()
            ),
            fix,
        ),
    }
}
