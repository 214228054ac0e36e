//! How a decision leaves the guard: the one place a [`Decision`] becomes bytes on stdout and
//! stderr and an exit code, for the client that sent the payload.

use super::decision::{Decision, Verdict};
use crate::config::DecisionForm;
use crate::words::HookEvent;
use serde_json::{Map, Value, json};

/// The client a decision is rendered for. Each speaks its own hook output; only Claude Code's
/// is written today (another client is one more arm of [`render`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Client {
    #[default]
    ClaudeCode,
}

/// The whole effect of one guard run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Written to stdout as is: empty, or exactly one JSON document.
    pub stdout: String,
    /// Notes for humans (the client shows them to nobody but logs).
    pub stderr: String,
    pub code: i32,
}

/// `decision` as `client` reads it, in the decision `form` the repo's config chose (a rewrite
/// is always the JSON form: the exit-2 form has no way to carry it).
pub fn render(decision: &Decision, client: Client, form: DecisionForm) -> Outcome {
    match client {
        Client::ClaudeCode => claude_code(decision, form),
    }
}

fn claude_code(d: &Decision, form: DecisionForm) -> Outcome {
    let mut out = Outcome::default();
    for line in &d.log {
        out.stderr.push_str(line);
        out.stderr.push('\n');
    }
    let notice = d
        .notices
        .iter()
        .map(|n| format!("session-lock: {n}"))
        .collect::<Vec<_>>()
        .join("\n");
    if let (Verdict::Deny(r), DecisionForm::Exit2) = (&d.verdict, form) {
        out.stderr.push_str(&r.reason);
        out.stderr.push('\n');
        if !notice.is_empty() {
            out.stderr.push_str(&notice);
            out.stderr.push('\n');
        }
        out.code = 2;
        return out;
    }
    let mut specific = Map::new();
    match &d.verdict {
        Verdict::Allow => {}
        Verdict::Deny(r) => {
            specific.insert(
                "hookEventName".into(),
                json!(HookEvent::PreToolUse.as_str()),
            );
            specific.insert("permissionDecision".into(), json!("deny"));
            specific.insert("permissionDecisionReason".into(), json!(r.reason));
        }
        // Without `permissionDecision`: the client's own permission rules still apply to it.
        Verdict::Rewrite { input } => {
            specific.insert(
                "hookEventName".into(),
                json!(HookEvent::PreToolUse.as_str()),
            );
            specific.insert("updatedInput".into(), input.clone());
        }
    }
    let context = match (&d.context, notice.is_empty()) {
        (Some(c), true) => Some(c.clone()),
        (Some(c), false) => Some(format!("{c}\n{notice}")),
        (None, false) => Some(notice.clone()),
        (None, true) => None,
    };
    let mut doc = Map::new();
    if !notice.is_empty() {
        doc.insert("systemMessage".into(), json!(notice));
    }
    if let Some(text) = context {
        specific
            .entry("hookEventName")
            .or_insert_with(|| json!(d.event.as_str()));
        specific.insert("additionalContext".into(), json!(text));
    }
    if !specific.is_empty() {
        doc.insert("hookSpecificOutput".into(), Value::Object(specific));
    }
    if !doc.is_empty() {
        out.stdout = Value::Object(doc).to_string();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::decision::{Refusal, Rule};

    fn deny(reason: &str) -> Decision {
        Decision::deny(HookEvent::PreToolUse, Refusal::new(Rule::Ownership, reason))
    }

    fn json_of(o: &Outcome) -> Value {
        serde_json::from_str(&o.stdout).unwrap()
    }

    #[test]
    fn json_deny_is_one_document_and_exit_zero() {
        let o = render(
            &deny("stream 'api' is held"),
            Client::ClaudeCode,
            DecisionForm::Json,
        );
        assert_eq!(o.code, 0);
        let v = json_of(&o);
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecisionReason"],
            "stream 'api' is held"
        );
        assert!(!o.stdout.contains('\n'));
    }

    #[test]
    fn exit2_form_puts_reason_on_stderr() {
        let o = render(&deny("no"), Client::ClaudeCode, DecisionForm::Exit2);
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (2, "", "no\n")
        );
        let o = render(
            &Decision::fail_open("x"),
            Client::ClaudeCode,
            DecisionForm::Exit2,
        );
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (0, "", "guard: x\n")
        );
        let o = render(
            &Decision::allow(HookEvent::PreToolUse),
            Client::ClaudeCode,
            DecisionForm::Json,
        );
        assert_eq!(o, Outcome::default(), "a plain allow says nothing");
    }

    #[test]
    fn a_notice_keeps_the_decision() {
        let mut d = Decision::allow(HookEvent::PreToolUse);
        d.notices.push("api.lock is corrupt".into());
        let v = json_of(&render(&d, Client::ClaudeCode, DecisionForm::Json));
        let text = "session-lock: api.lock is corrupt";
        assert_eq!(v["systemMessage"], text);
        assert_eq!(v["hookSpecificOutput"]["additionalContext"], text);
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert!(v["hookSpecificOutput"].get("permissionDecision").is_none());
        let mut d = deny("no");
        d.notices.push("n".into());
        let v = json_of(&render(&d, Client::ClaudeCode, DecisionForm::Json));
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(v["systemMessage"], "session-lock: n");
        let o = render(&d, Client::ClaudeCode, DecisionForm::Exit2);
        assert_eq!((o.code, o.stderr.as_str()), (2, "no\nsession-lock: n\n"));
    }

    #[test]
    fn a_rewrite_carries_the_new_input_without_a_permission_decision() {
        let d = Decision {
            verdict: Verdict::Rewrite {
                input: json!({"command": "floor -- ls"}),
            },
            ..Decision::allow(HookEvent::PreToolUse)
        };
        for form in [DecisionForm::Json, DecisionForm::Exit2] {
            let o = render(&d, Client::ClaudeCode, form);
            assert_eq!(o.code, 0);
            let v = json_of(&o);
            assert_eq!(
                v["hookSpecificOutput"]["updatedInput"]["command"],
                "floor -- ls"
            );
            assert!(v["hookSpecificOutput"].get("permissionDecision").is_none());
        }
    }

    #[test]
    fn context_names_its_event() {
        let d = Decision {
            context: Some("a message".into()),
            ..Decision::allow(HookEvent::UserPromptSubmit)
        };
        let v = json_of(&render(&d, Client::ClaudeCode, DecisionForm::Json));
        assert_eq!(
            v,
            json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "a message"}})
        );
    }
}
