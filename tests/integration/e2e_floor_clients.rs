//! The kernel write floor under a real Codex CLI session and a real Gemini CLI session (see
//! `support::e2e`), each in the mode where its client asks nothing: while another stream is
//! live, the guard rewrites the shell call in the form that client honours (Codex:
//! `permissionDecision: "allow"` with `updatedInput`; Gemini: `hookSpecificOutput.tool_input`
//! merged over the call), the client runs the rewritten command, a write the analysis cannot
//! read fails with the floor's note reaching the model, and ordinary work goes on. A command
//! Gemini refuses by itself (a command substitution) is left for Gemini to refuse.

use serde_json::json;

use crate::floor::bubblewrap_here;
use crate::support::claude::{Claude, Cli, Finished, require_claude};
use crate::support::codex::require_codex;
use crate::support::e2e::{API_X, Bed, assert_ran, call, explain, result_of};
use crate::support::fake_model::{FakeModel, Turn, Wire};
use crate::support::gemini::require_gemini;

/// A write whose target the analysis cannot know: the path is built at run time.
const TRICK: &str =
    "python3 -c \"import os; p=os.path.join('src','a'+'pi','x.ts'); open(p,'a').write('pwn')\"";

/// Ordinary work beside it: a new file in a shared folder, a read of the other stream's file.
const WORK: &str = "echo new > docs/new.md && cat src/api/x.ts";

/// The trick failed on the floor, whose note names the owner; the work ran; the files say so.
#[track_caller]
fn assert_floored(bed: &Bed, run: &Finished, model: &FakeModel) {
    run.assert_success();
    let r = result_of(run, model, "trick");
    assert!(
        r.content.contains("Read-only file system")
            && r.content.contains("src/api (owned by stream 'api')"),
        "{}",
        explain(
            run,
            model,
            "the write failed, and the model was told whose file it is"
        )
    );
    assert_eq!(
        bed.repo.read("src/api/x.ts").as_deref(),
        Some(API_X),
        "the other stream's file is untouched"
    );
    let r = assert_ran(run, model, "work");
    assert!(r.content.contains("export const x = 1;"), "{}", r.content);
    assert_eq!(bed.repo.read("docs/new.md").as_deref(), Some("new\n"));
}

/// A bed wired for `client` with `api` claimed by a Claude Code session that has finished
/// (its lock stays live for the round).
fn bed_for(claude: Claude, client: &str) -> Bed {
    let bed = Bed::wired_for(claude, json!({"releaseChecks": ["true"]}), &[client]);
    bed.claimed_by_finished_session("api");
    bed
}

fn run_with(bed: &Bed, cli: &Cli, model: &FakeModel) -> Finished {
    bed.cli_session(cli, model, "B")
        .timeout(std::time::Duration::from_secs(180))
        .spawn()
        .wait()
}

#[test]
fn a_codex_shell_call_runs_under_the_floor() {
    let claude = require_claude!();
    let codex = require_codex!();
    if !bubblewrap_here() {
        return;
    }
    let bed = bed_for(claude, "codex");
    let exec = |id: &str, cmd: &str| call(id, "exec_command", json!({"cmd": cmd}));
    let model = FakeModel::start_as(
        Wire::Responses,
        vec![exec("trick", TRICK), exec("work", WORK), Turn::text("done")],
    );
    let run = run_with(&bed, &codex, &model);
    assert_floored(&bed, &run, &model);
}

#[test]
fn a_gemini_shell_call_runs_under_the_floor() {
    let claude = require_claude!();
    let gemini = require_gemini!();
    if !bubblewrap_here() {
        return;
    }
    let bed = bed_for(claude, "gemini");
    let shell = |id: &str, command: &str| {
        call(
            id,
            "run_shell_command",
            json!({"command": command, "description": "run it"}),
        )
    };
    let model = FakeModel::start_as(
        Wire::Gemini,
        vec![
            shell("trick", TRICK),
            shell("work", WORK),
            shell("subst", "echo $(echo hi) > docs/s.md"),
            Turn::text("done"),
        ],
    );
    let run = run_with(&bed, &gemini, &model);
    assert_floored(&bed, &run, &model);
    // Gemini refuses a command substitution itself: the guard leaves that command as it is
    // rather than quote it inside the wrapper, where Gemini's check would not see it.
    let r = result_of(&run, &model, "subst");
    assert!(
        r.content.contains("Command injection detected") && !bed.repo.exists("docs/s.md"),
        "{}",
        explain(&run, &model, "Gemini refused the substitution itself")
    );
}
