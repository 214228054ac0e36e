//! Process facts, read from the kernel: is a process alive, when did it start, who is its
//! parent, which processes is it running under. A pid alone is not enough (pids are reused), so a
//! process is named by its pid plus its start time, the way Claude Code's session registry records
//! it (`procStart`: on Linux the start time in clock ticks, field 22 of `/proc/<pid>/stat`).
//!
//! Linux reads `/proc` directly (a few microseconds); elsewhere sysinfo refreshes one pid only.
//! This module is the only reader of `/proc/<pid>/stat`.

/// What the kernel says about one running process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcStat {
    /// The start time, comparable with a recorded one (`procStart`).
    pub start: String,
    /// The parent pid (`None` at the top of the tree or when unknown).
    pub ppid: Option<u32>,
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
    match (start_time(pid), start) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(now), Some(then)) => now == then,
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
    // Field 22 is the 18th after the parent.
    let start = fields.nth(17)?.to_string();
    Some(ProcStat { start, ppid })
}

#[cfg(target_os = "linux")]
mod platform {
    pub fn stat(pid: u32) -> Option<super::ProcStat> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        super::parse_stat(&text)
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

    pub fn stat(pid: u32) -> Option<super::ProcStat> {
        let mut sys = System::new();
        let pid = Pid::from_u32(pid);
        sys.refresh_processes_specifics(
            ProcessesToUpdate::Some(&[pid]),
            true,
            ProcessRefreshKind::nothing(),
        );
        let p = sys.process(pid)?;
        Some(super::ProcStat {
            start: p.start_time().to_string(),
            ppid: p.parent().map(|x| x.as_u32()),
        })
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
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
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
        assert_eq!(parse_stat(&text.replace(" S ", " Z ")), None);
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn the_tree_runs_from_a_child_up_through_this_process() {
        let me = std::process::id();
        let parent = parent_of(me).expect("a parent");
        assert_eq!(ancestors(me).first(), Some(&parent));
        assert!(descends_from(me, me));
        assert!(descends_from(me, parent));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(descends_from(child.id(), me));
        assert!(!descends_from(me, child.id()));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
