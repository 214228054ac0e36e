//! `send-message serve`: the local bus (§6.3) for programs in any language.
//!
//! One JSON request per connection, ended by a newline or EOF, at most 1 MiB of UTF-8; the
//! caller's messaging token (`CLAUDE_CODE_MESSAGING_TOKEN`) inside it names the sender, or an
//! auth line before it (`{"type":"auth","token":"…"}`, the form the client's own socket takes)
//! does. Nothing in the request can claim another identity:
//!
//! ```text
//! {"token":"…","op":"list","scope":"workspace","include_subagents":false,"limit":20}
//! {"token":"…","op":"send","to":"api-worker","message":"…","summary":"…","dedupe":true}
//! ```
//!
//! One JSON line comes back, then the connection closes: `{"ok":true,"result":…}` or
//! `{"ok":false,"error":{"code":"unauthenticated|bad_request|too_large|timeout|failed",
//! "message":"…"}}`. A connection that sends no complete request in 30 s, or a request that
//! takes over 25 s, gets `timeout`. A field the operation does not have is a `bad_request`.
//! The socket's folder is this user's (made 0700, or an existing one checked: owner, no write
//! for others, not a link; never taken over) and the socket 0600; a second server finds the
//! first one answering and fails instead of taking its endpoint; on stop every open connection
//! is closed and the socket file removed.

use super::identity;
use super::{Ctx, Error, io};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The largest request, in bytes.
pub const MAX_REQUEST: usize = 1024 * 1024;

#[derive(Clone, Debug)]
pub struct BusOptions {
    pub socket: PathBuf,
    /// How long a connection may take to send its request.
    pub idle: Duration,
    /// How long a request may take to answer.
    pub processing: Duration,
    pub max_request: usize,
}

/// `SESSION_LOCK_MESSAGING_SOCKET`, else `$XDG_RUNTIME_DIR/session-lock/bus.sock`, else
/// `<state home>/run/bus.sock`: a folder of this user's, never a name in a shared folder that
/// another user could take first. `None` without any of them (no HOME).
pub fn default_socket() -> Option<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("SESSION_LOCK_MESSAGING_SOCKET") {
        return Some(PathBuf::from(p));
    }
    if let Some(run) = var("XDG_RUNTIME_DIR") {
        return Some(PathBuf::from(run).join("session-lock").join("bus.sock"));
    }
    crate::sessions::state_home().map(|h| h.join("run").join("bus.sock"))
}

impl BusOptions {
    pub fn new(socket: PathBuf) -> BusOptions {
        BusOptions {
            socket,
            idle: Duration::from_secs(30),
            processing: Duration::from_secs(25),
            max_request: MAX_REQUEST,
        }
    }
}

fn error(code: &str, message: impl Into<String>) -> Value {
    json!({"ok": false, "error": {"code": code, "message": message.into()}})
}

/// Reads the next line (up to a newline or EOF) into `line`, keeping what follows in `rest`.
/// `Err` is the answer to send.
fn read_line(
    conn: &mut UnixStream,
    opts: &BusOptions,
    deadline: Instant,
    rest: &mut Vec<u8>,
) -> Result<Vec<u8>, Value> {
    let mut chunk = [0u8; 16 * 1024];
    // Bytes of `rest` already searched for a newline.
    let mut searched = 0;
    loop {
        if let Some(i) = rest[searched..].iter().position(|b| *b == b'\n') {
            let i = searched + i;
            let line = rest[..i].to_vec();
            rest.drain(..=i);
            return Ok(line);
        }
        searched = rest.len();
        if rest.len() > opts.max_request {
            return Err(error(
                "too_large",
                format!("the request is over {} bytes", opts.max_request),
            ));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(error(
                "timeout",
                format!("no complete request within {}s", opts.idle.as_secs()),
            ));
        }
        let _ = conn.set_read_timeout(Some(left));
        match conn.read(&mut chunk) {
            Ok(0) => return Ok(std::mem::take(rest)),
            Ok(n) => rest.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(error("bad_request", format!("read failed: {e}"))),
        }
    }
}

/// The auth line the client's own socket takes, allowed here before the request.
#[derive(serde::Deserialize)]
struct AuthLine {
    #[serde(rename = "type")]
    kind: String,
    token: String,
}

/// Reads one request: a line (or everything up to EOF), or an auth line
/// `{"type":"auth","token":"…"}` followed by the request line. Returns the request bytes and the
/// auth line's token, if one came. `Err` is the answer to send.
fn read_request(
    conn: &mut UnixStream,
    opts: &BusOptions,
) -> Result<(Vec<u8>, Option<String>), Value> {
    let deadline = Instant::now() + opts.idle;
    let mut rest = Vec::new();
    let first = read_line(conn, opts, deadline, &mut rest)?;
    match serde_json::from_slice::<AuthLine>(&first) {
        Ok(auth) if auth.kind == "auth" => Ok((
            read_line(conn, opts, deadline, &mut rest)?,
            Some(auth.token),
        )),
        _ => Ok((first, None)),
    }
}

/// The two request forms, named in every shape error.
const FORMS: &str = "send one JSON line {\"token\":…,\"op\":\"list\"|\"send\",…}, or an auth line {\"type\":\"auth\",\"token\":…} and then the request line";

pub use super::request::Op;

fn bad(message: impl std::fmt::Display) -> Value {
    error("bad_request", format!("{message}; {FORMS}"))
}

/// Checks a request's shape (same rules as the command line). `auth` is the token of an auth
/// line sent before it. `Err` is the answer.
pub fn parse_request(bytes: &[u8], auth: Option<String>) -> Result<(String, Op), Value> {
    let text = std::str::from_utf8(bytes).map_err(|_| bad("the request is not UTF-8"))?;
    let mut v: Value = serde_json::from_str(text.trim())
        .map_err(|e| bad(format_args!("the request is not JSON: {e}")))?;
    let Some(obj) = v.as_object_mut() else {
        return Err(bad("the request must be a JSON object"));
    };
    let inline = match obj.remove("token") {
        Some(Value::String(t)) => Some(t),
        None | Some(Value::Null) => None,
        Some(_) => return Err(bad("'token' must be a string")),
    };
    let token = inline.or(auth).filter(|t| !t.is_empty());
    let Some(token) = token else {
        return Err(error("unauthenticated", format!("no token; {FORMS}")));
    };
    let op = super::request::parse(v).map_err(bad)?;
    Ok((token, op))
}

/// Answers one parsed request (the caller's repo config applies).
fn answer(base: &Ctx, token: &str, peer: Option<u32>, seen: &Tokens, op: Op) -> Value {
    let Some(caller) = identity::by_token(token, peer) else {
        return error("unauthenticated", "the token names no live session");
    };
    // A token stays with the session it first came from.
    if let Ok(mut map) = seen.lock() {
        match map.get(token) {
            Some(owner) if owner != &caller.id => {
                return error("unauthenticated", "the token belongs to another session");
            }
            Some(_) => {}
            None => {
                map.insert(token.to_string(), caller.id.clone());
            }
        }
    }
    let mut ctx = base.clone();
    if let Some(root) = crate::state::git_top(Path::new(&caller.cwd)) {
        match crate::config::Config::load(&root) {
            Ok(c) => ctx.config = c,
            Err(e) => return error("failed", e.to_string()),
        }
        ctx.repo_root = Some(root);
    }
    match op {
        Op::List(req) => json!({"ok": true, "result": super::list::list(&ctx, &caller, &req)}),
        Op::Send(req) => match super::send::send(&ctx, &caller, &req) {
            Ok(r) => json!({"ok": true, "result": r}),
            Err(e) => error("failed", e.to_string()),
        },
    }
}

/// Which session each token came from (in memory, for the server's life).
type Tokens = Arc<Mutex<std::collections::HashMap<String, String>>>;

fn handle(ctx: &Ctx, mut conn: UnixStream, opts: &BusOptions, seen: &Tokens) {
    let _ = conn.set_nonblocking(false);
    let peer = super::peer::peer_pid(&conn);
    let reply = match read_request(&mut conn, opts).and_then(|(b, auth)| parse_request(&b, auth)) {
        Err(v) => v,
        Ok((token, op)) => {
            let (tx, rx) = std::sync::mpsc::channel();
            let (c, seen) = (ctx.clone(), seen.clone());
            std::thread::spawn(move || {
                let _ = tx.send(answer(&c, &token, peer, &seen, op));
            });
            rx.recv_timeout(opts.processing).unwrap_or_else(|_| {
                error(
                    "timeout",
                    format!("the request took over {}s", opts.processing.as_secs()),
                )
            })
        }
    };
    let _ = conn.set_write_timeout(Some(Duration::from_secs(5)));
    let _ = conn.write_all(format!("{reply}\n").as_bytes());
    let _ = conn.shutdown(std::net::Shutdown::Write);
    // Let a client still writing (an oversized request) finish, so it can read the answer.
    let _ = conn.set_read_timeout(Some(Duration::from_millis(200)));
    let mut sink = [0u8; 64 * 1024];
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        match conn.read(&mut sink) {
            Ok(n) if n > 0 => continue,
            _ => break,
        }
    }
    let _ = conn.shutdown(std::net::Shutdown::Both);
}

/// Prepares the endpoint: a private folder (made 0700, or one that exists checked: this user's,
/// not a link, nobody else may write in it; never taken over), and no other server already on
/// it.
fn bind(path: &Path) -> Result<UnixListener, Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        crate::private::secret_dir(dir).map_err(|e| {
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                Error::Usage(format!(
                    "cannot serve there: {e}; clients would hand their tokens to whoever controls it (remove it, or set SESSION_LOCK_MESSAGING_SOCKET to a socket in a folder of your own)"
                ))
            } else {
                Error::Io {
                    what: format!("cannot create {}", dir.display()),
                    source: e,
                }
            }
        })?;
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if UnixStream::connect(path).is_ok() {
            return Err(Error::Usage(format!(
                "another bus already serves {}",
                path.display()
            )));
        }
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_socket() {
            return Err(Error::Usage(format!(
                "{} exists and is not a socket; not touching it",
                path.display()
            )));
        }
        std::fs::remove_file(path)
            .map_err(io(format!("cannot remove stale {}", path.display())))?;
    }
    let listener =
        UnixListener::bind(path).map_err(io(format!("cannot listen on {}", path.display())))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(io(format!("cannot make {} private", path.display())))?;
    Ok(listener)
}

/// Serves until `stop` turns true; then closes every connection and removes the socket.
pub fn serve(ctx: Ctx, opts: BusOptions, stop: Arc<AtomicBool>) -> Result<(), Error> {
    let listener = bind(&opts.socket)?;
    let ino = std::fs::metadata(&opts.socket).map(|m| m.ino()).ok();
    listener
        .set_nonblocking(true)
        .map_err(io("cannot configure the socket"))?;
    let open: Arc<Mutex<Vec<(usize, UnixStream)>>> = Arc::new(Mutex::new(Vec::new()));
    let running = Arc::new(AtomicUsize::new(0));
    let seen: Tokens = Arc::new(Mutex::new(Default::default()));
    let mut next = 0usize;
    while !stop.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((conn, _)) => {
                next += 1;
                let n = next;
                if let (Ok(clone), Ok(mut list)) = (conn.try_clone(), open.lock()) {
                    list.push((n, clone));
                }
                let (c, o, open2, running2, seen2) = (
                    ctx.clone(),
                    opts.clone(),
                    open.clone(),
                    running.clone(),
                    seen.clone(),
                );
                running.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    handle(&c, conn, &o, &seen2);
                    if let Ok(mut list) = open2.lock() {
                        list.retain(|(i, _)| *i != n);
                    }
                    running2.fetch_sub(1, Ordering::SeqCst);
                });
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Error::Io {
                    what: "accept".into(),
                    source: e,
                });
            }
        }
    }
    if let Ok(list) = open.lock() {
        for (_, c) in list.iter() {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
    }
    let until = Instant::now() + Duration::from_secs(2);
    while running.load(Ordering::SeqCst) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Remove the socket only if it is still ours.
    if std::fs::metadata(&opts.socket).map(|m| m.ino()).ok() == ino {
        let _ = std::fs::remove_file(&opts.socket);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messaging::list::ListRequest;
    use crate::messaging::send::SendRequest;

    fn code(v: &Value) -> &str {
        v["error"]["code"].as_str().unwrap_or("")
    }

    #[test]
    fn request_shapes() {
        assert!(matches!(
            parse_request(br#"{"token":"t","op":"list","limit":20}"#, None),
            Ok((_, Op::List(ListRequest { limit: 20, .. })))
        ));
        let (_, op) = parse_request(
            br#"{"token":"t","op":"send","to":"a","message":"m","dedupe":false}"#,
            None,
        )
        .unwrap();
        let (token, _) = parse_request(br#"{"op":"list"}"#, Some("from-auth".into())).unwrap();
        assert_eq!(token, "from-auth", "the auth line's token");
        assert!(matches!(op, Op::Send(SendRequest { dedupe: false, .. })));
        for (bad, want) in [
            (&br#"{"op":"list"}"#[..], "unauthenticated"),
            (br#"{"token":"","op":"list"}"#, "unauthenticated"),
            (br#"{"token":"t","op":"dance"}"#, "bad_request"),
            (br#"{"token":"t","op":"list","limit":0}"#, "bad_request"),
            (br#"{"token":"t","op":"list","limit":2.5}"#, "bad_request"),
            (
                br#"{"token":"t","op":"list","include_subagents":"yes"}"#,
                "bad_request",
            ),
            (br#"{"token":"t","op":"send","message":"m"}"#, "bad_request"),
            (
                br#"{"token":"t","op":"send","to":"a","message":5}"#,
                "bad_request",
            ),
            (b"[1]", "bad_request"),
            (b"\xff\xfe", "bad_request"),
        ] {
            let v = parse_request(bad, None).unwrap_err();
            assert_eq!(code(&v), want, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn second_server_fails_and_stale_socket_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("b").join("bus.sock");
        let first = bind(&p).unwrap();
        let mode = std::fs::metadata(p.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let e = bind(&p).unwrap_err().to_string();
        assert!(e.contains("already serves"), "{e}");
        drop(first); // the file stays, nobody answers: stale
        assert!(p.exists());
        let _again = bind(&p).unwrap();
        let plain = dir.path().join("b").join("plain");
        std::fs::write(&plain, "x").unwrap();
        assert!(bind(&plain).is_err(), "a regular file is never removed");
    }
}
