//! `send-message send|list|status` through the real binary, against fake live sessions.

use crate::support::lifecycle::eventually;
use crate::support::messaging::{Bed, Spec, lose_last_line, ops};
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn live_target_gets_the_framed_line_accepted_then_delivered() {
    let mut bed = Bed::new();
    let a = bed.live(Spec::named("alpha").mode("bypassPermissions"));
    let b = bed.live(Spec::named("worker-b"));
    let (code, v, err) = bed.run(
        Some(&a),
        &[
            "send",
            "--to",
            "WORKER-B",
            "--summary",
            "hi",
            "schema is done",
        ],
    );
    assert_eq!(code, 0, "{v} {err}");
    assert_eq!(v["status"], "accepted", "{v}");
    assert_eq!(v["target"]["id"], b.id.as_str());
    let id = v["message_id"].as_str().unwrap().to_string();
    let got = b.wait_received(1);
    assert_eq!(got.len(), 1);
    let content = got[0]["message"]["content"].as_str().unwrap();
    let want = format!(
        "<cross-session-message from=\"uds:{}\" from-name=\"alpha\" from-mode=\"bypass\">\nSession message {id} from alpha ({}):\nschema is done\n</cross-session-message>",
        a.socket.as_ref().unwrap().display(),
        a.id
    );
    assert_eq!(content, want);
    assert_eq!(got[0]["msg_id"], id.as_str());
    assert_eq!(
        ops(&bed.outbox(&a.id), &id),
        vec!["queued", "sent", "taken"]
    );
    assert_eq!(
        ops(&bed.inbound(&b.id), &id),
        vec!["queued", "sent", "taken"]
    );
    // The sender's mode is the one its record says: a default-mode sender is "prompting".
    let (_, v, _) = bed.run(Some(&b), &["send", "--to", "alpha", "back at you"]);
    assert_eq!(v["status"], "accepted", "{v}");
    let line = &a.wait_received(1)[0];
    assert!(
        line["message"]["content"]
            .as_str()
            .unwrap()
            .contains("from-mode=\"prompting\""),
        "{line}"
    );
    // status answers from the ledgers
    let (code, s, _) = bed.run(Some(&a), &["status", &id]);
    assert_eq!((code, s["state"].as_str()), (0, Some("accepted")), "{s}");
    // Once its model answered a request holding it, it is delivered.
    b.answer(&id);
    let (code, s, _) = bed.run(Some(&a), &["status", &id]);
    assert_eq!((code, s["state"].as_str()), (0, Some("delivered")), "{s}");
    assert_eq!(
        ops(&bed.outbox(&a.id), &id),
        vec!["queued", "sent", "taken", "delivered"]
    );
    let (code, _, _) = bed.run(Some(&a), &["status", "no-such-id"]);
    assert_eq!(code, 6);
}

/// Issue 13 item 6: `send` writes its `taken` lines without syncing them (they restate the synced
/// `sent` line and the client's own transcript line), so a machine crash may lose them and
/// nothing before them. Cut from both ledgers as such a crash would, every later look says
/// what it says with them: accepted while the taker runs, queued once it stopped, the message
/// written once.
#[test]
fn issue13_a_taken_line_lost_to_a_machine_crash_is_read_again_from_the_transcript() {
    for lost in [false, true] {
        let mut bed = Bed::new();
        bed.config(json!({"allowColdWake": false}));
        let mut b = bed.live(Spec::named("target"));
        let (_, v, _) = bed.run(None, &["send", "--to", "target", "hello"]);
        assert_eq!(v["status"], "accepted", "{v}");
        let id = v["message_id"].as_str().unwrap().to_string();
        let ledgers = [bed.outbox_path("terminal"), bed.inbound_path(&b.id)];
        if lost {
            for p in &ledgers {
                lose_last_line(p, "taken", &id);
            }
        }
        let (_, s, _) = bed.run(None, &["status", &id]);
        assert_eq!(s["state"], "accepted", "lost {lost}: {s}");
        // The crash stops the taker too, before its model saw the message.
        b.stop();
        let (_, s, _) = bed.run(None, &["status", &id]);
        assert_eq!(s["state"], "queued", "lost {lost}: {s}");
        for p in &ledgers {
            let lines = crate::support::messaging::read_jsonl(p);
            assert_eq!(
                ops(&lines, &id),
                ["queued", "sent", "taken", "returned"],
                "lost {lost}: {}",
                p.display()
            );
        }
        assert_eq!(b.received().len(), 1, "lost {lost}: written once");
    }
}

#[test]
fn without_transcript_confirmation_it_stays_queued_until_seen() {
    let mut bed = Bed::new();
    bed.config(json!({"confirmMilliseconds": 300, "resendAfterSeconds": 3600}));
    let b = bed.live(Spec::named("slow").not_taking());
    let (code, v, _) = bed.run(None, &["send", "--to", "slow", "are you there"]);
    assert_eq!(code, 0);
    assert_eq!(v["status"], "queued", "{v}");
    let id = v["message_id"].as_str().unwrap().to_string();
    assert_eq!(b.wait_received(1).len(), 1);
    let (_, s, _) = bed.run(None, &["status", &id]);
    assert_eq!(s["state"], "queued", "{s}");
    assert!(!ops(&bed.outbox("terminal"), &id).contains(&"delivered".to_string()));
    // Another send does not write it again to the same client (it may still take it): every
    // write is recorded (`sent`) before it is made, so the ledger after the send has ended
    // says every write there will ever be from it...
    let (_, v2, _) = bed.run(None, &["send", "--to", "slow", "second"]);
    assert_eq!(v2["status"], "queued");
    let id2 = v2["message_id"].as_str().unwrap();
    let outbox = bed.outbox("terminal");
    assert_eq!(ops(&outbox, &id), ["queued", "sent"], "no resend");
    assert_eq!(ops(&outbox, id2), ["queued", "sent"]);
    assert_eq!(
        b.wait_received(2).len(),
        2,
        "one line per message, no resend"
    );
    // ... and once the client shows it, it is delivered.
    b.confirm(&id);
    let (_, s, _) = bed.run(None, &["status", &id]);
    assert_eq!(s["state"], "accepted", "{s}");
    b.answer(&id);
    let (_, s, _) = bed.run(None, &["status", &id]);
    assert_eq!(s["state"], "delivered", "{s}");
}

#[test]
fn unauthorized_and_missing_targets_answer_alike() {
    let mut bed = Bed::new();
    let elsewhere = crate::support::repo::GitRepo::new();
    let far = bed.live(Spec::named("far-away").cwd(elsewhere.path()));
    let near = bed.live(Spec::named("near"));
    let missing = "0badc0de-0000-4000-8000-000000000000";
    let (c1, v1, _) = bed.run(Some(&near), &["send", "--to", &far.id, "psst"]);
    let (c2, v2, _) = bed.run(Some(&near), &["send", "--to", missing, "psst"]);
    assert_eq!((c1, c2), (6, 6));
    assert_eq!(v1["status"], "not_found");
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&v1), keys(&v2), "no target, no candidates in either");
    assert_eq!(
        v1["detail"].as_str().unwrap().replace(&far.id, "X"),
        v2["detail"].as_str().unwrap().replace(missing, "X")
    );
    let (_, v3, _) = bed.run(Some(&near), &["send", "--to", "far-away", "psst"]);
    let (_, v4, _) = bed.run(Some(&near), &["send", "--to", "nobody-here", "psst"]);
    assert_eq!(
        v3["detail"].as_str().unwrap().replace("far-away", "X"),
        v4["detail"].as_str().unwrap().replace("nobody-here", "X")
    );
    assert!(far.received().is_empty());
    // The list counts it, never shows it.
    let (_, l, _) = bed.run(Some(&near), &["list", "--scope", "machine"]);
    assert_eq!(l["omitted"], 1, "{l}");
    assert!(!l.to_string().contains(&far.id));
    // Config opens it.
    bed.config(json!({"allowlist": [elsewhere.path()]}));
    let (_, v5, _) = bed.run(Some(&near), &["send", "--to", "far-away", "psst"]);
    assert_eq!(v5["status"], "accepted", "{v5}");
}

#[test]
fn addressing_self_ambiguous_quoted_and_bad_credentials() {
    let mut bed = Bed::new();
    let a = bed.live(Spec::named("api worker"));
    let d1 = bed.live(Spec::named("dup"));
    let d2 = bed.live(Spec::named("Dup"));
    let (code, v, _) = bed.run(Some(&a), &["send", "--to", "@\"API Worker\"", "me?"]);
    assert_eq!((code, v["status"].as_str()), (8, Some("self")), "{v}");
    let (code, v, _) = bed.run(Some(&a), &["send", "--to", "dup", "which?"]);
    assert_eq!((code, v["status"].as_str()), (2, Some("ambiguous")), "{v}");
    let ids: Vec<&str> = v["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&d1.id.as_str()) && ids.contains(&d2.id.as_str()));
    let (code, v, _) = bed.run(None, &["send", "--to", "\"api worker\"", "from a terminal"]);
    assert_eq!((code, v["status"].as_str()), (0, Some("accepted")), "{v}");
    // A forged token is refused before anything is sent.
    let mut bad = bed.cmd(None);
    bad.env("CLAUDE_CODE_SESSION_ID", &a.id)
        .env("CLAUDE_CODE_MESSAGING_TOKEN", "f".repeat(32))
        .args(["send", "--to", "dup", "forged"]);
    let out = bad.output().unwrap();
    assert_eq!(out.status.code(), Some(8));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not match"));
    assert!(d1.received().is_empty() && d2.received().is_empty());
}

#[test]
fn limits_duplicates_rate_and_size() {
    let mut bed = Bed::new();
    bed.config(json!({"ratePerMinute": 3, "maxMessageBytes": 100, "confirmMilliseconds": 1000}));
    let b = bed.live(Spec::named("b"));
    let (_, v1, _) = bed.run(None, &["send", "--to", "b", "same"]);
    let (code, v2, _) = bed.run(None, &["send", "--to", "b", "same"]);
    assert_eq!(code, 0);
    assert_eq!(v2["status"], "duplicate");
    assert_eq!(v2["message_id"], v1["message_id"]);
    let (_, v3, _) = bed.run(None, &["send", "--to", "b", "--no-dedupe", "same"]);
    assert_eq!(v3["status"], "accepted");
    // Too large / summary too long: refused before any quota is spent.
    let (code, big, _) = bed.run(None, &["send", "--to", "b", &"x".repeat(101)]);
    assert_eq!((code, big["status"].as_str()), (8, Some("refused")));
    assert!(
        big["detail"].as_str().unwrap().contains("100 bytes"),
        "{big}"
    );
    let (_, s, _) = bed.run(
        None,
        &["send", "--to", "b", "--summary", &"s".repeat(201), "x"],
    );
    assert_eq!(s["status"], "refused");
    let (_, v4, _) = bed.run(None, &["send", "--to", "b", "third"]);
    assert_eq!(v4["status"], "accepted", "{v4}");
    let (code, v5, _) = bed.run(None, &["send", "--to", "b", "fourth"]);
    assert_eq!((code, v5["status"].as_str()), (8, Some("refused")), "{v5}");
    assert!(v5["detail"].as_str().unwrap().contains("ratePerMinute"));
    assert_eq!(b.wait_received(3).len(), 3);
}

#[test]
fn pending_cap_refuses_a_busy_target() {
    let mut bed = Bed::new();
    bed.config(
        json!({"maxPendingPerTarget": 2, "confirmMilliseconds": 50, "resendAfterSeconds": 3600}),
    );
    let _b = bed.live(Spec::named("b").not_taking());
    for m in ["one", "two"] {
        let (_, v, _) = bed.run(None, &["send", "--to", "b", m]);
        assert_eq!(v["status"], "queued");
    }
    let (code, v, _) = bed.run(None, &["send", "--to", "b", "three"]);
    assert_eq!((code, v["status"].as_str()), (8, Some("refused")), "{v}");
    assert!(v["detail"].as_str().unwrap().contains("busy"));
}

#[test]
fn message_from_stdin_and_list_text() {
    let mut bed = Bed::new();
    let b = bed.live(Spec::named("reader"));
    let (_, cold) = {
        let cwd = bed.repo.path().to_path_buf();
        bed.cold("sleeper", &cwd)
    };
    let mut c = bed.cmd(None);
    c.args(["--json", "send", "--to", "reader", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all("line one\nline two\n".as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "accepted", "{v}");
    assert!(
        b.received()[0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("line one\nline two")
    );
    let (_, l, _) = bed.run(None, &["list"]);
    let names: Vec<&str> = l["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        vec!["reader", "sleeper"],
        "running first, then cold: {l}"
    );
    assert_eq!(l["agents"][1]["status"], "offline");
    assert!(cold.exists());
    let out = bed.cmd(None).arg("list").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("reader") && text.contains("offline"),
        "{text}"
    );
}

/// Stands in for a session's client: once `$GO` exists it runs `$RUN` in a shell of its own, the
/// way the client runs a Bash call (that shell starts with the client's child token), then idles.
const CLIENT_SH: &str =
    r#"while [ ! -e "$GO" ]; do sleep 0.02; done; sh -c "$RUN; true"; sleep 60"#;

/// Runs `run` (a shell command writing its answer to `$OUT`) inside a fake session's process
/// tree; returns what it wrote.
fn inside_a_session(bed: &mut Bed, name: &str, run: &str) -> String {
    let n = bed.dir.path().join(format!("{name}.out"));
    let go = bed.dir.path().join(format!("{name}.go"));
    let _s = bed.live_as(Spec::named(name), |_, _| {
        let mut c = Command::new("sh");
        c.args(["-c", CLIENT_SH])
            .env("GO", &go)
            .env("RUN", run)
            .env("OUT", &n)
            .env("BIN", crate::support::messaging::BIN);
        c
    });
    std::fs::write(&go, "").unwrap();
    assert!(
        eventually(Duration::from_secs(20), || n.exists()),
        "the command inside the session never finished"
    );
    std::fs::read_to_string(&n).unwrap()
}

#[test]
fn issue13_a_wrong_token_is_unauthenticated_even_inside_the_session() {
    let mut bed = Bed::new();
    let target = bed.live(Spec::named("target"));
    let send = |token: &str| {
        format!(
            r#"CLAUDE_CODE_MESSAGING_TOKEN={token} "$BIN" --json send --to target hi > "$OUT.tmp" 2>&1; echo "exit $?" >> "$OUT.tmp"; mv "$OUT.tmp" "$OUT""#
        )
    };
    let wrong = inside_a_session(&mut bed, "wrong", &send("0123456789abcdef0123456789abcdef"));
    assert!(wrong.contains("exit 8"), "{wrong}");
    assert!(wrong.contains("does not match"), "{wrong}");
    assert!(
        target.received().is_empty(),
        "nothing sent with a wrong token"
    );
    // The token the client gave the session's shell is accepted.
    let right = inside_a_session(&mut bed, "right", &send("\"$CLAUDE_CODE_MESSAGING_TOKEN\""));
    assert!(right.contains("exit 0"), "{right}");
    assert_eq!(target.wait_received(1).len(), 1);
}

#[test]
fn issue13_small_input_rules() {
    let mut bed = Bed::new();
    let a = bed.live(Spec::named("reader"));
    // Over the limit on stdin, in characters of three bytes: refused for its size.
    let mut c = bed.cmd(None);
    c.args(["--json", "send", "--to", "reader", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let big = "€".repeat(100_000);
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(big.as_bytes());
    });
    let (code, v, _) = crate::support::messaging::parse(child.wait_with_output().unwrap());
    let _ = writer.join();
    assert_eq!((code, v["status"].as_str()), (8, Some("refused")), "{v}");
    let detail = v["detail"].as_str().unwrap();
    assert!(detail.contains("over 65536 bytes"), "{detail}");
    // --repo that does not exist, --to that is empty: usage errors, one JSON object each.
    for args in [
        &["--repo", "/nonexistent/repo", "send", "--to", "reader", "x"][..],
        &["send", "--to", "", "x"],
        &["send", "--to", "@", "x"],
    ] {
        let (code, v, err) = bed.run(None, args);
        assert_eq!(code, 2, "{args:?}: {v} {err}");
        assert_eq!(v["status"], "error", "{args:?}: {v}");
        assert!(!v["error"].as_str().unwrap().is_empty());
    }
    let (_, v, _) = bed.run(None, &["--repo", "/nonexistent/repo", "list"]);
    assert!(
        v["error"].as_str().unwrap().contains("/nonexistent/repo"),
        "{v}"
    );
    // Any failure under --json is one JSON object: here an unknown message id.
    let (code, v, _) = bed.run(None, &["status", "no-such-id"]);
    assert_eq!((code, v["status"].as_str()), (6, Some("error")), "{v}");
    assert!(a.received().is_empty());
}
