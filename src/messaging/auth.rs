//! The authorization matrix: who may message whom. Pure: callers, targets and the policy in,
//! a verdict out. Every target the caller may not reach answers exactly like a missing one.
//!
//! | case                                   | verdict                           |
//! |----------------------------------------|-----------------------------------|
//! | the target is the caller               | `SelfTarget`                      |
//! | another session's subagent             | `Hidden` (no allowlist opens it)  |
//! | the caller's own subagent              | `OwnSubagent` (the client's own SendMessage reaches it) |
//! | same workspace (repo)                  | `Allowed`                         |
//! | other workspace, `allowCrossWorkspace` | `Allowed`                         |
//! | other workspace, allowlisted id / cwd  | `Allowed`                         |
//! | other workspace otherwise              | `Hidden`                          |
//! | a target that stopped but still exists | `Allowed` (queued, replayed later)|

use super::directory::{Kind, Target};
use super::identity::Caller;
use crate::paths::lexical::within;

/// The parts of config the matrix reads.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub allow_cross_workspace: bool,
    pub allowlist: Vec<String>,
    pub case_insensitive: bool,
}

impl Policy {
    pub fn from_config(cfg: &crate::config::Config) -> Policy {
        Policy {
            allow_cross_workspace: cfg.messaging.allow_cross_workspace,
            allowlist: cfg.messaging.allowlist.clone(),
            case_insensitive: cfg.case_insensitive(),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    SelfTarget,
    OwnSubagent,
    /// Not reachable: reported as `not_found`, with the same text as a missing session.
    Hidden,
}

/// The one lexical normalizer (separators, `.`, `..`, drive letter), folded when the policy
/// compares paths case-insensitively.
fn norm(p: &str, ci: bool) -> String {
    let s = crate::paths::lexical::normalize(p);
    if ci { s.to_lowercase() } else { s }
}

fn same_workspace(a: &str, b: &str, ci: bool) -> bool {
    !a.is_empty() && !b.is_empty() && norm(a, ci) == norm(b, ci)
}

fn allowlisted(t: &Target, p: &Policy) -> bool {
    p.allowlist.iter().any(|entry| {
        let e = entry.trim();
        e == t.id
            || ((e.contains('/') || e.contains('\\')) && within(&t.cwd, e, p.case_insensitive))
    })
}

/// May `caller` message `t`?
pub fn authorize(caller: &Caller, t: &Target, p: &Policy) -> Verdict {
    if !caller.terminal && t.id == caller.id {
        return Verdict::SelfTarget;
    }
    if t.kind == Kind::Subagent {
        let own = !caller.terminal && t.parent.as_deref() == Some(caller.id.as_str());
        return if own {
            Verdict::OwnSubagent
        } else {
            Verdict::Hidden
        };
    }
    if same_workspace(&caller.workspace, &t.workspace, p.case_insensitive) {
        return Verdict::Allowed;
    }
    if p.allow_cross_workspace || allowlisted(t, p) {
        return Verdict::Allowed;
    }
    Verdict::Hidden
}

/// May `caller` start a new session in `cwd` (§16)? The same workspace rule as messages.
pub fn authorize_cwd(caller: &Caller, cwd: &str, workspace: &str, p: &Policy) -> bool {
    let t = Target {
        id: String::new(),
        cwd: cwd.to_string(),
        workspace: workspace.to_string(),
        ..Target::default()
    };
    authorize(caller, &t, p) == Verdict::Allowed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messaging::directory::Status;

    pub fn caller(id: &str, ws: &str) -> Caller {
        Caller {
            id: id.into(),
            name: id.into(),
            cwd: ws.into(),
            workspace: ws.into(),
            ..Caller::default()
        }
    }

    fn target(id: &str, cwd: &str, ws: &str) -> Target {
        Target {
            id: id.into(),
            name: id.into(),
            cwd: cwd.into(),
            workspace: ws.into(),
            ..Target::default()
        }
    }

    #[test]
    fn every_row_of_the_matrix() {
        let me = caller("me", "/r/a");
        let p = Policy::default();
        // self
        assert_eq!(
            authorize(&me, &target("me", "/r/a", "/r/a"), &p),
            Verdict::SelfTarget
        );
        // same workspace, live or stopped
        let mut peer = target("peer", "/r/a/sub", "/r/a");
        assert_eq!(authorize(&me, &peer, &p), Verdict::Allowed);
        peer.status = Status::Offline;
        assert_eq!(authorize(&me, &peer, &p), Verdict::Allowed);
        // cross workspace: hidden by default
        let far = target("far", "/r/b", "/r/b");
        assert_eq!(authorize(&me, &far, &p), Verdict::Hidden);
        // … allowed by the switch
        let open = Policy {
            allow_cross_workspace: true,
            ..Policy::default()
        };
        assert_eq!(authorize(&me, &far, &open), Verdict::Allowed);
        // … or by an allowlisted id or folder
        let by_id = Policy {
            allowlist: vec!["far".into()],
            ..Policy::default()
        };
        assert_eq!(authorize(&me, &far, &by_id), Verdict::Allowed);
        let by_dir = Policy {
            allowlist: vec!["/r/b/".into()],
            ..Policy::default()
        };
        assert_eq!(authorize(&me, &far, &by_dir), Verdict::Allowed);
        let prefix_only = Policy {
            allowlist: vec!["/r/bb".into()],
            ..Policy::default()
        };
        assert_eq!(
            authorize(&me, &far, &prefix_only),
            Verdict::Hidden,
            "a folder allowlists whole components only"
        );
        // another session's subagent: never, not even allowlisted or with the switch
        let mut sub = target("peer/agent-1", "/r/a", "/r/a");
        sub.kind = Kind::Subagent;
        sub.parent = Some("peer".into());
        let everything = Policy {
            allow_cross_workspace: true,
            allowlist: vec!["peer/agent-1".into(), "/".into()],
            case_insensitive: false,
        };
        assert_eq!(authorize(&me, &sub, &everything), Verdict::Hidden);
        // own subagent
        sub.parent = Some("me".into());
        assert_eq!(authorize(&me, &sub, &p), Verdict::OwnSubagent);
        // a terminal has no self and no subagents, only its folder's workspace
        let mut term = caller("terminal", "/r/a");
        term.terminal = true;
        assert_eq!(authorize(&term, &peer, &p), Verdict::Allowed);
        assert_eq!(authorize(&term, &far, &p), Verdict::Hidden);
        assert_eq!(authorize(&term, &sub, &p), Verdict::Hidden);
    }

    #[test]
    fn case_rules_follow_the_config() {
        let me = caller("me", "C:/Code/Proj");
        let t = target("t", "c:/code/proj", "c:/code/proj");
        let ci = Policy {
            case_insensitive: true,
            ..Policy::default()
        };
        assert_eq!(authorize(&me, &t, &ci), Verdict::Allowed);
        assert_eq!(authorize(&me, &t, &Policy::default()), Verdict::Hidden);
    }

    #[test]
    fn create_cwd_follows_the_same_rule() {
        let me = caller("me", "/r/a");
        assert!(authorize_cwd(&me, "/r/a/x", "/r/a", &Policy::default()));
        assert!(!authorize_cwd(&me, "/r/b", "/r/b", &Policy::default()));
    }

    #[test]
    fn within_compares_whole_normalized_components() {
        assert!(within("/a/b/c", "/a/b", false));
        assert!(within("/a/b/", "/a/b", false));
        assert!(within("/x", "/", false));
        assert!(!within("/a/bc", "/a/b", false));
        assert!(within("/a/b/../c", "/a", false));
        assert!(!within("/a/b/../../etc", "/a", false));
        assert!(within(r"C:\Repo\x", "c:/repo", true));
        assert!(within(r"C:\Repo\x", "C:/", false));
        assert!(!within("/A/b", "/a", false));
        assert!(!within("", "/a", false) && !within("/a", "", false));
    }
}
