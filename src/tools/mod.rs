//! The suite's tools, one module each; `src/bin/<tool>.rs` parses arguments and calls in here.

pub mod build_renderer;
pub mod reload_plugin;
