//! The fields of a `list` or `send` request given as JSON — a bus request and an MCP tool's
//! arguments alike — read by one set of rules, the command line's: `limit` an integer
//! 1..=[`MAX_LIMIT`](super::list::MAX_LIMIT), `scope` one of three words, booleans booleans,
//! `to` and `message` required strings, and no field besides these. A wrong or unknown field is
//! a [`BadRequest`] naming it; nothing is sent.

use super::list::{ListRequest, MAX_LIMIT, Scope};
use super::send::SendRequest;
use serde_json::Value;

/// Why a request's fields were not accepted (the `bad_request` message).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadRequest(pub String);

impl std::fmt::Display for BadRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The fields of a list (as on the command line); any other is refused, naming it.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ListFields {
    #[serde(default)]
    scope: Option<Scope>,
    #[serde(default)]
    include_subagents: Option<bool>,
    #[serde(default)]
    limit: Option<u16>,
}

/// The fields of a send (as on the command line); any other is refused, naming it (a `from`
/// names no sender: the token does).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SendFields {
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    summary: Option<String>,
    #[serde(default)]
    dedupe: Option<bool>,
}

/// What a parsed request asks.
#[derive(Debug)]
pub enum Op {
    List(ListRequest),
    Send(SendRequest),
}

/// The fields of `v` as `T`; a wrong one is named.
fn fields<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, BadRequest> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let at = e.path().to_string();
        BadRequest(if at == "." {
            e.inner().to_string()
        } else {
            format!("'{at}': {}", e.inner())
        })
    })
}

/// Reads the request in `v`: an object whose `op` is `list` or `send`, with that operation's
/// fields (absent ones take the command line's defaults).
pub fn parse(mut v: Value) -> Result<Op, BadRequest> {
    let Some(obj) = v.as_object_mut() else {
        return Err(BadRequest("the request must be a JSON object".into()));
    };
    let op = match obj.remove("op") {
        Some(Value::String(op)) => op,
        None | Some(Value::Null) => {
            return Err(BadRequest("'op' is required: list or send".into()));
        }
        Some(other) => {
            return Err(BadRequest(format!(
                "'op' must be list or send, not {other}"
            )));
        }
    };
    Ok(match op.as_str() {
        "list" => {
            let f: ListFields = fields(v)?;
            let limit = f.limit.unwrap_or(50);
            if !(1..=MAX_LIMIT).contains(&limit) {
                return Err(BadRequest(format!(
                    "'limit' must be an integer from 1 to {MAX_LIMIT}"
                )));
            }
            Op::List(ListRequest {
                scope: f.scope.unwrap_or_default(),
                include_subagents: f.include_subagents.unwrap_or(false),
                limit: limit as usize,
            })
        }
        "send" => {
            let f: SendFields = fields(v)?;
            let Some(to) = f.to.filter(|t| !t.trim().is_empty()) else {
                return Err(BadRequest("'to' is required".into()));
            };
            let Some(text) = f.message else {
                return Err(BadRequest("'message' is required".into()));
            };
            Op::Send(SendRequest {
                to,
                text,
                summary: f.summary,
                dedupe: f.dedupe.unwrap_or(true),
            })
        }
        other => {
            return Err(BadRequest(format!(
                "'op' must be list or send, not '{other}'"
            )));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_ranges_and_types() {
        let Ok(Op::List(r)) = parse(json!({"op": "list"})) else {
            panic!()
        };
        assert_eq!(
            (r.scope, r.include_subagents, r.limit),
            (Scope::Workspace, false, 50)
        );
        let Ok(Op::List(r)) = parse(json!({"op": "list", "scope": "machine", "limit": 200})) else {
            panic!()
        };
        assert_eq!((r.scope, r.limit), (Scope::Machine, 200));
        for bad in [
            json!({"op": "list", "limit": 0}),
            json!({"op": "list", "limit": 201}),
            json!({"op": "list", "limit": 2.5}),
            json!({"op": "list", "limit": "5"}),
            json!({"op": "list", "scope": "galaxy"}),
            json!({"op": "list", "include_subagents": "yes"}),
            json!({"op": "dance"}),
            json!({"op": "send", "message": "m"}),
            json!({"op": "send", "to": " ", "message": "m"}),
            json!({"op": "send", "to": "a"}),
            json!({"op": "send", "to": "a", "message": 5}),
            json!({"op": "send", "to": "a", "message": "m", "summary": ["x"]}),
            json!({"op": "send", "to": "a", "message": "m", "from": "b"}),
            json!({"op": "list", "limt": 5}),
        ] {
            assert!(parse(bad.clone()).is_err(), "{bad}");
        }
        // Each wrong field is named.
        for (bad, field) in [
            (json!({"op": "list", "limit": "5"}), "'limit'"),
            (json!({"op": "list", "scope": 3}), "'scope'"),
            (json!({"op": "send", "to": "a", "message": 5}), "'message'"),
            (
                json!({"op": "send", "to": "a", "message": "m", "dedupe": "no"}),
                "'dedupe'",
            ),
            (json!({"op": "dance"}), "'op'"),
        ] {
            let e = parse(bad.clone()).unwrap_err();
            assert!(e.0.starts_with(field), "{bad}: {e}");
        }
        let Ok(Op::Send(s)) = parse(json!({"op": "send", "to": "a", "message": "m"})) else {
            panic!()
        };
        assert!(s.dedupe && s.summary.is_none());
    }
}
