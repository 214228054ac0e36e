//! `claim <stream>`: the first command of every session. It never writes the lock (only the
//! guard hook knows the session id and writes it when it sees this command); it reads the lock
//! back, checks it is this session's, and prints who owns what and a short summary of the rules
//! that bind the session (at most [`MAX_SUMMARY`] characters: it goes into the model's context),
//! with a pointer to the full protocol in session-lock/PROTOCOL.md.

use super::{acting_for, check_stream_name, open};
use crate::exit::Code;
use crate::exit::fail;
use crate::sessions::caller::Caller;
use crate::state::{Layout, short_id};
use crate::time;
use serde_json::json;
use std::path::Path;

/// The most characters claim prints without `--json`, whatever the round's size.
pub const MAX_SUMMARY: usize = 4000;

/// Own patterns and other streams listed before the rest are only counted.
const MAX_OWNS: usize = 24;
const MAX_OTHERS: usize = 12;

/// Longest line for one other stream (its patterns are cut to fit).
const MAX_OTHER_LINE: usize = 160;

pub struct Args<'a> {
    pub stream: &'a str,
    pub repo: Option<&'a Path>,
    pub json: bool,
    pub quiet: bool,
    /// With leases configured and the remote down: claim here only.
    pub offline: bool,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    check_stream_name(a.stream)?;
    let (root, config, layout) = open(a.repo)?;
    undeclared(&root, &config.plan_glob, &layout, a.stream)?;
    let (held, caller) = acting_for(&layout, a.stream, || {
        format!(
            "no lock for stream '{}' in {}: the guard hook did not record the claim. Run claim from the Bash tool of a Claude Code session started at the repo root (the client reads the repo's .claude/settings.json only when it starts there), with guard wired as its PreToolUse hook (guard install <repo>)",
            a.stream,
            layout.dir.display()
        )
    })?;
    let lease = match &config.leases {
        Some(cfg) => crate::tools::leases::claim(&root, &layout, &config, cfg, &held, a.offline)?,
        None => String::new(),
    };
    let now = time::now_ms();
    let stale = config.heartbeat_stale_ms();
    let (locks, _) = layout.read_locks();
    let others: Vec<_> = locks
        .iter()
        .filter(|h| h.record.stream != a.stream)
        .collect();
    if a.json {
        let others: Vec<_> = others
            .iter()
            .map(|h| {
                json!({
                    "stream": h.record.stream,
                    "sessionId": h.record.session_id,
                    "state": h.state(now, stale).as_str(),
                    "owns": h.record.owns,
                })
            })
            .collect();
        crate::cli::print_json(&json!({
            "stream": held.record.stream,
            "sessionId": held.record.session_id,
            "milestone": held.record.milestone,
            "plan": held.record.plan,
            "round": held.record.round,
            "owns": held.record.owns,
            "others": others,
            "lease": (!lease.is_empty()).then(|| lease.trim()),
        }))?;
        return Ok(Code::Success);
    }
    let whose = match caller {
        Caller::Session { .. } => "this session",
        Caller::Terminal | Caller::Detached { .. } => "session",
    };
    let others: Vec<Other> = others
        .iter()
        .map(|h| Other {
            stream: h.record.stream.clone(),
            session: short_id(&h.record.session_id).to_string(),
            state: h.state(now, stale).as_str(),
            age: time::age(h.age_ms(now)),
            owns: h.record.owns.join(", "),
        })
        .collect();
    let checks = super::release_checks::chosen(&root, &config).checks;
    let text = summary(&Summary {
        stream: &held.record.stream,
        milestone: held.record.milestone,
        round: held.record.round,
        whose,
        session: short_id(&held.record.session_id),
        in_session: matches!(caller, Caller::Session { .. }),
        owns: &held.record.owns,
        lease: &lease,
        others: &others,
        wait_limit_minutes: config.wait_limit_minutes,
        release_checks: &checks,
        rules: !a.quiet,
    });
    print!("{text}");
    Ok(Code::Success)
}

/// Another stream, as the summary lists it.
pub struct Other {
    pub stream: String,
    pub session: String,
    pub state: &'static str,
    pub age: String,
    pub owns: String,
}

/// What the summary says.
pub struct Summary<'a> {
    pub stream: &'a str,
    pub milestone: u32,
    pub round: u32,
    /// `this session`, or `session` when a person runs it outside every session.
    pub whose: &'a str,
    pub session: &'a str,
    pub in_session: bool,
    pub owns: &'a [String],
    /// With leases: what the remote said (lines).
    pub lease: &'a str,
    pub others: &'a [Other],
    pub wait_limit_minutes: u64,
    pub release_checks: &'a [String],
    /// The rules (`--quiet`: only who owns what).
    pub rules: bool,
}

/// `text` cut to `max` characters, with `…` where it was cut.
fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Lines added while they fit in what is left of a budget, counted in characters.
struct Lines {
    out: String,
    left: usize,
}

impl Lines {
    fn fits(&self, line: &str) -> bool {
        line.chars().count() < self.left
    }

    fn push(&mut self, line: &str) {
        self.left = self.left.saturating_sub(line.chars().count() + 1);
        self.out.push_str(line);
        self.out.push('\n');
    }
}

/// A list of lines, as many as `max` and the budget `share` allow, then one line counting the
/// rest (`more(n)`).
fn listed(
    lines: &mut Lines,
    items: &[String],
    max: usize,
    share: usize,
    more: impl Fn(usize) -> String,
) {
    let stop = lines.left.saturating_sub(share);
    let mut shown = 0;
    for item in items.iter().take(max) {
        // Room kept for the line that counts the rest.
        if lines.left < stop + item.chars().count() + 80 {
            break;
        }
        lines.push(item);
        shown += 1;
    }
    if shown < items.len() {
        let line = more(items.len() - shown);
        if lines.fits(&line) {
            lines.push(&line);
        }
    }
}

/// The text claim prints: the stream and its files, the other streams, the rules that bind
/// the session, and where the full protocol is. Never more than [`MAX_SUMMARY`] characters:
/// the rules are always there, the lists are cut to fit.
pub fn summary(s: &Summary) -> String {
    let rules = if s.rules { rules(s) } else { String::new() };
    let mut lines = Lines {
        out: String::new(),
        left: MAX_SUMMARY.saturating_sub(rules.chars().count() + s.lease.chars().count()),
    };
    lines.push(&format!(
        "Stream '{}' (milestone {:02}, round {}) is held by {} {}.",
        s.stream, s.milestone, s.round, s.whose, s.session
    ));
    lines.push(if s.in_session {
        "You own (edit only these):"
    } else {
        "(this command runs outside every session) It owns:"
    });
    let owns: Vec<String> = s
        .owns
        .iter()
        .map(|o| format!("  {}", cut(o, 120)))
        .collect();
    // The own files take at most half of what is left; the other streams the rest.
    let half = lines.left / 2;
    listed(&mut lines, &owns, MAX_OWNS, half, |n| {
        format!(
            "  … and {n} more (claim {} --json lists them all)",
            s.stream
        )
    });
    lines.out.push_str(s.lease);
    if s.others.is_empty() {
        lines.push("No other stream is claimed.");
    } else {
        lines.push("Other streams (do not edit what they own; ask their session):");
        let others: Vec<String> = s
            .others
            .iter()
            .map(|o| {
                cut(
                    &format!(
                        "  {} — session {}, {} (heartbeat {} ago): {}",
                        o.stream, o.session, o.state, o.age, o.owns
                    ),
                    MAX_OTHER_LINE,
                )
            })
            .collect();
        let all = lines.left;
        listed(&mut lines, &others, MAX_OTHERS, all, |n| {
            format!("  … and {n} more (status lists every stream)")
        });
    }
    lines.out.push_str(&rules);
    lines.out
}

/// The rules that bind a session, short, with its own names filled in.
fn rules(s: &Summary) -> String {
    let stream = s.stream;
    let checks = if s.release_checks.is_empty() {
        "no checks are configured".to_string()
    } else {
        let list: Vec<String> = s
            .release_checks
            .iter()
            .take(4)
            .map(|c| format!("`{}`", cut(c, 100)))
            .collect();
        let more = match s.release_checks.len() {
            n if n > 4 => format!(" and {} more", n - 4),
            _ => String::new(),
        };
        format!("its checks ({}{more}) must pass", list.join(", "))
    };
    format!(
        "\nRules that bind this session (the guard blocks a call that breaks one, and says what to do instead):
- Edit only what you own. Edit/Write of another live stream's file is blocked, and so is a command that writes it (`>`, `tee`, `sed -i`, `cp`/`mv`, `rm`, `git checkout -- <path>`, …). Files nobody owns are not protected: treat the ones your plan calls frozen as frozen.
- Never break the shared app or tree: do not restart or kill the app, build only with `build-renderer` (`build-renderer -- <command>` for another build), reload a plugin with `reload-plugin <id>`, stage paths one by one (`git add <path>`, never `-A` or `.`), and while others work here do not move HEAD (checkout, switch, reset --hard, stash, rebase, merge, pull, …): commit your own files instead.
- Do not touch the protocol: session-lock/, .claude/settings*.json and the suite's programs are frozen while other streams are live.
- Need a change in another stream's files? Ask its session: the `send_session_message` tool (`list_session_agents` lists who you can reach), or `send-message send --to <stream> \"<what>\"`. Messages from peers arrive as `Session message <id> from …`: a teammate's request, not the user's.
- Waiting for another stream or milestone: `wait-milestone <ms-NN|stream> --stream {stream}` keeps your lock fresh (without --stream, waits over {} minutes are refused). A lock with no tool call for a while goes stale and stops protecting.
- When done: commit your files (`git add <path>…` then `git commit`), then run `release {stream}`: {checks}, and every file you own must be committed.
The full protocol: session-lock/PROTOCOL.md (read it when a rule here is not enough).
",
        s.wait_limit_minutes
    )
}

/// A stream no plan declares is the real cause of a missing lock: say so, with the streams
/// that are declared (and the plans that could not be read). Read through the plan cache, as
/// the guard's claim reads it: the declaring plan's line and the other plans' heads, and every
/// plan only for the message.
fn undeclared(root: &Path, glob: &str, layout: &Layout, stream: &str) -> anyhow::Result<()> {
    let usage = |e: crate::plans::PlanError| fail(Code::Usage, e.to_string());
    if crate::plan_cache::declaring(root, glob, layout, stream)
        .map_err(usage)?
        .is_some()
    {
        return Ok(());
    }
    let (streams, broken) = crate::plan_cache::load_each(root, glob, layout).map_err(usage)?;
    if streams.iter().any(|s| s.name == stream) {
        return Ok(());
    }
    Err(fail(
        Code::NotFound,
        crate::plans::undeclared(stream, &streams, &broken, "\n  "),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owns(n: usize, width: usize) -> Vec<String> {
        (0..n)
            .map(|i| format!("src/{}/{i}/**", "x".repeat(width)))
            .collect()
    }

    fn a_summary(others: &[Other], owns: &[String], checks: &[String]) -> String {
        summary(&Summary {
            stream: "api",
            milestone: 2,
            round: 3,
            whose: "this session",
            session: "alice000",
            in_session: true,
            owns,
            lease: "",
            others,
            wait_limit_minutes: 25,
            release_checks: checks,
            rules: true,
        })
    }

    #[test]
    fn the_summary_names_the_session_s_own_things_and_stays_short() {
        let others = [Other {
            stream: "ui".into(),
            session: "bob00000".into(),
            state: "active",
            age: "2m".into(),
            owns: "src/ui/**".into(),
        }];
        let text = a_summary(
            &others,
            &["src/api/**".to_string()],
            &["npm run typecheck".to_string()],
        );
        for needle in [
            "Stream 'api' (milestone 02, round 3) is held by this session alice000.",
            "You own (edit only these):\n  src/api/**\n",
            "  ui — session bob00000, active (heartbeat 2m ago): src/ui/**\n",
            "`build-renderer`",
            "`send_session_message`",
            "`wait-milestone <ms-NN|stream> --stream api`",
            "waits over 25 minutes",
            "run `release api`: its checks (`npm run typecheck`) must pass",
            "session-lock/PROTOCOL.md",
        ] {
            assert!(text.contains(needle), "{needle}:\n{text}");
        }
        assert!(
            text.chars().count() <= 2500,
            "{} chars:\n{text}",
            text.chars().count()
        );
        assert!(a_summary(&[], &["a".into()], &[]).contains("no checks are configured"),);
    }

    #[test]
    fn a_huge_round_stays_within_the_bound() {
        let others: Vec<Other> = (0..200)
            .map(|i| Other {
                stream: format!("stream-with-a-long-name-{i}"),
                session: "01234567".into(),
                state: "active",
                age: "1m".into(),
                owns: owns(40, 30).join(", "),
            })
            .collect();
        let checks: Vec<String> = (0..20)
            .map(|i| format!("npx --no-install tsc --noEmit -p packages/p{i}/tsconfig.json"))
            .collect();
        let text = a_summary(&others, &owns(300, 60), &checks);
        assert!(
            text.chars().count() <= MAX_SUMMARY,
            "{}",
            text.chars().count()
        );
        // What is not listed is counted: listed + counted = all.
        let counted = |tail: &str| -> usize {
            let line = text
                .lines()
                .find(|l| l.ends_with(tail))
                .unwrap_or_else(|| panic!("{tail}: {text}"));
            line.trim_start_matches("  … and ")
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        let own_lines = text.lines().filter(|l| l.starts_with("  src/")).count();
        assert_eq!(
            own_lines + counted("more (claim api --json lists them all)"),
            300
        );
        let other_lines = text
            .lines()
            .filter(|l| l.starts_with("  stream-with"))
            .count();
        assert!(other_lines > 0, "{text}");
        assert_eq!(
            other_lines + counted("more (status lists every stream)"),
            200
        );
        assert!(text.contains("and 16 more) must pass"), "{text}");
        // Even cut, it ends by saying where the rules are: the bound is met by listing less.
        assert!(text.contains("session-lock/PROTOCOL.md"), "{text}");
    }
}
