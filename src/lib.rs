//! session-lock: let several AI coding sessions share one git working tree without destroying
//! each other's work. The map of the crate:

#[macro_use]
pub mod words; // the client's words as types: hook events, tools, permission modes; `string_enum!` (first: its macro is used below)
pub mod agent; // run-agent: one headless Claude Code turn, its contracts and MCP proxy
pub mod atomic; // atomic replace, create-if-absent, JSON-lines ledgers with torn-tail repair
pub mod cli; // the one exit path every binary returns through; shared flags
pub mod config; // session-lock/config.json with the protocol's defaults
pub mod exit; // the exit-code table
pub mod filelock; // the only place OS file locks are taken
pub mod floor; // the kernel write floor under shell commands: denied set, mechanisms, wrapper
pub mod git; // git run as a program: the porcelain status of a tree, parsed once
pub mod globs; // `owns` patterns with `!` exclusions → one matcher
pub mod hook; // guard's pipeline: payload → context → checks → one decision → rendered at the door
pub mod ids; // random ids (UUID v4 layout): messages, clones; the one generator
pub mod json_edit; // format-preserving edits of the JSON settings files people own
pub mod leases; // streams across machines: claims as compare-and-swap leases on the git remote
pub mod liveness; // pid + start time: is that process still the one we saw?
pub mod messaging; // send-message: addresses, authorization, limits, ledgers, delivery, wake, bus
pub mod paths; // payload path → repo-relative POSIX path, or outside
pub mod plan_cache; // plans as a claim reads them: parsed once, cached while unchanged
pub mod plans; // plans/*-ms-NN-*/plan.md frontmatter → streams
pub mod platform; // where things are on Linux, macOS and Windows: state, app data, the client's folders
pub mod private; // what is the user's alone: folders 0700, files 0600, a secret's folder checked
pub use state::round_index; // the round index: the live-lock set one guard call reads at a flat cost (in state)
pub mod rules; // the destructive-command rules: data with stable ids, pure functions over words
pub mod sessions; // who is running: the client's registry, the suite's, an external file
pub mod shell; // command lexer → segments of argv words, peeled wrappers, heredocs (pure)
pub mod state; // the repo's session-lock/ folder: locks, done markers, history
pub mod time; // UTC timestamps; the only clock reads
pub mod tools; // claim, release, status, wait-milestone, …
