//! The JSON entries install adds and uninstall takes out again, each edited in the file's own
//! text (`json_edit`), so a diff shows only the added block:
//!
//! ```text
//! .claude/settings.json        hooks.<event>: one guard group per event (others' kept)
//! .mcp.json                    mcpServers.session-lock: the messaging tools' server
//! .claude/settings.local.json  enabledMcpjsonServers: ["session-lock"] (so an interactive
//!                              client loads that one server without asking), and statusLine
//!                              when no settings file the session reads has one
//! ```
//!
//! Every add first takes out an older entry of ours (a guard at another path), so running it
//! again updates rather than duplicates; every strip takes out only what is ours.

use super::{EVENTS, STATUSLINE_REFRESH_S, is_guard_command};
use crate::json_edit::{self as je, Doc};
use crate::messaging::mcp::SERVER_NAME;
use serde_json::{Map, Value, json};

fn is_guard_entry(v: &Value) -> bool {
    v.get("command")
        .and_then(Value::as_str)
        .is_some_and(is_guard_command)
}

/// Takes every guard entry out of `hooks`, and the groups, event lists and `hooks` object that
/// held only guard entries.
pub fn strip_hooks(doc: &Doc) -> Result<(), String> {
    let root = doc.object();
    let Some(prop) = root.get("hooks") else {
        return Ok(());
    };
    let Some(hooks) = prop.object_value() else {
        return Err("\"hooks\" is not an object".into());
    };
    let mut emptied = false;
    for (event, _) in EVENTS {
        let Some(p) = hooks.get(event) else {
            continue;
        };
        let Some(groups) = p.array_value() else {
            return Err(format!("\"hooks.{event}\" is not a list"));
        };
        let mut took = false;
        for (node, value) in je::elements(&groups) {
            let Some(inner) = value.get("hooks").and_then(Value::as_array) else {
                continue;
            };
            let ours = inner.iter().filter(|h| is_guard_entry(h)).count();
            if ours == 0 {
                continue;
            }
            took = true;
            if ours == inner.len() {
                node.remove();
                continue;
            }
            if let Some(list) = node.as_object().and_then(|g| g.array_value("hooks")) {
                for (h, v) in je::elements(&list) {
                    if is_guard_entry(&v) {
                        h.remove();
                    }
                }
            }
        }
        if took && groups.elements().is_empty() {
            p.remove();
            emptied = true;
        }
    }
    if emptied && je::is_empty(&hooks) {
        prop.remove();
    }
    Ok(())
}

/// One event's group: `{matcher?, hooks: [{type, command, timeout}]}`.
fn group(matcher: Option<&str>, command: &str, timeout_s: u64) -> Value {
    let mut g = Map::new();
    if let Some(m) = matcher {
        g.insert("matcher".into(), json!(m));
    }
    g.insert(
        "hooks".into(),
        json!([{"type": "command", "command": command, "timeout": timeout_s}]),
    );
    Value::Object(g)
}

/// The guard's group appended to every event's list (older guard entries taken out first).
pub fn add_hooks(doc: &Doc, command: &str, timeout_s: u64) -> Result<(), String> {
    strip_hooks(doc)?;
    let hooks = je::object_at(&doc.object(), "hooks").ok_or("\"hooks\" is not an object")?;
    for (event, matcher) in EVENTS {
        let list = je::array_at(&hooks, event)
            .ok_or_else(|| format!("\"hooks.{event}\" is not a list"))?;
        list.append(je::input(&group(matcher, command, timeout_s)));
    }
    Ok(())
}

/// `mcpServers.session-lock` set to `entry` (other servers kept).
pub fn add_server(doc: &Doc, entry: &Value) -> Result<(), String> {
    let servers =
        je::object_at(&doc.object(), "mcpServers").ok_or("\"mcpServers\" is not an object")?;
    je::set(&servers, SERVER_NAME, entry);
    Ok(())
}

/// Takes `mcpServers.session-lock` out (and `mcpServers` when it held only that).
pub fn strip_server(doc: &Doc) -> Result<(), String> {
    let root = doc.object();
    let Some(prop) = root.get("mcpServers") else {
        return Ok(());
    };
    if let Some(servers) = prop.object_value()
        && servers.get(SERVER_NAME).is_some()
    {
        je::remove(&servers, SERVER_NAME);
        if je::is_empty(&servers) {
            prop.remove();
        }
    }
    Ok(())
}

/// This server in `enabledMcpjsonServers`, once.
pub fn add_approval(doc: &Doc) -> Result<(), String> {
    let list = je::array_at(&doc.object(), "enabledMcpjsonServers")
        .ok_or("\"enabledMcpjsonServers\" is not a list")?;
    if !je::elements(&list)
        .iter()
        .any(|(_, v)| v.as_str() == Some(SERVER_NAME))
    {
        list.append(SERVER_NAME.into());
    }
    Ok(())
}

/// Takes this server out of `enabledMcpjsonServers` (and the list when it held only that).
pub fn strip_approval(doc: &Doc) -> Result<(), String> {
    let root = doc.object();
    let Some(prop) = root.get("enabledMcpjsonServers") else {
        return Ok(());
    };
    let Some(list) = prop.array_value() else {
        return Ok(());
    };
    let mut took = false;
    for (node, v) in je::elements(&list) {
        if v.as_str() == Some(SERVER_NAME) {
            node.remove();
            took = true;
        }
    }
    if took && list.elements().is_empty() {
        prop.remove();
    }
    Ok(())
}

/// Is this `statusLine` command ours (`status --statusline`, through the launcher or by path)?
pub fn is_statusline_command(cmd: &str) -> bool {
    let cmd = cmd.trim();
    if !cmd.contains("--statusline") {
        return false;
    }
    if cmd.contains("session-lock/guard-hook") {
        return true;
    }
    crate::shell::word::command_name(super::command_program(cmd)) == "status"
}

/// A settings value's `statusLine` command, when it sets one.
pub fn statusline_of(settings: &Value) -> Option<&str> {
    settings
        .get("statusLine")?
        .get("command")
        .and_then(Value::as_str)
}

/// The `statusLine` install writes.
pub fn statusline(command: &str) -> Value {
    json!({"type": "command", "command": command, "refreshInterval": STATUSLINE_REFRESH_S})
}

/// `statusLine` set to ours. The caller has made sure no other status line is there.
pub fn add_statusline(doc: &Doc, command: &str) -> Result<(), String> {
    je::set(&doc.object(), "statusLine", &statusline(command));
    Ok(())
}

/// Takes `statusLine` out when it is ours.
pub fn strip_statusline(doc: &Doc) -> Result<(), String> {
    if statusline_of(&doc.value()).is_some_and(is_statusline_command) {
        je::remove(&doc.object(), "statusLine");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json_edit::parse_value;
    use crate::tools::guard::{HOOK_COMMAND, STATUSLINE_COMMAND};

    fn edited(text: &str, edit: impl Fn(&Doc) -> Result<(), String>) -> (Value, String) {
        let doc = Doc::parse(Some(text)).unwrap();
        edit(&doc).unwrap();
        (doc.value(), doc.text())
    }

    #[test]
    fn hooks_are_added_after_others_and_stripped_back_to_the_same_text() {
        let own = "{\n  \"model\": \"x\",\n  \"hooks\": {\n    \"PreToolUse\": [\n      {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"other-hook\"}]}\n    ]\n  }\n}\n";
        let (once, text) = edited(own, |d| add_hooks(d, HOOK_COMMAND, 10));
        assert_eq!(once["model"], "x");
        let pre = once["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2);
        assert_eq!(pre[0]["hooks"][0]["command"], "other-hook");
        assert_eq!(pre[1]["matcher"], "*");
        assert_eq!(pre[1]["hooks"][0]["timeout"], 10);
        assert!(once["hooks"]["Stop"][0].get("matcher").is_none());
        let (twice, _) = edited(&text, |d| add_hooks(d, HOOK_COMMAND, 10));
        assert_eq!(twice, once, "idempotent");
        let (moved, _) = edited(&text, |d| add_hooks(d, "'/new place/guard'", 10));
        let pre = moved["hooks"]["PreToolUse"].as_array().unwrap();
        assert_eq!(pre.len(), 2, "old guard entry replaced, not duplicated");
        assert_eq!(pre[1]["hooks"][0]["command"], "'/new place/guard'");
        let (_, back) = edited(&text, strip_hooks);
        assert_eq!(back, own, "strip undoes add, byte for byte");
        // An object written on one line has to open up for the block; strip gives its value
        // back (uninstall restores the bytes from the backup).
        let inline = r#"{"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "n"}]}]}}"#;
        let (_, text) = edited(inline, |d| add_hooks(d, HOOK_COMMAND, 10));
        let (back, _) = edited(&text, strip_hooks);
        assert_eq!(back, parse_value(inline).unwrap());
    }

    #[test]
    fn a_guard_entry_sharing_a_group_goes_alone() {
        let text = r#"{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}, {"type": "command", "command": "/u/bin/guard"}]}], "Notification": []}}"#;
        let (v, _) = edited(text, strip_hooks);
        assert_eq!(
            v,
            json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}], "Notification": []}})
        );
    }

    #[test]
    fn bad_shapes_are_errors() {
        for bad in [r#"{"hooks": []}"#, r#"{"hooks": {"Stop": {}}}"#] {
            let doc = Doc::parse(Some(bad)).unwrap();
            assert!(add_hooks(&doc, "g", 1).is_err(), "{bad}");
        }
        let doc = Doc::parse(Some(r#"{"mcpServers": []}"#)).unwrap();
        assert!(add_server(&doc, &json!({})).is_err());
        let doc = Doc::parse(Some(r#"{"enabledMcpjsonServers": "x"}"#)).unwrap();
        assert!(add_approval(&doc).is_err());
    }

    #[test]
    fn server_approval_and_status_line_come_and_go() {
        let own = "{\n    \"mcpServers\": {\n        \"other\": {\"command\": \"x\"}\n    }\n}\n";
        let entry = json!({"type": "stdio", "command": "sh", "args": ["-c", "x"]});
        let (v, text) = edited(own, |d| add_server(d, &entry));
        assert_eq!(v["mcpServers"][SERVER_NAME], entry);
        assert_eq!(v["mcpServers"]["other"]["command"], "x");
        assert_eq!(edited(&text, strip_server).1, own);

        let local = "{\"enabledMcpjsonServers\": [\"a\"]}";
        let (v, text) = edited(local, |d| {
            add_approval(d)?;
            add_approval(d)?;
            add_statusline(d, STATUSLINE_COMMAND)
        });
        assert_eq!(v["enabledMcpjsonServers"], json!(["a", SERVER_NAME]));
        assert_eq!(statusline_of(&v), Some(STATUSLINE_COMMAND));
        assert_eq!(v["statusLine"]["refreshInterval"], STATUSLINE_REFRESH_S);
        let (back, _) = edited(&text, |d| {
            strip_approval(d)?;
            strip_statusline(d)
        });
        assert_eq!(back, json!({"enabledMcpjsonServers": ["a"]}));
        // Someone else's status line stays.
        let theirs = r#"{"statusLine": {"type": "command", "command": "~/.claude/line.sh"}}"#;
        assert_eq!(edited(theirs, strip_statusline).1, theirs);
    }

    #[test]
    fn recognizes_our_status_line() {
        assert!(is_statusline_command(&format!(
            "{} --tool status --statusline",
            HOOK_COMMAND
        )));
        assert!(is_statusline_command("'/opt/sl/bin/status' --statusline"));
        assert!(!is_statusline_command("/opt/sl/bin/status"));
        assert!(!is_statusline_command(
            "~/.claude/statusline.sh --statusline"
        ));
    }
}
