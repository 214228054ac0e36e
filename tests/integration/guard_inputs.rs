//! Issue 27, item 3: no input an agent can shape makes the guard wait or decide blind. The guard
//! never opens a FIFO, a device or a socket it reads for analysis (script files a command runs,
//! the config, plans, locks), and a payload nested deeper than its JSON reader is judged on the
//! fields the checks need.

use crate::support::lifecycle::{Repo, Verdict, text, verdict};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Well under the guard's 5 s deadline: an answer this fast did not wait on the FIFO.
const FAST: Duration = Duration::from_secs(3);

fn mkfifo_at(p: &std::path::Path) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(p)
        .status()
        .expect("mkfifo");
    assert!(made.success(), "mkfifo {}", p.display());
}

fn mkfifo(repo: &Repo, rel: &str) {
    mkfifo_at(&repo.path(rel));
}

/// The guard's verdict on `payload`, asserted to come fast and without a fail-open note.
fn judged(repo: &Repo, payload: &Value) -> Verdict {
    let started = Instant::now();
    let out = repo.guard(payload);
    let took = started.elapsed();
    assert!(took < FAST, "answered after {took:?}: it waited on input");
    let err = text(&out.stderr);
    assert!(!err.contains("allowing"), "a fail-open: {err}");
    verdict(&out).unwrap_or_else(|e| panic!("{e}"))
}

fn blocked_by(v: &Verdict, rule: &str) -> bool {
    matches!(v, Verdict::Block(r) if r.contains(rule))
}

#[test]
fn issue_27_a_script_that_is_a_fifo_is_blocked_at_once_and_regular_scripts_are_read() {
    let repo = Repo::new();
    mkfifo(&repo, "tools/clean.sh");
    repo.write("tools/ok.sh", "echo hi\n");
    repo.write("tools/wipe.sh", "rm -rf dist\n");
    for cmd in [
        "bash tools/clean.sh",
        "./tools/clean.sh",
        "cd tools && sh clean.sh",
        ". tools/clean.sh",
    ] {
        let v = judged(
            &repo,
            &repo.payload("alice", "Bash", json!({"command": cmd})),
        );
        assert!(
            matches!(&v, Verdict::Block(r) if r.contains("not a regular file") && r.contains("clean.sh")),
            "{cmd}: {v:?}"
        );
    }
    // A FIFO outside the repo feeds unknown text just the same.
    let outside = tempfile::tempdir().unwrap();
    let fifo = outside.path().join("x.sh");
    mkfifo_at(&fifo);
    let cmd = format!("bash {}", fifo.display());
    let v = judged(
        &repo,
        &repo.payload("alice", "Bash", json!({"command": cmd})),
    );
    assert!(
        matches!(&v, Verdict::Block(r) if r.contains("not a regular file")),
        "{v:?}"
    );
    // Must-allow neighbours: a regular script, and reading the FIFO's name without running it.
    for cmd in [
        "bash tools/ok.sh",
        "./tools/ok.sh",
        "ls -l tools/clean.sh",
        "cat tools/ok.sh",
    ] {
        let v = judged(
            &repo,
            &repo.payload("alice", "Bash", json!({"command": cmd})),
        );
        assert_eq!(v, Verdict::Allow, "{cmd}");
    }
    // A regular script is still read, and what it runs still decides.
    let v = judged(
        &repo,
        &repo.payload("alice", "Bash", json!({"command": "bash tools/wipe.sh"})),
    );
    assert!(blocked_by(&v, "rm.app-output"), "{v:?}");
}

#[test]
fn issue_27_a_package_json_that_is_a_fifo_is_blocked_at_once() {
    let repo = Repo::new();
    mkfifo(&repo, "web/package.json");
    let v = judged(
        &repo,
        &repo.payload(
            "alice",
            "Bash",
            json!({"command": "cd web && npm run lint"}),
        ),
    );
    assert!(
        matches!(&v, Verdict::Block(r) if r.contains("package.json")),
        "{v:?}"
    );
}

#[test]
fn issue_27_state_files_that_are_fifos_never_make_the_guard_wait() {
    // Each of the files the guard reads on every call, made a FIFO: the call is still decided
    // on everything else, at once. bob's lock is live, so alice's edit of his file is blocked.
    for rel in [
        "session-lock/config.json",
        "plans/r-ms-01-zz/plan.md",
        "session-lock/zz.lock",
    ] {
        let repo = Repo::new();
        repo.plan("api", 1, &["src/api/**"]);
        repo.lock("api", "bob", &["src/api/**"], 1, 60_000);
        mkfifo(&repo, rel);
        let edit = repo.payload(
            "alice",
            "Edit",
            json!({"file_path": repo.path("src/api/x.ts").to_string_lossy()}),
        );
        let v = judged(&repo, &edit);
        assert!(
            matches!(&v, Verdict::Block(r) if r.contains("api")),
            "{rel}: {v:?}"
        );
        let own = repo.payload("alice", "Bash", json!({"command": "git status"}));
        assert_eq!(judged(&repo, &own), Verdict::Allow, "{rel}");
    }
}

/// A payload whose `tool_input` also carries a 200-level nested value in a field no check reads.
fn deep_payload(repo: &Repo, tool: &str, input: Value) -> Vec<u8> {
    // Built as text: serde_json itself refuses to read it past 128 levels.
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let mut text = repo.payload("alice", tool, input).to_string();
    // Splice the deep value in as JSON, not as a string.
    let at = text.find("\"tool_input\":{").unwrap() + "\"tool_input\":{".len();
    text.insert_str(at, &format!("\"zz\":{deep},"));
    assert!(
        serde_json::from_str::<Value>(&text).is_err(),
        "deeper than serde_json reads"
    );
    text.into_bytes()
}

fn judged_bytes(repo: &Repo, bytes: &[u8]) -> Verdict {
    let out = crate::support::lifecycle::run_with_stdin(repo.tool("guard"), bytes);
    let err = text(&out.stderr);
    assert!(!err.contains("allowing"), "a fail-open: {err}");
    verdict(&out).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn issue_27_a_payload_deeper_than_the_reader_is_judged_on_the_fields_it_needs() {
    let repo = Repo::new();
    let rm = deep_payload(&repo, "Bash", json!({"command": "rm -rf dist"}));
    assert!(blocked_by(&judged_bytes(&repo, &rm), "rm.app-output"));
    let echo = deep_payload(&repo, "Bash", json!({"command": "echo hi"}));
    assert_eq!(judged_bytes(&repo, &echo), Verdict::Allow);
    // An MCP tool's paths may sit anywhere in its input: deeper than the guard reads is blocked.
    let mcp = deep_payload(&repo, "mcp__files__read_file", json!({"path": "README.md"}));
    assert!(matches!(judged_bytes(&repo, &mcp), Verdict::Block(r) if r.contains("nested")));
    // The same MCP call, shallow, is allowed.
    let shallow = repo.payload(
        "alice",
        "mcp__files__read_file",
        json!({"path": "README.md"}),
    );
    assert_eq!(
        judged_bytes(&repo, shallow.to_string().as_bytes()),
        Verdict::Allow
    );
}
