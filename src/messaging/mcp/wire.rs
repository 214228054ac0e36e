//! Where the server is wired into a repo, and the check `guard doctor` runs on it (the entries
//! themselves are written by `guard install`, tools/guard/wiring.rs):
//!
//! - `.mcp.json` at the repo root (where the client reads project servers) has the entry
//!   `"session-lock"`, which starts `send-message mcp` through the committed launcher;
//! - `.claude/settings.local.json` (the person's own settings, not committed) has
//!   `"enabledMcpjsonServers": ["session-lock"]`, so an interactive client loads that one server
//!   without asking. Claude Code 2.1.328 asks "New MCP server found in this project" for every
//!   project server not approved there (or in the project settings); `-p` runs load them
//!   without asking. Only this server is approved — never `enableAllProjectMcpServers`, which
//!   would approve whatever a later change to `.mcp.json` adds.

use super::{SERVER_NAME, tools};
use serde_json::{Map, Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// `<repo>/.mcp.json`.
pub fn mcp_json(repo: &Path) -> PathBuf {
    repo.join(".mcp.json")
}

/// `<repo>/.claude/settings.local.json`.
pub fn local_settings(repo: &Path) -> PathBuf {
    repo.join(".claude").join("settings.local.json")
}

/// The `send-message` beside `guard` (the suite's binaries are installed together).
pub fn beside(guard: &Path) -> PathBuf {
    guard.with_file_name(format!("send-message{}", std::env::consts::EXE_SUFFIX))
}

/// A file as a JSON object (comments allowed, as the client reads it): `{}` when missing or
/// blank; an error naming it when it is not one.
fn read_object(path: &Path) -> Result<Map<String, Value>, String> {
    let text = crate::atomic::read_optional(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?
        .unwrap_or_default();
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match crate::json_edit::parse_value(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(format!("{}: not a JSON object", path.display())),
        Err(e) => Err(format!("{}: not valid JSON ({e})", path.display())),
    }
}

/// How long the self-check waits for the server's answers.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts the server as `repo`'s `.mcp.json` says, the way the client does (in the repo, with
/// `CLAUDE_PROJECT_DIR` set to it), and asks for its tools. `Ok` holds the tool names (both of them); `Err` says what is wrong. Never hangs: the
/// server is killed after [`CHECK_TIMEOUT`].
pub fn self_check(repo: &Path) -> Result<Vec<String>, String> {
    let mcp = mcp_json(repo);
    let doc = read_object(&mcp)?;
    let Some(e) = doc
        .get("mcpServers")
        .and_then(|s| s.get(SERVER_NAME))
        .filter(|e| e.is_object())
    else {
        return Err(format!(
            "{}: no \"{SERVER_NAME}\" server (run guard install)",
            mcp.display()
        ));
    };
    let approved = read_object(&local_settings(repo))
        .ok()
        .and_then(|d| d.get("enabledMcpjsonServers").cloned())
        .and_then(|l| l.as_array().cloned())
        .is_some_and(|l| l.iter().any(|v| v.as_str() == Some(SERVER_NAME)));
    if !approved {
        return Err(format!(
            "{}: \"{SERVER_NAME}\" is not in enabledMcpjsonServers; an interactive session would ask before loading it (run guard install)",
            local_settings(repo).display()
        ));
    }
    let command = e.get("command").and_then(Value::as_str).unwrap_or("");
    let args: Vec<String> = e
        .get("args")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    list_tools(Path::new(command), &args, repo, CHECK_TIMEOUT)
}

/// Runs `command args` in `cwd` as an MCP server (`CLAUDE_PROJECT_DIR` set to `cwd`, as the
/// client sets it to the folder the session started in): initialize, then tools/list, waiting
/// at most `timeout` for the answer (then the server is killed).
pub fn list_tools(
    command: &Path,
    args: &[String],
    cwd: &Path,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let mut child = Command::new(command)
        .args(args)
        .current_dir(cwd)
        .env("CLAUDE_PROJECT_DIR", cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", command.display()))?;
    let (tx, rx) = std::sync::mpsc::channel();
    if let Some(out) = child.stdout.take() {
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
    }
    let asked = child.stdin.take().map(|mut input| {
        let lines = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": super::PROTOCOL_VERSIONS[0], "capabilities": {}, "clientInfo": {"name": "session-lock-doctor", "version": env!("CARGO_PKG_VERSION")}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        ];
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        input.write_all(text.as_bytes())
    });
    let deadline = std::time::Instant::now() + timeout;
    let mut answer = Err(format!(
        "{} did not list its tools within {}s",
        command.display(),
        timeout.as_secs_f32()
    ));
    if let Some(Err(e)) = asked {
        answer = Err(format!("cannot talk to {}: {e}", command.display()));
    } else {
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let Ok(line) = rx.recv_timeout(left) else {
                break;
            };
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if msg.get("id") == Some(&json!(2)) {
                answer = tool_names(&msg);
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    answer
}

/// The tool names of a tools/list answer, when both messaging tools are among them.
fn tool_names(msg: &Value) -> Result<Vec<String>, String> {
    let names: Vec<String> = msg
        .pointer("/result/tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    match [tools::LIST, tools::SEND]
        .iter()
        .find(|want| !names.iter().any(|n| n == *want))
    {
        None => Ok(names),
        Some(missing) => Err(format!(
            "the server does not offer {missing} (it lists {names:?})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_check_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let e = self_check(dir.path()).unwrap_err();
        assert!(e.contains("no \"session-lock\" server"), "{e}");
        std::fs::write(
            mcp_json(dir.path()),
            "{\n  // ours\n  \"mcpServers\": {\"session-lock\": {\"command\": \"/nowhere/send-message\", \"args\": [\"mcp\"]}}\n}\n",
        )
        .unwrap();
        assert!(
            self_check(dir.path())
                .unwrap_err()
                .contains("enabledMcpjsonServers")
        );
        std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
        std::fs::write(
            local_settings(dir.path()),
            r#"{"enabledMcpjsonServers": ["session-lock"]}"#,
        )
        .unwrap();
        let e = self_check(dir.path()).unwrap_err();
        assert!(e.contains("cannot start /nowhere/send-message"), "{e}");
    }
}
