//! Runs every `selftest/commands/*.case` against the rules directly, under a POSIX and a
//! Windows repository root, and reports every failing case by name.

use crate::support::cases::{CommandCase, Expect, parse_cases};
use session_lock::rules::{CommandContext, RuleId, Rules, RulesConfig, Scope, Shell, compile};

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/selftest/commands");
const MIN_CASES: usize = 320;

fn corpus() -> Vec<CommandCase> {
    let mut files: Vec<_> = std::fs::read_dir(CORPUS)
        .unwrap_or_else(|e| panic!("read {CORPUS}: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "case"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("read {f:?}: {e}"));
        let name = f
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        match parse_cases(&text, &name) {
            Ok(cases) => out.extend(cases),
            Err(e) => panic!("{e}"),
        }
    }
    out
}

fn run(r: &Rules, c: &CommandCase, root: &str) -> Result<(), String> {
    let hits = if c.is_mcp() {
        r.check_mcp(&c.tool, &c.input)
    } else {
        let cwd = match &c.cwd {
            Some(rel) => session_lock::paths::lexical::join(root, rel),
            None => root.to_string(),
        };
        let shell = if c.tool == "PowerShell" {
            Shell::PowerShell
        } else {
            Shell::Bash
        };
        r.check_command(
            &c.command,
            &CommandContext::new(cwd, root).with_shell(shell),
        )
    };
    let ids = |scope: Scope| -> Vec<&str> {
        hits.iter()
            .filter(|h| h.scope == scope)
            .map(|h| h.rule.as_str())
            .collect()
    };
    let (always, shared) = (ids(Scope::Always), ids(Scope::WhenShared));
    let ok = match &c.expect {
        Expect::Allow => hits.is_empty(),
        Expect::Block(id) => always.contains(&id.as_str()),
        Expect::Shared(id) => always.is_empty() && shared.contains(&id.as_str()),
    };
    if ok {
        return Ok(());
    }
    let got: Vec<String> = hits
        .iter()
        .map(|h| format!("{} ({}) on `{}`", h.rule, h.scope.label(), h.segment))
        .collect();
    Err(format!(
        "expected {:?}, got [{}]",
        c.expect,
        if got.is_empty() {
            "allow".to_string()
        } else {
            got.join("; ")
        }
    ))
}

#[test]
fn corpus_is_well_formed() {
    let cases = corpus();
    assert!(
        cases.len() >= MIN_CASES,
        "only {} cases (want at least {MIN_CASES})",
        cases.len()
    );
    let mut names: Vec<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    names.sort_unstable();
    let dups: Vec<&&str> = names
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| &w[0])
        .collect();
    assert!(
        dups.is_empty(),
        "duplicate case names across files: {dups:?}"
    );
    for c in &cases {
        if let Expect::Block(id) | Expect::Shared(id) = &c.expect {
            let rule = RuleId::from_id(id).unwrap_or_else(|| {
                panic!("{}:{} {}: unknown rule id {id}", c.file, c.line, c.name)
            });
            let want = if matches!(c.expect, Expect::Block(_)) {
                Scope::Always
            } else {
                Scope::WhenShared
            };
            assert_eq!(
                rule.info().scope,
                want,
                "{}:{} {}: {id} has scope {}",
                c.file,
                c.line,
                c.name,
                rule.info().scope.label()
            );
        }
    }
    for r in RuleId::ALL {
        assert!(
            cases.iter().any(
                |c| matches!(&c.expect, Expect::Block(id) | Expect::Shared(id) if id == r.id())
            ),
            "no case blocks with {}",
            r.id()
        );
    }
}

#[test]
fn corpus_cases_hold() {
    let rules = compile(&RulesConfig::default()).expect("default rules compile");
    let cases = corpus();
    let mut failures = Vec::new();
    for root in ["/home/dev/repo", r"C:\Users\dev\repo"] {
        for c in &cases {
            if let Err(e) = run(&rules, c, root) {
                failures.push(format!(
                    "{}:{} {} [root {root}]: {e}",
                    c.file, c.line, c.name
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failing case runs:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
