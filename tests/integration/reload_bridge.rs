//! A fake of the app's bridge server on 127.0.0.1: records every request and answers with a
//! status chosen per path (200 unless told otherwise). Used by the unix-only pipeline tests.
#![cfg(unix)]

use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request the bridge received.
#[derive(Clone, Debug)]
pub struct Call {
    pub method: String,
    pub path: String,
    pub content_type: Option<String>,
    pub body: Value,
}

pub struct FakeBridge {
    pub url: String,
    addr: std::net::SocketAddr,
    calls: Arc<Mutex<Vec<Call>>>,
    statuses: Arc<Mutex<HashMap<String, u16>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FakeBridge {
    pub fn start() -> FakeBridge {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake bridge");
        let addr = listener.local_addr().expect("local addr");
        let calls = Arc::new(Mutex::new(Vec::new()));
        let statuses = Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (calls, statuses, stop) = (calls.clone(), statuses.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve(stream, &calls, &statuses);
                    }
                }
            })
        };
        FakeBridge {
            url: format!("http://{addr}"),
            addr,
            calls,
            statuses,
            stop,
            thread: Some(thread),
        }
    }

    /// Answer requests to `path` with `status` from now on.
    pub fn answer(&self, path: &str, status: u16) {
        self.statuses.lock().unwrap().insert(path.into(), status);
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

impl Drop for FakeBridge {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn serve(stream: TcpStream, calls: &Mutex<Vec<Call>>, statuses: &Mutex<HashMap<String, u16>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return; // the wake-up connection
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut length = 0usize;
    let mut content_type = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let value = value.trim();
            match name.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = value.parse().unwrap_or(0),
                "content-type" => content_type = Some(value.to_string()),
                _ => {}
            }
        }
    }
    let mut body = vec![0; length.min(1 << 20)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let status = statuses.lock().unwrap().get(&path).copied().unwrap_or(200);
    calls.lock().unwrap().push(Call {
        method,
        path,
        content_type,
        body,
    });
    let answer = if status == 200 {
        r#"{"ok":true}"#
    } else {
        r#"{"error":"fake failure"}"#
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
        answer.len()
    );
    let _ = stream.flush();
}
