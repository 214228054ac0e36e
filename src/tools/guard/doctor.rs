//! `guard doctor [REPO]`: is this repo guarded, on this machine? Each check is one line with
//! ok / warn / fail and, when not ok, the fix for that one cause. Exits 1 when any check fails.
//!
//! The checks are a table ([`CHECKS`]), run in order over one [`Ctx`]; a check that does not
//! apply (no hook entries to run, no leases configured) gives no line. A new check is one row.

use super::{EVENTS, Wiring, runs_launcher};
use crate::agent::locate;
use crate::exit::Code;
use crate::json_edit::parse_value;
use serde::Serialize;
use serde_json::{Value, json};
use std::cell::OnceCell;
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

/// Bytes the state-folder probe writes and syncs: a create alone succeeds on a full disk.
const PROBE_BYTES: usize = 64 * 1024;

/// Free space below which the state folder is a warning: the block log alone rotates at 1 MiB.
const LOW_SPACE_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

#[derive(Clone, Debug, Serialize)]
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

fn ok(name: &'static str, detail: String) -> Check {
    check(name, Level::Ok, detail, None)
}

/// One row of the table: a check over the context; `None` when it does not apply.
pub type CheckFn = fn(&Ctx) -> Option<Check>;

/// Every check, in the order shown.
pub const CHECKS: [CheckFn; 15] = [
    hooks,
    user_hooks,
    hook_program,
    guard_runs,
    versions,
    hooks_enabled,
    config,
    plans,
    locks,
    state_folder,
    floor,
    status_line,
    messaging_tools,
    claude_cli,
    lease_remote,
];

/// What the checks look at, found once.
pub struct Ctx {
    pub root: PathBuf,
    pub w: Wiring,
    /// The hooks row, and the command the entries run when there is one.
    hooks: (Check, Option<String>),
    /// The program the hook command starts on this machine (`hook_program`'s row), when it is
    /// session-lock's guard.
    program: OnceCell<(Check, Option<Program>)>,
}

/// The guard the hooks run here.
#[derive(Clone, Debug)]
struct Program {
    path: PathBuf,
    /// Its `--version` line.
    version: String,
}

impl Ctx {
    pub fn new(root: &Path) -> Ctx {
        let w = Wiring::new(root);
        let hooks = if super::agents::claude_skipped(root) {
            let fix = format!(
                "guard install --agent claude {}",
                crate::shell::word::quote_posix(&w.root.to_string_lossy())
            );
            let detail = format!(
                "not wired for Claude Code ({} holds no guard entry); its sessions here run unguarded",
                w.settings.display()
            );
            (check("hooks", Level::Warn, detail, Some(fix)), None)
        } else {
            hook_entries(&w)
        };
        Ctx {
            root: root.to_path_buf(),
            w,
            hooks,
            program: OnceCell::new(),
        }
    }

    fn install_fix(&self) -> String {
        format!(
            "guard install {}",
            crate::shell::word::quote_posix(&self.root.to_string_lossy())
        )
    }

    fn program(&self) -> &(Check, Option<Program>) {
        self.program.get_or_init(|| match &self.hooks.1 {
            Some(command) => resolve_program(self, command),
            None => (ok("hook program", String::new()), None),
        })
    }
}

/// The settings files a session started in `root` reads (user, project, local, managed), as
/// the client's documentation lists them.
pub fn settings_files(root: &Path) -> Vec<PathBuf> {
    let host = crate::platform::this();
    let mut files = Vec::new();
    if let Some(dir) = host.claude_config_dir() {
        files.push(dir.join("settings.json"));
    }
    files.push(root.join(".claude").join("settings.json"));
    files.push(root.join(".claude").join("settings.local.json"));
    files.push(host.claude_managed_settings());
    files
}

/// Runs every check on the repo at `root`: the table's, then each other client's
/// ([`super::agents::checks`]).
pub fn checks(root: &Path) -> Vec<Check> {
    let ctx = Ctx::new(root);
    let mut out: Vec<Check> = CHECKS.iter().filter_map(|c| c(&ctx)).collect();
    out.extend(super::agents::checks(root));
    out
}

/// The guard entries of `.claude/settings.json`: one per event, all the same command.
fn hook_entries(w: &Wiring) -> (Check, Option<String>) {
    let fix = format!(
        "guard install {}",
        crate::shell::word::quote_posix(&w.root.to_string_lossy())
    );
    let fail =
        |detail: String, fix: Option<String>| (check("hooks", Level::Fail, detail, fix), None);
    let text = match crate::atomic::read_optional(&w.settings) {
        Ok(Some(t)) => t,
        Ok(None) => {
            return fail(
                format!("{} does not exist: no hook runs", w.settings.display()),
                Some(fix),
            );
        }
        Err(e) => {
            return fail(
                format!("cannot read {}: {e}", w.settings.display()),
                Some(format!("make {} readable", w.settings.display())),
            );
        }
    };
    let doc = match parse_value(&text) {
        Ok(v) => v,
        Err(e) => {
            return fail(
                format!(
                    "{} is not valid JSON ({e}): the client ignores it",
                    w.settings.display()
                ),
                Some(format!("fix the JSON, then {fix}")),
            );
        }
    };
    let mut missing = Vec::new();
    let mut commands: Vec<String> = Vec::new();
    for (event, _) in EVENTS {
        let found = guard_commands(&doc, event);
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
        return fail(
            format!("{} has no guard hook entries", w.settings.display()),
            Some(fix),
        );
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
    (
        check("hooks", level, detail, (level != Level::Ok).then_some(fix)),
        Some(first),
    )
}

/// The guard commands of a settings file's entries for `event`.
fn guard_commands(doc: &Value, event: &str) -> Vec<String> {
    super::guard_commands_of(doc, event)
        .into_iter()
        .map(str::to_string)
        .collect()
}

fn hooks(ctx: &Ctx) -> Option<Check> {
    Some(ctx.hooks.0.clone())
}

/// The user-scope entry in the user's settings: what guards a session started in a subfolder of
/// the repo (the client reads the repo's settings only in the folder a session starts in).
fn user_hooks(ctx: &Ctx) -> Option<Check> {
    const NAME: &str = "user-scope hooks";
    let warn = |detail: String| Some(check(NAME, Level::Warn, detail, Some(ctx.install_fix())));
    let Some(path) = &ctx.w.user else {
        return warn("no home folder, so no user settings: a session started in a subfolder of the repo runs no hook".into());
    };
    let doc = match crate::atomic::read_optional(path) {
        Ok(text) => text.and_then(|t| parse_value(&t).ok()),
        Err(e) => return warn(format!("cannot read {}: {e}", path.display())),
    };
    let command = doc.as_ref().and_then(|d| {
        guard_commands(d, "PreToolUse")
            .into_iter()
            .find(|c| super::is_user_scope_command(c))
    });
    let Some(command) = command else {
        return warn(format!(
            "{} has no user-scope guard entry: a session started in a subfolder of the repo (or a nested `claude -p` run there) runs no hook",
            path.display()
        ));
    };
    let program = Path::new(super::command_program(&command));
    if !program.is_file() {
        return Some(check(
            NAME,
            Level::Fail,
            format!(
                "{} runs `{}`, which does not exist: every session of yours meets a hook error",
                path.display(),
                program.display()
            ),
            Some(ctx.install_fix()),
        ));
    }
    Some(ok(
        NAME,
        format!(
            "a session started in a subfolder runs `{command}` ({})",
            path.display()
        ),
    ))
}

/// Where the launcher would find the guard here, in its order; `None` when nowhere.
fn launcher_guard() -> Result<(PathBuf, &'static str), String> {
    if let Some(g) = std::env::var_os("SESSION_LOCK_GUARD").filter(|v| !v.is_empty()) {
        let g = PathBuf::from(g);
        return match g.is_file() || g.components().count() == 1 {
            true => Ok((
                locate::on_path(&g.to_string_lossy()).unwrap_or(g),
                "SESSION_LOCK_GUARD",
            )),
            false => Err(format!("SESSION_LOCK_GUARD={} does not exist", g.display())),
        };
    }
    if let Some(p) = locate::on_path("guard") {
        return Ok((p, "the first guard on PATH"));
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    for dir in [".local/bin", ".cargo/bin"] {
        let p = home
            .join(dir)
            .join(format!("guard{}", std::env::consts::EXE_SUFFIX));
        if p.is_file() {
            return Ok((p, "the launcher's fallback folder"));
        }
    }
    Err("the launcher finds no guard here (not $SESSION_LOCK_GUARD, not on PATH, not in ~/.local/bin or ~/.cargo/bin), so it blocks every tool call".into())
}

/// The program the hook command starts here, and whether it is session-lock's guard.
fn resolve_program(ctx: &Ctx, command: &str) -> (Check, Option<Program>) {
    const NAME: &str = "hook program";
    let (path, how) = if runs_launcher(command) {
        if !ctx.w.launcher.is_file() {
            return (
                check(
                    NAME,
                    Level::Fail,
                    format!(
                        "the hooks run {}, which is missing",
                        ctx.w.launcher.display()
                    ),
                    Some(ctx.install_fix()),
                ),
                None,
            );
        }
        match launcher_guard() {
            Ok(found) => found,
            Err(e) if e.starts_with("SESSION_LOCK_GUARD") => {
                return (
                    check(
                        NAME,
                        Level::Fail,
                        e,
                        Some(
                            "set SESSION_LOCK_GUARD to session-lock's guard program, or unset it"
                                .into(),
                        ),
                    ),
                    None,
                );
            }
            Err(e) => {
                return (
                    check(
                        NAME,
                        Level::Fail,
                        e,
                        Some("install the suite on this machine (scripts/setup) or put its folder on PATH".into()),
                    ),
                    None,
                );
            }
        }
    } else {
        let p = PathBuf::from(super::command_program(command));
        let p = if p.components().count() == 1 {
            locate::on_path(&p.to_string_lossy()).unwrap_or(p)
        } else {
            p
        };
        if !p.is_file() {
            return (
                check(
                    NAME,
                    Level::Fail,
                    format!(
                        "the hooks run {}, which does not exist here (installed with --guard on another machine, or moved)",
                        p.display()
                    ),
                    Some(format!(
                        "{} (the committed launcher finds the guard on each machine), or guard install --guard <where the guard is now>",
                        ctx.install_fix()
                    )),
                ),
                None,
            );
        }
        (p, "named by the hook entries")
    };
    match locate::version(&path) {
        Ok(v) if v.split_whitespace().next() == Some("guard") => (
            ok(NAME, format!("{} ({how}) is {v}", path.display())),
            Some(Program { path, version: v }),
        ),
        said => (
            check(
                NAME,
                Level::Fail,
                format!(
                    "{} ({how}) is not session-lock's guard: its --version {}",
                    path.display(),
                    match said {
                        Ok(v) => format!("says '{v}'"),
                        Err(e) => format!("failed ({e})"),
                    }
                ),
                Some(format!(
                    "put the suite's folder before {} on PATH, or set SESSION_LOCK_GUARD to session-lock's guard",
                    path.parent()
                        .map_or(String::new(), |d| d.display().to_string())
                )),
            ),
            None,
        ),
    }
}

fn hook_program(ctx: &Ctx) -> Option<Check> {
    ctx.hooks.1.as_ref()?;
    Some(ctx.program().0.clone())
}

/// Runs `command` the way the client does (`sh -c`, in the repo, with `CLAUDE_PROJECT_DIR`).
fn run_hook(root: &Path, command: &str, stdin: &[u8], limit: Duration) -> Result<Output, String> {
    run_hook_with("sh", root, command, stdin, limit)
}

/// [`run_hook`] with another shell (Gemini CLI runs hooks with `bash -c`).
pub(super) fn run_hook_with(
    shell: &str,
    root: &Path,
    command: &str,
    stdin: &[u8],
    limit: Duration,
) -> Result<Output, String> {
    let mut c = Command::new(shell);
    c.arg("-c")
        .arg(command)
        .current_dir(root)
        .env("CLAUDE_PROJECT_DIR", root)
        // As a shell started there: a PWD inherited from elsewhere would be kept by bash.
        .env("PWD", root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = c
        .spawn()
        .map_err(|e| format!("cannot run `{command}`: {e}"))?;
    if let Some(mut sin) = child.stdin.take() {
        let _ = sin.write_all(stdin);
    }
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < limit => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{command}` did not answer within {}s",
                    limit.as_secs()
                ));
            }
        }
    }
    let o = child.wait_with_output().map_err(|e| e.to_string())?;
    Ok(Output {
        code: o.status.code(),
        stdout: String::from_utf8_lossy(&o.stdout).trim().to_string(),
        stderr: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        took: started.elapsed(),
    })
}

pub(super) struct Output {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    took: Duration,
}

impl Output {
    /// `exit 2, stdout {…}: the reason`, for a check's detail.
    pub(super) fn describe(&self) -> String {
        let stdout = match self.stdout.is_empty() {
            true => String::new(),
            false => format!(", stdout {}", self.stdout),
        };
        format!("{}{stdout}{}", self.exit(), self.said())
    }

    /// `exit 2` (or `exit by signal`).
    fn exit(&self) -> String {
        format!(
            "exit {}",
            self.code.map_or("by signal".into(), |c| c.to_string())
        )
    }

    /// `: <stderr>`, or nothing when it said nothing.
    fn said(&self) -> String {
        match self.stderr.is_empty() {
            true => String::new(),
            false => format!(": {}", self.stderr),
        }
    }
}

/// The fix when the hook command cannot run the guard.
pub(super) const GUARD_MISSING_FIX: &str = "install the suite on this machine (scripts/setup) or put its folder on PATH; SESSION_LOCK_GUARD names the guard program explicitly";

/// Feeds the hook command a harmless payload (a Read of README.md by a session that holds
/// nothing) and expects an allow: exit 0 and no deny (a notice beside it is fine: the checks
/// below name its cause).
fn guard_runs(ctx: &Ctx) -> Option<Check> {
    const NAME: &str = "guard runs";
    let command = ctx.hooks.1.as_ref()?;
    ctx.program().1.as_ref()?;
    let payload = json!({
        "hook_event_name": "PreToolUse",
        "session_id": format!("guard-doctor-{}", std::process::id()),
        "cwd": ctx.root,
        "tool_name": "Read",
        "tool_input": {"file_path": ctx.root.join("README.md")},
    })
    .to_string();
    let by_hand = format!(
        "run it by hand to see more: cd {} && echo '{}' | CLAUDE_PROJECT_DIR=. {command}",
        crate::shell::word::quote_posix(&ctx.root.to_string_lossy()),
        payload.replace('\'', "'\\''")
    );
    Some(
        match run_hook(
            &ctx.root,
            command,
            payload.as_bytes(),
            Duration::from_secs(15),
        ) {
            Err(e) => check(NAME, Level::Fail, e, Some(by_hand)),
            Ok(o) if o.code == Some(0) && o.stdout.is_empty() => ok(
                NAME,
                "the hook command answered a test call with allow".into(),
            ),
            Ok(o) if o.code == Some(0) => match serde_json::from_str::<Value>(&o.stdout) {
                Ok(v) if is_deny(&v) => check(
                    NAME,
                    Level::Fail,
                    format!("the hook command blocked a harmless Read: {}", o.stdout),
                    Some(by_hand),
                ),
                Ok(v) => ok(
                    NAME,
                    format!(
                        "the hook command answered a test call with allow, and said: {}",
                        v.get("systemMessage")
                            .and_then(Value::as_str)
                            .unwrap_or(&o.stdout)
                    ),
                ),
                Err(_) => check(
                    NAME,
                    Level::Fail,
                    format!(
                        "the hook command printed something that is not a hook answer, so the client ignores it: {}",
                        o.stdout
                    ),
                    Some(by_hand),
                ),
            },
            Ok(o) => check(
                NAME,
                Level::Fail,
                format!(
                    "the hook command answered a harmless call with {}{}",
                    o.exit(),
                    o.said()
                ),
                Some(by_hand),
            ),
        },
    )
}

/// A hook answer that denies the call.
fn is_deny(v: &Value) -> bool {
    v.pointer("/hookSpecificOutput/permissionDecision")
        .and_then(Value::as_str)
        == Some("deny")
        || v.get("decision").and_then(Value::as_str) == Some("block")
}

/// The guard the hooks run and the tools on PATH are the same version as this guard.
fn versions(ctx: &Ctx) -> Option<Check> {
    let program = ctx.program().1.as_ref()?;
    let mine = env!("CARGO_PKG_VERSION");
    let mut odd = Vec::new();
    if program.version.split_whitespace().nth(1) != Some(mine) {
        odd.push(format!(
            "the hooks' guard {} says '{}'",
            program.path.display(),
            program.version
        ));
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
    Some(if !odd.is_empty() {
        check(
            "versions",
            Level::Fail,
            format!("this guard is {mine}, but {}", odd.join("; ")),
            Some("reinstall the whole suite from one build (scripts/setup)".into()),
        )
    } else if !missing.is_empty() {
        check(
            "versions",
            Level::Warn,
            format!("guard {mine}; not on PATH: {}", missing.join(", ")),
            Some("put the suite's folder (scripts/setup installs to ~/.local/bin) on PATH".into()),
        )
    } else {
        ok(
            "versions",
            format!("the hooks' guard and every tool on PATH are {mine}"),
        )
    })
}

/// A settings file's value, when it exists and parses.
fn settings_value(file: &Path) -> Option<Value> {
    crate::atomic::read_optional(file)
        .ok()
        .flatten()
        .and_then(|t| parse_value(&t).ok())
}

/// No settings file the session reads turns every hook off.
fn hooks_enabled(ctx: &Ctx) -> Option<Check> {
    let off: Vec<String> = settings_files(&ctx.root)
        .into_iter()
        .filter(|f| {
            settings_value(f).is_some_and(|v| v.get("disableAllHooks") == Some(&Value::Bool(true)))
        })
        .map(|f| f.display().to_string())
        .collect();
    Some(if off.is_empty() {
        ok(
            "hooks enabled",
            "no settings file sets disableAllHooks".into(),
        )
    } else {
        check(
            "hooks enabled",
            Level::Fail,
            format!(
                "disableAllHooks is true in {}: no hook runs (nor the status line)",
                off.join(", ")
            ),
            Some("remove \"disableAllHooks\" from that file".into()),
        )
    })
}

/// session-lock/config.json loads.
fn config(ctx: &Ctx) -> Option<Check> {
    let file = ctx.w.root.join("session-lock").join("config.json");
    Some(match crate::config::Config::load(&ctx.root) {
        Ok(cfg) => {
            let checks = crate::tools::release_checks::chosen(&ctx.root, &cfg);
            ok(
                "config",
                format!(
                    "{}; release checks: {}",
                    if file.is_file() {
                        format!("{} loads", file.display())
                    } else {
                        "no session-lock/config.json: the protocol's defaults".into()
                    },
                    checks.describe()
                ),
            )
        }
        Err(e) => check(
            "config",
            Level::Fail,
            format!("{e}; until it loads, the guard applies the protocol's defaults"),
            Some(format!("fix that key in {}", file.display())),
        ),
    })
}

/// The kernel write floor: the mechanism this machine has, what the config asks, and what a
/// shell command of a session holding no stream would have denied now.
fn floor(ctx: &Ctx) -> Option<Check> {
    use crate::config::FloorMode;
    use crate::floor::mechanism::Kind;
    const NAME: &str = "write floor";
    let config = crate::config::Config::load(&ctx.root).unwrap_or_default();
    let env = crate::hook::context::Env {
        client_pid: None,
        project_dir: None,
        ..crate::hook::context::Env::from_process()
    };
    let hook_ctx = crate::hook::context::Ctx::new(ctx.root.clone(), config);
    let r = crate::hook::floor::report(&hook_ctx, "", &env);
    let now = match (&r.why_not, r.denied.len()) {
        (Some(why), _) => format!("now: {why}"),
        (None, n) => {
            // Other streams' paths first: what a person looks for; then the protocol's.
            let mut first: Vec<&crate::floor::Denied> = r.denied.iter().collect();
            first.sort_by_key(|d| !matches!(d.owner, crate::floor::Owner::Stream(_)));
            let shown: Vec<String> = first
                .into_iter()
                .take(6)
                .map(|d| crate::floor::shown(&d.path, Some(&ctx.root)))
                .collect();
            let more = n.saturating_sub(shown.len());
            format!(
                "now a shell command runs under it, denying {n} path(s): {}{}",
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )
        }
    };
    // Only Linux has a floor to install; Windows has none of its own, but a session run under
    // WSL is a Linux session. Elsewhere the analysis is the line, and says so.
    let install = if cfg!(target_os = "linux") {
        Some("install bubblewrap (scripts/install-bubblewrap, or your system's bubblewrap package)")
    } else if cfg!(windows) {
        Some(
            "Windows itself has no write floor: run the sessions under WSL, where bubblewrap gives them one",
        )
    } else {
        None
    };
    Some(match (r.mode, r.mechanism, &r.unavailable) {
        (FloorMode::Off, _, _) => ok(
            NAME,
            "off in session-lock/config.json: shell commands are checked by the guard's analysis alone".into(),
        ),
        (_, Some(Kind::Bubblewrap), _) => ok(NAME, format!("bubblewrap; {now}")),
        (_, Some(Kind::SandboxExec), _) => check(
            NAME,
            Level::Warn,
            format!(
                "sandbox-exec: every denied path, by a profile whose text is tested but which the suite's CI never runs (it has no Mac); {now}"
            ),
            None,
        ),
        (_, Some(kind), _) => check(
            NAME,
            Level::Warn,
            format!(
                "{}: only paths outside the repo, temp folders and home are denied, the rest is left to the analysis; {now}",
                kind.name()
            ),
            install.map(str::to_string),
        ),
        (FloorMode::Required, None, why) => check(
            NAME,
            Level::Fail,
            format!(
                "none ({}) and floor is \"required\": every shell command is blocked while a round runs",
                why.as_deref().unwrap_or("unknown")
            ),
            Some(match install {
                Some(i) => format!("{i}, or set floor to \"auto\" in session-lock/config.json"),
                None => "set floor to \"auto\" in session-lock/config.json".into(),
            }),
        ),
        (_, None, why) => check(
            NAME,
            Level::Warn,
            format!(
                "none ({}): shell commands are checked by the guard's analysis alone",
                why.as_deref().unwrap_or("unknown")
            ),
            install.map(str::to_string),
        ),
    })
}

/// The plans parse.
fn plans(ctx: &Ctx) -> Option<Check> {
    let glob = crate::config::Config::load(&ctx.root)
        .unwrap_or_default()
        .plan_glob;
    Some(match crate::plans::load(&ctx.root, &glob) {
        Ok(streams) if streams.is_empty() => check(
            "plans",
            Level::Warn,
            format!("no plan matches {glob}: there is no stream to claim"),
            Some(format!("add plans as {glob}")),
        ),
        Ok(streams) => ok(
            "plans",
            format!(
                "{} stream(s): {}",
                streams.len(),
                streams
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ),
        Err(e) => check(
            "plans",
            Level::Fail,
            e.to_string(),
            Some("fix that plan's frontmatter".into()),
        ),
    })
}

/// The lock files: a corrupt one (the guard protects its stream's files as if it were live), a
/// stale one (it protects nothing now), one whose session's client is gone.
fn locks(ctx: &Ctx) -> Option<Check> {
    const NAME: &str = "locks";
    let cfg = crate::config::Config::load(&ctx.root).unwrap_or_default();
    let layout = crate::state::Layout::new(&ctx.root);
    let (held, bad) = layout.read_locks();
    if let Some(b) = bad.first() {
        return Some(check(
            NAME,
            Level::Fail,
            format!(
                "{b}{}: the guard keeps protecting that stream's files as if it were live, and the round cannot end",
                if bad.len() > 1 {
                    format!(" (and {} more)", bad.len() - 1)
                } else {
                    String::new()
                }
            ),
            Some(format!(
                "fix or delete {} from a terminal (status shows it as corrupt)",
                b.path.display()
            )),
        ));
    }
    let now = crate::time::now_ms();
    let stale_ms = cfg.heartbeat_stale_ms();
    let open: Vec<_> = held.iter().filter(|h| !h.done).collect();
    let stale: Vec<String> = open
        .iter()
        .filter(|h| !h.is_live(now, stale_ms))
        .map(|h| {
            format!(
                "{} (session {}, heartbeat {} ago)",
                h.record.stream,
                crate::state::short_id(&h.record.session_id),
                crate::time::age(h.age_ms(now))
            )
        })
        .collect();
    if !stale.is_empty() {
        return Some(check(
            NAME,
            Level::Warn,
            format!(
                "stale: {}: no longer protects its files; another session may claim it",
                stale.join(", ")
            ),
            Some("claim it again from a session to go on with it, or end the round when every stream is done: status --wait --archive".into()),
        ));
    }
    let mut look = crate::liveness::Look::default();
    let orphaned: Vec<&str> = open
        .iter()
        .filter(|h| h.orphaned_in(&mut look))
        .map(|h| h.record.stream.as_str())
        .collect();
    if !orphaned.is_empty() {
        return Some(check(
            NAME,
            Level::Warn,
            format!(
                "orphaned: {}: the claiming session's client is gone; the lock protects until it goes stale",
                orphaned.join(", ")
            ),
            Some("resume that session (it keeps its files), or release the stream from a terminal once its work is committed".into()),
        ));
    }
    Some(ok(
        NAME,
        format!("{} live, {} released", open.len(), held.len() - open.len()),
    ))
}

/// The guard can write its locks and its log: a probe file is written, synced and removed (a
/// file can be created on a full disk; its bytes cannot be written), and the file system has
/// room.
fn state_folder(ctx: &Ctx) -> Option<Check> {
    const NAME: &str = "state folder";
    let dir = ctx
        .w
        .protocol
        .parent()
        .expect("in session-lock/")
        .to_path_buf();
    if !dir.is_dir() {
        return Some(check(
            NAME,
            Level::Fail,
            format!("{} does not exist", dir.display()),
            Some(ctx.install_fix()),
        ));
    }
    let probe = || -> std::io::Result<()> {
        let mut f = tempfile::Builder::new()
            .prefix(".doctor-")
            .tempfile_in(&dir)?;
        f.write_all(&vec![0u8; PROBE_BYTES])?;
        f.as_file().sync_all()
    };
    if let Err(e) = probe() {
        let full = e.raw_os_error() == Some(28) || e.to_string().contains("No space left");
        return Some(check(
            NAME,
            Level::Fail,
            crate::atomic::write_error(&dir, e).to_string(),
            Some(if full {
                format!(
                    "free space on the file system of {}: the guard cannot write heartbeats, claims or its block log there",
                    dir.display()
                )
            } else {
                format!(
                    "make {} writable for this user: the guard writes locks there",
                    dir.display()
                )
            }),
        ));
    }
    if let Some(free) = free_bytes(&dir)
        && free < LOW_SPACE_BYTES
    {
        return Some(check(
            NAME,
            Level::Warn,
            format!(
                "{} is writable, but its file system has only {} KiB free",
                dir.display(),
                free / 1024
            ),
            Some("free space there before the guard runs out of it".into()),
        ));
    }
    Some(ok(NAME, format!("{} is writable", dir.display())))
}

/// Free bytes for this user on the file system of `dir`.
#[cfg(unix)]
fn free_bytes(dir: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(not(unix))]
fn free_bytes(_dir: &Path) -> Option<u64> {
    None
}

/// The status line: ours is set and answers quickly with one line; another one is the
/// person's; none is a warning.
fn status_line(ctx: &Ctx) -> Option<Check> {
    const NAME: &str = "status line";
    let set = settings_files(&ctx.root).into_iter().find_map(|f| {
        let v = settings_value(&f)?;
        super::wiring::statusline_of(&v).map(|c| (f.clone(), c.to_string()))
    });
    let Some((file, command)) = set else {
        return Some(check(
            NAME,
            Level::Warn,
            "no settings file sets a statusLine: sessions do not see their stream and the round at a glance".into(),
            Some(format!(
                "{} (it adds `status --statusline` to .claude/settings.local.json)",
                ctx.install_fix()
            )),
        ));
    };
    if !super::wiring::is_statusline_command(&command) {
        return Some(ok(
            NAME,
            format!(
                "{} sets its own (`{command}`); to show the round in it, print the line of `status --statusline` from it",
                file.display()
            ),
        ));
    }
    let input = json!({
        "session_id": format!("guard-doctor-{}", std::process::id()),
        "cwd": ctx.root,
        "workspace": {"current_dir": ctx.root, "project_dir": ctx.root},
    })
    .to_string();
    Some(match run_hook(&ctx.root, &command, input.as_bytes(), Duration::from_secs(5)) {
        Ok(o) if o.code == Some(0) && !o.stdout.is_empty() => ok(
            NAME,
            format!(
                "ours, in {}: `{}` ({} ms)",
                file.display(),
                o.stdout.lines().next().unwrap_or(""),
                o.took.as_millis()
            ),
        ),
        Ok(o) => check(
            NAME,
            Level::Warn,
            format!(
                "ours, in {}, printed nothing (exit {}){}",
                file.display(),
                o.code.map_or("by signal".into(), |c| c.to_string()),
                if o.stderr.is_empty() {
                    String::new()
                } else {
                    format!(": {}", o.stderr)
                }
            ),
            Some("put the suite's folder on PATH (the launcher runs the status beside the guard it finds)".into()),
        ),
        Err(e) => check(NAME, Level::Warn, e, None),
    })
}

/// The messaging tools over MCP: the `.mcp.json` entry starts a server that lists both tools.
/// A warning, not a failure: the guard protects without them.
fn messaging_tools(ctx: &Ctx) -> Option<Check> {
    let fix = Some(format!(
        "{} (it writes the .mcp.json entry), and put the suite's folder on PATH",
        ctx.install_fix()
    ));
    if !ctx.w.mcp.exists() {
        return Some(check(
            "messaging tools",
            Level::Warn,
            "no .mcp.json: sessions have the send-message CLI but not its MCP tools".into(),
            fix,
        ));
    }
    Some(match crate::messaging::mcp::wire::self_check(&ctx.root) {
        Ok(tools) => ok(
            "messaging tools",
            format!("the .mcp.json server lists {}", tools.join(", ")),
        ),
        Err(e) => check("messaging tools", Level::Warn, e, fix),
    })
}

/// With leases configured: the remote takes the lease refs (a probe ref pushed and deleted).
fn lease_remote(ctx: &Ctx) -> Option<Check> {
    let cfg = crate::config::Config::load(&ctx.root).ok()?;
    let leases = cfg.leases?;
    Some(match crate::leases::ops::check_remote(&ctx.root, &leases.remote) {
        Ok(()) => ok(
            "lease remote",
            format!("remote '{}' takes refs under refs/session-lock/", leases.remote),
        ),
        Err(e) => check(
            "lease remote",
            Level::Fail,
            e,
            Some("let the remote accept refs/session-lock/* (or remove \"leases\" from session-lock/config.json)".into()),
        ),
    })
}

/// The pinned Claude Code CLI, which run-agent and send-message drive.
fn claude_cli(_ctx: &Ctx) -> Option<Check> {
    let pinned = PINNED_CLAUDE.trim();
    let fix = Some(format!(
        "install @anthropic-ai/claude-code@{pinned} (scripts/install-claude-cli) and put it on PATH or in {}",
        locate::CLAUDE_BIN_ENV
    ));
    Some(match locate::claude_bin(None) {
        Err(e) => check(
            "claude cli",
            Level::Warn,
            format!("{} (run-agent and send-message need it)", e.message),
            fix,
        ),
        Ok(p) => match locate::version(&p) {
            Ok(v) if v.split_whitespace().next() == Some(pinned) => ok(
                "claude cli",
                format!("{} is {pinned}, the pinned version", p.display()),
            ),
            Ok(v) => check(
                "claude cli",
                Level::Warn,
                format!("{} is '{v}', not the pinned {pinned}", p.display()),
                fix,
            ),
            Err(e) => check("claude cli", Level::Warn, e, fix),
        },
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_one_row_and_a_fix_when_not_ok() {
        let dir = tempfile::tempdir().unwrap();
        let all = checks(dir.path());
        let mut names: Vec<&str> = all.iter().map(|c| c.name).collect();
        let n = names.len();
        names.dedup();
        assert_eq!(names.len(), n, "one line per check: {names:?}");
        for c in &all {
            // The status line is advice, and sandbox-exec's warning says only that CI never
            // runs it: nothing there for the person to fix.
            let advice = c.name == "status line" || c.detail.starts_with("sandbox-exec");
            assert!(c.level == Level::Ok || c.fix.is_some() || advice, "{c:?}");
        }
        assert!(
            !names.contains(&"guard runs"),
            "no hook entries, nothing to run: {names:?}"
        );
    }
}
