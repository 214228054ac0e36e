//! The block log: every deny and fail-open of the real guard lands in
//! session-lock/blocks.jsonl, secrets redacted; `guard log` shows it and `status` counts it.

use crate::support::lifecycle::{Repo, Verdict, sid, text, verdict};
use serde_json::{Value, json};

fn log(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool("guard");
    c.arg("log").args(args);
    repo.run(c)
}

#[test]
fn denies_and_fail_opens_are_logged_redacted_and_counted_per_stream() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 60_000);
    repo.claim("alice", "ui");
    // The folder's time well in the past, so that creating the log visibly moves it.
    let past = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    std::fs::File::open(repo.path("session-lock"))
        .and_then(|f| f.set_modified(past))
        .expect("set the folder's time");
    let (code, out, _) = log(&repo, &[]);
    assert_eq!(code, 0);
    assert!(out.starts_with("no blocks logged in "), "{out}");

    // An edit of bob's file, and a sweeping add carrying a token.
    let edit = repo.payload(
        "alice",
        "Edit",
        json!({"file_path": repo.path("src/api/x.ts").to_string_lossy()}),
    );
    assert!(matches!(verdict(&repo.guard(&edit)), Ok(Verdict::Block(_))));
    let add = repo.payload(
        "alice",
        "Bash",
        json!({"command": "curl -H 'Authorization: Bearer s3cr3t-bearer' http://127.0.0.1/ && GH_TOKEN=s3cr3t-gh git add -A"}),
    );
    let out = repo.guard(&add);
    assert!(matches!(verdict(&out), Ok(Verdict::Block(_))));
    // The edit's deny created the log; that left the round index as good as it was.
    assert!(
        !text(&out.stderr).contains("round index"),
        "{}",
        text(&out.stderr)
    );
    // An allowed call writes nothing.
    let read = repo.payload("alice", "Read", json!({"file_path": "README.md"}));
    assert_eq!(verdict(&repo.guard(&read)), Ok(Verdict::Allow));

    let raw = repo.read("session-lock/blocks.jsonl").expect("the log");
    assert_eq!(raw.lines().count(), 2, "{raw}");
    assert!(
        !raw.contains("s3cr3t"),
        "secrets never reach the log: {raw}"
    );
    let (code, out, _) = log(&repo, &["--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["kind"], "deny");
    assert_eq!(entries[0]["rule"], "ownership");
    assert_eq!(entries[0]["stream"], "ui");
    assert_eq!(entries[0]["session"], sid("alice"));
    assert_eq!(entries[0]["tool"], "Edit");
    assert!(
        entries[0]["reason"]
            .as_str()
            .unwrap()
            .contains("owned by stream 'api'")
    );
    assert_eq!(entries[1]["rule"], "git.add-all");
    assert_eq!(entries[1]["tool"], "Bash");
    assert!(entries[1]["time"].as_str().unwrap().ends_with('Z'));

    let (_, out, _) = log(&repo, &[]);
    assert!(
        out.contains("blocked (git.add-all)") && out.contains("blocked (ownership)"),
        "{out}"
    );
    let (_, out, _) = log(&repo, &["--session", &sid("bob")[..8]]);
    assert!(
        out.starts_with("no blocks logged"),
        "filtered by session: {out}"
    );
    let (_, out, _) = log(
        &repo,
        &["--since", "1h", "--session", &sid("alice")[..8], "--json"],
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["entries"].as_array().unwrap().len(), 2);
    let (code, out, err) = log(&repo, &["--since", "1w", "--json"]);
    assert_eq!(code, 2, "{err}");
    let v: Value = serde_json::from_str(&out).expect("one JSON object on failure");
    assert_eq!(
        (v["ok"].clone(), v["error"].clone()),
        (json!(false), json!("usage"))
    );
    assert!(
        err.starts_with("guard log: --since 1w: unknown unit 'w'"),
        "{err}"
    );

    // status counts them for the stream whose session was blocked.
    let (code, out, _) = repo.run(repo.tool("status"));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("blocked calls: ui 2"), "{out}");
    let (_, out, _) = repo.run({
        let mut c = repo.tool("status");
        c.arg("--json");
        c
    });
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["blocks"], json!({"ui": 2}));

    // A bug of the guard's own (its crash switch): it allows, and the fail-open is logged.
    let mut crashing = repo.tool("guard");
    crashing.env("SESSION_LOCK_GUARD_CRASH", "1");
    let out = crate::support::lifecycle::run_with_stdin(crashing, edit.to_string().as_bytes());
    assert_eq!(verdict(&out), Ok(Verdict::Allow), "{}", text(&out.stderr));
    let (_, out, _) = log(&repo, &["--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let last = v["entries"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "fail-open", "{last}");
    assert!(
        last["reason"].as_str().unwrap().contains("internal error"),
        "{last}"
    );
}

/// A run that never finishes (a bug of the guard's own, switched on by the crash switch) ends at
/// the deadline: allowed, with the note on stderr and a fail-open line naming the call — from
/// the same process the client started (on Linux the guard re-executes itself in place).
#[cfg(unix)]
#[test]
fn a_run_past_its_deadline_allows_says_so_and_logs_it() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 60_000);
    let edit = repo.payload(
        "alice",
        "Edit",
        json!({"file_path": repo.path("src/api/x.ts").to_string_lossy()}),
    );
    let mut guard = repo.tool("guard");
    guard.env("SESSION_LOCK_GUARD_CRASH", "hang");
    let started = std::time::Instant::now();
    let out = crate::support::lifecycle::run_with_stdin(guard, edit.to_string().as_bytes());
    let took = started.elapsed();
    assert_eq!(verdict(&out), Ok(Verdict::Allow), "{}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stderr).trim(),
        "guard: no answer within 5s; allowing"
    );
    assert!(
        took >= std::time::Duration::from_secs(5),
        "allowed after {took:?}, before the deadline"
    );
    let (_, log_out, _) = log(&repo, &["--json"]);
    let v: Value = serde_json::from_str(&log_out).unwrap();
    let entries = v["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{v}");
    assert_eq!(entries[0]["kind"], "fail-open");
    assert_eq!(entries[0]["tool"], "Edit");
    assert_eq!(entries[0]["session"], sid("alice"));
    assert_eq!(entries[0]["reason"], "no answer within 5s; allowing");
}

#[test]
fn issue_25_each_deny_is_logged_with_the_check_that_refused() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 60_000);
    repo.claim("alice", "ui");
    let settings = repo.path(".claude/settings.json");
    let cases = [
        (
            repo.payload(
                "alice",
                "Write",
                json!({"file_path": settings.to_string_lossy(), "content": "{}"}),
            ),
            "protected",
        ),
        (
            repo.payload("alice", "Bash", json!({"command": "release api"})),
            "release",
        ),
        (
            repo.payload("alice", "Bash", json!({"command": "echo x > src/api/y.ts"})),
            "ownership",
        ),
    ];
    for (payload, _) in &cases {
        assert!(matches!(
            verdict(&repo.guard(payload)),
            Ok(Verdict::Block(_))
        ));
    }
    let (code, out, _) = log(&repo, &["--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let entries = v["entries"].as_array().unwrap();
    let rules: Vec<&str> = entries
        .iter()
        .map(|e| e["rule"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = cases.iter().map(|(_, r)| *r).collect();
    assert_eq!(rules, want, "{out}");
    assert_eq!(entries[0]["path"], ".claude/settings.json");
    assert_eq!(entries[1]["owner"], "api", "the stream released");
    assert_eq!(
        (entries[2]["path"].as_str(), entries[2]["owner"].as_str()),
        (Some("src/api/y.ts"), Some("api"))
    );
}
