//! What Codex CLI itself says of a project's hooks, asked through `codex app-server` (JSON-RPC
//! over stdio: `initialize`, then `hooks/list` for the repo): each hook's key, its current hash
//! and its trust (`trusted`, `untrusted`, `modified`, `managed`), and the config warning it gives
//! for an untrusted project. Codex runs a non-managed hook only in a trusted project and once a
//! person trusted its definition (`/hooks` in the TUI records `[hooks.state."<key>"]
//! trusted_hash` in `$CODEX_HOME/config.toml`); an untrusted one is skipped without a word.

use super::Client;
use super::name;
use crate::tools::guard::doctor::{Check, Level, check};
use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `$CODEX_HOME`, else `~/.codex`.
fn codex_home() -> Option<PathBuf> {
    std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| crate::sessions::home_dir().map(|h| h.join(".codex")))
}

/// What Codex says about the repo's hooks: its `hooks/list` entries and its config warnings.
#[derive(Debug, Default)]
pub struct CodexView {
    pub hooks: Vec<Value>,
    pub warnings: Vec<String>,
}

/// Asks `codex app-server` (JSON-RPC over stdio) for the hooks a session in `root` would load.
fn codex_view(codex: &Path, root: &Path) -> Result<CodexView, String> {
    let mut child = Command::new(codex)
        .arg("app-server")
        .current_dir(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {} app-server: {e}", codex.display()))?;
    let requests = [
        json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "guard-doctor", "version": env!("CARGO_PKG_VERSION")}}}),
        json!({"method": "initialized"}),
        json!({"id": 2, "method": "hooks/list", "params": {"cwds": [root]}}),
    ];
    // Kept open until the answer came: the server stops when its input ends.
    let mut sin = child.stdin.take();
    if let Some(sin) = sin.as_mut() {
        for r in requests {
            let _ = writeln!(sin, "{r}");
        }
    }
    let stdout = child
        .stdout
        .take()
        .ok_or("no stdout from codex app-server")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut view = CodexView::default();
    let answer = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = rx.recv_timeout(left) else {
            break Err("codex app-server gave no hooks/list answer within 20s".to_string());
        };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if msg["method"] == "configWarning"
            && let Some(s) = msg["params"]["summary"].as_str()
        {
            view.warnings.push(s.to_string());
        }
        if msg["id"] == 2 {
            break match msg.get("error") {
                Some(e) => Err(format!("codex app-server hooks/list failed: {e}")),
                None => Ok(msg),
            };
        }
    };
    drop(sin);
    let _ = child.kill();
    let _ = child.wait();
    let msg = answer?;
    for entry in msg["result"]["data"].as_array().into_iter().flatten() {
        view.hooks
            .extend(entry["hooks"].as_array().into_iter().flatten().cloned());
        view.warnings.extend(
            entry["warnings"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|w| w.as_str().map(str::to_string)),
        );
    }
    Ok(view)
}

/// The trust Codex needs: the project trusted, and each guard hook's definition trusted (by a
/// person, `/hooks` in the TUI, which Codex records as `trusted_hash`), or managed by policy.
pub(super) fn check_trust(root: &Path, codex: Option<&Path>) -> Check {
    let Some(codex) = codex else {
        return check(
            name(Client::Codex, "trust"),
            Level::Warn,
            "codex is not on PATH, so its trust in this project's hooks cannot be checked; an untrusted hook is skipped without a word".into(),
            Some("put codex on PATH and run guard doctor again".into()),
        );
    };
    match codex_view(codex, root) {
        Err(e) => check(name(Client::Codex, "trust"), Level::Warn, e, None),
        Ok(view) => codex_trust_check(root, &view),
    }
}

/// The trust check from what Codex said (pure, for the tests).
pub fn codex_trust_check(root: &Path, view: &CodexView) -> Check {
    let config = codex_home()
        .map(|h| h.join("config.toml").display().to_string())
        .unwrap_or_else(|| "~/.codex/config.toml".into());
    let ours: Vec<&Value> = view
        .hooks
        .iter()
        .filter(|h| {
            h["command"]
                .as_str()
                .is_some_and(crate::tools::guard::is_guard_command)
        })
        .collect();
    if ours.is_empty() {
        let untrusted = view
            .warnings
            .iter()
            .any(|w| w.contains("until the project is trusted"));
        let detail = if untrusted {
            format!(
                "Codex does not trust the project {}, so it loads none of its hooks (without a word)",
                root.display()
            )
        } else {
            format!(
                "Codex loads none of the guard's hooks for {}{}",
                root.display(),
                view.warnings
                    .first()
                    .map(|w| format!(": {w}"))
                    .unwrap_or_default()
            )
        };
        return check(
            name(Client::Codex, "trust"),
            Level::Fail,
            detail,
            Some(format!(
                "trust the project: start codex in {} and accept its trust prompt, or add to {config}:\n[projects.{}]\ntrust_level = \"trusted\"\n     then run guard doctor again for the hooks themselves",
                root.display(),
                toml_string(&root.to_string_lossy())
            )),
        );
    }
    let not_ready: Vec<&&Value> = ours
        .iter()
        .filter(|h| {
            !(h["trustStatus"] == "trusted" || h["trustStatus"] == "managed")
                || h["enabled"] == false
        })
        .collect();
    if not_ready.is_empty() {
        return check(
            name(Client::Codex, "trust"),
            Level::Ok,
            format!(
                "Codex trusts the project and all {} guard hooks",
                ours.len()
            ),
            None,
        );
    }
    let disabled = not_ready.iter().filter(|h| h["enabled"] == false).count();
    let mut lines = String::new();
    for h in &not_ready {
        lines.push_str(&format!(
            "\n[hooks.state.{}]\ntrusted_hash = {}",
            toml_string(h["key"].as_str().unwrap_or("")),
            toml_string(h["currentHash"].as_str().unwrap_or(""))
        ));
        if h["enabled"] == false {
            lines.push_str("\nenabled = true");
        }
    }
    let states: Vec<&str> = not_ready
        .iter()
        .filter_map(|h| h["trustStatus"].as_str())
        .collect();
    check(
        name(Client::Codex, "trust"),
        Level::Fail,
        format!(
            "Codex skips {} of the {} guard hooks without a word ({}{})",
            not_ready.len(),
            ours.len(),
            states.join(", "),
            if disabled > 0 {
                format!("; {disabled} disabled")
            } else {
                String::new()
            }
        ),
        Some(format!(
            "review and trust them in codex (/hooks), or add to {config}:{lines}"
        )),
    )
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::guard::agents::HOOK_COMMAND;

    #[test]
    fn codex_trust_says_exactly_what_to_add() {
        let root = Path::new("/r");
        let untrusted = CodexView {
            hooks: vec![],
            warnings: vec!["Project-local config, hooks, and exec policies are disabled in the following folders until the project is trusted, but skills still load.".into()],
        };
        let c = codex_trust_check(root, &untrusted);
        assert_eq!(c.level, Level::Fail);
        assert!(
            c.detail.contains("does not trust the project /r"),
            "{}",
            c.detail
        );
        assert!(
            c.fix
                .as_deref()
                .unwrap()
                .contains("[projects.\"/r\"]\ntrust_level = \"trusted\"")
        );
        let hook = |status: &str| {
            json!({"key": "/r/.codex/hooks.json:pre_tool_use:0:0",
            "command": HOOK_COMMAND, "currentHash": "sha256:abc", "trustStatus": status, "enabled": true})
        };
        let c = codex_trust_check(
            root,
            &CodexView {
                hooks: vec![hook("untrusted"), hook("trusted")],
                warnings: vec![],
            },
        );
        assert_eq!(c.level, Level::Fail);
        assert!(c.detail.contains("1 of the 2"), "{}", c.detail);
        assert!(
            c.fix.as_deref().unwrap().contains(
                "[hooks.state.\"/r/.codex/hooks.json:pre_tool_use:0:0\"]\ntrusted_hash = \"sha256:abc\""
            ),
            "{:?}", c.fix
        );
        let c = codex_trust_check(
            root,
            &CodexView {
                hooks: vec![hook("trusted"), hook("managed")],
                warnings: vec![],
            },
        );
        assert_eq!(c.level, Level::Ok);
        let other = json!({"command": "/bin/true", "trustStatus": "untrusted"});
        let c = codex_trust_check(
            root,
            &CodexView {
                hooks: vec![hook("trusted"), other],
                warnings: vec![],
            },
        );
        assert_eq!(
            c.level,
            Level::Ok,
            "another tool's hook is not ours to judge"
        );
    }
}
