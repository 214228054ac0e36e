//! One MCP Streamable HTTP exchange with the workspace's editor: `initialize` →
//! `notifications/initialized` → `tools/call editor-application-get-state` (empty arguments) →
//! `DELETE` of the session (always, best effort, even when the call failed).
//!
//! Replies may be JSON or `text/event-stream`. Bounded: one deadline for the whole exchange
//! (15 s by default), 256 KiB per reply, no redirects (a 3xx is an error), no proxy. Errors are
//! short reasons; they never carry a request header.

use super::unity::{Endpoint, check_url};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read};
use std::time::{Duration, Instant};

/// The editor's tool.
pub const TOOL: &str = "editor-application-get-state";
/// The protocol version offered in `initialize`.
pub const PROTOCOL_VERSION: &str = "2025-06-18";
/// The whole exchange's default deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(15);
/// The largest reply read.
pub const MAX_REPLY: usize = 256 * 1024;

/// Limits of one exchange.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub timeout: Duration,
    pub max_reply: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            timeout: DEFAULT_TIMEOUT,
            max_reply: MAX_REPLY,
        }
    }
}

/// Why the exchange failed: one line, no header, no body beyond a short server message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpError(pub String);

impl std::fmt::Display for McpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "editor state unavailable: {}", self.0)
    }
}

impl std::error::Error for McpError {}

fn err(msg: impl Into<String>) -> McpError {
    McpError(msg.into())
}

/// The text of a server message, cut short.
fn short(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

struct Session<'a> {
    endpoint: &'a Endpoint,
    deadline: Instant,
    limits: Limits,
    session_id: Option<String>,
    protocol: Option<String>,
}

fn header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

impl Session<'_> {
    fn seconds_left(&self) -> Result<u64, McpError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(err(format!(
                "no answer within {}s",
                self.limits.timeout.as_secs()
            )));
        }
        // minreq counts whole seconds; round up so a short deadline still gets one.
        Ok(left.as_millis().div_ceil(1000).max(1) as u64)
    }

    fn request(&self, method: minreq::Method, seconds: u64) -> minreq::Request {
        let mut r = minreq::Request::new(method, self.endpoint.url.as_str())
            .with_timeout(seconds)
            .with_follow_redirects(false)
            .with_max_headers_size(64 * 1024)
            .with_max_status_line_length(1024);
        if let Some(id) = &self.session_id {
            r = r.with_header("Mcp-Session-Id", id.as_str());
        }
        if let Some(v) = &self.protocol {
            r = r.with_header("MCP-Protocol-Version", v.as_str());
        }
        r
    }

    fn post(&self, body: &Value) -> Result<minreq::ResponseLazy, McpError> {
        let r = self
            .request(minreq::Method::Post, self.seconds_left()?)
            .with_header("Content-Type", "application/json")
            .with_header("Accept", "application/json, text/event-stream")
            .with_body(body.to_string());
        let resp = r.send_lazy().map_err(transport)?;
        match resp.status_code {
            200..=299 => Ok(resp),
            300..=399 => Err(err(format!("redirect refused (http {})", resp.status_code))),
            n => Err(err(format!("http {n} from {}", self.endpoint.host))),
        }
    }

    /// Sends a request and reads the JSON-RPC reply with `id`.
    fn call(&mut self, id: u64, method: &str, params: Value) -> Result<Value, McpError> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let resp = self.post(&body)?;
        if let Some(sid) = header(&resp.headers, "mcp-session-id") {
            let ok = !sid.is_empty()
                && sid.len() <= 256
                && sid.bytes().all(|b| (0x21..=0x7e).contains(&b));
            if !ok {
                return Err(err("the server sent an unusable session id"));
            }
            self.session_id = Some(sid.to_string());
        }
        let sse = header(&resp.headers, "content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
        let message = if sse {
            read_sse(resp, id, self.limits.max_reply)?
        } else {
            let bytes = read_capped(resp, self.limits.max_reply)?;
            let v: Value = serde_json::from_slice(&bytes)
                .map_err(|_| err(format!("{method}: the reply is not JSON")))?;
            pick(v, id).ok_or_else(|| err(format!("{method}: no reply with id {id}")))?
        };
        if let Some(e) = message.get("error") {
            let text = e
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("unknown error");
            return Err(err(format!("{method}: server error: {}", short(text))));
        }
        message
            .get("result")
            .cloned()
            .ok_or_else(|| err(format!("{method}: the reply has no result")))
    }

    fn notify(&self, method: &str) -> Result<(), McpError> {
        let body = json!({"jsonrpc": "2.0", "method": method});
        let resp = self.post(&body)?;
        // 202 Accepted, usually empty; read what there is, within the cap.
        read_capped(resp, self.limits.max_reply).map(|_| ())
    }

    fn delete(&self) {
        if self.session_id.is_none() {
            return;
        }
        // Its own short timeout: the session is cleaned even when the deadline has passed.
        let _ = self.request(minreq::Method::Delete, 2).send_lazy();
    }
}

fn transport(e: minreq::Error) -> McpError {
    match e {
        minreq::Error::IoError(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            err("the request timed out")
        }
        minreq::Error::IoError(io) => err(format!("connection failed: {}", io.kind())),
        other => err(format!("http error: {other}")),
    }
}

fn read_capped(resp: impl Read, cap: usize) -> Result<Vec<u8>, McpError> {
    let mut bytes = Vec::new();
    resp.take(cap as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("reading the reply failed: {}", e.kind())))?;
    if bytes.len() > cap {
        return Err(err(format!("the reply is over {} KiB", cap / 1024)));
    }
    Ok(bytes)
}

/// The message answering `id` in a JSON reply (one message or a batch).
fn pick(v: Value, id: u64) -> Option<Value> {
    let is_it = |m: &Value| m.get("id").and_then(Value::as_u64) == Some(id);
    match v {
        Value::Array(items) => items.into_iter().find(is_it),
        m if is_it(&m) => Some(m),
        _ => None,
    }
}

/// Reads server-sent events until the message answering `id`, within `cap` bytes.
fn read_sse(resp: impl Read, id: u64, cap: usize) -> Result<Value, McpError> {
    let mut reader = BufReader::new(resp.take(cap as u64 + 1));
    let mut data = String::new();
    let mut total = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        let n = reader
            .read_line(&mut line)
            .map_err(|e| err(format!("reading the event stream failed: {}", e.kind())))?;
        total += n;
        if total > cap {
            return Err(err(format!("the reply is over {} KiB", cap / 1024)));
        }
        let text = line.trim_end_matches(['\r', '\n']);
        if n == 0 || text.is_empty() {
            if !data.is_empty() {
                if let Some(m) = serde_json::from_str::<Value>(&data)
                    .ok()
                    .and_then(|v| pick(v, id))
                {
                    return Ok(m);
                }
                data.clear();
            }
            if n == 0 {
                return Err(err("the event stream ended without a reply"));
            }
            continue;
        }
        if let Some(d) = text.strip_prefix("data:") {
            if !data.is_empty() {
                data.push('\n');
            }
            data.push_str(d.strip_prefix(' ').unwrap_or(d));
        }
    }
}

/// Runs the exchange against `url` (checked again: loopback `http:` only) and returns the
/// `tools/call` result (`{content, isError?, structuredContent?}`).
pub fn fetch_editor_state(url: &str, limits: Limits) -> Result<Value, McpError> {
    let endpoint = check_url(url).map_err(|e| err(e.to_string()))?;
    let mut s = Session {
        endpoint: &endpoint,
        deadline: Instant::now() + limits.timeout,
        limits,
        session_id: None,
        protocol: None,
    };
    let init = s.call(
        1,
        "initialize",
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "session-lock", "version": env!("CARGO_PKG_VERSION")},
        }),
    );
    let result = init.and_then(|init| {
        if let Some(v) = init.get("protocolVersion").and_then(Value::as_str) {
            let ok = !v.is_empty() && v.len() <= 32 && v.bytes().all(|b| b.is_ascii_graphic());
            s.protocol = ok.then(|| v.to_string());
        }
        s.notify("notifications/initialized")?;
        s.call(2, "tools/call", json!({"name": TOOL, "arguments": {}}))
    });
    s.delete();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_finds_the_reply_among_other_events() {
        let stream = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                      : comment\n\
                      data: {\"jsonrpc\":\"2.0\",\n\
                      data: \"id\":2,\"result\":{\"content\":[]}}\n\n\
                      data: never read\n";
        let m = read_sse(stream.as_bytes(), 2, MAX_REPLY).unwrap();
        assert_eq!(m["result"]["content"], json!([]));
        assert!(read_sse(stream.as_bytes(), 7, MAX_REPLY).is_err());
        let big = format!("data: {}\n\n", "x".repeat(300 * 1024));
        let e = read_sse(big.as_bytes(), 1, MAX_REPLY).unwrap_err();
        assert!(e.0.contains("over 256 KiB"), "{e}");
    }

    #[test]
    fn json_replies_may_be_batches_and_are_capped() {
        let v = json!([{"jsonrpc":"2.0","id":1,"result":{}}, {"jsonrpc":"2.0","id":2,"result":{"a":1}}]);
        assert_eq!(pick(v, 2).unwrap()["result"]["a"], 1);
        assert!(pick(json!({"id": 3}), 2).is_none());
        assert!(read_capped(&[0u8; 10][..], 10).is_ok());
        assert!(read_capped(&[0u8; 11][..], 10).is_err());
    }

    #[test]
    fn only_loopback_http_is_contacted() {
        for url in [
            "https://127.0.0.1:1/",
            "http://example.com/",
            "http://10.1.1.1:80/",
        ] {
            let e = fetch_editor_state(url, Limits::default()).unwrap_err();
            assert!(e.0.contains("refused"), "{url}: {e}");
        }
    }
}
