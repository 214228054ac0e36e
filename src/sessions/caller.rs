//! Who is running this command, proven from the process tree rather than claimed by an
//! environment variable (any command can unset or set `CLAUDE_CODE_SESSION_ID`).
//!
//! A session's tools and commands run below its client process. A command is *inside session
//! S's tree* when one of its ancestors is S's client process, named by pid **and** start time:
//! as a lock records it (`clientPid`, `clientStart`, written by the guard from `CLAUDE_PID`), or
//! as a live registry entry (Claude Code's or the suite's) lists it. The nearest such ancestor
//! wins, so a session started from inside another one is itself. No such ancestor: a person at
//! a terminal (or a script they run).

use super::LiveSession;
use crate::liveness;
use crate::state::Held;

/// Who runs the command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Caller {
    /// Inside this session's process tree, under its client process `client_pid`.
    Session { id: String, client_pid: u32 },
    /// Under no live session's client process.
    Terminal,
    /// Under no live session's client process, but cut off from the shell that started it
    /// (see [`cut_off`]): a process a session left behind, not a person at a terminal.
    Detached { why: String },
}

impl Caller {
    /// The session id, when the caller runs inside a session.
    pub fn session(&self) -> Option<&str> {
        match self {
            Caller::Session { id, .. } => Some(id),
            Caller::Terminal | Caller::Detached { .. } => None,
        }
    }
}

/// The caller `pid` is, given the repo's locks and the live sessions the registries list.
pub fn of_process(pid: u32, locks: &[Held], sessions: &[LiveSession]) -> Caller {
    let mut chain = vec![pid];
    chain.extend(liveness::ancestors(pid));
    for a in chain {
        let from_lock = locks.iter().find(|h| {
            h.record.client_pid == Some(a)
                && liveness::is_alive(a, h.record.client_start.as_deref())
        });
        if let Some(h) = from_lock {
            return Caller::Session {
                id: h.record.session_id.clone(),
                client_pid: a,
            };
        }
        if let Some(s) = sessions.iter().find(|s| s.pid == Some(a)) {
            return Caller::Session {
                id: s.session_id.clone(),
                client_pid: a,
            };
        }
    }
    Caller::Terminal
}

/// The caller of this process: its ancestors against `locks` and every live registry entry.
pub fn current(locks: &[Held]) -> Caller {
    let mut sessions = super::claude::live_sessions();
    if let Some(home) = super::state_home() {
        sessions.extend(super::registry::live_sessions(&home));
    }
    let me = std::process::id();
    match of_process(me, locks, &sessions) {
        Caller::Terminal => match cut_off(me) {
            Some(why) => Caller::Detached { why },
            None => Caller::Terminal,
        },
        found => found,
    }
}

/// Why `pid` is cut off from the shell that started it, if it is. A command a person types runs
/// below the shell that leads its terminal's session (the kernel's session id names it). A
/// process a session's command left running (`(release x &)`, `nohup`, `setsid … &`) is not:
/// the Bash tool's shell leads its own session and is gone, or is no longer an ancestor. Checked
/// for the process, each ancestor up to the nearest session leader, and that leader's parent (a
/// `setsid` below an orphaned subshell). Where the platform tells no session, nothing is cut.
pub fn cut_off(pid: u32) -> Option<String> {
    let mut chain = vec![pid];
    chain.extend(liveness::ancestors(pid));
    let mut past_leader = false;
    for (i, &x) in chain.iter().enumerate() {
        if x <= 1 {
            break;
        }
        let sid = liveness::stat(x)
            .and_then(|s| s.session)
            .filter(|&s| s > 1)?;
        if sid != x && !chain[i + 1..].contains(&sid) {
            let whose = if x == pid {
                "it".to_string()
            } else {
                format!("its ancestor pid {x}")
            };
            return Some(match liveness::stat(sid) {
                None => format!(
                    "{whose} outlived the shell that started it (pid {sid}, the leader of its session)"
                ),
                Some(_) => format!(
                    "{whose} runs outside the shell that started it (pid {sid}, the leader of its session)"
                ),
            });
        }
        if past_leader {
            break;
        }
        past_leader = sid == x;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::tests::record;

    fn held(session: &str, client: u32) -> Held {
        Held {
            record: crate::state::LockRecord {
                session_id: session.into(),
                client_pid: Some(client),
                client_start: liveness::start_time(client),
                ..record("api", 0)
            },
            done: false,
            heartbeat_ms: 0,
        }
    }

    /// The caller is a child of this process, whose lock names this process as its client:
    /// this process's own parent would do on Linux and real Windows, but a program started
    /// from the Linux side of wine has none. The child is spelled for each platform.
    #[test]
    fn a_lock_whose_client_is_an_ancestor_names_the_caller() {
        let me = std::process::id();
        let mut child = liveness::test_process::waiting();
        let locks = [held("other", u32::MAX - 3), held("mine", me)];
        assert_eq!(
            of_process(child.id(), &locks, &[]),
            Caller::Session {
                id: "mine".into(),
                client_pid: me
            }
        );
        let _ = child.kill();
        let _ = child.wait();
    }

    #[test]
    fn a_client_that_is_not_an_ancestor_leaves_a_terminal() {
        let mut child = liveness::test_process::waiting();
        let locks = [held("other", child.id())];
        let me = std::process::id();
        assert_eq!(of_process(me, &locks, &[]), Caller::Terminal);
        // The same pid with another start time is another process: not the recorded client.
        let mut reused = held("mine", me);
        reused.record.client_start = Some("1".into());
        assert_eq!(of_process(me, &[reused], &[]), Caller::Terminal);
        // A live registry entry counts as well.
        let listed = LiveSession {
            session_id: "listed".into(),
            cwd: String::new(),
            pid: Some(me),
            source: "suite",
        };
        assert_eq!(of_process(me, &locks, &[listed]).session(), Some("listed"));
        let _ = child.kill();
        let _ = child.wait();
    }
}
