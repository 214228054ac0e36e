//! The protocol's own files (`protectedPaths`, the guard's folder, user-scope Claude Code
//! settings, the state home) are frozen while any lock is live, but for the stream whose `owns`
//! names them explicitly (`.claude/**`, not a catch-all like `**`).

use crate::hook::context::Ctx;
use crate::hook::decision::{Checked, Refusal, Rule};
use crate::hook::targets::{Facts, Target};

pub fn check(ctx: &Ctx, t: &Target, f: &Facts) -> Checked {
    let Some(what) = &f.protected else {
        return Ok(());
    };
    let ci = ctx.paths.case_insensitive();
    let names_it = f.mine
        && f.owner()
            .zip(f.rel.as_deref())
            .is_some_and(|(h, r)| crate::globs::names_explicitly(&h.record.owns, r, ci));
    if names_it {
        return Ok(());
    }
    Err(Refusal::new(
        Rule::Protected,
        format!(
            "session-lock: {what} is part of the session-lock protocol and is frozen while a round runs ({} live lock(s)). Edit it only when no stream is active, or from the stream that owns it",
            f.live.len()
        ),
    )
    .with_path(f.rel.clone().unwrap_or_else(|| t.raw.clone())))
}
