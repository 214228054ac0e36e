//! The hook payload on stdin (see PROTOCOL.md for the fields used). Claude Code's is the
//! guard's own form; a Codex CLI or Gemini CLI payload is read into it ([`crate::clients::call`]),
//! so the same checks decide every client's calls.

use crate::clients::call::{self, FileWrite};
use crate::clients::{Client, Event};
use crate::words::{HookEvent, PermissionMode, Tool};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};
use std::cell::Cell;

/// How deep the guard reads a payload that is deeper than the JSON reader's own limit (128):
/// every field the checks need sits far above this. Below it, values read as [`CUT`].
pub const MAX_DEPTH: usize = 64;

/// What a value below [`MAX_DEPTH`] reads as.
pub const CUT: &str = "<deeper than the guard reads>";

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
    /// The client that wrote the payload.
    #[serde(skip)]
    pub client: Client,
    /// The files another client's file tool writes (a Codex patch, Gemini's `write_file` and
    /// `replace`), with what each becomes: the write checks take these instead of the input's
    /// path keys.
    #[serde(skip)]
    pub writes: Vec<FileWrite>,
    /// Another client's tool input the guard cannot read (why, for the model): refused.
    #[serde(skip)]
    pub unreadable: Option<String>,
    /// Some value lay deeper than [`MAX_DEPTH`] and reads as [`CUT`]: the checks decide on the
    /// fields they need, and a call whose fields are not known (an MCP tool) is blocked.
    #[serde(skip)]
    pub cut: bool,
}

/// Reads a JSON value no deeper than `left` more levels; a deeper one is skipped (serde_json
/// skips without recursing, so no depth limit applies) and reads as [`CUT`].
struct Capped<'a> {
    left: usize,
    cut: &'a Cell<bool>,
}

impl<'de> DeserializeSeed<'de> for Capped<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        if self.left == 0 {
            d.deserialize_ignored_any(IgnoredAny)?;
            self.cut.set(true);
            return Ok(Value::String(CUT.into()));
        }
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Capped<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(self.deeper())? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(self.deeper())?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

impl Capped<'_> {
    fn deeper(&self) -> Self {
        Capped {
            left: self.left - 1,
            cut: self.cut,
        }
    }
}

/// `bytes` as a JSON value, read to [`MAX_DEPTH`] levels; true when something lay deeper.
fn capped_value(bytes: &[u8]) -> serde_json::Result<(Value, bool)> {
    let cut = Cell::new(false);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let v = Capped {
        left: MAX_DEPTH,
        cut: &cut,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((v, cut.get()))
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
    /// Parses stdin. Anything that is not a JSON object is an error (the guard then allows: the
    /// client writes the payload, an agent cannot make it other than JSON). A payload nested
    /// deeper than [`MAX_DEPTH`] is read down to it (see [`Payload::cut`]).
    /// The object is read as a map first, so a repeated key means its last value, as
    /// `JSON.parse` reads it, instead of failing the whole payload.
    pub fn parse(bytes: &[u8]) -> Result<Payload, String> {
        let bytes = lone_surrogates_replaced(bytes);
        // Nearly every payload is shallow: the plain reader first, the capped one only for a
        // payload deeper than the plain reader's limit (an agent can nest a tool's input).
        let (raw, cut) = match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => (v, false),
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
                capped_value(&bytes).map_err(|e| format!("payload is not JSON: {e}"))?
            }
            Err(e) => return Err(format!("payload is not JSON: {e}")),
        };
        if !raw.is_object() {
            return Err("payload is not a JSON object".into());
        }
        let mut p = match Client::detect(&raw) {
            Client::Claude => serde_json::from_value(raw)
                .map_err(|e| format!("payload is not a hook payload: {e}"))?,
            _ => Payload::of_other_client(raw),
        };
        p.cut = cut;
        Ok(p)
    }

    /// A Codex or Gemini payload in the guard's terms: the event by Claude Code's name, a shell
    /// tool as `Bash {command}` in the folder it runs in, a file tool's writes in `writes`, an
    /// MCP tool by Claude Code's name form; every other tool keeps its own name (the guard has
    /// nothing to check in it).
    fn of_other_client(raw: Value) -> Payload {
        let read = call::read(&raw);
        let mut p: Payload = serde_json::from_value(raw).unwrap_or_default();
        p.client = read.client;
        if read.event != Event::Other {
            p.event = HookEvent::parse(read.event.claude_name());
        }
        p.session_id = read.session_id;
        p.cwd = read.cwd;
        match read.tool {
            call::Tool::Native | call::Tool::None | call::Tool::Other(_) => {}
            call::Tool::Shell { command } => {
                p.tool_name = Tool::Bash;
                p.tool_input = serde_json::json!({ "command": command });
            }
            call::Tool::Files(writes) => p.writes = writes,
            call::Tool::Mcp { name, input } => {
                p.tool_name = Tool::parse(&name);
                p.tool_input = input;
            }
            call::Tool::Unreadable(why) => p.unreadable = Some(why),
        }
        p
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
        assert!(!p.cut);
    }

    #[test]
    fn a_payload_deeper_than_the_reader_is_read_on_its_shallow_fields() {
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let raw = format!(
            r#"{{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{{"command":"rm -rf dist","x":{deep}}},"tool_input":{{"command":"rm -rf dist","x":{deep}}}}}"#
        );
        assert!(
            serde_json::from_str::<Value>(&raw).is_err(),
            "deeper than serde_json reads"
        );
        let p = Payload::parse(raw.as_bytes()).unwrap();
        assert!(p.cut);
        assert_eq!(p.input_str("command"), Some("rm -rf dist"));
        let mut v = &p.tool_input["x"];
        let mut depth = 2;
        while let Some(inner) = v.get(0) {
            v = inner;
            depth += 1;
        }
        assert_eq!((depth, v.as_str()), (MAX_DEPTH, Some(CUT)));
        // Broken JSON under the limit is still broken.
        let broken = format!(r#"{{"a":{}}}"#, "[".repeat(200));
        assert!(Payload::parse(broken.as_bytes()).is_err());
    }
}
