//! One MCP Streamable HTTP exchange with the workspace's editor: `initialize` →
//! `notifications/initialized` → `tools/call editor-application-get-state` (empty arguments) →
//! `DELETE` of the session (always, best effort, even when the call failed).
//!
//! Replies may be JSON or `text/event-stream`. Bounded: one deadline for the whole exchange
//! (15 s by default), 256 KiB per reply, no redirects (a 3xx is an error), no proxy from the environment. Errors are
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

type Response = ureq::http::Response<ureq::Body>;

fn header<'r>(resp: &'r Response, name: &str) -> Option<&'r str> {
    resp.headers().get(name).and_then(|v| v.to_str().ok())
}

impl Session<'_> {
    fn time_left(&self) -> Result<Duration, McpError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(err(format!(
                "no answer within {}s",
                self.limits.timeout.as_secs()
            )));
        }
        Ok(left)
    }

    /// A client that stays where it is sent: no proxy from the environment, no redirects, every
    /// status returned as is.
    fn agent(timeout: Duration) -> ureq::Agent {
        ureq::Agent::config_builder()
            .proxy(None)
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .max_response_header_size(64 * 1024)
            .build()
            .new_agent()
    }

    fn post(&self, body: &Value) -> Result<Response, McpError> {
        let mut r = Session::agent(self.time_left()?)
            .post(self.endpoint.url.as_str())
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        if let Some(id) = &self.session_id {
            r = r.header("Mcp-Session-Id", id.as_str());
        }
        if let Some(v) = &self.protocol {
            r = r.header("MCP-Protocol-Version", v.as_str());
        }
        let resp = r.send(body.to_string()).map_err(transport)?;
        match resp.status().as_u16() {
            200..=299 => Ok(resp),
            n @ 300..=399 => Err(err(format!("redirect refused (http {n})"))),
            n => Err(err(format!("http {n} from {}", self.endpoint.host))),
        }
    }

    /// Sends a request and reads the JSON-RPC reply with `id`.
    fn call(&mut self, id: u64, method: &str, params: Value) -> Result<Value, McpError> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let resp = self.post(&body)?;
        if let Some(sid) = header(&resp, "mcp-session-id") {
            let ok = !sid.is_empty()
                && sid.len() <= 256
                && sid.bytes().all(|b| (0x21..=0x7e).contains(&b));
            if !ok {
                return Err(err("the server sent an unusable session id"));
            }
            self.session_id = Some(sid.to_string());
        }
        let sse = header(&resp, "content-type")
            .is_some_and(|c| c.to_ascii_lowercase().starts_with("text/event-stream"));
        let reader = resp.into_body().into_reader();
        let message = if sse {
            read_sse(reader, id, self.limits.max_reply)?
        } else {
            let bytes = read_capped(reader, self.limits.max_reply)?;
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
        read_capped(resp.into_body().into_reader(), self.limits.max_reply).map(|_| ())
    }

    fn delete(&self) {
        let Some(id) = &self.session_id else {
            return;
        };
        // Its own short timeout: the session is cleaned even when the deadline has passed.
        let mut r = Session::agent(Duration::from_secs(2))
            .delete(self.endpoint.url.as_str())
            .header("Mcp-Session-Id", id.as_str());
        if let Some(v) = &self.protocol {
            r = r.header("MCP-Protocol-Version", v.as_str());
        }
        let _ = r.call();
    }
}

fn transport(e: ureq::Error) -> McpError {
    match e {
        ureq::Error::Timeout(_) => err("the request timed out"),
        ureq::Error::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            err("the request timed out")
        }
        ureq::Error::Io(io) => err(format!("connection failed: {}", io.kind())),
        ureq::Error::ConnectionFailed => err("connection failed"),
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

    /// A scripted loopback server: `reply(method, jsonrpc method)` gives status, headers, body
    /// (`None`: never answer). Records `(http method, session header, jsonrpc method)`.
    struct Server {
        url: String,
        log: std::sync::Arc<std::sync::Mutex<Vec<Seen>>>,
    }

    /// (http method, session header, JSON-RPC method)
    type Seen = (String, Option<String>, String);

    type Reply = Option<(u16, Vec<(&'static str, String)>, Vec<u8>)>;

    fn server(reply: fn(&str, &str) -> Reply) -> Server {
        use std::io::Write;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log2 = std::sync::Arc::clone(&log);
        std::thread::spawn(move || {
            for stream in listener.incoming().take(8) {
                let Ok(mut stream) = stream else { return };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut head = String::new();
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    head.push_str(&line);
                }
                let find = |name: &str| {
                    head.lines()
                        .filter_map(|l| l.split_once(':'))
                        .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
                        .map(|(_, v)| v.trim().to_string())
                };
                let len: usize = find("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let method = head.split(' ').next().unwrap_or("").to_string();
                let rpc = serde_json::from_slice::<Value>(&body)
                    .ok()
                    .and_then(|v| v["method"].as_str().map(str::to_string))
                    .unwrap_or_default();
                log2.lock()
                    .unwrap()
                    .push((method.clone(), find("mcp-session-id"), rpc.clone()));
                let Some((status, headers, body)) = reply(&method, &rpc) else {
                    std::thread::sleep(Duration::from_secs(5));
                    continue;
                };
                let mut out = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                let _ = stream.write_all(out.as_bytes());
                let _ = stream.write_all(&body);
            }
        });
        Server { url, log }
    }

    fn ok_json(id: u64, result: Value) -> Reply {
        let body = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        Some((
            200,
            vec![
                ("content-type", "application/json".into()),
                ("mcp-session-id", "S1".into()),
            ],
            body.into_bytes(),
        ))
    }

    fn methods(s: &Server) -> Vec<Seen> {
        s.log.lock().unwrap().clone()
    }

    #[test]
    fn a_whole_exchange_ends_with_delete_even_when_the_call_fails() {
        let s = server(|method, rpc| match (method, rpc) {
            ("POST", "initialize") => ok_json(1, json!({"protocolVersion": "2025-06-18"})),
            ("POST", "notifications/initialized") => Some((202, vec![], vec![])),
            ("POST", "tools/call") => Some((500, vec![], b"editor crashed".to_vec())),
            ("DELETE", _) => Some((200, vec![], vec![])),
            _ => Some((400, vec![], vec![])),
        });
        let e = fetch_editor_state(&s.url, Limits::default()).unwrap_err();
        assert!(e.0.starts_with("http 500 from 127.0.0.1"), "{e}");
        let log = methods(&s);
        let seen: Vec<(&str, Option<&str>, &str)> = log
            .iter()
            .map(|(m, s, r)| (m.as_str(), s.as_deref(), r.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("POST", None, "initialize"),
                ("POST", Some("S1"), "notifications/initialized"),
                ("POST", Some("S1"), "tools/call"),
                ("DELETE", Some("S1"), ""),
            ]
        );
    }

    #[test]
    fn redirects_are_refused_not_followed() {
        let s = server(|_, _| {
            Some((
                307,
                vec![("location", "http://127.0.0.1:1/elsewhere".into())],
                vec![],
            ))
        });
        let e = fetch_editor_state(&s.url, Limits::default()).unwrap_err();
        assert_eq!(e.0, "redirect refused (http 307)");
        assert_eq!(
            methods(&s).len(),
            1,
            "nothing followed, no session to delete"
        );
    }

    #[test]
    fn oversized_replies_and_silence_fail_within_the_limits() {
        let s = server(|_, _| {
            Some((
                200,
                vec![("content-type", "application/json".into())],
                vec![b' '; 300 * 1024],
            ))
        });
        let e = fetch_editor_state(&s.url, Limits::default()).unwrap_err();
        assert!(e.0.contains("over 256 KiB"), "{e}");
        let s = server(|_, _| None);
        let t0 = Instant::now();
        let limits = Limits {
            timeout: Duration::from_secs(1),
            max_reply: MAX_REPLY,
        };
        let e = fetch_editor_state(&s.url, limits).unwrap_err();
        assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
        assert!(e.0.contains("timed out") || e.0.contains("within"), "{e}");
    }

    #[test]
    fn errors_carry_no_request_headers() {
        let s = server(|_, rpc| match rpc {
            "initialize" => Some((
                200,
                vec![("content-type", "application/json".into())],
                br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"denied"}}"#.to_vec(),
            )),
            _ => Some((400, vec![], vec![])),
        });
        let e = fetch_editor_state(&s.url, Limits::default()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "editor state unavailable: initialize: server error: denied"
        );
        for header in [
            "Accept",
            "Content-Type",
            "Mcp-Session-Id",
            "application/json",
        ] {
            assert!(!e.to_string().contains(header));
        }
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
