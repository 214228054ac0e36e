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

const TECHNIQUES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/selftest/techniques");
/// The share of must-block cases of `selftest/techniques` the rules catch, in percent, as
/// measured when the corpus was last extended: a drop is a regression.
const MIN_TECHNIQUE_CATCH: usize = 96;

/// `selftest/techniques/*.case`: commands written by analysis technique, each must-block next to
/// look-alikes that must pass. Not every must-block is caught yet (the catch rate is measured and
/// may only rise), but no look-alike may ever be blocked.
#[test]
fn technique_corpus_catch_rate() {
    let rules = compile(&RulesConfig::default()).expect("default rules compile");
    let mut files: Vec<_> = std::fs::read_dir(TECHNIQUES)
        .unwrap_or_else(|e| panic!("read {TECHNIQUES}: {e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "case"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no technique files in {TECHNIQUES}");
    let (mut blocks, mut caught, mut allows) = (0usize, 0usize, 0usize);
    let mut false_blocks = Vec::new();
    let mut misses = Vec::new();
    let mut table = String::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("read {f:?}: {e}"));
        let name = f
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let cases = parse_cases(&text, &name).unwrap_or_else(|e| panic!("{e}"));
        let must_block = cases
            .iter()
            .filter(|c| !matches!(c.expect, Expect::Allow))
            .count();
        let must_allow = cases.len() - must_block;
        assert!(
            must_allow >= must_block,
            "{name}: {must_allow} look-alikes for {must_block} must-blocks (want at least as many)"
        );
        let mut file_caught = 0;
        for root in ["/home/dev/repo", r"C:\Users\dev\repo"] {
            for c in &cases {
                let ok = run(&rules, c, root).is_ok();
                match (&c.expect, ok) {
                    (Expect::Allow, false) => {
                        false_blocks.push(format!("{name}:{} {} [root {root}]", c.line, c.name));
                    }
                    (Expect::Allow, true) => allows += 1,
                    (_, true) => {
                        blocks += 1;
                        caught += 1;
                        file_caught += 1;
                    }
                    (_, false) => {
                        blocks += 1;
                        misses.push(format!("{name}:{} {} [root {root}]", c.line, c.name));
                    }
                }
            }
        }
        table.push_str(&format!(
            "{name}: caught {file_caught}/{} must-block runs, {must_allow} look-alikes\n",
            must_block * 2
        ));
    }
    let rate = caught * 100 / blocks.max(1);
    eprintln!(
        "technique corpus: caught {caught}/{blocks} must-block runs ({rate} %), {} false blocks of {} look-alike runs\n{table}misses:\n  {}",
        false_blocks.len(),
        allows + false_blocks.len(),
        misses.join("\n  ")
    );
    assert!(
        false_blocks.is_empty(),
        "look-alikes blocked:\n{}",
        false_blocks.join("\n")
    );
    assert!(
        rate >= MIN_TECHNIQUE_CATCH,
        "catch rate {rate} % fell below {MIN_TECHNIQUE_CATCH} %:\n{}",
        misses.join("\n")
    );
}
