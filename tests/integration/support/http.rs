//! The smallest HTTP/1.1 server side the fake model needs, on std sockets.
//!
//! Handles what the Claude Code CLI (and a plain test client) sends: several
//! requests on one connection (keep-alive), bodies framed by `Content-Length`
//! or `Transfer-Encoding: chunked`, and `Expect: 100-continue`. Replies are
//! either complete (`Content-Length`) or streamed with chunked encoding, one
//! flushed chunk per write so a slow stream really trickles.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;

/// Header block larger than this is refused (the CLI sends a few KiB).
const MAX_HEADER_BYTES: usize = 256 * 1024;
/// Request body larger than this is refused (a long conversation is a few MiB).
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// One parsed request.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The request target as sent, query included (`/v1/messages?beta=true`).
    pub target: String,
    /// Header names lowercased, in the order received.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The client asked to close the connection after this exchange.
    pub close: bool,
}

impl Request {
    /// The path without its query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// The first header with this (case-insensitive) name.
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

/// Reads requests off one connection, answers `100 Continue` when asked.
pub struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Connection {
    pub fn new(stream: TcpStream) -> io::Result<Connection> {
        stream.set_nodelay(true)?;
        let writer = stream.try_clone()?;
        Ok(Connection {
            reader: BufReader::new(stream),
            writer,
        })
    }

    /// The next request, or `None` when the client closed the connection
    /// cleanly between requests.
    pub fn next_request(&mut self) -> io::Result<Option<Request>> {
        let Some(request_line) = self.read_line()? else {
            return Ok(None);
        };
        let mut parts = request_line.split_whitespace();
        let (Some(method), Some(target), version) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid(format!("bad request line {request_line:?}")));
        };
        let (method, target) = (method.to_string(), target.to_string());
        let http10 = version == Some("HTTP/1.0");

        let headers = self.read_headers()?;

        let mut request = Request {
            method,
            target,
            headers,
            body: Vec::new(),
            close: http10,
        };
        if let Some(conn) = request.header("connection") {
            let conn = conn.to_ascii_lowercase();
            request.close = conn.contains("close") || (http10 && !conn.contains("keep-alive"));
        }
        if request
            .header("expect")
            .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
        {
            self.writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
            self.writer.flush()?;
        }

        let chunked = request
            .header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
        request.body = if chunked {
            self.read_chunked_body()?
        } else if let Some(len) = request.header("content-length") {
            let len: usize = len
                .parse()
                .map_err(|_| invalid(format!("bad content-length {len:?}")))?;
            if len > MAX_BODY_BYTES {
                return Err(invalid(format!("body of {len} bytes is too large")));
            }
            let mut body = vec![0; len];
            self.reader.read_exact(&mut body)?;
            body
        } else {
            Vec::new()
        };
        Ok(Some(request))
    }

    /// The writing half, for replies.
    pub fn writer(&mut self) -> &mut TcpStream {
        &mut self.writer
    }

    /// Header lines up to the blank line, names lowercased.
    fn read_headers(&mut self) -> io::Result<Vec<(String, String)>> {
        let mut headers = Vec::new();
        let mut header_bytes = 0;
        loop {
            let line = self
                .read_line()?
                .ok_or_else(|| invalid("connection closed inside the header block".into()))?;
            if line.is_empty() {
                return Ok(headers);
            }
            header_bytes += line.len();
            if header_bytes > MAX_HEADER_BYTES {
                return Err(invalid("header block too large".into()));
            }
            let (name, value) = line
                .split_once(':')
                .ok_or_else(|| invalid(format!("bad header line {line:?}")))?;
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
        }
    }

    fn read_chunked_body(&mut self) -> io::Result<Vec<u8>> {
        let mut body = Vec::new();
        loop {
            let size_line = self
                .read_line()?
                .ok_or_else(|| invalid("connection closed inside a chunked body".into()))?;
            let size_hex = size_line.split(';').next().unwrap_or("").trim();
            let size = usize::from_str_radix(size_hex, 16)
                .map_err(|_| invalid(format!("bad chunk size {size_line:?}")))?;
            if size == 0 {
                // Trailers, then the empty line that ends the body.
                while let Some(line) = self.read_line()? {
                    if line.is_empty() {
                        break;
                    }
                }
                return Ok(body);
            }
            if body.len() + size > MAX_BODY_BYTES {
                return Err(invalid("chunked body too large".into()));
            }
            let start = body.len();
            body.resize(start + size, 0);
            self.reader.read_exact(&mut body[start..])?;
            let mut crlf = [0; 2];
            self.reader.read_exact(&mut crlf)?;
            if &crlf != b"\r\n" {
                return Err(invalid("chunk not followed by CRLF".into()));
            }
        }
    }

    /// One line without its line ending; `None` at a clean end of stream.
    fn read_line(&mut self) -> io::Result<Option<String>> {
        let mut raw = Vec::new();
        let n = (&mut self.reader)
            .take(MAX_HEADER_BYTES as u64)
            .read_until(b'\n', &mut raw)?;
        if n == 0 {
            return Ok(None);
        }
        if raw.last() != Some(&b'\n') {
            return Err(invalid("line too long or cut off".into()));
        }
        while matches!(raw.last(), Some(b'\n' | b'\r')) {
            raw.pop();
        }
        String::from_utf8(raw)
            .map(Some)
            .map_err(|_| invalid("header line is not utf-8".into()))
    }
}

/// Writes a complete reply with a `Content-Length`. `body` is not sent for HEAD
/// requests (`head_only`), but its length still is.
pub fn write_response(
    out: &mut impl Write,
    status: u16,
    headers: &[(&str, &str)],
    body: &[u8],
    head_only: bool,
) -> io::Result<()> {
    let mut head = reply_head(status, headers);
    head.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    out.write_all(head.as_bytes())?;
    if !head_only {
        out.write_all(body)?;
    }
    out.flush()
}

/// A reply whose body is sent in chunks as it is produced.
pub struct ChunkedResponse<'a, W: Write> {
    out: &'a mut W,
}

impl<'a, W: Write> ChunkedResponse<'a, W> {
    pub fn start(
        out: &'a mut W,
        status: u16,
        headers: &[(&str, &str)],
    ) -> io::Result<ChunkedResponse<'a, W>> {
        let mut head = reply_head(status, headers);
        head.push_str("transfer-encoding: chunked\r\n\r\n");
        out.write_all(head.as_bytes())?;
        out.flush()?;
        Ok(ChunkedResponse { out })
    }

    /// Sends one chunk and flushes it.
    pub fn send(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(()); // an empty chunk would end the body
        }
        self.out
            .write_all(format!("{:x}\r\n", data.len()).as_bytes())?;
        self.out.write_all(data)?;
        self.out.write_all(b"\r\n")?;
        self.out.flush()
    }

    /// Ends the body; the connection can carry the next request.
    pub fn finish(self) -> io::Result<()> {
        self.out.write_all(b"0\r\n\r\n")?;
        self.out.flush()
    }
}

/// The value of the first header called `name` (case-insensitive).
pub fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// The status line and headers of a reply, without the blank line.
fn reply_head(status: u16, headers: &[(&str, &str)]) -> String {
    let mut head = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message)
}

/// A reply as a [`Client`] read it (a chunked body already joined).
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Header names lowercased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// How a [`Client`] frames a request body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    ContentLength,
    /// `Transfer-Encoding: chunked`, the body cut into this many chunks.
    Chunked(usize),
}

/// A keep-alive HTTP/1.1 client on one connection, for testing servers.
pub struct Client {
    conn: Connection,
}

impl Client {
    pub fn connect(addr: std::net::SocketAddr) -> io::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(std::time::Duration::from_secs(30)))?;
        Ok(Client {
            conn: Connection::new(stream)?,
        })
    }

    /// Sends one request and reads the whole reply.
    pub fn send(
        &mut self,
        method: &str,
        target: &str,
        body: &[u8],
        framing: Framing,
    ) -> io::Result<Response> {
        let mut head = format!("{method} {target} HTTP/1.1\r\nhost: test\r\n");
        match framing {
            Framing::ContentLength => head.push_str(&format!("content-length: {}\r\n", body.len())),
            Framing::Chunked(_) => head.push_str("transfer-encoding: chunked\r\n"),
        }
        head.push_str("content-type: application/json\r\n\r\n");
        let out = self.conn.writer();
        out.write_all(head.as_bytes())?;
        match framing {
            Framing::ContentLength => out.write_all(body)?,
            Framing::Chunked(pieces) => {
                let size = body.len().div_ceil(pieces.max(1)).max(1);
                for piece in body.chunks(size) {
                    out.write_all(format!("{:x}\r\n", piece.len()).as_bytes())?;
                    out.write_all(piece)?;
                    out.write_all(b"\r\n")?;
                }
                out.write_all(b"0\r\n\r\n")?;
            }
        }
        out.flush()?;
        self.read_response(method == "HEAD")
    }

    fn read_response(&mut self, head_only: bool) -> io::Result<Response> {
        let status_line = self
            .conn
            .read_line()?
            .ok_or_else(|| invalid("connection closed before a reply".into()))?;
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| invalid(format!("bad status line {status_line:?}")))?;
        let headers = self.conn.read_headers()?;
        let mut response = Response {
            status,
            headers,
            body: Vec::new(),
        };
        if head_only {
            return Ok(response);
        }
        if response
            .header("transfer-encoding")
            .is_some_and(|v| v.contains("chunked"))
        {
            response.body = self.conn.read_chunked_body()?;
        } else if let Some(len) = response.header("content-length") {
            let len: usize = len
                .parse()
                .map_err(|_| invalid(format!("bad content-length {len:?}")))?;
            let mut body = vec![0; len];
            self.conn.reader.read_exact(&mut body)?;
            response.body = body;
        }
        Ok(response)
    }
}

/// `(event name, data)` pairs of an SSE body (the name empty when the event has
/// none); panics on data that is not JSON.
pub fn sse_events(body: &str) -> Vec<(String, serde_json::Value)> {
    body.split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut name = String::new();
            let mut data = serde_json::Value::Null;
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = n.to_string();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d)
                        .unwrap_or_else(|e| panic!("bad SSE data ({e}): {d}"));
                }
            }
            (name, data)
        })
        .collect()
}
