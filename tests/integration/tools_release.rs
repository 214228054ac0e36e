//! `release`: the gate (checks + committed owned files), the done markers, and who may release.

use crate::support::lifecycle::{Repo, sid};
use serde_json::{Value, json};

fn release(repo: &Repo, who: &str, args: &[&str]) -> (i32, String, String) {
    let mut c = repo.tool_as("release", who);
    c.args(args);
    repo.run(c)
}

fn setup() -> Repo {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.plan("docs", 2, &["docs/**"]);
    repo.write("src/api/tracked.ts", "v1\n");
    repo.commit(&["plans", "src"], "plans and code");
    repo
}

#[test]
fn a_failing_check_and_each_kind_of_uncommitted_file_are_listed() {
    let repo = setup();
    repo.config(&json!({"releaseChecks": [
        "echo 'src/api/x.ts(3,1): error TS2304'; echo 'on stderr' >&2; exit 3",
        "true"
    ]}));
    repo.claim("alice", "api");
    repo.write("src/api/tracked.ts", "v2\n");
    repo.write("src/api/staged.ts", "new\n");
    repo.git(&["add", "src/api/staged.ts"]);
    repo.write("src/api/new/untracked.ts", "new\n");
    repo.write("src/ui/not-mine.ts", "theirs\n");

    let (code, out, err) = release(&repo, "alice", &["api"]);
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains("release: stream 'api' is not released:")
            && err.contains("check failed (exit 3): echo 'src/api/x.ts(3,1): error TS2304'")
            && err.contains("| src/api/x.ts(3,1): error TS2304")
            && err.contains("| on stderr"),
        "{err}"
    );
    assert!(
        !err.contains("check failed (exit 0)"),
        "passing checks are not listed: {err}"
    );
    assert!(
        err.contains("3 owned file(s) not committed")
            && err.contains(" M src/api/tracked.ts")
            && err.contains("A  src/api/staged.ts")
            && err.contains("?? src/api/new/untracked.ts"),
        "{err}"
    );
    assert!(
        !err.contains("not-mine"),
        "files of other streams are not listed: {err}"
    );
    assert!(!repo.exists("session-lock/api.done"));

    let (code, out, _) = release(&repo, "alice", &["api", "--json"]);
    assert_eq!(code, 3);
    let v: Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(v["released"], false);
    assert_eq!(v["uncommitted"].as_array().map(Vec::len), Some(3));
    assert_eq!(v["checks"][0]["ok"], false);
    assert_eq!(v["checks"][0]["status"], 3);
    assert_eq!(v["checks"][1]["ok"], true);

    // Fix the check and commit the work: the gate passes.
    repo.config(&json!({"releaseChecks": ["true"]}));
    repo.commit(&["src/api"], "api work");
    let (code, out, err) = release(&repo, "alice", &["api"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("released 'api'"), "{out}");
    let done: Value = serde_json::from_str(&repo.read("session-lock/api.done").unwrap()).unwrap();
    assert_eq!(done["stream"], "api");
    assert_eq!(done["sessionId"], sid("alice"));
    let head = repo.git(&["rev-parse", "HEAD"]);
    assert_eq!(done["head"], String::from_utf8_lossy(&head.stdout).trim());

    // Releasing again is fine and says so.
    let (code, out, _) = release(&repo, "alice", &["api"]);
    assert_eq!((code, out.trim()), (0, "stream 'api' is already released"));
}

#[test]
fn the_milestone_is_marked_after_its_last_stream() {
    let repo = setup();
    repo.config(&json!({"releaseChecks": []}));
    repo.claim("alice", "api");
    repo.claim("bob", "ui");
    repo.claim("carol", "docs");
    assert_eq!(release(&repo, "alice", &["api"]).0, 0);
    assert!(!repo.exists("session-lock/milestones/ms-01.done"));
    assert_eq!(release(&repo, "carol", &["docs"]).0, 0);
    assert!(
        repo.exists("session-lock/milestones/ms-02.done"),
        "docs is milestone 2's only stream"
    );
    assert!(!repo.exists("session-lock/milestones/ms-01.done"));
    assert_eq!(release(&repo, "bob", &["ui"]).0, 0);
    let ms: Value = serde_json::from_str(
        &repo
            .read("session-lock/milestones/ms-01.done")
            .expect("ms-01.done after ui"),
    )
    .unwrap();
    assert_eq!(ms["milestone"], 1);
}

#[test]
fn a_broken_plan_does_not_hide_the_milestone_silently() {
    let repo = setup();
    repo.config(&json!({"releaseChecks": []}));
    repo.claim("alice", "docs");
    repo.write("plans/r-ms-03-late/plan.md", "---\nowns: late/**\n---\n");
    let (code, out, err) = release(&repo, "alice", &["docs"]);
    assert_eq!(code, 0, "the release itself stands: {out}{err}");
    assert!(repo.exists("session-lock/docs.done"));
    assert!(
        err.contains("release: warning: cannot tell whether milestone 02 is done")
            && err.contains("plans/r-ms-03-late/plan.md:2"),
        "{err}"
    );
}

#[test]
fn only_the_holding_session_may_release() {
    let repo = setup();
    repo.config(&json!({"releaseChecks": []}));
    repo.claim("alice", "api");
    let (code, _, err) = release(&repo, "bob", &["api"]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("stream 'api' is held by session alice000; this command runs inside session bob00000's process tree"),
        "{err}"
    );
    assert!(!repo.exists("session-lock/api.done"));
    // Outside any session (a person at a terminal) the gate still applies, and passes.
    let (code, _, err) = repo.run({
        let mut c = repo.tool("release");
        c.arg("api");
        c
    });
    assert_eq!(code, 0, "{err}");
}

#[test]
fn unclaimed_and_badly_named_streams() {
    let repo = setup();
    let (code, _, err) = release(&repo, "alice", &["ui"]);
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("stream 'ui' is not claimed"), "{err}");
    let (code, _, err) = release(&repo, "alice", &["../ui"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("'../ui' is not a stream name"), "{err}");
}

#[test]
fn a_check_that_cannot_start_fails_the_gate_by_name() {
    let repo = setup();
    repo.config(&json!({"releaseChecks": ["definitely-not-a-command-xyz --noEmit"]}));
    repo.claim("alice", "api");
    let (code, _, err) = release(&repo, "alice", &["api"]);
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("check failed (exit 127): definitely-not-a-command-xyz --noEmit"),
        "{err}"
    );
}

#[test]
fn issue_11_the_caller_is_proven_from_the_process_tree_not_the_environment() {
    let repo = setup();
    repo.config(&json!({"releaseChecks": []}));
    repo.claim("alice", "api");
    // Bob holds ui, and this test process plays bob's client: every tool it starts runs in
    // bob's tree, however its environment is made.
    repo.lock("ui", "bob", &["src/ui/**"], 1, 0);
    repo.set_client("ui", std::process::id());
    let copy = repo.base.join("my-release");
    std::fs::copy(crate::support::lifecycle::bin("release"), &copy).unwrap();
    type Tweak = Box<dyn Fn(&mut std::process::Command)>;
    let cases: [(&str, Tweak); 4] = [
        (
            "alice's id",
            Box::new(|c| {
                c.env("CLAUDE_CODE_SESSION_ID", sid("alice"));
            }),
        ),
        (
            "no id",
            Box::new(|c| {
                c.env_remove("CLAUDE_CODE_SESSION_ID");
            }),
        ),
        (
            "an empty environment",
            Box::new(|c| {
                c.env_clear();
            }),
        ),
        (
            "a copy of the binary",
            Box::new(|c| {
                c.env_clear().env("CLAUDE_CODE_SESSION_ID", sid("alice"));
            }),
        ),
    ];
    for (i, (label, tweak)) in cases.iter().enumerate() {
        let mut c = if i == 3 {
            std::process::Command::new(&copy)
        } else {
            repo.tool("release")
        };
        c.current_dir(&repo.root).arg("api");
        tweak(&mut c);
        let (code, _, err) = repo.run(c);
        assert_eq!(code, 4, "{label}: {err}");
        assert!(
            err.contains("inside session bob00000's process tree"),
            "{label}: {err}"
        );
        assert!(!repo.exists("session-lock/api.done"), "{label}");
    }
    // A person at a terminal (bob's client is no longer this process): allowed, and told whose
    // stream it was.
    repo.set_client("ui", crate::support::lifecycle::dead_pid());
    let (code, out, err) = repo.run({
        let mut c = repo.tool("release");
        c.arg("api");
        c
    });
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("(session alice000's stream, released from outside every session)"),
        "{out}"
    );
}

/// Issue 30: the default checks named tsconfig files only the protocol's own app has, and a
/// session cannot change the (protected) config. Without `releaseChecks` they come from the
/// repo: here package.json's typecheck script, run with npm; install and doctor say so.
#[test]
fn without_release_checks_in_the_config_they_come_from_the_repo() {
    let repo = setup();
    let marker = repo.base.join("typechecked");
    repo.write(
        "package.json",
        &json!({"name": "app", "private": true, "scripts": {
            "start": "electron .",
            "typecheck": format!("node -e \"require('fs').writeFileSync('{}', 'ok')\"", marker.display()),
        }})
        .to_string(),
    );
    repo.commit(&["package.json"], "package");
    let mut c = repo.tool("guard");
    c.args(["install", "--no-statusline"]);
    let (code, out, err) = repo.run(c);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("release checks: `npm run typecheck` (from package.json's `typecheck` script; set releaseChecks in session-lock/config.json to choose others)"),
        "{out}"
    );
    repo.claim("alice", "api");
    let (code, out, err) = release(&repo, "alice", &["api", "--json"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["checks"][0]["command"], "npm run typecheck", "{v}");
    assert!(marker.exists(), "the script ran");

    // A config that sets them wins, and `[]` means none.
    repo.config(&json!({"releaseChecks": []}));
    let mut c = repo.tool("guard");
    c.args(["install", "--no-statusline"]);
    let (_, out, _) = repo.run(c);
    assert!(
        out.contains("release checks: none (releaseChecks in session-lock/config.json)"),
        "{out}"
    );
}

/// Issue 27: a process a session left running is not a person at a terminal. `release` run
/// after the shell that started it is gone (`(release x &)` from a Bash command, alone or under
/// `setsid`) is refused (exit 8) and writes nothing; the same release typed at a terminal passes.
#[cfg(target_os = "linux")]
#[test]
fn issue_27_a_release_left_behind_by_a_shell_that_is_gone_is_refused() {
    let repo = setup();
    repo.config(&json!({"releaseChecks": []}));
    repo.claim("alice", "api");
    let fifo = |name: &str| {
        let p = repo.base.join(name);
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&p)
                .status()
                .unwrap()
                .success()
        );
        p
    };
    let release = crate::support::lifecycle::bin("release");
    for (label, inner) in [
        ("a background subshell", "release api"),
        ("a subshell under setsid", "setsid release api"),
    ] {
        let (gate, done) = (
            fifo(&format!("gate-{}", label.len())),
            fifo(&format!("done-{}", label.len())),
        );
        // The shell leads its own session, as the Bash tool's shell does, and exits at once,
        // leaving the subshell that waits for the gate; only then does the gate open.
        let script = format!(
            "( read _ < \"$1\"; PATH=\"$3:$PATH\" {inner} > \"$2.out\" 2>&1; echo $? > \"$2\" ) & exit 0"
        );
        let mut c = std::process::Command::new("setsid");
        c.arg("sh")
            .arg("-c")
            .arg(&script)
            .arg("sh")
            .arg(&gate)
            .arg(&done)
            .arg(std::path::Path::new(release).parent().unwrap());
        let status = repo.scrubbed(c).status().unwrap();
        assert!(status.success(), "{label}");
        std::fs::write(&gate, "go\n").unwrap();
        let code = std::fs::read_to_string(&done).unwrap();
        let out = std::fs::read_to_string(format!("{}.out", done.display())).unwrap();
        assert_eq!(code.trim(), "8", "{label}: {out}");
        assert!(out.contains("not from a terminal"), "{label}: {out}");
        assert!(!repo.exists("session-lock/api.done"), "{label}");
    }
    // Typed at a terminal (run below this test, whose session leader is its ancestor): passes.
    let (code, out, err) = repo.run({
        let mut c = repo.tool("release");
        c.arg("api");
        c
    });
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("released from outside every session"), "{out}");
}
