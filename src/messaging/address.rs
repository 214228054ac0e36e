//! Addressing: `--to` names one session by its exact id, or by a name (case-insensitive,
//! exact): the client's session name or title, or a stream the session has claimed in this repo.
//! `@name` and quoted names (`"api worker"`, `@"api worker"`) work as in the client.
//!
//! Only sessions the caller may reach take part: several visible matches are `Ambiguous` (with
//! those candidates), none is `NotFound` — the same answer whether the session is missing or
//! merely not reachable. Unnamed sessions show as `session-<id8>` but answer only to their id.

use super::auth::{Policy, Verdict, authorize};
use super::directory::Target;
use super::identity::Caller;

#[derive(Debug)]
pub enum Resolved<'a> {
    One(&'a Target),
    SelfTarget(&'a Target),
    OwnSubagent(&'a Target),
    NotFound,
    Ambiguous(Vec<&'a Target>),
}

/// Strips `@` and one pair of surrounding quotes, and outer blanks.
pub fn normalize(raw: &str) -> String {
    let s = raw.trim();
    let s = s.strip_prefix('@').unwrap_or(s).trim();
    for q in ['"', '\''] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return s[1..s.len() - 1].trim().to_string();
        }
    }
    s.to_string()
}

fn visible<'a>(caller: &Caller, t: &'a Target, p: &Policy) -> Option<(Verdict, &'a Target)> {
    match authorize(caller, t, p) {
        Verdict::Hidden => None,
        v => Some((v, t)),
    }
}

fn one(v: Verdict, t: &Target) -> Resolved<'_> {
    match v {
        Verdict::SelfTarget => Resolved::SelfTarget(t),
        Verdict::OwnSubagent => Resolved::OwnSubagent(t),
        _ => Resolved::One(t),
    }
}

/// Finds the one session `raw` names, among those the caller may reach.
pub fn resolve<'a>(raw: &str, targets: &'a [Target], caller: &Caller, p: &Policy) -> Resolved<'a> {
    let addr = normalize(raw);
    if addr.is_empty() {
        return Resolved::NotFound;
    }
    if let Some(t) = targets.iter().find(|t| t.id.eq_ignore_ascii_case(&addr)) {
        return match visible(caller, t, p) {
            Some((v, t)) => one(v, t),
            None => Resolved::NotFound,
        };
    }
    let hits: Vec<(Verdict, &Target)> = targets
        .iter()
        .filter(|t| t.names.iter().any(|n| n.eq_ignore_ascii_case(&addr)))
        .filter_map(|t| visible(caller, t, p))
        .collect();
    match hits.len() {
        0 => Resolved::NotFound,
        1 => one(hits[0].0, hits[0].1),
        _ => Resolved::Ambiguous(hits.into_iter().map(|(_, t)| t).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: &str, names: &[&str], ws: &str) -> Target {
        Target {
            id: id.into(),
            name: names.first().copied().unwrap_or("").into(),
            names: names.iter().map(|s| s.to_string()).collect(),
            cwd: ws.into(),
            workspace: ws.into(),
            ..Target::default()
        }
    }

    fn me() -> Caller {
        Caller {
            id: "me-0000000".into(),
            name: "me".into(),
            cwd: "/r".into(),
            workspace: "/r".into(),
            ..Caller::default()
        }
    }

    fn id_of(r: Resolved<'_>) -> String {
        match r {
            Resolved::One(t) => t.id.clone(),
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn normalizes_at_and_quotes() {
        assert_eq!(normalize(" @api "), "api");
        assert_eq!(normalize("@\"api worker\""), "api worker");
        assert_eq!(normalize("'api worker'"), "api worker");
        assert_eq!(normalize("\"x"), "\"x");
    }

    #[test]
    fn id_then_name_case_insensitive() {
        let ts = vec![
            t("aaaaaaaa-1", &["api-worker"], "/r"),
            t("bbbbbbbb-2", &["Web", "ui-stream"], "/r"),
            t("cccccccc-3", &["api worker"], "/r"),
        ];
        let p = Policy::default();
        assert_eq!(id_of(resolve("aaaaaaaa-1", &ts, &me(), &p)), "aaaaaaaa-1");
        assert_eq!(id_of(resolve("AAAAAAAA-1", &ts, &me(), &p)), "aaaaaaaa-1");
        assert_eq!(id_of(resolve("web", &ts, &me(), &p)), "bbbbbbbb-2");
        assert_eq!(id_of(resolve("UI-STREAM", &ts, &me(), &p)), "bbbbbbbb-2");
        assert_eq!(
            id_of(resolve("@\"API Worker\"", &ts, &me(), &p)),
            "cccccccc-3"
        );
        // A prefix is not an id, and the fallback name is not a name.
        assert!(matches!(
            resolve("aaaaaaaa", &ts, &me(), &p),
            Resolved::NotFound
        ));
        assert!(matches!(
            resolve("session-aaaaaaaa", &ts, &me(), &p),
            Resolved::NotFound
        ));
        assert!(matches!(resolve("", &ts, &me(), &p), Resolved::NotFound));
    }

    #[test]
    fn same_name_twice_is_ambiguous_with_visible_candidates_only() {
        let ts = vec![
            t("a1", &["dup"], "/r"),
            t("a2", &["DUP"], "/r"),
            t("far", &["dup"], "/elsewhere"),
        ];
        match resolve("dup", &ts, &me(), &Policy::default()) {
            Resolved::Ambiguous(c) => {
                let ids: Vec<&str> = c.iter().map(|t| t.id.as_str()).collect();
                assert_eq!(ids, vec!["a1", "a2"]);
            }
            other => panic!("{other:?}"),
        }
        // One visible, one hidden: the visible one, and nothing leaks.
        let ts = vec![t("a1", &["dup"], "/r"), t("far", &["dup"], "/elsewhere")];
        assert_eq!(id_of(resolve("dup", &ts, &me(), &Policy::default())), "a1");
    }

    #[test]
    fn hidden_and_missing_look_the_same() {
        let ts = vec![t("far", &["far-away"], "/elsewhere")];
        let p = Policy::default();
        assert!(matches!(resolve("far", &ts, &me(), &p), Resolved::NotFound));
        assert!(matches!(
            resolve("far-away", &ts, &me(), &p),
            Resolved::NotFound
        ));
        assert!(matches!(
            resolve("nobody", &ts, &me(), &p),
            Resolved::NotFound
        ));
    }

    #[test]
    fn self_by_id_or_name() {
        let ts = vec![t("me-0000000", &["me"], "/r")];
        let p = Policy::default();
        assert!(matches!(
            resolve("me-0000000", &ts, &me(), &p),
            Resolved::SelfTarget(_)
        ));
        assert!(matches!(
            resolve("ME", &ts, &me(), &p),
            Resolved::SelfTarget(_)
        ));
    }
}
