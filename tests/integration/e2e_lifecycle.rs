//! The stream lifecycle end to end, where users run it: real Claude Code
//! sessions in a repo wired by `guard install` (see `support::e2e`). Claims (one
//! at a time and two at once), ownership and protocol-file blocks, heartbeats
//! (resumed sessions and `wait-milestone` too) and staleness, the release gate
//! and the end-of-round barrier `status --wait`.

use std::time::Duration;

use serde_json::{Value, json};
use session_lock::time;

use crate::support::claude::{new_uuid, require_claude};
use crate::support::e2e::{
    API_X, Background, Bed, Gate, MINUTE_MS, WAIT, assert_blocked, assert_guard_output, assert_ran,
    bash, bash_call, edit, explain, output_text, processes_with, read, result_of, wait_until,
    write,
};
use crate::support::fake_model::{FakeModel, Turn};

#[test]
fn claim_records_the_real_session_id_and_a_second_claim_is_blocked() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let hold = bed.gate("a-may-finish");
    let model_a = FakeModel::start(vec![
        bash_call("toolu_a_claim", "claim api"),
        bash(&hold.wait_command()),
        Turn::text("A is done"),
    ]);
    let session_a = bed.session(&model_a, "A").spawn();
    hold.wait_reached();
    let registered = bed.registry();

    let model_b = FakeModel::start(vec![
        bash_call("toolu_b_claim", "claim api"),
        bash_call("toolu_b_release", "release api"),
        Turn::text("B gives up"),
    ]);
    let b = bed.session(&model_b, "B").run();
    hold.open();
    let a = session_a.wait();

    a.assert_success();
    b.assert_success();
    assert_guard_output(&a);
    assert_guard_output(&b);
    let a_id = a.session_id().expect("A's session id");
    let lock = bed.lock("api").expect("session-lock/api.lock exists");
    assert_eq!(
        lock["sessionId"], a_id,
        "the lock names A's real session id"
    );
    assert_eq!(
        lock["clientPid"], a.pid,
        "the lock names A's client process"
    );
    assert_eq!(lock["owns"], json!(["src/api/**"]));
    assert_eq!(lock["plan"], "plans/r-ms-01-api/plan.md");

    let claimed = assert_ran(&a, &model_a, "toolu_a_claim");
    for needle in [
        "Rules that bind this session",
        "The full protocol: session-lock/PROTOCOL.md",
        &format!(
            "Stream 'api' (milestone 01, round 0) is held by this session {}",
            &a_id[..8]
        ),
        "You own (edit only these):\n  src/api/**\n",
    ] {
        assert!(
            claimed.content.contains(needle),
            "{}",
            explain(&a, &model_a, &format!("claim's output lacks {needle:?}"))
        );
    }

    let refused = assert_blocked(
        &b,
        &model_b,
        "toolu_b_claim",
        &format!(
            "stream 'api' is held by another session (session {}",
            &a_id[..8]
        ),
    );
    assert!(
        refused
            .content
            .starts_with("PreToolUse:Bash hook error: session-lock: "),
        "the JSON decision shows only the reason: {}",
        refused.content
    );
    assert!(
        !refused.content.contains("client process is gone"),
        "A was alive when B tried: {}",
        refused.content
    );
    assert_blocked(
        &b,
        &model_b,
        "toolu_b_release",
        "stream 'api' belongs to another session",
    );
    assert_eq!(
        bed.lock("api").map(|l| l["sessionId"].clone()),
        Some(json!(a_id)),
        "B's attempts left A's lock alone"
    );
    assert!(!bed.repo.exists("session-lock/api.done"));

    // The guard's own registry of live sessions: A was in it while it ran.
    let entry = registered
        .iter()
        .find(|e| e["sessionId"] == a_id)
        .unwrap_or_else(|| panic!("A in the registry while it ran: {registered:?}"));
    assert_eq!(entry["pid"], a.pid, "{entry}");
    assert_eq!(entry["cwd"], bed.repo.path().to_string_lossy().as_ref());
    assert_eq!(
        bed.registry(),
        Vec::<Value>::new(),
        "SessionEnd removed A and B"
    );
}

#[test]
fn two_sessions_claiming_one_stream_at_once_get_one_lock() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let (go_a, go_b) = (bed.gate("a-claims-now"), bed.gate("b-claims-now"));
    let script = |go: &Gate| {
        FakeModel::start(vec![
            bash(&go.wait_command()),
            bash_call("toolu_claim", "claim api"),
            Turn::text("done"),
        ])
    };
    let (model_a, model_b) = (script(&go_a), script(&go_b));
    let session_a = bed.session(&model_a, "A").spawn();
    let session_b = bed.session(&model_b, "B").spawn();
    // Both stand at their gates; opened together, both claim at once.
    go_a.wait_reached();
    go_b.wait_reached();
    go_a.open();
    go_b.open();
    let (a, b) = (session_a.wait(), session_b.wait());

    a.assert_success();
    b.assert_success();
    assert_guard_output(&a);
    assert_guard_output(&b);
    let holder = bed.lock("api").expect("a lock")["sessionId"].clone();
    let (winner, loser) = if holder == a.session_id().unwrap_or("?") {
        ((&a, &model_a), (&b, &model_b))
    } else {
        ((&b, &model_b), (&a, &model_a))
    };
    let winner_id = winner.0.session_id().expect("the winner's id");
    assert_eq!(holder, winner_id, "the lock names one of the two sessions");
    let won = assert_ran(winner.0, winner.1, "toolu_claim");
    assert!(
        won.content
            .contains(&format!("is held by this session {}", &winner_id[..8])),
        "{}",
        explain(winner.0, winner.1, "the winner's claim")
    );
    // The hooks take the state folder's lock in turn: the second one finds
    // the first one's claim.
    assert_blocked(
        loser.0,
        loser.1,
        "toolu_claim",
        &format!(
            "stream 'api' is held by another session (session {}",
            &winner_id[..8]
        ),
    );
}

#[test]
fn writes_to_files_another_stream_owns_are_blocked_and_others_go_through() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let x = bed.repo.join("src/api/x.ts");
    let notes = bed.repo.join("docs/notes.md");
    let config = bed.repo.join("session-lock/config.json");
    let settings = bed.repo.join(".claude/settings.json");
    let (config_before, settings_before) = (
        bed.repo.read("session-lock/config.json"),
        bed.repo.read(".claude/settings.json"),
    );
    let hold = bed.gate("a-may-edit");
    let model_a = FakeModel::start(vec![
        bash("claim api"),
        bash(&hold.wait_command()),
        read("toolu_a_read", &x),
        edit("toolu_a_edit", &x, "x = 1", "x = 'from A'"),
        Turn::text("A edited its file"),
    ]);
    let session_a = bed.session(&model_a, "A").spawn();
    hold.wait_reached();

    let model_b = FakeModel::start(vec![
        read("toolu_b_read", &x),
        edit("toolu_b_edit", &x, "x = 1", "x = 'from B'"),
        write(
            "toolu_b_write",
            &x,
            "export const x = 'overwritten by B';\n",
        ),
        read("toolu_b_read_notes", &notes),
        edit("toolu_b_edit_notes", &notes, "notes", "notes by B"),
        read("toolu_b_read_config", &config),
        edit("toolu_b_edit_config", &config, "true", "false"),
        read("toolu_b_read_settings", &settings),
        write("toolu_b_write_settings", &settings, "{}\n"),
        Turn::text("B is done"),
    ]);
    let b = bed.session(&model_b, "B").run();
    let x_after_b = bed.repo.read("src/api/x.ts");
    hold.open();
    let a = session_a.wait();

    a.assert_success();
    b.assert_success();
    assert_guard_output(&a);
    assert_guard_output(&b);
    let a_short = &a.session_id().expect("A's id")[..8];
    let owned = format!("src/api/x.ts is owned by stream 'api' (session {a_short}");
    for (id, tool) in [("toolu_b_edit", "Edit"), ("toolu_b_write", "Write")] {
        let r = assert_blocked(&b, &model_b, id, &owned);
        assert!(
            r.content
                .starts_with(&format!("PreToolUse:{tool} hook error: ")),
            "{}",
            r.content
        );
    }
    assert_eq!(
        x_after_b.as_deref(),
        Some(API_X),
        "B's blocked Edit and Write left src/api/x.ts as it was"
    );
    assert_ran(&b, &model_b, "toolu_b_edit_notes");
    assert_eq!(
        bed.repo.read("docs/notes.md").as_deref(),
        Some("notes by B\n"),
        "B's edit of a file no stream owns went through"
    );
    for (id, rel) in [
        ("toolu_b_edit_config", "session-lock/config.json"),
        ("toolu_b_write_settings", ".claude/settings.json"),
    ] {
        assert_blocked(
            &b,
            &model_b,
            id,
            &format!("{rel} is part of the session-lock protocol and is frozen"),
        );
    }
    assert_eq!(bed.repo.read("session-lock/config.json"), config_before);
    assert_eq!(bed.repo.read(".claude/settings.json"), settings_before);
    assert_ran(&a, &model_a, "toolu_a_edit");
    assert_eq!(
        bed.repo.read("src/api/x.ts").as_deref(),
        Some("export const x = 'from A';\n"),
        "A's edit of its own file went through"
    );
}

#[test]
fn tool_calls_heartbeat_and_a_stale_lock_of_an_ended_session_can_be_taken() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"]}));
    let a_id = new_uuid();

    // A claims, then its session ends: the lock stays, its client is gone.
    let model_a1 = FakeModel::start(vec![bash("claim api"), Turn::text("claimed")]);
    let a1 = bed.session(&model_a1, "A").session_id(&a_id).run();
    a1.assert_success();
    assert_guard_output(&a1);
    assert_eq!(
        bed.lock("api").map(|l| l["sessionId"].clone()),
        Some(json!(a_id))
    );
    let row = bed.status_row("api");
    assert_eq!(row["state"], "active", "{row}");
    assert_eq!(row["orphaned"], true, "A's process is gone: {row}");
    assert_eq!(row["sessionId"], a_id.as_str(), "{row}");

    // Ten minutes without a heartbeat: orphaned but live, it still protects.
    bed.age_heartbeat("api", 10 * MINUTE_MS);
    let model_b1 = FakeModel::start(vec![
        bash_call("toolu_b1_claim", "claim api"),
        Turn::text("B waits"),
    ]);
    let b1 = bed.session(&model_b1, "B1").run();
    b1.assert_success();
    assert_guard_output(&b1);
    assert_blocked(
        &b1,
        &model_b1,
        "toolu_b1_claim",
        &format!(
            "stream 'api' is held by another session (session {}, heartbeat 10m ago, its client process is gone)",
            &a_id[..8]
        ),
    );

    // A resumes. While it stands inside a tool call, its heartbeat is aged
    // again; its next tool call moves it to now, and names the new process.
    let (first, second) = (bed.gate("a-first-call"), bed.gate("a-second-call"));
    let model_a2 = FakeModel::start(vec![
        bash(&first.wait_command()),
        bash(&second.wait_command()),
        Turn::text("resumed"),
    ]);
    let session_a2 = bed
        .session(&model_a2, "A resumed")
        .arg("--resume")
        .arg(&a_id)
        .spawn();
    first.wait_reached();
    bed.age_heartbeat("api", 10 * MINUTE_MS);
    let before = time::now_ms();
    first.open();
    second.wait_reached();
    let beat = bed.heartbeat_ms("api");
    let lock = bed.lock("api").expect("the lock");
    let row = bed.status_row("api");
    second.open();
    let a2 = session_a2.wait();
    a2.assert_success();
    assert_guard_output(&a2);
    assert_eq!(a2.session_id(), Some(a_id.as_str()), "the resumed run is A");
    assert!(
        beat >= before && beat <= time::now_ms(),
        "A's tool call moved heartbeatAt to now ({}), not left it 10 minutes back: {}",
        time::iso(before),
        time::iso(beat)
    );
    assert_eq!(lock["sessionId"], a_id.as_str());
    assert_eq!(
        lock["clientPid"], a2.pid,
        "the lock names the resumed client process"
    );
    assert_eq!(
        row["orphaned"], false,
        "the resumed session is running: {row}"
    );
    assert_eq!(row["state"], "active", "{row}");
    assert_eq!(
        bed.status_row("api")["orphaned"],
        true,
        "once the resumed session ended, its lock is orphaned again"
    );

    // Stale past the 30-minute limit: another session takes the stream.
    bed.age_heartbeat("api", 40 * MINUTE_MS);
    assert_eq!(bed.status_row("api")["state"], "stale");
    let model_b2 = FakeModel::start(vec![
        bash_call("toolu_b2_claim", "claim api"),
        Turn::text("B has it"),
    ]);
    let b2 = bed.session(&model_b2, "B2").run();
    b2.assert_success();
    assert_guard_output(&b2);
    let b_id = b2.session_id().expect("B2's id");
    let claimed = assert_ran(&b2, &model_b2, "toolu_b2_claim");
    assert!(
        claimed
            .content
            .contains(&format!("is held by this session {}", &b_id[..8])),
        "{}",
        explain(&b2, &model_b2, "claim of a stale stream")
    );
    let lock = bed.lock("api").expect("the lock");
    assert_eq!(lock["sessionId"], b_id, "the lock is B's now");
    assert!(
        bed.heartbeat_ms("api") + MINUTE_MS >= time::now_ms(),
        "with a fresh heartbeat"
    );
}

#[test]
fn wait_milestone_heartbeats_the_waiters_lock_and_returns_on_release() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"], "pollSeconds": 1}));
    let hold = bed.gate("a-may-release");
    let model_a = FakeModel::start(vec![
        bash("claim api"),
        bash(&hold.wait_command()),
        bash_call("toolu_a_release", "release api"),
        Turn::text("released"),
    ]);
    let session_a = bed.session(&model_a, "A").spawn();
    hold.wait_reached();

    // B claims ui and waits for api in one long tool call.
    let wait = format!(
        "wait-milestone api --stream ui --timeout 40 --repo '{}'",
        bed.repo.path().display()
    );
    let model_b = FakeModel::start(vec![
        bash("claim ui"),
        bash_call("toolu_b_wait", &wait),
        Turn::text("api is there"),
    ]);
    let session_b = bed.session(&model_b, "B").spawn();
    // The wait runs, so its PreToolUse hook (a heartbeat too) is over.
    let repo_arg = bed.repo.path().to_string_lossy().into_owned();
    assert!(
        wait_until(WAIT, || !processes_with(&["wait-milestone", &repo_arg])
            .is_empty()),
        "B's wait-milestone started"
    );
    bed.age_heartbeat("ui", 10 * MINUTE_MS);
    let aged_at = time::now_ms();
    let mut seen = 0;
    let refreshed = wait_until(Duration::from_secs(10), || {
        seen = bed.heartbeat_ms("ui");
        seen + 5_000 >= aged_at
    });
    let b_still_waiting = model_b.tool_result("toolu_b_wait").is_none();
    hold.open();
    let (a, b) = (session_a.wait(), session_b.wait());

    a.assert_success();
    b.assert_success();
    assert_guard_output(&a);
    assert_guard_output(&b);
    assert!(
        refreshed,
        "wait-milestone --stream ui moved B's heartbeat while it waited; it stayed at {} (aged at {})",
        time::iso(seen),
        time::iso(aged_at)
    );
    assert!(
        b_still_waiting,
        "{}",
        explain(&b, &model_b, "B's wait ended before api was released")
    );
    assert_ran(&a, &model_a, "toolu_a_release");
    let waited = assert_ran(&b, &model_b, "toolu_b_wait");
    assert!(
        waited.content.contains("api is done"),
        "{}",
        explain(&b, &model_b, "the wait ended with api done")
    );
    assert!(bed.repo.exists("session-lock/api.done"));
}

#[test]
fn release_needs_committed_owned_files_and_status_wait_returns_after_it() {
    let claude = require_claude!();
    let bed = Bed::new(claude, json!({"releaseChecks": ["true"], "pollSeconds": 1}));
    let x = bed.repo.join("src/api/x.ts");
    let (before_edit, before_commit) = (bed.gate("a-may-edit"), bed.gate("a-may-commit"));
    let model = FakeModel::start(vec![
        bash("claim api"),
        bash(&before_edit.wait_command()),
        read("toolu_read", &x),
        edit("toolu_edit", &x, "x = 1", "x = 2"),
        bash_call("toolu_release_dirty", "release api"),
        bash(&before_commit.wait_command()),
        bash_call(
            "toolu_commit",
            "git add src/api/x.ts && git commit -q -m 'api: x is 2'",
        ),
        bash_call("toolu_release", "release api"),
        Turn::text("released"),
    ]);
    let session = bed.session(&model, "A").spawn();
    before_edit.wait_reached();

    // The end-of-round barrier, started while the stream is claimed. Its first look at the
    // round either prints that it waits or ends it (and its stderr).
    let mut barrier = Background::spawn(bed.tool("status").arg("--wait"));
    let first = barrier
        .stderr()
        .wait_for(WAIT, |l| l.starts_with("status: waiting for "));
    assert!(
        first.is_some() && barrier.running(),
        "status --wait waits for the claimed stream: {}",
        barrier.stderr().text()
    );

    before_edit.open();
    // A tried to release and waits again.
    before_commit.wait_reached();
    // A probe stream claimed now changes what the barrier waits for, so its next look (the
    // first one certainly after the failed release) prints a line naming the probe. That line
    // says whether api was still open then; a barrier that ended before it prints none.
    let probe = json!({
        "stream": "probe", "sessionId": "b0b0b0b0-0000-4000-8000-000000000000",
        "owns": ["probe/**"], "plan": "plans/r-ms-01-probe/plan.md", "milestone": 1,
        "claimedAt": time::iso(time::now_ms()), "heartbeatAt": time::iso(time::now_ms()),
        "round": 0, "cwd": bed.repo.path().to_string_lossy(),
    });
    bed.put_lock("probe", &probe);
    let after = barrier.stderr().wait_for(WAIT, |l| l.contains(" probe ("));
    assert!(
        after.as_ref().is_some_and(|l| l.contains(" api (active")) && barrier.running(),
        "a failed release does not end the round: {}",
        barrier.stderr().text()
    );
    assert!(!bed.repo.exists("session-lock/api.done"));
    std::fs::remove_file(bed.lock_path("probe")).expect("remove the probe lock");

    before_commit.open();
    // Whether api.done existed once status --wait was seen to have exited.
    let mut done_when_it_returned = None;
    wait_until(WAIT, || {
        if barrier.running() {
            return false;
        }
        done_when_it_returned = Some(bed.repo.exists("session-lock/api.done"));
        true
    });
    let run = session.wait();
    let barrier = barrier.finish();

    run.assert_success();
    assert_guard_output(&run);
    let dirty = result_of(&run, &model, "toolu_release_dirty");
    assert!(
        dirty.is_error
            && dirty.content.contains("Exit code 3")
            && dirty.content.contains("stream 'api' is not released")
            && dirty.content.contains("src/api/x.ts"),
        "{}",
        explain(&run, &model, "release with an uncommitted owned file")
    );
    assert_ran(&run, &model, "toolu_commit");
    let released = assert_ran(&run, &model, "toolu_release");
    assert!(
        released.content.contains("released 'api'"),
        "{}",
        explain(&run, &model, "release after the commit")
    );
    let done_record: Value = bed
        .repo
        .read("session-lock/api.done")
        .and_then(|t| serde_json::from_str(&t).ok())
        .expect("session-lock/api.done is written");
    assert_eq!(done_record["sessionId"], run.session_id().unwrap_or("?"));
    let head = bed.repo.git(&["rev-parse", "HEAD"]);
    assert_eq!(
        done_record["head"],
        String::from_utf8_lossy(&head.stdout).trim(),
        "the done record names the commit A made"
    );

    assert_eq!(
        done_when_it_returned,
        Some(true),
        "status --wait returned, and only once api.done existed: {}",
        output_text(&barrier)
    );
    assert_eq!(
        barrier.status.code(),
        Some(0),
        "status --wait: {}",
        output_text(&barrier)
    );
    assert!(
        String::from_utf8_lossy(&barrier.stderr).contains("every claimed stream is done"),
        "{}",
        output_text(&barrier)
    );
}
