//! The guard's contract with the real client, end to end (see `support::e2e`): a
//! crashing guard fails open and says why, the exit-2 decision form blocks, a
//! path is judged from the directory a Bash `cd` moved to, and a session
//! started below the repo root is guarded by the user-scope entry (without it, it runs no hook
//! at all, and `claim` says so).

use serde_json::json;

use crate::support::claude::require_claude;
use crate::support::e2e::{
    API_X, Bed, CRASH_SWITCH, assert_blocked, assert_guard_output, assert_ran, bash, bash_call,
    edit, explain, hook_responses, pre_tool_response, read, result_of, write,
};
use crate::support::fake_model::{FakeModel, Turn};

#[test]
fn a_crashing_guard_fails_open_with_its_note_in_the_hook_response() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    bed.claimed_by_finished_session("api");
    let x = bed.repo.join("src/api/x.ts");
    let model = FakeModel::start(vec![
        read("toolu_read", &x),
        edit("toolu_edit", &x, "x = 1", "x = 'crash let it through'"),
        Turn::text("edited"),
    ]);

    let run = bed.session(&model, "B").env(CRASH_SWITCH, "1").run();

    run.assert_success();
    assert_guard_output(&run);
    assert_ran(&run, &model, "toolu_edit");
    assert_eq!(
        bed.repo.read("src/api/x.ts").as_deref(),
        Some("export const x = 'crash let it through';\n"),
        "the edit of another stream's file went through: the guard fails open"
    );
    let response = pre_tool_response(&run, "Edit")
        .unwrap_or_else(|| panic!("{}", run.describe("no PreToolUse:Edit hook_response")));
    assert_eq!(response["exit_code"], 0, "{response}");
    assert_eq!(response["stdout"], "", "{response}");
    assert_eq!(
        response["stderr"].as_str().map(str::trim),
        Some("guard: internal error (crash requested by SESSION_LOCK_GUARD_CRASH); allowing"),
        "{response}"
    );
}

#[test]
fn exit2_decision_form_blocks_and_the_model_sees_the_reason() {
    let claude = require_claude!();
    let bed = Bed::new(
        claude,
        json!({"releaseChecks": ["true"], "decision": "exit2"}),
    );
    bed.claimed_by_finished_session("api");
    let x = bed.repo.join("src/api/x.ts");
    let model = FakeModel::start(vec![
        read("toolu_read", &x),
        edit("toolu_edit", &x, "x = 1", "x = 'from B'"),
        Turn::text("blocked"),
    ]);

    let run = bed.session(&model, "B").run();

    run.assert_success();
    assert_guard_output(&run);
    let r = assert_blocked(
        &run,
        &model,
        "toolu_edit",
        "session-lock: src/api/x.ts is owned by stream 'api'",
    );
    assert!(
        r.content.starts_with("PreToolUse:Edit hook error: [")
            && r.content.contains("session-lock/guard-hook"),
        "the exit-2 form shows the model the hook's command line too: {}",
        r.content
    );
    assert_eq!(bed.repo.read("src/api/x.ts").as_deref(), Some(API_X));
    let response = pre_tool_response(&run, "Edit").expect("a PreToolUse:Edit hook_response");
    assert_eq!(response["exit_code"], 2, "{response}");
    assert!(
        response["stderr"]
            .as_str()
            .is_some_and(|s| s.contains("src/api/x.ts is owned by stream 'api'")),
        "{response}"
    );
}

#[test]
fn writes_are_checked_from_the_directory_a_bash_cd_moved_to() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    bed.claimed_by_finished_session("api");
    let model = FakeModel::start(vec![
        bash("cd src"),
        write("toolu_rel_owned", "api/z.ts", "z\n"),
        write("toolu_abs_owned", bed.repo.join("src/api/w.ts"), "w\n"),
        write("toolu_rel_free", "ui/new.ts", "free\n"),
        write("toolu_rel_up", "../docs/new.md", "up\n"),
        Turn::text("done"),
    ]);

    let run = bed.session(&model, "B").run();

    run.assert_success();
    assert_guard_output(&run);
    // Relative to the repo root, `api/z.ts` is owned by nobody: it is blocked
    // only because the guard resolves it from the payload's cwd, `src/`.
    assert_blocked(
        &run,
        &model,
        "toolu_rel_owned",
        "src/api/z.ts is owned by stream 'api'",
    );
    assert_blocked(
        &run,
        &model,
        "toolu_abs_owned",
        "src/api/w.ts is owned by stream 'api'",
    );
    for blocked in ["src/api/z.ts", "api/z.ts", "src/api/w.ts"] {
        assert!(!bed.repo.exists(blocked), "{blocked} was not written");
    }
    assert_ran(&run, &model, "toolu_rel_free");
    assert_ran(&run, &model, "toolu_rel_up");
    assert_eq!(bed.repo.read("src/ui/new.ts").as_deref(), Some("free\n"));
    assert_eq!(bed.repo.read("docs/new.md").as_deref(), Some("up\n"));
}

/// Why install writes the launcher and not a bare program name: a hook whose program the shell
/// cannot find exits 127, which the client treats as a failed hook and runs the tool anyway.
/// The launcher turns a machine without the suite into a block that says what is missing.
#[test]
fn without_a_guard_on_the_machine_the_launcher_blocks_where_a_missing_program_would_not() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let no_suite = "/usr/local/bin:/usr/bin:/bin";
    let model = FakeModel::start(vec![
        write("toolu_w", bed.repo.join("docs/a.md"), "a\n"),
        Turn::text("done"),
    ]);
    let run = bed
        .session(&model, "A")
        .env("PATH", no_suite)
        .env_remove("SESSION_LOCK_GUARD")
        .run();
    run.assert_success();
    // UserPromptSubmit exit 2 stops the prompt itself: the session does nothing, and the
    // person sees why.
    let told = run
        .events_of("system", Some("informational"))
        .iter()
        .any(|e| {
            e["content"].as_str().is_some_and(|c| {
                c.starts_with("UserPromptSubmit operation blocked by hook")
                    && c.contains("need the session-lock guard, and none was found")
            })
        });
    assert!(
        told,
        "{}",
        run.describe("the launcher blocks the prompt when no guard is installed")
    );
    assert!(
        bed.repo.read("docs/a.md").is_none(),
        "the write did not run"
    );

    // The same session with a hook command that is not found: the write runs unguarded.
    let settings = bed.repo.join(".claude/settings.json");
    let text = std::fs::read_to_string(&settings).unwrap();
    std::fs::write(
        &settings,
        text.replace(
            r#"sh \"$CLAUDE_PROJECT_DIR/session-lock/guard-hook\""#,
            "session-lock-guard-not-installed",
        ),
    )
    .unwrap();
    let model = FakeModel::start(vec![
        write("toolu_w2", bed.repo.join("docs/b.md"), "b\n"),
        Turn::text("done"),
    ]);
    let run = bed.session(&model, "B").env("PATH", no_suite).run();
    run.assert_success();
    assert_ran(&run, &model, "toolu_w2");
    assert_eq!(bed.repo.read("docs/b.md").as_deref(), Some("b\n"));
}

/// Issue 27, item 1: the client reads a repo's settings only in the folder a session starts in,
/// so a session started in `src/` meets only the user-scope entry `guard install` wrote. It is
/// guarded like one at the root: its claim is recorded, another stream's file is refused, its
/// own file is written.
#[test]
fn issue_27_a_session_started_below_the_repo_root_is_guarded_by_the_user_scope_entry() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let user = std::fs::read_to_string(bed.user_settings()).expect("install wrote user settings");
    assert!(user.contains("--user-scope"), "{user}");
    bed.claimed_by_finished_session("api");
    let model = FakeModel::start(vec![
        bash_call("toolu_claim", "claim ui"),
        edit(
            "toolu_edit_api",
            bed.repo.join("src/api/x.ts"),
            "x = 1",
            "x = 'S'",
        ),
        edit(
            "toolu_edit_ui",
            bed.repo.join("src/ui/y.ts"),
            "y = 1",
            "y = 2",
        ),
        Turn::text("done"),
    ]);

    let run = bed.session_in(&bed.repo.join("src"), &model, "S").run();

    run.assert_success();
    assert_guard_output(&run);
    assert_ran(&run, &model, "toolu_claim");
    assert!(bed.lock("ui").is_some(), "the claim was recorded");
    assert_blocked(
        &run,
        &model,
        "toolu_edit_api",
        "src/api/x.ts is owned by stream 'api'",
    );
    assert_eq!(bed.repo.read("src/api/x.ts").as_deref(), Some(API_X));
    assert_ran(&run, &model, "toolu_edit_ui");
    assert_eq!(
        bed.repo.read("src/ui/y.ts").as_deref(),
        Some("export const y = 2;\n")
    );
}

/// Without the user-scope entry a session started below the root runs no hook at all, and
/// `claim` says so.
#[test]
fn a_session_started_below_the_repo_root_without_the_user_entry_has_no_hooks_and_claim_says_so() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    std::fs::remove_file(bed.user_settings()).expect("install wrote user settings");
    let model = FakeModel::start(vec![
        bash_call("toolu_claim", "claim api"),
        Turn::text("done"),
    ]);

    let run = bed.session_in(&bed.repo.join("src"), &model, "S").run();

    // The client reads .claude/settings.json from the folder it starts in.
    run.assert_success();
    assert_eq!(
        hook_responses(&run).len(),
        0,
        "{}",
        run.describe("no hook runs for a session started in src/")
    );
    let r = result_of(&run, &model, "toolu_claim");
    assert!(
        r.is_error
            && r.content.starts_with("Exit code 6\n")
            && r.content
                .contains("the guard hook did not record the claim")
            && r.content.contains("started at the repo root"),
        "{}",
        explain(
            &run,
            &model,
            "claim tells the session its hook is not running"
        )
    );
    assert!(bed.lock("api").is_none(), "no lock was written");
}
