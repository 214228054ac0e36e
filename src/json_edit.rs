//! Format-preserving edits of the JSON files people own and commit (`.claude/settings.json`,
//! `.claude/settings.local.json`, `.mcp.json`): what install adds goes in as one block indented
//! like its neighbours, and everything else — order, indentation, comments (JSONC), blank lines —
//! stays as the person wrote it, so a diff shows only the added block.
//!
//! The files are read as JSON with comments and trailing commas (what the client's own settings
//! files accept), nothing looser. Every edit is planned on the document's value first, so a file
//! of the wrong shape is an error naming the key before any text changes.

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject, CstRootNode};
use serde_json::Value;

/// JSON with comments and trailing commas; no single quotes, bare keys or other JSON5 forms.
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// The value of a JSON (or JSONC) text; an error message when it is not one.
pub fn parse_value(text: &str) -> Result<Value, String> {
    let root = CstRootNode::parse(text, &options()).map_err(|e| e.to_string())?;
    Ok(root.to_serde_value().unwrap_or(Value::Null))
}

/// One document being edited: its syntax tree, which renders back to the text it was read from
/// plus the edits.
pub struct Doc {
    root: CstRootNode,
}

impl Doc {
    /// Reads `text` (`None` or blank: an empty object). The root must be an object.
    pub fn parse(text: Option<&str>) -> Result<Doc, String> {
        let text = match text {
            Some(t) if !t.trim().is_empty() => t,
            _ => "{}\n",
        };
        let root =
            CstRootNode::parse(text, &options()).map_err(|e| format!("not valid JSON ({e})"))?;
        match root.value() {
            Some(v) if v.as_object().is_some() => Ok(Doc { root }),
            _ => Err("not a JSON object".into()),
        }
    }

    /// The document as a value.
    pub fn value(&self) -> Value {
        self.root.to_serde_value().unwrap_or(Value::Null)
    }

    /// The document's text with the edits.
    pub fn text(&self) -> String {
        self.root.to_string()
    }

    /// The root object.
    pub fn object(&self) -> CstObject {
        self.root.object_value_or_set()
    }
}

/// `value` as the syntax tree's input form (object keys in their order).
pub fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(m) => {
            CstInputValue::Object(m.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

/// The value of `obj[key]`, when there is such a key.
pub fn get(obj: &CstObject, key: &str) -> Option<Value> {
    obj.get(key)?.value()?.to_serde_value()
}

/// Sets `obj[key]` to `value`: in place when the key is there, else appended last.
pub fn set(obj: &CstObject, key: &str, value: &Value) {
    match obj.get(key) {
        Some(prop) => prop.set_value(input(value)),
        None => {
            obj.append(key, input(value));
        }
    }
}

/// Removes `obj[key]` (with its comma), if there.
pub fn remove(obj: &CstObject, key: &str) {
    if let Some(prop) = obj.get(key) {
        prop.remove();
    }
}

/// `obj[key]` as an object, created empty (appended last) when missing; `None` when the key
/// holds something else.
pub fn object_at(obj: &CstObject, key: &str) -> Option<CstObject> {
    match obj.get(key) {
        Some(prop) => prop.object_value(),
        None => Some(obj.object_value_or_set(key)),
    }
}

/// `obj[key]` as a list, created empty (appended last) when missing; `None` when the key holds
/// something else.
pub fn array_at(obj: &CstObject, key: &str) -> Option<CstArray> {
    match obj.get(key) {
        Some(prop) => prop.array_value(),
        None => Some(obj.array_value_or_set(key)),
    }
}

/// The elements of a list with their values, in order.
pub fn elements(list: &CstArray) -> Vec<(CstNode, Value)> {
    list.elements()
        .into_iter()
        .map(|n| {
            let v = n.to_serde_value().unwrap_or(Value::Null);
            (n, v)
        })
        .collect()
}

/// Does the object have no properties left?
pub fn is_empty(obj: &CstObject) -> bool {
    obj.properties().is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_appended_key_is_indented_like_its_neighbours_and_the_rest_is_kept() {
        let text = "{\n    // the team's model\n    \"model\": \"opus\",\n\n    \"env\": {\"A\": \"1\"}\n}\n";
        let doc = Doc::parse(Some(text)).unwrap();
        set(
            &doc.object(),
            "statusLine",
            &json!({"type": "command", "command": "x"}),
        );
        let out = doc.text();
        assert!(out.starts_with("{\n    // the team's model\n    \"model\": \"opus\",\n\n    \"env\": {\"A\": \"1\"},\n"), "{out}");
        assert!(
            out.contains("\n    \"statusLine\": {\n        \"type\": \"command\",\n"),
            "{out}"
        );
        assert_eq!(parse_value(&out).unwrap()["model"], "opus");
        remove(&doc.object(), "statusLine");
        assert_eq!(
            parse_value(&doc.text()).unwrap(),
            parse_value(text).unwrap()
        );
    }

    #[test]
    fn only_json_with_comments_and_trailing_commas_is_read() {
        assert!(Doc::parse(Some("{\"a\": 1,}")).is_ok());
        assert!(Doc::parse(Some("{/* x */ \"a\": 1}")).is_ok());
        for bad in [
            "{a: 1}",
            "{'a': 1}",
            "{\"a\": 0x1}",
            "{\"a\": 1 \"b\": 2}",
            "[1]",
            "{\"a\": ",
        ] {
            assert!(Doc::parse(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(Doc::parse(None).unwrap().value(), json!({}));
        assert_eq!(Doc::parse(Some("  \n")).unwrap().value(), json!({}));
    }

    #[test]
    fn keys_of_another_shape_are_not_taken_over() {
        let doc = Doc::parse(Some("{\"hooks\": [], \"list\": {}}")).unwrap();
        assert!(object_at(&doc.object(), "hooks").is_none());
        assert!(array_at(&doc.object(), "list").is_none());
        assert!(object_at(&doc.object(), "new").is_some());
        assert_eq!(doc.value(), json!({"hooks": [], "list": {}, "new": {}}));
    }
}
