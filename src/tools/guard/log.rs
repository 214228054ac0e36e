//! `guard log`: what the guard blocked (and where it failed open) in this repo, from
//! `session-lock/blocks.jsonl` (see `crate::hook::blocklog`).

use crate::exit::{Code, fail};
use crate::hook::blocklog::{self, Entry, Kind};
use std::path::Path;

pub struct Args<'a> {
    pub repo: Option<&'a Path>,
    /// Only entries newer than this (`90s`, `30m`, `1h`, `2d`).
    pub since: Option<&'a str>,
    /// Only this session's entries (a full id or its first characters).
    pub session: Option<&'a str>,
    pub json: bool,
}

/// `90s`, `30m`, `1h`, `2d` (a bare number is seconds) → milliseconds.
pub fn parse_age(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("--since {text}: expected a number and a unit, e.g. 30m or 1h"))?;
    let unit_ms = match unit {
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "--since {text}: unknown unit '{unit}' (s, m, h or d)"
            ));
        }
    };
    Ok(n.saturating_mul(unit_ms))
}

/// The entries a query selects, oldest first.
pub fn select(
    entries: Vec<Entry>,
    since_ms: Option<u64>,
    session: Option<&str>,
    now: u64,
) -> Vec<Entry> {
    entries
        .into_iter()
        .filter(|e| {
            since_ms
                .is_none_or(|age| crate::time::parse_iso(&e.time).is_some_and(|t| t + age >= now))
        })
        .filter(|e| session.is_none_or(|s| e.session.starts_with(s)))
        .collect()
}

/// One line per entry: time, session, stream, tool, what happened, then the reason indented.
pub fn render(entries: &[Entry]) -> String {
    let mut s = String::new();
    for e in entries {
        let what = match (e.kind, &e.rule) {
            (Kind::Deny, Some(rule)) => format!("blocked ({rule})"),
            (Kind::Deny, None) => "blocked".to_string(),
            (Kind::FailOpen, _) => "allowed: guard trouble".to_string(),
        };
        s.push_str(&format!(
            "{}  {:<8}  {:<12}  {:<8}  {what}: {}\n    {}\n",
            e.time,
            crate::state::short_id(&e.session),
            e.stream.as_deref().unwrap_or("-"),
            e.tool,
            e.segment,
            e.reason
        ));
    }
    s
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let root = crate::tools::repo_root(a.repo)?;
    let since = a
        .since
        .map(parse_age)
        .transpose()
        .map_err(|e| fail(Code::Usage, e))?;
    let path = blocklog::path(&root);
    let all = blocklog::read(&root).map_err(|e| {
        fail(
            Code::Failure,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    let shown = select(all, since, a.session, crate::time::now_ms());
    if a.json {
        crate::cli::print_json(&serde_json::json!({"log": path, "entries": shown}))?;
    } else if shown.is_empty() {
        println!("no blocks logged in {}", path.display());
    } else {
        print!("{}", render(&shown));
    }
    Ok(Code::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages() {
        assert_eq!(parse_age("90s"), Ok(90_000));
        assert_eq!(parse_age("30m"), Ok(1_800_000));
        assert_eq!(parse_age("1h"), Ok(3_600_000));
        assert_eq!(parse_age("2d"), Ok(172_800_000));
        assert_eq!(parse_age("45"), Ok(45_000));
        assert!(parse_age("1w").unwrap_err().contains("unknown unit 'w'"));
        assert!(parse_age("h").is_err());
    }
}
