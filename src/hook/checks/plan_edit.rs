//! A plan's frontmatter (its `stream` and `owns`) is fixed while another session's lock is live:
//! otherwise a session could widen its own stream from inside the round (`owns: ["**"]`, claim
//! again) or declare a new one owning the protocol's files. Its body (the checklist) stays
//! editable.
//!
//! The guard computes the plan as it would be after the call: `Write` gives the whole text,
//! `Edit` and `MultiEdit` are applied to the file on disk. A call whose result cannot be told
//! (a shell write, an MCP writer) is treated as changing the frontmatter.

use crate::clients::call::Change;
use crate::hook::Payload;
use crate::hook::context::{Call, Ctx};
use crate::hook::decision::{Checked, Refusal, Rule};
use crate::hook::targets::Facts;
use crate::words::Tool;
use serde_json::Value;
use std::path::Path;

/// Refuses a write to a plan that would change its frontmatter while another session's lock is
/// live.
pub fn check(ctx: &Ctx, call: &Call, f: &Facts) -> Checked {
    let Some(rel) = &f.rel else { return Ok(()) };
    let p = call.p;
    if let Some(other) = f.live.iter().find(|h| h.record.session_id != p.session_id)
        && ctx.config.is_plan(rel)
        && let Some(why) = problem(p, rel, &ctx.root.join(rel), &other.record.stream)
    {
        return Err(Refusal::new(Rule::PlanEdit, why)
            .with_stream(other.record.stream.clone())
            .with_path(rel.clone()));
    }
    Ok(())
}

/// The largest plan the guard reads to compute an edit; a larger one counts as changed.
const MAX_PLAN: u64 = 1024 * 1024;

/// The frontmatter block (`---` … `---`, both lines included), or `None` when the text has none.
fn frontmatter(text: &str) -> Option<&str> {
    let mut offset = 0;
    let mut opened = false;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']).trim();
        offset += line.len();
        if bare == "---" {
            if opened {
                return Some(&text[..offset]);
            }
            opened = true;
        } else if !opened {
            return None;
        }
    }
    opened.then_some(text)
}

/// `old` → `new` once (or everywhere), as the Edit tool does; `None` when `old` is not there
/// (the client then fails the edit itself).
fn replace(text: &str, edit: &Value) -> Option<String> {
    let old = edit.get("old_string")?.as_str()?;
    let new = edit.get("new_string")?.as_str()?;
    let all = edit
        .get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if old.is_empty() || !text.contains(old) {
        return None;
    }
    Some(if all {
        text.replace(old, new)
    } else {
        text.replacen(old, new, 1)
    })
}

/// The plan's text after the call, `Err(())` when the guard cannot tell.
fn after(p: &Payload, rel: &str, before: &str) -> Result<Option<String>, ()> {
    if !p.writes.is_empty() {
        return after_write(p, rel, before);
    }
    match p.tool_name {
        Tool::Write => p
            .input_str("content")
            .map(|c| Some(c.to_string()))
            .ok_or(()),
        Tool::Edit => Ok(replace(before, &p.tool_input)),
        Tool::MultiEdit => {
            let edits = p
                .tool_input
                .get("edits")
                .and_then(Value::as_array)
                .ok_or(())?;
            let mut text = before.to_string();
            for e in edits {
                match replace(&text, e) {
                    Some(t) => text = t,
                    None => return Ok(None),
                }
            }
            Ok(Some(text))
        }
        _ => Err(()),
    }
}

/// The plan's text after another client's file tool writes it (the one write whose path names
/// `rel`). A patch the guard cannot apply as written counts as a change: the client's own
/// matching is looser, and would apply it.
fn after_write(p: &Payload, rel: &str, before: &str) -> Result<Option<String>, ()> {
    let names = |path: &str| {
        let path = path.replace('\\', "/");
        let path = path.trim_start_matches("./");
        path == rel || path.ends_with(&format!("/{rel}"))
    };
    let mut mine = p.writes.iter().filter(|w| names(&w.path));
    let (Some(write), None) = (mine.next(), mine.next()) else {
        return Err(());
    };
    match &write.change {
        Change::Content(text) => Ok(Some(text.clone())),
        Change::Replace { old, new, all } => {
            let edit =
                serde_json::json!({"old_string": old, "new_string": new, "replace_all": all});
            Ok(replace(before, &edit))
        }
        Change::Patch(chunks) => crate::clients::patch::apply(before, chunks)
            .map(Some)
            .ok_or(()),
        Change::Remove | Change::MovedFrom { .. } => Err(()),
    }
}

/// Why this write to the plan `rel` (at `path` on disk) is refused while `holder` (another
/// session's stream) is live, or `None` when it only changes the body.
pub fn problem(p: &Payload, rel: &str, path: &Path, holder: &str) -> Option<String> {
    let frozen = format!(
        "session-lock: {rel} is a plan, and plans' frontmatter (stream, owns) is fixed while another stream is live ('{holder}'), so no stream can widen what it owns inside a round"
    );
    let before = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_PLAN => return Some(frozen),
        Ok(_) => crate::atomic::read_regular(path, crate::atomic::MAX_READ).ok(),
        Err(_) => None,
    };
    let Some(before) = before else {
        return Some(format!(
            "session-lock: {rel} would be a new plan; streams cannot be declared while another stream is live ('{holder}'). Add it when the round is over"
        ));
    };
    match after(p, rel, &before) {
        Err(()) => Some(format!(
            "{frozen}. The guard cannot tell what this call does to the frontmatter; tick the checklist with the Edit tool"
        )),
        Ok(None) => None,
        Ok(Some(text)) if frontmatter(&text) == frontmatter(&before) => None,
        Ok(Some(_)) => Some(format!(
            "{frozen}. Edit only the plan's body (ticking its checklist is fine)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const PLAN: &str = "---\nstream: ui\nowns:\n  - src/ui/**\n---\n# UI\n- [ ] one\n- [ ] two\n";

    fn payload(tool: &str, input: Value) -> Payload {
        Payload {
            tool_name: Tool::parse(tool),
            tool_input: input,
            ..Payload::default()
        }
    }

    fn check(tool: &str, input: Value) -> Option<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.md");
        std::fs::write(&path, PLAN).unwrap();
        problem(
            &payload(tool, input),
            "plans/r-ms-01-ui/plan.md",
            &path,
            "api",
        )
    }

    #[test]
    fn ticking_the_body_passes_and_widening_the_owns_does_not() {
        let tick = json!({"old_string": "- [ ] one", "new_string": "- [x] one"});
        assert_eq!(check("Edit", tick), None);
        let widen = json!({"old_string": "src/ui/**", "new_string": "**"});
        assert!(check("Edit", widen).unwrap().contains("frontmatter"));
        let rename = json!({"edits": [
            {"old_string": "- [ ] two", "new_string": "- [x] two"},
            {"old_string": "stream: ui", "new_string": "stream: api"}
        ]});
        assert!(check("MultiEdit", rename).is_some());
        let body_only = PLAN.replace("- [ ] two", "- [x] two");
        assert_eq!(check("Write", json!({"content": body_only})), None);
        let all = PLAN.replace("src/ui/**", "src/ui/**\n  - .claude/**");
        assert!(check("Write", json!({"content": all})).is_some());
        assert!(check("Bash", json!({"command": "sed -i s/ui/x/ plan.md"})).is_some());
        // An edit whose text is not there changes nothing (the client refuses it).
        assert_eq!(
            check(
                "Edit",
                json!({"old_string": "zzz", "new_string": "owns: [\"**\"]"})
            ),
            None
        );
    }

    #[test]
    fn a_new_plan_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = payload("Write", json!({"content": "---\nowns: [\"**\"]\n---\n"}));
        let why = problem(
            &p,
            "plans/r-ms-09-evil/plan.md",
            &dir.path().join("no"),
            "api",
        );
        assert!(why.unwrap().contains("would be a new plan"));
    }

    #[test]
    fn plan_files_are_found_by_the_glob() {
        let exact = crate::config::Config {
            case_insensitive_paths: Some(false),
            ..Default::default()
        };
        assert!(exact.is_plan("plans/r-ms-01-ui/plan.md"));
        assert!(!exact.is_plan("plans/r-ms-01-ui/notes.md"));
        assert!(!exact.is_plan("src/plans/r-ms-01-ui/plan.md"));
        assert!(!exact.is_plan("plans/r-ms-01-ui/PLAN.md"));
        let ci = crate::config::Config {
            case_insensitive_paths: Some(true),
            ..Default::default()
        };
        assert!(ci.is_plan("plans/r-ms-01-ui/PLAN.md"));
        assert_eq!(frontmatter("no fm\n"), None);
        assert_eq!(
            frontmatter("---\na: 1\n---\nbody"),
            Some("---\na: 1\n---\n")
        );
    }
}
