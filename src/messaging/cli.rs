//! The `send-message` command line: subcommands → the operations of this module → exit codes.

use super::list::{ListRequest, Scope};
use super::review::Action;
use super::send::SendRequest;
use super::{Ctx, Error, identity, wake};
use crate::cli::{Common, print_json};
use crate::exit::{Code, fail};
use std::io::Read;
use std::path::PathBuf;
use std::sync::Arc;
#[cfg(unix)]
use std::sync::atomic::AtomicBool;

#[derive(clap::Subcommand, Debug, Clone)]
pub enum Command {
    /// List the sessions you may message: running ones, then cold ones that can be resumed.
    List {
        /// workspace (this repo), machine (every reachable session) or session (own subagents).
        #[arg(long, value_enum, default_value_t = Scope::Workspace)]
        scope: Scope,
        /// Also list other sessions' subagents (never sendable).
        #[arg(long)]
        include_subagents: bool,
        /// At most this many rows (1..200).
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=200))]
        limit: u16,
    },
    /// Send a message to one session, by name or id.
    Send {
        /// The session: its exact id, its name, or a stream it claimed. Quote names with spaces.
        #[arg(long)]
        to: String,
        /// A short preview (at most 200 characters).
        #[arg(long)]
        summary: Option<String>,
        /// Send even if the same message went to the same session within 10 s.
        #[arg(long)]
        no_dedupe: bool,
        /// The message; `-` or nothing reads it from stdin.
        message: Option<String>,
    },
    /// Your held inbound messages: list them, or accept / refuse one.
    Review {
        /// Accept this held message: it is shown here, in your context.
        #[arg(long, value_name = "ID", conflicts_with = "refuse")]
        accept: Option<String>,
        /// Refuse this held message: its text is deleted.
        #[arg(long, value_name = "ID")]
        refuse: Option<String>,
    },
    /// Where a message stands now.
    Status { message_id: String },
    /// Serve the local bus for programs in any language (one JSON request per connection).
    Serve {
        /// The socket (default: SESSION_LOCK_MESSAGING_SOCKET, else
        /// <tmp>/session-lock-messaging-<uid>/bus.sock).
        #[arg(long)]
        socket: Option<PathBuf>,
        /// How long a connection may take to send its request, in ms.
        #[arg(long, hide = true, default_value_t = 30_000)]
        idle_ms: u64,
        /// How long a request may take to answer, in ms.
        #[arg(long, hide = true, default_value_t = 25_000)]
        processing_ms: u64,
    },
    /// Serve list_session_agents and send_session_message as MCP tools on stdin/stdout, for the
    /// Claude Code session that starts this (guard install wires it in .mcp.json).
    Mcp,
    /// Start a new session in a folder with the message as its first prompt.
    Create {
        /// The new session's folder (absolute; your workspace unless config opens others).
        #[arg(long)]
        cwd: PathBuf,
        #[arg(long)]
        summary: Option<String>,
        /// The message; `-` or nothing reads it from stdin.
        message: Option<String>,
    },
}

fn read_message(arg: Option<String>, limit: usize) -> anyhow::Result<String> {
    match arg {
        Some(m) if m != "-" => Ok(m),
        _ => {
            let mut buf = Vec::new();
            std::io::stdin()
                .take(limit as u64 + 1)
                .read_to_end(&mut buf)?;
            String::from_utf8(buf)
                .map_err(|_| fail(Code::Usage, "the message on stdin is not UTF-8"))
        }
    }
}

fn lib(e: Error) -> anyhow::Error {
    fail(e.code(), e.to_string())
}

/// The real waker: run-agent, headless.
pub fn default_waker() -> Arc<dyn wake::Waker> {
    Arc::new(wake::AgentWaker)
}

/// Runs one `send-message` command.
pub fn run(common: &Common, command: Command) -> anyhow::Result<Code> {
    let cwd = std::env::current_dir()?;
    if let Command::Mcp = command {
        // Each call loads its own context; the caller is the process that started the server.
        super::mcp::run(cwd, default_waker())
            .map_err(|e| fail(Code::Failure, format!("mcp: {e}")))?;
        return Ok(Code::Success);
    }
    let ctx = Ctx::load(common.repo.as_deref(), &cwd, default_waker()).map_err(lib)?;
    if let Command::Serve {
        socket,
        idle_ms,
        processing_ms,
    } = &command
    {
        #[cfg(unix)]
        {
            let path = socket.clone().unwrap_or_else(super::bus::default_socket);
            let mut opts = super::bus::BusOptions::new(path.clone());
            opts.idle = std::time::Duration::from_millis(*idle_ms);
            opts.processing = std::time::Duration::from_millis(*processing_ms);
            let stop = Arc::new(AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
                signal_hook::flag::register(sig, stop.clone())?;
            }
            eprintln!("send-message: serving {}", path.display());
            super::bus::serve(ctx, opts, stop).map_err(lib)?;
            return Ok(Code::Success);
        }
        #[cfg(not(unix))]
        {
            let _ = (ctx, socket, idle_ms, processing_ms);
            return Err(crate::exit::fail(
                Code::Refused,
                "serve listens on a Unix domain socket; this platform has none",
            ));
        }
    }
    let caller = identity::from_env(&cwd).map_err(|e| lib(Error::Identity(e)))?;
    match command {
        Command::List {
            scope,
            include_subagents,
            limit,
        } => {
            let r = super::list::list(
                &ctx,
                &caller,
                &ListRequest {
                    scope,
                    include_subagents,
                    limit: limit as usize,
                },
            );
            if common.json {
                print_json(&r)?;
            } else {
                if let Some(me) = &r.me {
                    println!(
                        "this session: {} [{}]",
                        me.name,
                        crate::state::short_id(&me.id)
                    );
                }
                if r.agents.is_empty() {
                    println!("no sessions you can message");
                }
                for a in &r.agents {
                    println!(
                        "{}  [{}]  {}  {}{}  {}",
                        a.name,
                        a.short_id,
                        serde_json::to_value(a.status)?.as_str().unwrap_or(""),
                        serde_json::to_value(a.kind)?.as_str().unwrap_or(""),
                        if a.sendable { "" } else { " (not sendable)" },
                        a.cwd
                    );
                }
                if r.more > 0 {
                    println!("… and {} more (--limit)", r.more);
                }
                if r.omitted > 0 {
                    println!("{} sessions omitted (not reachable from here)", r.omitted);
                }
            }
            Ok(Code::Success)
        }
        Command::Send {
            to,
            summary,
            no_dedupe,
            message,
        } => {
            let text = read_message(message, ctx.m().max_message_bytes)?;
            let r = super::send::send(
                &ctx,
                &caller,
                &SendRequest {
                    to,
                    text,
                    summary,
                    dedupe: !no_dedupe,
                },
            )
            .map_err(lib)?;
            if common.json {
                print_json(&r)?;
            } else {
                println!("{}: {}", r.status.as_str(), r.detail);
                println!("message id: {}", r.message_id);
                for c in r.candidates.iter().flatten() {
                    println!("  {}  {}  {}", c.name, c.id, c.cwd.as_deref().unwrap_or(""));
                }
            }
            Ok(r.status.code())
        }
        Command::Review { accept, refuse } => {
            let action = accept.map(Action::Accept).or(refuse.map(Action::Refuse));
            let r = super::review::review(&ctx, &caller, action).map_err(lib)?;
            let code = match &r.action {
                Some(a) if a.status == "not_found" => Code::NotFound,
                _ => Code::Success,
            };
            if common.json {
                print_json(&r)?;
            } else {
                if let Some(a) = &r.action {
                    println!("{}: {}", a.status, a.detail);
                    if let Some(m) = &a.message {
                        println!("{m}");
                    }
                }
                if r.held.is_empty() {
                    println!("no held messages");
                }
                for h in &r.held {
                    println!(
                        "{}  from {} ({})  {} bytes  expires {}{}",
                        h.message_id,
                        h.from.name,
                        h.from.id,
                        h.bytes,
                        h.expires_at,
                        h.summary
                            .as_deref()
                            .map(|s| format!("  summary: {s}"))
                            .unwrap_or_default()
                    );
                }
            }
            Ok(code)
        }
        Command::Status { message_id } => {
            let r = super::review::status(&ctx, &caller, &message_id).map_err(lib)?;
            match r {
                None => Err(fail(
                    Code::NotFound,
                    format!("no message {message_id} in your ledgers"),
                )),
                Some(v) => {
                    if common.json {
                        print_json(&v)?;
                    } else {
                        println!("{}: {} ({})", v.message_id, v.state, v.detail);
                        if let Some(t) = &v.target {
                            println!("to {} ({})", t.name, t.id);
                        }
                        if let Some(f) = &v.from {
                            println!("from {} ({})", f.name, f.id);
                        }
                    }
                    Ok(Code::Success)
                }
            }
        }
        Command::Create {
            cwd,
            summary,
            message,
        } => {
            let text = read_message(message, ctx.m().max_message_bytes)?;
            let r = super::create::create(
                &ctx,
                &caller,
                &super::create::CreateRequest { cwd, text, summary },
            )
            .map_err(lib)?;
            if common.json {
                print_json(&r)?;
            } else {
                println!("{}: {}", r.status, r.detail);
                if let Some(s) = &r.session_id {
                    println!("session id: {s}");
                }
            }
            Ok(match r.status.as_str() {
                "delivered" => Code::Success,
                "refused" => Code::Refused,
                _ => Code::Failure,
            })
        }
        Command::Serve { .. } | Command::Mcp => Ok(Code::Success),
    }
}
