//! `claim`: reads back the lock the guard recorded, and prints the rules and who owns what.

use crate::support::lifecycle::{Repo, sid};
use serde_json::{Value, json};

fn claim(repo: &Repo, who: Option<&str>, args: &[&str]) -> (i32, String, String) {
    let mut c = match who {
        Some(w) => repo.tool_as("claim", w),
        None => repo.tool("claim"),
    };
    c.args(args);
    repo.run(c)
}

#[test]
fn without_a_recorded_lock_claim_says_the_hook_did_not_run() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let (code, out, err) = claim(&repo, Some("alice"), &["api"]);
    assert_eq!(code, 6, "{out}{err}");
    assert!(out.is_empty());
    assert!(
        err.starts_with("claim: no lock for stream 'api'")
            && err.contains("the guard hook did not record the claim")
            && err.contains("PreToolUse hook")
            && err.contains("guard install <repo>"),
        "{err}"
    );
}

#[test]
fn claim_prints_my_globs_the_other_streams_and_the_rules_that_bind_me() {
    let repo = Repo::new();
    repo.plan("api", 2, &["src/api/**", "!src/api/legacy.ts"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.plan("docs", 1, &["docs/**"]);
    repo.claim("bob", "ui");
    repo.claim("alice", "api");
    repo.lock("docs", "carol", &["docs/**"], 1, 40 * 60_000);

    let (code, out, err) = claim(&repo, Some("alice"), &["api"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("Stream 'api' (milestone 02, round 0) is held by this session alice000.")
            && out.contains("You own (edit only these):\n  src/api/**\n  !src/api/legacy.ts\n"),
        "{out}"
    );
    assert!(
        out.contains("Other streams (do not edit what they own; ask their session):")
            && out.contains("  ui — session bob00000, active (heartbeat 0s ago): src/ui/**")
            && out.contains("  docs — session carol000, stale (heartbeat 40m ago): docs/**"),
        "{out}"
    );
    // Issue 30: the whole PROTOCOL.md (27,000 characters) went into the model's context. Now a
    // summary of what binds this session, with its own names, and where the rest is.
    assert!(!out.contains("# session-lock protocol"), "{out}");
    for needle in [
        "Rules that bind this session",
        "`wait-milestone <ms-NN|stream> --stream api`",
        "`send_session_message`",
        "run `release api`",
        "The full protocol: session-lock/PROTOCOL.md",
    ] {
        assert!(out.contains(needle), "{needle}: {out}");
    }
    assert!(
        out.chars().count() <= 4000,
        "{} characters",
        out.chars().count()
    );

    // --quiet leaves the rules out.
    let (_, out, _) = claim(&repo, Some("alice"), &["api", "--quiet"]);
    assert!(out.starts_with("Stream 'api'"), "{out}");
    assert!(!out.contains("Rules that bind"), "{out}");

    let (code, out, _) = claim(&repo, Some("alice"), &["api", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(v["stream"], "api");
    assert_eq!(v["sessionId"], sid("alice"));
    assert_eq!(v["milestone"], 2);
    assert_eq!(v["owns"], json!(["src/api/**", "!src/api/legacy.ts"]));
    assert_eq!(v["plan"], "plans/r-ms-02-api/plan.md");
    let others: Vec<&str> = v["others"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["stream"].as_str().unwrap())
        .collect();
    assert_eq!(others, vec!["docs", "ui"]);
}

#[test]
fn alone_in_the_round_claim_says_so() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.claim("alice", "api");
    let (code, out, _) = claim(&repo, Some("alice"), &["api", "--quiet"]);
    assert_eq!(code, 0);
    assert!(out.ends_with("No other stream is claimed.\n"), "{out}");
}

#[test]
fn another_sessions_lock_is_exit_4() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.claim("alice", "api");
    let (code, out, err) = claim(&repo, Some("bob"), &["api"]);
    assert_eq!(code, 4, "{out}{err}");
    assert!(
        err.contains("stream 'api' is held by session alice000; this command runs inside session bob00000's process tree"),
        "{err}"
    );
    // From a terminal (no session id) it only reports.
    let (code, _, _) = claim(&repo, None, &["api", "--quiet"]);
    assert_eq!(code, 0);
}

#[test]
fn bad_names_and_repos() {
    let repo = Repo::new();
    let (code, _, err) = claim(&repo, Some("alice"), &["a/b"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("'a/b' is not a stream name"), "{err}");
    let (code, _, err) = claim(&repo, Some("alice"), &["build"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("'build' is reserved"), "{err}");
    let missing = repo.base.join("missing");
    let (code, _, err) = claim(
        &repo,
        Some("alice"),
        &["api", "--repo", &missing.to_string_lossy()],
    );
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a folder"), "{err}");
    // Outside any git repo, without --repo.
    let mut c = repo.tool_as("claim", "alice");
    c.arg("api").current_dir(&repo.home);
    let (code, _, err) = repo.run(c);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("is not inside a git repo (use --repo DIR)"),
        "{err}"
    );
}

#[test]
fn claim_finds_the_repo_from_a_subfolder_and_from_claude_project_dir() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.claim("alice", "api");
    std::fs::create_dir_all(repo.path("src/api/deep")).unwrap();
    let mut c = repo.tool_as("claim", "alice");
    c.args(["api", "--quiet"])
        .current_dir(repo.path("src/api/deep"));
    assert_eq!(repo.run(c).0, 0);
    let mut c = repo.tool_as("claim", "alice");
    c.args(["api", "--quiet"])
        .current_dir(&repo.home)
        .env("CLAUDE_PROJECT_DIR", &repo.root);
    assert_eq!(repo.run(c).0, 0);
}

#[test]
fn issue_15_claim_names_the_holder_outside_a_session_and_the_declared_streams() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.claim("alice", "api");
    let (code, out, err) = claim(&repo, None, &["api", "--quiet"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("Stream 'api' (milestone 01, round 0) is held by session alice000.\n")
            && !out.contains("this session"),
        "{out}"
    );
    for name in ["nope", "API"] {
        let (code, _, err) = claim(&repo, Some("alice"), &[name]);
        assert_eq!(code, 6, "{err}");
        assert_eq!(
            err.trim_end(),
            format!("claim: no plan declares stream '{name}'; streams: api, ui"),
        );
    }
}

#[test]
fn in_a_big_round_claim_stays_within_4000_characters() {
    let repo = Repo::new();
    let long: Vec<String> = (0..40)
        .map(|i| format!("packages/a-rather-long-package-name-{i}/src/**"))
        .collect();
    let long: Vec<&str> = long.iter().map(String::as_str).collect();
    repo.plan("api", 1, &long);
    for i in 0..60 {
        let s = format!("stream-{i:02}");
        let owns = format!("src/{s}/**");
        repo.plan(&s, 1, &[&owns]);
        repo.lock(&s, &format!("s{i:02}"), &[&owns], 1, 60_000);
    }
    repo.claim("alice", "api");
    let (code, out, err) = claim(&repo, Some("alice"), &["api"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.chars().count() <= 4000,
        "{} characters:\n{out}",
        out.chars().count()
    );
    assert!(
        out.contains("more (claim api --json lists them all)"),
        "{out}"
    );
    assert!(out.contains("more (status lists every stream)"), "{out}");
    assert!(
        out.contains("The full protocol: session-lock/PROTOCOL.md"),
        "{out}"
    );
}
