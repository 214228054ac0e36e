//! The CLI as a child process: spawned in its own process group with stdin `/dev/null`, its
//! stdout read line by line, its stderr's tail kept, and stopped on a deadline or a cancel flag:
//! SIGINT to the group (the CLI ends the turn cleanly), then SIGTERM, then SIGKILL to the group
//! and every descendant still found (Bash commands run in their own sessions). After the CLI
//! exits, whatever is left of its group is killed before it is reaped, and so are the
//! descendants noted while it ran (every second, by pid and start time) that are still alive,
//! so no child outlives the run.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the CLI gets to end its turn after SIGINT.
pub const INT_GRACE: Duration = Duration::from_secs(5);
/// How long it gets after SIGTERM.
pub const TERM_GRACE: Duration = Duration::from_secs(3);
/// After the CLI exits, how long its stdout may stay open (held by an escaped grandchild).
pub const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How often the CLI's descendants are noted (to find them after it exits).
pub const WATCH_EVERY: Duration = Duration::from_secs(1);
/// How much of stderr is kept.
pub const STDERR_TAIL: usize = 16 * 1024;
const TICK: Duration = Duration::from_millis(50);

/// Why run-agent stopped the CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Timeout,
    Cancelled,
}

/// How a run ended.
#[derive(Debug)]
pub struct Ended {
    pub status: Option<ExitStatus>,
    pub stop: Option<Stop>,
    pub stderr_tail: String,
}

/// A spawned CLI.
pub struct Running {
    child: Child,
    lines: Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Disconnects when the stderr reader is done.
    stderr_done: Receiver<()>,
}

impl Running {
    /// Spawns `cmd` (stdin, stdout, stderr and the process group are set here).
    pub fn spawn(mut cmd: Command) -> std::io::Result<Running> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let mut child = cmd.spawn()?;
        let (tx, lines) = channel();
        if let Some(out) = child.stdout.take() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(out);
                let mut buf = Vec::new();
                loop {
                    buf.clear();
                    match reader.read_until(b'\n', &mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            let line = String::from_utf8_lossy(&buf).into_owned();
                            if tx.send(line).is_err() {
                                break;
                            }
                        }
                    }
                }
            });
        }
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let (done_tx, stderr_done) = channel::<()>();
        if let Some(mut err) = child.stderr.take() {
            let tail = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let _done = done_tx;
                let mut chunk = [0u8; 4096];
                while let Ok(n) = err.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut t) = tail.lock() {
                        t.extend_from_slice(&chunk[..n]);
                        if t.len() > STDERR_TAIL {
                            let cut = t.len() - STDERR_TAIL;
                            t.drain(..cut);
                        }
                    }
                }
            });
        }
        Ok(Running {
            child,
            lines,
            stderr,
            stderr_done,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Feeds every stdout line to `on_line` until the CLI has exited (or was stopped at
    /// `deadline` / when `cancel` turns true), then cleans up its group and reaps it.
    pub fn drive(
        mut self,
        deadline: Instant,
        cancel: &AtomicBool,
        on_line: &mut dyn FnMut(&str),
        on_stop: &mut dyn FnMut(Stop, &'static str),
    ) -> Ended {
        let pid = self.pid();
        let mut stop: Option<Stop> = None;
        let mut stage: Option<(&'static str, Instant)> = None;
        let mut stdout_open = true;
        // Descendants seen while the CLI ran, with their start times: the ones in sessions of
        // their own (Bash commands) are not in the group and are orphaned when the CLI exits.
        let mut seen: Vec<(u32, Option<String>)> = Vec::new();
        let mut next_watch = Instant::now() + WATCH_EVERY;
        loop {
            if stdout_open {
                match self.lines.recv_timeout(TICK) {
                    Ok(line) => on_line(&line),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => stdout_open = false,
                }
            } else {
                std::thread::sleep(TICK);
            }
            if self.exited() {
                break;
            }
            let now = Instant::now();
            if now >= next_watch {
                next_watch = now + WATCH_EVERY;
                for d in descendants(pid) {
                    if !seen.iter().any(|(p, _)| *p == d) {
                        seen.push((d, crate::liveness::start_time(d)));
                    }
                }
            }
            match (stop, stage) {
                (None, _) => {
                    let why = if cancel.load(Ordering::Relaxed) {
                        Some(Stop::Cancelled)
                    } else if now >= deadline {
                        Some(Stop::Timeout)
                    } else {
                        None
                    };
                    if let Some(why) = why {
                        stop = Some(why);
                        let first = if cfg!(unix) { "SIGINT" } else { "kill" };
                        on_stop(why, first);
                        stage = Some((first, now));
                        signal(pid, first, &mut self.child);
                    }
                }
                (Some(_), Some(("SIGINT", at))) if now >= at + INT_GRACE => {
                    stage = Some(("SIGTERM", now));
                    signal(pid, "SIGTERM", &mut self.child);
                }
                (Some(_), Some(("SIGTERM", at))) if now >= at + TERM_GRACE => {
                    stage = Some(("SIGKILL", now));
                    kill_tree(pid, &mut self.child);
                }
                (Some(_), Some(("SIGKILL" | "kill", at))) if now >= at + TERM_GRACE => {
                    // Still not gone after SIGKILL: try again, the loop ends on exit.
                    stage = Some(("SIGKILL", now));
                    kill_tree(pid, &mut self.child);
                }
                _ => {}
            }
        }
        // The CLI is a zombie now (not reaped): its pid still names the group, so this reaches
        // only what is left of it.
        kill_group(pid);
        kill_noted(&seen);
        let drain_until = Instant::now() + DRAIN_GRACE;
        while stdout_open {
            let left = drain_until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.lines.recv_timeout(left) {
                Ok(line) => on_line(&line),
                Err(_) => stdout_open = false,
            }
        }
        let left = drain_until.saturating_duration_since(Instant::now());
        let _ = self.stderr_done.recv_timeout(left);
        let status = self.child.wait().ok();
        let stderr_tail = self
            .stderr
            .lock()
            .map(|t| String::from_utf8_lossy(&t).into_owned())
            .unwrap_or_default();
        Ended {
            status,
            stop,
            stderr_tail,
        }
    }

    /// True once the CLI has exited, without reaping it (unix) so its pid stays reserved.
    #[cfg(unix)]
    fn exited(&mut self) -> bool {
        use rustix::process::{Pid, WaitIdOptions, waitid};
        let Some(pid) = Pid::from_raw(self.child.id() as i32) else {
            return true;
        };
        let opts = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        match waitid(rustix::process::WaitId::Pid(pid), opts) {
            Ok(Some(_)) => true,
            Ok(None) => false,
            Err(_) => self.child.try_wait().map(|s| s.is_some()).unwrap_or(true),
        }
    }

    #[cfg(not(unix))]
    fn exited(&mut self) -> bool {
        self.child.try_wait().map(|s| s.is_some()).unwrap_or(true)
    }
}

#[cfg(unix)]
fn signal(pid: u32, name: &str, _child: &mut Child) {
    use rustix::process::{Pid, Signal, kill_process_group};
    let sig = match name {
        "SIGINT" => Signal::INT,
        "SIGTERM" => Signal::TERM,
        _ => Signal::KILL,
    };
    if let Some(p) = Pid::from_raw(pid as i32) {
        let _ = kill_process_group(p, sig);
    }
}

#[cfg(not(unix))]
fn signal(_pid: u32, _name: &str, child: &mut Child) {
    let _ = child.kill();
}

#[cfg(unix)]
fn kill_group(pid: u32) {
    use rustix::process::{Pid, Signal, kill_process_group};
    if let Some(p) = Pid::from_raw(pid as i32) {
        let _ = kill_process_group(p, Signal::KILL);
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: u32) {}

/// Every live descendant of `pid` (children first found through their parent links).
pub fn descendants(pid: u32) -> Vec<u32> {
    use sysinfo::{ProcessRefreshKind, ProcessesToUpdate, System};
    let mut sys = System::new();
    sys.refresh_processes_specifics(ProcessesToUpdate::All, true, ProcessRefreshKind::nothing());
    let mut found: Vec<u32> = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for (p, proc_) in sys.processes() {
            if proc_.parent().map(|pp| pp.as_u32()) == Some(parent) && !found.contains(&p.as_u32())
            {
                found.push(p.as_u32());
            }
        }
        i += 1;
    }
    found.remove(0);
    found
}

/// SIGKILL to the noted processes that are still the same processes (pid and start time).
fn kill_noted(seen: &[(u32, Option<String>)]) {
    for (pid, start) in seen {
        if start.is_some() && crate::liveness::is_alive(*pid, start.as_deref()) {
            kill_pid(*pid);
        }
    }
}

#[cfg(unix)]
fn kill_pid(pid: u32) {
    use rustix::process::{Pid, Signal, kill_process};
    if let Some(p) = Pid::from_raw(pid as i32) {
        let _ = kill_process(p, Signal::KILL);
    }
}

#[cfg(not(unix))]
fn kill_pid(pid: u32) {
    use sysinfo::{Pid, ProcessesToUpdate, System};
    let mut sys = System::new();
    let p = Pid::from_u32(pid);
    sys.refresh_processes(ProcessesToUpdate::Some(&[p]), true);
    if let Some(proc_) = sys.process(p) {
        proc_.kill();
    }
}

/// SIGKILL to the group and to every descendant (those in other sessions too).
fn kill_tree(pid: u32, child: &mut Child) {
    let others = descendants(pid);
    kill_group(pid);
    let _ = child.kill();
    for d in others {
        kill_pid(d);
    }
}

/// The process facts run-agent's reaping stands on, on every platform (the Windows build runs
/// these under wine): a child is found below this process and killed by pid and start time.
#[cfg(test)]
mod tree_tests {
    use super::*;

    #[test]
    fn a_noted_descendant_is_found_and_killed() {
        let mut child = crate::liveness::test_process::waiting();
        let pid = child.id();
        assert!(descendants(std::process::id()).contains(&pid));
        let start = crate::liveness::start_time(pid);
        assert!(start.is_some(), "a running child has a start time");
        kill_noted(&[(pid, Some("another start".into()))]);
        assert!(
            child.try_wait().unwrap().is_none(),
            "another start time is another process: left alone"
        );
        kill_noted(&[(pid, start)]);
        // Its stdin stays open (`wait` would close it first), so only the kill ends it. The
        // status is not checked: on Windows the kill is `taskkill /F`, whose exit code for the
        // victim differs between Windows (1) and wine (0).
        let t0 = Instant::now();
        while child.try_wait().unwrap().is_none() {
            assert!(t0.elapsed() < Duration::from_secs(10), "still running");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!descendants(std::process::id()).contains(&pid));
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    /// Signals are delivered asynchronously: allow a moment.
    fn gone_soon(pid: u32) -> bool {
        let t0 = Instant::now();
        let alive = |pid| crate::liveness::is_alive(pid, None);
        while alive(pid) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        !alive(pid)
    }

    /// Drives `r` for at most `within`, never cancelled: its trimmed stdout lines, every stop
    /// it made (reason and signal), and how it ended.
    fn drive_collecting(
        r: Running,
        within: Duration,
    ) -> (Vec<String>, Vec<(Stop, &'static str)>, Ended) {
        let never = AtomicBool::new(false);
        let mut lines = Vec::new();
        let mut stops = Vec::new();
        let end = r.drive(
            Instant::now() + within,
            &never,
            &mut |l| lines.push(l.trim().to_string()),
            &mut |why, sig| stops.push((why, sig)),
        );
        (lines, stops, end)
    }

    #[test]
    fn lines_are_read_and_the_exit_is_seen() {
        let r = Running::spawn(sh("echo one; echo two >&2; echo three; exit 3")).unwrap();
        let (lines, stops, end) = drive_collecting(r, Duration::from_secs(30));
        assert!(stops.is_empty(), "no stop: {stops:?}");
        assert_eq!(lines, vec!["one", "three"]);
        assert_eq!(end.status.unwrap().code(), Some(3));
        assert_eq!(end.stop, None);
        assert_eq!(end.stderr_tail, "two\n");
    }

    #[test]
    fn a_deadline_interrupts_the_group_and_nothing_survives() {
        // The shell ignores nothing; its background child shares the group.
        let r = Running::spawn(sh("sleep 60 & echo $!; wait")).unwrap();
        let (lines, stops, end) = drive_collecting(r, Duration::from_millis(300));
        assert_eq!(end.stop, Some(Stop::Timeout));
        assert_eq!(stops, vec![(Stop::Timeout, "SIGINT")]);
        // A background job of a non-interactive shell ignores SIGINT: the group kill after the
        // shell's exit is what ends it.
        let bg: u32 = lines[0].parse().unwrap();
        assert!(gone_soon(bg), "background child {bg} survived");
    }

    #[test]
    fn a_child_that_ignores_sigint_and_sigterm_is_killed() {
        let r = Running::spawn(sh(
            "trap '' INT TERM; echo ready; while :; do sleep 0.1; done",
        ))
        .unwrap();
        let pid = r.pid();
        let cancel = AtomicBool::new(true);
        let t0 = Instant::now();
        let end = r.drive(
            Instant::now() + Duration::from_secs(60),
            &cancel,
            &mut |_| {},
            &mut |_, _| {},
        );
        assert_eq!(end.stop, Some(Stop::Cancelled));
        assert!(t0.elapsed() >= INT_GRACE + TERM_GRACE);
        assert!(gone_soon(pid));
    }

    #[test]
    fn descendants_left_behind_by_a_normal_exit_are_killed() {
        // The CLI's Bash commands run in sessions of their own; one still running when the CLI
        // exits is noted while it ran and killed after.
        let r = Running::spawn(sh("setsid sleep 60 & echo $!; sleep 1.5; exit 0")).unwrap();
        let (lines, stops, end) = drive_collecting(r, Duration::from_secs(30));
        assert!(stops.is_empty(), "no stop: {stops:?}");
        assert_eq!(end.status.unwrap().code(), Some(0));
        let bg: u32 = lines[0].parse().unwrap();
        assert!(gone_soon(bg), "{bg} survived the run");
    }

    #[test]
    fn descendants_in_other_sessions_are_found_and_killed() {
        // The shell leads its group, so `setsid` execs in place: $! is the sleep, in a session
        // of its own that no group signal reaches.
        let mut r = Running::spawn(sh("setsid sleep 60 & echo $!; sleep 60")).unwrap();
        let pid = r.pid();
        let line = r.lines.recv_timeout(Duration::from_secs(10)).unwrap();
        let bg: u32 = line.trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(descendants(pid).contains(&bg));
        kill_tree(pid, &mut r.child);
        let _ = r.child.wait();
        assert!(gone_soon(bg), "{bg} survived");
    }
}
