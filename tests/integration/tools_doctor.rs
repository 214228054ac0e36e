//! `guard doctor`: one check per cause, each with its own fix (issue 30: four different causes
//! all said "install the suite"), a lock check, and a full disk that is not called writable; and
//! the guard saying once that its block log cannot be written.

use crate::support::lifecycle::{Repo, run_with_stdin, sid, text};
use crate::tools_install::{guard_in, install, path_with_suite};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

fn doctor(repo: &Repo, path: &str) -> (i32, Vec<Value>, String) {
    let mut c = repo.tool("guard");
    c.args(["doctor", "--json"])
        .env("PATH", path)
        .env("HOME", &repo.home)
        .env_remove("SESSION_LOCK_GUARD");
    let (code, out, err) = repo.run(c);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, v["checks"].as_array().unwrap().clone(), out)
}

fn row<'a>(checks: &'a [Value], name: &str) -> Option<&'a Value> {
    checks.iter().find(|c| c["name"] == name)
}

/// The failing rows: (name, fix).
fn failing(checks: &[Value]) -> Vec<(String, String)> {
    checks
        .iter()
        .filter(|c| c["level"] == "fail")
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["fix"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn detail(checks: &[Value], name: &str) -> String {
    row(checks, name)
        .and_then(|c| c["detail"].as_str())
        .unwrap_or_else(|| panic!("no {name} row: {checks:?}"))
        .to_string()
}

#[test]
fn doctor_passes_a_wired_repo() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let (code, checks, out) = doctor(&repo, &path_with_suite(true));
    assert_eq!(code, 1, "not wired yet: {out}");
    assert_eq!(failing(&checks)[0].0, "hooks", "{out}");
    assert!(failing(&checks)[0].1.starts_with("guard install"), "{out}");

    assert_eq!(install(&repo, &[]).0, 0);
    let mut c = repo.tool("guard");
    c.arg("doctor")
        .env("PATH", path_with_suite(true))
        .env("HOME", &repo.home)
        .env_remove("SESSION_LOCK_GUARD");
    let (code, out, err) = repo.run(c);
    assert_eq!(code, 0, "{out}{err}");
    for line in [
        "ok   hooks: every event runs",
        "ok   hook program: ",
        "ok   guard runs: ",
        "ok   versions: ",
        "ok   hooks enabled: ",
        "ok   config: no session-lock/config.json: the protocol's defaults; release checks: ",
        "ok   plans: 1 stream(s): api",
        "ok   locks: 0 live, 0 released",
        "ok   state folder: ",
        "ok   status line: ours, in ",
        "ok   messaging tools: the .mcp.json server lists list_session_agents, send_session_message",
    ] {
        assert!(out.contains(line), "{line}: {out}");
    }
    assert!(out.contains("claude cli: "), "{out}");
    assert!(!repo.exists("session-lock/blocks.jsonl"));
}

/// A folder with one executable `guard` that is some other program.
fn foreign_guard(repo: &Repo) -> PathBuf {
    let dir = repo.base.join("other-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let g = dir.join("guard");
    std::fs::write(
        &g,
        "#!/bin/sh\necho 'netguard 3.1 (firewall rules)'\nexit 0\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&g, std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

#[test]
fn each_cause_is_its_own_check_with_its_own_fix() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    assert_eq!(install(&repo, &[]).0, 0);
    let mut fixes: Vec<(String, String, String)> = Vec::new();
    let mut one = |cause: &str, checks: &[Value], name: &str| {
        let f = failing(checks);
        assert_eq!(f.len(), 1, "{cause}: exactly one failing check: {f:?}");
        assert_eq!(f[0].0, name, "{cause}: {f:?}");
        assert!(!f[0].1.is_empty(), "{cause}: a fix");
        fixes.push((cause.to_string(), f[0].0.clone(), f[0].1.clone()));
    };

    // No guard on this machine: the launcher would block every call.
    let (_, checks, _) = doctor(&repo, &path_with_suite(false));
    one("no guard here", &checks, "hook program");
    assert!(detail(&checks, "hook program").contains("finds no guard"));
    assert!(row(&checks, "guard runs").is_none(), "nothing to run");

    // A foreign program named guard first on PATH.
    let other = foreign_guard(&repo);
    let path = format!("{}:{}", other.display(), path_with_suite(true));
    let (_, checks, _) = doctor(&repo, &path);
    one("a foreign guard", &checks, "hook program");
    assert!(
        detail(&checks, "hook program")
            .contains("is not session-lock's guard: its --version says 'netguard 3.1"),
        "{checks:?}"
    );

    // Hooks that name a guard that is not there (a --guard install from another machine).
    let gone = repo.base.join("gone/bin/guard");
    let (code, _, err) = guard_in(
        &repo,
        &repo.root,
        &["install", "--guard", gone.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{err}");
    let (_, checks, _) = doctor(&repo, &path_with_suite(true));
    one("a wrong hook path", &checks, "hook program");
    assert!(detail(&checks, "hook program").contains("which does not exist here"));
    assert_eq!(install(&repo, &[]).0, 0, "back to the launcher");

    // A corrupt lock: the guard still answers (with a notice); the lock check names the file.
    repo.write("session-lock/api.lock", "{\"stream\": ");
    let (_, checks, _) = doctor(&repo, &path_with_suite(true));
    one("a corrupt lock", &checks, "locks");
    assert!(detail(&checks, "locks").contains("api.lock"));
    assert_eq!(
        row(&checks, "guard runs").unwrap()["level"],
        "ok",
        "{checks:?}"
    );
    std::fs::remove_file(repo.path("session-lock/api.lock")).unwrap();

    // A config.json that does not load.
    repo.write("session-lock/config.json", "{\"heartbeatStale\": 3}");
    let (_, checks, _) = doctor(&repo, &path_with_suite(true));
    one("a bad config", &checks, "config");
    assert!(detail(&checks, "config").contains("heartbeatStale"));
    assert_eq!(
        row(&checks, "guard runs").unwrap()["level"],
        "ok",
        "{checks:?}"
    );
    std::fs::remove_file(repo.path("session-lock/config.json")).unwrap();

    // Each cause has a fix of its own; none of them but the missing guard says install the suite.
    let mut distinct: Vec<&str> = fixes.iter().map(|(_, _, f)| f.as_str()).collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), fixes.len(), "{fixes:#?}");
    for (cause, _, fix) in &fixes {
        assert_eq!(
            fix.contains("scripts/setup"),
            cause == "no guard here",
            "{cause}: {fix}"
        );
    }
}

#[test]
fn a_stale_lock_is_a_warning_that_says_it_no_longer_protects() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    assert_eq!(install(&repo, &[]).0, 0);
    repo.lock("api", "bob", &["src/api/**"], 1, 2 * 3_600_000);
    let (code, checks, out) = doctor(&repo, &path_with_suite(true));
    assert_eq!(code, 0, "{out}");
    let locks = row(&checks, "locks").unwrap();
    assert_eq!(locks["level"], "warn", "{locks}");
    let d = locks["detail"].as_str().unwrap();
    assert!(
        d.contains("stale: api (session ")
            && d.contains("heartbeat 2h00m ago")
            && d.contains("no longer protects"),
        "{d}"
    );
    assert!(
        locks["fix"]
            .as_str()
            .unwrap()
            .contains("status --wait --archive")
    );
}

/// A tiny tmpfs mounted on a folder for the test, unmounted on drop. `None` (the test skips,
/// saying why) where this user may not mount; under CI that is a failure.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs(dir.to_path_buf())),
            other => {
                let why = match other {
                    Ok(o) => text(&o.stderr),
                    Err(e) => e.to_string(),
                };
                assert!(
                    std::env::var_os("CI").is_none(),
                    "cannot mount a tmpfs for the full-disk test (it needs root): {why}"
                );
                eprintln!("skipped: the full-disk test mounts a tmpfs, which needs root: {why}");
                None
            }
        }
    }

    /// Fills the file system: one file grown until no byte more fits.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.0.join(".fill")).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        while f.write_all(&[0]).is_ok() {}
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_is_not_writable_and_the_guard_says_once_that_its_log_is_lost() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    assert_eq!(install(&repo, &[]).0, 0);
    // session-lock/ on a file system of its own, its files copied in, then filled.
    let saved = repo.base.join("saved");
    std::fs::rename(repo.path("session-lock"), &saved).unwrap();
    let Some(fs) = Tmpfs::mount(&repo.path("session-lock"), "256k") else {
        return;
    };
    for e in std::fs::read_dir(&saved).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), repo.path("session-lock").join(e.file_name())).unwrap();
        }
    }
    fs.fill();
    let (code, checks, out) = doctor(&repo, &path_with_suite(true));
    assert_eq!(code, 1, "{out}");
    let state = row(&checks, "state folder").unwrap();
    assert_eq!(state["level"], "fail", "{state}");
    assert!(
        state["detail"]
            .as_str()
            .unwrap()
            .contains("No space left on device"),
        "{state}"
    );
    assert!(
        state["fix"]
            .as_str()
            .unwrap()
            .starts_with("free space on the file system of "),
        "{state}"
    );

    // A deny: decided as ever, and the lost log line said once for the session.
    let payload = repo.payload("alice", "Bash", json!({"command": "git add -A"}));
    let deny = |p: &Value| {
        let mut c = repo.scrubbed(Command::new(crate::support::lifecycle::bin("guard")));
        c.stdin(std::process::Stdio::piped());
        run_with_stdin(c, p.to_string().as_bytes())
    };
    let first = deny(&payload);
    assert!(
        text(&first.stdout).contains("\"permissionDecision\":\"deny\""),
        "{}",
        text(&first.stdout)
    );
    let err = text(&first.stderr);
    assert!(
        err.contains("cannot be written")
            && err.contains("blocks.jsonl")
            && err.contains("No space left"),
        "{err}"
    );
    let again = deny(&payload);
    assert!(text(&again.stdout).contains("deny"));
    assert!(
        !text(&again.stderr).contains("blocks.jsonl"),
        "said once: {}",
        text(&again.stderr)
    );
    let other = deny(&repo.payload("bob", "Bash", json!({"command": "git add ."})));
    assert!(
        text(&other.stderr).contains("blocks.jsonl"),
        "once per session"
    );
    assert!(sid("alice") != sid("bob"));
}
