//! The coding-agent CLIs whose sessions the guard serves, and everything that differs between
//! them: how a hook payload names the event and the tool call, how an answer must be written to
//! be honoured, which process is the session's client, and which config file wires the hook.
//!
//! | | Claude Code | Codex CLI (0.171) | Gemini CLI (0.61) |
//! |---|---|---|---|
//! | pre-tool event | `PreToolUse` | `PreToolUse` | `BeforeTool` |
//! | other events | `PostToolUse`, `UserPromptSubmit`, `Stop`, `SessionStart`, `SessionEnd` | the same names | `AfterTool`, `BeforeAgent`, `AfterAgent`, `SessionStart`, `SessionEnd` |
//! | shell tool | `Bash` `{command}` | `Bash` `{command}` (cwd per call) | `run_shell_command` `{command, dir_path?}` |
//! | file tools | `Write`, `Edit`, `MultiEdit`, … | `apply_patch` `{command: <patch>}` | `write_file`, `replace` |
//! | MCP tools | `mcp__<server>__<tool>` | `mcp__<server>__<tool>` | `mcp_<server>_<tool>` (+ `mcp_context`) |
//! | a deny it honours | JSON `permissionDecision`, or exit 2 | the same | top-level `decision`, or exit 2 |
//! | client process | `CLAUDE_PID` | the `codex` binary above the hook | the `node … gemini.js` above the hook |
//!
//! The payload is told apart by what only one client writes ([`Client::detect`]); it is read into
//! the call the guard checks ([`call`]); Codex's patch envelope has its own reader ([`patch`]);
//! the answer is rendered for the client ([`answer`]); the client process is found over the
//! parent chain ([`process`]). Everything but [`process`] is pure: no files, no processes.

pub mod answer; // allow / deny / rewrite / context, written the way each client honours it
pub mod call; // a payload → the event and the tool call the guard checks
pub mod patch; // Codex's patch envelope: the files an apply_patch adds, updates, deletes, moves
pub mod process; // the client process of a session without CLAUDE_PID, from the parent chain

use serde_json::Value;

/// A client CLI the guard serves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Client {
    /// The guard's own payload form, and what an unknown payload is read as.
    #[default]
    Claude,
    Codex,
    Gemini,
}

/// Every client, in the order `guard install` wires them.
pub const ALL: [Client; 3] = [Client::Claude, Client::Codex, Client::Gemini];

/// Events only Gemini CLI sends.
const GEMINI_EVENTS: [&str; 8] = [
    "BeforeTool",
    "AfterTool",
    "BeforeAgent",
    "AfterAgent",
    "BeforeModel",
    "AfterModel",
    "BeforeToolSelection",
    "PreCompress",
];

impl Client {
    /// The short name (`claude`, `codex`, `gemini`): `guard install --agent`, the registry.
    pub fn name(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }

    /// The name people know it by.
    pub fn label(self) -> &'static str {
        match self {
            Client::Claude => "Claude Code",
            Client::Codex => "Codex CLI",
            Client::Gemini => "Gemini CLI",
        }
    }

    /// The client a short name names (`claude-code` and `claude` both Claude Code).
    pub fn from_name(name: &str) -> Option<Client> {
        match name.to_ascii_lowercase().as_str() {
            "claude" | "claude-code" => Some(Client::Claude),
            "codex" => Some(Client::Codex),
            "gemini" => Some(Client::Gemini),
            _ => None,
        }
    }

    /// The executable a person runs (looked for on `PATH` by `guard install`).
    pub fn program(self) -> &'static str {
        match self {
            Client::Claude => "claude",
            Client::Codex => "codex",
            Client::Gemini => "gemini",
        }
    }

    /// The client that wrote a hook payload (a JSON object), from what only it writes:
    /// Gemini's own event names, or its `timestamp` on the events the three share; Codex's
    /// `turn_id`, or its transcript file (`…/sessions/YYYY/MM/DD/rollout-….jsonl`). Anything else
    /// is Claude Code's, read as it always was.
    pub fn detect(raw: &Value) -> Client {
        let event = raw.get("hook_event_name").and_then(Value::as_str);
        if event.is_some_and(|e| GEMINI_EVENTS.contains(&e))
            || raw.get("timestamp").is_some_and(Value::is_string)
        {
            return Client::Gemini;
        }
        let transcript = raw
            .get("transcript_path")
            .and_then(Value::as_str)
            .unwrap_or("");
        let file = transcript.rsplit(['/', '\\']).next().unwrap_or("");
        if raw.get("turn_id").is_some_and(Value::is_string)
            || (file.starts_with("rollout-") && file.ends_with(".jsonl"))
        {
            return Client::Codex;
        }
        Client::Claude
    }
}

impl std::fmt::Display for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// A hook event as the guard handles it, whatever the client calls it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Before a tool runs: the one event whose answer can refuse.
    PreTool,
    PostTool,
    /// The user's prompt reaches the model (Claude's `UserPromptSubmit`, Gemini's `BeforeAgent`).
    Prompt,
    /// The model finished its turn (Claude's `Stop`, Gemini's `AfterAgent`).
    Stop,
    SessionStart,
    SessionEnd,
    /// An event the guard does not handle.
    Other,
}

/// The events the guard handles, in the order install wires them.
pub const EVENTS: [Event; 6] = [
    Event::PreTool,
    Event::PostTool,
    Event::SessionStart,
    Event::SessionEnd,
    Event::Prompt,
    Event::Stop,
];

impl Event {
    /// The event `client` calls `name`.
    pub fn of(client: Client, name: &str) -> Event {
        EVENTS
            .into_iter()
            .find(|e| e.name_for(client) == name)
            .unwrap_or(Event::Other)
    }

    /// What `client` calls this event (`""` for [`Event::Other`]).
    pub fn name_for(self, client: Client) -> &'static str {
        let gemini = client == Client::Gemini;
        match self {
            Event::PreTool if gemini => "BeforeTool",
            Event::PostTool if gemini => "AfterTool",
            Event::Prompt if gemini => "BeforeAgent",
            Event::Stop if gemini => "AfterAgent",
            Event::PreTool => "PreToolUse",
            Event::PostTool => "PostToolUse",
            Event::Prompt => "UserPromptSubmit",
            Event::Stop => "Stop",
            Event::SessionStart => "SessionStart",
            Event::SessionEnd => "SessionEnd",
            Event::Other => "",
        }
    }

    /// Claude Code's name, the one the rest of the suite speaks.
    pub fn claude_name(self) -> &'static str {
        self.name_for(Client::Claude)
    }

    /// Whether the event is about one tool call (and its matcher says which tools).
    pub fn is_tool(self) -> bool {
        matches!(self, Event::PreTool | Event::PostTool)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_client_is_told_from_its_own_payloads() {
        // As the research recorded them (paths shortened).
        let codex_pre = json!({"session_id":"01a23ac9-e795-7bd1-bfe7-13959fefd4ad",
            "turn_id":"01a23ac9-e7d1-73c0-9ad5-539b5d638d2b",
            "transcript_path":"/h/sessions/2026/12/03/rollout-2026-12-03T07-24-00-01a23ac9.jsonl",
            "cwd":"/p","hook_event_name":"PreToolUse","model":"gpt-5.5",
            "permission_mode":"bypassPermissions","tool_name":"Bash",
            "tool_input":{"command":"echo HIJACK > target.txt"},"tool_use_id":"call_1"});
        let codex_end = json!({"session_id":"s",
            "transcript_path":"/h/sessions/2026/12/03/rollout-2026-12-03T07-24-00-01a23ac9.jsonl",
            "cwd":"/p","hook_event_name":"SessionEnd","reason":"other"});
        let gemini_pre = json!({"session_id":"6da5eb93-77b9-46c0-b447-17521112be00",
            "transcript_path":"/h/.gemini/tmp/proj/chats/session-2026-12-03T07-25-6da5eb93.jsonl",
            "cwd":"/p","hook_event_name":"BeforeTool","timestamp":"2026-12-03T07:25:43.130Z",
            "tool_name":"run_shell_command","tool_input":{"command":"echo HIJACK > target.txt"}});
        let gemini_start = json!({"session_id":"s","cwd":"/p","hook_event_name":"SessionStart",
            "timestamp":"2026-12-03T07:25:43.130Z","source":"startup"});
        let claude_pre = json!({"session_id":"s","transcript_path":"/h/.claude/projects/-p/s.jsonl",
            "cwd":"/p","permission_mode":"default","hook_event_name":"PreToolUse",
            "tool_name":"Bash","tool_input":{"command":"ls"}});
        let claude_start = json!({"session_id":"s","hook_event_name":"SessionStart",
            "source":"startup","model":"claude-opus-5-5"});
        assert_eq!(Client::detect(&codex_pre), Client::Codex);
        assert_eq!(Client::detect(&codex_end), Client::Codex);
        assert_eq!(Client::detect(&gemini_pre), Client::Gemini);
        assert_eq!(Client::detect(&gemini_start), Client::Gemini);
        assert_eq!(Client::detect(&claude_pre), Client::Claude);
        assert_eq!(Client::detect(&claude_start), Client::Claude);
        assert_eq!(Client::detect(&json!({})), Client::Claude);
        // A field of the wrong type proves nothing.
        assert_eq!(
            Client::detect(&json!({"turn_id": 1, "timestamp": 2})),
            Client::Claude
        );
    }

    #[test]
    fn events_map_both_ways() {
        for client in ALL {
            for event in EVENTS {
                assert_eq!(Event::of(client, event.name_for(client)), event);
            }
            assert_eq!(Event::of(client, "Notification"), Event::Other);
        }
        assert_eq!(Event::of(Client::Gemini, "BeforeTool"), Event::PreTool);
        assert_eq!(Event::of(Client::Gemini, "PreToolUse"), Event::Other);
        assert_eq!(Event::of(Client::Codex, "PreToolUse"), Event::PreTool);
        assert_eq!(Event::Stop.name_for(Client::Gemini), "AfterAgent");
        assert_eq!(Event::Prompt.claude_name(), "UserPromptSubmit");
        assert_eq!(Client::from_name("Claude-Code"), Some(Client::Claude));
        assert_eq!(Client::from_name("cursor"), None);
    }
}
