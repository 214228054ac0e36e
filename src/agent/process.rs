//! The CLI as a child process: spawned in its own process group with the prompt on its stdin,
//! its stdout read line by line, its stderr's tail kept, and stopped on a deadline or a cancel
//! flag: SIGINT to the group (the CLI ends the turn cleanly), then SIGTERM, then SIGKILL to the
//! group and every descendant still found (Bash commands run in their own sessions).
//!
//! The run is the reaper of everything the turn starts. On Linux this process becomes a child
//! subreaper before the CLI is spawned, so a process the turn leaves behind (`(sleep &)`,
//! `nohup`, a `setsid` double fork) is re-parented to it instead of to init. When the CLI has
//! exited, whatever is left of its group is killed before it is reaped, then every process below
//! this one that belongs to the turn (in the CLI's group, or in a session other than this
//! process's) is killed and reaped, round after round until none is left: nothing outlives the
//! run unless the caller asked to keep background processes. Processes that were already below
//! this process when the CLI was spawned, and other runs' CLIs with theirs, are never touched.
//! Elsewhere, orphans go to the system, so the descendants seen while the CLI runs (looked at
//! every second, by pid and start time) are what is ended.
//!
//! Several runs may share this process (a bus waking sessions, tests) and end side by side. An
//! orphan re-parented here tells nothing of the run it came from, so each run's CLI starts with
//! its own [`RUN_VAR`] in its environment, which everything the turn starts inherits: a
//! leftover that carries another run's id is that run's, and is never ended by this one (a run
//! that kept its background processes keeps them whoever ends after it). A run started inside
//! a turn adds its id to the one it inherited, so the outer run still owns what it leaves.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::liveness::{self, ProcStat};

/// How long the CLI gets to end its turn after SIGINT.
pub const INT_GRACE: Duration = Duration::from_secs(5);
/// How long it gets after SIGTERM.
pub const TERM_GRACE: Duration = Duration::from_secs(3);
/// After the CLI exits, how long its stdout may stay open (held by an escaped grandchild).
pub const DRAIN_GRACE: Duration = Duration::from_secs(2);
/// How often the CLI's descendants are noted where orphans are not re-parented to this process.
pub const WATCH_EVERY: Duration = Duration::from_secs(1);
/// How long ending the turn's leftover processes may take (they are SIGKILLed: it is quick).
pub const LEFTOVER_GRACE: Duration = Duration::from_secs(3);
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

/// The CLIs of the runs under way in this process: a run's cleanup never ends another's.
static ACTIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// The variable naming the run a process belongs to: `<pid>.<n>` of the process that spawned
/// the CLI, after the id the CLI inherited (`<outer>/<pid>.<n>`) when runs nest.
pub const RUN_VAR: &str = "SESSION_LOCK_RUN";

/// A new run id, below the one this process runs in, if any.
fn new_run_id() -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let own = format!("{}.{n}", std::process::id());
    match std::env::var(RUN_VAR) {
        Ok(outer) if !outer.is_empty() => format!("{outer}/{own}"),
        _ => own,
    }
}

/// Does a process whose environment names the run `tag` (`None`: names none) belong to `run`?
/// Its own id and the runs nested in it do; a process that names no run may (the older rules
/// decide); another run's does not.
fn of_run(tag: Option<&str>, run: &str) -> bool {
    tag.is_none_or(|t| t == run || t.strip_prefix(run).is_some_and(|r| r.starts_with('/')))
}

fn active() -> std::sync::MutexGuard<'static, Vec<u32>> {
    ACTIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes this process the reaper of its orphaned descendants (Linux; once, for good).
fn become_subreaper() {
    #[cfg(target_os = "linux")]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
        });
    }
}

/// A spawned CLI.
pub struct Running {
    child: Child,
    /// This run's id ([`RUN_VAR`]).
    run: String,
    /// What already ran below this process at spawn time (pid, start): not the turn's.
    spared: Vec<(u32, String)>,
    keep_background: bool,
    lines: Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// Disconnects when the stderr reader is done.
    stderr_done: Receiver<()>,
}

impl Running {
    /// Spawns `cmd` (stdin, stdout, stderr and the process group are set here) and writes
    /// `input` to its stdin from a thread of its own (a prompt of any size cannot block the
    /// run), then closes it.
    pub fn spawn(mut cmd: Command, input: Vec<u8>) -> std::io::Result<Running> {
        become_subreaper();
        let spared = liveness::descendants(std::process::id())
            .into_iter()
            .map(|(pid, s)| (pid, s.start))
            .collect();
        let run = new_run_id();
        cmd.env(RUN_VAR, &run)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
        }
        let mut child = cmd.spawn()?;
        active().push(child.id());
        if let Some(mut stdin) = child.stdin.take() {
            std::thread::spawn(move || {
                // A CLI that exits before reading it all just closes the pipe: nothing to do.
                let _ = stdin.write_all(&input);
            });
        }
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
            run,
            spared,
            keep_background: false,
            lines,
            stderr,
            stderr_done,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Leaves the turn's background processes running after the run (servers it started); the
    /// CLI and its process group are stopped all the same.
    pub fn keep_background(mut self, keep: bool) -> Running {
        self.keep_background = keep;
        self
    }

    /// Feeds every stdout line to `on_line` until the CLI has exited (or was stopped at
    /// `deadline` / when `cancel` turns true), then cleans up its group and reaps it.
    pub fn drive(
        mut self,
        deadline: Instant,
        cancel: &dyn Fn() -> bool,
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
        // Once stdout is closed the CLI is exiting: its exit is looked for at once and then
        // at growing intervals up to TICK, so the turn's end does not wait a whole TICK.
        let mut nap = Duration::from_millis(1);
        loop {
            if stdout_open {
                match self.lines.recv_timeout(TICK) {
                    Ok(line) => on_line(&line),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => stdout_open = false,
                }
            } else {
                std::thread::sleep(nap);
                nap = (nap * 2).min(TICK);
            }
            if self.exited() {
                break;
            }
            let now = Instant::now();
            if !REPARENTS && now >= next_watch {
                next_watch = now + WATCH_EVERY;
                for (d, facts) in liveness::descendants(pid) {
                    if !seen.iter().any(|(p, _)| *p == d) {
                        seen.push((d, Some(facts.start)));
                    }
                }
            }
            match (stop, stage) {
                (None, _) => {
                    let why = if cancel() {
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
        end_leftovers(pid, &self.run, &self.spared, self.keep_background);
        if !self.keep_background {
            kill_noted(&seen);
        }
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
        active().retain(|p| *p != pid);
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

/// SIGKILL to the noted processes that are still the same processes (pid and start time).
fn kill_noted(seen: &[(u32, Option<String>)]) {
    for (pid, start) in seen {
        if start.is_some() && liveness::is_alive(*pid, start.as_deref()) {
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
    let others = liveness::descendants(pid);
    kill_group(pid);
    let _ = child.kill();
    for (d, _) in others {
        kill_pid(d);
    }
}

/// True where orphans of the turn are re-parented to this process (it is their subreaper).
const REPARENTS: bool = cfg!(target_os = "linux");

/// Which run a process names in its environment ([`RUN_VAR`]).
type RunOf<'a> = &'a dyn Fn(u32) -> Option<String>;

/// The processes in `table` that the turn of `cli` (the run `run`) left below `me`: in the
/// CLI's group, below the CLI, or in a session other than `my_session` (the CLI's Bash commands
/// and whatever they detached). Not the `spared` ones (pid and start), the subtrees of `others`
/// (other runs' CLIs), nor anything below them, nor a process `run_of` says is another run's.
fn turn_leftovers(
    table: &[(u32, ProcStat)],
    me: u32,
    (cli, run): (u32, &str),
    my_session: Option<u32>,
    (spared, others): (&[(u32, String)], &[u32]),
    run_of: RunOf,
) -> Vec<(u32, ProcStat)> {
    let below_me = liveness::descendants_in(table, me);
    let below_cli: Vec<u32> = liveness::descendants_in(table, cli)
        .iter()
        .map(|d| d.0)
        .collect();
    let mut untouchable: Vec<u32> = Vec::new();
    for (pid, facts) in &below_me {
        let is_spared = spared.iter().any(|(p, s)| p == pid && *s == facts.start);
        if is_spared || (others.contains(pid) && *pid != cli) {
            untouchable.push(*pid);
            untouchable.extend(liveness::descendants_in(table, *pid).iter().map(|d| d.0));
        }
    }
    below_me
        .into_iter()
        .filter(|(pid, facts)| {
            *pid != cli
                && !untouchable.contains(pid)
                && (facts.pgrp == Some(cli)
                    || below_cli.contains(pid)
                    || (facts.session.is_some() && facts.session != my_session))
        })
        .filter(|(pid, _)| of_run(run_of(*pid).as_deref(), run))
        .collect()
}

/// Ends and reaps what the turn of `cli` left running below this process, round after round
/// (a process may fork while the one before is killed), for at most [`LEFTOVER_GRACE`]. What is
/// left of the CLI's group is always ended; the rest unless `keep_background`.
fn end_leftovers(cli: u32, run: &str, spared: &[(u32, String)], keep_background: bool) {
    if !REPARENTS {
        kill_group(cli);
        return;
    }
    let me = std::process::id();
    let my_session = liveness::stat(me).and_then(|s| s.session);
    let until = Instant::now() + LEFTOVER_GRACE;
    let mut killed: Vec<u32> = Vec::new();
    loop {
        let others = active().clone();
        let table = liveness::process_table();
        let run_of = |pid: u32| liveness::env_var(pid, RUN_VAR);
        let mut left = turn_leftovers(
            &table,
            me,
            (cli, run),
            my_session,
            (spared, &others),
            &run_of,
        );
        if keep_background {
            left.retain(|(_, facts)| facts.pgrp == Some(cli));
        }
        // Members of the group that are not below this process are ended here too.
        kill_group(cli);
        for (pid, facts) in &left {
            if liveness::is_alive(*pid, Some(&facts.start)) {
                kill_pid(*pid);
            }
            if !killed.contains(pid) {
                killed.push(*pid);
            }
        }
        killed.retain(|pid| !reaped(*pid));
        if (left.is_empty() && killed.is_empty()) || Instant::now() >= until {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps `pid` if it is an exited child of this process; true once no trace of it is left.
#[cfg(unix)]
fn reaped(pid: u32) -> bool {
    use rustix::process::{Pid, WaitOptions, waitpid};
    if let Some(p) = Pid::from_raw(pid as i32) {
        let _ = waitpid(Some(p), WaitOptions::NOHANG);
    }
    !liveness::exists(pid)
}

#[cfg(not(unix))]
fn reaped(pid: u32) -> bool {
    !liveness::exists(pid)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    fn start(script: &str) -> Running {
        Running::spawn(sh(script), Vec::new()).unwrap()
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
        let mut lines = Vec::new();
        let mut stops = Vec::new();
        let end = r.drive(
            Instant::now() + within,
            &|| false,
            &mut |l| lines.push(l.trim().to_string()),
            &mut |why, sig| stops.push((why, sig)),
        );
        (lines, stops, end)
    }

    #[test]
    fn lines_are_read_and_the_exit_is_seen() {
        let r = start("echo one; echo two >&2; echo three; exit 3");
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
        let r = start("sleep 60 & echo $!; wait");
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
        let r = start("trap '' INT TERM; echo ready; while :; do sleep 0.1; done");
        let pid = r.pid();
        let t0 = Instant::now();
        let end = r.drive(
            Instant::now() + Duration::from_secs(60),
            &|| true,
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
        let r = start("setsid sleep 60 & echo $!; sleep 1.5; exit 0");
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
        let mut r = start("setsid sleep 60 & echo $!; sleep 60");
        let pid = r.pid();
        let line = r.lines.recv_timeout(Duration::from_secs(10)).unwrap();
        let bg: u32 = line.trim().parse().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(liveness::descendants(pid).iter().any(|d| d.0 == bg));
        kill_tree(pid, &mut r.child);
        let _ = r.child.wait();
        assert!(gone_soon(bg), "{bg} survived");
    }

    fn facts(ppid: u32, pgrp: u32, session: u32) -> ProcStat {
        ProcStat {
            start: format!("s{ppid}"),
            ppid: Some(ppid),
            pgrp: Some(pgrp),
            session: Some(session),
        }
    }

    #[test]
    fn leftovers_are_the_turns_and_only_the_turns() {
        // me = 100 (session 100); cli = 200, a zombie by now (not in the table).
        let table = vec![
            (300, facts(100, 200, 100)), // in the CLI's group, re-parented: the turn's
            (301, facts(100, 301, 301)), // a Bash command's detached child: the turn's
            (302, facts(301, 301, 301)), // below it: the turn's
            (400, facts(100, 100, 100)), // the caller's own child, started during the run
            (500, facts(100, 500, 100)), // another run's CLI
            (501, facts(500, 501, 501)), // its Bash command (another session): not this turn's
            (600, facts(100, 600, 600)), // spared: already there at spawn
            (601, facts(600, 601, 601)), // below a spared one
            (700, facts(1, 700, 700)),   // not below me at all
        ];
        let spared = vec![(600, "s100".to_string())];
        let no_tags = |_: u32| None;
        let left_of =
            |spared: &[(u32, String)], tags: &dyn Fn(u32) -> Option<String>| -> Vec<u32> {
                turn_leftovers(
                    &table,
                    100,
                    (200, "100.1"),
                    Some(100),
                    (spared, &[200, 500]),
                    tags,
                )
                .iter()
                .map(|d| d.0)
                .collect()
            };
        assert_eq!(left_of(&spared, &no_tags), vec![300, 301, 302]);
        // A spared pid whose start time changed is a new process (pid reuse): not spared.
        let reused = vec![(600, "other".to_string())];
        let left = left_of(&reused, &no_tags);
        assert!(left.contains(&600) && left.contains(&601));
        // What names another run is that run's (kept, or its own to end); what names this run
        // or a run nested in it is this turn's.
        let tags = |pid: u32| match pid {
            301 => Some("100.2".to_string()),
            302 => Some("100.1/7.1".to_string()),
            300 => Some("100.10".to_string()),
            _ => None,
        };
        let left = left_of(&spared, &tags);
        assert_eq!(left, vec![302]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn orphans_of_a_quick_turn_are_re_parented_here_and_ended() {
        // Each escapes differently and the shell exits at once (no poll would see them).
        let r = start(
            "(sleep 3021 & echo $! >&2) 2>&1; \
             nohup sleep 3022 >/dev/null 2>&1 & echo $!; \
             setsid sh -c 'sleep 3023 & echo $!' </dev/null; exit 0",
        );
        let (lines, stops, end) = drive_collecting(r, Duration::from_secs(30));
        assert!(stops.is_empty(), "no stop: {stops:?}");
        assert_eq!(end.status.unwrap().code(), Some(0));
        let pids: Vec<u32> = lines.iter().filter_map(|l| l.parse().ok()).collect();
        assert_eq!(pids.len(), 3, "{lines:?}");
        for pid in pids {
            assert!(
                !liveness::exists(pid),
                "{pid} outlived the run (or was left a zombie)"
            );
        }
    }

    /// Issue 29, item 13: runs in one process (tests, a bus that wakes sessions) end side by
    /// side. A run that ends after another run kept its server must not take that server for
    /// its own leftover: it is below this process, in a session of its own, started after this
    /// run's spawn, as this run's own detached processes are.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_run_ending_beside_another_leaves_that_runs_kept_server_alone() {
        let other = start("echo started; sleep 1; exit 0");
        other.lines.recv_timeout(Duration::from_secs(30)).unwrap();
        let kept =
            start("setsid sh -c 'sleep 3025 & echo $!' </dev/null; exit 0").keep_background(true);
        let (lines, _, _) = drive_collecting(kept, Duration::from_secs(30));
        let pid: u32 = lines[0].parse().unwrap();
        assert!(liveness::is_alive(pid, None), "the server {pid} was kept");
        let (_, stops, end) = drive_collecting(other, Duration::from_secs(30));
        assert!(stops.is_empty() && end.status.is_some_and(|s| s.success()));
        let alive = liveness::is_alive(pid, None);
        kill_pid(pid);
        assert!(gone_soon(pid));
        assert!(alive, "the other run's end killed the kept server {pid}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn keep_background_leaves_a_detached_server_running() {
        let r =
            start("setsid sh -c 'sleep 3024 & echo $!' </dev/null; exit 0").keep_background(true);
        let (lines, _, _) = drive_collecting(r, Duration::from_secs(30));
        let pid: u32 = lines[0].parse().unwrap();
        assert!(liveness::is_alive(pid, None), "the server {pid} was kept");
        kill_pid(pid);
        assert!(gone_soon(pid));
    }
}
