//! `guard explain`: how the guard reads a command (segments, peeled wrappers, heredocs, the
//! write targets and the lock each hits, the rules it hits) and the guard's own decision on it,
//! made by the same pipeline as the hook's ([`crate::hook::pre_tool_use`]) for a session that
//! holds no stream, without writing anything. Exits like the guard decides: 0 allow, 1 block
//! (as `git diff --exit-code` does, so scripts can test a command); `--json` prints the
//! decision value.

use crate::exit::{Code, fail};
use crate::hook::context::{Call, Command, Ctx, Env};
use crate::hook::{Decision, Payload, Verdict, targets};
use crate::rules::{CommandContext, Env as Where, Shell};
use crate::shell::{Analysis, Reach};
use crate::words::{HookEvent, Tool};
use std::fmt::Write;
use std::path::{Path, PathBuf};

pub struct Args<'a> {
    pub command: &'a str,
    pub cwd: Option<&'a Path>,
    pub powershell: bool,
    pub repo: Option<&'a Path>,
    pub json: bool,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let root = crate::tools::repo_root(a.repo)
        .or_else(|_| std::env::current_dir().map_err(anyhow::Error::from))?;
    let config =
        crate::config::Config::load(&root).map_err(|e| fail(Code::Usage, e.to_string()))?;
    let rules = config
        .compiled_rules()
        .map_err(|e| fail(Code::Usage, e.to_string()))?;
    let cwd: PathBuf = match a.cwd {
        Some(c) if c.is_absolute() => c.to_path_buf(),
        Some(c) => root.join(c),
        None => root.clone(),
    };
    let (shell, tool) = if a.powershell {
        (Shell::PowerShell, Tool::PowerShell)
    } else {
        (Shell::Bash, Tool::Bash)
    };
    let cwd = cwd.display().to_string();
    let here = CommandContext::new(cwd.clone(), root.display().to_string()).with_shell(shell);
    let analysis = crate::rules::explain(rules, a.command, &here);
    let payload = Payload {
        event: HookEvent::PreToolUse,
        cwd: cwd.clone(),
        tool_name: tool,
        tool_input: serde_json::json!({ "command": a.command }),
        ..Payload::default()
    };
    // The process's own folders are frozen as the hook's are; no client, so no registry entry.
    let env = Env {
        client_pid: None,
        project_dir: None,
        ..Env::from_process()
    };
    let mut ctx = Ctx::new(root.clone(), config);
    ctx.dry = true;
    let decision = crate::hook::pre_tool_use(&mut ctx, &payload, &env);
    if a.json {
        crate::cli::print_json(&decision)?;
    } else {
        print!("{analysis}");
        if let Ok(command) = Command::analyse(&ctx, &cwd, a.command, shell) {
            let call = Call {
                p: &payload,
                env: &env,
                command: None,
            };
            print!("{}", sources(&command.analysis));
            print!("{}", write_targets(&ctx, &call, &command.analysis));
        }
        println!("{}", verdict_line(&decision));
    }
    // 1 is "block" here (documented in --help), not an unexpected failure.
    Ok(if decision.is_block() {
        Code::Failure
    } else {
        Code::Success
    })
}

/// The decision's last line: `verdict: allow`, `verdict: block (<rule>): <reason>`.
fn verdict_line(d: &Decision) -> String {
    match &d.verdict {
        Verdict::Allow => "verdict: allow".to_string(),
        Verdict::Rewrite { input } => format!("verdict: allow, rewritten: {input}"),
        Verdict::Deny(r) => format!("verdict: block ({}): {}", r.rule, r.reason),
    }
}

/// The script files and package scripts the analysis read.
fn sources(an: &Analysis) -> String {
    let mut out = String::new();
    for s in an
        .sources
        .iter()
        .filter(|s| matches!(s.via.as_str(), "script file" | "package script"))
    {
        let _ = writeln!(
            out,
            "{} read ({} bytes): its commands are analysed like the command's own",
            s.via,
            s.text.len()
        );
    }
    out
}

/// Each write target of `an` as written, where it resolves and what the write checks say of it
/// against the repo's locks as they stand.
fn write_targets(ctx: &Ctx, call: &Call, an: &Analysis) -> String {
    let targets = crate::shell::writes::targets(an);
    let mut out = String::new();
    if targets.is_empty() {
        return out;
    }
    let cc = CommandContext::new(call.p.cwd.clone(), ctx.root.display().to_string());
    let cmd = Where::new(&cc);
    let live = ctx
        .locks
        .all()
        .iter()
        .filter(|h| h.is_live(ctx.now, ctx.stale_ms()))
        .count();
    let _ = writeln!(out, "write targets ({live} live lock(s)):");
    for t in &targets {
        let shown = format!("[{}] {} {}", t.segment, t.via, t.word.render());
        let resolved = targets::resolve(t, an, &cmd);
        if resolved.is_empty() {
            let _ = writeln!(
                out,
                "  {shown} → not known from the command text: not checked"
            );
        }
        for r in resolved {
            let what = match (r.glob, r.reach) {
                (true, _) => " (pattern)",
                (false, Reach::Tree) => " (and everything below it)",
                (false, Reach::File) => "",
            };
            let checked = targets::expand(ctx, call.p, &cmd, &r, &mut |t| {
                crate::hook::write_checks(ctx, call, t)
            });
            let verdict = match checked {
                Ok(()) => "allowed".to_string(),
                Err(refusal) => format!("block: {}", refusal.reason),
            };
            let _ = writeln!(out, "  {shown} → {}{what}: {verdict}", r.path);
        }
    }
    out
}
