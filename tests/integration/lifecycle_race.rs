//! 32 sessions claim one stream at the same instant: exactly one wins, every other one is
//! blocked naming the winner, and one lock file is left.

use crate::support::lifecycle::{Repo, Verdict, verdict};
use serde_json::json;
use std::io::Write;
use std::process::Stdio;

const SESSIONS: usize = 32;
const ROUNDS: usize = 20;

fn session(round: usize, i: usize) -> String {
    format!("{i:08}-0000-4000-8000-{round:012}")
}

#[test]
fn thirty_two_sessions_race_for_one_stream() {
    for round in 0..ROUNDS {
        let repo = Repo::new();
        repo.plan("api", 1, &["src/api/**"]);
        // Start every guard first; each waits on its stdin. Then feed them all at once.
        let mut children = Vec::new();
        for i in 0..SESSIONS {
            let mut cmd = repo.tool("guard");
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            children.push((i, cmd.spawn().expect("spawn guard")));
        }
        let payloads: Vec<Vec<u8>> = (0..SESSIONS)
            .map(|i| {
                let mut p = repo.payload("x", "Bash", json!({"command": "claim api"}));
                p["session_id"] = json!(session(round, i));
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
                Err(e) => panic!("round {round}, session {i}: {e}"),
            }
        }
        assert_eq!(
            allowed.len(),
            1,
            "round {round}: exactly one claim wins, got {allowed:?}; blocks: {blocked:?}"
        );
        let winner = session(round, allowed[0]);
        let lock = repo.lock_json("api").expect("a lock");
        assert_eq!(lock["sessionId"], winner, "round {round}");
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
