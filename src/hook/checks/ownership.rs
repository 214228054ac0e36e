//! A write to a file another live stream owns is refused: of the live locks whose `owns` match,
//! the earliest claim keeps it ([`crate::hook::targets::owner_of`]).

use crate::hook::context::{Ctx, describe};
use crate::hook::decision::{Checked, Refusal, Rule};
use crate::hook::targets::Facts;

pub fn check(ctx: &Ctx, f: &Facts) -> Checked {
    let (Some(rel), Some(h)) = (&f.rel, f.owner()) else {
        return Ok(());
    };
    if f.mine {
        return Ok(());
    }
    Err(Refusal::new(
        Rule::Ownership,
        format!(
            "session-lock: {rel} is owned by stream '{}' ({}). Edit only files your own stream owns; for a change here ask that stream's session, or wait for it: wait-milestone {} --stream <yours>",
            h.record.stream,
            describe(h, ctx.now),
            h.record.stream
        ),
    )
    .with_stream(h.record.stream.clone())
    .with_path(rel.clone()))
}
