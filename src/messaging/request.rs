//! The fields of a `list` or `send` request given as a JSON object — the bus's requests and the
//! MCP tools' arguments alike — checked by one set of rules, the command line's: `limit` an
//! integer 1..=200, `scope` one of three words, booleans booleans, `to` and `message` required
//! strings. A wrong field is a [`BadRequest`] naming it; nothing is sent.

use super::list::{ListRequest, Scope};
use super::send::SendRequest;
use serde_json::{Map, Value};

/// Why a request's fields were not accepted (the `bad_request` message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRequest(pub String);

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The most rows a list returns, and the least.
pub const LIMIT_RANGE: std::ops::RangeInclusive<u64> = 1..=200;

fn opt_bool(v: &Map<String, Value>, key: &str) -> Result<Option<bool>, BadRequest> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(BadRequest(format!("'{key}' must be a boolean"))),
    }
}

/// A string field, or none when absent or null.
pub fn opt_str<'a>(v: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, BadRequest> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(BadRequest(format!("'{key}' must be a string"))),
    }
}

/// `scope`, `include_subagents`, `limit`; absent fields take the command line's defaults.
pub fn list_request(v: &Map<String, Value>) -> Result<ListRequest, BadRequest> {
    let mut req = ListRequest::default();
    if let Some(b) = opt_bool(v, "include_subagents")? {
        req.include_subagents = b;
    }
    match v.get("limit") {
        None | Some(Value::Null) => {}
        Some(n) => match n.as_u64().filter(|n| LIMIT_RANGE.contains(n)) {
            Some(n) => req.limit = n as usize,
            None => {
                return Err(BadRequest(format!(
                    "'limit' must be an integer from {} to {}",
                    LIMIT_RANGE.start(),
                    LIMIT_RANGE.end()
                )));
            }
        },
    }
    req.scope = match opt_str(v, "scope")? {
        None | Some("workspace") => Scope::Workspace,
        Some("machine") => Scope::Machine,
        Some("session") => Scope::Session,
        Some(_) => {
            return Err(BadRequest(
                "'scope' must be workspace, machine or session".into(),
            ));
        }
    };
    Ok(req)
}

/// `to`, `message`, `summary`, `dedupe` (default true).
pub fn send_request(v: &Map<String, Value>) -> Result<SendRequest, BadRequest> {
    let to = opt_str(v, "to")?.unwrap_or_default();
    if to.trim().is_empty() {
        return Err(BadRequest("'to' is required".into()));
    }
    let Some(message) = opt_str(v, "message")? else {
        return Err(BadRequest("'message' is required".into()));
    };
    Ok(SendRequest {
        to: to.to_string(),
        text: message.to_string(),
        summary: opt_str(v, "summary")?.map(str::to_string),
        dedupe: opt_bool(v, "dedupe")?.unwrap_or(true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn defaults_ranges_and_types() {
        let r = list_request(&obj(json!({}))).unwrap();
        assert_eq!(
            (r.scope, r.include_subagents, r.limit),
            (Scope::Workspace, false, 50)
        );
        let r = list_request(&obj(json!({"scope": "machine", "limit": 200}))).unwrap();
        assert_eq!((r.scope, r.limit), (Scope::Machine, 200));
        for bad in [
            json!({"limit": 0}),
            json!({"limit": 201}),
            json!({"limit": 2.5}),
            json!({"limit": "5"}),
            json!({"scope": "galaxy"}),
            json!({"include_subagents": "yes"}),
        ] {
            assert!(list_request(&obj(bad.clone())).is_err(), "{bad}");
        }
        let s = send_request(&obj(json!({"to": "a", "message": "m"}))).unwrap();
        assert!(s.dedupe && s.summary.is_none());
        for bad in [
            json!({"message": "m"}),
            json!({"to": " ", "message": "m"}),
            json!({"to": "a"}),
            json!({"to": "a", "message": 5}),
            json!({"to": "a", "message": "m", "summary": ["x"]}),
        ] {
            assert!(send_request(&obj(bad.clone())).is_err(), "{bad}");
        }
    }
}
