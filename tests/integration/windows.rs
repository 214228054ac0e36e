//! The Windows build of the tools under wine (run by `scripts/test-windows`; skipped, saying
//! so, elsewhere): the repo addressed by every Windows path form, a stream's lifecycle through
//! `guard.exe`, `claim.exe`, `status.exe` and `wait-milestone.exe`, two `build-renderer.exe`
//! builds serialized through the Windows file lock, `scripts\run.bat`'s keys, and the process
//! facts the suite relies on (a live pid with its start time).
//!
//! The test process makes the repos on the Linux side (the prefix has no Windows git); the
//! tools see them on wine's drive `Z:`.

use crate::support::lifecycle::{Repo, Verdict, eventually, sid, text, verdict};
use crate::support::wine::{
    Form, Host, Wine, Witness, client_command, require_wine, start_as_client, win,
};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// A Windows tool for `repo`, run from its root with a clean environment.
fn tool(wine: &Wine, repo: &Repo, name: &str) -> Command {
    let mut c = repo.scrubbed(wine.command(name));
    c.env("SESSION_LOCK_HOME", win(&repo.home));
    c
}

/// `guard.exe` with `payload` on stdin.
fn guard(wine: &'static Wine, repo: &Repo, payload: &Value) -> Output {
    Host::Windows(wine, Form::Back)
        .run(|| tool(wine, repo, "guard"), payload.to_string().as_bytes())
}

/// A PreToolUse payload of `who` from `cwd` (Windows form).
fn payload(who: &str, cwd: &str, tool: &str, input: Value) -> Value {
    json!({
        "session_id": sid(who),
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_windows",
    })
}

/// A Windows tool run by session `who` from its client process (see
/// `support::wine::start_as_client`), started; `args` added before it starts.
fn start_as(
    wine: &Wine,
    repo: &Repo,
    name: &str,
    who: &str,
    args: impl FnOnce(&mut Command),
) -> std::process::Child {
    let mut c = repo.scrubbed(client_command(wine, name));
    c.env("SESSION_LOCK_HOME", win(&repo.home))
        .env("CLAUDE_CODE_SESSION_ID", sid(who));
    args(&mut c);
    start_as_client(c, &repo.home, &sid(who), &win(&repo.root))
}

/// [`start_as`], run to its end: (exit code, stdout, stderr).
fn run_as(
    wine: &Wine,
    repo: &Repo,
    name: &str,
    who: &str,
    args: impl FnOnce(&mut Command),
) -> (i32, String, String) {
    let child = start_as(wine, repo, name, who, args);
    let out = crate::support::lifecycle::wait_within(child, Duration::from_secs(120));
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

fn run(mut cmd: Command) -> (i32, String, String) {
    let out = cmd.output().expect("run a Windows tool under wine");
    (
        out.status.code().unwrap_or(-1),
        text(&out.stdout),
        text(&out.stderr),
    )
}

/// `who` claims `stream` through `guard.exe` (as its Bash tool would), cwd in `form`.
fn claim_via_guard(wine: &'static Wine, repo: &Repo, who: &str, stream: &str, form: Form) {
    let p = payload(
        who,
        &form.of(&repo.root),
        "Bash",
        json!({"command": format!("claim {stream}")}),
    );
    let out = guard(wine, repo, &p);
    assert_eq!(verdict(&out), Ok(Verdict::Allow), "{}", text(&out.stderr));
    let lock = repo.lock_json(stream).expect("guard.exe recorded no lock");
    assert_eq!(lock["sessionId"], sid(who));
}

#[test]
fn every_windows_path_form_of_an_owned_file_is_the_owners() {
    let wine = require_wine!();
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    claim_via_guard(wine, &repo, "alice", "api", Form::Back);
    for cwd_form in Form::ALL {
        let cwd = cwd_form.of(&repo.root);
        for file_form in Form::ALL {
            let owned = file_form.join(&repo.root, "src/api/x.ts");
            let free = file_form.join(&repo.root, "src/ui/y.ts");
            let edit = |who: &str, file: &str| {
                let input = json!({"file_path": file, "old_string": "a", "new_string": "b"});
                verdict(&guard(wine, &repo, &payload(who, &cwd, "Edit", input)))
            };
            match edit("bob", &owned) {
                Ok(Verdict::Block(reason)) => assert!(
                    reason.contains("src/api/x.ts is owned by stream 'api'"),
                    "cwd {cwd_form:?}, file {file_form:?}: {reason}"
                ),
                other => panic!("cwd {cwd_form:?}, file {file_form:?} ({owned}): {other:?}"),
            }
            assert_eq!(
                edit("alice", &owned),
                Ok(Verdict::Allow),
                "the owner, cwd {cwd_form:?}, file {file_form:?}"
            );
            assert_eq!(
                edit("bob", &free),
                Ok(Verdict::Allow),
                "an unowned file, cwd {cwd_form:?}, file {file_form:?}"
            );
        }
    }
    // The issue's own example: the case-folded path of an owned file.
    let shouted = format!("{}\\SRC\\API\\X.TS", win(&repo.root).to_uppercase());
    let input = json!({"file_path": shouted, "content": "x"});
    let out = guard(
        wine,
        &repo,
        &payload("bob", &win(&repo.root), "Write", input),
    );
    assert!(
        matches!(verdict(&out), Ok(Verdict::Block(_))),
        "{}",
        text(&out.stdout)
    );
}

/// Issue 11: a path rooted without a drive, from every form of the cwd. The file tools and
/// PowerShell read it on the cwd's drive (`Z:`, wine's drive of the repo); Git Bash reads
/// `/z/…` as that drive and any other `/…` below its MSYS root, outside the repo.
#[test]
fn issue_11_rooted_paths_without_a_drive_from_every_cwd_form() {
    let wine = require_wine!();
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    claim_via_guard(wine, &repo, "alice", "api", Form::Back);
    for form in Form::ALL {
        let host = Host::Windows(wine, form);
        let cwd = form.of(&repo.root);
        let back = format!("{}\\src\\api\\x.ts", host.no_drive(&repo.root, false));
        let slash = format!("{}/src/api/x.ts", host.no_drive(&repo.root, true));
        let msys = format!("{}/src/api/x.ts", host.msys(&repo.root));
        let ask = |who: &str, tool: &str, input: Value| {
            verdict(&guard(wine, &repo, &payload(who, &cwd, tool, input)))
        };
        let owned = |v: Result<Verdict, String>, what: &str| match v {
            Ok(Verdict::Block(reason)) => assert!(
                reason.contains("src/api/x.ts is owned by stream 'api'"),
                "{what}, cwd {form:?}: {reason}"
            ),
            other => panic!("{what}, cwd {form:?}: {other:?}"),
        };
        let edit = json!({"file_path": back, "old_string": "a", "new_string": "b"});
        owned(ask("bob", "Edit", edit.clone()), &format!("Edit {back}"));
        assert_eq!(
            ask("alice", "Edit", edit),
            Ok(Verdict::Allow),
            "the owner, cwd {form:?}"
        );
        let write = json!({"file_path": slash, "content": "x"});
        owned(ask("bob", "Write", write), &format!("Write {slash}"));
        let ps = json!({"command": format!("Set-Content -Path {back} -Value x")});
        owned(
            ask("bob", "PowerShell", ps),
            &format!("PowerShell on {back}"),
        );
        let bash = json!({"command": format!("echo x > {msys}")});
        owned(ask("bob", "Bash", bash), &format!("Git Bash on {msys}"));
        let msys_root = json!({"command": format!("echo x > {slash}")});
        assert_eq!(
            ask("bob", "Bash", msys_root),
            Ok(Verdict::Allow),
            "Git Bash's {slash} is below its MSYS root, cwd {form:?}"
        );
    }
}

#[test]
fn a_stream_lifecycle_with_windows_paths() {
    let wine = require_wine!();
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    claim_via_guard(wine, &repo, "alice", "api", Form::Forward);
    claim_via_guard(wine, &repo, "bob", "ui", Form::LowerDrive);

    // claim.exe, run from alice's Windows client process (identity is the process tree, not
    // the environment), reads back the lock guard.exe wrote, from the repo given by --repo.
    let (code, out, err) = run_as(wine, &repo, "claim", "alice", |c| {
        c.args(["api", "--quiet", "--repo"])
            .arg(Form::Back.of(&repo.root));
    });
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("Stream 'api' (milestone 01, round 0) is held by this session alice000."),
        "{out}"
    );
    assert!(
        out.contains("ui — session bob00000, active"),
        "the other stream is listed: {out}"
    );

    // The same from the Linux side, below no Windows client: a person at a terminal.
    let mut c = tool(wine, &repo, "claim");
    c.args(["api", "--quiet"]);
    let (code, out, err) = run(c);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("is held by session alice000.")
            && out.contains("(this command runs outside every session)"),
        "{out}"
    );

    // status.exe, the repo found from the current folder, then named with forward slashes.
    let (code, out, err) = run(tool(wine, &repo, "status"));
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("api") && out.contains("alice000"), "{out}");
    let mut c = tool(wine, &repo, "status");
    c.args(["--json", "--repo"])
        .arg(Form::Forward.of(&repo.root));
    let (code, out, err) = run(c);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert!(
        out.contains("\"api\"") && out.contains(&sid("alice")),
        "{v}"
    );

    // wait-milestone.exe: alice waits for ui while keeping api fresh, the repo given by
    // CLAUDE_PROJECT_DIR in Windows form from a folder outside the repo; ui's done marker
    // (what release writes) ends the wait. api's heartbeat, set back first, moving to now
    // shows the wait is under way.
    repo.age_lock("api", 10 * 60_000);
    let aged = repo.heartbeat_ms("api").expect("api's heartbeat");
    let child = start_as(wine, &repo, "wait-milestone", "alice", |c| {
        c.current_dir(&repo.base)
            .env("CLAUDE_PROJECT_DIR", Form::DotDot.of(&repo.root))
            .args(["ui", "--stream", "api", "--timeout", "120"]);
    });
    assert!(
        eventually(Duration::from_secs(60), || repo
            .heartbeat_ms("api")
            .is_some_and(|hb| hb > aged + 5 * 60_000)),
        "wait-milestone.exe did not keep api fresh"
    );
    repo.write(
        "session-lock/ui.done",
        &json!({"stream": "ui", "sessionId": sid("bob"), "releasedAt": session_lock::time::iso(session_lock::time::now_ms()), "head": ""}).to_string(),
    );
    let out = crate::support::lifecycle::wait_within(child, Duration::from_secs(90));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("ui is done (waited "),
        "{}",
        text(&out.stdout)
    );

    // release.exe runs git, which a Windows machine needs on PATH (this prefix has none): it
    // says so and changes nothing.
    let (code, out, err) = run_as(wine, &repo, "release", "alice", |c| {
        c.arg("api");
    });
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("git"), "{err}");
    assert!(repo.lock_json("api").is_some(), "the lock stays");
    assert!(!repo.exists("session-lock/api.done"));
}

#[test]
fn two_windows_builds_run_one_after_the_other() {
    let wine = require_wine!();
    let repo = Repo::new();
    // The build (run through `cmd /C`) logs its start, waits for its own go file, logs its end.
    repo.write(
        "build.bat",
        "@echo off\r\necho start %N%>>build.log\r\n:wait\r\nif not exist go-%N% goto wait\r\necho end %N%>>build.log\r\n",
    );
    repo.config(&json!({"build": {"command": "call build.bat"}}));
    let spawn = |n: &str| {
        let mut c = tool(wine, &repo, "build-renderer");
        c.env("N", n)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn build-renderer.exe")
    };
    let log = || repo.read("build.log").unwrap_or_default();
    let build_status = || {
        let mut c = tool(wine, &repo, "build-renderer");
        c.args(["--status", "--json"]);
        let (code, out, err) = run(c);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let first = spawn("A");
    assert!(
        eventually(Duration::from_secs(60), || log().contains("start A")),
        "the first build did not start: {:?}",
        log()
    );
    let second = spawn("B");
    assert!(
        eventually(Duration::from_secs(60), || build_status()["queue"]
            .as_array()
            .is_some_and(|q| q.len() == 1)),
        "the second build never queued: {}",
        build_status()
    );
    assert_eq!(
        log().lines().collect::<Vec<_>>(),
        ["start A"],
        "B started while A held the lock"
    );
    assert_eq!(build_status()["holding"], true);
    repo.write("go-A", "");
    assert!(
        eventually(Duration::from_secs(60), || log().contains("start B")),
        "the second build did not follow: {:?}",
        log()
    );
    repo.write("go-B", "");
    for (name, child) in [("A", first), ("B", second)] {
        let out = crate::support::lifecycle::wait_within(child, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
    }
    assert_eq!(
        log().lines().collect::<Vec<_>>(),
        ["start A", "end A", "start B", "end B"]
    );
    assert_eq!(build_status()["holding"], false, "the lock is free again");
}

/// `scripts\run.bat <key>` from the repo root with the Windows tools on PATH, through a driver
/// that prints the `%ERRORLEVEL%` the script left. The driver runs it with `cmd /c`, not
/// `call`: wine's `call` of a batch file reports any failure as 1.
fn run_bat(wine: &Wine, repo: &Repo, key: &str) -> (i32, String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/run.bat");
    let driver = repo.base.join("drive.bat");
    std::fs::write(
        &driver,
        format!(
            "@echo off\r\ncmd /c \"{}\" %1\r\necho ERRORLEVEL=%ERRORLEVEL%\r\n",
            win(&script)
        ),
    )
    .expect("write the driver");
    let mut c = repo.scrubbed(wine.program(Path::new("cmd")));
    c.env("SESSION_LOCK_HOME", win(&repo.home))
        .env("WINEPATH", wine.bin_dir())
        .arg("/c")
        .arg(win(&driver))
        .arg(key);
    run(c)
}

fn errorlevel(out: &str) -> Option<i32> {
    out.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("ERRORLEVEL="))
        .and_then(|n| n.trim().parse().ok())
}

fn repo_with_commands() -> Repo {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.config(&json!({
        "pollSeconds": 1,
        "rebuildCommand": "echo rebuilt>>rebuilt.txt",
        "restartCommand": "echo started>>started.txt",
    }));
    repo
}

#[test]
fn run_bat_keys_s_w_and_r() {
    let wine = require_wine!();
    let repo = repo_with_commands();
    claim_via_guard(wine, &repo, "alice", "api", Form::Back);

    let (code, out, err) = run_bat(wine, &repo, "S");
    assert_eq!(errorlevel(&out), Some(0), "S: {out}{err}");
    assert_eq!(code, 0);
    assert!(out.contains("api") && out.contains("alice000"), "S: {out}");
    assert!(!repo.exists("rebuilt.txt"), "S rebuilds nothing");

    // W: the round is finished (api is done), so the wait ends at once; the round is archived
    // into session-lock\history\<timestamp>\, then the app is rebuilt and restarted.
    repo.write(
        "session-lock/api.done",
        &json!({"stream": "api", "sessionId": sid("alice"), "releasedAt": session_lock::time::iso(session_lock::time::now_ms()), "head": ""}).to_string(),
    );
    let (_, out, err) = run_bat(wine, &repo, "W");
    assert_eq!(errorlevel(&out), Some(0), "W: {out}{err}");
    assert!(out.contains("archived the round"), "W: {out}");
    assert!(!repo.exists("session-lock/api.lock"), "W archived the lock");
    let history: Vec<_> = std::fs::read_dir(repo.path("session-lock/history"))
        .expect("a history folder")
        .flatten()
        .collect();
    assert_eq!(history.len(), 1, "one archived round");
    assert!(history[0].path().join("api.lock").exists());
    assert!(history[0].path().join("api.done").exists());
    assert_eq!(repo.read("rebuilt.txt").as_deref(), Some("rebuilt\r\n"));
    assert!(
        eventually(Duration::from_secs(30), || repo
            .read("started.txt")
            .as_deref()
            == Some("started\r\n")),
        "W did not restart the app: {out}"
    );

    // R: rebuild and restart now, nothing to wait for.
    let (_, out, err) = run_bat(wine, &repo, "R");
    assert_eq!(errorlevel(&out), Some(0), "R: {out}{err}");
    assert!(
        out.contains("run: rebuilding: echo rebuilt>>rebuilt.txt"),
        "R: {out}"
    );
    assert_eq!(
        repo.read("rebuilt.txt").as_deref(),
        Some("rebuilt\r\nrebuilt\r\n")
    );
    assert!(
        eventually(Duration::from_secs(30), || repo
            .read("started.txt")
            .as_deref()
            == Some("started\r\nstarted\r\n")),
        "R did not restart the app: {out}"
    );

    // An unknown key is refused with errorlevel 2 and does nothing.
    let (_, out, err) = run_bat(wine, &repo, "X");
    assert_eq!(errorlevel(&out), Some(2), "X: {out}{err}");
    assert!(out.contains("unknown key"), "X: {out}");
}

#[test]
fn a_failed_rebuild_leaves_the_app_alone() {
    let wine = require_wine!();
    let repo = Repo::new();
    repo.config(&json!({
        "rebuildCommand": "exit /b 3",
        "restartCommand": "echo started>>started.txt",
    }));
    let (_, out, err) = run_bat(wine, &repo, "R");
    assert_eq!(errorlevel(&out), Some(1), "{out}{err}");
    assert!(
        out.contains("rebuild failed; the app was not restarted"),
        "{out}"
    );
    assert!(!repo.exists("started.txt"));
}

/// A live Windows session in the registry makes the guard's shared rules block; the same
/// entry with another start time (a reused pid), or once the process has exited, does not.
#[test]
fn a_windows_session_is_alive_by_pid_and_start_time() {
    let wine = require_wine!();
    let repo = Repo::new();
    let other = Witness::start(wine);
    assert_eq!(
        wine.start_time_of(other.pid).as_deref(),
        Some(other.start.as_str()),
        "the start time of a running process is stable"
    );
    let me = wine.witness();
    let register = |who: &str, pid: u32, start: &str| {
        let entry = json!({
            "sessionId": sid(who), "cwd": win(&repo.root), "pid": pid, "procStart": start,
            "updatedAt": session_lock::time::iso(session_lock::time::now_ms()),
        });
        let dir = repo.home.join("sessions");
        std::fs::create_dir_all(&dir).expect("sessions folder");
        std::fs::write(dir.join(format!("{}.json", sid(who))), entry.to_string())
            .expect("write a registry entry");
    };
    register("me", me.pid, &me.start);
    let stash = || {
        let p = payload(
            "me",
            &win(&repo.root),
            "Bash",
            json!({"command": "git stash"}),
        );
        verdict(&guard(wine, &repo, &p))
    };
    assert_eq!(
        stash(),
        Ok(Verdict::Allow),
        "alone, git stash is mine to run"
    );

    register("other", other.pid, &other.start);
    match stash() {
        Ok(Verdict::Block(reason)) => assert!(reason.contains("git.head-change"), "{reason}"),
        v => panic!("a live other session must block git stash: {v:?}"),
    }

    register("other", other.pid, "1");
    assert_eq!(
        stash(),
        Ok(Verdict::Allow),
        "the same pid with another start time is another process"
    );

    register("other", other.pid, &other.start);
    other.end();
    assert!(
        eventually(Duration::from_secs(30), || stash() == Ok(Verdict::Allow)),
        "a session whose process exited still counts"
    );
    assert_eq!(
        wine.start_time_of(other.pid),
        None,
        "an exited pid has no start time"
    );
}
