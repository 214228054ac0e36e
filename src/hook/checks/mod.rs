//! The guard's checks, one module each, run in the order [`super::pre_tool_use`] lists them.
//! Each reads the call's context and returns `Ok(())` or a typed refusal; none calls another
//! (what two checks share lives in `super::context` or `super::targets`).
//!
//! Per call: [`claims`] (record a claim, refuse a foreign release), then per write target
//! [`protected`], [`plan_edit`] and [`ownership`], then the command rules ([`commands`]) and
//! the rules that go by MCP tool name ([`mcp`]).

pub mod claims; // claims and releases a command runs
pub mod commands; // the destructive-command rules over the analysis
pub mod mcp; // the rules that go by MCP tool name
pub mod ownership; // a write to a file another live stream owns
pub mod plan_edit; // plans' frontmatter is fixed while another stream is live
pub mod protected; // the protocol's own files are frozen while a round runs
