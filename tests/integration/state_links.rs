//! Issue 29, item 3: symbolic links planted in the suite's state folders are never followed by
//! its writes. Each case plants a link pointing out of the repo (or out of the state home), runs
//! the real binary that writes there, and checks that nothing arrived at the link's target and
//! that the refusal names the link.

use crate::support::lifecycle::{Repo, Verdict, text, verdict};
use crate::support::messaging::{Bed, Spec};
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::Path;

/// Every file below `dir` (none when it is empty or missing).
fn files_in(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| !e.file_type().is_dir())
        .map(|e| e.path().display().to_string())
        .collect()
}

#[test]
fn issue_29_a_block_log_that_is_a_link_is_not_written_through() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.claim("alice", "api");
    let outside = repo.base.join("outside.jsonl");
    std::fs::write(&outside, "").unwrap();
    symlink(&outside, repo.path("session-lock/blocks.jsonl")).unwrap();
    let out = repo.edit("bob", "src/api/x.ts");
    assert!(
        matches!(verdict(&out), Ok(Verdict::Block(_))),
        "the decision stands: {out:?}"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "", "followed");
    let err = text(&out.stderr);
    assert!(
        err.contains("refusing to write")
            && err.contains("blocks.jsonl")
            && err.contains("symbolic link"),
        "{err}"
    );
}

#[test]
fn issue_29_an_index_folder_that_is_a_link_is_not_written_through() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let outside = repo.base.join("outside-index");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(repo.path("session-lock")).unwrap();
    symlink(&outside, repo.path("session-lock/.index")).unwrap();
    repo.claim("alice", "api");
    let out = repo.edit("bob", "src/api/x.ts");
    assert!(
        matches!(verdict(&out), Ok(Verdict::Block(_))),
        "decided from the lock files: {out:?}"
    );
    assert_eq!(files_in(&outside), Vec::<String>::new(), "followed");
    let err = text(&out.stderr);
    assert!(
        err.contains("refusing to write")
            && err.contains(".index")
            && err.contains("symbolic link"),
        "{err}"
    );
}

#[test]
fn issue_29_an_archive_into_a_history_link_is_refused_and_moves_nothing() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.config(&json!({"releaseChecks": []}));
    repo.claim("alice", "api");
    let mut release = repo.tool_as("release", "alice");
    release.arg("api");
    let (code, _, err) = repo.run(release);
    assert_eq!(code, 0, "{err}");
    let outside = repo.base.join("outside-history");
    std::fs::create_dir_all(&outside).unwrap();
    symlink(&outside, repo.path("session-lock/history")).unwrap();
    let mut archive = repo.tool("status");
    archive.arg("--archive");
    let (code, out, err) = repo.run(archive);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        err.contains("history") && err.contains("symbolic link"),
        "{err}"
    );
    assert_eq!(files_in(&outside), Vec::<String>::new(), "followed");
    assert!(repo.exists("session-lock/api.lock") && repo.exists("session-lock/api.done"));
}

#[test]
fn issue_29_an_outbox_ledger_that_is_a_link_is_not_written_through() {
    let mut bed = Bed::new();
    let a = bed.live(Spec::named("alpha"));
    let _b = bed.live(Spec::named("beta"));
    let ledger = bed.outbox_path(&a.id);
    std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
    let outside = bed.home.join("outside.jsonl");
    std::fs::write(&outside, "").unwrap();
    symlink(&outside, &ledger).unwrap();
    let (code, v, err) = bed.run(Some(&a), &["send", "--to", "beta", "hello"]);
    assert_ne!(code, 0, "{v} {err}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "", "followed");
    let said = format!("{v} {err}");
    assert!(
        said.contains("refusing to write") && said.contains("symbolic link"),
        "{said}"
    );
}

#[test]
fn issue_29_a_session_registry_folder_that_is_a_link_is_not_written_through() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let outside = repo.base.join("outside-sessions");
    std::fs::create_dir_all(&outside).unwrap();
    symlink(&outside, repo.home.join("sessions")).unwrap();
    // With its client's pid the guard lists the session in the registry below the state home.
    let mut guard = repo.tool("guard");
    guard.env("CLAUDE_PID", std::process::id().to_string());
    let payload = repo.payload("alice", "Bash", json!({"command": "ls"}));
    let out = crate::support::lifecycle::run_with_stdin(guard, payload.to_string().as_bytes());
    assert_eq!(verdict(&out), Ok(Verdict::Allow), "{out:?}");
    assert_eq!(files_in(&outside), Vec::<String>::new(), "followed");
}
