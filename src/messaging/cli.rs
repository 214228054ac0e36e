//! The `send-message` command line: subcommands → the operations of this module → exit codes.

use super::list::{ListRequest, Scope};
use super::review::Action;
use super::send::SendRequest;
use super::{Ctx, Error, SendStatus, identity, wake};
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
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u16).range(1..=super::list::MAX_LIMIT as i64))]
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
        /// Wait until the target's model has the message (delivered), up to SECS (default
        /// 600), with progress on stderr; exit 5 if it has not by then.
        #[arg(long, value_name = "SECS", num_args = 0..=1, default_missing_value = "600", require_equals = true)]
        wait: Option<u64>,
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
        /// $XDG_RUNTIME_DIR/session-lock/bus.sock, else <state home>/run/bus.sock); its folder
        /// must be yours, and nobody else's to write in.
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
    /// Resume a session that is not running with its queued messages (what send starts,
    /// detached, for a cold target).
    #[command(hide = true)]
    Wake {
        #[arg(long)]
        target: String,
    },
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

/// The message: the argument, or stdin when it is `-` or absent. Stdin is read up to a few
/// bytes past `limit` and cut on a character boundary, so an over-long message is refused by
/// size (never as "not UTF-8"), and nothing past that is read.
fn read_message(arg: Option<String>, limit: usize) -> anyhow::Result<String> {
    use std::io::IsTerminal;
    match arg {
        Some(m) if m != "-" => Ok(m),
        _ => {
            if std::io::stdin().is_terminal() {
                eprintln!("send-message: reading the message from stdin; end with Ctrl-D");
            }
            let mut buf = Vec::new();
            std::io::stdin()
                .take(limit as u64 + 4)
                .read_to_end(&mut buf)?;
            text_within(buf, limit)
        }
    }
}

/// Bytes read from stdin as text. Past `limit`, a character cut by the read is dropped (what is
/// left is still over the limit, and is refused for its size).
fn text_within(mut buf: Vec<u8>, limit: usize) -> anyhow::Result<String> {
    if buf.len() > limit
        && let Err(e) = std::str::from_utf8(&buf)
        && e.error_len().is_none()
    {
        buf.truncate(e.valid_up_to());
    }
    String::from_utf8(buf).map_err(|_| fail(Code::Usage, "the message on stdin is not UTF-8"))
}

fn lib(e: Error) -> anyhow::Error {
    fail(e.code(), e.to_string())
}

/// The real waker: run-agent, headless.
pub fn default_waker() -> Arc<dyn wake::Waker> {
    Arc::new(wake::AgentWaker)
}

/// Runs one `send-message` command. With `--json`, a failure is one JSON object on stdout too
/// (`{"status":"error","error":"…"}`), besides the usual line on stderr.
pub fn run(common: &Common, command: Command) -> anyhow::Result<Code> {
    let r = dispatch(common, command);
    if common.json
        && let Err(e) = &r
    {
        let text = e
            .chain()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(": ");
        print_json(&serde_json::json!({"status": "error", "error": text}))?;
    }
    r
}

fn dispatch(common: &Common, command: Command) -> anyhow::Result<Code> {
    let cwd = std::env::current_dir()?;
    if let Some(repo) = &common.repo
        && !repo.is_dir()
    {
        return Err(fail(
            Code::Usage,
            format!("--repo {}: no such folder", repo.display()),
        ));
    }
    if let Command::Mcp = command {
        // Each call loads its own context; the caller is the process that started the server.
        super::mcp::run(cwd, default_waker())
            .map_err(|e| fail(Code::Failure, format!("mcp: {e}")))?;
        return Ok(Code::Success);
    }
    let ctx = Ctx::load(common.repo.as_deref(), &cwd, default_waker()).map_err(lib)?;
    let json = common.json;
    let caller = || identity::from_env(&cwd).map_err(|e| lib(Error::Identity(e)));
    match command {
        Command::Mcp => Ok(Code::Success), // served above, before any context is loaded
        Command::Serve {
            socket,
            idle_ms,
            processing_ms,
        } => serve(ctx, socket, idle_ms, processing_ms),
        Command::List {
            scope,
            include_subagents,
            limit,
        } => {
            let req = ListRequest {
                scope,
                include_subagents,
                limit: limit as usize,
            };
            let r = super::list::list(&ctx, &caller()?, &req);
            render(json, &r, render_list)?;
            Ok(Code::Success)
        }
        Command::Wake { target } => {
            super::wake::run(&ctx, &target).map_err(lib)?;
            Ok(Code::Success)
        }
        Command::Send {
            to,
            summary,
            no_dedupe,
            wait,
            message,
        } => {
            let caller = caller()?;
            let text = read_message(message, ctx.m().max_message_bytes)?;
            let req = SendRequest {
                to,
                text,
                summary,
                dedupe: !no_dedupe,
            };
            let r = super::send::send(&ctx, &caller, &req).map_err(lib)?;
            let waits = matches!(
                r.status,
                SendStatus::Accepted | SendStatus::Queued | SendStatus::Waking | SendStatus::Held
            );
            let Some(secs) = wait.filter(|_| waits) else {
                render(json, &r, render_send)?;
                return Ok(r.status.code());
            };
            eprintln!("send-message: {}: {}", r.status.as_str(), r.detail);
            let limit = std::time::Duration::from_secs(secs);
            let v = super::review::wait_delivered(&ctx, &caller, &r.message_id, limit, |v| {
                eprintln!("send-message: {} ({})", v.state, v.detail)
            })
            .map_err(lib)?;
            render(json, &v, render_status)?;
            if v.state == "delivered" {
                return Ok(Code::Success);
            }
            eprintln!(
                "send-message: message {} is {} after {secs}s",
                r.message_id, v.state
            );
            Ok(if matches!(v.state.as_str(), "expired" | "refused") {
                Code::Refused
            } else {
                Code::Timeout
            })
        }
        Command::Review { accept, refuse } => {
            let action = accept.map(Action::Accept).or(refuse.map(Action::Refuse));
            let r = super::review::review(&ctx, &caller()?, action).map_err(lib)?;
            render(json, &r, render_review)?;
            Ok(match &r.action {
                Some(a) if a.status == super::review::ActionStatus::NotFound => Code::NotFound,
                _ => Code::Success,
            })
        }
        Command::Status { message_id } => {
            let r = super::review::status(&ctx, &caller()?, &message_id).map_err(lib)?;
            let Some(v) = r else {
                return Err(fail(
                    Code::NotFound,
                    format!("no message {message_id} in your ledgers"),
                ));
            };
            render(json, &v, render_status)?;
            Ok(Code::Success)
        }
        Command::Create {
            cwd,
            summary,
            message,
        } => {
            let caller = caller()?;
            let text = read_message(message, ctx.m().max_message_bytes)?;
            let req = super::create::CreateRequest { cwd, text, summary };
            let r = super::create::create(&ctx, &caller, &req).map_err(lib)?;
            render(json, &r, render_create)?;
            Ok(r.status.code())
        }
    }
}

/// One answer: its JSON, or its text.
fn render<T: serde::Serialize>(
    json: bool,
    r: &T,
    text: fn(&T) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    if json { print_json(r) } else { text(r) }
}

fn render_list(r: &super::list::ListResult) -> anyhow::Result<()> {
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
    Ok(())
}

fn render_send(r: &super::SendResult) -> anyhow::Result<()> {
    println!("{}: {}", r.status.as_str(), r.detail);
    println!("message id: {}", r.message_id);
    for c in r.candidates.iter().flatten() {
        println!("  {}  {}  {}", c.name, c.id, c.cwd.as_deref().unwrap_or(""));
    }
    Ok(())
}

fn render_review(r: &super::review::ReviewResult) -> anyhow::Result<()> {
    if let Some(a) = &r.action {
        println!("{}: {}", a.status.as_str(), a.detail);
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
    Ok(())
}

fn render_status(v: &super::review::StatusView) -> anyhow::Result<()> {
    println!(
        "{}: {} since {} ({})",
        v.message_id, v.state, v.updated_at, v.detail
    );
    if let Some(t) = &v.target {
        println!("to {} ({})", t.name, t.id);
    }
    if let Some(f) = &v.from {
        println!("from {} ({})", f.name, f.id);
    }
    Ok(())
}

fn render_create(r: &super::create::CreateResult) -> anyhow::Result<()> {
    println!("{}: {}", r.status.as_str(), r.detail);
    if let Some(s) = &r.session_id {
        println!("session id: {s}");
    }
    Ok(())
}

#[cfg(unix)]
fn serve(
    ctx: Ctx,
    socket: Option<PathBuf>,
    idle_ms: u64,
    processing_ms: u64,
) -> anyhow::Result<Code> {
    let path = socket
        .or_else(super::bus::default_socket)
        .ok_or_else(|| lib(Error::NoStateHome))?;
    let mut opts = super::bus::BusOptions::new(path.clone());
    opts.idle = std::time::Duration::from_millis(idle_ms);
    opts.processing = std::time::Duration::from_millis(processing_ms);
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(sig, stop.clone())?;
    }
    eprintln!("send-message: serving {}", path.display());
    super::bus::serve(ctx, opts, stop).map_err(lib)?;
    Ok(Code::Success)
}

#[cfg(not(unix))]
fn serve(
    _ctx: Ctx,
    _socket: Option<PathBuf>,
    _idle_ms: u64,
    _processing_ms: u64,
) -> anyhow::Result<Code> {
    Err(fail(
        Code::Refused,
        "serve listens on a Unix domain socket; this platform has none",
    ))
}

#[cfg(test)]
mod tests {
    use super::text_within;

    #[test]
    fn stdin_past_the_limit_is_cut_on_a_character_boundary() {
        // 65536 + 4 bytes read of a longer text of 3-byte characters: the cut one is dropped.
        let bytes = "€".repeat(30_000).into_bytes()[..65_540].to_vec();
        let t = text_within(bytes, 65_536).unwrap();
        assert!(t.len() > 65_536 && t.len() <= 65_540, "{}", t.len());
        assert!(t.chars().all(|c| c == '€'));
        // Within the limit a broken character is an error, not cut away.
        assert!(text_within(vec![b'a', 0xe2, 0x82], 65_536).is_err());
        assert!(
            text_within(vec![0xff, b'a'], 1).is_err(),
            "invalid, not cut"
        );
    }
}
