//! The hook route, inbound review, mode holds and crash recovery, through the real binaries.

use crate::support::messaging::{Bed, Spec, ops};
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;

fn context(v: &serde_json::Value) -> String {
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

#[test]
fn a_client_without_socket_gets_it_from_the_hook_at_its_next_tool_call() {
    let mut bed = Bed::new();
    let a = bed.live(Spec::named("alpha"));
    let b = bed.live(Spec::named("no-sock").no_socket());
    let (code, v, _) = bed.run(Some(&a), &["send", "--to", "no-sock", "via the hook"]);
    assert_eq!((code, v["status"].as_str()), (0, Some("queued")), "{v}");
    let id = v["message_id"].as_str().unwrap().to_string();
    let out = bed.guard(&b, "PostToolUse", "default");
    assert_eq!(out["hookSpecificOutput"]["hookEventName"], "PostToolUse");
    let ctx = context(&out);
    assert!(
        ctx.contains(&format!(
            "Session message {id} from alpha ({}):\nvia the hook",
            a.id
        )),
        "{ctx}"
    );
    assert!(ctx.contains("from-mode=\"prompting\""));
    // Handed over once: the next call does not repeat it.
    let again = bed.guard(&b, "PostToolUse", "default");
    assert!(!context(&again).contains(&id), "{again}");
    // Handed over: accepted (the context goes into the client's next request).
    let (_, s, _) = bed.run(Some(&a), &["status", &id]);
    assert_eq!(s["state"], "accepted", "{s}");
    // Once the transcript shows the model answered it, both ledgers say delivered.
    crate::support::messaging::append(&b.transcript, &json!({"type":"attachment","content": ctx}));
    crate::support::messaging::append(
        &b.transcript,
        &json!({"type":"assistant","message":{"model":"claude-opus-5-5"}}),
    );
    bed.guard(&b, "UserPromptSubmit", "default");
    assert_eq!(
        ops(&bed.inbound(&b.id), &id),
        vec!["queued", "sent", "taken", "delivered"]
    );
    let (_, s, _) = bed.run(Some(&a), &["status", &id]);
    assert_eq!(s["state"], "delivered", "{s}");
    // Stop adds nothing (its context does not reach the model).
    assert!(bed.guard(&b, "Stop", "default").is_null());
}

#[test]
fn a_bypass_receiver_is_never_told_it_was_delivered_by_a_prompting_sender() {
    let mut bed = Bed::new();
    bed.config(json!({"confirmMilliseconds": 300}));
    let a = bed.live(Spec::named("prompting-a"));
    // The real client holds it: nothing reaches the transcript.
    let b = bed.live(
        Spec::named("bypass-b")
            .mode("bypassPermissions")
            .not_taking(),
    );
    let (code, v, _) = bed.run(Some(&a), &["send", "--to", "bypass-b", "please run it"]);
    assert_eq!(code, 0);
    assert_eq!(v["status"], "held", "{v}");
    let detail = v["detail"].as_str().unwrap();
    assert!(
        detail.contains("bypassPermissions") && detail.contains("prompting"),
        "{detail}"
    );
    let id = v["message_id"].as_str().unwrap().to_string();
    // The frame declared the truth; no later call writes it again or reports it delivered.
    let got = b.wait_received(1);
    assert!(
        got[0]["message"]["content"]
            .as_str()
            .unwrap()
            .contains("from-mode=\"prompting\"")
    );
    let (_, v2, _) = bed.run(Some(&a), &["send", "--to", "bypass-b", "another"]);
    assert_eq!(v2["status"], "held");
    let (_, s, _) = bed.run(Some(&a), &["status", &id]);
    assert_eq!(s["state"], "held", "{s}");
    assert_eq!(b.wait_received(2).len(), 2);
    // The hook does not talk past the client either.
    let out = bed.guard(&b, "PostToolUse", "bypassPermissions");
    assert!(!context(&out).contains(&id), "{out}");
    assert!(!ops(&bed.outbox(&a.id), &id).contains(&"delivered".to_string()));
}

#[test]
fn the_hook_does_not_hand_a_prompting_senders_message_to_a_bypass_session() {
    let mut bed = Bed::new();
    let a = bed.live(Spec::named("prompting-a"));
    let b = bed.live(
        Spec::named("bypass-no-sock")
            .no_socket()
            .mode("bypassPermissions"),
    );
    let (_, v, _) = bed.run(Some(&a), &["send", "--to", "bypass-no-sock", "sneak in"]);
    assert_eq!(v["status"], "queued", "{v}");
    let id = v["message_id"].as_str().unwrap().to_string();
    // SessionStart payloads carry no mode: the recorded one (the transcript's) decides.
    assert!(!context(&bed.guard(&b, "SessionStart", "")).contains(&id));
    assert!(!context(&bed.guard(&b, "PostToolUse", "bypassPermissions")).contains(&id));
    // Were the session in a prompting mode, it would get it.
    assert!(context(&bed.guard(&b, "PostToolUse", "default")).contains(&id));
}

#[test]
fn hold_then_review_accept_delivers_and_refuse_deletes() {
    let mut bed = Bed::new();
    bed.config(json!({"inbound": "hold"}));
    let a = bed.live(Spec::named("alpha"));
    let b = bed.live(Spec::named("careful"));
    let (code, v, _) = bed.run(
        Some(&a),
        &[
            "send",
            "--to",
            "careful",
            "--summary",
            "a request",
            "secret plan",
        ],
    );
    assert_eq!((code, v["status"].as_str()), (0, Some("held")), "{v}");
    let id = v["message_id"].as_str().unwrap().to_string();
    assert!(b.received().is_empty(), "held messages are not delivered");
    assert!(
        !std::fs::read_to_string(bed.state.join(format!("messaging/outbox/{}.jsonl", a.id)))
            .unwrap()
            .contains("secret plan"),
        "the text lives only in the target's ledger"
    );
    // The target is told at its next tool call, once.
    let out = bed.guard(&b, "PostToolUse", "default");
    assert!(
        context(&out).contains("1 message from other sessions waits for your review"),
        "{out}"
    );
    assert!(!context(&out).contains("secret plan"));
    assert!(bed.guard(&b, "PostToolUse", "default").is_null());
    // Review lists who and the summary, not the text.
    let (code, r, _) = bed.run(Some(&b), &["review"]);
    assert_eq!(code, 0);
    assert_eq!(r["held"][0]["message_id"], id.as_str());
    assert_eq!(r["held"][0]["summary"], "a request");
    assert!(!r.to_string().contains("secret plan"));
    let (code, r, _) = bed.run(Some(&b), &["review", "--accept", &id]);
    assert_eq!(code, 0);
    assert_eq!(r["action"]["status"], "delivered");
    assert!(
        r["action"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("Session message {id} from alpha"))
    );
    assert!(r["held"].as_array().unwrap().is_empty());
    let (_, s, _) = bed.run(Some(&a), &["status", &id]);
    assert_eq!(s["state"], "delivered", "{s}");
    // Refuse: both ledgers say so and the text is gone.
    let (_, v, _) = bed.run(Some(&a), &["send", "--to", "careful", "burn after reading"]);
    let id2 = v["message_id"].as_str().unwrap().to_string();
    let (_, r, _) = bed.run(Some(&b), &["review", "--refuse", &id2]);
    assert_eq!(r["action"]["status"], "refused");
    let inbound =
        std::fs::read_to_string(bed.state.join(format!("messaging/inbound/{}.jsonl", b.id)))
            .unwrap();
    assert!(!inbound.contains("burn after reading"), "{inbound}");
    let (_, s, _) = bed.run(Some(&a), &["status", &id2]);
    assert_eq!(s["state"], "refused", "{s}");
    let (code, _, _) = bed.run(Some(&b), &["review", "--accept", &id2]);
    assert_eq!(code, 6);
    // A terminal has no inbox to review.
    let (code, _, err) = bed.run(None, &["review"]);
    assert_eq!(code, 8, "{err}");
}

#[test]
fn held_messages_expire_and_capacity_drops_the_oldest() {
    let mut bed = Bed::new();
    bed.config(json!({"inbound": "hold", "holdExpirySeconds": 1, "maxHeldPerTarget": 2}));
    let a = bed.live(Spec::named("alpha"));
    let b = bed.live(Spec::named("beta"));
    let send = |text: &str| {
        let (_, v, _) = bed.run(Some(&a), &["send", "--to", "beta", text]);
        assert_eq!(v["status"], "held", "{v}");
        v["message_id"].as_str().unwrap().to_string()
    };
    let first = send("one");
    // Two seconds later, past holdExpirySeconds (the command's clock runs ahead, no sleep).
    let (_, r, _) = bed.run_later(Duration::from_secs(2), Some(&b), &["review"]);
    assert!(r["held"].as_array().unwrap().is_empty(), "{r}");
    let (_, s, _) = bed.run(Some(&a), &["status", &first]);
    assert_eq!(s["state"], "expired", "{s}");
    bed.config(json!({"inbound": "hold", "holdExpirySeconds": 300, "maxHeldPerTarget": 2}));
    let m1 = send("m1");
    let m2 = send("m2");
    let m3 = send("m3");
    let (_, r, _) = bed.run(Some(&b), &["review"]);
    let ids: Vec<&str> = r["held"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["message_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![m2.as_str(), m3.as_str()]);
    let (_, s, _) = bed.run(Some(&a), &["status", &m1]);
    assert_eq!(s["state"], "expired", "{s}");
    assert!(
        !std::fs::read_to_string(bed.state.join(format!("messaging/inbound/{}.jsonl", b.id)))
            .unwrap()
            .contains("\"m1\"")
    );
}

#[test]
fn refuse_policy_answers_refused_and_stores_no_text() {
    let mut bed = Bed::new();
    bed.config(json!({"inboundSessions": {"closed": "refuse"}}));
    let b = bed.live(Spec::named("closed"));
    let (code, v, _) = bed.run(None, &["send", "--to", "closed", "top secret"]);
    assert_eq!((code, v["status"].as_str()), (8, Some("refused")), "{v}");
    assert!(b.received().is_empty());
    let all = std::fs::read_dir(bed.state.join("messaging/outbox")).unwrap();
    for f in all.flatten() {
        assert!(
            !std::fs::read_to_string(f.path())
                .unwrap()
                .contains("top secret")
        );
    }
}

/// Waits up to 10 s for `what`.
#[track_caller]
fn wait_until(what: &str, f: impl FnMut() -> bool) {
    crate::support::poll::expect(what, Duration::from_secs(10), f);
}

#[test]
fn kill_9_of_the_sender_mid_send_neither_loses_nor_duplicates() {
    let mut bed = Bed::new();
    bed.config(json!({"confirmMilliseconds": 8000, "resendAfterSeconds": 1}));
    let b = bed.live(Spec::named("target").not_taking());
    // 1. Killed while watching the transcript, after the write.
    let mut child = bed
        .cmd(None)
        .args(["--json", "send", "--to", "target", "first"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the write", || b.received().len() == 1);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let id1 = b.received()[0]["msg_id"].as_str().unwrap().to_string();
    b.confirm(&id1); // the client took it
    let (_, s, _) = bed.run(None, &["status", &id1]);
    assert_eq!(s["state"], "accepted", "{s}");
    b.answer(&id1); // and its model answered
    let (_, s, _) = bed.run(None, &["status", &id1]);
    assert_eq!(s["state"], "delivered", "{s}");
    // From here on the client takes what it gets, as the real one does at once.
    b.take.store(true, std::sync::atomic::Ordering::SeqCst);
    // A send killed at `point` by the crash hook, `text` its message.
    let crash_at = |point: &str, text: &str| {
        let out = bed
            .cmd(None)
            .env("SESSION_LOCK_MESSAGING_CRASH_AT", point)
            .args(["--json", "send", "--to", "target", text])
            .output()
            .unwrap();
        assert!(out.status.code() != Some(0), "the send crashed at {point}");
    };
    // 2. Crashed after recording the write, before it happened: written once, later.
    crash_at("before-write", "third");
    // 3. Crashed after recording it, before any write: the next send delivers it.
    crash_at("after-queued", "second");
    assert_eq!(
        b.received().len(),
        1,
        "nothing written by the crashed sends"
    );
    // Two seconds later, past resendAfterSeconds (the command's clock runs ahead, no sleep).
    let (_, v, _) = bed.run_later(
        Duration::from_secs(2),
        None,
        &["send", "--to", "target", "fourth"],
    );
    assert_eq!(v["status"], "accepted", "{v}");
    // 4. Crashed right after recording that the client took it (those lines are written, not
    // synced: a killed process keeps them): accepted, written once.
    crash_at("after-taken", "fifth");
    let texts: Vec<String> = b
        .wait_received(5)
        .iter()
        .map(|l| l["message"]["content"].as_str().unwrap().to_string())
        .collect();
    let fifth = b
        .received()
        .iter()
        .find(|l| {
            l["message"]["content"]
                .as_str()
                .unwrap()
                .contains("):\nfifth\n")
        })
        .map(|l| l["msg_id"].as_str().unwrap().to_string())
        .unwrap();
    assert_eq!(
        ops(&bed.outbox("terminal"), &fifth),
        ["queued", "sent", "taken"]
    );
    for word in ["first", "second", "third", "fourth", "fifth"] {
        let n = texts
            .iter()
            .filter(|t| t.contains(&format!("):\n{word}\n")))
            .count();
        assert_eq!(n, 1, "{word} written {n} times: {texts:?}");
    }
    let ids: Vec<String> = b
        .received()
        .iter()
        .map(|l| l["msg_id"].as_str().unwrap().to_string())
        .collect();
    for id in &ids[1..] {
        let (_, s, _) = bed.run(None, &["status", id]);
        assert_eq!(s["state"], "accepted", "{s}");
        b.answer(id);
        let (_, s, _) = bed.run(None, &["status", id]);
        assert_eq!(s["state"], "delivered", "{s}");
    }
}
