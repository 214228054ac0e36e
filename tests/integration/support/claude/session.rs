//! Starting, watching and stopping one CLI run.

use std::ffi::{OsStr, OsString};
use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process, kill_process_group};
use serde_json::Value;

use super::{CliKind, Finished, Home, HomeDir, clean_env};
use crate::support::fake_model::FakeModel;

/// After SIGTERM, how long a process group gets before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(3);
/// After the CLI exits, how long its output pipes may stay open (held by an
/// escaped grandchild) before the output read so far is taken as complete.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Options of one CLI run; see [`super::Claude::session`].
pub struct SessionBuilder {
    kind: CliKind,
    bin: PathBuf,
    cwd: PathBuf,
    base_url: String,
    prompt: String,
    home: Option<PathBuf>,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    permission_mode: Option<String>,
    max_retries: u32,
    timeout: Duration,
    label: Option<String>,
    /// Config text added to the CLI's own config file (Codex's `config.toml`;
    /// for Gemini, JSON merged into `settings.json`).
    config: Vec<String>,
    /// Codex and Gemini: run the hooks without the trust a person gives them.
    bypass_trust: bool,
}

impl SessionBuilder {
    pub(super) fn new(
        kind: CliKind,
        bin: &Path,
        cwd: &Path,
        model: &FakeModel,
        prompt: String,
    ) -> SessionBuilder {
        SessionBuilder {
            kind,
            bin: bin.to_path_buf(),
            cwd: cwd.to_path_buf(),
            base_url: model.base_url(),
            prompt,
            home: None,
            args: Vec::new(),
            env: Vec::new(),
            permission_mode: Some("bypassPermissions".into()),
            max_retries: 0,
            timeout: kind.timeout(),
            label: None,
            config: Vec::new(),
            bypass_trust: true,
        }
    }

    /// Codex and Gemini only: whether the run skips the trust checks a person
    /// answers (default `true`): Codex's hook review and project trust
    /// (`--dangerously-bypass-hook-trust --trust`), Gemini's folder trust
    /// (`GEMINI_CLI_TRUST_WORKSPACE=true`). With `false` the hooks run only where the test's HOME
    /// trusts them, as they would for a user.
    pub fn bypass_trust(mut self, yes: bool) -> SessionBuilder {
        self.bypass_trust = yes;
        self
    }

    /// Adds to the CLI's user config: TOML appended to Codex's
    /// `$CODEX_HOME/config.toml`, or a JSON object merged (top-level keys, one
    /// level deep) into Gemini's `settings.json`. Not for Claude Code (use
    /// [`SessionBuilder::settings_file`]).
    pub fn config(mut self, text: impl Into<String>) -> SessionBuilder {
        self.config.push(text.into());
        self
    }

    /// Appends one argument after the standard ones.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> SessionBuilder {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> SessionBuilder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Sets an environment variable (after the standard ones, so it can
    /// override them).
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> SessionBuilder {
        self.env.push((
            key.as_ref().to_os_string(),
            Some(value.as_ref().to_os_string()),
        ));
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> SessionBuilder {
        self.env.push((key.as_ref().to_os_string(), None));
        self
    }

    /// Uses this HOME instead of a fresh one (to let sessions see each other).
    pub fn home(mut self, home: &Home) -> SessionBuilder {
        self.home = Some(home.path().to_path_buf());
        self
    }

    /// `--session-id <uuid>`.
    pub fn session_id(self, id: &str) -> SessionBuilder {
        self.arg("--session-id").arg(id)
    }

    /// `-n <name>` (the name peers see).
    pub fn name(self, name: &str) -> SessionBuilder {
        self.arg("-n").arg(name)
    }

    /// `--settings <file>` (flag settings, e.g. hooks outside the project).
    pub fn settings_file(self, path: impl AsRef<OsStr>) -> SessionBuilder {
        self.arg("--settings").arg(path)
    }

    /// `--permission-mode <mode>` instead of `bypassPermissions`; `None` passes
    /// no mode at all (the CLI's default).
    pub fn permission_mode(mut self, mode: Option<&str>) -> SessionBuilder {
        self.permission_mode = mode.map(str::to_string);
        self
    }

    /// `CLAUDE_CODE_MAX_RETRIES` (default 0).
    pub fn max_retries(mut self, retries: u32) -> SessionBuilder {
        self.max_retries = retries;
        self
    }

    /// How long [`Session::wait`] lets the run go before killing it.
    pub fn timeout(mut self, timeout: Duration) -> SessionBuilder {
        self.timeout = timeout;
        self
    }

    /// A name for this run in failure messages (default: the prompt).
    pub fn label(mut self, label: impl Into<String>) -> SessionBuilder {
        self.label = Some(label.into());
        self
    }

    /// Starts the CLI.
    #[track_caller]
    pub fn spawn(mut self) -> Session {
        let home = match self.home.take() {
            Some(path) => HomeDir::Shared(path),
            None => HomeDir::Own(Home::new()),
        };
        let mut cmd = Command::new(&self.bin);
        clean_env(&mut cmd);
        cmd.env("HOME", home.path());
        match self.kind {
            CliKind::Claude => self.claude_command(&mut cmd),
            CliKind::Codex => crate::support::codex::command(&mut cmd, home.path(), &self.parts()),
            CliKind::Gemini => {
                crate::support::gemini::command(&mut cmd, home.path(), &self.parts())
            }
        }
        for (key, value) in &self.env {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
        cmd.current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);

        let label = self
            .label
            .unwrap_or_else(|| format!("{:?} -p {:?}", self.kind, self.prompt));
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("{label}: cannot start {}: {e}", self.bin.display()));
        let output = Arc::new(Captured::default());
        if let Some(stdout) = child.stdout.take() {
            read_stdout(stdout, Arc::clone(&output));
        }
        if let Some(stderr) = child.stderr.take() {
            read_stderr(stderr, Arc::clone(&output));
        }
        Session {
            kind: self.kind,
            pid: child.id(),
            child: Some(child),
            started: Instant::now(),
            timeout: self.timeout,
            output,
            home: Some(home),
            label,
        }
    }

    /// Claude Code's command line and environment.
    fn claude_command(&self, cmd: &mut Command) {
        cmd.arg("-p")
            .arg(&self.prompt)
            .args(["--output-format", "stream-json", "--verbose"]);
        if let Some(mode) = &self.permission_mode {
            cmd.args(["--permission-mode", mode]);
        }
        cmd.args(&self.args);
        cmd.env("ANTHROPIC_BASE_URL", &self.base_url)
            .env("ANTHROPIC_API_KEY", "dummy")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("IS_SANDBOX", "1")
            .env("CLAUDE_CODE_MAX_RETRIES", self.max_retries.to_string());
    }

    /// What the other CLIs' command makers read.
    fn parts(&self) -> Parts<'_> {
        Parts {
            prompt: &self.prompt,
            base_url: &self.base_url,
            args: &self.args,
            config: &self.config,
            max_retries: self.max_retries,
            bypass_trust: self.bypass_trust,
        }
    }

    /// Starts the CLI and waits for it (killing it after the timeout).
    #[track_caller]
    pub fn run(self) -> Finished {
        self.spawn().wait()
    }
}

/// A session's options as the command makers of the other CLIs read them.
pub(crate) struct Parts<'a> {
    pub prompt: &'a str,
    pub base_url: &'a str,
    /// Extra arguments, after the standard ones.
    pub args: &'a [OsString],
    pub config: &'a [String],
    pub max_retries: u32,
    pub bypass_trust: bool,
}

/// Spawns every session, then waits for all: for races between sessions.
/// Results are in the order given.
#[track_caller]
pub fn run_all(builders: Vec<SessionBuilder>) -> Vec<Finished> {
    let sessions: Vec<Session> = builders.into_iter().map(SessionBuilder::spawn).collect();
    sessions.into_iter().map(Session::wait).collect()
}

/// Output read from the CLI so far.
#[derive(Default)]
struct Captured {
    state: Mutex<CapturedState>,
    changed: Condvar,
}

#[derive(Default)]
struct CapturedState {
    stdout: String,
    events: Vec<Value>,
    stderr: String,
    stdout_done: bool,
    stderr_done: bool,
}

impl Captured {
    fn lock(&self) -> MutexGuard<'_, CapturedState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn read_stdout(stdout: ChildStdout, out: Arc<Captured>) {
    thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = Vec::new();
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    let mut state = out.lock();
                    state.stdout.push_str(&text);
                    if let Ok(event) = serde_json::from_str::<Value>(text.trim()) {
                        state.events.push(event);
                    }
                    drop(state);
                    out.changed.notify_all();
                }
            }
        }
        out.lock().stdout_done = true;
        out.changed.notify_all();
    });
}

fn read_stderr(mut stderr: ChildStderr, out: Arc<Captured>) {
    thread::spawn(move || {
        let mut buf = [0; 8192];
        loop {
            match stderr.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => out
                    .lock()
                    .stderr
                    .push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
        out.lock().stderr_done = true;
        out.changed.notify_all();
    });
}

/// A running CLI. Dropping it kills its process group.
pub struct Session {
    kind: CliKind,
    child: Option<Child>,
    pid: u32,
    started: Instant,
    timeout: Duration,
    output: Arc<Captured>,
    home: Option<HomeDir>,
    label: String,
}

impl Session {
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The session's HOME.
    pub fn home(&self) -> &Path {
        self.home.as_ref().map_or(Path::new(""), HomeDir::path)
    }

    /// The stream-json events printed so far.
    pub fn events(&self) -> Vec<Value> {
        self.output.lock().events.clone()
    }

    /// Waits for an event matching `pred`; `None` on timeout or when stdout
    /// closed without one.
    pub fn wait_for_event(
        &self,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        let deadline = Instant::now() + timeout;
        let mut state = self.output.lock();
        loop {
            if let Some(event) = state.events.iter().find(|e| pred(e)) {
                return Some(event.clone());
            }
            let now = Instant::now();
            if state.stdout_done || now >= deadline {
                return None;
            }
            state = self
                .output
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Sends SIGTERM to the CLI process (not its group).
    pub fn terminate(&self) -> io::Result<()> {
        self.signal(Signal::TERM)
    }

    /// Sends SIGINT to the CLI process (not its group).
    pub fn interrupt(&self) -> io::Result<()> {
        self.signal(Signal::INT)
    }

    pub fn signal(&self, signal: Signal) -> io::Result<()> {
        let pid = self.rustix_pid()?;
        kill_process(pid, signal).map_err(io::Error::from)
    }

    /// Waits for the exit, up to the builder's timeout from the start.
    #[track_caller]
    pub fn wait(self) -> Finished {
        let left = self.timeout.saturating_sub(self.started.elapsed());
        self.wait_timeout(left)
    }

    /// Waits up to `timeout`; then kills the process group (SIGTERM, SIGKILL)
    /// and reports `timed_out`.
    #[track_caller]
    pub fn wait_timeout(mut self, timeout: Duration) -> Finished {
        let deadline = Instant::now() + timeout;
        let mut status = self.poll_until(deadline);
        let timed_out = status.is_none();
        if timed_out {
            status = self.kill_group();
        }
        let status =
            status.unwrap_or_else(|| panic!("{}: cannot reap pid {}", self.label, self.pid));
        self.child = None;
        let state = self.drain();
        Finished {
            kind: self.kind,
            label: self.label.clone(),
            pid: self.pid,
            status,
            timed_out,
            duration: self.started.elapsed(),
            events: state.events,
            stdout: state.stdout,
            stderr: state.stderr,
            home: self.home.take(),
        }
    }

    fn rustix_pid(&self) -> io::Result<Pid> {
        i32::try_from(self.pid)
            .ok()
            .and_then(Pid::from_raw)
            .ok_or_else(|| io::Error::other(format!("bad pid {}", self.pid)))
    }

    fn poll_until(&mut self, deadline: Instant) -> Option<ExitStatus> {
        let child = self.child.as_mut()?;
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// SIGTERM to the group, SIGKILL after a grace period; the exit status.
    /// Tool and hook processes run in sessions of their own, outside the
    /// group: those still alive once the CLI is gone are killed with their
    /// own groups.
    fn kill_group(&mut self) -> Option<ExitStatus> {
        let pid = self.rustix_pid().ok()?;
        let family = descendants(self.pid);
        let _ = kill_process_group(pid, Signal::TERM);
        let mut status = self.poll_until(Instant::now() + TERM_GRACE);
        if status.is_none() {
            let _ = kill_process_group(pid, Signal::KILL);
            status = self.child.as_mut()?.wait().ok();
        }
        for pid in family
            .into_iter()
            .filter_map(|p| i32::try_from(p).ok().and_then(Pid::from_raw))
        {
            let _ = kill_process_group(pid, Signal::KILL);
            let _ = kill_process(pid, Signal::KILL);
        }
        status
    }

    /// The output once both pipes closed (or a grace period passed).
    fn drain(&self) -> CapturedState {
        let state = self.output.lock();
        let mut state = self
            .output
            .changed
            .wait_timeout_while(state, DRAIN_GRACE, |s| !(s.stdout_done && s.stderr_done))
            .unwrap_or_else(|e| e.into_inner())
            .0;
        std::mem::take(&mut *state)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.child.is_some() {
            let _ = self.kill_group();
        }
    }
}

/// Every living descendant of `root`, from `/proc` (empty where it cannot be read).
fn descendants(root: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    // (pid, parent pid) of every process; the command name in `stat` may hold
    // spaces and parentheses, so the fields are read after its last ')'.
    let parents: Vec<(u32, u32)> = entries
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let after_name = &stat[stat.rfind(')')? + 1..];
            let ppid = after_name.split_whitespace().nth(1)?.parse().ok()?;
            Some((pid, ppid))
        })
        .collect();
    let mut family = vec![root];
    let mut next = 0;
    while next < family.len() {
        let parent = family[next];
        family.extend(
            parents
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        next += 1;
    }
    family.remove(0);
    family
}
