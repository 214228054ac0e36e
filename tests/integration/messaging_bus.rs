//! `send-message serve`: the bus, driven by a client in another language (Python).

use crate::support::lifecycle::eventually;
use crate::support::messaging::{Bed, Spec};
use serde_json::Value;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A Python client: sends argv[2] (raw) on the socket argv[1], prints the answer.
const CLIENT: &str = r#"
import os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(float(sys.argv[3]) if len(sys.argv) > 3 else 20)
s.connect(sys.argv[1])
if os.environ.get("MARK"):
    open(os.environ["MARK"], "w").close()
data = sys.argv[2].encode()
if data:
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
out = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    out += chunk
print(out.decode())
"#;

fn python() -> Option<&'static str> {
    Command::new("python3")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| "python3")
}

fn ask(sock: &Path, raw: &str) -> Value {
    let out = Command::new("python3")
        .args(["-c", CLIENT])
        .arg(sock)
        .arg(raw)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.trim().lines().count() == 1,
        "one line back: {text:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// How many sockets process `pid` holds: its listening socket, and two for each connection
/// it took (the handler's, and the one kept to close it at the stop).
fn sockets_held(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |fds| {
        fds.flatten()
            .filter(|fd| {
                std::fs::read_link(fd.path())
                    .is_ok_and(|to| to.to_string_lossy().starts_with("socket:"))
            })
            .count()
    })
}

struct Server {
    child: Child,
    sock: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(bed: &Bed, extra: &[&str]) -> Server {
    let sock = bed.dir.path().join("bus").join("bus.sock");
    let child = bed
        .cmd(None)
        .arg("serve")
        .arg("--socket")
        .arg(&sock)
        .args(extra)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(&sock).is_err() {
        assert!(Instant::now() < until, "the bus did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
    Server { child, sock }
}

macro_rules! need_python {
    () => {
        if python().is_none() {
            eprintln!("skipped: python3 not found; the bus is tested with a Python client");
            return;
        }
    };
}

#[test]
fn python_lists_and_sends_with_its_token() {
    need_python!();
    let mut bed = Bed::new();
    let a = bed.live(Spec::named("script-owner"));
    let b = bed.live(Spec::named("api-worker"));
    let srv = serve(&bed, &[]);
    let dir_mode = std::fs::metadata(srv.sock.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    assert_eq!(
        std::fs::metadata(&srv.sock).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let list = ask(
        &srv.sock,
        &format!(r#"{{"token":"{}","op":"list","limit":20}}"#, a.token),
    );
    assert_eq!(list["ok"], true, "{list}");
    assert_eq!(list["result"]["agents"][0]["name"], "api-worker");
    assert_eq!(list["result"]["me"]["id"], a.id.as_str());
    let sent = ask(
        &srv.sock,
        &format!(
            r#"{{"token":"{}","op":"send","to":"api-worker","message":"migration finished ✓","summary":"done"}}"#,
            a.token
        ),
    );
    assert_eq!(sent["ok"], true, "{sent}");
    assert_eq!(sent["result"]["status"], "accepted", "{sent}");
    let got = b.wait_received(1);
    let content = got[0]["message"]["content"].as_str().unwrap();
    assert!(
        content.contains(&format!(
            "from script-owner ({}):\nmigration finished ✓",
            a.id
        )),
        "{content}"
    );
    // Same checks as the command line: limits, and no identity from the request.
    let dup = ask(
        &srv.sock,
        &format!(
            r#"{{"token":"{}","op":"send","to":"api-worker","message":"migration finished ✓","summary":"done"}}"#,
            a.token
        ),
    );
    assert_eq!(dup["result"]["status"], "duplicate");
    let forged = ask(
        &srv.sock,
        &format!(
            r#"{{"token":"{}","op":"send","to":"api-worker","message":"x","sender":"{}"}}"#,
            a.token, b.id
        ),
    );
    assert_eq!(forged["result"]["status"], "accepted", "{forged}");
    let line = &b.wait_received(2)[1];
    assert!(
        line["message"]["content"].as_str().unwrap().contains(&a.id),
        "sender stays the token's"
    );
}

#[test]
fn bad_token_bad_request_oversized_and_idle() {
    need_python!();
    let mut bed = Bed::new();
    let a = bed.live(Spec::named("a"));
    let srv = serve(&bed, &["--idle-ms", "700"]);
    let v = ask(&srv.sock, r#"{"token":"0000","op":"list"}"#);
    assert_eq!(
        (v["ok"].as_bool(), v["error"]["code"].as_str()),
        (Some(false), Some("unauthenticated")),
        "{v}"
    );
    let v = ask(&srv.sock, r#"{"op":"list"}"#);
    assert_eq!(v["error"]["code"], "unauthenticated");
    let v = ask(
        &srv.sock,
        &format!(r#"{{"token":"{}","op":"list","limit":500}}"#, a.token),
    );
    assert_eq!(v["error"]["code"], "bad_request", "{v}");
    let v = ask(
        &srv.sock,
        &format!(
            r#"{{"token":"{}","op":"send","to":5,"message":"x"}}"#,
            a.token
        ),
    );
    assert_eq!(v["error"]["code"], "bad_request", "{v}");
    let v = ask(&srv.sock, "not json\n");
    assert_eq!(v["error"]["code"], "bad_request");
    // The error names the forms a request may take.
    let msg = v["error"]["message"].as_str().unwrap();
    assert!(msg.contains(r#"{"type":"auth","token":…}"#), "{msg}");
    // The client's own socket form: an auth line, then the request.
    let v = ask(
        &srv.sock,
        &format!(
            "{{\"type\":\"auth\",\"token\":\"{}\"}}\n{{\"op\":\"list\"}}\n",
            a.token
        ),
    );
    assert_eq!(v["ok"], true, "{v}");
    let v = ask(
        &srv.sock,
        "{\"type\":\"auth\",\"token\":\"0000\"}\n{\"op\":\"list\"}\n",
    );
    assert_eq!(v["error"]["code"], "unauthenticated", "{v}");
    // Over 1 MiB (counted in UTF-8 bytes: 'é' is two).
    let big = format!(
        r#"{{"token":"{}","op":"send","to":"a","message":"{}"}}"#,
        a.token,
        "é".repeat(530_000)
    );
    let path = bed.dir.path().join("big.json");
    std::fs::write(&path, &big).unwrap();
    let out = Command::new("python3")
        .args([
            "-c",
            &CLIENT.replace(
                "data = sys.argv[2].encode()",
                "data = open(sys.argv[2], 'rb').read()",
            ),
        ])
        .arg(&srv.sock)
        .arg(&path)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    assert_eq!(
        v["error"]["code"],
        "too_large",
        "{v} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Connect and say nothing: timeout after the idle limit.
    let started = Instant::now();
    let v = ask(&srv.sock, "");
    assert_eq!(v["error"]["code"], "timeout", "{v}");
    assert!(started.elapsed() >= Duration::from_millis(600));
}

#[test]
fn one_owner_per_endpoint_and_a_clean_stop() {
    need_python!();
    let bed = Bed::new();
    let mut srv = serve(&bed, &[]);
    // A second server finds the first answering and leaves its socket alone.
    let out = bed
        .cmd(None)
        .arg("serve")
        .arg("--socket")
        .arg(&srv.sock)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("already serves"));
    assert!(std::os::unix::net::UnixStream::connect(&srv.sock).is_ok());
    // An idle connection does not hold up the stop. The connections above end first (the
    // server holds its listening socket alone), so a socket it holds after the idle client
    // connected is that client's, taken before the stop.
    let pid = srv.child.id();
    assert!(
        eventually(Duration::from_secs(10), || sockets_held(pid) == 1),
        "the server still holds {} sockets",
        sockets_held(pid)
    );
    let mark = bed.dir.path().join("connected");
    let idle = Command::new("python3")
        .args(["-c", CLIENT])
        .arg(&srv.sock)
        .arg("")
        .arg("20")
        .env("MARK", &mark)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(10);
    while !mark.exists() {
        assert!(Instant::now() < until, "the idle client never connected");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        eventually(Duration::from_secs(10), || sockets_held(pid) > 1),
        "the server never took the idle connection"
    );
    let started = Instant::now();
    let term = Command::new("kill")
        .args(["-TERM", &srv.child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let status = srv.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "SIGTERM ends serve cleanly");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(!srv.sock.exists(), "the socket file is removed");
    let out = idle.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the idle client saw its connection closed"
    );
    // A stale socket (nobody answering) is replaced.
    let l = std::os::unix::net::UnixListener::bind(&srv.sock).unwrap();
    drop(l);
    let srv2 = serve(&bed, &[]);
    assert!(srv2.sock.exists());
}
