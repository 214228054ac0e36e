//! Issue 16: claims as leases on a real git server. A bare repository served by `git daemon`
//! on 127.0.0.1 (a free port, receive-pack enabled), and three clones standing in for three
//! machines, each with its own state home, host name and sessions.

use crate::support::lifecycle::{Repo, Verdict, eventually, git_in, sid, text, verdict};
use serde_json::{Value, json};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// `git daemon` serving one bare repository; stopped on drop.
struct Server {
    base: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

impl Server {
    fn start() -> Server {
        let base = tempfile::tempdir().expect("server dir");
        let seed = Repo::new();
        git_in(
            base.path(),
            &[
                "clone",
                "-q",
                "--bare",
                &seed.root.to_string_lossy(),
                "team.git",
            ],
        );
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port")
            .port();
        let mut s = Server {
            base,
            port,
            child: None,
        };
        s.resume();
        s
    }

    /// (Re)starts the daemon on the same port and waits until it accepts connections.
    fn resume(&mut self) {
        let root = self.base.path().to_string_lossy().to_string();
        // git-daemon itself, not the `git` wrapper: stopping it must close the port.
        let exec_path = Command::new("git")
            .arg("--exec-path")
            .output()
            .expect("git");
        let daemon = PathBuf::from(text(&exec_path.stdout).trim()).join("git-daemon");
        let child = Command::new(daemon)
            .args([
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
                &format!("--port={}", self.port),
                &format!("--base-path={root}"),
                &root,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("git daemon");
        self.child = Some(child);
        let port = self.port;
        assert!(
            eventually(Duration::from_secs(20), || TcpStream::connect((
                "127.0.0.1",
                port
            ))
            .is_ok()),
            "git daemon did not listen on {port}"
        );
    }

    /// Stops the daemon (a partition: the remote is unreachable).
    fn stop(&mut self) {
        self.kill();
        let port = self.port;
        assert!(eventually(Duration::from_secs(10), || TcpStream::connect(
            ("127.0.0.1", port)
        )
        .is_err()));
    }

    fn url(&self) -> String {
        format!("git://127.0.0.1:{}/team.git", self.port)
    }

    /// The remote's lease of `stream`, read straight from the bare repository.
    fn lease(&self, stream: &str) -> Option<Value> {
        let dir = self.base.path().join("team.git");
        let out = Command::new("git")
            .args([
                "cat-file",
                "blob",
                &format!("refs/session-lock/streams/{stream}"),
            ])
            .current_dir(dir)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        serde_json::from_slice(&out.stdout).ok()
    }
}

impl Server {
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One machine: its own clone, state home and host name.
struct Machine {
    repo: Repo,
    host: String,
}

const STREAMS: [&str; 4] = ["api", "ui", "db", "docs"];

impl Machine {
    fn new(server: &Server, host: &str) -> Machine {
        let repo = Repo::new();
        repo.git(&["remote", "add", "origin", &server.url()]);
        for (i, s) in STREAMS.iter().enumerate() {
            repo.plan(s, 1 + i as u32 % 2, &[&format!("src/{s}/**")]);
        }
        repo.config(&json!({
            "releaseChecks": [],
            "leases": {"remote": "origin", "refreshSeconds": 1, "heartbeatPushSeconds": 1},
        }));
        Machine {
            repo,
            host: host.into(),
        }
    }

    fn tool(&self, name: &str, who: &str) -> Command {
        let mut c = self.repo.tool_as(name, who);
        c.env("SESSION_LOCK_HOST", &self.host);
        c
    }

    fn guard_as(&self, payload: &Value) -> Output {
        let mut c = self.repo.tool("guard");
        c.env("SESSION_LOCK_HOST", &self.host);
        crate::support::lifecycle::run_with_stdin(c, payload.to_string().as_bytes())
    }

    fn bash(&self, who: &str, command: &str) -> Output {
        self.guard_as(&self.repo.payload(who, "Bash", json!({"command": command})))
    }

    fn edit(&self, who: &str, rel: &str) -> Output {
        let path = self.repo.path(rel);
        self.guard_as(&self.repo.payload(
            who,
            "Edit",
            json!({"file_path": path.to_string_lossy(), "old_string": "a", "new_string": "b", "replace_all": false}),
        ))
    }

    /// `who` claims `stream` as a session does: the guard sees the command, then `claim` runs.
    /// (exit code of claim, or `None` when the guard blocked it; stdout; stderr)
    fn claim(&self, who: &str, stream: &str, extra: &[&str]) -> (Option<i32>, String, String) {
        let out = self.bash(who, &format!("claim {stream}"));
        if verdict(&out) != Ok(Verdict::Allow) {
            return (None, String::new(), text(&out.stdout));
        }
        let mut c = self.tool("claim", who);
        c.arg(stream).arg("--quiet").args(extra);
        let (code, stdout, stderr) = self.repo.run(c);
        (Some(code), stdout, stderr)
    }

    fn status_json(&self) -> Value {
        let mut c = self.tool("status", "person");
        c.env_remove("CLAUDE_CODE_SESSION_ID").arg("--json");
        let (_, stdout, stderr) = self.repo.run(c);
        serde_json::from_str(&stdout)
            .unwrap_or_else(|e| panic!("status --json: {e}: {stdout} {stderr}"))
    }

    fn refresh(&self) -> (i32, String, String) {
        let mut c = self.tool("status", "person");
        c.env_remove("CLAUDE_CODE_SESSION_ID")
            .arg("--refresh-leases");
        self.repo.run(c)
    }

    fn pushed_path(&self, stream: &str) -> PathBuf {
        self.repo
            .path(&format!("session-lock/.leases/held/{stream}.json"))
    }
}

fn blocked(out: &Output) -> Option<String> {
    match verdict(out) {
        Ok(Verdict::Block(reason)) => Some(reason),
        _ => None,
    }
}

fn rounds() -> usize {
    std::env::var("LEASE_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

#[test]
fn issue_16_a_32_way_claim_race_across_three_clones_has_one_winner() {
    let server = Server::start();
    let machines: Vec<Machine> = ["host-a", "host-b", "host-c"]
        .iter()
        .map(|h| Machine::new(&server, h))
        .collect();
    for round in 0..rounds() {
        let stream = STREAMS[round % STREAMS.len()];
        let results: Vec<(usize, String, Option<i32>, String)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..32)
                .map(|i| {
                    let m = &machines[i % 3];
                    let who = format!("r{round}c{i:02}");
                    s.spawn(move || {
                        let (code, _, err) = m.claim(&who, stream, &[]);
                        (i % 3, who, code, err)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners: Vec<&(usize, String, Option<i32>, String)> =
            results.iter().filter(|r| r.2 == Some(0)).collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: {} winners: {results:#?}",
            winners.len()
        );
        let (wm, who, _, _) = winners[0];
        let lease = server
            .lease(stream)
            .expect("the winner's lease is on the remote");
        assert_eq!(lease["sessionId"], sid(who));
        assert_eq!(lease["host"], machines[*wm].host);
        // Remote losers were told who holds it, by session and host.
        for r in results.iter().filter(|r| r.2 == Some(4)) {
            assert!(
                r.3.contains(&sid(who)[..8]) && r.3.contains(&machines[*wm].host),
                "{r:?}"
            );
        }
        // A loser machine's guard blocks the winner's files once its mirror has refreshed.
        let loser = &machines[(wm + 1) % 3];
        let (code, _, err) = loser.refresh();
        assert_eq!(code, 0, "{err}");
        let out = loser.edit("someone", &format!("src/{stream}/x.ts"));
        let reason = blocked(&out).unwrap_or_else(|| panic!("allowed: {}", text(&out.stderr)));
        assert!(reason.contains(&format!("stream '{stream}'")), "{reason}");
        assert!(reason.contains(&sid(who)[..8]), "{reason}");
        // The round ends: the winner releases, and the lease is done on the remote.
        let winner = &machines[*wm];
        let (code, _, err) = winner.repo.run({
            let mut c = winner.tool("release", who);
            c.arg(stream);
            c
        });
        assert_eq!(code, 0, "release: {err}");
        assert_eq!(server.lease(stream).unwrap()["done"], true);
        loser.refresh();
        assert_eq!(
            verdict(&loser.edit("someone", &format!("src/{stream}/x.ts"))),
            Ok(Verdict::Allow)
        );
    }
}

/// Makes `m`'s lease of `stream` look `age` old on the remote, as if its session went quiet.
fn age_lease(m: &Machine, stream: &str, age: Duration) {
    let file = m.pushed_path(stream);
    let mut pushed: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let old_sha = pushed["sha"].as_str().unwrap().to_string();
    let then = session_lock::time::iso(session_lock::time::now_ms() - age.as_millis() as u64);
    pushed["lease"]["heartbeatAt"] = json!(then);
    let body = serde_json::to_vec_pretty(&pushed["lease"]).unwrap();
    let mut hash = Command::new("git")
        .args(["hash-object", "-w", "--stdin"])
        .current_dir(&m.repo.root)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut hash.stdin.take().unwrap(), &body).unwrap();
    let sha = text(&hash.wait_with_output().unwrap().stdout)
        .trim()
        .to_string();
    git_in(
        &m.repo.root,
        &[
            "push",
            "-q",
            &format!("--force-with-lease=refs/session-lock/streams/{stream}:{old_sha}"),
            "origin",
            &format!("{sha}:refs/session-lock/streams/{stream}"),
        ],
    );
    pushed["sha"] = json!(sha);
    std::fs::write(&file, pushed.to_string()).unwrap();
    m.repo.age_lock(stream, age.as_millis() as u64);
}

#[test]
fn issue_16_a_stale_lease_is_taken_over_and_the_late_heartbeat_is_rejected() {
    let server = Server::start();
    let a = Machine::new(&server, "host-a");
    let b = Machine::new(&server, "host-b");
    assert_eq!(a.claim("alice", "api", &[]).0, Some(0));
    assert_eq!(server.lease("api").unwrap()["generation"], 1);
    // A live lease is not taken.
    let (code, _, err) = b.claim("bob", "api", &[]);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("host-a") && err.contains("alice00"), "{err}");
    assert!(
        !b.repo.exists("session-lock/api.lock"),
        "the failed claim left no local lock"
    );

    age_lease(&a, "api", Duration::from_secs(2 * 3600));
    let (code, out, err) = b.claim("bob", "api", &[]);
    assert_eq!(code, Some(0), "{out} {err}");
    assert!(
        out.contains("generation 2") && out.contains("taken over"),
        "{out}"
    );
    let lease = server.lease("api").unwrap();
    assert_eq!(
        (lease["generation"].as_u64(), lease["host"].as_str()),
        (Some(2), Some("host-b"))
    );

    // Alice's session wakes up: its heartbeat moves locally, and its late push is refused.
    a.repo.age_lock("api", 0);
    let (code, _, err) = a.refresh();
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        server.lease("api").unwrap()["sessionId"],
        sid("bob"),
        "not merged"
    );
    // Told at its next tool call, once.
    let first = a.bash("alice", "ls");
    let reason = blocked(&first).unwrap_or_else(|| panic!("not told: {}", text(&first.stdout)));
    assert!(
        reason.contains("no longer holds stream 'api'") && reason.contains("host-b"),
        "{reason}"
    );
    assert_eq!(
        verdict(&a.bash("alice", "ls")),
        Ok(Verdict::Allow),
        "told once"
    );
    // And the files are Bob's now, on Alice's machine too.
    let out = a.edit("alice", "src/api/x.ts");
    assert!(
        blocked(&out).is_some_and(|r| r.contains("bob0000")),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn issue_16_a_partition_fails_claims_closed_and_converges() {
    let mut server = Server::start();
    let a = Machine::new(&server, "host-a");
    let c = Machine::new(&server, "host-c");
    assert_eq!(a.claim("alice", "api", &[]).0, Some(0));
    assert_eq!(c.refresh().0, 0);
    server.stop();

    // Claims fail closed, and say why and what to do.
    let (code, _, err) = c.claim("carol", "ui", &[]);
    assert_eq!(code, Some(8), "{err}");
    assert!(
        err.contains("unreachable") && err.contains("--offline"),
        "{err}"
    );
    assert!(!c.repo.exists("session-lock/ui.lock"), "nothing claimed");
    // The guard keeps deciding from the mirror, and says once that it is stale.
    let out = c.edit("carol", "src/api/x.ts");
    assert!(
        blocked(&out).is_some_and(|r| r.contains("alice00")),
        "{}",
        text(&out.stdout)
    );
    assert!(eventually(Duration::from_secs(15), || {
        c.refresh();
        text(&c.edit("carol", "src/db/x.ts").stderr).contains("lease mirror of remote 'origin' is")
    }));
    assert!(
        !text(&c.edit("carol", "src/db/x.ts").stderr).contains("lease mirror"),
        "said once"
    );
    // Offline claims work here and say they are not visible yet.
    let (code, out, err) = c.claim("carol", "ui", &["--offline"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("unreachable") && out.contains("Other machines do not see"),
        "{out}"
    );
    let st = c.status_json();
    assert!(st["leases"]["error"].is_string(), "{st}");

    // The remote is back: the refresher publishes the offline claim; state converges.
    server.resume();
    assert!(eventually(Duration::from_secs(20), || {
        c.refresh();
        server
            .lease("ui")
            .is_some_and(|l| l["sessionId"] == sid("carol"))
    }));
    assert_eq!(a.refresh().0, 0);
    let out = a.edit("alice", "src/ui/x.ts");
    assert!(
        blocked(&out).is_some_and(|r| r.contains("carol00")),
        "{}",
        text(&out.stdout)
    );
    let st = a.status_json();
    let ui = st["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["stream"] == "ui")
        .unwrap()
        .clone();
    assert_eq!(
        (ui["source"].as_str(), ui["host"].as_str()),
        (Some("remote"), Some("host-c")),
        "{st}"
    );
}

#[test]
fn issue_16_a_claimer_killed_after_its_push_is_explained_and_repaired() {
    let server = Server::start();
    let a = Machine::new(&server, "host-a");
    assert_eq!(verdict(&a.bash("alice", "claim api")), Ok(Verdict::Allow));
    let marker = a.repo.base.join("pushed");
    let mut claim = a.tool("claim", "alice");
    claim
        .arg("api")
        .env(session_lock::leases::ops::PAUSE_SWITCH, &marker)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = claim.spawn().unwrap();
    assert!(
        eventually(Duration::from_secs(30), || marker.exists()),
        "the claim never pushed"
    );
    // kill -9 between the push and the local record.
    let _ = Command::new("kill")
        .args(["-9", &child.id().to_string()])
        .status();
    let _ = child.wait();
    assert!(server.lease("api").is_some());
    assert!(!a.pushed_path("api").exists());
    let st = a.status_json();
    let notes = st["notes"].to_string();
    assert!(
        notes.contains("interrupted") && notes.contains("claim api again"),
        "{st}"
    );

    let (code, _, err) = a.claim("alice", "api", &[]);
    assert_eq!(code, Some(0), "{err}");
    assert!(a.pushed_path("api").exists());
    assert_eq!(
        server.lease("api").unwrap()["generation"],
        1,
        "the same holder: same generation"
    );
    assert!(a.status_json()["notes"].is_null(), "repaired");
}

#[test]
fn issue_16_without_the_key_nothing_touches_the_network() {
    let r = Repo::new();
    r.plan("api", 1, &["src/api/**"]);
    r.git(&["remote", "add", "origin", "git://127.0.0.1:1/none.git"]);
    r.claim("alice", "api");
    let (code, _, err) = r.run({
        let mut c = r.tool_as("claim", "alice");
        c.arg("api");
        c
    });
    assert_eq!(code, 0, "{err}");
    assert!(!r.exists("session-lock/.leases"));
    let _ = Path::new("");
}

#[test]
fn issue_16_the_remote_check_reports_a_server_that_refuses_custom_refs() {
    let server = Server::start();
    let a = Machine::new(&server, "host-a");
    let remote = server.url();
    assert_eq!(
        session_lock::leases::ops::check_remote(&a.repo.root, &remote),
        Ok(())
    );
    let probes = Command::new("git")
        .args(["for-each-ref", "refs/session-lock/probe/"])
        .current_dir(server.base.path().join("team.git"))
        .output()
        .unwrap();
    assert!(probes.stdout.is_empty(), "the probe ref is deleted again");

    let hook = server.base.path().join("team.git/hooks/pre-receive");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        "#!/bin/sh\nwhile read old new ref; do case \"$ref\" in refs/session-lock/*) echo \"custom refs are not allowed here\" >&2; exit 1;; esac; done\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = session_lock::leases::ops::check_remote(&a.repo.root, &remote).unwrap_err();
    assert!(
        err.contains("refuses refs under refs/session-lock/"),
        "{err}"
    );
    let (code, _, err) = a.claim("alice", "api", &[]);
    assert_eq!(code, Some(8), "{err}");
    assert!(
        err.contains("refuses refs under refs/session-lock/"),
        "{err}"
    );
}

/// `m`'s tool `name` run by `who` with its clock `ahead_ms` ahead of the system's.
fn tool_ahead(m: &Machine, name: &str, who: &str, ahead_ms: u64) -> Command {
    let mut c = m.tool(name, who);
    c.env("SESSION_LOCK_CLOCK_AHEAD_MS", ahead_ms.to_string());
    c
}

/// Issue 29, item 9: of four machines claiming one stream at once, every loser is told who
/// holds it (exit 4), never that the remote refuses the refs: the remote's answer to a lost
/// compare-and-swap is read as the race it is.
#[test]
fn issue_29_every_loser_of_a_claim_race_is_told_the_holder() {
    let server = Server::start();
    let machines: Vec<Machine> = (0..4)
        .map(|i| Machine::new(&server, &format!("host-{i}")))
        .collect();
    let rounds = std::env::var("LEASE_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    for round in 0..rounds {
        let stream = STREAMS[round % STREAMS.len()];
        let results: Vec<(usize, String, Option<i32>, String)> = std::thread::scope(|s| {
            let handles: Vec<_> = machines
                .iter()
                .enumerate()
                .map(|(i, m)| {
                    let who = format!("r{round:02}m{i}");
                    s.spawn(move || {
                        let (code, _, err) = m.claim(&who, stream, &[]);
                        (i, who, code, err)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let winners: Vec<_> = results.iter().filter(|r| r.2 == Some(0)).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:#?}");
        let (wm, who, _, _) = winners[0];
        for r in results.iter().filter(|r| r.2 != Some(0)) {
            assert_eq!(
                r.2,
                Some(4),
                "round {round}: a loser was not told the holder: {r:?}"
            );
            assert!(
                r.3.contains(&sid(who)[..8]) && r.3.contains(&machines[*wm].host),
                "round {round}: {r:?}"
            );
        }
        let mut release = machines[*wm].tool("release", who);
        release.arg(stream);
        let (code, _, err) = machines[*wm].repo.run(release);
        assert_eq!(code, 0, "release: {err}");
    }
}

/// Issue 29, item 10: a machine whose clock steps back (an NTP correction after running ahead)
/// keeps seeing other machines' leases: its mirror follows the remote, its guard blocks their
/// files, and its claim of a held stream is told the holder.
#[test]
fn issue_29_a_clock_stepping_back_keeps_other_machines_leases_in_sight() {
    let server = Server::start();
    let a = Machine::new(&server, "host-a");
    let b = Machine::new(&server, "host-b");
    // B's clock runs ten minutes ahead while it refreshes, then steps back.
    let (code, _, err) = b.repo.run({
        let mut c = tool_ahead(&b, "status", "person", 600_000);
        c.env_remove("CLAUDE_CODE_SESSION_ID")
            .arg("--refresh-leases");
        c
    });
    assert_eq!(code, 0, "{err}");
    assert_eq!(a.claim("alice", "api", &[]).0, Some(0));
    let (code, _, err) = b.refresh();
    assert_eq!(code, 0, "{err}");
    let out = b.edit("bob", "src/api/x.ts");
    assert!(
        blocked(&out).is_some_and(|r| r.contains("alice00") && r.contains("host-a")),
        "B's guard lost sight of A's lease: {} {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    let (code, _, err) = b.claim("bob", "api", &[]);
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("alice00") && err.contains("host-a"), "{err}");
    // The guard's own refresher is not held back by a stamp from the future either. The call
    // runs a few refresh intervals later (the claim just refreshed the mirror), no sleep.
    let stamp = b.repo.path("session-lock/.leases/refresh.stamp");
    let future = session_lock::time::now_ms() + 600_000;
    std::fs::write(&stamp, future.to_string()).unwrap();
    let mut later = b.repo.tool("guard");
    later
        .env("SESSION_LOCK_HOST", &b.host)
        .env("SESSION_LOCK_CLOCK_AHEAD_MS", "5000");
    let call = b.repo.payload("bob", "Bash", json!({"command": "ls"}));
    crate::support::lifecycle::run_with_stdin(later, call.to_string().as_bytes());
    assert!(
        eventually(Duration::from_secs(10), || std::fs::read_to_string(&stamp)
            .is_ok_and(|t| t.trim().parse::<u64>().is_ok_and(|v| v < future))),
        "no refresher was started"
    );
}

/// Issue 29, item 10: a holder whose clock stepped back keeps its lease alive on the remote:
/// its heartbeat is pushed by the refresher although the last one pushed is "in the future".
#[test]
fn issue_29_a_holder_whose_clock_stepped_back_keeps_pushing_heartbeats() {
    let server = Server::start();
    let a = Machine::new(&server, "host-a");
    assert_eq!(verdict(&a.bash("alice", "claim api")), Ok(Verdict::Allow));
    let mut claim = tool_ahead(&a, "claim", "alice", 600_000);
    claim.arg("api").arg("--quiet");
    let (code, _, err) = a.repo.run(claim);
    assert_eq!(code, 0, "{err}");
    let before = server.lease("api").unwrap();
    // Back to the right time: the session works on (its lock beats), the refresher runs.
    a.repo.age_lock("api", 0);
    let (code, _, err) = a.refresh();
    assert_eq!(code, 0, "{err}");
    let after = server.lease("api").unwrap();
    assert_ne!(
        before["heartbeatAt"], after["heartbeatAt"],
        "no heartbeat was pushed: {after}"
    );
    assert_eq!(after["generation"], before["generation"]);
}

/// Issue 29, item 11: a claim killed before its push landed leaves a local lock; another
/// machine then claims the stream. The remote's lease wins on this machine too: the killed
/// claim's session is told and its edits of the stream's files are blocked.
#[test]
fn issue_29_a_claim_killed_before_its_push_loses_to_the_remote_lease() {
    let server = Server::start();
    let a = Machine::new(&server, "host-a");
    let b = Machine::new(&server, "host-b");
    // Alice's guard recorded the lock; her claim never ran (killed before its push).
    assert_eq!(verdict(&a.bash("alice", "claim api")), Ok(Verdict::Allow));
    assert_eq!(b.claim("bob", "api", &[]).0, Some(0));
    let (code, _, err) = a.refresh();
    assert_eq!(code, 0, "{err}");
    let first = a.edit("alice", "src/api/x.ts");
    let reason = blocked(&first).unwrap_or_else(|| {
        panic!(
            "alice may edit bob's stream: {} {}",
            text(&first.stdout),
            text(&first.stderr)
        )
    });
    assert!(
        reason.contains("bob0000") && reason.contains("host-b"),
        "{reason}"
    );
    let again = a.edit("alice", "src/api/x.ts");
    assert!(
        blocked(&again).is_some_and(|r| r.contains("bob0000")),
        "still blocked: {}",
        text(&again.stdout)
    );
}

/// Issue 29, item 11: an empty or cut mirror must not make the guard forget other machines:
/// it protects every stream not claimed here until the mirror is readable again, and says so.
#[test]
fn issue_29_an_unreadable_mirror_fails_closed_and_says_so() {
    let server = Server::start();
    let a = Machine::new(&server, "host-a");
    let b = Machine::new(&server, "host-b");
    assert_eq!(a.claim("alice", "api", &[]).0, Some(0));
    assert_eq!(b.refresh().0, 0);
    assert_eq!(b.claim("bob", "ui", &[]).0, Some(0));
    let mirror = b.repo.path("session-lock/.leases/mirror.json");
    for broken in ["", "{\"remote\": \"origin\", \"fetchedAtMs\": 17"] {
        std::fs::write(&mirror, broken).unwrap();
        // Keep the refresher from rewriting it before the guard reads it.
        let stamp = b.repo.path("session-lock/.leases/refresh.stamp");
        std::fs::write(&stamp, session_lock::time::now_ms().to_string()).unwrap();
        let out = b.edit("bob", "src/api/x.ts");
        let reason = blocked(&out).unwrap_or_else(|| {
            panic!(
                "{broken:?}: allowed: {} {}",
                text(&out.stdout),
                text(&out.stderr)
            )
        });
        assert!(
            reason.contains("mirror.json") && reason.contains("src/api/x.ts"),
            "{broken:?}: {reason}"
        );
        // A stream nobody claimed is protected as well: this clone cannot tell.
        assert!(
            blocked(&b.edit("bob", "src/db/x.ts")).is_some(),
            "{broken:?}"
        );
        // Bob's own stream stays his.
        assert_eq!(
            verdict(&b.edit("bob", "src/ui/x.ts")),
            Ok(Verdict::Allow),
            "{broken:?}"
        );
        std::fs::write(&mirror, "").unwrap();
        assert_eq!(b.refresh().0, 0);
        assert!(blocked(&b.edit("bob", "src/api/x.ts")).is_some_and(|r| r.contains("alice00")));
        assert_eq!(verdict(&b.edit("bob", "src/db/x.ts")), Ok(Verdict::Allow));
    }
}

/// Issue 29, item 11: a release whose record of the pushed lease cannot be read still marks the
/// lease done on the remote (read back from it), or fails saying the lease is still live.
#[test]
fn issue_29_a_release_with_an_unreadable_lease_record_still_ends_the_lease() {
    let mut server = Server::start();
    let a = Machine::new(&server, "host-a");
    for (stream, reachable) in [("api", true), ("ui", false)] {
        assert_eq!(a.claim("alice", stream, &[]).0, Some(0));
        std::fs::write(a.pushed_path(stream), "{\"sha\": ").unwrap();
        if !reachable {
            server.stop();
        }
        let mut release = a.tool("release", "alice");
        release.arg(stream);
        let (code, out, err) = a.repo.run(release);
        if reachable {
            assert_eq!(code, 0, "{out}{err}");
            assert_eq!(server.lease(stream).unwrap()["done"], true, "{out}{err}");
        } else {
            assert_ne!(code, 0, "reported success: {out}{err}");
            assert!(
                err.contains("may still be live")
                    && err.contains(&format!("held/{stream}.json"))
                    && err.contains("Connection refused"),
                "{err}"
            );
            server.resume();
            // Run again once the remote answers: the lease is ended then.
            let mut again = a.tool("release", "alice");
            again.arg(stream);
            let (code, out, err) = a.repo.run(again);
            assert_eq!(code, 0, "{out}{err}");
            assert_eq!(server.lease(stream).unwrap()["done"], true, "{out}{err}");
        }
    }
}

/// Issue 29, item 12: an empty clone id is refused (every clone would share it), naming the
/// file; a misspelled remote is named as such, not as an unreachable server.
#[test]
fn issue_29_an_empty_clone_id_and_a_misspelled_remote_are_named() {
    let server = Server::start();
    let a = Machine::new(&server, "host-a");
    let id = a.repo.path("session-lock/.leases/clone-id");
    std::fs::create_dir_all(id.parent().unwrap()).unwrap();
    std::fs::write(&id, "\n").unwrap();
    let (code, _, err) = a.claim("alice", "api", &[]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("clone-id") && err.contains("empty"), "{err}");
    assert!(
        server.lease("api").is_none(),
        "a lease with an empty clone id was pushed"
    );
    std::fs::remove_file(&id).unwrap();

    a.repo.config(&json!({
        "releaseChecks": [],
        "leases": {"remote": "orgin", "refreshSeconds": 1, "heartbeatPushSeconds": 1},
    }));
    let (code, _, err) = a.claim("alice", "ui", &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("'orgin'") && err.contains("not a remote") && err.contains("origin"),
        "{err}"
    );
    assert!(!err.contains("repository exists"), "{err}");
}

/// The live `status --refresh-leases` processes of the repo at `root`.
fn refreshers(root: &Path) -> Vec<u32> {
    let needle = root.to_string_lossy().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let args: Vec<String> = c
                    .split(|&b| b == 0)
                    .map(|a| String::from_utf8_lossy(a).to_string())
                    .collect();
                args.iter().any(|a| a == "--refresh-leases") && args.contains(&needle)
            })
        })
        .filter(|pid| {
            // A zombie is gone already.
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit(')')
                    .next()
                    .is_some_and(|r| !r.trim_start().starts_with('Z'))
            })
        })
        .collect()
}

/// Issue 29, item 12: a remote that accepts connections and never answers must not pile up
/// refreshers: one runs, one waits, the others leave at once.
#[test]
fn issue_29_a_frozen_remote_does_not_pile_up_refreshers() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = std::sync::Arc::clone(&held);
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            keep.lock().unwrap().push(s);
        }
    });
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.git(&[
        "remote",
        "add",
        "origin",
        &format!("git://127.0.0.1:{port}/team.git"),
    ]);
    repo.config(&json!({"leases": {"remote": "origin", "refreshSeconds": 1}}));
    // Eight guard calls, each a refresh interval after the last (a clock moved ahead, no
    // sleep): each starts a refresher.
    for i in 0..8u64 {
        let mut c = repo.tool("guard");
        c.env("SESSION_LOCK_CLOCK_AHEAD_MS", (i * 1500).to_string());
        let p = repo.payload("x", "Bash", json!({"command": "ls"}));
        crate::support::lifecycle::run_with_stdin(c, p.to_string().as_bytes());
    }
    let root = repo.root.clone();
    assert!(
        eventually(Duration::from_secs(15), || !refreshers(&root).is_empty()),
        "no refresher started"
    );
    let settled = eventually(Duration::from_secs(10), || refreshers(&root).len() <= 2);
    let left = refreshers(&root);
    for pid in &left {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    assert!(
        settled,
        "{} refreshers still waiting on a frozen remote",
        left.len()
    );
}
