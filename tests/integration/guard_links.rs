//! Issue 27, item 4: a file is judged by what it is, not by the name a call gives it. A hard
//! link's other names in the repo are checked like the name written; `/proc/<pid>/cwd/…`,
//! `/proc/<pid>/root/…` and `/proc/<pid>/fd/N` resolve to the file they reach. Own links and
//! paths that reach one's own files stay writable.
#![cfg(target_os = "linux")]

use crate::support::lifecycle::{Repo, Verdict, verdict};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn bed() -> Repo {
    let repo = Repo::new();
    repo.lock("api", "bob", &["src/api/**"], 1, 1_000);
    repo.lock("web", "alice", &["src/web/**"], 1, 1_000);
    repo.write("src/api/x.ts", "export const x = 1;\n");
    repo.write("src/web/a.ts", "export const a = 1;\n");
    repo
}

fn blocked(out: &std::process::Output, why: &[&str]) {
    match verdict(out).unwrap() {
        Verdict::Block(r) => {
            for w in why {
                assert!(r.contains(w), "the reason lacks {w:?}: {r}");
            }
        }
        Verdict::Allow => panic!("allowed; expected a block saying {why:?}"),
    }
}

#[test]
fn issue_27_a_hard_link_is_checked_under_every_name_it_has() {
    let repo = bed();
    std::fs::hard_link(repo.path("src/api/x.ts"), repo.path("src/web/x.ts")).unwrap();
    blocked(&repo.edit("alice", "src/web/x.ts"), &["hard link", "'api'"]);
    blocked(
        &repo.bash("alice", "echo y >> src/web/x.ts"),
        &["hard link"],
    );
    blocked(
        &repo.bash("alice", "cd src/web && printf y > x.ts"),
        &["hard link"],
    );
    // One's own links, and files with one name, stay writable.
    std::fs::hard_link(repo.path("src/web/a.ts"), repo.path("src/web/b.ts")).unwrap();
    assert_eq!(
        verdict(&repo.edit("alice", "src/web/b.ts")).unwrap(),
        Verdict::Allow
    );
    assert_eq!(
        verdict(&repo.bash("alice", "echo y >> src/web/b.ts")).unwrap(),
        Verdict::Allow
    );
    repo.write("src/web/c.ts", "c\n");
    assert_eq!(
        verdict(&repo.edit("alice", "src/web/c.ts")).unwrap(),
        Verdict::Allow
    );
}

#[test]
fn issue_27_proc_paths_reach_the_file_they_name() {
    let repo = bed();
    // A process in the repo holding bob's file open for writing, as a session's client would.
    let mut child = Command::new("sh")
        .args(["-c", "exec 3>>src/api/x.ts; echo ready; read line"])
        .current_dir(repo.path(""))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = child.id();
    let edit = |path: String| {
        repo.guard(&repo.payload(
            "alice",
            "Write",
            serde_json::json!({"file_path": path, "content": "y"}),
        ))
    };
    let root = repo
        .path("")
        .to_string_lossy()
        .trim_end_matches('/')
        .to_string();
    for path in [
        format!("/proc/{pid}/cwd/src/api/x.ts"),
        format!("/proc/{pid}/cwd/src/api/new.ts"),
        format!("/proc/{pid}/root{root}/src/api/x.ts"),
        format!("/proc/{pid}/fd/3"),
        "/proc/self/cwd/src/api/x.ts".to_string(),
    ] {
        blocked(&edit(path), &["'api'"]);
    }
    assert_eq!(
        verdict(&edit(format!("/proc/{pid}/cwd/src/web/y.ts"))).unwrap(),
        Verdict::Allow
    );
    drop(child.stdin.take());
    child.wait().unwrap();
}
