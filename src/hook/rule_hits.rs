//! Command-rule hits → the call's answer, for the command rules and the MCP rules alike: an
//! always-rule blocks; a shared-tree rule blocks unless the caller is alone in the tree (asked
//! only when such a rule fires).

use super::Payload;
use super::context::Ctx;
use super::decision::{Checked, Refusal, Rule};
use crate::rules::{Hit, RuleId, Scope};
use crate::sessions::Presence;

/// The command rules of the repo's config, or the refusal a config that does not compile gives.
pub fn compiled(ctx: &Ctx) -> Result<&crate::rules::Rules, Refusal> {
    ctx.config.compiled_rules().map_err(|e| {
        Refusal::new(
            Rule::Config,
            format!("session-lock: {e}; fix session-lock/config.json"),
        )
    })
}

/// The answer to a call whose segments hit `hits`.
pub fn decide(ctx: &Ctx, p: &Payload, hits: impl Iterator<Item = Hit>) -> Checked {
    let hits: Vec<Hit> = hits.collect();
    // An always-rule names the real danger even when a shared-tree rule fired first.
    if let Some(hit) = hits.iter().find(|h| h.scope == Scope::Always) {
        return Err(refusal(hit, hit.reason.clone()));
    }
    for hit in &hits {
        match ctx.presence(p) {
            Presence::Alone => {}
            Presence::Unknown(why) => {
                let reason = format!(
                    "{} (The guard cannot tell whether another session works in this tree: {why}.)",
                    hit.reason
                );
                return Err(refusal(hit, reason));
            }
            Presence::Others(list) => {
                let names: Vec<String> = list
                    .iter()
                    .take(5)
                    .map(|s| format!("{} ({})", crate::state::short_id(&s.session_id), s.source))
                    .collect();
                let reason = format!(
                    "{} (Other live sessions in this tree: {}.)",
                    hit.reason,
                    names.join(", ")
                );
                return Err(refusal(hit, reason));
            }
        }
    }
    Ok(())
}

fn refusal(hit: &Hit, reason: String) -> Refusal {
    // Every hit names a rule of the table; a name this build does not know is still a rule's.
    let rule = RuleId::from_id(&hit.rule).map_or(Rule::Config, Rule::Command);
    Refusal {
        segment: Some(hit.segment.clone()),
        ..Refusal::new(rule, reason)
    }
}
