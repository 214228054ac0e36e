//! How a decision leaves the guard: what goes on stdout and stderr, and the exit code.

use crate::config::DecisionForm;

/// The whole effect of one guard run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Written to stdout as is: empty, or exactly one JSON document.
    pub stdout: String,
    /// Notes for humans (the client shows them to nobody but logs).
    pub stderr: String,
    pub code: i32,
    /// An allow the guard gave because of its own trouble (a fail-open), not a plain allow
    /// that carries a note.
    pub trouble: bool,
    /// The caller's stream as the run found it, for the block log: `Some(None)` when it holds
    /// none, `None` when the run did not look (the log then finds it itself).
    pub caller_stream: Option<Option<String>>,
}

impl Outcome {
    /// Let the tool run, saying nothing.
    pub fn allow() -> Outcome {
        Outcome::default()
    }

    /// Let the tool run, with a one-line note on stderr (the guard's own trouble).
    pub fn allow_with_note(note: impl Into<String>) -> Outcome {
        Outcome {
            stderr: format!("guard: {}\n", note.into()),
            trouble: true,
            ..Outcome::default()
        }
    }

    /// Block a PreToolUse call. `reason` is written for the model that made the call.
    pub fn deny(reason: &str, form: DecisionForm) -> Outcome {
        match form {
            DecisionForm::Json => Outcome {
                stdout: serde_json::json!({
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "deny",
                        "permissionDecisionReason": reason,
                    }
                })
                .to_string(),
                stderr: String::new(),
                code: 0,
                ..Outcome::default()
            },
            DecisionForm::Exit2 => Outcome {
                stdout: String::new(),
                stderr: format!("{reason}\n"),
                code: 2,
                ..Outcome::default()
            },
        }
    }

    /// Add context for the model (PostToolUse, UserPromptSubmit, SessionStart, Stop).
    pub fn context(event: &str, text: &str) -> Outcome {
        Outcome {
            stdout: serde_json::json!({
                "hookSpecificOutput": {"hookEventName": event, "additionalContext": text}
            })
            .to_string(),
            ..Outcome::default()
        }
    }

    /// Adds a message for the user (`systemMessage`) that the model also reads
    /// (`additionalContext`), keeping the decision. In the exit-2 form it joins the reason.
    pub fn with_notice(mut self, event: &str, text: &str) -> Outcome {
        if text.is_empty() {
            return self;
        }
        if self.code == 2 {
            self.stderr.push_str(&format!("{text}\n"));
            return self;
        }
        let mut doc: serde_json::Value = if self.stdout.is_empty() {
            serde_json::json!({})
        } else {
            match serde_json::from_str(&self.stdout) {
                Ok(v) => v,
                Err(_) => return self,
            }
        };
        doc["systemMessage"] = serde_json::json!(text);
        if doc.get("hookSpecificOutput").is_none() {
            doc["hookSpecificOutput"] = serde_json::json!({"hookEventName": event});
        }
        doc["hookSpecificOutput"]["additionalContext"] = serde_json::json!(text);
        self.stdout = doc.to_string();
        self
    }

    /// True when this outcome blocks the tool call.
    pub fn is_block(&self) -> bool {
        self.code == 2 || self.stdout.contains("\"permissionDecision\":\"deny\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_deny_is_one_document_and_exit_zero() {
        let o = Outcome::deny("stream 'api' is held", DecisionForm::Json);
        assert_eq!(o.code, 0);
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(
            v["hookSpecificOutput"]["permissionDecisionReason"],
            "stream 'api' is held"
        );
        assert!(!o.stdout.contains('\n'));
        assert!(o.is_block());
    }

    #[test]
    fn exit2_form_puts_reason_on_stderr() {
        let o = Outcome::deny("no", DecisionForm::Exit2);
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (2, "", "no\n")
        );
        assert!(o.is_block());
        assert!(!Outcome::allow_with_note("x").is_block());
    }

    #[test]
    fn a_notice_keeps_the_decision() {
        let o = Outcome::allow().with_notice("PreToolUse", "api.lock is corrupt");
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(v["systemMessage"], "api.lock is corrupt");
        assert_eq!(
            v["hookSpecificOutput"]["additionalContext"],
            "api.lock is corrupt"
        );
        assert!(!o.is_block());
        let o = Outcome::deny("no", DecisionForm::Json).with_notice("PreToolUse", "n");
        let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(v["systemMessage"], "n");
        assert!(o.is_block());
        let o = Outcome::deny("no", DecisionForm::Exit2).with_notice("PreToolUse", "n");
        assert_eq!((o.code, o.stderr.as_str()), (2, "no\nn\n"));
    }
}
