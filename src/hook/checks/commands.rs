//! The destructive-command rules (`crate::rules`) over a Bash or PowerShell command's analysis.

use crate::hook::context::{Call, Ctx};
use crate::hook::decision::Checked;
use crate::hook::rule_hits;

pub fn check(ctx: &Ctx, call: &Call) -> Checked {
    let Some(command) = &call.command else {
        return Ok(());
    };
    let rules = rule_hits::compiled(ctx)?;
    let hits = rules.check_analysis(&command.analysis, &command.here);
    rule_hits::decide(ctx, call.p, hits.into_iter().map(|(_, h)| h))
}
