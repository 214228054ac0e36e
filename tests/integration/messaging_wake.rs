//! Cold wake and create through run-agent, with a stand-in for the client (a Python script that
//! behaves like a headless run: registers itself with a messaging socket while it runs, writes
//! its prompt to the transcript, prints stream-json). The real client is exercised in
//! `messaging_e2e`.

use crate::support::lifecycle::eventually;
use crate::support::messaging::{Bed, Spec, ops, read_jsonl};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

const FAKE_CLIENT: &str = r#"#!/usr/bin/env python3
import json, os, socket, sys, threading, time, uuid
args = sys.argv[1:]
def opt(name):
    return args[args.index(name) + 1] if name in args else None
prompt = args[args.index("--") + 1] if "--" in args else sys.stdin.read()
resume, mode = opt("--resume"), opt("--permission-mode")
home = os.environ["HOME"]
with open(os.environ["FAKE_CLIENT_LOG"], "a") as f:
    f.write(json.dumps({"resume": resume, "mode": mode, "prompt": prompt, "cwd": os.getcwd()}) + "\n")
projects = os.path.join(home, ".claude", "projects")
cwd = os.getcwd()
slug = "".join(c if c.isalnum() else "-" for c in cwd)
sid = resume or str(uuid.uuid4())
path = None
if resume:
    for d in os.listdir(projects):
        p = os.path.join(projects, d, resume + ".jsonl")
        if os.path.exists(p):
            path = p
if path is None:
    os.makedirs(os.path.join(projects, slug), exist_ok=True)
    path = os.path.join(projects, slug, sid + ".jsonl")
fail = os.environ.get("FAKE_CLIENT_FAIL") == "1"
def add(obj):
    with open(path, "a") as f:
        f.write(json.dumps(obj) + "\n")
pid = os.getpid()
start = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]
sock = os.path.join(os.environ["FAKE_CLIENT_SOCKS"], "%d.sock" % pid)
reg = os.path.join(home, ".claude", "sessions", "%d.json" % pid)
srv = socket.socket(socket.AF_UNIX)
srv.bind(sock)
srv.listen(8)
def serve():
    while True:
        c, _ = srv.accept()
        data = b""
        while True:
            chunk = c.recv(65536)
            if not chunk:
                break
            data += chunk
        for line in data.decode().splitlines():
            if line.strip():
                content = json.loads(line)["message"]["content"]
                add({"type": "queue-operation", "operation": "enqueue", "content": content})
                add({"type": "attachment", "attachment": {"type": "queued_command", "prompt": content}})
                add({"type": "assistant", "message": {"model": "<synthetic>" if fail else "claude-opus-5-5", "content": []}})
threading.Thread(target=serve, daemon=True).start()
with open(reg, "w") as f:
    json.dump({"pid": pid, "sessionId": sid, "cwd": cwd, "procStart": start, "startedAt": int(time.time() * 1000),
               "status": "busy", "kind": "interactive", "messagingSocketPath": sock}, f)
print(json.dumps({"type": "system", "subtype": "init", "session_id": sid}), flush=True)
add({"type": "user", "cwd": cwd, "permissionMode": mode, "message": {"role": "user", "content": prompt}})
# A failing model: the client writes its own error text as the answer.
add({"type": "assistant", "message": {"model": "<synthetic>" if fail else "claude-opus-5-5", "content": []}})
time.sleep(float(os.environ.get("FAKE_CLIENT_SLEEP", "1.5")))
os.remove(reg)
print(json.dumps({"type": "result", "is_error": fail, "result": "API Error: 500" if fail else "ok", "session_id": sid}), flush=True)
sys.exit(1 if fail else 0)
"#;

struct Client {
    bin: PathBuf,
    log: PathBuf,
    socks: PathBuf,
}

fn client(bed: &Bed) -> Client {
    let bin = bed.dir.path().join("fake-claude");
    std::fs::write(&bin, FAKE_CLIENT).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let socks = bed.dir.path().join("socks");
    std::fs::create_dir_all(&socks).unwrap();
    Client {
        bin,
        log: bed.dir.path().join("client.log"),
        socks,
    }
}

fn runs(c: &Client) -> Vec<Value> {
    read_jsonl(&c.log)
}

fn cmd(bed: &Bed, c: &Client, as_: Option<&crate::support::messaging::Fake>) -> Command {
    let mut cmd = bed.cmd(as_);
    cmd.env("SESSION_LOCK_CLAUDE_BIN", &c.bin)
        .env("FAKE_CLIENT_LOG", &c.log)
        .env("FAKE_CLIENT_SOCKS", &c.socks);
    cmd
}

fn run(
    bed: &Bed,
    c: &Client,
    as_: Option<&crate::support::messaging::Fake>,
    args: &[&str],
) -> (i32, Value) {
    let out = cmd(bed, c, as_).arg("--json").args(args).output().unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v)
}

fn python_ok() -> bool {
    let ok = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: python3 not found; the stand-in client is a Python script");
    }
    ok
}

/// The user turns of a transcript that hold `id` (each is one time its model was given it).
fn prompts_with(transcript: &Path, id: &str) -> usize {
    read_jsonl(transcript)
        .iter()
        .filter(|l| l["type"] == "user" && l.to_string().contains(id))
        .count()
}

/// Polls `status` of the terminal's message `id` until `f` holds (or 20 s).
fn status_until(bed: &Bed, c: &Client, id: &str, f: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let ok = eventually(Duration::from_secs(20), || {
        last = run(bed, c, None, &["status", id]).1;
        f(&last)
    });
    assert!(ok, "status never got there: {last}");
    last
}

#[test]
fn a_cold_session_is_resumed_once_with_the_message() {
    if !python_ok() {
        return;
    }
    let mut bed = Bed::new();
    let c = client(&bed);
    let cwd = bed.repo.path().to_path_buf();
    let (id, transcript) = bed.cold("sleeper", &cwd);
    let (code, v) = run(
        &bed,
        &c,
        None,
        &["send", "--wait=30", "--to", "sleeper", "wake up"],
    );
    assert_eq!((code, v["state"].as_str()), (0, Some("delivered")), "{v}");
    let mid = v["message_id"].as_str().unwrap();
    let r = runs(&c);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["resume"], id.as_str());
    assert_eq!(r[0]["mode"], "default");
    assert_eq!(Path::new(r[0]["cwd"].as_str().unwrap()), cwd.as_path());
    let prompt = r[0]["prompt"].as_str().unwrap();
    assert!(
        prompt.starts_with("<cross-session-message from=\"terminal\""),
        "{prompt}"
    );
    assert!(prompt.contains(&format!(
        "Session message {mid} from terminal (terminal):\nwake up"
    )));
    assert_eq!(prompts_with(&transcript, mid), 1);
    // Two senders at once, once the woken run is gone: one resume; the second rides it (its
    // socket) or the same prompt.
    let sessions = bed.home.join(".claude/sessions");
    assert!(
        eventually(Duration::from_secs(20), || std::fs::read_dir(&sessions)
            .unwrap()
            .flatten()
            .all(|e| !e.file_name().to_string_lossy().ends_with(".json"))),
        "the woken run never ended"
    );
    let a = bed.live(Spec::named("alpha"));
    let mut first = cmd(&bed, &c, None);
    first.env("FAKE_CLIENT_SLEEP", "3").args([
        "--json",
        "send",
        "--wait=30",
        "--to",
        "sleeper",
        "from the terminal",
    ]);
    let mut second = cmd(&bed, &c, Some(&a));
    second.env("FAKE_CLIENT_SLEEP", "3").args([
        "--json",
        "send",
        "--wait=30",
        "--to",
        "sleeper",
        "from alpha",
    ]);
    let h1 = first.stdout(Stdio::piped()).spawn().unwrap();
    let h2 = second.stdout(Stdio::piped()).spawn().unwrap();
    let o1: Value = serde_json::from_slice(&h1.wait_with_output().unwrap().stdout).unwrap();
    let o2: Value = serde_json::from_slice(&h2.wait_with_output().unwrap().stdout).unwrap();
    // Either answer form: a send delivered at once, or the status --wait reached.
    for o in [&o1, &o2] {
        assert!(
            o["state"] == "delivered" || o["status"] == "delivered",
            "{o}"
        );
    }
    assert_eq!(
        runs(&c).len(),
        2,
        "one more resume for both: {:?}",
        runs(&c)
    );
    let text = std::fs::read_to_string(&transcript).unwrap();
    for o in [&o1, &o2] {
        let id = o["message_id"].as_str().unwrap();
        assert!(text.contains(id), "{o}");
        assert!(prompts_with(&transcript, id) <= 1, "given once: {o}");
    }
}

#[test]
fn a_running_session_is_never_resumed() {
    if !python_ok() {
        return;
    }
    let mut bed = Bed::new();
    bed.config(json!({"confirmMilliseconds": 200}));
    let c = client(&bed);
    let _quiet = bed.live(Spec::named("no-socket").no_socket());
    let _busy = bed.live(Spec::named("busy").not_taking());
    let (_, v) = run(&bed, &c, None, &["send", "--to", "no-socket", "hi"]);
    assert_eq!(v["status"], "queued", "{v}");
    assert!(v["detail"].as_str().unwrap().contains("hook"), "{v}");
    let (_, v) = run(&bed, &c, None, &["send", "--to", "busy", "hi"]);
    assert_eq!(v["status"], "queued", "{v}");
    assert!(runs(&c).is_empty(), "no resume of a live session");
}

#[test]
fn a_target_that_cannot_be_woken_fails_closed() {
    if !python_ok() {
        return;
    }
    let mut bed = Bed::new();
    let c = client(&bed);
    let gone = bed.repo.path().join("was-here");
    std::fs::create_dir_all(&gone).unwrap();
    bed.cold("homeless", &gone);
    std::fs::remove_dir_all(&gone).unwrap();
    let (code, v) = run(&bed, &c, None, &["send", "--to", "homeless", "anyone?"]);
    assert_eq!((code, v["status"].as_str()), (0, Some("waking")), "{v}");
    let id = v["message_id"].as_str().unwrap();
    let s = status_until(&bed, &c, id, |s| {
        s["detail"].as_str().unwrap_or("").contains("not woken")
    });
    assert_eq!(s["state"], "queued", "{s}");
    assert!(runs(&c).is_empty(), "nothing was resumed");
}

#[test]
fn issue13_a_wake_against_a_failing_model_is_not_delivered() {
    if !python_ok() {
        return;
    }
    let mut bed = Bed::new();
    let c = client(&bed);
    let cwd = bed.repo.path().to_path_buf();
    let (_, t) = bed.cold("bypass-sleeper", &cwd);
    crate::support::messaging::append(
        &t,
        &json!({"type":"user","cwd": cwd, "permissionMode":"bypassPermissions"}),
    );
    // The model fails: the woken turn never reached it. Kept, with the failure recorded.
    let out = cmd(&bed, &c, None)
        .env("FAKE_CLIENT_FAIL", "1")
        .args(["--json", "send", "--to", "bypass-sleeper", "one"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "waking", "{v}");
    let one = v["message_id"].as_str().unwrap().to_string();
    let recorded = eventually(Duration::from_secs(20), || {
        bed.outbox("terminal").iter().any(|l| {
            l["messageId"] == one.as_str()
                && l["op"] == "unsent"
                && l["reason"].as_str().unwrap_or("").contains("API Error")
        })
    });
    assert!(
        recorded,
        "the failure is recorded: {:?}",
        bed.outbox("terminal")
    );
    let s = status_until(&bed, &c, &one, |s| s["state"] == "queued");
    assert!(s["detail"].as_str().unwrap().contains("API Error"), "{s}");
    assert!(
        !ops(&bed.outbox("terminal"), &one).contains(&"delivered".to_string()),
        "a failed wake is never delivered"
    );
    // Waking off: kept for the target's next run.
    bed.config(json!({"allowColdWake": false}));
    let (_, v) = run(&bed, &c, None, &["send", "--to", "bypass-sleeper", "two"]);
    assert_eq!(v["status"], "queued", "{v}");
    assert!(v["detail"].as_str().unwrap().contains("allowColdWake"));
    assert_eq!(runs(&c).len(), 1, "no wake while it is off");
    bed.config(json!({}));
    // A prompting sender never wakes a bypass session in bypass mode; all waiting ones ride.
    let (code, v) = run(
        &bed,
        &c,
        None,
        &["send", "--wait=30", "--to", "bypass-sleeper", "three"],
    );
    assert_eq!((code, v["state"].as_str()), (0, Some("delivered")), "{v}");
    let r = runs(&c);
    let last = r.last().unwrap();
    assert_eq!(last["mode"], "default");
    let prompt = last["prompt"].as_str().unwrap();
    for w in ["one", "two", "three"] {
        assert!(
            prompt.contains(&format!("):\n{w}\n")),
            "{w} rides the wake: {prompt}"
        );
    }
    // `--wait` answers for its own message; the wake records the two that rode along in the
    // same turn right after, so wait for those records rather than race them.
    let delivered = || -> std::collections::BTreeSet<String> {
        bed.outbox("terminal")
            .iter()
            .filter(|l| l["op"] == "delivered")
            .map(|l| l["messageId"].to_string())
            .collect()
    };
    let all_three =
        crate::support::lifecycle::eventually(std::time::Duration::from_secs(30), || {
            delivered().len() == 3
        });
    assert!(all_three, "{:?}", bed.outbox("terminal"));
}

#[test]
fn create_starts_a_session_with_the_first_message() {
    if !python_ok() {
        return;
    }
    let bed = Bed::new();
    let c = client(&bed);
    let dir = bed.repo.path().join("sub");
    std::fs::create_dir_all(&dir).unwrap();
    let (code, v) = run(
        &bed,
        &c,
        None,
        &[
            "create",
            "--cwd",
            dir.to_str().unwrap(),
            "start on the parser",
        ],
    );
    assert_eq!((code, v["status"].as_str()), (0, Some("delivered")), "{v}");
    let sid = v["session_id"].as_str().unwrap();
    let r = runs(&c);
    assert_eq!(r[0]["resume"], Value::Null);
    assert!(
        r[0]["prompt"]
            .as_str()
            .unwrap()
            .contains("):\nstart on the parser")
    );
    let t = bed.transcript_path(&dir, sid);
    assert!(
        std::fs::read_to_string(t)
            .unwrap()
            .contains(v["message_id"].as_str().unwrap())
    );
    // Outside the workspace: refused; relative: refused.
    let other = crate::support::repo::GitRepo::new();
    let (code, v) = run(
        &bed,
        &c,
        None,
        &["create", "--cwd", other.path().to_str().unwrap(), "x"],
    );
    assert_eq!((code, v["status"].as_str()), (8, Some("refused")), "{v}");
    let (code, _) = run(&bed, &c, None, &["create", "--cwd", "rel/dir", "x"]);
    assert_eq!(code, 8);
    // The first turn fails: the session id is still reported.
    let out = cmd(&bed, &c, None)
        .env("FAKE_CLIENT_FAIL", "1")
        .args([
            "--json",
            "create",
            "--cwd",
            dir.to_str().unwrap(),
            "second try",
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(v["status"], "failed", "{v}");
    assert!(
        v["session_id"].as_str().is_some_and(|s| s.len() == 36),
        "{v}"
    );
}

#[test]
fn issue13_kill_9_at_every_step_of_a_detached_wake_loses_and_duplicates_nothing() {
    if !python_ok() {
        return;
    }
    let mut bed = Bed::new();
    let c = client(&bed);
    let cwd = bed.repo.path().to_path_buf();
    let (_, transcript) = bed.cold("sleeper", &cwd);
    let mut ids = Vec::new();
    // Killed before the wake started, before the resume ran, and after it ran unrecorded.
    for (step, text) in [
        ("before-wake", "one"),
        ("wake-before-run", "two"),
        ("wake-after-run", "three"),
    ] {
        let out = cmd(&bed, &c, None)
            .env("SESSION_LOCK_MESSAGING_CRASH_AT", step)
            .args(["--json", "send", "--to", "sleeper", text])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let id = match v["message_id"].as_str() {
            Some(id) => id.to_string(),
            // The send itself died: its message is in the outbox all the same.
            None => bed
                .outbox("terminal")
                .iter()
                .filter(|l| l["op"] == "queued" && l["text"] == text)
                .map(|l| l["messageId"].as_str().unwrap().to_string())
                .next()
                .expect("recorded before the crash"),
        };
        // Each crashed wake leaves its lock free again.
        let lock = bed.state.join("messaging/wake");
        assert!(eventually(Duration::from_secs(20), || {
            std::fs::read_dir(&lock).map_or(true, |d| {
                d.flatten().all(|e| {
                    session_lock::filelock::FileLock::try_exclusive(&e.path())
                        .is_ok_and(|l| l.is_some())
                })
            })
        }));
        ids.push(id);
    }
    // The next commands (no crash) move every one on: each delivered, given to the model once.
    for id in &ids {
        let s = status_until(&bed, &c, id, |s| s["state"] == "delivered");
        assert_eq!(s["state"], "delivered", "{s}");
        assert_eq!(prompts_with(&transcript, id), 1, "{id} given once");
    }
}

/// True while a `send-message wake --target <target>` process runs.
fn wake_running(target: &str) -> bool {
    let needle = format!("wake\0--target\0{target}\0");
    std::fs::read_dir("/proc").is_ok_and(|d| {
        d.flatten().any(|p| {
            std::fs::read(p.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
    })
}

#[test]
fn issue13_kill_9_of_a_wake_after_it_recorded_taken_leaves_that_accepted_and_the_rest_queued() {
    let mut bed = Bed::new();
    let b = bed.live(Spec::named("sleeper"));
    // The target is cold while the messages come: its registry entry is put aside.
    let entry = bed.home.join(format!(".claude/sessions/{}.json", b.pid));
    let aside = bed.dir.path().join("entry-aside.json");
    std::fs::rename(&entry, &aside).unwrap();
    bed.config(json!({"allowColdWake": false}));
    let send = |text: &str, crash: Option<&str>| {
        let mut c = bed.cmd(None);
        if let Some(step) = crash {
            c.env("SESSION_LOCK_MESSAGING_CRASH_AT", step);
        }
        let out = c
            .args(["--json", "send", "--to", &b.id, text])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["message_id"].as_str().unwrap().to_string()
    };
    let mut ids = vec![send("one", None), send("two", None)];
    // The wake for the third waits on the target's wake lock (held here), and finds the
    // target running when it looks again: it hands every waiting message to the socket, and
    // dies right after recording that the client took the first.
    bed.config(json!({}));
    let wake_dir = bed.state.join("messaging/wake");
    std::fs::create_dir_all(&wake_dir).unwrap();
    let lock =
        session_lock::filelock::FileLock::exclusive(&wake_dir.join(format!("{}.lock", b.id)))
            .unwrap();
    ids.push(send("three", Some("after-taken")));
    assert!(
        eventually(Duration::from_secs(10), || wake_running(&b.id)),
        "the detached wake waits"
    );
    std::fs::rename(&aside, &entry).unwrap();
    assert!(
        eventually(Duration::from_secs(20), || !wake_running(&b.id)),
        "the wake ended"
    );
    drop(lock);
    let outbox = bed.outbox("terminal");
    assert_eq!(ops(&outbox, &ids[0]), ["queued", "sent", "taken"]);
    for id in &ids[1..] {
        assert_eq!(ops(&outbox, id), ["queued"], "nothing after the crash");
    }
    assert_eq!(b.wait_received(1).len(), 1);
    let (_, s, _) = bed.run(None, &["status", &ids[0]]);
    assert_eq!(s["state"], "accepted", "{s}");
    // That look (no crash) handed the other two to the running client, once each.
    let outbox = bed.outbox("terminal");
    for id in &ids {
        let sent = ops(&outbox, id).iter().filter(|o| *o == "sent").count();
        assert_eq!(sent, 1, "{id} written once: {:?}", ops(&outbox, id));
    }
    let texts: Vec<String> = b
        .wait_received(3)
        .iter()
        .map(|l| l["message"]["content"].as_str().unwrap().to_string())
        .collect();
    for word in ["one", "two", "three"] {
        let n = texts
            .iter()
            .filter(|t| t.contains(&format!("):\n{word}\n")))
            .count();
        assert_eq!(n, 1, "{word} written {n} times: {texts:?}");
    }
    for id in &ids {
        b.answer(id);
        let (_, s, _) = bed.run(None, &["status", id]);
        assert_eq!(s["state"], "delivered", "{s}");
    }
}

#[test]
fn issue_29_a_send_killed_between_its_two_ledger_lines_is_finished_by_the_next_look() {
    if !python_ok() {
        return;
    }
    let mut bed = Bed::new();
    let c = client(&bed);
    let cwd = bed.repo.path().to_path_buf();
    let (cold_id, transcript) = bed.cold("sleeper", &cwd);
    let hooked = bed.live(Spec::named("hooked").no_socket());
    // A send that dies after the sender's outbox has the message, before the target's inbound
    // ledger does (the crash switch aborts it right there).
    let killed = |to: &str, target: &str, text: &str| -> String {
        let out = cmd(&bed, &c, None)
            .env("SESSION_LOCK_MESSAGING_CRASH_AT", "after-queued")
            .args(["--json", "send", "--to", to, text])
            .output()
            .unwrap();
        assert!(
            out.status.code() != Some(0) && out.stdout.is_empty(),
            "{out:?}"
        );
        let id = bed
            .outbox("terminal")
            .iter()
            .find(|l| l["op"] == "queued" && l["text"] == text)
            .and_then(|l| l["messageId"].as_str().map(str::to_string))
            .expect("in the outbox before the crash");
        assert!(
            ops(&bed.inbound(target), &id).is_empty(),
            "not in the inbound ledger yet"
        );
        id
    };
    let to_cold = killed("sleeper", &cold_id, "for the sleeper");
    let to_hooked = killed("hooked", &hooked.id, "for the hooked one");
    // The sender's next look (its status) writes the missing line: the cold target is woken
    // with its message, once.
    let s = status_until(&bed, &c, &to_cold, |s| s["state"] == "delivered");
    assert_eq!(s["state"], "delivered", "{s}");
    assert_eq!(prompts_with(&transcript, &to_cold), 1, "given once");
    assert_eq!(ops(&bed.inbound(&cold_id), &to_cold)[0], "queued");
    // The target without a socket gets its message at its next tool call, from its hook.
    let (_, s) = run(&bed, &c, None, &["status", &to_hooked]);
    assert_eq!(s["state"], "queued", "{s}");
    let out = bed.guard(&hooked, "PostToolUse", "default");
    let context = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("");
    assert!(
        context.contains(&format!("Session message {to_hooked} from"))
            && context.contains("for the hooked one"),
        "{out}"
    );
    let (_, s) = run(&bed, &c, None, &["status", &to_hooked]);
    assert_eq!(s["state"], "accepted", "{s}");
}

/// `cmd` run under a 022 umask (what most shells give): what it creates must not depend on it.
fn under_umask_022(c: Command) -> Command {
    let mut sh = Command::new("sh");
    sh.arg("-c").arg("umask 022; exec \"$@\"").arg("sh");
    sh.arg(c.get_program()).args(c.get_args());
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    if let Some(d) = c.get_current_dir() {
        sh.current_dir(d);
    }
    sh.stdin(Stdio::null());
    sh
}

#[test]
fn issue_29_everything_under_the_state_home_is_private_whatever_the_umask() {
    if !python_ok() {
        return;
    }
    let mut bed = Bed::new();
    bed.config(json!({"inboundSessions": {"reviewer": "hold"}}));
    let c = client(&bed);
    let cwd = bed.repo.path().to_path_buf();
    let (_, _) = bed.cold("sleeper", &cwd);
    let _sock = bed.live(Spec::named("sock"));
    let hooked = bed.live(Spec::named("hooked").no_socket());
    let reviewer = bed.live(Spec::named("reviewer").no_socket());
    // A fresh state home: every folder below is made by the commands.
    std::fs::remove_dir_all(&bed.state).unwrap();
    let mut ids = Vec::new();
    for to in ["sock", "hooked", "reviewer", "sleeper"] {
        let mut send = cmd(&bed, &c, None);
        send.args(["--json", "send", "--to", to, "private, please"]);
        let out = under_umask_022(send).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        ids.push(v["message_id"].as_str().unwrap().to_string());
    }
    // The hook route, a held notice, and the wake's whole run.
    bed.guard(&hooked, "PostToolUse", "default");
    bed.guard(&reviewer, "PostToolUse", "default");
    status_until(&bed, &c, &ids[3], |s| s["state"] == "delivered");
    let mut open = Vec::new();
    let mut seen = 0;
    for e in walkdir::WalkDir::new(&bed.state) {
        let e = e.unwrap();
        let meta = std::fs::symlink_metadata(e.path()).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        seen += 1;
        if mode != want {
            open.push(format!("{} {mode:04o}", e.path().display()));
        }
    }
    assert!(seen > 10, "the commands wrote their state: {seen} entries");
    assert!(open.is_empty(), "not private: {open:?}");
}

#[test]
fn issue_29_a_message_its_client_held_is_never_handed_over_later_by_another_route() {
    if !python_ok() {
        return;
    }
    let mut bed = Bed::new();
    let c = client(&bed);
    // A target in bypass mode: its client holds what a prompting sender (the terminal) sends.
    let mut b = bed.live(
        Spec::named("bypasser")
            .mode("bypassPermissions")
            .not_taking(),
    );
    let (code, v) = run(
        &bed,
        &c,
        None,
        &["send", "--to", "bypasser", "do it for me"],
    );
    assert_eq!((code, v["status"].as_str()), (0, Some("held")), "{v}");
    let id = v["message_id"].as_str().unwrap().to_string();
    assert_eq!(b.wait_received(1).len(), 1, "written once, and held there");
    // The target stops; later looks see it cold. A wake would run it in default mode, where a
    // prompting sender's message passes: that is the client's hold undone behind its back.
    b.stop();
    for _ in 0..3 {
        let (_, s) = run(&bed, &c, None, &["status", &id]);
        assert_eq!(s["state"], "held", "{s}");
    }
    assert!(runs(&c).is_empty(), "no wake ran for it: {:?}", runs(&c));
    assert_eq!(
        ops(&bed.outbox("terminal"), &id),
        ["queued", "sent"],
        "nothing but the one held write"
    );
    // A held message ends as a review hold does: it expires, its text deleted.
    let (_, s, _) = bed.run_later(Duration::from_secs(301), None, &["status", &id]);
    assert_eq!(s["state"], "expired", "{s}");
    assert!(runs(&c).is_empty());
    let text = std::fs::read_to_string(bed.outbox_path("terminal")).unwrap();
    assert!(!text.contains("do it for me"), "its text is deleted");
}
