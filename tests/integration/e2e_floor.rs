//! The kernel write floor under the real client (see `support::e2e`): while another stream is
//! live, the guard answers a Bash call with `updatedInput` that runs it under the floor; the
//! client runs the rewritten command, a write the analysis cannot read fails with the floor's
//! note reaching the model, and ordinary work (own files, new files in shared folders, a `cd`
//! carried to the next call) goes on. The rewrite carries no permission decision, so the
//! client's own permission flow still decides in default mode.

use serde_json::json;

use crate::floor::bubblewrap_here;
use crate::support::claude::require_claude;
use crate::support::e2e::{
    API_X, Bed, assert_guard_output, assert_ran, bash_call, explain, pre_tool_response, result_of,
};
use crate::support::fake_model::{FakeModel, Turn};

/// A write whose target the analysis cannot know: the path is built at run time.
const TRICK: &str =
    "python3 -c \"import os; p=os.path.join('src','a'+'pi','x.ts'); open(p,'a').write('pwn')\"";

#[test]
fn the_client_runs_the_rewritten_command_and_the_forbidden_write_fails() {
    let claude = require_claude!();
    if !bubblewrap_here() {
        return;
    }
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    bed.claimed_by_finished_session("api");
    let model = FakeModel::start(vec![
        bash_call("toolu_trick", TRICK),
        bash_call(
            "toolu_work",
            "echo new > docs/new.md && mkdir -p src/lib && echo l > src/lib/n.ts && cat src/api/x.ts && cd src",
        ),
        bash_call("toolu_pwd", "pwd"),
        Turn::text("done"),
    ]);

    let run = bed.session(&model, "B").run();

    run.assert_success();
    assert_guard_output(&run);
    let response = pre_tool_response(&run, "Bash")
        .unwrap_or_else(|| panic!("{}", run.describe("no PreToolUse:Bash hook_response")));
    let doc: serde_json::Value =
        serde_json::from_str(response["stdout"].as_str().unwrap_or_default())
            .unwrap_or_else(|_| panic!("the guard answered nothing: {response}"));
    let hso = &doc["hookSpecificOutput"];
    assert!(
        hso.get("permissionDecision").is_none()
            && hso["updatedInput"]["command"]
                .as_str()
                .is_some_and(|c| c.contains(" floor --root ")),
        "the guard rewrote the call into the floor: {doc}"
    );
    let r = result_of(&run, &model, "toolu_trick");
    assert!(
        r.is_error
            && r.content.contains("Read-only file system")
            && r.content.contains("src/api (owned by stream 'api')"),
        "{}",
        explain(
            &run,
            &model,
            "the write failed, and the model was told whose file it is"
        )
    );
    assert_eq!(
        bed.repo.read("src/api/x.ts").as_deref(),
        Some(API_X),
        "the other stream's file is untouched"
    );
    let r = assert_ran(&run, &model, "toolu_work");
    assert!(r.content.contains("export const x = 1;"), "{}", r.content);
    assert_eq!(bed.repo.read("docs/new.md").as_deref(), Some("new\n"));
    assert_eq!(bed.repo.read("src/lib/n.ts").as_deref(), Some("l\n"));
    let r = assert_ran(&run, &model, "toolu_pwd");
    assert!(
        r.content.trim_end().ends_with("/src"),
        "the cd carried over to the next call: {}",
        r.content
    );
}

/// Why "auto" floors only in `bypassPermissions`: the client matches its permission rules
/// against the rewritten command. In default mode with `Bash(echo:*)` allowed, a plain `echo`
/// runs (not rewritten, the session told once why); with floor "required" the same `echo` is
/// rewritten, and the client refuses the wrapper it cannot check. The rewrite never approves a
/// command by itself.
#[test]
fn where_the_client_asks_permissions_its_rules_still_decide() {
    let claude = require_claude!();
    if !bubblewrap_here() {
        return;
    }
    for (floor, runs) in [("auto", true), ("required", false)] {
        let bed = Bed::new(
            claude.clone(),
            json!({"releaseChecks": ["true"], "floor": floor}),
        );
        bed.claimed_by_finished_session("api");
        let model = FakeModel::start(vec![
            bash_call("toolu_echo", "echo allowed-by-rule"),
            Turn::text("done"),
        ]);
        let run = bed
            .session(&model, "B")
            .permission_mode(Some("default"))
            .args(["--allowedTools", "Bash(echo:*)"])
            .run();
        run.assert_success();
        assert_guard_output(&run);
        let stdout = pre_tool_response(&run, "Bash")
            .and_then(|r| r["stdout"].as_str())
            .unwrap_or_default()
            .to_string();
        let r = result_of(&run, &model, "toolu_echo");
        if runs {
            assert!(
                !r.is_error && r.content.contains("allowed-by-rule"),
                "{}",
                explain(
                    &run,
                    &model,
                    "auto: the rule still allows the plain command"
                )
            );
            assert!(
                !stdout.contains("updatedInput")
                    && stdout
                        .contains("without the kernel write floor in permission mode 'default'"),
                "not rewritten, and said why: {stdout}"
            );
        } else {
            assert!(
                stdout.contains("updatedInput") && !stdout.contains("permissionDecision"),
                "required: rewritten, no decision: {stdout}"
            );
            assert!(
                r.is_error && r.content.contains("can't be checked before it runs"),
                "{}",
                explain(
                    &run,
                    &model,
                    "required: the client's own check refuses the wrapper"
                )
            );
        }
    }
}
