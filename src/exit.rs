//! The one exit-code table of the suite: [`Code`]. Each tool declares the codes it can end
//! with in [`tools`], and its `--help` section is made from that list ([`help`]); PROTOCOL.md
//! writes the table down. The unit tests below and `tests/integration/exit_codes.rs` hold the
//! lists, every `--help` and PROTOCOL.md to the enum.
//!
//! `guard` is the exception: its contract with Claude Code is fixed (0 allow; 2 block in the
//! exit-2 decision form). Every other tool uses this table.

/// What a tool's exit status means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// 0: done; for `guard`, the tool call is allowed (or the JSON decision on stdout says deny).
    Success,
    /// 1: an unexpected failure: I/O, a broken file, a command that could not start.
    Failure,
    /// 2: the command line or an input file is wrong; nothing was changed. For `guard` in the
    /// exit-2 decision form: the tool call is blocked.
    Usage,
    /// 3: a gate did not pass: `release` checks failed or owned files are uncommitted.
    GateFailed,
    /// 4: someone else holds it: the stream's lock belongs to another session.
    Conflict,
    /// 5: the wait ran out (`--timeout`, or a limit).
    Timeout,
    /// 6: the named thing does not exist: no lock, no plan for the stream, no such session.
    NotFound,
    /// 7: busy and told not to wait (`--no-wait`).
    Busy,
    /// 8: refused by a rule of the protocol (a protected plugin, a wait without `--stream`, an
    /// unauthorized target).
    Refused,
}

impl Code {
    pub const ALL: [Code; 9] = [
        Code::Success,
        Code::Failure,
        Code::Usage,
        Code::GateFailed,
        Code::Conflict,
        Code::Timeout,
        Code::NotFound,
        Code::Busy,
        Code::Refused,
    ];

    pub fn as_i32(self) -> i32 {
        match self {
            Code::Success => 0,
            Code::Failure => 1,
            Code::Usage => 2,
            Code::GateFailed => 3,
            Code::Conflict => 4,
            Code::Timeout => 5,
            Code::NotFound => 6,
            Code::Busy => 7,
            Code::Refused => 8,
        }
    }

    /// The stable name `--json` failures carry as `error`.
    pub fn name(self) -> &'static str {
        match self {
            Code::Success => "ok",
            Code::Failure => "failure",
            Code::Usage => "usage",
            Code::GateFailed => "gate-failed",
            Code::Conflict => "conflict",
            Code::Timeout => "timeout",
            Code::NotFound => "not-found",
            Code::Busy => "busy",
            Code::Refused => "refused",
        }
    }

    /// One line for the table in `--help` and PROTOCOL.md.
    pub fn meaning(self) -> &'static str {
        match self {
            Code::Success => "success",
            Code::Failure => "unexpected failure (I/O, broken file, command could not start)",
            Code::Usage => "bad arguments or bad input file; nothing changed",
            Code::GateFailed => "a gate did not pass (release checks or uncommitted owned files)",
            Code::Conflict => "held by another session",
            Code::Timeout => "the wait ran out",
            Code::NotFound => "no such lock, plan, stream or session",
            Code::Busy => "busy and --no-wait was given",
            Code::Refused => "refused by a protocol rule",
        }
    }
}

/// What one tool's exit codes mean for it, in the order of the table. Every tool but `guard`
/// can end with 1 (an unexpected failure) and 2 (clap refuses bad arguments with 2).
pub type Codes = &'static [(Code, &'static str)];

/// Each tool's exit codes: the one list its `--help` section is made from.
pub mod tools {
    use super::{Code, Codes};

    /// `guard` in hook mode: the fixed contract with Claude Code.
    pub const GUARD: Codes = &[
        (
            Code::Success,
            "allow, or block through the JSON decision on stdout",
        ),
        (
            Code::Usage,
            "block (the exit2 decision form only), or stdin is a terminal (usage printed)",
        ),
    ];
    pub const CLAIM: Codes = &[
        (Code::Success, "claimed"),
        (
            Code::Failure,
            "unexpected failure (I/O, a broken lock file, an unusable leases clone-id file)",
        ),
        (
            Code::Usage,
            "bad stream name, arguments or config (leases.remote is no remote of this clone)",
        ),
        (
            Code::Conflict,
            "held by another session (here or, with leases, on another machine)",
        ),
        (
            Code::NotFound,
            "no plan declares the stream, or no lock (the hook did not run)",
        ),
        (
            Code::Refused,
            "leases: the remote is unreachable or refuses the lease ref (--offline claims here only)",
        ),
    ];
    pub const RELEASE: Codes = &[
        (Code::Success, "released (or already released)"),
        (
            Code::Failure,
            "unexpected failure (I/O, a broken file, git could not run); with leases: released here, but the lease may still be live on the remote (its record unreadable, the remote unreachable: run release again)",
        ),
        (Code::Usage, "bad stream name, arguments or config"),
        (
            Code::GateFailed,
            "a check failed or owned files are uncommitted",
        ),
        (
            Code::Conflict,
            "the lock is another session's (the caller runs inside another session's process tree)",
        ),
        (Code::NotFound, "the stream is not claimed"),
    ];
    pub const STATUS: Codes = &[
        (Code::Success, "ok"),
        (
            Code::Failure,
            "a plan or lock file is broken (listed as problems)",
        ),
        (Code::Usage, "bad arguments or config"),
        (Code::Timeout, "--timeout ran out"),
        (Code::Busy, "the state folder stayed locked"),
        (
            Code::Refused,
            "--archive while streams are still open or a lock is corrupt",
        ),
    ];
    pub const WAIT_MILESTONE: Codes = &[
        (Code::Success, "done"),
        (Code::Failure, "unexpected failure (I/O, a broken file)"),
        (Code::Usage, "bad arguments or config"),
        (Code::Conflict, "--stream is another session's"),
        (Code::Timeout, "timed out"),
        (
            Code::NotFound,
            "no such milestone or stream (no plan, no lock), or --stream is not claimed",
        ),
        (Code::Refused, "a long wait without --stream"),
    ];
    /// Before the build starts; once it ran, the build's own status.
    pub const BUILD_RENDERER: Codes = &[
        (Code::Success, "built (the build's own status once it ran)"),
        (
            Code::Failure,
            "the build could not start, or failed without a code of its own",
        ),
        (Code::Usage, "bad arguments or config"),
        (
            Code::Timeout,
            "--timeout ran out while waiting for the lock",
        ),
        (
            Code::Busy,
            "another build holds the lock and --no-wait was given",
        ),
    ];
    pub const RELOAD_PLUGIN: Codes = &[
        (
            Code::Success,
            "every step passed (or --dry-run: the check passed)",
        ),
        (
            Code::Failure,
            "the copy or a bridge call failed; a command could not start or was killed",
        ),
        (Code::Usage, "bad arguments or config"),
        (Code::GateFailed, "typecheck or emit failed"),
        (Code::NotFound, "no such plugin folder, or no main/ in it"),
        (
            Code::Refused,
            "a protected plugin, or a bridge that is not loopback",
        ),
    ];
    pub const RUN_AGENT: Codes = &[
        (Code::Success, "ok"),
        (
            Code::Failure,
            "the run failed: the CLI could not start, an API error, an exit without an answer, interrupted",
        ),
        (
            Code::Usage,
            "bad options: missing cwd or prompt, empty prompt, a malformed value or JSON",
        ),
        (
            Code::Timeout,
            "timeout (timeoutMs ran out; the CLI was stopped)",
        ),
        (
            Code::NotFound,
            "not found: the claude CLI, the cwd, an env profile, a scope root, guard or run-agent, the session to resume (session_not_found); interrupt: no run with that tabId",
        ),
        (
            Code::Refused,
            "refused: an env profile file others can read, a workspace .mcp.json that does not pass",
        ),
    ];
    pub const SEND_MESSAGE: Codes = &[
        (
            Code::Success,
            "done; send: delivered, accepted, queued, held or duplicate",
        ),
        (
            Code::Failure,
            "unexpected failure (I/O); create: the first turn failed",
        ),
        (
            Code::Usage,
            "bad arguments; send: ambiguous; serve: another server owns the socket",
        ),
        (
            Code::NotFound,
            "send: not_found; status, review: no such message",
        ),
        (
            Code::Refused,
            "send: refused or self; identity not verified; review from a terminal; create refused",
        ),
    ];

    /// Every tool with its list, for the tests that hold them to the table.
    pub const ALL: [(&str, Codes); 9] = [
        ("guard", GUARD),
        ("claim", CLAIM),
        ("release", RELEASE),
        ("status", STATUS),
        ("wait-milestone", WAIT_MILESTONE),
        ("build-renderer", BUILD_RENDERER),
        ("reload-plugin", RELOAD_PLUGIN),
        ("run-agent", RUN_AGENT),
        ("send-message", SEND_MESSAGE),
    ];
}

/// A tool's `--help` section from its list: `Exit codes:` and one `  N  meaning` line per code.
pub fn help(codes: Codes) -> String {
    section("Exit codes:", codes)
}

/// [`help`] under another heading (`guard`'s hook mode).
pub fn section(heading: &str, codes: Codes) -> String {
    let mut out = format!("{heading}\n");
    for (code, meaning) in codes {
        out.push_str(&format!("  {}  {meaning}\n", code.as_i32()));
    }
    out
}

/// An error that carries the exit code it should end the process with.
#[derive(Debug)]
pub struct Exit {
    pub code: Code,
    pub message: String,
}

impl Exit {
    pub fn new(code: Code, message: impl Into<String>) -> Exit {
        Exit {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// Shorthand: `return Err(fail(Code::Conflict, "..."))`.
pub fn fail(code: Code, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Exit::new(code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_stable() {
        let numbers: Vec<i32> = Code::ALL.iter().map(|c| c.as_i32()).collect();
        assert_eq!(numbers, vec![0, 1, 2, 3, 4, 5, 6, 7, 8]);
    }

    #[test]
    fn every_tool_lists_its_codes_once_in_table_order() {
        for (tool, codes) in tools::ALL {
            let numbers: Vec<i32> = codes.iter().map(|(c, _)| c.as_i32()).collect();
            let mut sorted = numbers.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(numbers, sorted, "{tool}: out of order or repeated");
            assert!(codes.iter().all(|(_, m)| !m.is_empty()), "{tool}");
            if tool != "guard" {
                // finish() maps any unexpected error to 1; clap ends bad arguments with 2.
                assert_eq!(numbers[..3], [0, 1, 2], "{tool}");
            }
        }
    }

    #[test]
    fn help_renders_one_line_per_code() {
        let codes: Codes = &[(Code::Success, "done"), (Code::Conflict, "held elsewhere")];
        assert_eq!(help(codes), "Exit codes:\n  0  done\n  4  held elsewhere\n");
        assert!(
            section("Exit codes (hook mode):", tools::GUARD)
                .starts_with("Exit codes (hook mode):\n  0  ")
        );
    }
}
