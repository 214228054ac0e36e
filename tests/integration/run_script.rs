//! `scripts/run.sh`, the launcher's round keys, run non-interactively against a temp repo with
//! the suite's binaries from this build: `[W]` waits for the round, archives it, then rebuilds
//! and restarts; `[R]` rebuilds and restarts at once.

use crate::support::lifecycle::{Repo, eventually, sid};
use serde_json::json;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

fn run_sh(repo: &Repo, key: &str) -> Output {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run.sh");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_status"))
        .parent()
        .expect("bin dir");
    Command::new("bash")
        .arg(script)
        .arg(key)
        .current_dir(&repo.root)
        .env("SESSION_LOCK_BIN", bin_dir)
        .env("SESSION_LOCK_HOME", &repo.home)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .stdin(Stdio::null())
        .output()
        .expect("run scripts/run.sh")
}

fn repo_with_commands() -> Repo {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.config(&json!({
        "releaseChecks": [],
        "pollSeconds": 1,
        "rebuildCommand": "echo rebuilt >> rebuilt.txt",
        "restartCommand": "echo started >> started.txt",
    }));
    repo
}

#[test]
fn w_waits_for_the_round_archives_it_then_rebuilds_and_restarts() {
    let repo = repo_with_commands();
    repo.claim("alice", "api");
    repo.write("session-lock/api.done", &json!({"stream": "api", "sessionId": sid("alice"), "releasedAt": "2026-01-01T00:00:00.000Z"}).to_string());
    let out = run_sh(&repo, "W");
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "stdout: {so}\nstderr: {se}");
    assert!(so.contains("archived the round"), "{so}");
    assert!(
        !repo.exists("session-lock/api.lock"),
        "the round's lock was archived"
    );
    let history: Vec<_> = std::fs::read_dir(repo.path("session-lock/history"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(history.len(), 1);
    assert!(
        history[0].path().join("api.lock").exists() && history[0].path().join("api.done").exists()
    );
    assert_eq!(repo.read("rebuilt.txt").as_deref(), Some("rebuilt\n"));
    assert!(
        eventually(Duration::from_secs(10), || repo
            .read("started.txt")
            .as_deref()
            == Some("started\n")),
        "the app was not started: {so}"
    );
}

#[test]
fn w_does_not_restart_while_a_stream_is_open() {
    let repo = repo_with_commands();
    repo.claim("alice", "api");
    // The wait would go on; give the barrier a timeout through a wrapper status that times out.
    let bin_dir = tempfile::tempdir().unwrap();
    let real = Path::new(env!("CARGO_BIN_EXE_status"));
    let wrapper = bin_dir.path().join("status");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --wait ] && exec '{}' \"$@\" --timeout 2; done\nexec '{}' \"$@\"\n",
            real.display(),
            real.display()
        ),
    )
    .unwrap();
    let mut perms = std::fs::metadata(&wrapper).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&wrapper, perms).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("W")
        .current_dir(&repo.root)
        .env("SESSION_LOCK_BIN", bin_dir.path())
        .env("SESSION_LOCK_HOME", &repo.home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(se.contains("nothing restarted"), "{se}");
    assert!(
        se.contains("waiting for 1 stream(s)"),
        "progress is shown: {se}"
    );
    assert!(repo.exists("session-lock/api.lock"), "nothing archived");
    assert!(!repo.exists("rebuilt.txt") && !repo.exists("started.txt"));
}

#[test]
fn r_rebuilds_and_restarts_now_and_a_failed_rebuild_stops_it() {
    let repo = repo_with_commands();
    let out = run_sh(&repo, "R");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(repo.read("rebuilt.txt").as_deref(), Some("rebuilt\n"));
    assert!(eventually(Duration::from_secs(10), || repo.exists("started.txt")));

    repo.config(&json!({"rebuildCommand": "exit 3", "restartCommand": "echo again >> again.txt"}));
    // A restart writes the new app's pid before run.sh returns (the app itself runs on in the
    // background): an unchanged pid file once run.sh is done means nothing was started.
    let first_app = repo.read("session-lock/app.pid");
    assert!(first_app.is_some(), "the first restart wrote no pid file");
    let out = run_sh(&repo, "R");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("rebuild failed"));
    assert!(
        repo.read("session-lock/app.pid") == first_app && !repo.exists("again.txt"),
        "no restart after a failed rebuild"
    );

    let out = run_sh(&repo, "X");
    assert_eq!(out.status.code(), Some(2));
}
