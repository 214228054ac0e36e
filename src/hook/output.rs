//! How a decision leaves the guard: the one place a [`Decision`] becomes bytes on stdout and
//! stderr and an exit code, for the client that sent the payload (Claude Code, Codex CLI,
//! Gemini CLI).

use super::decision::{Decision, Verdict};
use crate::clients::answer::{self, Answer};
use crate::clients::{Client, Event};
use crate::config::DecisionForm;

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
/// is always the JSON form: the exit-2 form has no way to carry it). The forms each client
/// honours are [`crate::clients::answer`]'s.
pub fn render(decision: &Decision, client: Client, form: DecisionForm) -> Outcome {
    let notice = decision
        .notices
        .iter()
        .map(|n| format!("session-lock: {n}"))
        .collect::<Vec<_>>()
        .join("\n");
    let verdict = match &decision.verdict {
        Verdict::Allow => Answer::Allow,
        Verdict::Deny(r) => Answer::Deny(&r.reason),
        Verdict::Rewrite { input } => Answer::Rewrite(input),
    };
    let event = Event::of(Client::Claude, decision.event.as_str());
    let rendered = answer::render(
        client,
        event,
        verdict,
        decision.context.as_deref(),
        &notice,
        form,
    );
    let mut stderr = String::new();
    for line in &decision.log {
        stderr.push_str(line);
        stderr.push('\n');
    }
    stderr.push_str(&rendered.stderr);
    Outcome {
        stdout: rendered.stdout,
        stderr,
        code: rendered.code,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hook::decision::{Refusal, Rule};
    use crate::words::HookEvent;
    use serde_json::{Value, json};

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
            Client::Claude,
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
        let o = render(&deny("no"), Client::Claude, DecisionForm::Exit2);
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (2, "", "no\n")
        );
        let o = render(
            &Decision::fail_open("x"),
            Client::Claude,
            DecisionForm::Exit2,
        );
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (0, "", "guard: x\n")
        );
        let o = render(
            &Decision::allow(HookEvent::PreToolUse),
            Client::Claude,
            DecisionForm::Json,
        );
        assert_eq!(o, Outcome::default(), "a plain allow says nothing");
    }

    #[test]
    fn a_notice_keeps_the_decision() {
        let mut d = Decision::allow(HookEvent::PreToolUse);
        d.notices.push("api.lock is corrupt".into());
        let v = json_of(&render(&d, Client::Claude, DecisionForm::Json));
        let text = "session-lock: api.lock is corrupt";
        assert_eq!(v["systemMessage"], text);
        assert_eq!(v["hookSpecificOutput"]["additionalContext"], text);
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert!(v["hookSpecificOutput"].get("permissionDecision").is_none());
        let mut d = deny("no");
        d.notices.push("n".into());
        let v = json_of(&render(&d, Client::Claude, DecisionForm::Json));
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(v["systemMessage"], "session-lock: n");
        let o = render(&d, Client::Claude, DecisionForm::Exit2);
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
            let o = render(&d, Client::Claude, form);
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
        let v = json_of(&render(&d, Client::Claude, DecisionForm::Json));
        assert_eq!(
            v,
            json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "a message"}})
        );
    }
}
