//! session-lock: let several AI coding sessions share one git working tree.

pub mod rules;
pub mod shell;
