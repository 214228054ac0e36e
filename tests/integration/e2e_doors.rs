//! Issue 27 through the real client: while session A holds `api`, session B (a real Claude Code
//! session through the fake model) tries the doors out of the guard from its Bash tool. A
//! script that is a FIFO is blocked at once (it used to hold the guard to its deadline, which
//! allowed it); `guard uninstall` by several spellings and a nested client with its hooks off
//! are refused; the read commands beside them (`guard doctor`, `guard explain`, a regular
//! script) run.

use serde_json::json;

use crate::support::claude::require_claude;
use crate::support::e2e::{
    Bed, assert_blocked, assert_guard_output, assert_ran, bash, bash_call, explain, result_of,
};
use crate::support::fake_model::{FakeModel, Turn};

#[test]
fn issue_27_no_door_out_of_the_guard_from_a_sessions_bash() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    std::fs::create_dir_all(bed.repo.join("tools")).unwrap();
    std::fs::write(bed.repo.join("tools/ok.sh"), "echo regular-script-ran\n").unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(bed.repo.join("tools/clean.sh"))
        .status()
        .expect("mkfifo");
    assert!(made.success());
    let settings_before = bed.repo.read(".claude/settings.json");

    let hold = bed.gate("a-may-finish");
    let model_a = FakeModel::start(vec![
        bash("claim api"),
        bash(&hold.wait_command()),
        Turn::text("A is done"),
    ]);
    let session_a = bed.session(&model_a, "A").spawn();
    hold.wait_reached();

    let model_b = FakeModel::start(vec![
        bash_call("toolu_b_claim", "claim ui"),
        bash_call("toolu_b_fifo", "bash tools/clean.sh"),
        bash_call("toolu_b_script", "bash tools/ok.sh"),
        bash_call("toolu_b_uninstall", "guard uninstall"),
        bash_call("toolu_b_uninstall_sh", "sh -c 'env guard uninstall'"),
        bash_call(
            "toolu_b_launcher",
            "sh session-lock/guard-hook install --guard /bin/true",
        ),
        bash_call("toolu_b_bare", "claude --bare -p 'edit src/api/x.ts'"),
        bash_call("toolu_b_doctor", "guard doctor >/dev/null; echo doctor-ran"),
        bash_call("toolu_b_explain", "guard explain 'guard uninstall' || true"),
        Turn::text("B is done"),
    ]);
    let started = std::time::Instant::now();
    let b = bed.session(&model_b, "B").run();
    let took = started.elapsed();
    hold.open();
    let a = session_a.wait();
    a.assert_success();
    b.assert_success();
    assert_guard_output(&b);

    assert_ran(&b, &model_b, "toolu_b_claim");
    assert_blocked(&b, &model_b, "toolu_b_fifo", "is not a regular file");
    assert!(
        took < std::time::Duration::from_secs(60),
        "B took {took:?}: a call waited on the FIFO"
    );
    let ran = assert_ran(&b, &model_b, "toolu_b_script");
    assert!(
        ran.content.contains("regular-script-ran"),
        "{}",
        ran.content
    );
    // A command rule's block names the rule (no `session-lock:` prefix, unlike the checks').
    let refused = |id: &str, rule: &str| {
        let r = result_of(&b, &model_b, id);
        assert!(
            r.is_error && r.content.contains("hook error") && r.content.contains(rule),
            "{}",
            explain(&b, &model_b, &format!("expected {id} blocked by {rule}"))
        );
    };
    for id in [
        "toolu_b_uninstall",
        "toolu_b_uninstall_sh",
        "toolu_b_launcher",
    ] {
        refused(id, "hooks.self-disarm");
    }
    refused("toolu_b_bare", "hooks.start-unguarded");
    let doctor = assert_ran(&b, &model_b, "toolu_b_doctor");
    assert!(doctor.content.contains("doctor-ran"), "{}", doctor.content);
    let explained = assert_ran(&b, &model_b, "toolu_b_explain");
    assert!(
        explained.content.contains("hooks.self-disarm"),
        "{}",
        explained.content
    );
    // Nothing was unwired: the hooks every session runs are as install left them.
    assert_eq!(bed.repo.read(".claude/settings.json"), settings_before);
    assert!(bed.repo.join("session-lock/guard-hook").is_file());
}
