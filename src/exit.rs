//! The one exit-code table of the suite. PROTOCOL.md and every tool's `--help` repeat it; the
//! unit test below keeps the numbers from drifting.
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

/// The exit-code table as text, for `--help` footers.
pub fn table() -> String {
    let mut out = String::from("Exit codes:\n");
    for code in Code::ALL {
        out.push_str(&format!("  {}  {}\n", code.as_i32(), code.meaning()));
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
    fn table_lists_every_code() {
        let t = table();
        for code in Code::ALL {
            assert!(t.contains(code.meaning()), "{code:?} missing from table");
        }
    }
}
