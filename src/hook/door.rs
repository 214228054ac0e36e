//! The hook's door: `guard` with no command. It reads the payload on stdin, runs the pipeline
//! ([`crate::hook::decide`]), renders the decision once for the client, writes it, and appends
//! every deny and fail-open to the block log from the decision value. A run past its deadline
//! allows ([`super::deadline`]); a panic allows too.

use super::context::Env;
use super::deadline::{self, PAYLOAD};
use super::output::{Outcome, render};
use super::{Decision, decide};
use crate::config::DecisionForm;
use std::io::{IsTerminal, Read, Write};

/// The user-scope entry (`guard --user-scope`, see [`super::USER_SCOPE`]): the hook for a
/// session the repo's own entry does not reach (one started below a wired repo's top level),
/// and a no-op everywhere else, decided from the environment before the payload is parsed.
pub fn run_user_scope(usage: impl FnOnce() -> String) -> std::process::ExitCode {
    let project = std::env::var_os("CLAUDE_PROJECT_DIR").filter(|d| !d.is_empty());
    if project.is_none_or(|d| super::user_entry_idle(std::path::Path::new(&d))) {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        return std::process::ExitCode::SUCCESS;
    }
    run(usage)
}

/// Runs the hook on stdin and returns the process exit code (0, or 2 in the exit-2 form).
/// With stdin a terminal (a person typed `guard`), prints `usage()` and returns 2 at once.
pub fn run(usage: impl FnOnce() -> String) -> std::process::ExitCode {
    if std::io::stdin().is_terminal() {
        let usage = usage();
        let _ = writeln!(
            std::io::stderr(),
            "guard: reads a Claude Code, Codex CLI or Gemini CLI hook payload on stdin (it is wired by `guard install`); stdin is a terminal, so there is nothing to read\n\n{usage}"
        );
        return std::process::ExitCode::from(2);
    }
    deadline::arm(|| answer(&Decision::fail_open(deadline::note()), DecisionForm::Json));
    let mut bytes = Vec::new();
    let limit = (super::MAX_PAYLOAD + 1) as u64;
    let read = std::io::stdin().take(limit).read_to_end(&mut bytes);
    // Drain the rest of an oversized payload, so the client never meets a closed pipe.
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    let (decision, form) = match read {
        Err(e) => (
            Decision::fail_open(format!("cannot read stdin: {e}")),
            DecisionForm::Json,
        ),
        Ok(_) => {
            let bytes = PAYLOAD.get_or_init(|| bytes);
            let result = std::panic::catch_unwind(|| decide(bytes, &Env::from_process()));
            result.unwrap_or_else(|panic| {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                (
                    Decision::fail_open(format!("internal error ({what}); allowing")),
                    DecisionForm::Json,
                )
            })
        }
    };
    std::process::ExitCode::from(answer(&decision, form) as u8)
}

/// The guard re-executed by its deadline ([`deadline::AFTER_DEADLINE`]), with the payload of
/// the run that passed it on stdin: allows with the deadline's note and logs the fail-open.
pub fn after_deadline() -> std::process::ExitCode {
    if std::io::stdin().is_terminal() {
        let _ = writeln!(
            std::io::stderr(),
            "guard: {} is the guard re-executing itself after its deadline, with the payload on stdin; stdin is a terminal, so there is nothing to read",
            deadline::AFTER_DEADLINE
        );
        return std::process::ExitCode::from(2);
    }
    let mut bytes = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut bytes);
    let _ = PAYLOAD.set(bytes);
    let code = answer(&Decision::fail_open(deadline::note()), DecisionForm::Json);
    std::process::ExitCode::from(code as u8)
}

/// Renders `decision` for the client, writes it, logs it; the process's exit code.
fn answer(decision: &Decision, form: DecisionForm) -> i32 {
    let code = emit(&render(decision, decision.client, form));
    record(decision);
    code
}

/// The block log line for a deny or a fail-open; nothing for a plain allow. A line that cannot
/// be written is said on stderr (the client's log), after the decision.
fn record(decision: &Decision) {
    let payload = PAYLOAD.get().map(Vec::as_slice).unwrap_or_default();
    if let Ok(Err(e)) = std::panic::catch_unwind(|| super::blocklog::record(payload, decision)) {
        let _ = writeln!(std::io::stderr(), "guard: the block log: {e}");
    }
}

/// Writes an outcome (a path-boundary run's too) and returns its exit code.
pub fn emit(out: &Outcome) -> i32 {
    if !out.stdout.is_empty() {
        let mut so = std::io::stdout().lock();
        let _ = so.write_all(out.stdout.as_bytes());
        let _ = so.flush();
    }
    if !out.stderr.is_empty() {
        let _ = std::io::stderr().write_all(out.stderr.as_bytes());
    }
    if out.code == 2 { 2 } else { 0 }
}
