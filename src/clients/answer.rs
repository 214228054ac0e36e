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
//! `additionalContext` for the model; in the exit-2 form it joins the reason on stderr.

use super::{Client, Event};
use crate::config::DecisionForm;
use serde_json::{Value, json};

/// What the guard decided, before it is written for a client.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Answer<'a> {
    /// Let the tool run.
    Allow,
    /// Refuse the tool call; the reason is written for the model that made it.
    Deny(&'a str),
    /// Run the tool with this input instead: the whole input for Claude Code and Codex, the keys
    /// to replace for Gemini.
    Rewrite(&'a Value),
    /// Text for the model (after a tool, at a prompt, at session start).
    Context(&'a str),
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

/// `answer` to `event` written for `client`, with `notice` (possibly empty) riding along.
/// `form` is the repo's choice for refusals (`decision` in `session-lock/config.json`).
pub fn render(
    client: Client,
    event: Event,
    answer: Answer<'_>,
    notice: &str,
    form: DecisionForm,
) -> Rendered {
    let name = event.name_for(client);
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
    let mut doc = match (client, answer) {
        (_, Answer::Allow) => json!({}),
        (Client::Gemini, Answer::Deny(reason)) => json!({"decision": "deny", "reason": reason}),
        (_, Answer::Deny(reason)) => json!({"hookSpecificOutput": {
            "hookEventName": name,
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }}),
        (Client::Gemini, Answer::Rewrite(input)) => json!({"hookSpecificOutput": {
            "hookEventName": name,
            "tool_input": input,
        }}),
        (_, Answer::Rewrite(input)) => json!({"hookSpecificOutput": {
            "hookEventName": name,
            "permissionDecision": "allow",
            "updatedInput": input,
        }}),
        (_, Answer::Context(text)) => json!({"hookSpecificOutput": {
            "hookEventName": name,
            "additionalContext": text,
        }}),
    };
    if !notice.is_empty() {
        doc["systemMessage"] = json!(notice);
        // Gemini hands no context to its model before a tool; a context answer keeps its own.
        let gemini_pre_tool = client == Client::Gemini && event == Event::PreTool;
        let to_model = !gemini_pre_tool && !matches!(answer, Answer::Context(_));
        if to_model {
            let specific = doc
                .as_object_mut()
                .expect("a JSON object")
                .entry("hookSpecificOutput")
                .or_insert_with(|| json!({"hookEventName": name}));
            specific["additionalContext"] = json!(notice);
        }
    }
    let stdout = if doc == json!({}) {
        String::new()
    } else {
        doc.to_string()
    };
    Rendered {
        stdout,
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

    #[test]
    fn a_deny_each_client_honours() {
        let reason = "session-lock: target.txt is owned by stream 'alpha'";
        for client in [Client::Claude, Client::Codex] {
            let r = render(
                client,
                Event::PreTool,
                Answer::Deny(reason),
                "",
                DecisionForm::Json,
            );
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
        let r = render(
            Client::Gemini,
            Event::PreTool,
            Answer::Deny(reason),
            "",
            DecisionForm::Json,
        );
        assert_eq!(doc(&r), json!({"decision": "deny", "reason": reason}));
        assert!(is_refusal(Client::Gemini, &r));
        for client in super::super::ALL {
            let r = render(
                client,
                Event::PreTool,
                Answer::Deny(reason),
                "",
                DecisionForm::Exit2,
            );
            assert_eq!(
                (r.code, r.stdout.as_str(), r.stderr.as_str()),
                (2, "", &*format!("{reason}\n"))
            );
            assert!(is_refusal(client, &r));
        }
    }

    #[test]
    fn allow_is_silent_and_a_rewrite_is_the_clients_own_form() {
        for client in super::super::ALL {
            let r = render(
                client,
                Event::PreTool,
                Answer::Allow,
                "",
                DecisionForm::Json,
            );
            assert_eq!(r, Rendered::default());
            assert!(!is_refusal(client, &r));
        }
        let input = json!({"command": "bwrap … -- sh -c 'make'"});
        let r = render(
            Client::Codex,
            Event::PreTool,
            Answer::Rewrite(&input),
            "",
            DecisionForm::Json,
        );
        assert_eq!(
            doc(&r)["hookSpecificOutput"],
            json!({"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": input})
        );
        let r = render(
            Client::Gemini,
            Event::PreTool,
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
            Answer::Context("2 messages"),
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
            Answer::Context("m"),
            "lock corrupt",
            DecisionForm::Json,
        );
        assert_eq!(
            doc(&r),
            json!({"systemMessage": "lock corrupt",
                   "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "m"}})
        );
        let r = render(
            Client::Codex,
            Event::PreTool,
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
        let r = render(
            Client::Gemini,
            Event::PreTool,
            Answer::Deny("no"),
            "lock corrupt",
            DecisionForm::Json,
        );
        assert_eq!(
            doc(&r),
            json!({"decision": "deny", "reason": "no", "systemMessage": "lock corrupt"})
        );
        let r = render(
            Client::Claude,
            Event::PreTool,
            Answer::Deny("no"),
            "n",
            DecisionForm::Exit2,
        );
        assert_eq!((r.code, r.stderr.as_str()), (2, "no\nn\n"));
    }
}
