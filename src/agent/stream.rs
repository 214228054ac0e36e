//! The CLI's `--output-format stream-json --verbose` lines → the run's answer and its normalized
//! events. Pure: no I/O.
//!
//! Facts it builds on: every content block is its own `assistant` event, and the blocks of one
//! API message share `message.id`; subagent traffic carries `parent_tool_use_id`; the CLI's
//! `result.result` is only the last text of the turn; success is `is_error`, never `subtype` (an
//! API error says `subtype: "success"`), and a failed call shows as an assistant text the CLI
//! made up (`is_api_error_message`); a run can print several `result` events and only the first
//! one answers the prompt (later ones answer peer messages or background tasks) — but a
//! background task's notification turn can stream its text *before* that first result, after a
//! `system/task_notification` event. See [`Fold::text`] and [`Fold::cost_usd`].

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
    /// What the prompt's turn cost (see [`Fold::cost_usd`]).
    pub cost_usd: Option<f64>,
    /// The CLI's `result` string (for an API error, its message).
    pub result: Option<String>,
    pub subtype: Option<String>,
    pub terminal_reason: Option<String>,
    pub errors: Vec<String>,
    pub api_error_status: Option<u64>,
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

// The stream-json lines this fold reads, as serde types. Unknown types and subtypes are
// `Other`; fields that are loosely typed in practice stay `Value`.

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line {
    System(SystemLine),
    Assistant(MessageLine),
    User(MessageLine),
    Result(ResultLine),
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "subtype", rename_all = "snake_case")]
enum SystemLine {
    Init {
        session_id: String,
        #[serde(default)]
        model: Option<String>,
        #[serde(default)]
        tools: Vec<Value>,
    },
    ApiRetry {
        #[serde(default)]
        attempt: u64,
        #[serde(default)]
        error_status: Option<u64>,
    },
    /// A background task finished: the CLI answers it in a turn of its own.
    TaskNotification,
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessageLine {
    #[serde(default)]
    message: Message,
    #[serde(default)]
    parent_tool_use_id: Option<String>,
    /// The CLI's own text standing for a failed API call (`model: "<synthetic>"`).
    #[serde(default)]
    is_api_error_message: bool,
}

#[derive(Default, Deserialize)]
struct Message {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    content: Content,
}

/// A message's content: a list of blocks, or (user messages) a plain string.
#[derive(Deserialize)]
#[serde(untagged)]
enum Content {
    Blocks(Vec<BlockLine>),
    Text(#[allow(dead_code)] String),
}

impl Default for Content {
    fn default() -> Content {
        Content::Blocks(Vec::new())
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockLine {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        #[serde(default)]
        tool_use_id: String,
        #[serde(default)]
        content: Value,
        #[serde(default)]
        is_error: Option<bool>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct ResultLine {
    #[serde(default)]
    subtype: Option<String>,
    /// Absent is not a success anyone can vouch for.
    #[serde(default)]
    is_error: Option<bool>,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    result_index: Option<u64>,
    #[serde(default)]
    total_cost_usd: Option<f64>,
    #[serde(default)]
    terminal_reason: Option<String>,
    #[serde(default)]
    errors: Vec<Value>,
    #[serde(default)]
    api_error_status: Option<u64>,
    /// This turn's main-thread tokens.
    #[serde(default)]
    usage: Option<Usage>,
    /// The session's tokens and cost per model so far.
    #[serde(default, rename = "modelUsage")]
    model_usage: Option<std::collections::BTreeMap<String, Usage>>,
}

/// Tokens (and, in `modelUsage`, their cost): a result's `usage` names them in snake_case,
/// its `modelUsage` in camelCase.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq)]
struct Usage {
    #[serde(default, alias = "inputTokens")]
    input_tokens: f64,
    #[serde(default, alias = "outputTokens")]
    output_tokens: f64,
    #[serde(default, alias = "cacheCreationInputTokens")]
    cache_creation_input_tokens: f64,
    #[serde(default, alias = "cacheReadInputTokens")]
    cache_read_input_tokens: f64,
    #[serde(default, rename = "costUSD")]
    cost_usd: f64,
}

impl Usage {
    /// These tokens in input-token units at Claude's list-price ratios: output 5×, cache
    /// writes 1.25×, cache reads 0.1×. Only the ratios are used: the CLI's reported cost sets
    /// the scale.
    fn weight(&self) -> f64 {
        self.input_tokens
            + 5.0 * self.output_tokens
            + 1.25 * self.cache_creation_input_tokens
            + 0.1 * self.cache_read_input_tokens
    }
}

/// One main-level text block, with the API message it belongs to.
#[derive(Clone, Debug)]
struct TextBlock {
    message: Option<String>,
    text: String,
    /// A task notification (a turn of the CLI's own) had arrived before it.
    after_notification: bool,
}

/// A `result` event that answers something other than the prompt.
#[derive(Clone, Debug)]
struct Extra {
    result: Option<String>,
    usage: Option<Usage>,
}

/// Folds stream-json events into the answer.
#[derive(Clone, Debug, Default)]
pub struct Fold {
    /// Main-level text blocks before the first `result`, in order.
    texts: Vec<TextBlock>,
    notified: bool,
    session_id: Option<String>,
    model: Option<String>,
    answer: Option<Answer>,
    /// The first result's `modelUsage`, to price the turns it includes.
    model_usage: std::collections::BTreeMap<String, Usage>,
    extras: Vec<Extra>,
    results: u64,
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
    pub fn answer(&self) -> Option<Answer> {
        let mut a = self.answer.clone()?;
        a.cost_usd = self.cost_usd();
        Some(a)
    }

    /// How many of the text blocks before the first result answer the prompt. The result's own
    /// text is the last text of the prompt's turn: the answer runs through the message that
    /// holds it (the last such message before any task notification). Blocks after it belong to
    /// turns the CLI ran on its own (a background task's notification) before printing the
    /// result. Without a usable result text, the answer stops at the first notification.
    fn answer_len(&self) -> usize {
        let boundary = self
            .texts
            .iter()
            .position(|t| t.after_notification)
            .unwrap_or(self.texts.len());
        let last = self
            .answer
            .as_ref()
            .filter(|a| !a.is_error)
            .and_then(|a| a.result.as_deref())
            .map(str::trim)
            .filter(|r| !r.is_empty());
        let Some(last) = last else {
            return boundary;
        };
        let holds = |t: &TextBlock| t.text.trim() == last;
        let found = self.texts[..boundary]
            .iter()
            .rposition(holds)
            .or_else(|| self.texts.iter().rposition(holds));
        let Some(i) = found else {
            return boundary;
        };
        // Through the end of that block's API message.
        let message = &self.texts[i].message;
        let mut end = i + 1;
        while end < self.texts.len()
            && message.is_some()
            && self.texts[end].message == *message
            && !self.texts[end].after_notification
        {
            end += 1;
        }
        end
    }

    /// The answer's text: the main-level text blocks of the prompt's turn, joined.
    pub fn text(&self) -> String {
        self.texts[..self.answer_len()]
            .iter()
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join(TEXT_SEPARATOR)
    }

    /// What the prompt's turn cost. The first result's `total_cost_usd` counts everything the
    /// CLI spent until it was printed, including turns of its own that ran before it (their
    /// text arrived before it); each such turn's own result reports its tokens, priced here at
    /// the session model's rate (from `modelUsage`) and taken off. Without the numbers for it,
    /// the first result's total.
    pub fn cost_usd(&self) -> Option<f64> {
        let total = self.answer.as_ref()?.cost_usd?;
        let extra_texts: Vec<&str> = self.texts[self.answer_len()..]
            .iter()
            .map(|t| t.text.trim())
            .collect();
        let included: Vec<Usage> = self
            .extras
            .iter()
            .filter(|x| {
                x.result
                    .as_deref()
                    .is_some_and(|r| extra_texts.contains(&r.trim()))
            })
            .filter_map(|x| x.usage)
            .collect();
        if included.is_empty() {
            return Some(total);
        }
        let rate = self
            .model
            .as_ref()
            .and_then(|m| self.model_usage.get(m))
            .or_else(|| {
                (self.model_usage.len() == 1)
                    .then(|| self.model_usage.values().next())
                    .flatten()
            })
            .and_then(|m| (m.weight() > 0.0).then(|| m.cost_usd / m.weight()));
        let Some(rate) = rate else {
            return Some(total);
        };
        let extra: f64 = included.iter().map(|u| rate * u.weight()).sum();
        // Rounded to the CLI's precision (millionths of a dollar).
        Some(((total - extra).max(0.0) * 1e6).round() / 1e6)
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
        if self.session_id.is_none()
            && let Some(s) = v
                .get("session_id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        {
            self.session_id = Some(s.to_string());
        }
        match Line::deserialize(v) {
            Ok(Line::System(system)) => self.system(system),
            Ok(Line::Assistant(m)) => self.assistant(m),
            Ok(Line::User(m)) => user(m),
            Ok(Line::Result(r)) => self.result(r),
            Ok(Line::Other) | Err(_) => Vec::new(),
        }
    }

    fn system(&mut self, line: SystemLine) -> Vec<EventKind> {
        match line {
            SystemLine::Init {
                session_id,
                model,
                tools,
            } => {
                self.session_id = Some(session_id.clone());
                self.model = model.clone();
                vec![EventKind::Session {
                    session_id,
                    model,
                    tools: tools
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect(),
                }]
            }
            SystemLine::ApiRetry {
                attempt,
                error_status,
            } => vec![EventKind::ApiRetry {
                attempt,
                error_status,
            }],
            SystemLine::TaskNotification => {
                self.notified = true;
                Vec::new()
            }
            SystemLine::Other => Vec::new(),
        }
    }

    fn assistant(&mut self, m: MessageLine) -> Vec<EventKind> {
        let Content::Blocks(blocks) = m.message.content else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for b in blocks {
            match b {
                BlockLine::Text { text } => {
                    // The CLI's stand-in for a failed call is the error, not the model's text.
                    let answer_text = m.parent_tool_use_id.is_none()
                        && !m.is_api_error_message
                        && !text.is_empty();
                    if answer_text && self.answer.is_none() {
                        self.texts.push(TextBlock {
                            message: m.message.id.clone(),
                            text: text.clone(),
                            after_notification: self.notified,
                        });
                    }
                    out.push(EventKind::Text {
                        text,
                        parent_tool_use_id: m.parent_tool_use_id.clone(),
                    });
                }
                BlockLine::ToolUse { id, name, input } => out.push(EventKind::ToolUse {
                    id,
                    name,
                    input,
                    parent_tool_use_id: m.parent_tool_use_id.clone(),
                }),
                BlockLine::ToolResult { .. } | BlockLine::Other => {}
            }
        }
        out
    }

    fn result(&mut self, r: ResultLine) -> Vec<EventKind> {
        let index = r.result_index.unwrap_or(self.results);
        self.results += 1;
        let is_error = r.is_error.unwrap_or(true);
        if self.answer.is_none() {
            self.model_usage = r.model_usage.clone().unwrap_or_default();
            self.answer = Some(Answer {
                is_error,
                cost_usd: r.total_cost_usd,
                result: r.result.clone(),
                subtype: r.subtype.clone(),
                terminal_reason: r.terminal_reason.clone(),
                errors: r
                    .errors
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                api_error_status: r.api_error_status,
            });
        } else {
            self.extras.push(Extra {
                result: r.result.clone(),
                usage: r.usage,
            });
        }
        vec![EventKind::Result {
            index,
            is_error,
            cost_usd: r.total_cost_usd,
            subtype: r.subtype,
        }]
    }
}

fn user(m: MessageLine) -> Vec<EventKind> {
    let Content::Blocks(blocks) = m.message.content else {
        return Vec::new();
    };
    blocks
        .into_iter()
        .filter_map(|b| match b {
            BlockLine::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => Some(EventKind::ToolResult {
                tool_use_id,
                is_error: is_error.unwrap_or(false),
                text: cut(&content_text(&content), EVENT_TEXT_CAP),
                parent_tool_use_id: m.parent_tool_use_id.clone(),
            }),
            _ => None,
        })
        .collect()
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

    fn text_in(parent: Option<&str>, message: &str, text: &str) -> String {
        json!({"type":"assistant","message":{"id":message,"content":[{"type":"text","text":text}]},"parent_tool_use_id":parent,"session_id":"S"}).to_string()
    }

    /// The stream of issue 14's leak, as the CLI printed it: the notification turn of a
    /// background Agent streams its text before the first result.
    fn background_stream() -> Vec<String> {
        vec![
            json!({"type":"system","subtype":"init","session_id":"S","model":"claude-opus-5-5","tools":[]}).to_string(),
            text_in(None, "m1", "MAIN-ONE"),
            assistant(None, json!([{"type":"tool_use","id":"toolu_a","name":"Agent","input":{}}])),
            json!({"type":"system","subtype":"task_started","task_id":"t","session_id":"S"}).to_string(),
            text_in(None, "m2", "MAIN-TWO"),
            text_in(None, "m2", "MAIN-THREE final"),
            text_in(Some("toolu_a"), "m3", "SUBAGENT REPORT"),
            json!({"type":"system","subtype":"task_notification","task_id":"t","status":"completed","session_id":"S"}).to_string(),
            text_in(None, "m4", "NOTIFICATION-ANSWER-TO-BACKGROUND-TASK"),
            json!({"type":"result","subtype":"success","is_error":false,"result":"MAIN-THREE final","result_index":0,"total_cost_usd":0.049192,
                "usage":{"input_tokens":6001,"output_tokens":72},
                "modelUsage":{"claude-opus-5-5":{"inputTokens":11808,"outputTokens":98,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.049192}}}).to_string(),
            json!({"type":"result","subtype":"success","is_error":false,"result":"NOTIFICATION-ANSWER-TO-BACKGROUND-TASK","result_index":1,"total_cost_usd":0.049192,
                "usage":{"input_tokens":3528,"output_tokens":16},"origin":{"kind":"task-notification"}}).to_string(),
        ]
    }

    #[test]
    fn a_notification_turn_before_the_first_result_is_not_the_answer() {
        let (f, events) = fold(&background_stream());
        assert_eq!(f.text(), "MAIN-ONE\n\nMAIN-TWO\n\nMAIN-THREE final");
        // Its text is still an event, like every other block.
        assert!(events.iter().any(|e| matches!(e,
            EventKind::Text { text, .. } if text.starts_with("NOTIFICATION"))));
        // The notification turn's tokens (3528 in, 16 out) at the session's rate
        // (0.049192 for 11808 in + 5 × 98 out) are taken off the total.
        let cost = f.answer().unwrap().cost_usd.unwrap();
        assert!((cost - 0.03476).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn without_a_later_result_the_total_stands_and_the_notification_still_cuts() {
        let mut lines = background_stream();
        lines.pop();
        // The result text is missing: the task notification is where the answer stops.
        let last = lines.pop().unwrap().replace("MAIN-THREE final", "");
        lines.push(last);
        let (f, _) = fold(&lines);
        assert_eq!(f.text(), "MAIN-ONE\n\nMAIN-TWO\n\nMAIN-THREE final");
        assert_eq!(f.answer().unwrap().cost_usd, Some(0.049192));
    }

    #[test]
    fn the_answer_runs_through_the_whole_message_holding_the_result_text() {
        // The same text twice: the answer is through the last message before a notification.
        let (f, _) = fold(&[
            text_in(None, "m1", "ok"),
            text_in(None, "m2", "ok"),
            text_in(None, "m2", "and more of m2"),
            result(0, false, "success", "ok"),
        ]);
        assert_eq!(f.text(), "ok\n\nok\n\nand more of m2");
    }

    #[test]
    fn the_clis_stand_in_for_a_failed_call_is_not_text() {
        let (f, events) = fold(&[
            json!({"type":"assistant","message":{"id":"x","model":"<synthetic>","content":[{"type":"text","text":"API Error: 500 boom"}]},
                "parent_tool_use_id":null,"is_api_error_message":true,"error":"server_error"}).to_string(),
            result(0, true, "success", "API Error: 500 boom"),
        ]);
        assert_eq!(f.text(), "");
        assert_eq!(f.answer().unwrap().error_text(), "API Error: 500 boom");
        assert_eq!(events.len(), 2, "still an event: {events:?}");
    }
}
