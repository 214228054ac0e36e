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
