//! Process facts, read from the kernel: is a process alive, when did it start, who is its
//! parent, which processes is it running under. A pid alone is not enough (pids are reused), so a
//! process is named by its pid plus its start time, the way Claude Code's session registry records
//! it (`procStart`: on Linux the start time in clock ticks, field 22 of `/proc/<pid>/stat`).
//!
//! Linux reads `/proc` directly (a few microseconds); macOS and Windows read the process table
//! through sysinfo (`proc_pidinfo` and `sysctl KERN_PROCARGS2` on macOS), refreshing only the
//! pids asked about. A start time is written the way the platform's client records it: clock
//! ticks since boot on Linux, `ps -o lstart` text in UTC on macOS, seconds since the epoch on
//! Windows. This module is the only reader of `/proc/<pid>/stat` and of another process's
//! environment.

/// What the kernel says about one running process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// The start time, comparable with a recorded one (`procStart`).
    pub start: String,
    /// The parent pid (`None` at the top of the tree or when unknown).
    pub ppid: Option<u32>,
    /// The process group and the session (`None` where the platform does not say).
    pub pgrp: Option<u32>,
    pub session: Option<u32>,
}

/// The kernel's facts about `pid`, or `None` when no such process exists (or it is a zombie).
pub fn stat(pid: u32) -> Option<ProcStat> {
    if pid == 0 {
        return None;
    }
    platform::stat(pid)
}

/// The start time of `pid` as a string comparable with a recorded one, or `None` when no such
/// process exists (or it is a zombie).
pub fn start_time(pid: u32) -> Option<String> {
    stat(pid).map(|s| s.start)
}

/// The parent of `pid` (`None` at the top or when unknown).
pub fn parent_of(pid: u32) -> Option<u32> {
    stat(pid)?.ppid
}

/// The deepest process tree walked; a longer chain is cut there.
const MAX_DEPTH: usize = 64;

/// `pid`'s ancestors, nearest first (its parent, grandparent, … up to pid 1), excluding `pid`.
pub fn ancestors(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut cur = parent_of(pid);
    while let Some(p) = cur {
        if out.len() >= MAX_DEPTH || out.contains(&p) {
            break;
        }
        out.push(p);
        cur = if p > 1 { parent_of(p) } else { None };
    }
    out
}

/// True when `pid` is `ancestor` or runs below it.
pub fn descends_from(pid: u32, ancestor: u32) -> bool {
    pid == ancestor || ancestors(pid).contains(&ancestor)
}

/// True when `pid` is running and, when `start` is known, is the same process that was recorded.
pub fn is_alive(pid: u32, start: Option<&str>) -> bool {
    same_process(start_time(pid).as_deref(), start)
}

/// Is the process running now (its start time `now`, `None` when gone) the one recorded with
/// start time `then` (any, when `None`)?
fn same_process(now: Option<&str>, then: Option<&str>) -> bool {
    match (now, then) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(now), Some(then)) => now == then,
    }
}

/// [`is_alive`] for one look at many records (a table of locks): each pid's start time is read
/// once, however many records name it. Keep it for that one look only: a process may end or
/// its pid be reused right after.
#[derive(Debug, Default)]
pub struct Look(std::collections::HashMap<u32, Option<String>>);

impl Look {
    pub fn is_alive(&mut self, pid: u32, start: Option<&str>) -> bool {
        let now = self.0.entry(pid).or_insert_with(|| start_time(pid));
        same_process(now.as_deref(), start)
    }
}

/// Parses the text of `/proc/<pid>/stat`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_stat(text: &str) -> Option<ProcStat> {
    // The command name (field 2) is in parentheses and may hold spaces or ')'.
    let after = &text[text.rfind(')')? + 1..];
    let mut fields = after.split_ascii_whitespace();
    let state = fields.next()?; // field 3
    if state == "Z" || state == "X" {
        return None;
    }
    let ppid = fields.next()?.parse().ok().filter(|&p: &u32| p > 0); // field 4
    let pgrp = fields.next()?.parse().ok(); // field 5
    let session = fields.next()?.parse().ok(); // field 6
    // Field 22 is the 16th after the session.
    let start = fields.nth(15)?.to_string();
    Some(ProcStat {
        start,
        ppid,
        pgrp,
        session,
    })
}

/// Linux: `/proc`, read directly.
#[cfg(target_os = "linux")]
mod procfs {
    pub fn stat(pid: u32) -> Option<super::ProcStat> {
        use std::io::Read;
        // One open, reads into a buffer the file fits in, one close: `read_to_string` would ask
        // for the size first (0 for a /proc file) and then grow from 32 bytes, four reads more.
        // The line is at most about 1 KB (a 15-byte name and 52 numbers); were it ever longer,
        // the fields read here (up to the 22nd) still sit in the first few hundred bytes.
        let mut file = std::fs::File::open(format!("/proc/{pid}/stat")).ok()?;
        let mut buf = [0u8; 4096];
        let mut len = 0;
        while len < buf.len() {
            match file.read(&mut buf[len..]) {
                Ok(0) => break,
                Ok(n) => len += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return None,
            }
        }
        super::parse_stat(std::str::from_utf8(&buf[..len]).ok()?)
    }

    /// Every pid in `/proc`.
    pub fn pids() -> Vec<u32> {
        std::fs::read_dir("/proc")
            .map(|dir| {
                dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn exists(pid: u32) -> bool {
        std::path::Path::new(&format!("/proc/{pid}")).exists()
    }

    /// `/proc/<pid>/environ`: the environment the process was started with, NUL-separated.
    pub fn environ(pid: u32) -> Option<Vec<u8>> {
        std::fs::read(format!("/proc/{pid}/environ")).ok()
    }

    /// The environment of every process whose environment can be read.
    pub fn environs() -> Vec<(u32, Vec<u8>)> {
        pids()
            .into_iter()
            .filter_map(|pid| Some((pid, environ(pid)?)))
            .collect()
    }
}

/// macOS and Windows: the process table as sysinfo reads it (`proc_pidinfo` and, for the
/// environment, `sysctl KERN_PROCARGS2` on macOS; the toolhelp snapshot and the process's PEB on
/// Windows). Built on Linux too for its tests, which hold it against [`procfs`].
#[cfg(any(not(target_os = "linux"), test))]
mod table {
    use sysinfo::{Pid, Process, ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System};

    /// The table refreshed for `pids` (all when `None`) with what `kind` asks for.
    fn look(pids: Option<&[Pid]>, kind: ProcessRefreshKind) -> System {
        let mut sys = System::new();
        let which = pids.map_or(ProcessesToUpdate::All, ProcessesToUpdate::Some);
        sys.refresh_processes_specifics(which, true, kind);
        sys
    }

    /// A process that has not exited (a zombie has).
    fn running(p: &Process) -> bool {
        !matches!(p.status(), ProcessStatus::Zombie | ProcessStatus::Dead)
    }

    /// The start time the way the platform's client records it: on macOS what
    /// `LC_ALL=C TZ=UTC ps -o lstart= -p <pid>` prints (Claude Code's `procStart` there), else
    /// the seconds since the epoch.
    pub fn start_text(secs: u64) -> String {
        if cfg!(target_os = "macos") {
            crate::time::ps_lstart(secs)
        } else {
            secs.to_string()
        }
    }

    /// `pid` as the kernel's type (`None` for 0 and for what does not fit).
    #[cfg(unix)]
    fn unix_pid(pid: u32) -> Option<rustix::process::Pid> {
        rustix::process::Pid::from_raw(i32::try_from(pid).ok()?)
    }

    /// The process group and the session of `pid`, from the kernel (`getpgid`, `getsid`). A
    /// leader outside this pid namespace (a container entered with `docker exec`, `unshare
    /// --pid`) is 0, as `/proc` says it; rustix's wrappers would assert that answer away.
    #[cfg(unix)]
    #[allow(unsafe_code)]
    fn group_and_session(pid: u32, _: &Process) -> (Option<u32>, Option<u32>) {
        let Ok(id) = libc::pid_t::try_from(pid) else {
            return (None, None);
        };
        // SAFETY: both calls only read the kernel's table for a pid; a failure is -1.
        let (pgrp, session) = unsafe { (libc::getpgid(id), libc::getsid(id)) };
        let known = |v: libc::pid_t| u32::try_from(v).ok();
        (known(pgrp), known(session))
    }

    /// Windows has no process groups; the session is the terminal-services one.
    #[cfg(not(unix))]
    fn group_and_session(_: u32, p: &Process) -> (Option<u32>, Option<u32>) {
        (None, p.session_id().map(|x| x.as_u32()))
    }

    pub fn stat(pid: u32) -> Option<super::ProcStat> {
        let id = Pid::from_u32(pid);
        let sys = look(Some(&[id]), ProcessRefreshKind::nothing());
        let p = sys.process(id).filter(|p| running(p))?;
        let (pgrp, session) = group_and_session(pid, p);
        Some(super::ProcStat {
            start: start_text(p.start_time()),
            ppid: p.parent().map(|x| x.as_u32()),
            pgrp,
            session,
        })
    }

    pub fn pids() -> Vec<u32> {
        let sys = look(None, ProcessRefreshKind::nothing());
        sys.processes().keys().map(|p| p.as_u32()).collect()
    }

    /// Any trace of `pid`, a zombie included: the kernel's answer to a null signal on Unix
    /// (`EPERM` is another user's process, still there), the process table elsewhere.
    pub fn exists(pid: u32) -> bool {
        #[cfg(unix)]
        {
            let Some(id) = unix_pid(pid) else {
                return false;
            };
            !matches!(
                rustix::process::test_kill_process(id),
                Err(rustix::io::Errno::SRCH)
            )
        }
        #[cfg(not(unix))]
        {
            let id = Pid::from_u32(pid);
            look(Some(&[id]), ProcessRefreshKind::nothing())
                .process(id)
                .is_some()
        }
    }

    fn joined(p: &Process) -> Vec<u8> {
        let mut out = Vec::new();
        for kv in p.environ() {
            out.extend_from_slice(kv.as_encoded_bytes());
            out.push(0);
        }
        out
    }

    fn with_environ() -> ProcessRefreshKind {
        ProcessRefreshKind::nothing().with_environ(sysinfo::UpdateKind::Always)
    }

    /// `pid`'s environment as it was started, NUL-separated like Linux's `environ`.
    pub fn environ(pid: u32) -> Option<Vec<u8>> {
        let id = Pid::from_u32(pid);
        look(Some(&[id]), with_environ()).process(id).map(joined)
    }

    /// The environment of every process, from one look at the table.
    pub fn environs() -> Vec<(u32, Vec<u8>)> {
        look(None, with_environ())
            .processes()
            .iter()
            .map(|(pid, p)| (pid.as_u32(), joined(p)))
            .collect()
    }
}

#[cfg(target_os = "linux")]
use procfs as platform;
#[cfg(not(target_os = "linux"))]
use table as platform;

/// The value of `name` in an environment as [`environ`] gives it (NUL-separated `key=value`
/// entries); the first entry wins, as in the process itself.
fn env_lookup<'a>(environ: &'a [u8], name: &str) -> Option<&'a [u8]> {
    environ
        .split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(name.as_bytes())?.strip_prefix(b"="))
}

/// One variable of `pid`'s environment as the process was started (a change it made to its own
/// environment later is not seen), or `None` when it is not set or cannot be read (another
/// user's process). The only reader of another process's environment.
pub fn env_var(pid: u32, name: &str) -> Option<String> {
    let environ = platform::environ(pid)?;
    env_lookup(&environ, name).map(|v| String::from_utf8_lossy(v).into_owned())
}

/// Child processes for tests, spelled for every platform the suite builds for.
#[cfg(test)]
pub(crate) mod test_process {
    use std::process::{Child, Command, Stdio};

    /// `windows` through `cmd /C` on Windows, else the program `unix`.
    fn command(windows: &str, unix: &str) -> Command {
        if cfg!(windows) {
            let mut c = Command::new("cmd");
            c.args(["/C", windows]);
            c
        } else {
            Command::new(unix)
        }
    }

    /// The pid of a child that has already exited.
    pub(crate) fn exited() -> u32 {
        let mut child = command("exit 0", "true")
            .stdin(Stdio::null())
            .spawn()
            .expect("spawn a short child");
        let pid = child.id();
        child.wait().expect("wait for the short child");
        pid
    }

    /// A child that runs until its stdin is closed (or it is killed).
    pub(crate) fn waiting() -> Child {
        waiting_with_env("SESSION_LOCK_TEST_CHILD", "1")
    }

    /// [`waiting`], with `key=value` added to its environment. It returns once the child has
    /// said it runs: `spawn` returns at the child's `exec`, a moment before the kernel has set
    /// up the new program's environment (its `/proc/<pid>/environ` reads empty until then).
    pub(crate) fn waiting_with_env(key: &str, value: &str) -> Child {
        use std::io::BufRead;
        let mut child = command("echo ready& set /p line=", "sh")
            .args(if cfg!(windows) {
                &[][..]
            } else {
                &["-c", "echo ready; read line"][..]
            })
            .env(key, value)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn a waiting child");
        let mut line = String::new();
        let out = child.stdout.take().expect("the child's stdout");
        std::io::BufReader::new(out)
            .read_line(&mut line)
            .expect("read the child's first line");
        child
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_alive_with_its_start_time() {
        let me = std::process::id();
        let start = start_time(me).expect("own start time");
        assert!(is_alive(me, Some(&start)));
        assert!(is_alive(me, None));
        assert!(
            !is_alive(me, Some("1")),
            "a different start time means a reused pid"
        );
    }

    #[test]
    fn finished_child_is_dead() {
        let pid = test_process::exited();
        assert!(!is_alive(pid, None));
        assert!(!is_alive(0, None));
    }

    #[test]
    fn stat_text_with_spaces_and_parens_in_the_name() {
        let text =
            "4242 (a b) c)) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let s = parse_stat(text).unwrap();
        assert_eq!(s.ppid, Some(17));
        assert_eq!(s.start, "987654");
        assert_eq!((s.pgrp, s.session), (Some(4242), Some(4242)));
        assert_eq!(parse_stat(&text.replace(" S ", " Z ")), None);
        assert_eq!(parse_stat("garbage"), None);
    }

    /// The tree from a child of this process upward. A child is used rather than this process's
    /// own parent: a program started from the Linux side of wine has no Windows parent (real
    /// Windows and Linux give one, and the chain is then checked through it too). The child is
    /// spelled for each platform (`sleep` is no Windows program).
    #[test]
    fn the_tree_runs_from_a_child_up_through_this_process() {
        let me = std::process::id();
        assert!(descends_from(me, me));
        let parent = parent_of(me);
        assert!(
            parent.is_some() || cfg!(windows),
            "this process has no parent"
        );
        if let Some(parent) = parent {
            assert_eq!(ancestors(me).first(), Some(&parent));
            assert!(descends_from(me, parent));
        }
        let mut child = test_process::waiting();
        let kid = child.id();
        assert_eq!(parent_of(kid), Some(me));
        let up = ancestors(kid);
        assert_eq!(up.first(), Some(&me), "{up:?}");
        assert_eq!(up.get(1), parent.as_ref(), "{up:?}");
        assert!(descends_from(kid, me));
        assert!(!descends_from(me, kid));
        let _ = child.kill();
        let _ = child.wait();
    }
}

// The process tree downward (run-agent ends what a turn left running). Each call reads the whole
// process table: for the end of a run, never for the guard's hot path.

/// Every live process with its facts (zombies are left out).
pub fn process_table() -> Vec<(u32, ProcStat)> {
    platform::pids()
        .into_iter()
        .filter_map(|pid| stat(pid).map(|s| (pid, s)))
        .collect()
}

/// The live descendants of `root` in `table`, parents before their children, `root` excluded.
pub fn descendants_in(table: &[(u32, ProcStat)], root: u32) -> Vec<(u32, ProcStat)> {
    let mut found: Vec<(u32, ProcStat)> = Vec::new();
    let mut parents = vec![root];
    let mut i = 0;
    while i < parents.len() {
        let parent = parents[i];
        for (pid, s) in table {
            if s.ppid == Some(parent) && *pid != root && !parents.contains(pid) {
                parents.push(*pid);
                found.push((*pid, s.clone()));
            }
        }
        i += 1;
    }
    found
}

/// The live descendants of `root`, parents before their children.
pub fn descendants(root: u32) -> Vec<(u32, ProcStat)> {
    descendants_in(&process_table(), root)
}

/// The lowest-numbered live process whose environment holds `key=value` exactly (processes of
/// other users, whose environment cannot be read, are passed over). Reads every process's
/// environment: for a rare look after a crash, never for the hot path.
pub fn find_by_env(key: &str, value: &str) -> Option<u32> {
    platform::environs()
        .into_iter()
        .filter(|(_, environ)| env_lookup(environ, key) == Some(value.as_bytes()))
        .map(|(pid, _)| pid)
        .filter(|&pid| stat(pid).is_some())
        .min()
}

/// True while any trace of `pid` is left, a zombie not yet reaped included.
pub fn exists(pid: u32) -> bool {
    pid != 0 && platform::exists(pid)
}

#[cfg(test)]
mod tree_tests {
    use super::*;

    fn facts(ppid: u32) -> ProcStat {
        ProcStat {
            start: "1".into(),
            ppid: Some(ppid),
            pgrp: None,
            session: None,
        }
    }

    #[test]
    fn descendants_come_parents_first_and_only_below_the_root() {
        let table = vec![
            (12, facts(11)),
            (11, facts(10)),
            (10, facts(1)),
            (13, facts(10)),
            (20, facts(1)),
            (21, facts(20)),
        ];
        let pids: Vec<u32> = descendants_in(&table, 10).iter().map(|d| d.0).collect();
        assert_eq!(pids, vec![11, 13, 12]);
        assert!(descendants_in(&table, 12).is_empty());
    }

    #[test]
    fn a_process_is_found_by_an_exact_entry_of_its_environment() {
        let key = "SESSION_LOCK_TEST_TAG";
        let tag = format!("{}-{}", std::process::id(), crate::time::now_ms());
        assert_eq!(find_by_env(key, &tag), None);
        let mut child = test_process::waiting_with_env(key, &tag);
        assert_eq!(find_by_env(key, &tag), Some(child.id()));
        assert_eq!(
            find_by_env(key, &format!("{tag}0")),
            None,
            "the value must match whole"
        );
        assert_eq!(
            find_by_env("SESSION_LOCK_TEST", &tag),
            None,
            "so must the key"
        );
        assert_eq!(env_var(child.id(), key), Some(tag.clone()));
        assert_eq!(env_var(child.id(), "SESSION_LOCK_TEST"), None);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(find_by_env(key, &tag), None, "a reaped child is not found");
    }

    #[test]
    fn an_environment_is_looked_up_by_whole_name_first_entry_first() {
        let env = b"A=1\0AB=2\0B=\0A=3\0C\0";
        assert_eq!(env_lookup(env, "A"), Some(&b"1"[..]));
        assert_eq!(env_lookup(env, "AB"), Some(&b"2"[..]));
        assert_eq!(env_lookup(env, "B"), Some(&b""[..]));
        assert_eq!(
            env_lookup(env, "C"),
            None,
            "an entry without '=' has no value"
        );
        assert_eq!(env_lookup(env, ""), None);
        assert_eq!(env_lookup(b"", "A"), None);
    }

    #[test]
    fn another_process_s_environment_is_the_one_it_was_started_with() {
        let tag = format!("{}-{}", std::process::id(), crate::time::now_ms());
        let mut child = test_process::waiting_with_env("SESSION_LOCK_TEST_ENV", &tag);
        assert_eq!(
            env_var(child.id(), "SESSION_LOCK_TEST_ENV").as_deref(),
            Some(tag.as_str())
        );
        assert_eq!(env_var(child.id(), "SESSION_LOCK_TEST_UNSET"), None);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(env_var(child.id(), "SESSION_LOCK_TEST_ENV"), None);
    }

    /// The reader macOS and Windows use (sysinfo) against the one Linux uses (`/proc`), on the
    /// same processes: the same parent, group, session and environment; a zombie is not
    /// running for either but is still there; a reaped child is gone for both. (Its start time
    /// is in seconds since the epoch here, so it is checked against the clock instead.)
    #[cfg(target_os = "linux")]
    #[test]
    fn the_process_table_agrees_with_proc() {
        let me = std::process::id();
        let tag = format!("{me}-{}", crate::time::now_ms());
        let mut child = test_process::waiting_with_env("SESSION_LOCK_TEST_TABLE", &tag);
        let kid = child.id();
        for pid in [me, kid] {
            let (p, t) = (procfs::stat(pid), table::stat(pid));
            let (Some(p), Some(t)) = (&p, &t) else {
                panic!("pid {pid}: /proc says {p:?}, the table says {t:?}");
            };
            assert_eq!(
                (p.ppid, p.pgrp, p.session),
                (t.ppid, t.pgrp, t.session),
                "pid {pid}: /proc, then the table"
            );
            // Seconds since the epoch, not clock ticks or milliseconds: within a minute of
            // now (the table derives it from the boot time, which may be a second or two off).
            let started: u64 = t.start.parse().unwrap();
            let now = crate::time::now_ms() / 1000;
            assert!(
                started <= now + 60 && started + 24 * 3600 * 365 > now,
                "pid {pid} started at {started}, now is {now}"
            );
        }
        let environ = table::environ(kid).unwrap();
        assert_eq!(
            env_lookup(&environ, "SESSION_LOCK_TEST_TABLE"),
            Some(tag.as_bytes())
        );
        assert_eq!(Some(environ), procfs::environ(kid));
        let seen = |all: Vec<(u32, Vec<u8>)>| {
            all.iter().any(|(pid, e)| {
                *pid == kid && env_lookup(e, "SESSION_LOCK_TEST_TABLE") == Some(tag.as_bytes())
            })
        };
        assert!(
            seen(table::environs()),
            "the table's environments miss {kid}"
        );
        assert!(seen(procfs::environs()), "/proc's environments miss {kid}");
        assert!(table::pids().contains(&kid), "the table's pids miss {kid}");
        assert!(procfs::pids().contains(&kid), "/proc's pids miss {kid}");

        // Exited, not yet reaped: wait for the exit without reaping it.
        drop(child.stdin.take());
        let id = rustix::process::Pid::from_raw(kid as i32).unwrap();
        let opts = rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOWAIT;
        rustix::process::waitid(rustix::process::WaitId::Pid(id), opts).unwrap();
        assert_eq!((procfs::stat(kid), table::stat(kid)), (None, None));
        assert!(
            procfs::exists(kid) && table::exists(kid),
            "a zombie is still there"
        );
        child.wait().unwrap();
        assert!(
            !procfs::exists(kid) && !table::exists(kid),
            "a reaped child is gone"
        );
        assert_eq!(table::environ(kid), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_live_child_and_its_child_are_found_and_a_reaped_one_is_gone() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let found: Vec<u32> = descendants(std::process::id())
            .iter()
            .map(|d| d.0)
            .collect();
        assert!(found.contains(&child.id()), "{found:?}");
        assert!(found.contains(&grandchild), "{found:?}");
        assert!(exists(grandchild));
        let _ = std::process::Command::new("kill")
            .arg(grandchild.to_string())
            .status();
        child.wait().unwrap();
        assert!(!exists(child.id()), "a reaped child leaves no trace");
    }
}
