//! Issue 11's trust boundary in a real round: while session A holds `api`, session B (a real
//! Claude Code session through the fake model) tries the doors that switched the protocol off:
//! the local settings, widening its own plan, and releasing A's stream with its environment
//! changed. Each stays shut; B's ordinary work still runs.

use serde_json::json;

use crate::support::claude::require_claude;
use crate::support::e2e::{
    API_X, Bed, assert_blocked, assert_guard_output, assert_ran, bash, bash_call, edit, explain,
    write,
};
use crate::support::fake_model::{FakeModel, Turn};

#[test]
fn issue_11_another_sessions_round_cannot_be_switched_off_from_a_session() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let hold = bed.gate("a-may-finish");
    let model_a = FakeModel::start(vec![
        bash("claim api"),
        bash(&hold.wait_command()),
        Turn::text("A is done"),
    ]);
    let session_a = bed.session(&model_a, "A").spawn();
    hold.wait_reached();
    let a_id = bed.lock("api").expect("A's lock")["sessionId"]
        .as_str()
        .expect("A's session id")
        .to_string();

    let local = bed.repo.join(".claude/settings.local.json");
    let ui_plan = bed.repo.join("plans/r-ms-01-ui/plan.md");
    let plan_before = bed.repo.read("plans/r-ms-01-ui/plan.md");
    let model_b = FakeModel::start(vec![
        bash_call("toolu_b_claim", "claim ui"),
        write("toolu_b_hooks_off", &local, "{\"disableAllHooks\": true}\n"),
        edit("toolu_b_widen", &ui_plan, "src/ui/**", "\"**\""),
        bash_call("toolu_b_reclaim", "claim ui"),
        edit(
            "toolu_b_edit_a",
            bed.repo.join("src/api/x.ts"),
            "x = 1",
            "x = 'B'",
        ),
        bash_call(
            "toolu_b_release_unset",
            "unset CLAUDE_CODE_SESSION_ID; R=release; $R api",
        ),
        bash_call(
            "toolu_b_release_as_a",
            &format!("CLAUDE_CODE_SESSION_ID={a_id} $(command -v release) api"),
        ),
        bash_call(
            "toolu_b_release_env_i",
            "env -i PATH=\"$PATH\" \"$(command -v release)\" api",
        ),
        Turn::text("B is done"),
    ]);
    let b = bed.session(&model_b, "B").run();
    hold.open();
    let a = session_a.wait();
    a.assert_success();
    b.assert_success();
    assert_guard_output(&b);

    assert_ran(&b, &model_b, "toolu_b_claim");
    assert_blocked(
        &b,
        &model_b,
        "toolu_b_hooks_off",
        ".claude/settings.local.json is part of the session-lock protocol",
    );
    // install writes the local settings (the MCP server's approval); B's write must not land.
    assert!(
        !std::fs::read_to_string(&local)
            .unwrap_or_default()
            .contains("disableAllHooks"),
        "the local settings were not written"
    );
    assert_blocked(&b, &model_b, "toolu_b_widen", "is a plan");
    assert_eq!(bed.repo.read("plans/r-ms-01-ui/plan.md"), plan_before);
    assert_ran(&b, &model_b, "toolu_b_reclaim");
    assert_eq!(
        bed.lock("ui").expect("B's lock")["owns"],
        json!(["src/ui/**"])
    );
    assert_blocked(
        &b,
        &model_b,
        "toolu_b_edit_a",
        "src/api/x.ts is owned by stream 'api'",
    );
    assert_eq!(bed.repo.read("src/api/x.ts").as_deref(), Some(API_X));
    for id in [
        "toolu_b_release_unset",
        "toolu_b_release_as_a",
        "toolu_b_release_env_i",
    ] {
        let r = model_b
            .tool_result(id)
            .unwrap_or_else(|| panic!("{}", explain(&b, &model_b, id)));
        assert!(
            // Refused by the release binary (the process tree), or already by the hook, which
            // resolves `$R` and `env -i` the way the shell does.
            (r.content.contains("process tree")
                && r.content.contains("cannot act for that stream"))
                || r.content.contains("belongs to another session"),
            "{}",
            explain(&b, &model_b, &format!("{id}: expected the release refused"))
        );
    }
    assert!(
        !bed.repo.join("session-lock/api.done").exists(),
        "A's stream was not released by B"
    );
}
