//! `guard doctor [REPO]`: is this repo guarded, on this machine? Each check is one line with
//! ok / warn / fail and, when not ok, the fix. Exits 1 when any check fails.

use super::{EVENTS, Wiring};
use crate::agent::locate;
use crate::exit::Code;
use serde::Serialize;
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Claude Code CLI version the suite is tested against.
pub const PINNED_CLAUDE: &str = include_str!("../../../scripts/claude-cli-version");

/// The suite's other tools, whose versions must match the guard's.
const TOOLS: [&str; 8] = [
    "claim",
    "release",
    "status",
    "wait-milestone",
    "build-renderer",
    "reload-plugin",
    "run-agent",
    "send-message",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Debug, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub level: Level,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

pub(super) fn check(
    name: &'static str,
    level: Level,
    detail: String,
    fix: Option<String>,
) -> Check {
    Check {
        name,
        level,
        detail,
        fix,
    }
}

/// The settings files a session started in `root` reads (user, project, local, managed), as
/// the client's documentation lists them.
pub fn settings_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let user_dir = std::env::var_os("CLAUDE_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".claude")));
    if let Some(dir) = user_dir {
        files.push(dir.join("settings.json"));
    }
    files.push(root.join(".claude").join("settings.json"));
    files.push(root.join(".claude").join("settings.local.json"));
    files.push(PathBuf::from(if cfg!(windows) {
        r"C:\ProgramData\ClaudeCode\managed-settings.json"
    } else if cfg!(target_os = "macos") {
        "/Library/Application Support/ClaudeCode/managed-settings.json"
    } else {
        "/etc/claude-code/managed-settings.json"
    }));
    files
}

/// Runs every check on the repo at `root`.
pub fn checks(root: &Path) -> Vec<Check> {
    let w = Wiring::new(root);
    let mut out = Vec::new();
    let commands = if super::agents::claude_skipped(root) {
        out.push(check(
            "hooks",
            Level::Warn,
            format!("not wired for Claude Code ({} holds no guard entry); its sessions here run unguarded", w.settings.display()),
            Some(format!("guard install --agent claude {}", super::install::shell_quote(&w.root.to_string_lossy()))),
        ));
        None
    } else {
        hook_commands(&w, &mut out)
    };
    if let Some(command) = commands {
        out.push(guard_answers(root, &command));
        out.push(versions(root, &command));
    }
    out.extend(super::agents::checks(root));
    out.push(hooks_enabled(root));
    out.push(writable(&w));
    out.push(plans(root));
    out.push(claude_cli());
    out.push(messaging_tools(root));
    if let Some(c) = lease_remote(root) {
        out.push(c);
    }
    out
}

/// The messaging tools over MCP: the `.mcp.json` entry starts a server that lists both tools.
/// A warning, not a failure: the guard protects without them.
fn messaging_tools(root: &Path) -> Check {
    let fix = Some(
        "run guard install (it writes the .mcp.json entry), and put send-message on PATH"
            .to_string(),
    );
    if !root.join(".mcp.json").exists() {
        return check(
            "messaging tools",
            Level::Warn,
            "no .mcp.json: sessions have the send-message CLI but not its MCP tools".into(),
            fix,
        );
    }
    match crate::messaging::mcp::wire::self_check(root) {
        Ok(tools) => check(
            "messaging tools",
            Level::Ok,
            format!("the .mcp.json server lists {}", tools.join(", ")),
            None,
        ),
        Err(e) => check("messaging tools", Level::Warn, e, fix),
    }
}

/// With leases configured: the remote takes the lease refs (a probe ref pushed and deleted).
fn lease_remote(root: &Path) -> Option<Check> {
    let cfg = crate::config::Config::load(root).ok()?;
    let leases = cfg.leases?;
    Some(match crate::leases::ops::check_remote(root, &leases.remote) {
        Ok(()) => check(
            "lease remote",
            Level::Ok,
            format!("remote '{}' takes refs under refs/session-lock/", leases.remote),
            None,
        ),
        Err(e) => check(
            "lease remote",
            Level::Fail,
            e,
            Some("let the remote accept refs/session-lock/* (or remove \"leases\" from session-lock/config.json)".into()),
        ),
    })
}

/// The guard entries of `.claude/settings.json`: one per event, all the same command.
fn hook_commands(w: &Wiring, out: &mut Vec<Check>) -> Option<String> {
    let fix = format!(
        "guard install {}",
        super::install::shell_quote(&w.root.to_string_lossy())
    );
    let text = match crate::atomic::read_optional(&w.settings) {
        Ok(Some(t)) => t,
        Ok(None) => {
            out.push(check(
                "hooks",
                Level::Fail,
                format!("{} does not exist: no hook runs", w.settings.display()),
                Some(fix),
            ));
            return None;
        }
        Err(e) => {
            out.push(check(
                "hooks",
                Level::Fail,
                format!("cannot read {}: {e}", w.settings.display()),
                None,
            ));
            return None;
        }
    };
    let doc: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            out.push(check(
                "hooks",
                Level::Fail,
                format!("{} is not valid JSON ({e})", w.settings.display()),
                Some(format!("fix the JSON, then {fix}")),
            ));
            return None;
        }
    };
    let mut missing = Vec::new();
    let mut commands: Vec<String> = Vec::new();
    for (event, _) in EVENTS {
        let found: Vec<String> = super::guard_commands_of(&doc, event)
            .into_iter()
            .map(str::to_string)
            .collect();
        match found.first() {
            Some(c) => {
                if !commands.contains(c) {
                    commands.push(c.clone());
                }
            }
            None => missing.push(event),
        }
    }
    let Some(first) = commands.first().cloned() else {
        out.push(check(
            "hooks",
            Level::Fail,
            format!("{} has no guard hook entries", w.settings.display()),
            Some(fix),
        ));
        return None;
    };
    let level = if missing.contains(&"PreToolUse") {
        Level::Fail
    } else if missing.is_empty() && commands.len() == 1 {
        Level::Ok
    } else {
        Level::Warn
    };
    let detail = if missing.is_empty() {
        format!("every event runs `{first}`")
    } else {
        format!("no guard entry for {}", missing.join(", "))
    };
    let detail = if commands.len() > 1 {
        format!(
            "{detail}; the entries run different commands: {}",
            commands.join(" | ")
        )
    } else {
        detail
    };
    out.push(check(
        "hooks",
        level,
        detail,
        (level != Level::Ok).then_some(fix),
    ));
    Some(first)
}

/// Runs `command` the way the client does (`sh -c`, in the repo, with `CLAUDE_PROJECT_DIR`).
fn run_hook(root: &Path, command: &str, args: &str, stdin: &[u8]) -> Result<Output, String> {
    run_hook_with("sh", root, command, args, stdin)
}

/// [`run_hook`] with another shell (Gemini CLI runs hooks with `bash -c`).
pub(super) fn run_hook_with(
    shell: &str,
    root: &Path,
    command: &str,
    args: &str,
    stdin: &[u8],
) -> Result<Output, String> {
    let mut c = Command::new(shell);
    c.arg("-c").arg(format!("{command}{args}"));
    c.current_dir(root)
        .env("CLAUDE_PROJECT_DIR", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot run `{command}`: {e}"))?;
    if let Some(mut sin) = child.stdin.take() {
        let _ = sin.write_all(stdin);
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`{command}` did not answer within 15s"));
            }
        }
    }
    let o = child.wait_with_output().map_err(|e| e.to_string())?;
    Ok(Output {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).trim().to_string(),
        stderr: String::from_utf8_lossy(&o.stderr).trim().to_string(),
    })
}

pub(super) struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// `exit 2, stdout {…}: the reason`, for a check's detail.
    pub(super) fn describe(&self) -> String {
        format!(
            "exit {}{}{}",
            self.code.map_or("by signal".into(), |c| c.to_string()),
            if self.stdout.is_empty() {
                String::new()
            } else {
                format!(", stdout {}", self.stdout)
            },
            if self.stderr.is_empty() {
                String::new()
            } else {
                format!(": {}", self.stderr)
            },
        )
    }
}

/// The fix when the hook command cannot run the guard.
pub(super) const GUARD_MISSING_FIX: &str = "install the suite on this machine (scripts/setup) or put its folder on PATH; SESSION_LOCK_GUARD names the guard program explicitly";

/// Feeds the hook command a harmless payload (a Read of README.md by a session that holds
/// nothing) and expects an allow: exit 0, nothing on stdout.
fn guard_answers(root: &Path, command: &str) -> Check {
    let payload = json!({
        "hook_event_name": "PreToolUse",
        "session_id": format!("guard-doctor-{}", std::process::id()),
        "cwd": root,
        "tool_name": "Read",
        "tool_input": {"file_path": root.join("README.md")},
    })
    .to_string();
    let fix = GUARD_MISSING_FIX.to_string();
    match run_hook(root, command, "", payload.as_bytes()) {
        Err(e) => check("guard runs", Level::Fail, e, Some(fix)),
        Ok(o) if o.code == Some(0) && o.stdout.is_empty() => check(
            "guard runs",
            Level::Ok,
            "the hook command answered a test call with allow".into(),
            None,
        ),
        Ok(o) => check(
            "guard runs",
            Level::Fail,
            format!(
                "the hook command answered a harmless call with {}",
                o.describe()
            ),
            Some(fix),
        ),
    }
}

/// The guard the hooks run and the tools on PATH are the same version as this guard.
fn versions(root: &Path, command: &str) -> Check {
    let mine = env!("CARGO_PKG_VERSION");
    let mut odd = Vec::new();
    match run_hook(root, command, " --version", b"") {
        Ok(o) if o.code == Some(0) => {
            if o.stdout.split_whitespace().nth(1) != Some(mine) {
                odd.push(format!("the hooks' guard says '{}'", o.stdout));
            }
        }
        Ok(o) => odd.push(format!("the hooks' guard --version failed: {}", o.stderr)),
        Err(e) => odd.push(e),
    }
    let mut missing = Vec::new();
    for tool in TOOLS {
        match locate::on_path(tool) {
            None => missing.push(tool),
            Some(p) => match locate::version(&p) {
                Ok(v) if v.split_whitespace().nth(1) == Some(mine) => {}
                Ok(v) => odd.push(format!("{} says '{v}'", p.display())),
                Err(e) => odd.push(e),
            },
        }
    }
    if !odd.is_empty() {
        return check(
            "versions",
            Level::Fail,
            format!("this guard is {mine}, but {}", odd.join("; ")),
            Some("reinstall the whole suite from one build (scripts/setup)".into()),
        );
    }
    if !missing.is_empty() {
        return check(
            "versions",
            Level::Warn,
            format!("guard {mine}; not on PATH: {}", missing.join(", ")),
            Some("put the suite's folder (scripts/setup installs to ~/.local/bin) on PATH".into()),
        );
    }
    check(
        "versions",
        Level::Ok,
        format!("the hooks' guard and every tool on PATH are {mine}"),
        None,
    )
}

/// No settings file the session reads turns every hook off.
fn hooks_enabled(root: &Path) -> Check {
    let off: Vec<String> = settings_files(root)
        .into_iter()
        .filter(|f| {
            crate::atomic::read_optional(f)
                .ok()
                .flatten()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|v| v.get("disableAllHooks") == Some(&Value::Bool(true)))
        })
        .map(|f| f.display().to_string())
        .collect();
    if off.is_empty() {
        check(
            "hooks enabled",
            Level::Ok,
            "no settings file sets disableAllHooks".into(),
            None,
        )
    } else {
        check(
            "hooks enabled",
            Level::Fail,
            format!(
                "disableAllHooks is true in {}: no hook runs",
                off.join(", ")
            ),
            Some("remove \"disableAllHooks\" from that file".into()),
        )
    }
}

/// The guard can write its locks: a file is created in session-lock/ and removed again.
fn writable(w: &Wiring) -> Check {
    let dir = w.protocol.parent().expect("in session-lock/").to_path_buf();
    if !dir.is_dir() {
        return check(
            "state folder",
            Level::Fail,
            format!("{} does not exist", dir.display()),
            Some(format!(
                "guard install {}",
                super::install::shell_quote(&w.root.to_string_lossy())
            )),
        );
    }
    match tempfile::Builder::new()
        .prefix(".doctor-")
        .tempfile_in(&dir)
    {
        Ok(_) => check(
            "state folder",
            Level::Ok,
            format!("{} is writable", dir.display()),
            None,
        ),
        Err(e) => check(
            "state folder",
            Level::Fail,
            crate::atomic::write_error(&dir, e).to_string(),
            Some(format!(
                "make {} writable for this user: the guard writes locks there",
                dir.display()
            )),
        ),
    }
}

/// The config loads and the plans parse.
fn plans(root: &Path) -> Check {
    let cfg = match crate::config::Config::load(root) {
        Ok(c) => c,
        Err(e) => {
            return check(
                "plans",
                Level::Fail,
                e.to_string(),
                Some("fix session-lock/config.json".into()),
            );
        }
    };
    match crate::plans::load(root, &cfg.plan_glob) {
        Ok(streams) if streams.is_empty() => check(
            "plans",
            Level::Warn,
            format!(
                "no plan matches {}: there is no stream to claim",
                cfg.plan_glob
            ),
            Some(format!("add plans as {}", cfg.plan_glob)),
        ),
        Ok(streams) => check(
            "plans",
            Level::Ok,
            format!(
                "{} stream(s): {}",
                streams.len(),
                streams
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None,
        ),
        Err(e) => check(
            "plans",
            Level::Fail,
            e.to_string(),
            Some("fix that plan's frontmatter".into()),
        ),
    }
}

/// The pinned Claude Code CLI, which run-agent and send-message drive.
fn claude_cli() -> Check {
    let pinned = PINNED_CLAUDE.trim();
    let fix = Some(format!(
        "install @anthropic-ai/claude-code@{pinned} (scripts/install-claude-cli) and put it on PATH or in {}",
        locate::CLAUDE_BIN_ENV
    ));
    match locate::claude_bin(None) {
        Err(e) => check(
            "claude cli",
            Level::Warn,
            format!("{} (run-agent and send-message need it)", e.message),
            fix,
        ),
        Ok(p) => match locate::version(&p) {
            Ok(v) if v.split_whitespace().next() == Some(pinned) => check(
                "claude cli",
                Level::Ok,
                format!("{} is {pinned}, the pinned version", p.display()),
                None,
            ),
            Ok(v) => check(
                "claude cli",
                Level::Warn,
                format!("{} is '{v}', not the pinned {pinned}", p.display()),
                fix,
            ),
            Err(e) => check("claude cli", Level::Warn, e, fix),
        },
    }
}

/// The checks as text: `ok   hooks: …`, with `fix: …` under each one that is not ok.
pub fn render(checks: &[Check]) -> String {
    let mut s = String::new();
    for c in checks {
        let tag = match c.level {
            Level::Ok => "ok  ",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        };
        s.push_str(&format!("{tag} {}: {}\n", c.name, c.detail));
        if let Some(fix) = &c.fix {
            s.push_str(&format!("     fix: {fix}\n"));
        }
    }
    s
}

pub fn run(repo: Option<&Path>, json: bool) -> anyhow::Result<Code> {
    let root = super::target_repo(repo, "doctor")?;
    let all = checks(&root);
    let ok = all.iter().all(|c| c.level != Level::Fail);
    if json {
        crate::cli::print_json(&json!({"ok": ok, "repo": root, "checks": all}))?;
    } else {
        print!("{}", render(&all));
        let fails = all.iter().filter(|c| c.level == Level::Fail).count();
        let warns = all.iter().filter(|c| c.level == Level::Warn).count();
        println!(
            "{}: {fails} failed, {warns} warning(s), {} ok",
            root.display(),
            all.len() - fails - warns
        );
    }
    Ok(if ok { Code::Success } else { Code::Failure })
}
