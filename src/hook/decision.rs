//! The guard's answer as a value: every check returns `Ok(())` or a typed [`Refusal`], the
//! pipeline gathers them into one [`Decision`], and the door renders it once for the client
//! that sent the payload ([`super::output::render`]). The block log and `guard explain` read
//! this value, never the rendered text.

use crate::rules::RuleId;
use crate::words::HookEvent;
use serde::{Serialize, Serializer};

/// What refused a call: a command rule by its id, or one of the protocol's own checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// The target is a file another live stream owns.
    Ownership,
    /// The target is part of the protocol (`protectedPaths`, the guard's folder, user-scope
    /// settings, the state home).
    Protected,
    /// A plan's frontmatter would change while another stream is live.
    PlanEdit,
    /// A `claim` that cannot be recorded.
    Claim,
    /// A `release` of a stream that is not the caller's (or not named literally).
    Release,
    /// The caller's lease on the remote was taken over.
    Lease,
    /// The input is larger or deeper than the guard can check.
    TooLarge,
    /// Input the guard must read to decide and cannot: another client's tool input that does
    /// not parse (a Codex patch, a path that is not a string), or a file the command runs that
    /// is not a regular file (a FIFO, a device, a socket).
    Unreadable,
    /// The repo requires the kernel write floor and this machine has none.
    Floor,
    /// The command rules in session-lock/config.json do not compile.
    Config,
    /// The path boundary of a restricted run (`guard scope`).
    Boundary,
    /// A command rule (`git.add-all`).
    Command(RuleId),
}

impl Rule {
    /// The name the block log and `--json` give it: the rule id, or the check's kebab name.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Ownership => "ownership",
            Rule::Protected => "protected",
            Rule::PlanEdit => "plan-edit",
            Rule::Claim => "claim",
            Rule::Release => "release",
            Rule::Lease => "lease",
            Rule::TooLarge => "too-large",
            Rule::Unreadable => "unreadable",
            Rule::Floor => "floor",
            Rule::Config => "config",
            Rule::Boundary => "boundary",
            Rule::Command(id) => id.id(),
        }
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Why a call is denied. `reason` is written for the model that made the call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Refusal {
    pub rule: Rule,
    /// The stream it is about: the owner of the target, the stream claimed or released.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    /// The target it is about (repo-relative when inside the repo, else as written).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The offending command segment, on one line (command rules).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segment: Option<String>,
    pub reason: String,
}

impl Refusal {
    /// A refusal by `rule` that names nothing more than its reason.
    pub fn new(rule: Rule, reason: impl Into<String>) -> Refusal {
        Refusal {
            rule,
            stream: None,
            path: None,
            segment: None,
            reason: reason.into(),
        }
    }

    pub fn with_stream(mut self, stream: impl Into<String>) -> Refusal {
        self.stream = Some(stream.into());
        self
    }

    pub fn with_path(mut self, path: impl Into<String>) -> Refusal {
        self.path = Some(path.into());
        self
    }
}

/// What one check gives: nothing to say, or a refusal.
pub type Checked = Result<(), Refusal>;

/// The answer to the tool call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "kebab-case")]
pub enum Verdict {
    /// Let it run.
    Allow,
    /// Let it run with this tool input instead of its own (the whole `tool_input`).
    Rewrite { input: serde_json::Value },
    /// Block it.
    Deny(Refusal),
}

/// The whole answer of one guard run, before it is rendered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The event answered (the rendered form names it).
    pub event: HookEvent,
    /// The client that sent the payload: the answer is written in its form.
    #[serde(skip)]
    pub client: crate::clients::Client,
    #[serde(flatten)]
    pub verdict: Verdict,
    /// What the user (and the model) hears once per session: the notices not shown before.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
    /// Context for the model at this event (messages waiting for the session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Lines for the client's log (stderr), each whole (`guard: …`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
    /// The guard allowed because of its own trouble (a fail-open); `log` says what.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub trouble: bool,
    /// The caller's stream as the run found it: `Some(None)` when it holds none, `None` when
    /// the run did not look (the block log then finds it itself).
    #[serde(skip)]
    pub caller_stream: Option<Option<String>>,
}

impl Decision {
    /// Let the call run, saying nothing.
    pub fn allow(event: HookEvent) -> Decision {
        Decision {
            event,
            client: crate::clients::Client::Claude,
            verdict: Verdict::Allow,
            notices: Vec::new(),
            context: None,
            log: Vec::new(),
            trouble: false,
            caller_stream: None,
        }
    }

    /// Block the call.
    pub fn deny(event: HookEvent, refusal: Refusal) -> Decision {
        Decision {
            verdict: Verdict::Deny(refusal),
            ..Decision::allow(event)
        }
    }

    /// Let the call run because of the guard's own trouble, saying what on stderr.
    pub fn fail_open(note: impl Into<String>) -> Decision {
        Decision {
            log: vec![format!("guard: {}", note.into())],
            trouble: true,
            ..Decision::allow(HookEvent::default())
        }
    }

    /// The call's result as a check gives it.
    pub fn of(event: HookEvent, checked: Checked) -> Decision {
        match checked {
            Ok(()) => Decision::allow(event),
            Err(r) => Decision::deny(event, r),
        }
    }

    /// The refusal, when the call is blocked.
    pub fn refusal(&self) -> Option<&Refusal> {
        match &self.verdict {
            Verdict::Deny(r) => Some(r),
            _ => None,
        }
    }

    pub fn is_block(&self) -> bool {
        self.refusal().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_serializes_as_its_value() {
        let d = Decision::deny(
            HookEvent::PreToolUse,
            Refusal::new(Rule::Ownership, "owned")
                .with_stream("api")
                .with_path("src/api/x.ts"),
        );
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"event": "PreToolUse", "verdict": "deny", "rule": "ownership",
                "stream": "api", "path": "src/api/x.ts", "reason": "owned"})
        );
        let v = serde_json::to_value(Decision::allow(HookEvent::PreToolUse)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"event": "PreToolUse", "verdict": "allow"})
        );
        let r = Refusal::new(Rule::Command(RuleId::GitAddAll), "x");
        assert_eq!(serde_json::to_value(&r).unwrap()["rule"], "git.add-all");
    }
}
