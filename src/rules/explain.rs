//! `guard explain '<command>'`: the analysis and what the rules say of it, readable (the guard's
//! decision, its last line, comes from the hook pipeline).

use std::fmt::Write;

use super::{CommandContext, Hit, Rules, Scope, Shell, clip};
use crate::shell::{BodyKind, DirStep, Segment, analyze};

const MAX_COMMAND_TEXT: usize = 300;

fn one_line(text: &str, max: usize) -> String {
    clip(text.replace('\n', "\\n").replace('\r', "\\r"), max)
}

fn segment_lines(out: &mut String, i: usize, seg: &Segment, hits: &[&Hit]) {
    let mut origin = seg.origin.label().to_string();
    if !seg.via.is_empty() {
        let _ = write!(origin, " via {}", seg.via);
    }
    if seg.depth > 0 {
        let _ = write!(origin, ", depth {}", seg.depth);
    }
    let _ = writeln!(
        out,
        "segment {} ({origin}): {}",
        i + 1,
        one_line(&seg.render(), 200)
    );
    if seg.argv.is_empty() {
        let _ = writeln!(out, "  argv: (nothing runs here)");
    } else {
        let argv: Vec<String> = seg
            .argv
            .iter()
            .map(|w| format!("[{}]", one_line(&w.text, 80)))
            .collect();
        let _ = writeln!(out, "  argv: {}", argv.join(" "));
    }
    if !seg.wrappers.is_empty() {
        let _ = writeln!(out, "  peeled: {}", seg.wrappers.join(", "));
    }
    let _ = writeln!(out, "  mechanism: {}", seg.mechanism());
    if !seg.dirs.is_empty() {
        let steps: Vec<String> = seg
            .dirs
            .iter()
            .map(|d| match d {
                DirStep::To(p) | DirStep::Dynamic(p) => format!("cd {p}"),
                DirStep::Unknown => "cd <unknown>".to_string(),
            })
            .collect();
        let _ = writeln!(out, "  after: {}", steps.join(" → "));
    }
    for r in &seg.resolved {
        let _ = writeln!(out, "  resolved: {r}");
    }
    if let Some(p) = seg.pipe_prev {
        let _ = writeln!(out, "  reads the pipe from segment {}", p + 1);
    }
    if seg.sandboxed && seg.host_app {
        let _ = writeln!(
            out,
            "  sandboxed: inside a docker run that cannot write host files, but shares the host's network or pid namespace (only the app rules apply)"
        );
    } else if seg.sandboxed {
        let _ = writeln!(
            out,
            "  sandboxed: inside a docker run that cannot write host files (rules skipped)"
        );
    }
    for r in &seg.redirects {
        if matches!(r.op, "<<" | "<<-" | "<<<") {
            continue;
        }
        let fd = r.fd.map(|f| f.to_string()).unwrap_or_default();
        let target = r.target.as_ref().map_or("", |w| w.text.as_str());
        let _ = writeln!(out, "  redirect: {fd}{} {}", r.op, one_line(target, 80));
    }
    for h in &seg.heredocs {
        let reader = seg
            .argv
            .iter()
            .map(|w| w.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let delim = if h.op == "<<<" {
            "here-string".to_string()
        } else {
            let q = if h.quoted { "'" } else { "" };
            format!("{}{q}{}{q}", h.op, h.delimiter)
        };
        let mut flags = Vec::new();
        if !h.closed {
            flags.push("unclosed");
        }
        if h.live {
            flags.push("live substitution");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        };
        let _ = writeln!(
            out,
            "  heredoc {delim}, {} lines, read by `{}`: {} ({}){flags}",
            h.body.lines().count(),
            one_line(&reader, 80),
            h.kind.label(),
            h.why
        );
        if h.kind == BodyKind::Script {
            let _ = writeln!(
                out,
                "    its commands are the segments marked `heredoc script`"
            );
        }
    }
    if hits.is_empty() {
        let _ = writeln!(out, "  → allow");
    }
    for h in hits {
        let _ = writeln!(
            out,
            "  → block {} ({}): {}",
            h.rule,
            h.scope.label(),
            h.reason
        );
    }
}

/// A readable analysis of `command`: its segments (argv, peeled wrappers, heredocs, cd
/// steps), each hit with its scope, and what the rules say.
pub fn explain(rules: &Rules, command: &str, ctx: &CommandContext) -> String {
    let dialect = match ctx.shell {
        Shell::Bash => crate::shell::Dialect::Posix,
        Shell::PowerShell => crate::shell::Dialect::PowerShell,
    };
    let an = analyze(command, dialect);
    let hits = rules.check_analysis(&an, ctx);
    let mut out = String::new();
    let _ = writeln!(out, "command: {}", one_line(command, MAX_COMMAND_TEXT));
    let _ = writeln!(
        out,
        "shell: {}   cwd: {}   repo: {}",
        dialect.label(),
        ctx.cwd,
        ctx.repo_root
    );
    if an.segments.is_empty() {
        let _ = writeln!(out, "no commands");
    }
    for (i, seg) in an.segments.iter().enumerate() {
        let seg_hits: Vec<&Hit> = hits
            .iter()
            .filter(|(k, _)| *k == i)
            .map(|(_, h)| h)
            .collect();
        segment_lines(&mut out, i, seg, &seg_hits);
    }
    if an.truncated {
        let _ = writeln!(
            out,
            "note: the command exceeded an analysis limit; only part of it was analyzed"
        );
    }
    let ids = |scope: Scope| {
        let mut v: Vec<&str> = hits
            .iter()
            .filter(|(_, h)| h.scope == scope)
            .map(|(_, h)| h.rule.as_str())
            .collect();
        v.dedup();
        v.sort_unstable();
        v.dedup();
        v.join(", ")
    };
    let always = ids(Scope::Always);
    let shared = ids(Scope::WhenShared);
    if !always.is_empty() {
        let _ = writeln!(out, "rules: block ({always})");
    } else if !shared.is_empty() {
        let _ = writeln!(
            out,
            "rules: block only while another session works in this tree ({shared})"
        );
    } else {
        let _ = writeln!(out, "rules: allow");
    }
    out
}
