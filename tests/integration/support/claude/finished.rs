//! What a finished CLI run left, and reading its stream-json events.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use serde_json::Value;

use super::{CliKind, HomeDir};

/// What a finished CLI run left: exit status, stream-json events, stderr.
pub struct Finished {
    pub kind: CliKind,
    pub label: String,
    pub pid: u32,
    pub status: ExitStatus,
    /// The run was killed for outliving its timeout.
    pub timed_out: bool,
    pub duration: Duration,
    /// Every stdout line that parsed as JSON, in order.
    pub events: Vec<Value>,
    pub stdout: String,
    pub stderr: String,
    pub(super) home: Option<HomeDir>,
}

impl Finished {
    pub fn exit_code(&self) -> Option<i32> {
        self.status.code()
    }

    /// The signal that ended the CLI, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.status.signal()
    }

    /// The session's HOME (kept until this value is dropped, if it was the
    /// session's own).
    pub fn home(&self) -> &Path {
        self.home.as_ref().map_or(Path::new(""), HomeDir::path)
    }

    /// Events of this `type` (and `subtype`, if given).
    pub fn events_of(&self, kind: &str, subtype: Option<&str>) -> Vec<&Value> {
        self.events
            .iter()
            .filter(|e| e["type"] == kind && subtype.is_none_or(|s| e["subtype"] == s))
            .collect()
    }

    /// The `system/init` event.
    pub fn init(&self) -> Option<&Value> {
        self.events_of("system", Some("init")).into_iter().next()
    }

    /// The first `result` event (the answer to the prompt; later ones answer
    /// peer messages or background tasks).
    pub fn result(&self) -> Option<&Value> {
        self.results().into_iter().next()
    }

    /// The events that end a turn: Claude Code's and Gemini's `result`s,
    /// Codex's `turn.completed` / `turn.failed`.
    pub fn results(&self) -> Vec<&Value> {
        match self.kind {
            CliKind::Claude | CliKind::Gemini => self.events_of("result", None),
            CliKind::Codex => self
                .events
                .iter()
                .filter(|e| e["type"] == "turn.completed" || e["type"] == "turn.failed")
                .collect(),
        }
    }

    /// The first result's text (Codex and Gemini: the last assistant text).
    pub fn result_text(&self) -> Option<&str> {
        match self.kind {
            CliKind::Claude => self.result()?["result"].as_str(),
            CliKind::Codex => self
                .events_of("item.completed", None)
                .into_iter()
                .rev()
                .find(|e| e["item"]["type"] == "agent_message")?["item"]["text"]
                .as_str(),
            CliKind::Gemini => self
                .events_of("message", None)
                .into_iter()
                .rev()
                .find(|e| e["role"] == "assistant")?["content"]
                .as_str(),
        }
    }

    /// Whether the first result is an error.
    pub fn is_error(&self) -> Option<bool> {
        let result = self.result()?;
        match self.kind {
            CliKind::Claude => result["is_error"].as_bool(),
            CliKind::Codex => Some(result["type"] != "turn.completed"),
            CliKind::Gemini => Some(result["status"] != "success"),
        }
    }

    /// The session id, from the init event or else the result (Codex: its
    /// thread id, which its hooks receive as `session_id`).
    pub fn session_id(&self) -> Option<&str> {
        match self.kind {
            CliKind::Claude => self
                .init()
                .or_else(|| self.result())
                .and_then(|e| e["session_id"].as_str()),
            CliKind::Codex => self.events_of("thread.started", None).first()?["thread_id"].as_str(),
            CliKind::Gemini => self.events_of("init", None).first()?["session_id"].as_str(),
        }
    }

    /// Text blocks of the main thread's assistant events, in order.
    pub fn assistant_texts(&self) -> Vec<String> {
        self.events_of("assistant", None)
            .into_iter()
            .filter(|e| e["parent_tool_use_id"].is_null())
            .flat_map(|e| {
                e["message"]["content"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str().map(str::to_string))
            .collect()
    }

    /// Panics, showing the run, unless it exited 0 in time with a result that
    /// is not an error.
    #[track_caller]
    pub fn assert_success(&self) -> &Finished {
        let ok = !self.timed_out && self.exit_code() == Some(0) && self.is_error() == Some(false);
        if !ok {
            panic!("{}", self.describe("expected a successful run"));
        }
        self
    }

    /// A multi-line account of the run for failure messages.
    pub fn describe(&self, headline: &str) -> String {
        let mut out = format!(
            "{headline}: {} (pid {}) {} after {:.1}s{}\n",
            self.label,
            self.pid,
            match (self.exit_code(), self.signal()) {
                (Some(code), _) => format!("exited {code}"),
                (None, Some(sig)) => format!("killed by signal {sig}"),
                _ => "ended".to_string(),
            },
            self.duration.as_secs_f64(),
            if self.timed_out { " (timed out)" } else { "" },
        );
        let tail: Vec<String> = self
            .events
            .iter()
            .rev()
            .take(6)
            .rev()
            .map(|e| {
                let mut line = e.to_string();
                if line.len() > 400 {
                    let cut = (0..=400)
                        .rev()
                        .find(|&i| line.is_char_boundary(i))
                        .unwrap_or(0);
                    line.truncate(cut);
                    line.push_str("...");
                }
                format!("  {line}")
            })
            .collect();
        out.push_str(&format!(
            "last events ({} in all):\n{}\n",
            self.events.len(),
            tail.join("\n")
        ));
        let stderr = self.stderr.trim();
        let stderr_tail: String = {
            let start = stderr.len().saturating_sub(2000);
            let start = (start..=stderr.len())
                .find(|&i| stderr.is_char_boundary(i))
                .unwrap_or(0);
            stderr[start..].to_string()
        };
        out.push_str(&format!("stderr:\n{stderr_tail}"));
        out
    }
}
