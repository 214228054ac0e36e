//! Sessions claim one stream at the same instant: exactly one wins, every other one is blocked
//! naming the winner, and one lock file is left. Real guard processes, fed all at once.

use crate::support::lifecycle::{Repo, Verdict, verdict};
use serde_json::json;
use std::io::Write;
use std::process::Stdio;

const SESSIONS: usize = 32;
const ROUNDS: usize = 20;

fn session(round: usize, i: usize) -> String {
    format!("{i:08}-0000-4000-8000-{round:012}")
}

/// Starts one guard per session (each waits on its stdin), then feeds them all `claim api` at
/// once. The indexes the guards allowed, and the reasons of those they blocked.
fn race(repo: &Repo, sessions: &[String]) -> (Vec<usize>, Vec<(usize, String)>) {
    let mut children = Vec::new();
    for i in 0..sessions.len() {
        let mut cmd = repo.tool("guard");
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        children.push((i, cmd.spawn().expect("spawn guard")));
    }
    let payloads: Vec<Vec<u8>> = sessions
        .iter()
        .map(|id| {
            let mut p = repo.payload("x", "Bash", json!({"command": "claim api"}));
            p["session_id"] = json!(id);
            p.to_string().into_bytes()
        })
        .collect();
    for (i, child) in children.iter_mut() {
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(&payloads[*i]).expect("write payload");
    }
    let mut allowed = Vec::new();
    let mut blocked = Vec::new();
    for (i, child) in children {
        let out = child.wait_with_output().expect("guard output");
        match verdict(&out) {
            Ok(Verdict::Allow) => allowed.push(i),
            Ok(Verdict::Block(reason)) => blocked.push((i, reason)),
            Err(e) => panic!("session {}: {e}", sessions[i]),
        }
    }
    (allowed, blocked)
}

#[test]
fn thirty_two_sessions_race_for_one_stream() {
    for round in 0..ROUNDS {
        let repo = Repo::new();
        repo.plan("api", 1, &["src/api/**"]);
        let sessions: Vec<String> = (0..SESSIONS).map(|i| session(round, i)).collect();
        let (allowed, blocked) = race(&repo, &sessions);
        assert_eq!(
            allowed.len(),
            1,
            "round {round}: exactly one claim wins, got {allowed:?}; blocks: {blocked:?}"
        );
        let winner = &sessions[allowed[0]];
        let lock = repo.lock_json("api").expect("a lock");
        assert_eq!(lock["sessionId"], *winner, "round {round}");
        assert_eq!(blocked.len(), SESSIONS - 1);
        let short = &winner[..8];
        for (i, reason) in &blocked {
            assert!(
                reason.contains("stream 'api' is held by another session")
                    && reason.contains(&format!("session {short}")),
                "round {round}, session {i}: {reason}"
            );
        }
        let leftovers: Vec<String> = std::fs::read_dir(repo.path("session-lock"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            // The state lock and the round index's cache folder and the block log stay; nothing else may.
            .filter(|n| n != ".state.lock" && n != ".index" && n != "blocks.jsonl")
            .collect();
        assert_eq!(leftovers, vec!["api.lock"], "round {round}");
        // Every blocked claim is in the block log, one whole line each (concurrent appends
        // do not interleave).
        let log = repo.read("session-lock/blocks.jsonl").unwrap_or_default();
        let lines: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).expect("a whole JSON line"))
            .collect();
        assert_eq!(lines.len(), SESSIONS - 1, "round {round}: {log}");
    }
}

/// Issue 29, item 1: a session that released its stream claims it again while three other
/// sessions claim it too. The re-claim must not pass on what it read before the others wrote:
/// exactly one of the four is allowed, every round, and the lock names that one.
#[test]
fn issue_29_a_re_claim_right_after_release_races_three_claimers_and_one_wins() {
    const CLAIMERS: usize = 4;
    for round in 0..ROUNDS {
        let repo = Repo::new();
        repo.plan("api", 1, &["src/api/**"]);
        repo.config(&json!({"releaseChecks": []}));
        let sessions: Vec<String> = (0..CLAIMERS).map(|i| session(round, i)).collect();
        // Session 0 claims and releases the stream, as a session finishing its work does.
        let (allowed, blocked) = race(&repo, &sessions[..1]);
        assert_eq!(allowed, [0], "round {round}: the first claim: {blocked:?}");
        let mut release = repo.tool("release");
        release.arg("api");
        let (code, _, err) = repo.run(release);
        assert_eq!(code, 0, "round {round}: release: {err}");
        assert!(repo.exists("session-lock/api.done"));

        let (allowed, blocked) = race(&repo, &sessions);
        assert_eq!(
            allowed.len(),
            1,
            "round {round}: exactly one claim wins, got {allowed:?}; blocks: {blocked:?}"
        );
        let winner = &sessions[allowed[0]];
        let lock = repo.lock_json("api").expect("a lock");
        assert_eq!(lock["sessionId"], *winner, "round {round}");
        assert!(
            !repo.exists("session-lock/api.done"),
            "round {round}: the new claim is not released"
        );
        for (i, reason) in &blocked {
            assert!(
                reason.contains("stream 'api' is held by another session")
                    && reason.contains(&format!("session {}", &winner[..8])),
                "round {round}, session {i}: {reason}"
            );
        }
    }
}
