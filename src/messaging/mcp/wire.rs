//! Wiring the server into a repo, for `guard install` / `uninstall` / `doctor`:
//!
//! - `.mcp.json` at the repo root (where the client reads project servers) gets the entry
//!   `"session-lock": {"type": "stdio", "command": "<send-message>", "args": ["mcp"]}`;
//! - `.claude/settings.local.json` (the person's own settings, not committed) gets
//!   `"enabledMcpjsonServers": ["session-lock"]`, so an interactive client loads that one server
//!   without asking. Claude Code 2.1.328 asks "New MCP server found in this project" for every
//!   project server not approved there (or in the project settings); `-p` runs load them
//!   without asking. Only this server is approved — never `enableAllProjectMcpServers`, which
//!   would approve whatever a later change to `.mcp.json` adds.
//!
//! Everything else in both files is kept; running it twice changes nothing; `uninstall_entry`
//! removes exactly what `install_entry` added (and a file it leaves empty).

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

/// The `.mcp.json` entry for the server at `bin`.
pub fn entry(bin: &Path) -> Value {
    json!({"type": "stdio", "command": bin.to_string_lossy(), "args": ["mcp"]})
}

/// The `send-message` beside `guard` (the suite's binaries are installed together).
pub fn beside(guard: &Path) -> PathBuf {
    guard.with_file_name(format!("send-message{}", std::env::consts::EXE_SUFFIX))
}

/// A file as a JSON object: `{}` when missing or blank; an error naming it when it is not one.
fn read_object(path: &Path) -> Result<Map<String, Value>, String> {
    let text = crate::atomic::read_optional(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?
        .unwrap_or_default();
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(format!(
            "{}: not a JSON object; nothing changed",
            path.display()
        )),
        Err(e) => Err(format!(
            "{}: not valid JSON ({e}); nothing changed",
            path.display()
        )),
    }
}

/// `.mcp.json` with the entry set (other servers kept).
pub fn with_entry(mut doc: Map<String, Value>, bin: &Path) -> Result<Map<String, Value>, String> {
    let servers = doc
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(servers) = servers.as_object_mut() else {
        return Err("\"mcpServers\" is not an object".into());
    };
    servers.insert(SERVER_NAME.into(), entry(bin));
    Ok(doc)
}

/// Settings with this server in `enabledMcpjsonServers` (once).
pub fn with_approval(mut doc: Map<String, Value>) -> Result<Map<String, Value>, String> {
    let list = doc
        .entry("enabledMcpjsonServers")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Some(list) = list.as_array_mut() else {
        return Err("\"enabledMcpjsonServers\" is not a list".into());
    };
    if !list.iter().any(|v| v.as_str() == Some(SERVER_NAME)) {
        list.push(json!(SERVER_NAME));
    }
    Ok(doc)
}

fn without_entry(mut doc: Map<String, Value>) -> Map<String, Value> {
    if let Some(servers) = doc.get_mut("mcpServers").and_then(Value::as_object_mut) {
        servers.remove(SERVER_NAME);
        if servers.is_empty() {
            doc.remove("mcpServers");
        }
    }
    doc
}

fn without_approval(mut doc: Map<String, Value>) -> Map<String, Value> {
    if let Some(list) = doc
        .get_mut("enabledMcpjsonServers")
        .and_then(Value::as_array_mut)
    {
        list.retain(|v| v.as_str() != Some(SERVER_NAME));
        if list.is_empty() {
            doc.remove("enabledMcpjsonServers");
        }
    }
    doc
}

/// Writes `doc` to `path` unless it already holds exactly that; an empty document removes the
/// file. `Ok(true)` when the file changed.
fn store(path: &Path, doc: &Map<String, Value>) -> Result<bool, String> {
    let old = crate::atomic::read_optional(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    if doc.is_empty() {
        return match old {
            None => Ok(false),
            Some(_) => std::fs::remove_file(path)
                .map(|()| true)
                .map_err(|e| format!("{}: cannot remove: {e}", path.display())),
        };
    }
    let mut text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    text.push('\n');
    if old.as_deref() == Some(text.as_str()) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
    }
    crate::atomic::write_atomic(path, text.as_bytes())
        .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
    Ok(true)
}

/// The files a wiring step changed and left alone.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub changed: Vec<PathBuf>,
    pub unchanged: Vec<PathBuf>,
}

impl Changes {
    fn note(&mut self, path: PathBuf, changed: bool) {
        if changed {
            self.changed.push(path);
        } else {
            self.unchanged.push(path);
        }
    }
}

/// Wires the server at `bin` into `repo`. Both files are checked before either is written.
pub fn install_entry(repo: &Path, bin: &Path) -> Result<Changes, String> {
    let (mcp, local) = (mcp_json(repo), local_settings(repo));
    let servers =
        with_entry(read_object(&mcp)?, bin).map_err(|e| format!("{}: {e}", mcp.display()))?;
    let settings =
        with_approval(read_object(&local)?).map_err(|e| format!("{}: {e}", local.display()))?;
    let mut out = Changes::default();
    out.note(mcp.clone(), store(&mcp, &servers)?);
    out.note(local.clone(), store(&local, &settings)?);
    Ok(out)
}

/// `guard install`'s step: the server beside `guard`, wired into `repo`, each file named in
/// `changed` or `unchanged`. A file that is not a JSON object is a usage error; nothing changes.
pub fn install_for(
    repo: &Path,
    guard: &Path,
    changed: &mut Vec<String>,
    unchanged: &mut Vec<String>,
) -> anyhow::Result<()> {
    use crate::exit::{Code, fail};
    let c = install_entry(repo, &beside(guard)).map_err(|e| fail(Code::Usage, e))?;
    changed.extend(c.changed.iter().map(|p| p.display().to_string()));
    unchanged.extend(c.unchanged.iter().map(|p| p.display().to_string()));
    Ok(())
}

/// Removes what [`install_entry`] added, keeping everything else.
pub fn uninstall_entry(repo: &Path) -> Result<Changes, String> {
    let (mcp, local) = (mcp_json(repo), local_settings(repo));
    let servers = without_entry(read_object(&mcp)?);
    let settings = without_approval(read_object(&local)?);
    let mut out = Changes::default();
    out.note(mcp.clone(), store(&mcp, &servers)?);
    out.note(local.clone(), store(&local, &settings)?);
    Ok(out)
}

/// How long the self-check waits for the server's answers.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(10);

/// Starts the server as `repo`'s `.mcp.json` says, the way the client does, and asks for its
/// tools. `Ok` holds the tool names (both of them); `Err` says what is wrong. Never hangs: the
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

/// Runs `command args` in `cwd` as an MCP server: initialize, then tools/list, waiting at most
/// `timeout` for the answer (then the server is killed).
pub fn list_tools(
    command: &Path,
    args: &[String],
    cwd: &Path,
    timeout: Duration,
) -> Result<Vec<String>, String> {
    let mut child = Command::new(command)
        .args(args)
        .current_dir(cwd)
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

    fn read(p: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
    }

    #[test]
    fn install_keeps_others_is_idempotent_and_uninstall_undoes_it() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        std::fs::write(
            mcp_json(repo),
            r#"{"mcpServers": {"other": {"command": "x"}}}"#,
        )
        .unwrap();
        let bin = Path::new("/opt/sl/send-message");
        let first = install_entry(repo, bin).unwrap();
        assert_eq!(first.changed, [mcp_json(repo), local_settings(repo)]);
        let m = read(&mcp_json(repo));
        assert_eq!(m["mcpServers"]["other"]["command"], "x");
        assert_eq!(m["mcpServers"][SERVER_NAME], entry(bin));
        assert_eq!(
            read(&local_settings(repo))["enabledMcpjsonServers"],
            json!([SERVER_NAME])
        );
        let again = install_entry(repo, bin).unwrap();
        assert!(again.changed.is_empty(), "{again:?}");
        // A new place replaces the entry.
        install_entry(repo, Path::new("/usr/bin/send-message")).unwrap();
        assert_eq!(
            read(&mcp_json(repo))["mcpServers"][SERVER_NAME]["command"],
            "/usr/bin/send-message"
        );
        let gone = uninstall_entry(repo).unwrap();
        assert_eq!(gone.changed.len(), 2);
        assert_eq!(
            read(&mcp_json(repo)),
            json!({"mcpServers": {"other": {"command": "x"}}})
        );
        assert!(
            !local_settings(repo).exists(),
            "a file left empty is removed"
        );
        assert!(uninstall_entry(repo).unwrap().changed.is_empty());
    }

    #[test]
    fn bad_files_change_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        for (file, bad) in [
            (mcp_json(repo), "{\"mcpServers\": "),
            (mcp_json(repo), "[1]"),
            (mcp_json(repo), "{\"mcpServers\": []}"),
            (local_settings(repo), "{\"enabledMcpjsonServers\": \"x\"}"),
        ] {
            let _ = std::fs::remove_file(mcp_json(repo));
            let _ = std::fs::remove_dir_all(repo.join(".claude"));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, bad).unwrap();
            let e = install_entry(repo, Path::new("/b/send-message")).unwrap_err();
            assert!(e.contains(&file.display().to_string()), "{e}");
            assert_eq!(std::fs::read_to_string(&file).unwrap(), bad);
            let other = if file == mcp_json(repo) {
                local_settings(repo)
            } else {
                mcp_json(repo)
            };
            assert!(!other.exists(), "{bad}: the other file was written");
        }
    }

    #[test]
    fn self_check_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let e = self_check(dir.path()).unwrap_err();
        assert!(e.contains("no \"session-lock\" server"), "{e}");
        std::fs::write(
            mcp_json(dir.path()),
            json!({"mcpServers": {SERVER_NAME: entry(Path::new("/nowhere/send-message"))}})
                .to_string(),
        )
        .unwrap();
        assert!(
            self_check(dir.path())
                .unwrap_err()
                .contains("enabledMcpjsonServers")
        );
        with_approval(Map::new())
            .map(|d| store(&local_settings(dir.path()), &d))
            .unwrap()
            .unwrap();
        let e = self_check(dir.path()).unwrap_err();
        assert!(e.contains("cannot start /nowhere/send-message"), "{e}");
    }
}
