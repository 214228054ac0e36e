//! One round end to end through the real binaries: two sessions claim, edit inside and outside
//! their streams, go stale, release through the gate; the guard follows every step.

use crate::support::lifecycle::{Repo, Verdict, sid, verdict};
use serde_json::json;

fn blocked(out: &std::process::Output) -> String {
    match verdict(out) {
        Ok(Verdict::Block(reason)) => reason,
        other => panic!("expected a block, got {other:?}"),
    }
}

fn allowed(out: &std::process::Output) {
    assert_eq!(verdict(out), Ok(Verdict::Allow));
}

#[test]
fn a_round_from_claim_to_release() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**", "!src/api/legacy.ts"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.config(&json!({"releaseChecks": ["true"]}));

    // alice claims api; bob cannot take it, takes ui instead.
    repo.claim("alice", "api");
    let reason = blocked(&repo.bash("bob", "claim api"));
    assert!(reason.contains("session alice000"), "{reason}");
    repo.claim("bob", "ui");

    // The claim tool, run by each session, confirms it.
    let (code, out, _) = repo.run({
        let mut c = repo.tool_as("claim", "alice");
        c.args(["api", "--quiet"]);
        c
    });
    assert_eq!(code, 0);
    assert!(
        out.contains("src/api/**") && out.contains("ui — session bob00000"),
        "{out}"
    );

    // Own, other's, excluded, unowned and outside paths.
    allowed(&repo.edit("alice", "src/api/x.ts"));
    let reason = blocked(&repo.edit("alice", "src/ui/view.ts"));
    assert!(reason.contains("owned by stream 'ui'"), "{reason}");
    let reason = blocked(&repo.edit("bob", "src/api/x.ts"));
    assert!(reason.contains("owned by stream 'api'"), "{reason}");
    allowed(&repo.edit("bob", "src/api/legacy.ts"));
    allowed(&repo.edit("bob", "docs/notes.md"));
    let outside = repo.base.join("elsewhere/x.ts");
    allowed(&repo.guard(&repo.payload(
        "bob",
        "Write",
        json!({"file_path": outside.to_string_lossy(), "content": "x"}),
    )));

    // The protocol's own files are frozen while locks are live.
    let reason = blocked(&repo.edit("alice", "session-lock/ui.done"));
    assert!(
        reason.contains("part of the session-lock protocol"),
        "{reason}"
    );
    let reason = blocked(&repo.bash("alice", "release ui"));
    assert!(reason.contains("belongs to another session"), "{reason}");

    // bob goes quiet past the staleness limit: his files are free, his stream can be taken.
    repo.age_lock("ui", 31 * 60_000);
    allowed(&repo.edit("alice", "src/ui/view.ts"));
    repo.claim("carol", "ui");
    let reason = blocked(&repo.edit("bob", "src/ui/view.ts"));
    assert!(reason.contains("session carol000"), "{reason}");

    // alice finishes: commits her files, releases through the gate.
    repo.write("src/api/x.ts", "export const x = 1;\n");
    let (code, _, err) = repo.run({
        let mut c = repo.tool_as("release", "alice");
        c.arg("api");
        c
    });
    assert_eq!(code, 3, "uncommitted work must stop the gate: {err}");
    assert!(err.contains("?? src/api/x.ts"), "{err}");
    repo.commit(&["src/api/x.ts"], "api work");
    let (code, out, err) = repo.run({
        let mut c = repo.tool_as("release", "alice");
        c.arg("api");
        c
    });
    assert_eq!(code, 0, "{out}{err}");
    assert!(repo.exists("session-lock/api.done"));
    let done: serde_json::Value =
        serde_json::from_str(&repo.read("session-lock/api.done").unwrap()).unwrap();
    assert_eq!(done["sessionId"], sid("alice"));

    // A released stream protects nothing; the milestone waits for ui.
    allowed(&repo.edit("bob", "src/api/x.ts"));
    assert!(!repo.exists("session-lock/milestones/ms-01.done"));
    repo.write("src/ui/view.ts", "ui\n");
    repo.commit(&["src/ui/view.ts"], "ui work");
    let (code, _, err) = repo.run({
        let mut c = repo.tool_as("release", "carol");
        c.arg("ui");
        c
    });
    assert_eq!(code, 0, "{err}");
    assert!(repo.exists("session-lock/milestones/ms-01.done"));

    // With no live lock left, the protocol files are editable again.
    allowed(&repo.edit("alice", "session-lock/config.json"));
}

#[test]
fn a_guard_kept_at_the_repo_root_freezes_only_the_protocol_files() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 60_000);
    let guard = repo.path("guard");
    // A hard link keeps no write handle open (a copy's can leak into a child another test
    // forks, and exec then fails with "text file busy"); copy only across file systems.
    if std::fs::hard_link(crate::support::lifecycle::bin("guard"), &guard).is_err() {
        std::fs::copy(crate::support::lifecycle::bin("guard"), &guard).expect("copy guard");
    }
    let run = |rel: &str| {
        let mut cmd = std::process::Command::new(&guard);
        cmd.env_remove("CLAUDE_PROJECT_DIR")
            .env("SESSION_LOCK_HOME", &repo.home)
            .current_dir(&repo.root);
        let payload = repo.payload(
            "alice",
            "Write",
            json!({"file_path": repo.path(rel).to_string_lossy(), "content": "x"}),
        );
        crate::support::lifecycle::run_with_stdin(cmd, payload.to_string().as_bytes())
    };
    allowed(&run("docs/notes.md"));
    let reason = blocked(&run("src/api/x.ts"));
    assert!(reason.contains("owned by stream 'api'"), "{reason}");
    let reason = blocked(&run("session-lock/api.done"));
    assert!(
        reason.contains("part of the session-lock protocol"),
        "{reason}"
    );
}
