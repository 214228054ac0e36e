//! The floor stage, after the checks: a Bash command the checks let run while a round runs
//! (any lock live) is rewritten to run under the kernel write floor ([`crate::floor`]), denying
//! what the checks protect: other live streams' files (after the earlier-claim rule), the
//! protected set, the output folders and the files other processes run later. The answer is a
//! `Rewrite` of the tool input (its other fields kept), rendered without a permission decision,
//! so the client's own permission flow still applies.
//!
//! - A plain call of a suite command (`claim api`) is not rewritten: it writes `session-lock/`.
//! - `floor: "off"` in the config: never. `"required"`: where this machine has no mechanism, the
//!   command is blocked. `"auto"`: the analysis alone, said once per session.
//! - Under `"auto"`, only in permission mode `bypassPermissions`. Measured with the real client:
//!   it matches its permission rules against the *rewritten* command, so in the modes where it
//!   asks, an allow rule like `Bash(echo:*)` no longer matches and the wrapper's substitutions
//!   read as "This command can't be checked before it runs" (refused under `-p`, asked
//!   interactively). There the analysis alone applies, said once per session; `"required"`
//!   floors those commands anyway, each then needing the client's approval (or `Bash` allowed
//!   whole).
//! - **Codex CLI** runs a rewrite only given as `permissionDecision: "allow"`, which would also
//!   answer its own approval: so its shell calls go under the floor in `bypassPermissions` only
//!   (`--dangerously-bypass-approvals-and-sandbox`, where it asks nothing and runs no sandbox of
//!   its own); in a mode where it asks, `"auto"` leaves them to the analysis (said once) and
//!   `"required"` blocks them.
//! - **Gemini CLI** merges the rewrite (`hookSpecificOutput.tool_input`) over the call's input
//!   and then matches its policy against the result, as Claude Code does; its payload names no
//!   approval mode, so the mode is read from its command line (`--yolo`, `-y`,
//!   `--approval-mode yolo`): yolo floors under `"auto"`, the others as Claude Code's asking
//!   modes do.
//! - PowerShell commands are not rewritten (the floor runs bash).

use super::context::{Call, Ctx, Env};
use super::decision::{Refusal, Rule};
use super::notices::Notice;
use crate::clients::{Client, process};
use crate::config::FloorMode;
use crate::floor::{DeniedSet, cache, mechanism, run, set};
use crate::state::Held;
use crate::words::{PermissionMode, Tool};

/// What the stage makes of an allowed call.
pub enum Floored {
    /// Left as it is.
    Unchanged,
    /// The tool input to run instead.
    Rewrite(serde_json::Value),
    /// Blocked: the floor is required and cannot be applied.
    Deny(Refusal),
}

/// The floor for an allowed call; `told` gets what the session must hear once.
pub fn stage(ctx: &Ctx, call: &Call, told: &mut Vec<Notice>) -> Floored {
    decide(ctx, call, told, || {
        mechanism::available(call.env.state_home.as_deref())
    })
}

/// [`stage`] with the machine's mechanism found by `found` (asked only when a command would go
/// under the floor).
fn decide(
    ctx: &Ctx,
    call: &Call,
    told: &mut Vec<Notice>,
    found: impl FnOnce() -> Result<mechanism::Kind, String>,
) -> Floored {
    let p = call.p;
    if ctx.config.floor == FloorMode::Off || p.tool_name != Tool::Bash || !ctx.any_live() {
        return Floored::Unchanged;
    }
    let command = p.input_str("command").unwrap_or_default();
    if command.trim().is_empty() || run::plain_suite_call(command, call.env.binary_dir.as_deref()) {
        return Floored::Unchanged;
    }
    // Gemini refuses any command substitution itself; quoted inside the wrapper it would slip
    // past that check, so such a command is left as it is, for Gemini to refuse.
    if p.client == Client::Gemini && ["$(", "`", "<(", ">("].iter().any(|t| command.contains(t)) {
        return Floored::Unchanged;
    }
    let mode = client_mode(p.client, &p.permission_mode, call.env.client_pid);
    if mode != PermissionMode::BypassPermissions
        && let Some(refused) = where_it_asks(ctx, p.client, &mode, told)
    {
        return refused;
    }
    let set = denied_set(ctx, &p.session_id, call.env);
    if set.is_empty() {
        return Floored::Unchanged;
    }
    let kind = match found() {
        Ok(kind) => kind,
        Err(why) if ctx.config.floor == FloorMode::Required => {
            return Floored::Deny(Refusal::new(
                Rule::Floor,
                format!(
                    "session-lock: this repo requires the kernel write floor for shell commands (floor: \"required\" in session-lock/config.json) and this machine has none ({why}); the command did not run. Install bubblewrap (scripts/install-bubblewrap), or ask the user to set floor to \"auto\""
                ),
            ));
        }
        Err(why) => {
            told.push(Notice::new(
                "floor:none",
                format!(
                    "no kernel write floor on this machine ({why}); shell commands are checked by the guard's analysis alone"
                ),
            ));
            return Floored::Unchanged;
        }
    };
    if kind == mechanism::Kind::Landlock {
        told.push(Notice::new("floor:landlock", LANDLOCK_NOTICE));
    }
    let Some(guard) = guard_program(call) else {
        return Floored::Unchanged;
    };
    let wrapped = if p.client == Client::Gemini {
        run::wrapper_plain(&guard, &ctx.root, &set, command)
    } else {
        run::wrapper(&guard, &ctx.root, &set, command)
    };
    let mut input = p.tool_input.clone();
    input["command"] = serde_json::Value::String(wrapped);
    Floored::Rewrite(input)
}

/// The permission mode the floor goes by: the payload's, except for Gemini CLI, whose payload
/// names none: `bypassPermissions` when its command line asks for yolo.
fn client_mode(client: Client, payload: &PermissionMode, pid: Option<u32>) -> PermissionMode {
    match client {
        Client::Gemini => {
            let yolo = pid.is_some_and(|pid| process::gemini_yolo(&process::args(pid)));
            if yolo {
                PermissionMode::BypassPermissions
            } else {
                PermissionMode::Default
            }
        }
        _ => payload.clone(),
    }
}

/// In a mode where the client asks permissions, the floor's answer: `None` to floor anyway
/// (`"required"`, for a client whose own asking then judges the rewritten command), else the
/// call left to the analysis (said once) or, for Codex under `"required"`, refused.
///
/// The client matches its permission rules against the rewritten text, which no rule the user
/// wrote names, and refuses to match a command with substitutions at all ("can't be checked
/// before it runs"): where it asks, the rewrite would ask or refuse every command. Codex takes
/// a rewrite only together with its approval.
fn where_it_asks(
    ctx: &Ctx,
    client: Client,
    mode: &PermissionMode,
    told: &mut Vec<Notice>,
) -> Option<Floored> {
    let required = ctx.config.floor == FloorMode::Required;
    if client == Client::Codex && required {
        return Some(Floored::Deny(Refusal::new(
            Rule::Floor,
            format!(
                "session-lock: this repo requires the kernel write floor for shell commands (floor: \"required\" in session-lock/config.json), and Codex runs a rewritten command only by approving it, which would skip its own asking in permission mode '{}'; the command did not run. Run Codex with --dangerously-bypass-approvals-and-sandbox, or ask the user to set floor to \"auto\"",
                mode.as_str()
            ),
        )));
    }
    if required {
        return None;
    }
    let (why, required_does) = if client == Client::Codex {
        (
            "Codex runs a rewritten command only by approving it, which would skip its own asking",
            "blocks them instead",
        )
    } else {
        (
            "the client matches its permission rules against a rewritten command, so none of them would match",
            "floors them anyway, and every command then needs its approval",
        )
    };
    told.push(Notice::new(
        "floor:permission-mode",
        format!(
            "shell commands run without the kernel write floor in permission mode '{}': {why}; the guard's analysis alone checks them (floor: \"required\" in session-lock/config.json {required_does})",
            mode.as_str()
        ),
    ));
    Some(Floored::Unchanged)
}

/// What the session hears once when the floor runs on Landlock.
pub const LANDLOCK_NOTICE: &str = "the kernel write floor runs on Landlock here, which can deny only paths outside the repo, temp folders and home without breaking ordinary work; other streams' files are checked by the guard's analysis alone. Install bubblewrap for the full floor";

/// The guard program the wrapper runs: this one.
fn guard_program(call: &Call) -> Option<std::path::PathBuf> {
    let name = if cfg!(windows) { "guard.exe" } else { "guard" };
    call.env
        .binary_dir
        .as_deref()
        .map(|d| d.join(name))
        .filter(|g| g.is_file())
}

/// What the floor denies a call of `session_id`, from the same context as the checks.
pub fn denied_set(ctx: &Ctx, session_id: &str, env: &Env) -> DeniedSet {
    let live: Vec<Held> = ctx
        .locks
        .all()
        .into_iter()
        .filter(|h| h.is_live(ctx.now, ctx.stale_ms()))
        .collect();
    let live: Vec<&Held> = live.iter().collect();
    let own: Vec<&Held> = live
        .iter()
        .copied()
        .filter(|h| h.record.session_id == session_id)
        .collect();
    let mut rules = set::stream_rules(&live, session_id);
    rules.extend(set::protocol_rules(
        &ctx.config.protected_paths,
        &ctx.config.rules.output_dirs,
        &own,
    ));
    let home = crate::sessions::home_dir();
    let mut fixed = set::fixed_paths(
        &ctx.root,
        env.binary_dir.as_deref(),
        env.state_home.as_deref(),
        &env.user_settings_dirs,
        home.as_deref(),
    );
    fixed.extend(set::git_paths(&ctx.root));
    let inputs = set::Inputs {
        root: ctx.root.clone(),
        rules,
        fixed,
        case_insensitive: ctx.config.case_insensitive(),
    };
    cache::denied(&cache::path(&ctx.layout.dir, session_id), &inputs)
}

/// The floor as `guard explain` and `guard doctor` show it: the config's mode, this machine's
/// mechanism, whether a shell command would go under it now and what it would deny.
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub mode: FloorMode,
    /// The mechanism `guard floor` uses here (`None`: there is none, see `unavailable`).
    pub mechanism: Option<mechanism::Kind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// A shell command of this session would run under the floor now.
    pub applies: bool,
    /// Why it would not, when it would not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    /// What it denies (`owner`, absolute `path`); with Landlock, only what Landlock keeps.
    pub denied: Vec<crate::floor::Denied>,
    /// What the floor cannot refuse here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The floor for a session `session_id` in `ctx`, as it stands.
pub fn report(ctx: &Ctx, session_id: &str, env: &Env) -> Report {
    let found = mechanism::available(env.state_home.as_deref());
    let mut r = Report {
        mode: ctx.config.floor,
        mechanism: found.as_ref().ok().copied(),
        unavailable: found.err(),
        applies: false,
        why_not: None,
        denied: Vec::new(),
        notes: Vec::new(),
    };
    let why_not = if r.mode == FloorMode::Off {
        Some("floor is \"off\" in session-lock/config.json".to_string())
    } else if !ctx.any_live() {
        Some("no lock is live, so no file is anyone's".to_string())
    } else {
        None
    };
    if let Some(why) = why_not {
        r.why_not = Some(why);
        return r;
    }
    let set = denied_set(ctx, session_id, env);
    r.notes = set.notes.clone();
    r.denied = match r.mechanism {
        Some(mechanism::Kind::Landlock) => {
            let (kept, left) = mechanism::landlock_keeps(&set.denied, Some(&ctx.root));
            if !left.is_empty() {
                r.notes.push(format!(
                    "{} path(s) in the repo, a temp folder or home are left to the guard's analysis (Landlock cannot deny them without breaking ordinary work)",
                    left.len()
                ));
            }
            kept
        }
        _ => set.denied,
    };
    match &r.unavailable {
        Some(why) if r.mode == FloorMode::Required => {
            r.why_not = Some(format!(
                "no mechanism here ({why}) and floor is \"required\": shell commands are blocked"
            ));
        }
        Some(why) => {
            r.why_not = Some(format!(
                "no mechanism here ({why}): shell commands are checked by the analysis alone"
            ));
        }
        None => r.applies = true,
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::hook::Payload;
    use crate::shell::word::Word;

    /// A repo where session `other` holds `api` (src/api/**), and a guard program in `bin`.
    fn bed(config: &str) -> (tempfile::TempDir, Ctx, Env) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let plan = root.join("plans/r-ms-01-api");
        std::fs::create_dir_all(&plan).unwrap();
        std::fs::create_dir_all(root.join("src/api")).unwrap();
        std::fs::create_dir_all(root.join("session-lock")).unwrap();
        std::fs::write(root.join("session-lock/config.json"), config).unwrap();
        std::fs::write(plan.join("plan.md"), "---\nowns: [src/api/**]\n---\n").unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(
            bin.join(if cfg!(windows) { "guard.exe" } else { "guard" }),
            "",
        )
        .unwrap();
        let env = Env {
            binary_dir: Some(bin),
            ..Env::default()
        };
        let other = Payload {
            session_id: "other".into(),
            cwd: root.display().to_string(),
            ..Payload::default()
        };
        let config = Config::load(&root).unwrap();
        let first = Ctx::new(root.clone(), config.clone());
        crate::hook::checks::claims::claim(&first, &other, &env, &Word::plain("api")).unwrap();
        (dir, Ctx::new(root, config), env)
    }

    fn bash(ctx: &Ctx, command: &str) -> Payload {
        Payload {
            session_id: "me".into(),
            cwd: ctx.root.display().to_string(),
            tool_name: crate::words::Tool::Bash,
            permission_mode: PermissionMode::BypassPermissions,
            tool_input: serde_json::json!({"command": command, "description": "d", "timeout": 5000}),
            ..Payload::default()
        }
    }

    fn run(
        ctx: &Ctx,
        env: &Env,
        command: &str,
        found: Result<mechanism::Kind, String>,
    ) -> (Floored, Vec<Notice>) {
        let p = bash(ctx, command);
        let call = Call::new(ctx, &p, env).unwrap();
        let mut told = Vec::new();
        let f = decide(ctx, &call, &mut told, || found);
        (f, told)
    }

    #[test]
    fn an_allowed_command_goes_under_the_floor_with_its_other_fields_kept() {
        let (_d, ctx, env) = bed("{}");
        let (f, told) = run(&ctx, &env, "echo hi", Ok(mechanism::Kind::Bubblewrap));
        let Floored::Rewrite(input) = f else {
            panic!("not rewritten")
        };
        let cmd = input["command"].as_str().unwrap();
        assert!(
            cmd.contains(" floor --root ") && cmd.contains("-- 'echo hi'"),
            "{cmd}"
        );
        assert!(cmd.contains("stream:api="), "{cmd}");
        assert_eq!(
            (input["description"].as_str(), input["timeout"].as_u64()),
            (Some("d"), Some(5000))
        );
        assert!(told.is_empty());
        // The suite's own plain calls write session-lock/ and run outside it.
        let (f, _) = run(&ctx, &env, "claim web", Ok(mechanism::Kind::Bubblewrap));
        assert!(matches!(f, Floored::Unchanged));
        // Where the client asks permissions, only "required" floors (see the module doc).
        let mut p = bash(&ctx, "ls");
        p.permission_mode = PermissionMode::Default;
        let call = Call::new(&ctx, &p, &env).unwrap();
        let mut told = Vec::new();
        let f = decide(&ctx, &call, &mut told, || Ok(mechanism::Kind::Bubblewrap));
        assert!(matches!(f, Floored::Unchanged));
        assert_eq!(told[0].key, "floor:permission-mode");
        // On Landlock the session is told what it leaves to the analysis.
        let (f, told) = run(&ctx, &env, "ls", Ok(mechanism::Kind::Landlock));
        assert!(matches!(f, Floored::Rewrite(_)));
        assert_eq!(told[0].key, "floor:landlock");
    }

    /// `p` decided in `ctx` with bubblewrap found.
    fn floored(ctx: &Ctx, env: &Env, p: &Payload) -> (Floored, Vec<Notice>) {
        let call = Call::new(ctx, p, env).unwrap();
        let mut told = Vec::new();
        let f = decide(ctx, &call, &mut told, || Ok(mechanism::Kind::Bubblewrap));
        (f, told)
    }

    #[test]
    fn codex_goes_under_the_floor_only_where_it_asks_nothing() {
        let (_d, ctx, env) = bed("{}");
        let mut p = bash(&ctx, "ls");
        p.client = Client::Codex;
        p.tool_input = serde_json::json!({"command": "ls"});
        let (f, told) = floored(&ctx, &env, &p);
        let Floored::Rewrite(input) = f else {
            panic!("not rewritten")
        };
        assert!(
            input["command"]
                .as_str()
                .unwrap()
                .contains(" floor --root ")
        );
        assert!(told.is_empty());
        p.permission_mode = PermissionMode::Default;
        let (f, told) = floored(&ctx, &env, &p);
        assert!(matches!(f, Floored::Unchanged));
        assert_eq!(told[0].key, "floor:permission-mode");
        assert!(
            told[0].text.contains("only by approving it"),
            "{}",
            told[0].text
        );
        let (_d, ctx, env) = bed(r#"{"floor": "required"}"#);
        let (f, _) = floored(&ctx, &env, &p);
        let Floored::Deny(r) = f else {
            panic!("not denied")
        };
        assert!(
            r.reason
                .contains("--dangerously-bypass-approvals-and-sandbox"),
            "{}",
            r.reason
        );
    }

    #[cfg(unix)]
    #[test]
    fn gemini_goes_under_the_floor_in_yolo_as_its_command_line_says() {
        let (_d, ctx, mut env) = bed("{}");
        let mut p = bash(&ctx, "ls");
        p.client = Client::Gemini;
        p.permission_mode = PermissionMode::Default;
        p.tool_input = serde_json::json!({"command": "ls"});
        // No client found: its mode is unknown, so it asks.
        let (f, told) = floored(&ctx, &env, &p);
        assert!(matches!(f, Floored::Unchanged));
        assert_eq!(told[0].key, "floor:permission-mode");
        let mut yolo = std::process::Command::new("sh")
            .args([
                "-c",
                "echo ready; read line",
                "gemini.js",
                "-m",
                "m",
                "--yolo",
            ])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Its command line is the one asked for once it speaks.
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(yolo.stdout.take().unwrap()),
            &mut ready,
        )
        .unwrap();
        env.client_pid = Some(yolo.id());
        let (f, told) = floored(&ctx, &env, &p);
        drop(yolo.stdin.take());
        let _ = yolo.wait();
        let Floored::Rewrite(input) = f else {
            panic!("not rewritten")
        };
        assert_eq!(
            input.as_object().unwrap().len(),
            1,
            "only the command is merged: {input}"
        );
        let wrapped = input["command"].as_str().unwrap();
        assert!(
            !wrapped.contains("$(") && !wrapped.contains("<<<"),
            "{wrapped}"
        );
        assert!(told.is_empty());
        // A substitution Gemini refuses itself is left for it to refuse.
        p.tool_input = serde_json::json!({"command": "echo $(id) > x"});
        let (f, _) = floored(&ctx, &env, &p);
        assert!(matches!(f, Floored::Unchanged));
        p.tool_input = serde_json::json!({"command": "ls"});
        // Required floors Gemini's asking modes, its own policy then judging the rewrite.
        let (_d, ctx, env) = bed(r#"{"floor": "required"}"#);
        let (f, _) = floored(&ctx, &env, &p);
        assert!(matches!(f, Floored::Rewrite(_)));
    }

    #[test]
    fn without_a_mechanism_the_config_decides() {
        let (_d, ctx, env) = bed("{}");
        let (f, told) = run(&ctx, &env, "ls", Err("no bwrap".into()));
        assert!(matches!(f, Floored::Unchanged));
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].key, "floor:none");
        assert!(told[0].text.contains("no bwrap"), "{}", told[0].text);
        let (_d, ctx, env) = bed(r#"{"floor": "required"}"#);
        let (f, _) = run(&ctx, &env, "ls", Err("no bwrap".into()));
        let Floored::Deny(r) = f else {
            panic!("not denied")
        };
        assert_eq!(r.rule, Rule::Floor);
        assert!(
            r.reason.contains("requires the kernel write floor") && r.reason.contains("no bwrap"),
            "{}",
            r.reason
        );
        // Required floors where the client asks permissions too.
        let mut p = bash(&ctx, "ls");
        p.permission_mode = PermissionMode::Default;
        let call = Call::new(&ctx, &p, &env).unwrap();
        let f = decide(&ctx, &call, &mut Vec::new(), || {
            Ok(mechanism::Kind::Bubblewrap)
        });
        assert!(matches!(f, Floored::Rewrite(_)));
        let (_d, ctx, env) = bed(r#"{"floor": "off"}"#);
        let (f, told) = run(&ctx, &env, "ls", Ok(mechanism::Kind::Bubblewrap));
        assert!(matches!(f, Floored::Unchanged) && told.is_empty());
    }
}
