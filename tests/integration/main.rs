//! The integration test binary (the only one: `autotests = false`). Each area is a module file
//! beside this one; tests reach the tools only through `env!("CARGO_BIN_EXE_<name>")`.

mod build_lock;
mod reload_bridge;
mod reload_pipeline;
