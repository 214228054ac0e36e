//! `send-message send` to a live session, the whole cost as a caller pays it: a new process that
//! verifies the caller, resolves the target, checks the limits, appends (fsynced) to both ledgers,
//! writes the target's socket and sees the message in its transcript.
//!
//! The "session" is this bench: a registry entry naming a `sleep` child (alive by pid + start
//! time), a socket it listens on, and a transcript it appends each message to after a pause of
//! `SEND_BENCH_CLIENT_MS` (default 40: about what the real client takes to write its queue line),
//! as the client does. In the same run it measures the floor (`send-message --version`: a
//! process start and argument parsing), a send with empty ledgers, and a send with 10 000 lines
//! in each ledger; for each send, the client's own write time (socket read → transcript line)
//! and ours after it (transcript line → `send` exited) are reported apart. With
//! `SEND_BENCH_BASELINE_BIN=<another send-message>` (say, one built from main) each case also
//! times that binary, its runs interleaved with this build's on the same ledgers. Run:
//! `scripts/bench-send-message` or `cargo bench --bench send_message` (`SEND_BENCH_RUNS` sets
//! the runs per case, default 60).

// The bench talks to a Unix domain socket, as the client's messaging socket is one.
#[cfg(unix)]
mod unix {
    use std::io::{Read, Write};
    use std::os::unix::net::UnixListener;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    const BIN: &str = env!("CARGO_BIN_EXE_send-message");

    fn median(v: &mut [Duration]) -> Duration {
        v.sort();
        v[v.len() / 2]
    }

    fn p90(v: &mut [Duration]) -> Duration {
        v.sort();
        v[(v.len() * 9 / 10).min(v.len() - 1)]
    }

    fn ms(d: Duration) -> String {
        format!("{:.2} ms", d.as_secs_f64() * 1000.0)
    }

    /// When the fake client read a line, and when it wrote it to the transcript.
    type Writes = std::sync::Arc<std::sync::Mutex<Vec<(Instant, Instant)>>>;

    struct World {
        writes: Writes,
        _dir: tempfile::TempDir,
        home: PathBuf,
        state: PathBuf,
        repo: PathBuf,
        target: String,
        _sleeper: std::process::Child,
    }

    fn slug(p: &Path) -> String {
        p.to_string_lossy()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    }

    fn world() -> World {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().canonicalize().expect("canonical");
        let (home, state, repo) = (root.join("home"), root.join("state"), root.join("repo"));
        for d in [
            home.join(".claude/sessions"),
            state.clone(),
            repo.join(".git"),
            repo.join("session-lock"),
        ] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(
            repo.join("session-lock/config.json"),
            r#"{"messaging":{"ratePerMinute":100000,"maxPendingPerTarget":100000}}"#,
        )
        .expect("config");
        let sleeper = Command::new("sleep")
            .arg("3600")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sleep");
        let pid = sleeper.id();
        let start = session_lock::liveness::start_time(pid).expect("start time");
        let target = "b0000000-0000-4000-8000-000000000001".to_string();
        let sock = root.join("target.sock");
        let transcript = home
            .join(".claude/projects")
            .join(slug(&repo))
            .join(format!("{target}.jsonl"));
        std::fs::create_dir_all(transcript.parent().expect("parent")).expect("mkdir");
        std::fs::write(
            &transcript,
            format!(
                "{{\"type\":\"user\",\"cwd\":{:?},\"permissionMode\":\"default\"}}\n",
                repo
            ),
        )
        .expect("transcript");
        std::fs::write(
            home.join(format!(".claude/sessions/{pid}.json")),
            serde_json::json!({"pid": pid, "sessionId": target, "cwd": repo, "procStart": start,
                "startedAt": 1, "status": "busy", "name": "bench-target", "messagingSocketPath": sock})
            .to_string(),
        )
        .expect("registry");
        let listener = UnixListener::bind(&sock).expect("bind");
        let writes: Writes = Default::default();
        let log = writes.clone();
        let pause = Duration::from_millis(
            std::env::var("SEND_BENCH_CLIENT_MS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(40),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let mut conn = conn;
                let mut text = String::new();
                let _ = conn.read_to_string(&mut text);
                let read = Instant::now();
                std::thread::sleep(pause);
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&transcript)
                    .expect("open transcript");
                // One write per line, as the client appends whole lines (a `writeln!` of a JSON
                // value would write it in a dozen pieces).
                for line in text.lines() {
                    let v: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
                    let mut out = serde_json::json!({"type":"queue-operation","operation":"enqueue","content": v["message"]["content"]})
                        .to_string();
                    out.push('\n');
                    let _ = f.write_all(out.as_bytes());
                }
                let _ = f.flush();
                log.lock().expect("log").push((read, Instant::now()));
            }
        });
        World {
            writes,
            _dir: dir,
            home,
            state,
            repo,
            target,
            _sleeper: sleeper,
        }
    }

    impl Drop for World {
        fn drop(&mut self) {
            let _ = self._sleeper.kill();
            let _ = self._sleeper.wait();
        }
    }

    fn command(w: &World, bin: &str) -> Command {
        let mut c = Command::new(bin);
        for (k, _) in std::env::vars_os() {
            let k = k.to_string_lossy().to_string();
            if k.starts_with("CLAUDE") || k.starts_with("SESSION_LOCK") || k.starts_with("XDG_") {
                c.env_remove(&k);
            }
        }
        c.env("HOME", &w.home)
            .env("SESSION_LOCK_HOME", &w.state)
            .current_dir(&w.repo)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        c
    }

    fn time(mut c: Command, check: impl Fn(&[u8])) -> Duration {
        let start = Instant::now();
        let out = c.output().expect("run");
        let took = start.elapsed();
        check(&out.stdout);
        took
    }

    /// `n` finished messages (queued + delivered, an hour old) in both ledgers.
    fn fill(w: &World, n: usize) {
        let at = session_lock::time::iso(session_lock::time::now_ms() - 3_600_000);
        let mut out = String::new();
        let mut inb = String::new();
        for i in 0..n / 2 {
            let id = format!("f{i:07}-0000-4000-8000-000000000000");
            let q = serde_json::json!({"op":"queued","messageId":id,"at":at,"senderId":"terminal",
                "targetId": w.target, "text": format!("old message {i}"), "senderMode":"prompting"});
            let d = serde_json::json!({"op":"delivered","messageId":id,"at":at,"via":"socket"});
            for s in [&mut out, &mut inb] {
                s.push_str(&q.to_string());
                s.push('\n');
                s.push_str(&d.to_string());
                s.push('\n');
            }
        }
        let m = w.state.join("messaging");
        std::fs::create_dir_all(m.join("outbox")).expect("mkdir");
        std::fs::create_dir_all(m.join("inbound")).expect("mkdir");
        std::fs::write(m.join("outbox/terminal.jsonl"), out).expect("outbox");
        std::fs::write(m.join(format!("inbound/{}.jsonl", w.target)), inb).expect("inbound");
    }

    type Series = Vec<(Duration, Duration, Duration)>;

    /// One series per binary, their runs interleaved: per send, (whole send, the client's
    /// write, ours after the client's write).
    fn sends(w: &World, runs: usize, tag: &str, bins: &[(&str, String)]) -> Vec<Series> {
        let mut out: Vec<Series> = vec![Vec::new(); bins.len()];
        for i in 0..runs {
            for (b, (_, bin)) in bins.iter().enumerate() {
                out[b].push(send_once(w, bin, &format!("{tag} {b}"), i));
            }
        }
        out
    }

    fn send_once(w: &World, bin: &str, tag: &str, i: usize) -> (Duration, Duration, Duration) {
        let mut c = command(w, bin);
        c.args([
            "--json",
            "send",
            "--to",
            "bench-target",
            &format!("{tag} message {i}"),
        ]);
        let whole = time(c, |stdout| {
            let v: serde_json::Value = serde_json::from_slice(stdout).unwrap_or_default();
            assert_eq!(v["status"], "accepted", "{v}");
        });
        let end = Instant::now();
        let (read, wrote) = w.writes.lock().expect("log").pop().expect("a write");
        (whole, wrote - read, end.saturating_duration_since(wrote))
    }

    pub fn main() {
        if std::env::args().any(|a| a == "--list") {
            return;
        }
        let runs: usize = std::env::var("SEND_BENCH_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(60)
            .max(3);
        let w = world();
        let mut bins = vec![("this build", BIN.to_string())];
        if let Ok(b) = std::env::var("SEND_BENCH_BASELINE_BIN")
            && !b.is_empty()
        {
            bins.push(("baseline binary", b));
        }
        let mut floor: Vec<Duration> = (0..runs)
            .map(|_| {
                let mut c = command(&w, BIN);
                c.arg("--version");
                time(c, |_| {})
            })
            .collect();
        let empty = sends(&w, runs, "empty", &bins);
        fill(&w, 10_000);
        let lines = std::fs::read_to_string(w.state.join("messaging/outbox/terminal.jsonl"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        let full = sends(&w, runs, "full", &bins);
        let f = median(&mut floor);
        println!("send-message send to a live session ({runs} runs each)");
        println!(
            "  floor (send-message --version):  median {}  p90 {}",
            ms(f),
            ms(p90(&mut floor))
        );
        let mut cases = Vec::new();
        for (b, (who, bin)) in bins.iter().enumerate() {
            if b > 0 {
                println!("  {who}: {bin}");
            }
            cases.push((format!("{who}: send, empty ledgers"), &empty[b]));
            cases.push((format!("{who}: send, 10 000 ledger lines"), &full[b]));
        }
        for (name, v) in cases {
            let mut whole: Vec<Duration> = v.iter().map(|x| x.0).collect();
            let mut client: Vec<Duration> = v.iter().map(|x| x.1).collect();
            let mut after: Vec<Duration> = v.iter().map(|x| x.2).collect();
            let m = median(&mut whole);
            println!(
                "  {name:<44} median {}  p90 {}  (+{} over the floor)",
                ms(m),
                ms(p90(&mut whole)),
                ms(m.saturating_sub(f))
            );
            println!(
                "    the client's own write: median {}   ours after it (to exit): median {}  p90 {}",
                ms(median(&mut client)),
                ms(median(&mut after)),
                ms(p90(&mut after))
            );
        }
        println!("  (outbox held {lines} lines before the second series)");
    }
}

fn main() {
    #[cfg(unix)]
    unix::main();
    #[cfg(not(unix))]
    eprintln!("send_message bench: skipped: the client's messaging socket is a Unix domain socket");
}
