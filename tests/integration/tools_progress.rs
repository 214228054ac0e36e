//! Progress of every wait: one live line on a terminal (read under tmux), plain lines at each
//! change otherwise, nothing with --quiet.

use crate::require_tmux;
use crate::support::lifecycle::{Repo, bin, eventually, sid};
use crate::support::tmux::Pane;
use std::process::Stdio;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

fn repo_with_waits() -> Repo {
    let repo = Repo::new();
    repo.config(&serde_json::json!({"pollSeconds": 1}));
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("web", 1, &["src/web/**"]);
    repo.plan("ui", 2, &["src/ui/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 0);
    repo.lock("web", "carol", &["src/web/**"], 1, 0);
    repo.claim("alice", "ui");
    repo
}

fn done(repo: &Repo, stream: &str) {
    repo.write(
        &format!("session-lock/{stream}.done"),
        &format!("{{\"stream\":\"{stream}\"}}"),
    );
}

fn env(repo: &Repo, who: &str) -> Vec<(&'static str, String)> {
    vec![
        ("SESSION_LOCK_HOME", repo.home.display().to_string()),
        ("CLAUDE_CODE_SESSION_ID", sid(who)),
    ]
}

fn waiting_lines(screen: &str) -> usize {
    screen.lines().filter(|l| l.contains("waiting for")).count()
}

#[test]
fn wait_milestone_on_a_terminal_keeps_one_live_line() {
    require_tmux!();
    let repo = repo_with_waits();
    let pane = Pane::start(
        &format!("{} ms-01 --stream ui --timeout 600", bin("wait-milestone")),
        &repo.root,
        &env(&repo, "alice"),
        200,
        20,
    );
    let (ok, screen) = pane.wait_for(LIMIT, |s| s.contains("2s elapsed"));
    assert!(ok, "{screen}");
    assert_eq!(waiting_lines(&screen), 1, "redrawn in place: {screen}");
    for needle in [
        "wait-milestone: waiting for ms-01: api (session bob00000, heartbeat",
        "web (session carol000, heartbeat",
        " left]",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    done(&repo, "web");
    let (ok, screen) = pane.wait_for(LIMIT, |s| s.contains("waiting for") && !s.contains("web ("));
    assert!(ok, "the line follows what is open: {screen}");
    assert_eq!(waiting_lines(&screen), 1, "{screen}");
    done(&repo, "api");
    let (ok, screen) = pane.wait_for(LIMIT, |s| Pane::exit_code(s).is_some());
    assert!(ok, "{screen}");
    assert_eq!(Pane::exit_code(&screen), Some(0), "{screen}");
    assert!(screen.contains("ms-01 is done"), "{screen}");
    assert_eq!(
        waiting_lines(&screen),
        0,
        "the live line is cleared at the end: {screen}"
    );
}

#[test]
fn wait_milestone_off_a_terminal_prints_a_line_at_each_change_and_quiet_prints_none() {
    let repo = repo_with_waits();
    let log = repo.base.join("stderr.txt");
    let mut c = repo.tool_as("wait-milestone", "alice");
    c.args(["ms-01", "--stream", "ui", "--timeout", "600"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = c.spawn().unwrap();
    let lines = || std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        eventually(LIMIT, || lines().lines().count() == 1),
        "{}",
        lines()
    );
    done(&repo, "web");
    assert!(
        eventually(LIMIT, || lines().lines().count() == 2),
        "{}",
        lines()
    );
    done(&repo, "api");
    assert!(child.wait().unwrap().success());
    let text = lines();
    let all: Vec<&str> = text.lines().collect();
    assert_eq!(all.len(), 2, "one line per change, no repeats: {text}");
    assert!(
        all[0].starts_with("wait-milestone: waiting for ms-01: api (session bob00000, heartbeat")
            && all[0].contains("web (session carol000")
            && all[0].contains(" elapsed, ")
            && all[0].ends_with(" left]"),
        "{text}"
    );
    assert!(!all[1].contains("web"), "{text}");

    let mut c = repo.tool_as("wait-milestone", "alice");
    c.args(["ms-01", "--stream", "ui", "--quiet"]);
    let (code, _, err) = repo.run(c);
    assert_eq!((code, err.as_str()), (0, ""), "already done, and quiet");
    let repo = repo_with_waits();
    let mut c = repo.tool_as("wait-milestone", "alice");
    c.args(["ms-01", "--stream", "ui", "--quiet", "--timeout", "1"]);
    let (code, _, err) = repo.run(c);
    assert_eq!(code, 5);
    assert!(
        err.starts_with("wait-milestone: ms-01 is not done after 1s") && err.lines().count() == 1,
        "only the error: {err}"
    );
}

#[test]
fn status_wait_on_a_terminal_keeps_one_live_line() {
    require_tmux!();
    let repo = repo_with_waits();
    done(&repo, "web");
    done(&repo, "ui");
    let pane = Pane::start(
        &format!("{} --wait --timeout 600", bin("status")),
        &repo.root,
        &env(&repo, "alice"),
        200,
        20,
    );
    let (ok, screen) = pane.wait_for(LIMIT, |s| s.contains("2s elapsed"));
    assert!(ok, "{screen}");
    assert_eq!(waiting_lines(&screen), 1, "{screen}");
    assert!(
        screen
            .contains("status: waiting for 1 stream(s): api (active, session bob00000, heartbeat"),
        "{screen}"
    );
    done(&repo, "api");
    let (ok, screen) = pane.wait_for(LIMIT, |s| Pane::exit_code(s).is_some());
    assert!(ok, "{screen}");
    assert_eq!(Pane::exit_code(&screen), Some(0), "{screen}");
    assert!(
        screen.contains("status: every claimed stream is done"),
        "{screen}"
    );
    assert_eq!(waiting_lines(&screen), 0, "{screen}");
}

#[test]
fn build_renderer_waiting_on_a_terminal_keeps_one_live_line() {
    require_tmux!();
    let repo = Repo::new();
    let gate = repo.base.join("gate");
    let mut holder = repo.tool("build-renderer");
    holder
        .args([
            "--",
            "sh",
            "-c",
            &format!("while [ ! -e '{}' ]; do sleep 0.1; done", gate.display()),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut holder = holder.spawn().unwrap();
    assert!(eventually(LIMIT, || repo.exists("session-lock/build.holder.json")));
    let pane = Pane::start(
        &format!("{} -- true", bin("build-renderer")),
        &repo.root,
        &env(&repo, "alice"),
        200,
        20,
    );
    let (ok, screen) = pane.wait_for(LIMIT, |s| s.contains("2s elapsed"));
    assert!(ok, "{screen}");
    assert_eq!(waiting_lines(&screen), 1, "{screen}");
    assert!(
        screen.contains(
            "build-renderer: waiting for the build lock (you are 1 of 1 in the queue), held by pid "
        ),
        "{screen}"
    );
    std::fs::write(&gate, "").unwrap();
    assert!(holder.wait().unwrap().success());
    let (ok, screen) = pane.wait_for(LIMIT, |s| Pane::exit_code(s).is_some());
    assert!(ok, "{screen}");
    assert_eq!(Pane::exit_code(&screen), Some(0), "{screen}");
    assert_eq!(waiting_lines(&screen), 0, "{screen}");
}
