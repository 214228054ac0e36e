//! `status`: the table, `--json`, the end-of-round barrier `--wait`, and `--archive`.

use crate::support::lifecycle::{Repo, dead_pid, sid, text, wait_within};
use crate::support::lines::Lines;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::{Duration, Instant};

fn status(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool("status");
    c.args(args);
    repo.run(c)
}

fn row<'a>(table: &'a str, stream: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(stream))
        .unwrap_or_else(|| panic!("no row for {stream} in:\n{table}"))
}

#[test]
fn the_table_and_json_show_every_stream() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.plan("docs", 2, &["docs/**"]);
    repo.plan("tests", 2, &["tests/**"]);
    repo.claim("alice", "api");
    repo.claim("bob", "ui");
    repo.write(
        "session-lock/ui.done",
        &json!({"stream": "ui", "sessionId": sid("bob"), "releasedAt": "2026-01-01T00:00:00Z"})
            .to_string(),
    );
    repo.lock("tests", "carol", &["tests/**"], 2, 40 * 60_000);
    // A lock whose plan is gone still shows.
    repo.lock("gone", "dave", &["gone/**"], 3, 60_000);

    let (code, out, err) = status(&repo, &[]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("round 0\n"), "{out}");
    assert!(out.contains("STREAM") && out.contains("HEARTBEAT"), "{out}");
    let api = row(&out, "api");
    assert!(
        api.contains(" 01 ") && api.contains("active") && api.contains("alice000"),
        "{api}"
    );
    assert!(row(&out, "ui").contains("done"), "{out}");
    let docs = row(&out, "docs");
    assert!(
        docs.contains("unclaimed") && docs.contains(" 02 "),
        "{docs}"
    );
    let tests = row(&out, "tests");
    assert!(
        tests.contains("stale") && tests.contains("40m ago"),
        "{tests}"
    );
    assert!(row(&out, "gone").contains("active"), "{out}");

    let (code, out, _) = status(&repo, &["--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(v["round"], 0);
    assert_eq!(v["problems"], json!([]));
    let states: Vec<(String, String)> = v["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["stream"].as_str().unwrap().to_string(),
                r["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("api", "active"),
        ("ui", "done"),
        ("docs", "unclaimed"),
        ("tests", "stale"),
        ("gone", "active"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(states, expected);
    let api = &v["streams"][0];
    assert_eq!(api["sessionId"], sid("alice"));
    assert_eq!(api["milestone"], 1);
    assert_eq!(api["orphaned"], false);
}

#[test]
fn an_orphaned_lock_is_marked() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "alice", &["src/api/**"], 1, 60_000);
    let mut lock = repo.lock_json("api").unwrap();
    lock["clientPid"] = json!(dead_pid());
    repo.write("session-lock/api.lock", &lock.to_string());
    let (code, out, _) = status(&repo, &[]);
    assert_eq!(code, 0);
    assert!(row(&out, "api").contains("active*"), "{out}");
    assert!(
        out.contains("* orphaned: the session's client process is gone"),
        "{out}"
    );
    let (_, out, _) = status(&repo, &["--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["streams"][0]["orphaned"], true);
}

#[test]
fn wait_returns_when_the_last_stream_is_released() {
    let repo = Repo::new();
    repo.config(&json!({"pollSeconds": 1, "releaseChecks": []}));
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.claim("alice", "api");
    repo.claim("bob", "ui");
    repo.write(
        "session-lock/ui.done",
        &json!({"stream": "ui", "sessionId": sid("bob"), "releasedAt": "2026-01-01T00:00:00Z"})
            .to_string(),
    );

    let mut cmd = repo.tool("status");
    cmd.args(["--wait", "--timeout", "60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn status --wait");
    // Released only once the barrier has looked at the round and said it waits.
    let stderr = Lines::stderr(&mut child);
    assert!(
        stderr
            .wait_for(Duration::from_secs(10), |l| l
                .starts_with("status: waiting for "))
            .is_some(),
        "status --wait never said it waits: {}",
        stderr.text()
    );
    let mut release = repo.tool_as("release", "alice");
    release.arg("api");
    let (code, _, err) = repo.run(release);
    assert_eq!(code, 0, "{err}");
    let released_at = Instant::now();
    let out = wait_within(child, Duration::from_secs(15));
    assert!(
        released_at.elapsed() < Duration::from_secs(5),
        "status --wait took {:?} after the release",
        released_at.elapsed()
    );
    let (stdout, stderr) = (text(&out.stdout), stderr.finish());
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("status: waiting for 1 stream(s)")
            && stderr.contains("api (active, session alice000, heartbeat")
            && stderr.contains("status: every claimed stream is done"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("ui (active"),
        "a done stream is not waited for: {stderr}"
    );
    assert!(row(&stdout, "api").contains("done"), "{stdout}");
}

#[test]
fn wait_times_out_with_exit_5() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.claim("alice", "api");
    let started = Instant::now();
    let (code, _, err) = status(&repo, &["--wait", "--timeout", "1"]);
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("gave up after 1s; still waiting for: api (active"),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn a_lock_stale_past_the_round_limit_does_not_hold_the_wait() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.lock("api", "alice", &["src/api/**"], 1, 61 * 60_000);
    let started = Instant::now();
    let (code, out, err) = status(&repo, &["--wait", "--timeout", "30"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (_, out, _) = status(&repo, &["--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["streams"][0]["abandoned"], true);

    // Stale for the guard (30 minutes) but not abandoned (60): still waited for.
    repo.lock("ui", "bob", &["src/ui/**"], 1, 45 * 60_000);
    let (code, _, err) = status(&repo, &["--wait", "--timeout", "1"]);
    assert_eq!(code, 5, "{err}");
    assert!(
        err.contains("ui (stale, session bob00000, heartbeat 45m ago)"),
        "{err}"
    );
}

#[test]
fn archive_moves_the_round_and_the_next_claim_is_round_one() {
    let repo = Repo::new();
    repo.config(&json!({"releaseChecks": []}));
    repo.plan("api", 1, &["src/api/**"]);
    repo.claim("alice", "api");
    let mut release = repo.tool_as("release", "alice");
    release.arg("api");
    assert_eq!(repo.run(release).0, 0);
    assert!(repo.exists("session-lock/milestones/ms-01.done"));
    repo.write("session-lock/build.lock", "");

    let (code, out, err) = status(&repo, &["--wait", "--timeout", "5", "--archive"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("archived the round to"), "{out}");
    let history: Vec<_> = std::fs::read_dir(repo.path("session-lock/history"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(history.len(), 1, "{history:?}");
    let folder = &history[0];
    let name = folder.file_name().unwrap().to_string_lossy().to_string();
    assert!(
        name.len() == 16 && name.ends_with('Z') && name.contains('T'),
        "{name}"
    );
    for f in ["api.lock", "api.done", "milestones/ms-01.done"] {
        assert!(folder.join(f).exists(), "{f} not archived");
    }
    for f in ["api.lock", "api.done", "milestones"] {
        assert!(
            !repo.exists(&format!("session-lock/{f}")),
            "{f} left behind"
        );
    }
    assert!(repo.exists("session-lock/build.lock"), "build.lock stays");
    assert!(repo.exists("session-lock/config.json"), "config stays");

    // Nothing left to archive.
    let (code, out, _) = status(&repo, &["--archive"]);
    assert_eq!(code, 0);
    assert!(out.contains("nothing to archive"), "{out}");

    // The next round: the claim is round 1, and status says so.
    repo.claim("bob", "api");
    assert_eq!(repo.lock_json("api").unwrap()["round"], 1);
    let (_, out, _) = status(&repo, &[]);
    assert!(out.starts_with("round 1\n"), "{out}");
}

#[test]
fn timeout_needs_wait() {
    let repo = Repo::new();
    let (code, _, err) = status(&repo, &["--timeout", "5"]);
    assert_eq!(code, 2, "{err}");
    // Status of an empty repo says so.
    let (code, out, _) = status(&repo, &[]);
    assert_eq!(code, 0);
    assert!(out.contains("no streams: no plans and no locks"), "{out}");
}

#[test]
fn archive_is_refused_while_a_stream_is_open() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.claim("alice", "api");
    repo.lock("ui", "bob", &["src/ui/**"], 1, 45 * 60_000);
    let (code, _, err) = status(&repo, &["--archive"]);
    assert_eq!(code, 8, "{err}");
    assert!(
        err.contains("will not archive while 2 stream(s) are open: api (active")
            && err.contains("ui (stale, session bob00000, heartbeat 45m ago)"),
        "{err}"
    );
    assert!(repo.exists("session-lock/api.lock") && !repo.exists("session-lock/history"));
    // An abandoned lock (stale past the round limit) does not stop the archive.
    repo.lock("api", "alice", &["src/api/**"], 1, 61 * 60_000);
    repo.lock("ui", "bob", &["src/ui/**"], 1, 61 * 60_000);
    let (code, out, err) = status(&repo, &["--archive"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("archived the round to"), "{out}");
}
