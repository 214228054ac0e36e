//! A bed for `send-message` tests without a real client: a private HOME whose client registry
//! lists "sessions" that are really `sleep` processes of this test (so pid + start time are
//! alive), each with a token key file, a transcript, and optionally a messaging socket this test
//! listens on. The listener records every line and, when told to, appends the message to the
//! transcript the way the client does when it takes a message into its queue.

use crate::support::repo::GitRepo;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tempfile::TempDir;

pub const BIN: &str = env!("CARGO_BIN_EXE_send-message");
pub const GUARD: &str = env!("CARGO_BIN_EXE_guard");

pub fn slug(cwd: &Path) -> String {
    cwd.to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// One fake session.
pub struct Fake {
    pub id: String,
    pub pid: u32,
    pub token: String,
    pub cwd: PathBuf,
    pub transcript: PathBuf,
    pub socket: Option<PathBuf>,
    /// Lines received on the socket.
    pub inbox: Arc<Mutex<Vec<Value>>>,
    /// When true, a received message is appended to the transcript (the client took it).
    pub take: Arc<AtomicBool>,
    child: Child,
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Fake {
    /// Stops the "client" the way a crash does: the process is gone, its registry entry and
    /// socket stay behind.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn received(&self) -> Vec<Value> {
        self.inbox.lock().unwrap().clone()
    }

    /// Waits until `n` lines came in (or 5 s).
    pub fn wait_received(&self, n: usize) -> Vec<Value> {
        let until = Instant::now() + Duration::from_secs(5);
        while self.received().len() < n && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.received()
    }

    /// Appends what the client writes when the message goes into a model request and the
    /// model answers it: the message is delivered.
    pub fn answer(&self, id: &str) {
        append(
            &self.transcript,
            &json!({"type":"attachment","attachment":{"type":"queued_command","prompt": format!("Session message {id} from …")}}),
        );
        append(
            &self.transcript,
            &json!({"type":"assistant","message":{"model":"claude-opus-5-5","content":[{"type":"text","text":"ok"}]}}),
        );
    }

    /// Appends a line naming `id` to the transcript (the client took the message).
    pub fn confirm(&self, id: &str) {
        append(
            &self.transcript,
            &json!({"type":"queue-operation","operation":"enqueue","content": format!("Session message {id} from …")}),
        );
    }
}

pub fn append(path: &Path, v: &Value) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(f, "{v}").unwrap();
}

/// What a fake session looks like.
#[derive(Clone, Debug)]
pub struct Spec {
    pub name: Option<String>,
    pub cwd: Option<PathBuf>,
    pub socket: bool,
    pub take: bool,
    pub mode: String,
}

impl Spec {
    pub fn named(name: &str) -> Spec {
        Spec {
            name: Some(name.into()),
            cwd: None,
            socket: true,
            take: true,
            mode: "default".into(),
        }
    }
    pub fn cwd(mut self, p: &Path) -> Spec {
        self.cwd = Some(p.to_path_buf());
        self
    }
    pub fn no_socket(mut self) -> Spec {
        self.socket = false;
        self
    }
    pub fn not_taking(mut self) -> Spec {
        self.take = false;
        self
    }
    pub fn mode(mut self, m: &str) -> Spec {
        self.mode = m.into();
        self
    }
}

pub struct Bed {
    pub dir: TempDir,
    pub home: PathBuf,
    pub state: PathBuf,
    pub repo: GitRepo,
    counter: usize,
}

pub fn uuid(n: usize) -> String {
    format!(
        "{:08x}-0000-4000-8000-{:012x}",
        0x5e55_0000u32 as usize + n,
        n
    )
}

impl Bed {
    pub fn new() -> Bed {
        let dir = tempfile::Builder::new()
            .prefix("sl-msg-")
            .tempdir()
            .unwrap();
        let home = dir.path().canonicalize().unwrap().join("home");
        let state = dir.path().canonicalize().unwrap().join("state");
        std::fs::create_dir_all(home.join(".claude/sessions")).unwrap();
        std::fs::create_dir_all(&state).unwrap();
        Bed {
            dir,
            home,
            state,
            repo: GitRepo::new(),
            counter: 0,
        }
    }

    pub fn config(&self, messaging: Value) {
        self.repo.write(
            "session-lock/config.json",
            &json!({"messaging": messaging}).to_string(),
        );
    }

    pub fn transcript_path(&self, cwd: &Path, id: &str) -> PathBuf {
        self.home
            .join(".claude/projects")
            .join(slug(cwd))
            .join(format!("{id}.jsonl"))
    }

    /// A transcript on disk for a session that is not running.
    pub fn cold(&mut self, name: &str, cwd: &Path) -> (String, PathBuf) {
        self.counter += 1;
        let id = uuid(self.counter + 500);
        let t = self.transcript_path(cwd, &id);
        std::fs::create_dir_all(t.parent().unwrap()).unwrap();
        append(
            &t,
            &json!({"type":"user","cwd": cwd, "permissionMode":"default","sessionId": id, "message":{"role":"user","content":"hi"}}),
        );
        append(
            &t,
            &json!({"type":"custom-title","customTitle": name, "sessionId": id}),
        );
        (id, t)
    }

    /// A running fake session.
    pub fn live(&mut self, spec: Spec) -> Fake {
        self.live_as(spec, |_, _| {
            let mut c = Command::new("sleep");
            c.arg("600");
            c
        })
    }

    /// A running fake session whose "client" is the process `client(id, token)` makes (it
    /// starts with the session's id and the client's child token in its environment).
    pub fn live_as(&mut self, spec: Spec, client: impl FnOnce(&str, &str) -> Command) -> Fake {
        self.counter += 1;
        let n = self.counter;
        let id = uuid(n);
        let cwd = spec
            .cwd
            .clone()
            .unwrap_or_else(|| self.repo.path().to_path_buf());
        let token = format!("{:032x}", 0xabcdef00u64 + n as u64);
        let mut cmd = client(&id, &token);
        self.env(&mut cmd);
        let child = cmd
            .env("CLAUDE_CODE_SESSION_ID", &id)
            .env("CLAUDE_CODE_MESSAGING_TOKEN", format!("child-{token}"))
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id();
        let start = session_lock::liveness::start_time(pid).unwrap();
        let socket = spec
            .socket
            .then(|| self.dir.path().join(format!("s{n}.sock")));
        let mut entry = json!({
            "pid": pid, "sessionId": id, "cwd": cwd, "startedAt": 1_796_000_000_000u64 + n as u64,
            "procStart": start, "kind": "interactive", "status": "busy", "peerProtocol": 1,
        });
        if let Some(name) = &spec.name {
            entry["name"] = json!(name);
            entry["nameSource"] = json!("user");
        }
        if let Some(s) = &socket {
            entry["messagingSocketPath"] = json!(s);
        }
        let sessions = self.home.join(".claude/sessions");
        std::fs::write(sessions.join(format!("{pid}.json")), entry.to_string()).unwrap();
        std::fs::write(
            sessions.join(format!("{pid}.0123abcd.key")),
            json!({"peerToken": token, "procStart": start}).to_string(),
        )
        .unwrap();
        let transcript = self.transcript_path(&cwd, &id);
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        append(
            &transcript,
            &json!({"type":"user","cwd": cwd, "permissionMode": spec.mode, "sessionId": id}),
        );
        let inbox = Arc::new(Mutex::new(Vec::new()));
        let take = Arc::new(AtomicBool::new(spec.take));
        if let Some(s) = &socket {
            let listener = UnixListener::bind(s).unwrap();
            let (inbox, take, t) = (inbox.clone(), take.clone(), transcript.clone());
            std::thread::spawn(move || {
                for conn in listener.incoming().flatten() {
                    let mut conn = conn;
                    let mut text = String::new();
                    let _ = conn.read_to_string(&mut text);
                    for line in text.lines().filter(|l| !l.trim().is_empty()) {
                        let v: Value = serde_json::from_str(line).unwrap_or(json!({"raw": line}));
                        if take.load(Ordering::SeqCst) {
                            append(
                                &t,
                                &json!({"type":"queue-operation","operation":"enqueue","content": v["message"]["content"]}),
                            );
                        }
                        inbox.lock().unwrap().push(v);
                    }
                }
            });
        }
        Fake {
            id,
            pid,
            token,
            cwd,
            transcript,
            socket,
            inbox,
            take,
            child,
        }
    }

    /// `send-message` in the repo, as the terminal (`as_` None) or as a fake session.
    pub fn cmd(&self, as_: Option<&Fake>) -> Command {
        let mut c = Command::new(BIN);
        self.env(&mut c);
        if let Some(f) = as_ {
            c.env("CLAUDE_CODE_SESSION_ID", &f.id)
                .env("CLAUDE_CODE_MESSAGING_TOKEN", &f.token);
        }
        c
    }

    pub fn env(&self, c: &mut Command) {
        for k in [
            "CLAUDE_CODE_SESSION_ID",
            "CLAUDE_CODE_MESSAGING_TOKEN",
            "CLAUDE_CODE_MESSAGING_SOCKET",
            "CLAUDE_PROJECT_DIR",
            "CLAUDE_CONFIG_DIR",
            "CLAUDE_PID",
            "SESSION_LOCK_MESSAGING_SOCKET",
            "SESSION_LOCK_CLAUDE_BIN",
            "SESSION_LOCK_MESSAGING_CRASH_AT",
            "SESSION_LOCK_CLOCK_AHEAD_MS",
            "XDG_STATE_HOME",
        ] {
            c.env_remove(k);
        }
        c.env("HOME", &self.home)
            .env("SESSION_LOCK_HOME", &self.state)
            .current_dir(self.repo.path())
            .stdin(Stdio::null());
    }

    /// Runs `send-message --json <args>`: (exit code, JSON on stdout or Null, stderr).
    pub fn run(&self, as_: Option<&Fake>, args: &[&str]) -> (i32, Value, String) {
        let out = self.cmd(as_).arg("--json").args(args).output().unwrap();
        parse(out)
    }

    /// [`Bed::run`] with the command's clock `ahead` of the system's: the command runs "that
    /// much later" (time limits pass without a sleep).
    pub fn run_later(
        &self,
        ahead: Duration,
        as_: Option<&Fake>,
        args: &[&str],
    ) -> (i32, Value, String) {
        let out = self
            .cmd(as_)
            .env("SESSION_LOCK_CLOCK_AHEAD_MS", ahead.as_millis().to_string())
            .arg("--json")
            .args(args)
            .output()
            .unwrap();
        parse(out)
    }

    pub fn outbox(&self, id: &str) -> Vec<Value> {
        read_jsonl(&self.outbox_path(id))
    }

    pub fn inbound(&self, id: &str) -> Vec<Value> {
        read_jsonl(&self.inbound_path(id))
    }

    pub fn outbox_path(&self, id: &str) -> PathBuf {
        self.state
            .join("messaging/outbox")
            .join(format!("{id}.jsonl"))
    }

    pub fn inbound_path(&self, id: &str) -> PathBuf {
        self.state
            .join("messaging/inbound")
            .join(format!("{id}.jsonl"))
    }

    /// The guard on a hook payload of this fake session.
    pub fn guard(&self, f: &Fake, event: &str, mode: &str) -> Value {
        let payload = json!({
            "session_id": f.id, "transcript_path": f.transcript, "cwd": f.cwd,
            "hook_event_name": event, "permission_mode": mode,
            "tool_name": "Bash", "tool_input": {"command": "true"}, "tool_response": {"stdout": ""},
        });
        let mut c = Command::new(GUARD);
        self.env(&mut c);
        c.env("CLAUDE_PID", f.pid.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(payload.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        serde_json::from_str(&text).unwrap_or(Value::Null)
    }
}

pub fn read_jsonl(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub fn parse(out: Output) -> (i32, Value, String) {
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let v = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    (
        out.status.code().unwrap_or(-1),
        v,
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// Cuts the last line of a ledger, which must be `op` for message `id`: what a machine crash
/// does to a line that was written but not synced (the synced lines before it stay).
pub fn lose_last_line(p: &Path, op: &str, id: &str) {
    let text = std::fs::read_to_string(p).unwrap();
    let body = text.strip_suffix('\n').expect("whole lines");
    let cut = body.rfind('\n').map_or(0, |i| i + 1);
    let last: Value = serde_json::from_str(&body[cut..]).unwrap();
    assert_eq!(
        (last["op"].as_str(), last["messageId"].as_str()),
        (Some(op), Some(id)),
        "{last}"
    );
    std::fs::write(p, &text[..cut]).unwrap();
}

/// The ops the ledger holds for one message, in order.
pub fn ops(lines: &[Value], id: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["messageId"] == id)
        .map(|l| l["op"].as_str().unwrap_or("").to_string())
        .collect()
}
