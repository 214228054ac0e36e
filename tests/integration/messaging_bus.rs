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
    // A field naming a sender is no field of the request: refused, nothing sent.
    assert_eq!(forged["error"]["code"], "bad_request", "{forged}");
    assert_eq!(
        b.received().len(),
        1,
        "only the first message reached the target"
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

/// The bus client example of docs/send-message.md, as written there.
fn documented_client() -> String {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/send-message.md"))
        .unwrap();
    let at = doc.find("Example (Python)").expect("the example");
    let body = &doc[at..];
    let start = body.find("```python\n").unwrap() + "```python\n".len();
    let end = start + body[start..].find("```").unwrap();
    body[start..end].to_string()
}

const NOBODY: u32 = 65534;

/// A folder and a listening socket in it, both another user's (`nobody`), the folder open to
/// all: what a second local user can make where a guessable path points. Whatever connects is
/// answered as the bus would, and its bytes kept.
fn planted(dir: &Path) -> std::sync::Arc<std::sync::Mutex<Vec<u8>>> {
    use std::io::{BufRead, Write};
    std::fs::create_dir_all(dir).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    std::os::unix::fs::chown(dir, Some(NOBODY), Some(NOBODY)).unwrap();
    let sock = dir.join("bus.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    std::os::unix::fs::chown(&sock, Some(NOBODY), Some(NOBODY)).unwrap();
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = got.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut line = Vec::new();
            let mut r = std::io::BufReader::new(&conn);
            let _ = r.read_until(b'\n', &mut line);
            keep.lock().unwrap().extend_from_slice(&line);
            let _ = (&conn).write_all(b"{\"ok\":true,\"result\":\"the other user\"}\n");
        }
    });
    got
}

#[test]
fn issue_29_the_bus_never_serves_in_a_folder_another_user_made_nor_does_its_documented_client() {
    need_python!();
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: making a folder owned by another user needs root");
        return;
    }
    let mut bed = Bed::new();
    let owner = bed.live(Spec::named("script-owner"));
    let _b = bed.live(Spec::named("api-worker"));
    let client = documented_client();
    let env = |c: &mut Command, tmp: &Path, runtime: Option<&Path>| {
        bed.env(c);
        c.env("TMPDIR", tmp).env_remove("XDG_RUNTIME_DIR");
        if let Some(r) = runtime {
            c.env("XDG_RUNTIME_DIR", r);
        }
    };
    let ask_documented = |tmp: &Path, runtime: Option<&Path>| {
        let mut c = Command::new("python3");
        env(&mut c, tmp, runtime);
        c.args(["-c", &client])
            .env("CLAUDE_CODE_MESSAGING_TOKEN", &owner.token)
            .output()
            .unwrap()
    };
    // 1. Another user took the shared temp folder's name first, and listens there.
    let tmp = bed.dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let uid = rustix::process::geteuid().as_raw();
    let shared = planted(&tmp.join(format!("session-lock-messaging-{uid}")));
    let mut serve = Command::new(env!("CARGO_BIN_EXE_send-message"));
    env(&mut serve, &tmp, None);
    let mut srv = Server {
        child: serve.arg("serve").stderr(Stdio::piped()).spawn().unwrap(),
        sock: bed.state.join("run/bus.sock"),
    };
    let until = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(&srv.sock).is_err() {
        if let Some(code) = srv.child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(srv.child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("serve ended ({code}) instead of serving in the user's own folder: {err}");
        }
        assert!(Instant::now() < until, "the bus did not come up");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mode = std::fs::metadata(srv.sock.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    let out = ask_documented(&tmp, None);
    let answer: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["result"]["status"], "accepted", "{answer}");
    assert!(
        shared.lock().unwrap().is_empty(),
        "nothing went to the other user"
    );
    drop(srv);
    // 2. The runtime folder's session-lock/ is another user's: serve refuses it (and leaves it
    // as it is), and the documented client does not hand its token over there either.
    let runtime = bed.dir.path().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let theirs = runtime.join("session-lock");
    let got = planted(&theirs);
    let mut serve = Command::new(env!("CARGO_BIN_EXE_send-message"));
    env(&mut serve, &tmp, Some(&runtime));
    let out = serve.arg("serve").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&theirs.display().to_string())
            && err.contains("not private")
            && err.contains(&format!("uid {NOBODY}")),
        "{err}"
    );
    let meta = std::fs::metadata(&theirs).unwrap();
    assert_eq!(
        (
            std::os::unix::fs::MetadataExt::uid(&meta),
            meta.permissions().mode() & 0o777
        ),
        (NOBODY, 0o777),
        "never taken over"
    );
    let out = ask_documented(&tmp, Some(&runtime));
    assert!(!out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not private"),
        "{out:?}"
    );
    assert!(got.lock().unwrap().is_empty(), "the token stayed home");
}

#[test]
fn issue_29_a_request_field_the_bus_does_not_know_is_refused_and_nothing_is_sent() {
    need_python!();
    let mut bed = Bed::new();
    let a = bed.live(Spec::named("script-owner"));
    let b = bed.live(Spec::named("api-worker"));
    let srv = serve(&bed, &[]);
    for (raw, field) in [
        (
            format!(
                r#"{{"token":"{}","op":"send","to":"api-worker","message":"m","from":"{}"}}"#,
                a.token, b.id
            ),
            "from",
        ),
        (
            format!(r#"{{"token":"{}","op":"list","limt":5}}"#, a.token),
            "limt",
        ),
    ] {
        let v = ask(&srv.sock, &raw);
        assert_eq!(v["error"]["code"], "bad_request", "{raw}: {v}");
        let msg = v["error"]["message"].as_str().unwrap();
        assert!(msg.contains(&format!("unknown field `{field}`")), "{msg}");
    }
    assert!(b.received().is_empty(), "nothing was sent");
    assert!(!bed.outbox_path(&a.id).exists(), "nothing was recorded");
}
