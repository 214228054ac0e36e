//! `status --watch`: the live view of the round, read under tmux.

use crate::require_tmux;
use crate::support::lifecycle::{Repo, Verdict, bin, sid, verdict};
use crate::support::tmux::Pane;
use serde_json::json;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn watch_shows_the_round_redraws_it_and_quits_on_q_or_ctrl_c() {
    require_tmux!();
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.lock("api", "bob", &["src/api/**"], 1, 0);
    repo.claim("alice", "ui");
    let add = repo.payload("alice", "Bash", json!({"command": "git add -A"}));
    assert!(matches!(verdict(&repo.guard(&add)), Ok(Verdict::Block(_))));
    let env = vec![("SESSION_LOCK_HOME", repo.home.display().to_string())];
    let pane = Pane::start(
        &format!("{} --watch", bin("status")),
        &repo.root,
        &env,
        140,
        40,
    );
    let (ok, screen) = pane.wait_for(LIMIT, |s| {
        s.contains("last blocks") && s.contains("bob00000")
    });
    assert!(ok, "{screen}");
    for needle in [
        "session-lock: round 0",
        "q to quit",
        "streams",
        "STREAM",
        "HEARTBEAT",
        "build lock",
        "free",
        "queue: empty",
        "messages in flight",
        "git.add-all: git add -A",
    ] {
        assert!(screen.contains(needle), "{needle}: {screen}");
    }
    let row = |s: &str, stream: &str| {
        s.lines()
            .find(|l| l.contains(&format!("│{stream} ")) || l.contains(&format!(" {stream} ")))
            .unwrap_or("")
            .to_string()
    };
    assert!(row(&screen, "api").contains("active"), "{screen}");
    assert!(row(&screen, "ui").contains(&sid("alice")[..8]), "{screen}");
    assert!(
        row(&screen, "ui").contains(" 1 "),
        "one block for ui: {screen}"
    );

    // The view follows the round.
    repo.write("session-lock/api.done", "{\"stream\":\"api\"}");
    let (ok, screen) = pane.wait_for(LIMIT, |s| row(s, "api").contains("done"));
    assert!(ok, "{screen}");
    pane.keys(&["q"]);
    let (ok, screen) = pane.wait_for(LIMIT, |s| Pane::exit_code(s).is_some());
    assert!(ok, "{screen}");
    assert_eq!(Pane::exit_code(&screen), Some(0), "{screen}");
    assert!(!screen.contains("q to quit"), "the view is gone: {screen}");

    let pane = Pane::start(
        &format!("{} --watch", bin("status")),
        &repo.root,
        &env,
        140,
        40,
    );
    let (ok, screen) = pane.wait_for(LIMIT, |s| s.contains("q to quit"));
    assert!(ok, "{screen}");
    pane.keys(&["C-c"]);
    let (ok, screen) = pane.wait_for(LIMIT, |s| Pane::exit_code(s).is_some());
    assert!(ok, "{screen}");
    assert_eq!(Pane::exit_code(&screen), Some(0), "{screen}");
}

#[test]
fn watch_off_a_terminal_says_so_and_exits() {
    let repo = Repo::new();
    let mut c = repo.tool("status");
    c.arg("--watch");
    let (code, out, err) = repo.run(c);
    assert_eq!(code, 2, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(
        err.starts_with("status: --watch draws on a terminal") && err.contains("status --json"),
        "{err}"
    );
}
