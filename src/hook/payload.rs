//! The hook payload Claude Code writes on stdin (see PROTOCOL.md for the fields used).

use crate::words::{HookEvent, PermissionMode, Tool};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The fields of a hook payload the suite uses. A field that is missing, `null` or not a string
/// reads as empty: only the guard's decisions give it meaning.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Payload {
    #[serde(rename = "hook_event_name", default, deserialize_with = "word")]
    pub event: HookEvent,
    #[serde(default, deserialize_with = "text")]
    pub session_id: String,
    #[serde(default, deserialize_with = "text")]
    pub cwd: String,
    #[serde(default, deserialize_with = "word")]
    pub tool_name: Tool,
    #[serde(default)]
    pub tool_input: Value,
    #[serde(default, deserialize_with = "text")]
    pub transcript_path: String,
    #[serde(default, deserialize_with = "word")]
    pub permission_mode: PermissionMode,
    /// Set only for calls made inside a subagent.
    #[serde(default, deserialize_with = "maybe_text")]
    pub agent_id: Option<String>,
}

/// The value of four hex digits at `b[i..i + 4]`.
fn hex4(b: &[u8], i: usize) -> Option<u16> {
    let digits = std::str::from_utf8(b.get(i..i + 4)?).ok()?;
    u16::from_str_radix(digits, 16).ok()
}

/// Node's `JSON.stringify` writes a lone UTF-16 surrogate (half of a split emoji) as `\udXXX`,
/// which strict JSON readers reject. Each lone one becomes `\ufffd` (U+FFFD), as a lenient
/// decoder would read it; pairs and every other byte stay as they are.
pub fn lone_surrogates_replaced(b: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let mut out: Option<Vec<u8>> = None;
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        if b.get(i + 1) != Some(&b'u') {
            i += 2; // any other escape, `\\` included
            continue;
        }
        let Some(unit) = hex4(b, i + 2) else {
            i += 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&unit);
        let low = (0xDC00..0xE000).contains(&unit);
        let paired = high
            && b.get(i + 6) == Some(&b'\\')
            && b.get(i + 7) == Some(&b'u')
            && hex4(b, i + 8).is_some_and(|n| (0xDC00..0xE000).contains(&n));
        if paired {
            i += 12;
        } else if high || low {
            let o = out.get_or_insert_with(|| Vec::with_capacity(b.len()));
            o.extend_from_slice(&b[copied..i]);
            o.extend_from_slice(b"\\ufffd");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    match out {
        None => std::borrow::Cow::Borrowed(b),
        Some(mut o) => {
            o.extend_from_slice(&b[copied..]);
            std::borrow::Cow::Owned(o)
        }
    }
}

/// A string field, or empty for anything else (a number, an object, `null`).
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(maybe_text(d)?.unwrap_or_default())
}

/// A word of the client's (an event, a tool, a mode), read like [`text`].
fn word<'de, D: Deserializer<'de>, T: From<String>>(d: D) -> Result<T, D::Error> {
    Ok(T::from(maybe_text(d)?.unwrap_or_default()))
}

fn maybe_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

impl Payload {
    /// Parses stdin. Anything that is not a JSON object is an error (the guard then allows).
    /// The object is read as a map first, so a repeated key means its last value, as
    /// `JSON.parse` reads it, instead of failing the whole payload.
    pub fn parse(bytes: &[u8]) -> Result<Payload, String> {
        let bytes = lone_surrogates_replaced(bytes);
        let raw: Value =
            serde_json::from_slice(&bytes).map_err(|e| format!("payload is not JSON: {e}"))?;
        if !raw.is_object() {
            return Err("payload is not a JSON object".into());
        }
        serde_json::from_value(raw).map_err(|e| format!("payload is not a hook payload: {e}"))
    }

    /// A string field of `tool_input`.
    pub fn input_str(&self, key: &str) -> Option<&str> {
        self.tool_input.get(key).and_then(Value::as_str)
    }

    /// The MCP tool part of `mcp__<server>__<tool>`, if this is an MCP call: the last `__`
    /// component, so a server name holding `__` cannot hide the tool.
    pub fn mcp_tool(&self) -> Option<&str> {
        self.tool_name.mcp_tool()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_the_replacement_character() {
        let p = Payload::parse(
            br#"{"tool_name":"Bash","tool_input":{"command":"git add -A # \ud83d"}}"#,
        )
        .unwrap();
        assert_eq!(p.input_str("command"), Some("git add -A # \u{fffd}"));
        let p =
            Payload::parse(br#"{"tool_input":{"content":"\udc00x\ud83d\ude00 \\ud83d"}}"#).unwrap();
        assert_eq!(p.input_str("content"), Some("\u{fffd}x\u{1f600} \\ud83d"));
        let plain = br#"{"a":"\u00e9\n"}"#;
        assert!(matches!(
            lone_surrogates_replaced(plain),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(&*lone_surrogates_replaced(br#""\ud83d\""#), br#""\ufffd\""#);
    }

    #[test]
    fn fields_read_leniently_and_a_repeated_key_means_its_last_value() {
        let p = Payload::parse(
            br#"{"hook_event_name":"PreToolUse","session_id":7,"cwd":null,"agent_id":{},
                "tool_name":"Edit","tool_name":"Write","tool_input":{"file_path":"a"},
                "transcript_path":"/t.jsonl","permission_mode":"plan","extra":[1]}"#,
        )
        .unwrap();
        assert_eq!(p.event, HookEvent::PreToolUse);
        assert_eq!((p.session_id.as_str(), p.cwd.as_str()), ("", ""));
        assert_eq!(p.agent_id, None);
        assert_eq!(p.tool_name, Tool::Write);
        assert_eq!(p.input_str("file_path"), Some("a"));
        assert_eq!(p.transcript_path, "/t.jsonl");
        assert_eq!(p.permission_mode, PermissionMode::Plan);
        let sub = Payload::parse(br#"{"agent_id":"a-1"}"#).unwrap();
        assert_eq!(sub.agent_id.as_deref(), Some("a-1"));
        assert_eq!(sub.tool_input, Value::Null);
        for bad in [&b"[1]"[..], b"\"x\"", b"{", b""] {
            assert!(Payload::parse(bad).is_err(), "{bad:?}");
        }
    }
}
