//! `wait-milestone`: waits for a stream or a milestone while keeping the caller's lock fresh;
//! refuses long waits without `--stream`; gives up at `--timeout`.

use crate::support::lifecycle::{Repo, eventually, sid, text, wait_within};
use crate::support::lines::Lines;
use serde_json::json;
use std::process::Stdio;
use std::time::{Duration, Instant};

fn wait(repo: &Repo, who: &str, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool_as("wait-milestone", who);
    c.args(args);
    repo.run(c)
}

fn two_streams() -> Repo {
    let repo = Repo::new();
    repo.config(&json!({"pollSeconds": 1, "releaseChecks": []}));
    repo.plan("mine", 1, &["src/mine/**"]);
    repo.plan("theirs", 1, &["src/theirs/**"]);
    repo.claim("alice", "mine");
    repo.claim("bob", "theirs");
    repo
}

#[test]
fn waiting_with_stream_keeps_my_lock_fresh_until_the_stream_is_done() {
    let repo = two_streams();
    repo.age_lock("mine", 20 * 60_000);
    let before = repo.heartbeat_ms("mine").unwrap();
    let mut cmd = repo.tool_as("wait-milestone", "alice");
    cmd.args(["theirs", "--stream", "mine", "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn().expect("spawn wait-milestone");

    let moved = |since: u64| repo.heartbeat_ms("mine").is_some_and(|t| t > since);
    assert!(
        eventually(Duration::from_secs(5), || moved(before)),
        "the heartbeat did not move while waiting"
    );
    // And again on a later poll, not only at the start.
    repo.age_lock("mine", 20 * 60_000);
    let aged = repo.heartbeat_ms("mine").unwrap();
    assert!(
        eventually(Duration::from_secs(5), || moved(aged)),
        "the heartbeat moved once, not on every poll"
    );
    assert_eq!(
        repo.lock_json("theirs").unwrap()["heartbeatAt"],
        repo.lock_json("theirs").unwrap()["claimedAt"],
        "another session's lock is not touched"
    );

    let mut release = repo.tool_as("release", "bob");
    release.arg("theirs");
    assert_eq!(repo.run(release).0, 0);
    let released = Instant::now();
    let out = wait_within(child, Duration::from_secs(15));
    assert!(released.elapsed() < Duration::from_secs(5));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(stdout.starts_with("theirs is done (waited "), "{stdout}");
    assert!(
        stderr.contains("wait-milestone: waiting for theirs: theirs (session bob00000, heartbeat 0s ago) [0s elapsed"),
        "{stderr}"
    );
}

#[test]
fn waiting_for_a_milestone_returns_when_its_marker_appears() {
    let repo = two_streams();
    let mut cmd = repo.tool_as("wait-milestone", "alice");
    cmd.args(["ms-01", "--timeout", "60", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    // Released only once the wait has looked at the milestone and said it waits.
    let stderr = Lines::stderr(&mut child);
    assert!(
        stderr
            .wait_for(Duration::from_secs(10), |l| l
                .starts_with("wait-milestone: waiting for ms-01:"))
            .is_some(),
        "wait-milestone never said it waits: {}",
        stderr.text()
    );
    for (who, stream) in [("bob", "theirs"), ("alice", "mine")] {
        let mut release = repo.tool_as("release", who);
        release.arg(stream);
        assert_eq!(repo.run(release).0, 0);
    }
    let out = wait_within(child, Duration::from_secs(15));
    assert_eq!(out.status.code(), Some(0), "{}", stderr.text());
    let v: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    assert_eq!(
        (v["target"].as_str(), v["done"].as_bool()),
        (Some("ms-01"), Some(true))
    );
    let err = stderr.finish();
    assert!(
        err.contains("waiting for ms-01: mine (session alice000")
            && err.contains("theirs (session bob00000"),
        "{err}"
    );
}

#[test]
fn a_long_wait_without_stream_is_refused() {
    let repo = two_streams();
    let (code, _, err) = wait(&repo, "alice", &["theirs", "--timeout", "1800"]);
    assert_eq!(code, 8, "{err}");
    assert!(
        err.contains("a wait of 1800s without --stream is refused (limit 1500s)")
            && err.contains("Add --stream <your stream>"),
        "{err}"
    );
    // The limit follows waitLimitMinutes.
    repo.config(&json!({"waitLimitMinutes": 1}));
    let (code, _, err) = wait(&repo, "alice", &["theirs", "--timeout", "61"]);
    assert_eq!(code, 8, "{err}");
    // With --stream, a long wait is fine (it ends here because the stream is done).
    repo.write(
        "session-lock/theirs.done",
        &json!({"stream": "theirs", "sessionId": sid("bob"), "releasedAt": "2026-01-01T00:00:00Z"})
            .to_string(),
    );
    let (code, out, err) = wait(
        &repo,
        "alice",
        &["theirs", "--stream", "mine", "--timeout", "7200"],
    );
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn timeouts_give_exit_5() {
    let repo = two_streams();
    let started = Instant::now();
    let (code, _, err) = wait(&repo, "alice", &["theirs", "--timeout", "1"]);
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("theirs is not done after 1s; still open: theirs"),
        "{err}"
    );
    let (code, _, err) = wait(
        &repo,
        "alice",
        &["ms-01", "--stream", "mine", "--timeout", "1"],
    );
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("ms-01 is not done after 1s; still open: mine, theirs"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn bad_targets_and_other_sessions_streams() {
    let repo = two_streams();
    let (code, _, err) = wait(&repo, "alice", &["ms-09", "--timeout", "1"]);
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("no plan belongs to milestone 09"), "{err}");
    let (code, _, err) = wait(
        &repo,
        "alice",
        &["theirs", "--stream", "theirs", "--timeout", "1"],
    );
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("--stream theirs: stream 'theirs' is held by session bob00000"),
        "{err}"
    );
    let (code, _, err) = wait(
        &repo,
        "alice",
        &["theirs", "--stream", "nope", "--timeout", "1"],
    );
    assert_eq!(code, 6, "{err}");
    assert!(
        err.contains("--stream nope: that stream is not claimed"),
        "{err}"
    );
    let (code, _, err) = wait(&repo, "alice", &["../x", "--timeout", "1"]);
    assert_eq!(code, 2, "{err}");
    // A misspelt stream is not waited for (with --stream the wait has no limit).
    let started = Instant::now();
    let (code, _, err) = wait(&repo, "alice", &["theirss", "--stream", "mine"]);
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("no plan declares stream 'theirss'"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // A stream with a lock but no plan (the plan was removed) can still be waited for.
    repo.lock("adhoc", "bob", &["adhoc/**"], 1, 0);
    let (code, _, err) = wait(&repo, "alice", &["adhoc", "--timeout", "1"]);
    assert_eq!(code, 5, "{err}");
}
