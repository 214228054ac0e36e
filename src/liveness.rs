//! Is a process alive? A pid alone is not enough (pids are reused), so a process is named by its
//! pid plus its start time, the way Claude Code's session registry records it (`procStart`:
//! on Linux the start time in clock ticks, field 22 of `/proc/<pid>/stat`).
//!
//! Linux reads `/proc` directly (a few microseconds); elsewhere sysinfo refreshes one pid only.

/// The start time of `pid` as a string comparable with a recorded one, or `None` when no such
/// process exists (or it is a zombie).
pub fn start_time(pid: u32) -> Option<String> {
    if pid == 0 {
        return None;
    }
    platform::start_time(pid)
}

/// True when `pid` is running and, when `start` is known, is the same process that was recorded.
pub fn is_alive(pid: u32, start: Option<&str>) -> bool {
    match (start_time(pid), start) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(now), Some(then)) => now == then,
    }
}

#[cfg(target_os = "linux")]
mod platform {
    pub fn start_time(pid: u32) -> Option<String> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name (field 2) is in parentheses and may hold spaces or ')'.
        let after = &stat[stat.rfind(')')? + 1..];
        let mut fields = after.split_ascii_whitespace();
        let state = fields.next()?; // field 3
        if state == "Z" || state == "X" {
            return None;
        }
        // Field 22 is the 20th after the state.
        fields.nth(18).map(str::to_string)
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

    pub fn start_time(pid: u32) -> Option<String> {
        let mut sys = System::new();
        let pid = Pid::from_u32(pid);
        sys.refresh_processes_specifics(
            ProcessesToUpdate::Some(&[pid]),
            true,
            ProcessRefreshKind::nothing(),
        );
        sys.process(pid).map(|p| p.start_time().to_string())
    }
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
        command("set /p line=", "cat")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn a waiting child")
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
}
