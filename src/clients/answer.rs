//! The guard's answer written the way each client honours it: what goes on stdout and stderr,
//! and the exit code. Measured with the real clients:
//!
//! - **Claude Code** and **Codex CLI** refuse on `hookSpecificOutput.permissionDecision: "deny"`
//!   with a reason (exit 0), or on exit 2 with the reason on stderr. Both run a rewritten input
//!   given as `permissionDecision: "allow"` with `updatedInput` (Claude Code wants the whole
//!   input; Codex reads `command`). Codex fails open on exit 1 or 3 and on a top-level
//!   `decision: "deny"`; its model reads `Command blocked by PreToolUse hook: <reason>. Command:
//!   <command>`.
//! - **Gemini CLI** reads only the top-level `decision` (`"deny"` or `"block"`) with `reason`, or
//!   exit 2 (any exit from 2 up) with the reason on stderr; `hookSpecificOutput.permissionDecision`
//!   alone is ignored and the tool runs. A rewrite is `hookSpecificOutput.tool_input`, merged
//!   over the call's input. `additionalContext` reaches its model after a tool, at a prompt and
//!   at session start, not before a tool; `systemMessage` is shown to the user. Its model reads
//!   `Tool execution blocked: <reason>`.
//!
//! A notice (something the user must hear once: a corrupt lock, a failed heartbeat) rides along
//! with any answer: `systemMessage` for the user and, where the client hands it on,
//! `additionalContext` for the model (after the event's own context); in the exit-2 form it
//! joins the reason on stderr.

use super::{Client, Event};
use crate::config::DecisionForm;
use serde_json::{Map, Value, json};

/// What the guard decided about the call, before it is written for a client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Answer<'a> {
    /// Let the tool run.
    Allow,
    /// Refuse the tool call; the reason is written for the model that made it.
    Deny(&'a str),
    /// Run the tool with this input instead: the whole input for Claude Code and Codex, the keys
    /// to replace for Gemini.
    Rewrite(&'a Value),
}

/// An answer as the hook process gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    /// Empty, or exactly one JSON document.
    pub stdout: String,
    pub stderr: String,
    /// 0, or 2 for a refusal in the exit-2 form.
    pub code: i32,
}

/// `answer` to `event` written for `client`, with `context` for the model and `notice`
/// (possibly empty) riding along. `form` is the repo's choice for refusals (`decision` in
/// `session-lock/config.json`); a rewrite is always JSON, the exit-2 form cannot carry it.
pub fn render(
    client: Client,
    event: Event,
    answer: Answer<'_>,
    context: Option<&str>,
    notice: &str,
    form: DecisionForm,
) -> Rendered {
    if let (Answer::Deny(reason), DecisionForm::Exit2) = (answer, form) {
        let mut stderr = format!("{reason}\n");
        if !notice.is_empty() {
            stderr.push_str(notice);
            stderr.push('\n');
        }
        return Rendered {
            stdout: String::new(),
            stderr,
            code: 2,
        };
    }
    let name = event.name_for(client);
    let pre_tool = Event::PreTool.name_for(client);
    let mut doc = Map::new();
    let mut specific = Map::new();
    match (client, answer) {
        (_, Answer::Allow) => {}
        (Client::Gemini, Answer::Deny(reason)) => {
            doc.insert("decision".into(), json!("deny"));
            doc.insert("reason".into(), json!(reason));
        }
        (_, Answer::Deny(reason)) => {
            specific.insert("hookEventName".into(), json!(pre_tool));
            specific.insert("permissionDecision".into(), json!("deny"));
            specific.insert("permissionDecisionReason".into(), json!(reason));
        }
        (Client::Gemini, Answer::Rewrite(input)) => {
            specific.insert("hookEventName".into(), json!(pre_tool));
            specific.insert("tool_input".into(), input.clone());
        }
        (client, Answer::Rewrite(input)) => {
            specific.insert("hookEventName".into(), json!(pre_tool));
            // Claude Code without a decision: its own permission rules still apply to the new
            // input. Codex takes a rewrite only with `allow`.
            if client == Client::Codex {
                specific.insert("permissionDecision".into(), json!("allow"));
            }
            specific.insert("updatedInput".into(), input.clone());
        }
    }
    if !notice.is_empty() {
        doc.insert("systemMessage".into(), json!(notice));
    }
    let context = match (context, notice.is_empty()) {
        (Some(c), true) => Some(c.to_string()),
        (Some(c), false) => Some(format!("{c}\n{notice}")),
        (None, false) => Some(notice.to_string()),
        (None, true) => None,
    };
    // Gemini hands no context to its model before a tool (the notice still reaches the user).
    let to_model = !(client == Client::Gemini && event == Event::PreTool);
    if let Some(text) = context.filter(|_| to_model) {
        specific
            .entry("hookEventName")
            .or_insert_with(|| json!(name));
        specific.insert("additionalContext".into(), json!(text));
    }
    if !specific.is_empty() {
        doc.insert("hookSpecificOutput".into(), Value::Object(specific));
    }
    Rendered {
        stdout: if doc.is_empty() {
            String::new()
        } else {
            Value::Object(doc).to_string()
        },
        stderr: String::new(),
        code: 0,
    }
}

/// True when `rendered` refuses the call, as `client` reads it.
pub fn is_refusal(client: Client, rendered: &Rendered) -> bool {
    if rendered.code == 2 {
        return true;
    }
    let Ok(doc) = serde_json::from_str::<Value>(&rendered.stdout) else {
        return false;
    };
    match client {
        Client::Gemini => matches!(doc["decision"].as_str(), Some("deny" | "block")),
        _ => doc["hookSpecificOutput"]["permissionDecision"] == "deny",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(r: &Rendered) -> Value {
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {:?}", r.stdout))
    }

    fn pre(client: Client, answer: Answer<'_>, notice: &str, form: DecisionForm) -> Rendered {
        render(client, Event::PreTool, answer, None, notice, form)
    }

    #[test]
    fn a_deny_each_client_honours() {
        let reason = "session-lock: target.txt is owned by stream 'alpha'";
        for client in [Client::Claude, Client::Codex] {
            let r = pre(client, Answer::Deny(reason), "", DecisionForm::Json);
            assert_eq!((r.code, r.stderr.as_str()), (0, ""));
            assert_eq!(
                doc(&r),
                json!({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                    "permissionDecision": "deny", "permissionDecisionReason": reason}})
            );
            assert!(!r.stdout.contains('\n'));
            assert!(is_refusal(client, &r));
            assert!(!is_refusal(Client::Gemini, &r), "Gemini ignores this form");
        }
        let r = pre(Client::Gemini, Answer::Deny(reason), "", DecisionForm::Json);
        assert_eq!(doc(&r), json!({"decision": "deny", "reason": reason}));
        assert!(is_refusal(Client::Gemini, &r));
        for client in super::super::ALL {
            let r = pre(client, Answer::Deny(reason), "", DecisionForm::Exit2);
            let expected = format!("{reason}\n");
            assert_eq!(
                (r.code, r.stdout.as_str(), r.stderr.as_str()),
                (2, "", &*expected)
            );
            assert!(is_refusal(client, &r));
        }
    }

    #[test]
    fn allow_is_silent_and_a_rewrite_is_the_clients_own_form() {
        for client in super::super::ALL {
            let r = pre(client, Answer::Allow, "", DecisionForm::Json);
            assert_eq!(r, Rendered::default());
            assert!(!is_refusal(client, &r));
        }
        let input = json!({"command": "bwrap … -- sh -c 'make'"});
        let r = pre(
            Client::Codex,
            Answer::Rewrite(&input),
            "",
            DecisionForm::Exit2,
        );
        assert_eq!(
            doc(&r)["hookSpecificOutput"],
            json!({"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": input})
        );
        let r = pre(
            Client::Claude,
            Answer::Rewrite(&input),
            "",
            DecisionForm::Json,
        );
        assert_eq!(
            doc(&r)["hookSpecificOutput"],
            json!({"hookEventName": "PreToolUse", "updatedInput": input}),
            "Claude Code's own permission rules still apply"
        );
        let r = pre(
            Client::Gemini,
            Answer::Rewrite(&input),
            "",
            DecisionForm::Json,
        );
        assert_eq!(
            doc(&r),
            json!({"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": input}})
        );
        assert!(!is_refusal(Client::Gemini, &r));
    }

    #[test]
    fn context_and_notices_go_where_each_client_reads_them() {
        let r = render(
            Client::Gemini,
            Event::PostTool,
            Answer::Allow,
            Some("2 messages"),
            "",
            DecisionForm::Json,
        );
        assert_eq!(
            doc(&r),
            json!({"hookSpecificOutput": {"hookEventName": "AfterTool", "additionalContext": "2 messages"}})
        );
        let r = render(
            Client::Claude,
            Event::Prompt,
            Answer::Allow,
            Some("m"),
            "lock corrupt",
            DecisionForm::Json,
        );
        assert_eq!(
            doc(&r),
            json!({"systemMessage": "lock corrupt",
                   "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "m\nlock corrupt"}})
        );
        let r = pre(
            Client::Codex,
            Answer::Allow,
            "lock corrupt",
            DecisionForm::Json,
        );
        assert_eq!(
            doc(&r),
            json!({"systemMessage": "lock corrupt",
                   "hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "lock corrupt"}})
        );
        assert!(!is_refusal(Client::Codex, &r));
        let r = pre(
            Client::Gemini,
            Answer::Deny("no"),
            "lock corrupt",
            DecisionForm::Json,
        );
        assert_eq!(
            doc(&r),
            json!({"decision": "deny", "reason": "no", "systemMessage": "lock corrupt"}),
            "no context before a tool: Gemini would not hand it on"
        );
        let r = pre(Client::Claude, Answer::Deny("no"), "n", DecisionForm::Exit2);
        assert_eq!((r.code, r.stderr.as_str()), (2, "no\nn\n"));
    }
}
