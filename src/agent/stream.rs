//! The CLI's `--output-format stream-json --verbose` lines → the run's answer and its normalized
//! events. Pure: no I/O.
//!
//! Facts it builds on: every content block is its own `assistant` event; subagent traffic carries
//! `parent_tool_use_id`; the CLI's `result.result` is only the last text; success is `is_error`,
//! never `subtype` (an API error says `subtype: "success"`); a run can print several `result`
//! events, and only the first one answers the prompt (later ones answer peer messages or
//! background tasks).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How the answer's text blocks are joined.
pub const TEXT_SEPARATOR: &str = "\n\n";
/// The most text of one tool result an event carries.
pub const EVENT_TEXT_CAP: usize = 4096;

/// One normalized event of a run, as `--events` writes it (one JSON object per line).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    pub tab_id: String,
    /// `plugin:<notifyPluginId>:event` when the caller asked for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<String>,
    /// Milliseconds since the epoch.
    pub at: u64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened. `type` in JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum EventKind {
    /// The CLI was spawned.
    Started {
        pid: u32,
        cli: String,
        contract: String,
    },
    /// The CLI's `system/init`: the session and what the model is offered.
    Session {
        session_id: String,
        #[serde(default)]
        model: Option<String>,
        #[serde(default)]
        tools: Vec<String>,
    },
    /// An assistant text block.
    Text {
        text: String,
        #[serde(default)]
        parent_tool_use_id: Option<String>,
    },
    /// The model called a tool.
    ToolUse {
        id: String,
        name: String,
        input: Value,
        #[serde(default)]
        parent_tool_use_id: Option<String>,
    },
    /// A tool's answer (text cut to [`EVENT_TEXT_CAP`]).
    ToolResult {
        tool_use_id: String,
        is_error: bool,
        text: String,
        #[serde(default)]
        parent_tool_use_id: Option<String>,
    },
    /// A `result` event; `index` 0 answers the prompt.
    Result {
        index: u64,
        is_error: bool,
        #[serde(default)]
        cost_usd: Option<f64>,
        #[serde(default)]
        subtype: Option<String>,
    },
    /// The CLI retried an API call.
    ApiRetry {
        attempt: u64,
        #[serde(default)]
        error_status: Option<u64>,
    },
    /// run-agent is stopping the CLI (`reason`: `timeout` or `interrupted`).
    Stopping { reason: String, signal: String },
    /// The run is over; the result follows as the binary's stdout.
    Done {
        ok: bool,
        #[serde(default)]
        error: Option<String>,
    },
}

/// The first `result` event: the answer to the prompt.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    pub is_error: bool,
    pub cost_usd: Option<f64>,
    /// The CLI's `result` string (for an API error, its message).
    pub result: Option<String>,
    pub subtype: Option<String>,
    pub terminal_reason: Option<String>,
    pub errors: Vec<String>,
}

impl Answer {
    /// True when the CLI reports that the turn was interrupted (SIGINT), not failed.
    pub fn interrupted(&self) -> bool {
        self.terminal_reason
            .as_deref()
            .is_some_and(|r| r.starts_with("aborted"))
    }

    /// The CLI's own words for a failed answer.
    pub fn error_text(&self) -> String {
        if let Some(r) = self.result.as_deref().filter(|r| !r.trim().is_empty()) {
            return r.trim().to_string();
        }
        if !self.errors.is_empty() {
            return self.errors.join("; ");
        }
        match &self.terminal_reason {
            Some(t) => format!("the run ended with {t}"),
            None => "the run failed".into(),
        }
    }
}

/// Folds stream-json events into the answer.
#[derive(Clone, Debug, Default)]
pub struct Fold {
    texts: Vec<String>,
    session_id: Option<String>,
    answer: Option<Answer>,
    results: u64,
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The string items of the array at `key`; none when it is absent or not an array.
fn strings_of(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The content blocks of an assistant or user message, borrowed.
fn blocks_of(v: &Value) -> &[Value] {
    v.pointer("/message/content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn cut(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_string();
    }
    let mut end = cap;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// The text of a tool_result `content` (a string or a list of blocks).
fn content_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

impl Fold {
    pub fn new() -> Fold {
        Fold::default()
    }

    /// The session id the CLI reported (init, else the first event that carried one).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The answer, once the first `result` event arrived.
    pub fn answer(&self) -> Option<&Answer> {
        self.answer.as_ref()
    }

    /// The answer's text: main-level assistant text blocks before the first result.
    pub fn text(&self) -> String {
        self.texts.join(TEXT_SEPARATOR)
    }

    /// Takes one stdout line; returns the normalized events it makes. Lines that are not JSON
    /// objects, and unknown types, make none.
    pub fn push_line(&mut self, line: &str) -> Vec<EventKind> {
        match serde_json::from_str::<Value>(line.trim()) {
            Ok(v) if v.is_object() => self.push(&v),
            _ => Vec::new(),
        }
    }

    pub fn push(&mut self, v: &Value) -> Vec<EventKind> {
        let mut out = Vec::new();
        if self.session_id.is_none()
            && let Some(s) = str_of(v, "session_id").filter(|s| !s.is_empty())
        {
            self.session_id = Some(s);
        }
        let parent = str_of(v, "parent_tool_use_id");
        match (
            v.get("type").and_then(Value::as_str),
            v.get("subtype").and_then(Value::as_str),
        ) {
            (Some("system"), Some("init")) => {
                if let Some(s) = str_of(v, "session_id") {
                    self.session_id = Some(s.clone());
                    out.push(EventKind::Session {
                        session_id: s,
                        model: str_of(v, "model"),
                        tools: strings_of(v, "tools"),
                    });
                }
            }
            (Some("system"), Some("api_retry")) => out.push(EventKind::ApiRetry {
                attempt: v.get("attempt").and_then(Value::as_u64).unwrap_or(0),
                error_status: v.get("error_status").and_then(Value::as_u64),
            }),
            (Some("assistant"), _) => {
                for b in blocks_of(v) {
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            let text = str_of(b, "text").unwrap_or_default();
                            if parent.is_none() && self.answer.is_none() && !text.is_empty() {
                                self.texts.push(text.clone());
                            }
                            out.push(EventKind::Text {
                                text,
                                parent_tool_use_id: parent.clone(),
                            });
                        }
                        Some("tool_use") => out.push(EventKind::ToolUse {
                            id: str_of(b, "id").unwrap_or_default(),
                            name: str_of(b, "name").unwrap_or_default(),
                            input: b.get("input").cloned().unwrap_or(Value::Null),
                            parent_tool_use_id: parent.clone(),
                        }),
                        _ => {}
                    }
                }
            }
            (Some("user"), _) => {
                for b in blocks_of(v) {
                    if b.get("type").and_then(Value::as_str) == Some("tool_result") {
                        out.push(EventKind::ToolResult {
                            tool_use_id: str_of(b, "tool_use_id").unwrap_or_default(),
                            is_error: b.get("is_error").and_then(Value::as_bool).unwrap_or(false),
                            text: cut(
                                &content_text(b.get("content").unwrap_or(&Value::Null)),
                                EVENT_TEXT_CAP,
                            ),
                            parent_tool_use_id: parent.clone(),
                        });
                    }
                }
            }
            (Some("result"), subtype) => {
                let index = v
                    .get("result_index")
                    .and_then(Value::as_u64)
                    .unwrap_or(self.results);
                self.results += 1;
                // A result without `is_error` is not a success we can vouch for.
                let is_error = v.get("is_error").and_then(Value::as_bool).unwrap_or(true);
                let cost_usd = v.get("total_cost_usd").and_then(Value::as_f64);
                if self.answer.is_none() {
                    self.answer = Some(Answer {
                        is_error,
                        cost_usd,
                        result: str_of(v, "result"),
                        subtype: subtype.map(str::to_string),
                        terminal_reason: str_of(v, "terminal_reason"),
                        errors: strings_of(v, "errors"),
                    });
                }
                out.push(EventKind::Result {
                    index,
                    is_error,
                    cost_usd,
                    subtype: subtype.map(str::to_string),
                });
            }
            _ => {}
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn assistant(parent: Option<&str>, blocks: Value) -> String {
        json!({"type":"assistant","message":{"id":"m","content":blocks},"parent_tool_use_id":parent,"session_id":"S"}).to_string()
    }

    fn result(index: u64, is_error: bool, subtype: &str, text: &str) -> String {
        json!({"type":"result","subtype":subtype,"is_error":is_error,"result":text,"result_index":index,"session_id":"S","total_cost_usd":0.25}).to_string()
    }

    fn fold(lines: &[String]) -> (Fold, Vec<EventKind>) {
        let mut f = Fold::new();
        let mut events = Vec::new();
        for l in lines {
            events.extend(f.push_line(l));
        }
        (f, events)
    }

    #[test]
    fn text_is_every_main_level_block_not_the_result_field() {
        let (f, events) = fold(&[
            json!({"type":"system","subtype":"init","session_id":"S","model":"claude-sonnet-5-5","tools":["Read"]}).to_string(),
            assistant(None, json!([{"type":"text","text":"Running env."}])),
            assistant(None, json!([{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"env"}}])),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"A=1","is_error":false}]},"parent_tool_use_id":null}).to_string(),
            assistant(None, json!([{"type":"text","text":"Done."},{"type":"text","text":"Really."}])),
            result(0, false, "success", "Really."),
        ]);
        assert_eq!(f.text(), "Running env.\n\nDone.\n\nReally.");
        assert_eq!(f.session_id(), Some("S"));
        let a = f.answer().unwrap();
        assert!(!a.is_error);
        assert_eq!(a.cost_usd, Some(0.25));
        assert!(matches!(&events[0], EventKind::Session { tools, .. } if tools == &["Read"]));
        assert!(
            events
                .iter()
                .any(|e| matches!(e, EventKind::ToolResult { text, .. } if text == "A=1"))
        );
    }

    #[test]
    fn subagent_blocks_are_events_but_not_text() {
        let (f, events) = fold(&[
            assistant(None, json!([{"type":"text","text":"main"}])),
            assistant(
                Some("toolu_agent"),
                json!([{"type":"text","text":"SUBAGENT REPORT"}]),
            ),
            result(0, false, "success", "x"),
        ]);
        assert_eq!(f.text(), "main");
        assert!(events.iter().any(|e| matches!(e,
            EventKind::Text { parent_tool_use_id: Some(p), .. } if p == "toolu_agent")));
    }

    #[test]
    fn the_first_result_wins_and_later_text_is_not_the_answer() {
        let (f, events) = fold(&[
            assistant(None, json!([{"type":"text","text":"answer"}])),
            result(0, false, "success", "answer"),
            assistant(None, json!([{"type":"text","text":"reply to a peer"}])),
            result(1, true, "success", "peer failure"),
        ]);
        assert_eq!(f.text(), "answer");
        assert!(!f.answer().unwrap().is_error);
        let results: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                EventKind::Result { index, .. } => Some(*index),
                _ => None,
            })
            .collect();
        assert_eq!(results, vec![0, 1]);
    }

    #[test]
    fn is_error_decides_even_when_subtype_says_success() {
        let (f, _) = fold(&[
            assistant(None, json!([{"type":"text","text":"API Error: 500 boom"}])),
            result(0, true, "success", "API Error: 500 boom always"),
        ]);
        let a = f.answer().unwrap();
        assert!(a.is_error);
        assert_eq!(a.error_text(), "API Error: 500 boom always");
        assert!(!a.interrupted());
        let (f, _) = fold(&[json!({"type":"result","subtype":"error_during_execution","is_error":true,"result":null,"terminal_reason":"aborted_streaming","errors":["[ede_diagnostic] x"]}).to_string()]);
        let a = f.answer().unwrap();
        assert!(a.interrupted());
        assert_eq!(a.error_text(), "[ede_diagnostic] x");
        let (f, _) = fold(&[json!({"type":"result","subtype":"success"}).to_string()]);
        assert!(f.answer().unwrap().is_error, "no is_error is not success");
    }

    #[test]
    fn junk_and_unknown_lines_are_ignored() {
        let (f, events) = fold(&[
            "not json".into(),
            "[1,2]".into(),
            String::new(),
            json!({"type":"command_lifecycle","state":"started"}).to_string(),
            json!({"type":"system","subtype":"api_retry","attempt":1,"error_status":500,"session_id":"S2"}).to_string(),
        ]);
        assert_eq!(f.text(), "");
        assert!(f.answer().is_none());
        assert_eq!(f.session_id(), Some("S2"));
        assert_eq!(
            events,
            vec![EventKind::ApiRetry {
                attempt: 1,
                error_status: Some(500)
            }]
        );
    }

    #[test]
    fn events_serialize_with_a_type_tag_in_camel_case() {
        let e = AgentEvent {
            tab_id: "t".into(),
            notify: Some("plugin:p:event".into()),
            at: 1,
            kind: EventKind::ToolResult {
                tool_use_id: "x".into(),
                is_error: true,
                text: "no".into(),
                parent_tool_use_id: None,
            },
        };
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(
            v,
            json!({"tabId":"t","notify":"plugin:p:event","at":1,"type":"toolResult","toolUseId":"x","isError":true,"text":"no","parentToolUseId":null})
        );
        let back: AgentEvent = serde_json::from_value(v).unwrap();
        assert_eq!(back, e);
        assert_eq!(cut("ééé", 3), "é…");
    }
}
