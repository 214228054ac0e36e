//! The CLI's command line and environment for one run, including the two restricted contracts:
//!
//! - **read-only review** (`readOnlyScopeRoots`): `--tools Read,Grep,Glob`,
//!   `--disallowedTools mcp__*`, `--strict-mcp-config` with no server, `--setting-sources ""`,
//!   and a PreToolUse hook (`guard scope --root …`) passed with `--settings <temp json>`;
//! - **workspace single-tool** (`workspaceUnityState`): the same built-in tools, one MCP server
//!   (`run-agent mcp-proxy --url <loopback url>`) with one tool through `--mcp-config <temp json>`
//!   and `--strict-mcp-config`, no `mcp__*` wildcard (a deny rule would beat the one tool), and
//!   the hook with the cwd as root plus `--allow-tool` for that one tool.
//!
//! Never `--bare` (it skips every hook, `--settings` ones too).

use super::mcp_proxy::{SERVER_NAME, tool_name};
use super::options::{Failure, Plan, Problem};
use super::profiles::{Profile, replaced_by_profile};
use super::unity::Endpoint;
use serde_json::{Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The built-in tools of both contracts.
pub const CONTRACT_TOOLS: &str = "Read,Grep,Glob";
/// How long the contract hook may take; on a timeout or crash the call is blocked.
pub const HOOK_TIMEOUT_SECONDS: u64 = 30;

/// Variables a surrounding Claude Code session sets for its own children. Passed on, they would
/// make the new run look like a child of that session.
pub const SESSION_ENV: [&str; 14] = [
    "CLAUDECODE",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_PID",
    "CLAUDE_PROJECT_DIR",
    "CLAUDE_ENV_FILE",
    "CLAUDE_CODE_ENTRYPOINT",
    "CLAUDE_CODE_SESSION_ATTENDED",
    "CLAUDE_CODE_CHILD_SESSION",
    "CLAUDE_CODE_CHILD_NOTES_DIR",
    "CLAUDE_CODE_MESSAGING_SOCKET",
    "CLAUDE_CODE_MESSAGING_TOKEN",
    "CLAUDE_EFFORT",
    "CLAUDE_CODE_EXECPATH",
    "AI_AGENT",
];

/// A run's restriction with everything it needs resolved.
#[derive(Clone, Debug, PartialEq)]
pub enum Contract {
    /// No contract; `servers` is the MCP config `attachedPlugins` selected, if given.
    None {
        servers: Option<Value>,
    },
    ReadOnly {
        roots: Vec<PathBuf>,
        guard: PathBuf,
    },
    Workspace {
        root: PathBuf,
        endpoint: Endpoint,
        guard: PathBuf,
        run_agent: PathBuf,
    },
}

/// The command to spawn. Keeps its temporary files alive while it lives.
#[derive(Debug)]
pub struct Invocation {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub set_env: Vec<(String, String)>,
    pub remove_env: Vec<String>,
    temp: Option<tempfile::TempDir>,
}

impl Invocation {
    /// The command, in `cwd`, with the environment changes applied.
    pub fn command(&self, cwd: &Path) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args).current_dir(cwd);
        for k in &self.remove_env {
            c.env_remove(k);
        }
        for (k, v) in &self.set_env {
            c.env(k, v);
        }
        c
    }

    /// The temporary folder holding the settings/MCP files, if any.
    pub fn temp_dir(&self) -> Option<&Path> {
        self.temp.as_ref().map(|t| t.path())
    }
}

/// POSIX shell quoting for the hook's command line (Claude Code runs hook commands in a shell).
pub fn sh_quote(s: &str) -> String {
    crate::shell::word::quote_posix(s).into_owned()
}

/// The hook's command line: `guard scope --root <r>… [--allow-tool <t>]`.
pub fn hook_command(guard: &Path, roots: &[PathBuf], allow_tool: Option<&str>) -> String {
    let mut parts = vec![sh_quote(&guard.to_string_lossy()), "scope".to_string()];
    for r in roots {
        parts.push("--root".into());
        parts.push(sh_quote(&r.to_string_lossy()));
    }
    if let Some(t) = allow_tool {
        parts.push("--allow-tool".into());
        parts.push(sh_quote(t));
    }
    parts.join(" ")
}

/// The `--settings` document: one PreToolUse hook on every tool, blocking if it fails.
pub fn hook_settings(command: &str) -> Value {
    json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{
        "type": "command",
        "command": command,
        "timeout": HOOK_TIMEOUT_SECONDS,
        "onFailure": "block",
    }]}]}})
}

/// The `--mcp-config` document of the workspace contract.
pub fn proxy_mcp_config(run_agent: &Path, endpoint: &Endpoint) -> Value {
    json!({"mcpServers": {SERVER_NAME: {
        "type": "stdio",
        "command": run_agent.to_string_lossy(),
        "args": ["mcp-proxy", "--url", endpoint.url],
    }}})
}

/// `attachedPlugins` → the named servers of `<cwd>/.mcp.json`, as an `--mcp-config` document.
pub fn attached_servers(cwd: &Path, names: &[String]) -> Result<Value, Problem> {
    let mut picked = serde_json::Map::new();
    if names.is_empty() {
        return Ok(json!({"mcpServers": picked}));
    }
    let path = cwd.join(".mcp.json");
    let missing = |name: &str| {
        Problem::new(
            Failure::NotFound,
            format!(
                "attached plugin '{name}' is not a server in {}",
                path.display()
            ),
        )
    };
    let text = std::fs::read_to_string(&path).map_err(|_| missing(&names[0]))?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        Problem::new(
            Failure::Usage,
            format!(
                "{} is not valid JSON (line {} column {})",
                path.display(),
                e.line(),
                e.column()
            ),
        )
    })?;
    let servers = doc.get("mcpServers").and_then(Value::as_object);
    for name in names {
        let entry = servers
            .and_then(|s| s.get(name))
            .ok_or_else(|| missing(name))?;
        picked.insert(name.clone(), entry.clone());
    }
    Ok(json!({"mcpServers": picked}))
}

fn write_json(dir: &Path, name: &str, doc: &Value) -> Result<PathBuf, Problem> {
    let path = dir.join(name);
    std::fs::write(&path, doc.to_string()).map_err(|e| {
        Problem::new(
            Failure::Spawn,
            format!("cannot write {}: {e}", path.display()),
        )
    })?;
    Ok(path)
}

fn temp_dir() -> Result<tempfile::TempDir, Problem> {
    // tempfile makes the folder private to the user (0700 on unix).
    tempfile::Builder::new()
        .prefix("run-agent-")
        .tempdir()
        .map_err(|e| Problem::new(Failure::Spawn, format!("cannot create a temp folder: {e}")))
}

/// What the CLI reads on its stdin: the prompt byte for byte, or, for another session's
/// message, one stream-json user message whose `origin` is that peer (the client honours a
/// declared class only from the host on stdin; in the text it is a label).
pub fn stdin(plan: &Plan) -> Vec<u8> {
    match &plan.origin {
        None => plan.prompt.clone().into_bytes(),
        Some(o) => {
            let mut line = json!({
                "type": "user",
                "message": {"role": "user", "content": plan.prompt},
                "parent_tool_use_id": null,
                "origin": {"kind": "peer", "from": o.from, "fromMode": o.from_mode},
            })
            .to_string();
            line.push('\n');
            line.into_bytes()
        }
    }
}

/// True when this process runs as root (the CLI then refuses bypass mode without IS_SANDBOX).
pub fn running_as_root() -> bool {
    #[cfg(unix)]
    {
        rustix::process::geteuid().is_root()
    }
    #[cfg(not(unix))]
    {
        false
    }
}

/// Builds the invocation. `as_root`: see [`running_as_root`].
pub fn build(
    plan: &Plan,
    claude: &Path,
    contract: &Contract,
    profile: Option<&Profile>,
    as_root: bool,
) -> Result<Invocation, Problem> {
    let mut args: Vec<OsString> = Vec::new();
    let mut push = |a: &str| args.push(OsString::from(a));
    for a in ["-p", "--output-format", "stream-json", "--verbose"] {
        push(a);
    }
    push("--model");
    push(&plan.model);
    push("--permission-mode");
    push(&plan.mode);
    if let Some(sp) = &plan.system_prompt {
        push("--append-system-prompt");
        push(sp);
    }
    let mut disallowed: Vec<String> = Vec::new();
    let mut temp = None;
    match contract {
        Contract::None { servers } => {
            if let Some(id) = &plan.resume {
                push("--resume");
                push(id);
            }
            if let Some(tools) = &plan.tools {
                push("--tools");
                push(&tools.join(","));
            }
            if let Some(doc) = servers {
                let dir = temp_dir()?;
                let file = write_json(dir.path(), "mcp.json", doc)?;
                push("--strict-mcp-config");
                push("--mcp-config");
                push(&file.to_string_lossy());
                temp = Some(dir);
            }
        }
        Contract::ReadOnly { roots, guard } => {
            let dir = temp_dir()?;
            let settings = hook_settings(&hook_command(guard, roots, None));
            let file = write_json(dir.path(), "settings.json", &settings)?;
            push("--tools");
            push(CONTRACT_TOOLS);
            push("--strict-mcp-config");
            push("--setting-sources");
            push("");
            push("--settings");
            push(&file.to_string_lossy());
            disallowed.push("mcp__*".into());
            temp = Some(dir);
        }
        Contract::Workspace {
            root,
            endpoint,
            guard,
            run_agent,
        } => {
            let dir = temp_dir()?;
            let tool = tool_name();
            let settings = hook_settings(&hook_command(
                guard,
                std::slice::from_ref(root),
                Some(&tool),
            ));
            let settings_file = write_json(dir.path(), "settings.json", &settings)?;
            let mcp_file = write_json(
                dir.path(),
                "mcp.json",
                &proxy_mcp_config(run_agent, endpoint),
            )?;
            push("--tools");
            push(CONTRACT_TOOLS);
            push("--strict-mcp-config");
            push("--mcp-config");
            push(&mcp_file.to_string_lossy());
            push("--setting-sources");
            push("");
            push("--settings");
            push(&settings_file.to_string_lossy());
            temp = Some(dir);
        }
    }
    disallowed.extend(plan.disallowed_tools.iter().cloned());
    if !disallowed.is_empty() {
        push("--disallowedTools");
        for d in &disallowed {
            push(d);
        }
    }
    // The prompt goes on stdin, never in argv: argv is capped per argument (128 KiB on Linux)
    // and any local user can read it with `ps`. With only stdin, `-p` takes stdin as the prompt;
    // another session's message goes as one stream-json user message with its origin.
    if plan.origin.is_some() {
        push("--input-format");
        push("stream-json");
    }

    let mut remove_env: Vec<String> = SESSION_ENV.iter().map(|s| s.to_string()).collect();
    let mut set_env: Vec<(String, String)> = Vec::new();
    if let Some(p) = profile {
        remove_env.extend(
            std::env::vars_os()
                .filter_map(|(k, _)| k.into_string().ok())
                .filter(|k| replaced_by_profile(k)),
        );
        set_env.extend(p.env().iter().cloned());
    }
    if as_root && plan.mode == "bypassPermissions" {
        set_env.push(("IS_SANDBOX".into(), "1".into()));
    }
    Ok(Invocation {
        program: claude.to_path_buf(),
        args,
        set_env,
        remove_env,
        temp,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::options::{ContractKind, RunAgentOptions};

    fn plan(cwd: &Path, f: impl FnOnce(&mut RunAgentOptions)) -> Plan {
        let mut o = RunAgentOptions {
            cwd: Some(cwd.to_string_lossy().into()),
            prompt: Some("-- look".into()),
            ..Default::default()
        };
        f(&mut o);
        Plan::from_options(&o, "t".into()).unwrap()
    }

    fn args(inv: &Invocation) -> Vec<String> {
        inv.args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    fn after<'a>(a: &'a [String], flag: &str) -> Option<&'a str> {
        a.iter().position(|x| x == flag).map(|i| a[i + 1].as_str())
    }

    #[test]
    fn a_plain_run_passes_the_options_through() {
        let d = tempfile::tempdir().unwrap();
        let p = plan(d.path(), |o| {
            o.session_id = Some("ABCDEF01-1d7c-4f0e-9a57-5e1d1f0c0b11".into());
            o.model = Some("haiku".into());
            o.system_prompt = Some("be brief".into());
            o.tools = Some(vec!["Read".into(), "Bash".into()]);
            o.disallowed_tools = Some(vec!["Bash(rm -rf:*)".into(), "Edit".into()]);
            o.mode = Some("default".into());
        });
        let inv = build(
            &p,
            Path::new("/bin/claude"),
            &Contract::None { servers: None },
            None,
            true,
        )
        .unwrap();
        let a = args(&inv);
        assert_eq!(
            &a[..4],
            ["-p", "--output-format", "stream-json", "--verbose"]
        );
        assert_eq!(after(&a, "--model"), Some("haiku"));
        assert_eq!(after(&a, "--permission-mode"), Some("default"));
        assert_eq!(after(&a, "--append-system-prompt"), Some("be brief"));
        assert_eq!(
            after(&a, "--resume"),
            Some("abcdef01-1d7c-4f0e-9a57-5e1d1f0c0b11")
        );
        assert_eq!(after(&a, "--tools"), Some("Read,Bash"));
        let i = a.iter().position(|x| x == "--disallowedTools").unwrap();
        assert_eq!(&a[i + 1..], ["Bash(rm -rf:*)", "Edit"]);
        assert!(
            !a.iter().any(|x| x.contains("look")),
            "the prompt is not in argv: {a:?}"
        );
        assert!(!a.iter().any(|x| x == "--bare" || x == "--setting-sources"));
        assert!(inv.set_env.is_empty(), "IS_SANDBOX only for bypass mode");
        assert!(inv.remove_env.contains(&"CLAUDECODE".to_string()));
    }

    #[test]
    fn a_peer_prompt_goes_as_one_stream_json_message_with_its_origin() {
        let d = tempfile::tempdir().unwrap();
        let c = Contract::None { servers: None };
        let plain = plan(d.path(), |_| {});
        let a = args(&build(&plain, Path::new("claude"), &c, None, false).unwrap());
        assert!(!a.iter().any(|x| x == "--input-format"), "{a:?}");
        assert_eq!(stdin(&plain), b"-- look");
        let p = plan(d.path(), |o| {
            o.prompt_origin = crate::agent::PromptOrigin::new("uds:/tmp/cc-socks/7.sock", "bypass");
        });
        let a = args(&build(&p, Path::new("claude"), &c, None, false).unwrap());
        assert_eq!(after(&a, "--input-format"), Some("stream-json"));
        let bytes = stdin(&p);
        assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1, "one line");
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(v["type"], "user");
        assert_eq!(v["message"]["content"], "-- look");
        assert_eq!(
            v["origin"],
            json!({"kind": "peer", "from": "uds:/tmp/cc-socks/7.sock", "fromMode": "bypass"})
        );
    }

    #[test]
    fn bypass_as_root_sets_is_sandbox_and_empty_tools_mean_none() {
        let d = tempfile::tempdir().unwrap();
        let p = plan(d.path(), |o| o.tools = Some(vec![]));
        let c = Contract::None { servers: None };
        let root = build(&p, Path::new("claude"), &c, None, true).unwrap();
        assert_eq!(
            root.set_env,
            vec![("IS_SANDBOX".to_string(), "1".to_string())]
        );
        assert_eq!(after(&args(&root), "--tools"), Some(""));
        let user = build(&p, Path::new("claude"), &c, None, false).unwrap();
        assert!(user.set_env.is_empty());
    }

    #[test]
    fn the_read_only_contract_is_closed_on_every_layer() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let p = plan(d.path(), |o| {
            o.read_only_scope_roots = Some(vec![root.to_string_lossy().into()]);
            o.session_id = Some("abc".into());
            o.tools = Some(vec!["Bash".into()]);
            o.disallowed_tools = Some(vec!["Grep".into()]);
        });
        let ContractKind::ReadOnly(roots) = &p.contract else {
            panic!()
        };
        let c = Contract::ReadOnly {
            roots: roots.clone(),
            guard: PathBuf::from("/opt/my tools/guard"),
        };
        let inv = build(&p, Path::new("claude"), &c, None, false).unwrap();
        let a = args(&inv);
        assert_eq!(after(&a, "--tools"), Some("Read,Grep,Glob"));
        assert_eq!(after(&a, "--setting-sources"), Some(""));
        assert!(a.contains(&"--strict-mcp-config".to_string()));
        assert!(!a.contains(&"--mcp-config".to_string()));
        assert!(!a.contains(&"--resume".to_string()), "always a new session");
        assert!(!a.contains(&"--bare".to_string()));
        let i = a.iter().position(|x| x == "--disallowedTools").unwrap();
        assert_eq!(&a[i + 1..i + 3], ["mcp__*", "Grep"]);
        let settings: Value = serde_json::from_str(
            &std::fs::read_to_string(after(&a, "--settings").unwrap()).unwrap(),
        )
        .unwrap();
        let hook = &settings["hooks"]["PreToolUse"][0];
        assert_eq!(hook["matcher"], "*");
        assert_eq!(hook["hooks"][0]["onFailure"], "block");
        let cmd = hook["hooks"][0]["command"].as_str().unwrap();
        assert_eq!(
            cmd,
            format!(
                "'/opt/my tools/guard' scope --root {}",
                sh_quote(&root.to_string_lossy())
            )
        );
        let dir = inv.temp_dir().unwrap().to_path_buf();
        drop(inv);
        assert!(!dir.exists(), "temp files go with the invocation");
    }

    #[test]
    fn the_workspace_contract_offers_one_mcp_tool_and_no_wildcard() {
        let d = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(d.path()).unwrap();
        let p = plan(d.path(), |o| o.workspace_unity_state = Some(true));
        let endpoint = super::super::unity::check_url("http://127.0.0.1:5050/mcp").unwrap();
        let c = Contract::Workspace {
            root: root.clone(),
            endpoint,
            guard: PathBuf::from("/bin/guard"),
            run_agent: PathBuf::from("/bin/run-agent"),
        };
        let inv = build(&p, Path::new("claude"), &c, None, false).unwrap();
        let a = args(&inv);
        assert_eq!(after(&a, "--tools"), Some("Read,Grep,Glob"));
        assert!(
            !a.contains(&"--disallowedTools".to_string()),
            "mcp__* would kill the tool"
        );
        let mcp: Value = serde_json::from_str(
            &std::fs::read_to_string(after(&a, "--mcp-config").unwrap()).unwrap(),
        )
        .unwrap();
        assert_eq!(
            mcp,
            json!({"mcpServers": {"unity-state": {"type": "stdio", "command": "/bin/run-agent", "args": ["mcp-proxy", "--url", "http://127.0.0.1:5050/mcp"]}}})
        );
        let settings: Value = serde_json::from_str(
            &std::fs::read_to_string(after(&a, "--settings").unwrap()).unwrap(),
        )
        .unwrap();
        let cmd = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap();
        assert!(
            cmd.ends_with("--allow-tool mcp__unity-state__editor-application-get-state"),
            "{cmd}"
        );
        assert!(cmd.contains(&format!("--root {}", sh_quote(&root.to_string_lossy()))));
    }

    #[test]
    fn a_profile_replaces_inherited_credentials() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("p.json");
        std::fs::write(&file, r#"{"profiles":[{"id":"w","env":{"ANTHROPIC_BASE_URL":"http://127.0.0.1:1","ANTHROPIC_API_KEY":"k-123456789"}}]}"#).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let profile = super::super::profiles::find_in(&file, "w").unwrap();
        let p = plan(d.path(), |_| {});
        let inv = build(
            &p,
            Path::new("claude"),
            &Contract::None { servers: None },
            Some(&profile),
            false,
        )
        .unwrap();
        assert!(
            inv.set_env
                .contains(&("ANTHROPIC_API_KEY".into(), "k-123456789".into()))
        );
        let inherited: Vec<String> = std::env::vars()
            .map(|(k, _)| k)
            .filter(|k| k.starts_with("ANTHROPIC_"))
            .collect();
        for k in inherited {
            assert!(inv.remove_env.contains(&k), "{k}");
        }
        assert!(!args(&inv).iter().any(|a| a.contains("k-123456789")));
    }

    #[test]
    fn attached_plugins_select_servers_of_the_project_file() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(
            attached_servers(d.path(), &[]).unwrap(),
            json!({"mcpServers": {}})
        );
        let e = attached_servers(d.path(), &["db".into()]).unwrap_err();
        assert_eq!(e.failure, Failure::NotFound);
        std::fs::write(
            d.path().join(".mcp.json"),
            r#"{"mcpServers":{"db":{"command":"db-mcp"},"web":{"type":"http","url":"http://x"}}}"#,
        )
        .unwrap();
        assert_eq!(
            attached_servers(d.path(), &["db".into()]).unwrap(),
            json!({"mcpServers": {"db": {"command": "db-mcp"}}})
        );
        assert!(attached_servers(d.path(), &["db".into(), "nope".into()]).is_err());
        let p = plan(d.path(), |o| o.attached_plugins = Some(vec!["db".into()]));
        let servers = attached_servers(d.path(), p.attached_plugins.as_deref().unwrap()).unwrap();
        let inv = build(
            &p,
            Path::new("claude"),
            &Contract::None {
                servers: Some(servers),
            },
            None,
            false,
        )
        .unwrap();
        let a = args(&inv);
        assert!(a.contains(&"--strict-mcp-config".to_string()));
        assert!(after(&a, "--mcp-config").is_some());
    }

    #[cfg(unix)]
    #[test]
    fn quoting_survives_the_shell() {
        for s in [
            "plain/path",
            "/a b/c",
            "it's",
            "$HOME",
            "a\"b",
            r"C:\proj\x",
            "",
        ] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", sh_quote(s)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), s);
        }
    }
}
