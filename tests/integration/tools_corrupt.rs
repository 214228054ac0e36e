//! Broken files give clear errors naming the file (and the line, for plans) in every tool.

use crate::support::lifecycle::{Repo, Verdict, verdict};
use serde_json::{Value, json};

fn run(repo: &Repo, tool: &str, who: &str, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool_as(tool, who);
    c.args(args);
    repo.run(c)
}

fn broken_lock_repo() -> Repo {
    let repo = Repo::new();
    repo.config(&json!({"releaseChecks": [], "pollSeconds": 1}));
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.write(
        "session-lock/api.lock",
        "{\"stream\": \"api\", \"sessionId\": ",
    );
    repo
}

#[test]
fn a_broken_lock_is_named_by_every_tool() {
    let repo = broken_lock_repo();
    for (tool, args) in [
        ("claim", vec!["api"]),
        ("release", vec!["api"]),
        (
            "wait-milestone",
            vec!["ui", "--stream", "api", "--timeout", "1"],
        ),
    ] {
        let (code, out, err) = run(&repo, tool, "alice", &args);
        assert_eq!(code, 1, "{tool}: {out}{err}");
        assert!(
            err.starts_with(&format!("{tool}: "))
                && err.contains("session-lock/api.lock: not a lock record"),
            "{tool}: {err}"
        );
    }
    let (code, out, _) = run(&repo, "status", "alice", &[]);
    assert_eq!(code, 1, "status reports problems with exit 1");
    assert!(
        out.contains("problem: ") && out.contains("session-lock/api.lock: not a lock record"),
        "{out}"
    );
    assert!(
        out.contains("ui ") && out.contains("unclaimed"),
        "the rest still shows: {out}"
    );
    let (code, out, _) = run(&repo, "status", "alice", &["--json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    let problems = v["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1);
    assert!(
        problems[0].as_str().unwrap().contains("api.lock"),
        "{problems:?}"
    );
    // The guard's claim names it too, instead of guessing at a race.
    match verdict(&repo.bash("alice", "claim api")) {
        Ok(Verdict::Block(reason)) => assert!(
            reason.contains("cannot claim 'api'") && reason.contains("api.lock"),
            "{reason}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_lock_with_a_bad_timestamp_or_another_stream_is_named() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "alice", &["src/api/**"], 1, 0);
    let mut lock = repo.lock_json("api").unwrap();
    lock["heartbeatAt"] = json!("last tuesday");
    repo.write("session-lock/api.lock", &lock.to_string());
    let (code, _, err) = run(&repo, "release", "alice", &["api"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("api.lock: heartbeatAt 'last tuesday' is not a UTC timestamp"),
        "{err}"
    );
    let mut lock = lock.clone();
    lock["heartbeatAt"] = json!(session_lock::time::iso(session_lock::time::now_ms()));
    lock["stream"] = json!("ui");
    repo.write("session-lock/api.lock", &lock.to_string());
    let (code, out, _) = run(&repo, "status", "alice", &[]);
    assert_eq!(code, 1);
    assert!(
        out.contains("api.lock: names stream 'ui', not 'api'"),
        "{out}"
    );
    // release and claim read the one lock: the same check, not ui's record under api's name.
    for tool in ["release", "claim"] {
        let (code, _, err) = run(&repo, tool, "alice", &["api"]);
        assert_eq!(code, 1, "{tool}: {err}");
        assert!(
            err.contains("api.lock: names stream 'ui', not 'api'"),
            "{tool}: {err}"
        );
    }
    assert!(!repo.exists("session-lock/api.done"));
}

#[test]
fn a_malformed_plan_is_named_with_its_line() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.write(
        "plans/r-ms-01-ui/plan.md",
        "---\ntitle: ui\nowns:\n  - src/ui/**\n  src/shared/**\n---\n",
    );
    let want =
        "plans/r-ms-01-ui/plan.md:5: expected '- <pattern>' under owns, found 'src/shared/**'";
    let (code, out, _) = run(&repo, "status", "alice", &[]);
    assert_eq!(code, 1);
    assert!(out.contains(&format!("problem: {want}")), "{out}");
    let (code, _, err) = run(
        &repo,
        "wait-milestone",
        "alice",
        &["ms-01", "--timeout", "1"],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(want), "{err}");
    // The broken plan's stream cannot be claimed, and says why; every other stream can.
    match verdict(&repo.bash("alice", "claim ui")) {
        Ok(Verdict::Block(reason)) => assert!(reason.contains(want), "{reason}"),
        other => panic!("{other:?}"),
    }
    repo.claim("alice", "api");
    // A plan without its frontmatter is named at line 1.
    repo.write("plans/r-ms-01-ui/plan.md", "# ui\n");
    let (_, out, _) = run(&repo, "status", "alice", &[]);
    assert!(
        out.contains("plans/r-ms-01-ui/plan.md:1: no frontmatter"),
        "{out}"
    );
}

#[test]
fn a_broken_config_is_named_with_its_key() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.claim("alice", "api");
    repo.write("session-lock/config.json", "{\"pollSeconds\": \"often\"}");
    for (tool, args) in [
        ("claim", vec!["api"]),
        ("release", vec!["api"]),
        ("status", vec![]),
        ("wait-milestone", vec!["api", "--timeout", "1"]),
    ] {
        let (code, _, err) = run(&repo, tool, "alice", &args);
        assert_eq!(code, 2, "{tool}: {err}");
        assert!(
            err.contains("session-lock/config.json: key 'pollSeconds'"),
            "{tool}: {err}"
        );
    }
    repo.write("session-lock/config.json", "{\"releaseCheck\": []}");
    let (code, _, err) = run(&repo, "release", "alice", &["api"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown field `releaseCheck`"), "{err}");
}

/// Issue 29, item 2: a lock file overwritten in place (not by rename) leaves the folder's time
/// as it was, so the round index still looks fresh. The corrupt lock must keep protecting its
/// stream's files all the same, and say so.
#[test]
fn issue_29_a_lock_corrupted_in_place_keeps_protecting_behind_a_fresh_index() {
    use session_lock::round_index::Index;
    use session_lock::state::Layout;
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.claim("alice", "api");
    repo.claim("bob", "ui");
    let layout = Layout::new(&repo.root);
    assert!(
        Index::load(&layout).is_ok(),
        "the index describes the locks"
    );
    // Written in place: the same inode, truncated and rewritten.
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(repo.path("session-lock/api.lock"))
            .unwrap();
        f.write_all(b"{\"stream\": \"api\", \"sessionId\": ")
            .unwrap();
    }
    assert!(
        Index::load(&layout).is_ok(),
        "the in-place write left the index looking fresh"
    );
    for (who, tool, input) in [
        ("bob", "Edit", None),
        ("bob", "Bash", Some("echo x > src/api/y.ts")),
        ("carol", "Edit", None),
    ] {
        let out = match input {
            None => repo.edit(who, "src/api/x.ts"),
            Some(cmd) => repo.bash(who, cmd),
        };
        let reason = match verdict(&out) {
            Ok(Verdict::Block(r)) => r,
            other => panic!(
                "{who} {tool}: {other:?}; stderr {}",
                crate::support::lifecycle::text(&out.stderr)
            ),
        };
        assert!(
            reason.contains("src/api/")
                && reason.contains("api.lock")
                && reason.contains("corrupt"),
            "{who} {tool}: {reason}"
        );
        let stderr = crate::support::lifecycle::text(&out.stderr);
        assert!(
            stderr.contains("broken lock") && stderr.contains("api.lock"),
            "{who} {tool}: the broken lock is said: {stderr}"
        );
    }
    // Bob's own files stay his.
    assert_eq!(
        verdict(&repo.edit("bob", "src/ui/x.ts")),
        Ok(Verdict::Allow)
    );
}
