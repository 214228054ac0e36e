//! MCP tools: the rules that go by tool name (command runners, process killers, plugin
//! toggles), but for the names `mcpLookalikeAllow` lets through.

use crate::hook::context::{Call, Ctx};
use crate::hook::decision::Checked;
use crate::hook::rule_hits;

pub fn check(ctx: &Ctx, call: &Call) -> Checked {
    let p = call.p;
    let Some(tool) = p.mcp_tool() else {
        return Ok(());
    };
    let rules = rule_hits::compiled(ctx)?;
    let name = p.tool_name.as_str();
    let server_tool = name.strip_prefix("mcp__").unwrap_or_default();
    let lookalike_ok = ctx
        .config
        .mcp_lookalike_allow
        .iter()
        .any(|a| a.eq_ignore_ascii_case(tool) || a.eq_ignore_ascii_case(server_tool));
    rule_hits::decide(
        ctx,
        p,
        rules
            .check_mcp_allowing(name, &p.tool_input, lookalike_ok)
            .into_iter(),
    )
}
