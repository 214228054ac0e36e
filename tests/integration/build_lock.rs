//! `build-renderer` as real processes: builds never overlap, waiters see who holds the lock,
//! a holder that dies releases it, and the exit status is the build's own.
#![cfg(unix)]

use crate::support::lines::Lines;
use crate::support::repo::GitRepo;
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn tool(repo: &GitRepo) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_build-renderer"));
    c.arg("--repo")
        .arg(repo.path())
        .current_dir(repo.path())
        .env_remove("CLAUDE_CODE_SESSION_ID")
        .env_remove("CLAUDE_PROJECT_DIR")
        .stdin(Stdio::null());
    c
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

use crate::support::poll::expect as wait_for;

fn status(repo: &GitRepo) -> Value {
    let out = tool(repo)
        .args(["--status", "--json"])
        .output()
        .expect("run status");
    assert!(out.status.success(), "status failed: {:?}", text(&out));
    serde_json::from_slice(&out.stdout).expect("status json")
}

/// `build-renderer --no-wait -- BUILD…` exits 7 (busy) and its stderr names `why`.
#[track_caller]
fn assert_busy(repo: &GitRepo, build: &[&str], why: &str) {
    let busy = tool(repo)
        .arg("--no-wait")
        .arg("--")
        .args(build)
        .output()
        .expect("a --no-wait build");
    assert_eq!(busy.status.code(), Some(7), "{:?}", text(&busy));
    assert!(text(&busy).1.contains(why), "{:?}", text(&busy));
}

fn spawn_piped(mut cmd: Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn build-renderer")
}

/// Checks that a log of `start N` / `end N` lines holds `n` whole, non-overlapping builds.
#[track_caller]
fn assert_serial(log: &str, n: usize) {
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 2 * n, "log:\n{log}");
    let mut seen = std::collections::BTreeSet::new();
    for pair in lines.chunks(2) {
        let id = pair[0]
            .strip_prefix("start ")
            .unwrap_or_else(|| panic!("expected a start line, log:\n{log}"));
        assert_eq!(
            pair[1],
            format!("end {id}"),
            "builds overlapped, log:\n{log}"
        );
        assert!(seen.insert(id.to_string()), "build {id} ran twice");
    }
}

#[test]
fn concurrent_builds_run_one_after_the_other() {
    let repo = GitRepo::new();
    repo.write(
        "session-lock/config.json",
        r#"{"build": {"command": "echo \"start $N\" >> build.log; sleep 0.3; echo \"end $N\" >> build.log"}}"#,
    );
    let mut children = Vec::new();
    for n in 0..4 {
        let mut cmd = tool(&repo);
        cmd.env("N", n.to_string());
        if n % 2 == 1 {
            // Half run an explicit command under the same lock.
            cmd.args([
                "--",
                "sh",
                "-c",
                "echo \"start $N\" >> build.log; sleep 0.3; echo \"end $N\" >> build.log",
            ]);
        }
        children.push(spawn_piped(cmd));
    }
    for child in children {
        let out = child.wait_with_output().expect("wait");
        assert!(out.status.success(), "build failed: {:?}", text(&out));
    }
    assert_serial(&repo.read("build.log").unwrap_or_default(), 4);
    let s = status(&repo);
    assert_eq!(s["holding"], false);
    assert!(s["holder"].is_null(), "{s}");
    assert_eq!(s["queue"], serde_json::json!([]));
}

fn lock_record(stream: &str, session: &str) -> String {
    let now = session_lock::time::iso(session_lock::time::now_ms());
    serde_json::json!({
        "stream": stream, "sessionId": session, "owns": ["src/**"],
        "plan": format!("plans/r-ms-01-{stream}/plan.md"), "milestone": 1,
        "claimedAt": now, "heartbeatAt": now, "round": 0, "cwd": "/"
    })
    .to_string()
}

#[test]
fn waiters_see_the_holder_and_the_queue() {
    let repo = GitRepo::new();
    let s1 = "aaaa1111-0000-4000-8000-000000000001";
    let s2 = "bbbb2222-0000-4000-8000-000000000002";
    repo.write("session-lock/api.lock", &lock_record("api", s1));
    repo.write("session-lock/ui.lock", &lock_record("ui", s2));
    repo.write(
        "session-lock/config.json",
        r#"{"build": {"reportSeconds": 1}}"#,
    );

    let mut holder = tool(&repo);
    holder.env("CLAUDE_CODE_SESSION_ID", s1).args([
        "--",
        "sh",
        "-c",
        "touch started; while [ ! -e release ]; do sleep 0.05; done",
    ]);
    let holder = spawn_piped(holder);
    wait_for("the holder's build", Duration::from_secs(20), || {
        repo.path().join("started").exists()
    });

    let s = status(&repo);
    assert_eq!(s["holding"], true, "{s}");
    assert_eq!(s["holder"]["stream"], "api");
    assert_eq!(s["holder"]["sessionId"], s1);
    assert_eq!(s["holder"]["pid"], holder.id());
    assert!(s["holder"]["command"].as_str().unwrap().contains("release"));
    assert!(s["holder"]["since"].as_str().unwrap().ends_with('Z'));

    let text_status = tool(&repo).arg("--status").output().expect("status");
    let (out, _) = text(&text_status);
    assert!(
        out.contains("build lock: held by stream api (session aaaa1111), pid"),
        "{out}"
    );

    assert_busy(&repo, &["true"], "stream api (session aaaa1111)");

    let started = Instant::now();
    let timeout = tool(&repo)
        .args(["--timeout", "1", "--", "true"])
        .output()
        .expect("timeout");
    assert_eq!(timeout.status.code(), Some(5), "{:?}", text(&timeout));
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(
        text(&timeout).1.contains("no build lock within 1s"),
        "{:?}",
        text(&timeout)
    );

    // Two waiters: one from the ui stream's session, one from outside any session.
    let mut w1 = tool(&repo);
    w1.env("CLAUDE_CODE_SESSION_ID", s2).args([
        "--",
        "sh",
        "-c",
        "echo w1 >> order.log; sleep 0.5",
    ]);
    let mut w1 = spawn_piped(w1);
    let mut w2 = tool(&repo);
    w2.args(["--", "sh", "-c", "echo w2 >> order.log; sleep 0.5"]);
    let mut w2 = spawn_piped(w2);
    let (err1, err2) = (Lines::stderr(&mut w1), Lines::stderr(&mut w2));
    let (p1, p2) = (w1.id(), w2.id());
    wait_for("both waiters in the queue", Duration::from_secs(20), || {
        status(&repo)["queue"]
            .as_array()
            .is_some_and(|q| q.len() == 2)
    });
    let s = status(&repo);
    let queue = s["queue"].as_array().unwrap();
    let pids: Vec<u64> = queue.iter().map(|w| w["pid"].as_u64().unwrap()).collect();
    assert!(
        pids.contains(&(p1 as u64)) && pids.contains(&(p2 as u64)),
        "{s}"
    );
    let ui = queue.iter().find(|w| w["pid"] == p1).unwrap();
    assert_eq!(ui["stream"], "ui");
    assert_eq!(ui["sessionId"], s2);
    // The lock is let go only once both waiters said they still wait (reportSeconds is 1).
    for err in [&err1, &err2] {
        assert!(
            err.wait_for(Duration::from_secs(20), |l| l.contains("still waiting ("))
                .is_some(),
            "no still-waiting line: {}",
            err.text()
        );
    }

    std::fs::write(repo.path().join("release"), "").expect("release");
    let h = holder.wait_with_output().expect("holder");
    assert!(h.status.success(), "{:?}", text(&h));
    let o1 = w1.wait_with_output().expect("w1");
    let o2 = w2.wait_with_output().expect("w2");
    assert!(o1.status.success() && o2.status.success());
    let (e1, e2) = (err1.finish(), err2.finish());
    for e in [&e1, &e2] {
        assert!(
            e.contains("waiting: the build lock is held by stream api (session aaaa1111), pid"),
            "{e}"
        );
        assert!(e.contains("still waiting (1s)"), "{e}");
        assert!(e.contains("got the build lock after"), "{e}");
    }
    // Whoever went second saw the lock change hands to the first.
    let order = repo.read("order.log").unwrap_or_default();
    let second = if order.starts_with("w1") { &e2 } else { &e1 };
    assert!(
        second.contains("the build lock changed hands; now held by"),
        "{second}"
    );
    let s = status(&repo);
    assert_eq!(s["holding"], false, "{s}");
    assert!(s["holder"].is_null(), "{s}");
    assert_eq!(s["queue"], serde_json::json!([]), "waiters leave the queue");
    assert!(
        std::fs::read_dir(repo.path().join("session-lock/build.queue"))
            .expect("queue dir")
            .next()
            .is_none(),
        "queue records removed"
    );
}

#[test]
fn a_killed_holder_releases_the_lock() {
    let repo = GitRepo::new();
    // The holder and its build in a process group of their own, killed together (a session
    // whose whole command tree dies).
    let mut holder = tool(&repo);
    holder
        .args(["--", "sh", "-c", "touch started; exec sleep 30"])
        .process_group(0);
    let mut holder = spawn_piped(holder);
    wait_for("the holder's build", Duration::from_secs(20), || {
        repo.path().join("started").exists()
    });
    assert_eq!(status(&repo)["holding"], true);
    let pgid = holder.id();
    let kill = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .status()
        .expect("kill");
    assert!(kill.success());
    holder.wait().expect("reap holder");

    let s = status(&repo);
    assert_eq!(s["holding"], false, "a dead holder does not hold: {s}");
    assert_eq!(s["holder"]["alive"], false, "{s}");
    assert_eq!(s["holder"]["pid"], pgid);
    let text_status = tool(&repo).arg("--status").output().expect("status");
    assert!(
        text(&text_status)
            .0
            .contains("build lock: free; the last holder died without releasing it"),
        "{:?}",
        text(&text_status)
    );

    let started = Instant::now();
    let next = tool(&repo)
        .args(["--no-wait", "--", "sh", "-c", "echo next > next.out"])
        .output()
        .expect("next build");
    assert!(next.status.success(), "{:?}", text(&next));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(repo.read("next.out").unwrap_or_default(), "next\n");
    assert!(
        text(&next)
            .1
            .contains("the previous holder died without releasing the lock"),
        "{:?}",
        text(&next)
    );
    let s = status(&repo);
    assert!(
        s["holder"].is_null(),
        "the next build replaced the dead record: {s}"
    );
}

#[test]
fn the_build_of_a_killed_holder_ends_before_the_next_starts() {
    let repo = GitRepo::new();
    // Only the holder is killed; its build goes on (until the test creates `go`) and must
    // finish before another build starts.
    let mut holder = tool(&repo);
    holder.args([
        "--",
        "sh",
        "-c",
        "echo 'start 1' >> build.log; touch started; while [ ! -e go ]; do sleep 0.05; done; echo 'end 1' >> build.log",
    ]);
    let mut holder = spawn_piped(holder);
    wait_for("the holder's build", Duration::from_secs(20), || {
        repo.path().join("started").exists()
    });
    holder.kill().expect("SIGKILL the holder");
    holder.wait().expect("reap holder");

    let s = status(&repo);
    assert_eq!(s["holding"], false, "{s}");
    assert_eq!(s["holder"]["orphanBuildRunning"], true, "{s}");

    let mut next = tool(&repo);
    next.args([
        "--",
        "sh",
        "-c",
        "echo 'start 2' >> build.log; echo 'end 2' >> build.log",
    ]);
    let mut next = spawn_piped(next);
    let stderr = Lines::stderr(&mut next);
    assert!(
        stderr
            .wait_for(Duration::from_secs(30), |l| l
                .contains("is still running; waiting for it to end"))
            .is_some(),
        "the next build did not wait for the orphan: {}",
        stderr.text()
    );
    assert!(
        !repo
            .read("build.log")
            .unwrap_or_default()
            .contains("start 2"),
        "the next build started while the orphan ran"
    );
    repo.write("go", "");
    let status = next.wait().expect("next build");
    let stderr = stderr.finish();
    assert!(status.success(), "{stderr}");
    assert_serial(&repo.read("build.log").unwrap_or_default(), 2);
    assert!(
        repo.read("build.log")
            .unwrap_or_default()
            .starts_with("start 1\nend 1\n")
    );
}

/// The holder is killed after its build started but before it recorded the build's pid: the
/// record written before the start names the build by the tag in its environment, so the
/// orphan is still found and the next build does not start beside it.
#[test]
fn a_holder_killed_before_recording_its_builds_pid_still_names_the_build() {
    let repo = GitRepo::new();
    let dead = {
        let mut c = Command::new("true").spawn().expect("spawn true");
        let pid = c.id();
        c.wait().expect("reap true");
        pid
    };
    let tag = format!("{dead}-1764560000000");
    repo.write(
        "session-lock/build.holder.json",
        &serde_json::json!({
            "pid": dead, "procStart": "1", "command": "npx vite build",
            "since": "2026-11-30T05:40:00.123Z", "buildTag": tag,
        })
        .to_string(),
    );
    assert_eq!(
        status(&repo)["holder"]["orphanBuildRunning"],
        false,
        "nothing carries the tag yet"
    );

    let mut orphan = Command::new("sh")
        .args([
            "-c",
            "touch running; while [ ! -e go ]; do sleep 0.05; done",
        ])
        .current_dir(repo.path())
        .env("SESSION_LOCK_BUILD", &tag)
        .spawn()
        .expect("spawn the orphan build");
    wait_for("the orphan build", Duration::from_secs(20), || {
        repo.exists("running")
    });
    let s = status(&repo);
    assert_eq!(s["holding"], false, "{s}");
    assert_eq!(s["holder"]["orphanBuildRunning"], true, "{s}");

    assert_busy(
        &repo,
        &["sh", "-c", "echo next > next.out"],
        "the interrupted build (pid ",
    );
    assert!(
        !repo.exists("next.out"),
        "the next build ran beside the orphan"
    );

    repo.write("go", "");
    orphan.wait().expect("reap the orphan");
    let next = tool(&repo)
        .args([
            "--no-wait",
            "--",
            "sh",
            "-c",
            "echo \"$SESSION_LOCK_BUILD\" > next.out",
        ])
        .output()
        .expect("next build");
    assert!(next.status.success(), "{:?}", text(&next));
    let seen = repo.read("next.out").unwrap_or_default();
    let seen = seen.trim();
    let parts: Vec<&str> = seen.split('-').collect();
    assert!(
        parts.len() == 2 && parts.iter().all(|p| p.parse::<u64>().is_ok()) && seen != tag,
        "the build runs with its own tag, `<holder pid>-<ms>`: {seen:?}"
    );
}

#[test]
fn the_exit_status_is_the_builds_own() {
    let repo = GitRepo::new();
    let run = |args: &[&str]| tool(&repo).args(args).output().expect("run");

    let ok = run(&["--", "sh", "-c", "echo built"]);
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(text(&ok).0, "built\n", "output streams through");

    let three = run(&["--", "sh", "-c", "exit 3"]);
    assert_eq!(three.status.code(), Some(3), "{:?}", text(&three));
    assert!(text(&three).1.contains("failed with exit 3"));

    let killed = run(&["--", "sh", "-c", "kill -KILL $$"]);
    assert_eq!(killed.status.code(), Some(1));
    assert!(
        text(&killed).1.contains("was killed by signal 9"),
        "{:?}",
        text(&killed)
    );

    let missing = run(&["--", "no-such-build-command-here"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing).1.contains("cannot start"),
        "{:?}",
        text(&missing)
    );

    // --json: one summary on stdout, the build's output on stderr.
    let json = run(&["--json", "--", "sh", "-c", "echo to-stdout; exit 4"]);
    assert_eq!(json.status.code(), Some(4));
    let (out, err) = text(&json);
    let v: Value = serde_json::from_str(&out).expect("summary json");
    assert_eq!(v["exitCode"], 4);
    assert_eq!(v["command"], "sh -c 'echo to-stdout; exit 4'");
    assert!(err.contains("to-stdout"), "{err}");

    // A lock-free tree after all of it.
    let s = status(&repo);
    assert_eq!(s["holding"], false);
    assert!(s["holder"].is_null());
}

#[test]
fn the_configured_command_runs_from_the_repo_root() {
    let repo = GitRepo::new();
    repo.write(
        "session-lock/config.json",
        r#"{"build": {"command": "pwd > where.txt"}}"#,
    );
    std::fs::create_dir_all(repo.path().join("src/deep")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_build-renderer"))
        .current_dir(repo.path().join("src/deep"))
        .env_remove("CLAUDE_PROJECT_DIR")
        .output()
        .expect("run");
    assert!(out.status.success(), "{:?}", text(&out));
    assert_eq!(
        repo.read("where.txt").unwrap_or_default().trim(),
        repo.path().to_str().unwrap()
    );
}

#[test]
fn a_bad_build_config_names_the_key() {
    let repo = GitRepo::new();
    repo.write(
        "session-lock/config.json",
        r#"{"build": {"command": ["npx"]}}"#,
    );
    let out = tool(&repo).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).1.contains("key 'build.command'"),
        "{:?}",
        text(&out)
    );
    repo.write("session-lock/config.json", r#"{"build": {"cmd": "x"}}"#);
    let out = tool(&repo).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("key 'build.cmd'"), "{:?}", text(&out));
}
