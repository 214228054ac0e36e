//! session-lock: let several AI coding sessions share one git working tree.

pub mod shell;
