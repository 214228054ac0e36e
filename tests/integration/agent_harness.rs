//! Running the real `run-agent` binary in tests: a clean environment pointed at a fake model,
//! its own HOME and state home, and its stdout/exit code/events read back.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

use crate::support::claude::{Claude, Home};

pub const RUN_AGENT: &str = env!("CARGO_BIN_EXE_run-agent");
pub const GUARD: &str = env!("CARGO_BIN_EXE_guard");

/// What one `run-agent` invocation did.
#[derive(Debug)]
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// The one JSON object on stdout.
    pub result: Value,
    /// The `--events` lines.
    pub events: Vec<Value>,
    pub duration: Duration,
}

impl Outcome {
    pub fn describe(&self, what: &str) -> String {
        format!(
            "{what}\nexit: {:?}\nstdout: {}\nstderr: {}\nevents: {}",
            self.code,
            self.stdout,
            self.stderr,
            self.events_joined("\n        ")
        )
    }

    pub fn events_of(&self, kind: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == kind).collect()
    }

    #[track_caller]
    pub fn assert_ok(&self) -> &Outcome {
        assert_eq!(self.code, Some(0), "{}", self.describe("expected exit 0"));
        assert_eq!(self.result["ok"], true, "{}", self.describe("expected ok"));
        self
    }

    /// Everything this run wrote anywhere a caller could see.
    pub fn all_output(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.stdout,
            self.stderr,
            self.events_joined("\n")
        )
    }

    /// The events as JSON text, joined by `separator`.
    fn events_joined(&self, separator: &str) -> String {
        self.events
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join(separator)
    }
}

/// One `run-agent` invocation being set up.
pub struct RunAgent {
    cmd: Command,
    stdin: Option<String>,
    events: PathBuf,
    _scratch: TempDir,
}

/// Environment a surrounding session or CI could leak into the run.
fn leaks(key: &str) -> bool {
    key == "CLAUDECODE"
        || key.starts_with("CLAUDE_")
        || key.starts_with("ANTHROPIC_")
        || key.starts_with("SESSION_LOCK_")
        || key == "AI_AGENT"
        || key == "IS_SANDBOX"
        || key.starts_with("XDG_")
        || key == "CI"
}

impl RunAgent {
    /// `run-agent` with the CLI, a home, a fake model's base URL and the test's `args`.
    pub fn new(claude: Option<&Claude>, home: &Home, base_url: &str) -> RunAgent {
        let scratch = tempfile::Builder::new()
            .prefix("sl-agent-")
            .tempdir()
            .expect("scratch dir");
        let mut cmd = Command::new(RUN_AGENT);
        for (key, _) in std::env::vars_os() {
            if leaks(&key.to_string_lossy()) {
                cmd.env_remove(&key);
            }
        }
        let events = scratch.path().join("events.jsonl");
        cmd.env("HOME", home.path())
            .env("SESSION_LOCK_HOME", scratch.path().join("state"))
            .env("ANTHROPIC_BASE_URL", base_url)
            .env("ANTHROPIC_API_KEY", "dummy")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("CLAUDE_CODE_MAX_RETRIES", "0")
            .env("SESSION_LOCK_GUARD_BIN", GUARD)
            .arg("--events")
            .arg(&events);
        match claude {
            Some(c) => cmd.env("SESSION_LOCK_CLAUDE_BIN", c.bin()),
            None => cmd.env(
                "SESSION_LOCK_CLAUDE_BIN",
                scratch.path().join("no-claude-here"),
            ),
        };
        RunAgent {
            cmd,
            stdin: None,
            events,
            _scratch: scratch,
        }
    }

    pub fn args<I, S>(mut self, args: I) -> RunAgent
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.cmd.args(args);
        self
    }

    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> RunAgent {
        self.cmd.env(key, value);
        self
    }

    /// Options as JSON on stdin (`--json`).
    pub fn json(mut self, options: &Value) -> RunAgent {
        self.cmd.arg("--json");
        self.stdin = Some(options.to_string());
        self
    }

    #[track_caller]
    pub fn run(self) -> Outcome {
        self.spawn().wait()
    }

    /// Starts the run; [`Running::wait`] reads its outcome.
    #[track_caller]
    pub fn spawn(mut self) -> Running {
        use std::io::Write;
        let started = Instant::now();
        self.cmd
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = self.cmd.spawn().expect("run-agent starts");
        if let Some(text) = self.stdin.take()
            && let Some(mut input) = child.stdin.take()
        {
            input.write_all(text.as_bytes()).expect("stdin written");
        }
        Running {
            child,
            started,
            events: self.events,
            _scratch: self._scratch,
        }
    }
}

/// A `run-agent` still running.
pub struct Running {
    child: std::process::Child,
    started: Instant,
    events: PathBuf,
    _scratch: TempDir,
}

impl Running {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The events written so far.
    pub fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.events)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    #[track_caller]
    pub fn wait(self) -> Outcome {
        let started = self.started;
        let out = self.child.wait_with_output().expect("run-agent finishes");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let lines: Vec<&str> = stdout.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(
            lines.len(),
            1,
            "exactly one JSON object on stdout:\n{stdout}\nstderr: {stderr}"
        );
        let result: Value = serde_json::from_str(lines[0]).expect("stdout is JSON");
        let events = std::fs::read_to_string(&self.events)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("event lines are JSON"))
            .collect();
        Outcome {
            code: out.status.code(),
            stdout,
            stderr,
            result,
            events,
            duration: started.elapsed(),
        }
    }
}

/// True while `/proc/<pid>` names a live (not zombie) process.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.contains(") Z "),
        Err(_) => false,
    }
}

/// Polls until `pid` is gone or 5 s pass; whether it is gone.
pub fn gone_soon(pid: u32) -> bool {
    let t0 = Instant::now();
    while alive(pid) && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    !alive(pid)
}

/// Writes `text` with permission bits `mode`.
pub fn write_mode(path: &Path, text: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("file written");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}
