//! `list`: the sessions the caller may message — running ones and cold ones that can be
//! resumed — running first, then the most recently active, then by name. Sessions the caller
//! may not reach are only counted (`omitted`), never described.

use super::auth::{Verdict, authorize};
use super::directory::{self, Kind, Status, Target};
use super::identity::Caller;
use super::{Ctx, TargetRef};

/// The most rows one `list` returns (the command line and the bus share it).
pub const MAX_LIMIT: u16 = 200;

#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// Sessions of the caller's workspace (repo).
    #[default]
    Workspace,
    /// Every session on this machine the caller may reach.
    Machine,
    /// Only the caller's own subagents.
    Session,
}

#[derive(Clone, Debug)]
pub struct ListRequest {
    pub scope: Scope,
    pub include_subagents: bool,
    /// 1..=200
    pub limit: usize,
}

impl Default for ListRequest {
    fn default() -> ListRequest {
        ListRequest {
            scope: Scope::Workspace,
            include_subagents: false,
            limit: 50,
        }
    }
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct AgentView {
    pub name: String,
    pub id: String,
    pub short_id: String,
    pub cwd: String,
    /// peer | subagent
    pub kind: Kind,
    /// running | idle | offline
    pub status: Status,
    pub name_source: directory::NameSource,
    /// False for subagents (not reachable through this tool).
    pub sendable: bool,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct ListResult {
    /// The caller itself (not listed below): the name others use to message it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub me: Option<TargetRef>,
    pub agents: Vec<AgentView>,
    /// How many sessions were left out because the caller may not message them.
    pub omitted: usize,
    /// How many more there were past `limit`.
    pub more: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn view(t: &Target, sendable: bool) -> AgentView {
    AgentView {
        name: t.name.clone(),
        id: t.id.clone(),
        short_id: crate::state::short_id(&t.id).to_string(),
        cwd: t.cwd.clone(),
        kind: t.kind,
        status: t.status,
        name_source: t.name_source.clone(),
        sendable,
    }
}

/// Filters and orders `targets` for `caller`. Pure over the snapshot.
pub fn select(ctx: &Ctx, caller: &Caller, targets: &[Target], req: &ListRequest) -> ListResult {
    let policy = ctx.policy();
    let mut shown: Vec<(Target, bool)> = Vec::new();
    let mut omitted = 0;
    let mut me = None;
    let same_ws = |t: &Target| {
        crate::paths::lexical::within(&t.workspace, &caller.workspace, policy.case_insensitive)
            && crate::paths::lexical::within(
                &caller.workspace,
                &t.workspace,
                policy.case_insensitive,
            )
    };
    for t in targets {
        let verdict = authorize(caller, t, &policy);
        if verdict == Verdict::SelfTarget {
            me = Some(TargetRef::of(t));
            continue;
        }
        let in_scope = match req.scope {
            Scope::Session => verdict == Verdict::OwnSubagent,
            Scope::Workspace => same_ws(t) || verdict == Verdict::OwnSubagent,
            Scope::Machine => true,
        };
        if !in_scope {
            continue;
        }
        if t.kind == Kind::Subagent {
            // Own subagents are always listed; others' only on request, never sendable.
            let visible_parent = same_ws(t) || policy.allow_cross_workspace;
            if verdict == Verdict::OwnSubagent || (req.include_subagents && visible_parent) {
                shown.push((t.clone(), false));
            }
            continue;
        }
        match verdict {
            Verdict::Allowed => shown.push((t.clone(), true)),
            _ => omitted += 1,
        }
    }
    let mut list: Vec<Target> = shown.iter().map(|(t, _)| t.clone()).collect();
    directory::sort(&mut list);
    let limit = req.limit.clamp(1, 200);
    let more = list.len().saturating_sub(limit);
    let agents = list
        .iter()
        .take(limit)
        .map(|t| {
            let sendable = shown
                .iter()
                .find(|(s, _)| s.id == t.id)
                .is_some_and(|(_, ok)| *ok);
            view(t, sendable)
        })
        .collect();
    let note = (req.scope == Scope::Workspace && !ctx.m().allow_cross_workspace).then(|| {
        "sessions of other workspaces are not reachable unless messaging.allowCrossWorkspace or messaging.allowlist says so".to_string()
    });
    ListResult {
        me,
        agents,
        omitted,
        more,
        note,
    }
}

/// The sessions `caller` may message.
pub fn list(ctx: &Ctx, caller: &Caller, req: &ListRequest) -> ListResult {
    let targets = directory::snapshot(&directory::Options {
        cold: true,
        subagents: true,
        repo_root: ctx.repo_root.clone(),
    });
    let look = super::recover::Look { no_wake_for: None };
    let looked = super::recover::outbox(ctx, caller, &targets, look);
    super::recover::waiting_anywhere(ctx, &targets, look, &looked);
    select(ctx, caller, &targets, req)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn ctx() -> Ctx {
        Ctx {
            home: std::env::temp_dir(),
            config: crate::config::Config::default(),
            repo_root: None,
            waker: Arc::new(crate::messaging::wake::AgentWaker),
        }
    }

    fn t(id: &str, ws: &str, status: Status, at: u64) -> Target {
        Target {
            id: id.into(),
            name: id.into(),
            cwd: ws.into(),
            workspace: ws.into(),
            status,
            last_activity_ms: at,
            ..Target::default()
        }
    }

    #[test]
    fn lists_reachable_counts_the_rest() {
        let me = Caller {
            id: "me".into(),
            workspace: "/r".into(),
            cwd: "/r".into(),
            ..Caller::default()
        };
        let mut sub = t("other/agent-1", "/r", Status::Offline, 0);
        sub.kind = Kind::Subagent;
        sub.parent = Some("other".into());
        let mut mine = t("me/agent-2", "/r", Status::Offline, 0);
        mine.kind = Kind::Subagent;
        mine.parent = Some("me".into());
        let targets = vec![
            t("me", "/r", Status::Running, 9),
            t("cold", "/r", Status::Offline, 99),
            t("idle", "/r", Status::Idle, 5),
            t("busy", "/r", Status::Running, 1),
            t("far", "/x", Status::Running, 50),
            sub,
            mine,
        ];
        let r = select(&ctx(), &me, &targets, &ListRequest::default());
        let ids: Vec<&str> = r.agents.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, vec!["busy", "idle", "cold", "me/agent-2"]);
        assert_eq!(r.me.unwrap().id, "me");
        assert_eq!(
            r.omitted, 0,
            "other workspaces are out of scope, not omitted"
        );
        assert!(!r.agents[3].sendable);
        let m = select(
            &ctx(),
            &me,
            &targets,
            &ListRequest {
                scope: Scope::Machine,
                include_subagents: true,
                limit: 2,
            },
        );
        assert_eq!(m.omitted, 1, "far is counted, not shown");
        assert_eq!(m.agents.len(), 2);
        assert_eq!(m.more, 3);
        let s = select(
            &ctx(),
            &me,
            &targets,
            &ListRequest {
                scope: Scope::Session,
                ..ListRequest::default()
            },
        );
        assert_eq!(s.agents.len(), 1);
    }
}
