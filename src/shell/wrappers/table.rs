//! Wrappers described by their grammar, not by code: which options take a value (the row's
//! [`Program::opts`]), how many operands come before the command, and which option carries
//! a command string (its [`Prefix`]).
//!
//! `nice -n 5 CMD`, `timeout 30s CMD`, `flock [-x] FILE CMD…` / `flock FILE -c 'CMD'`, `su [-]
//! [USER] -c 'CMD'`, `runuser -u U -- CMD`, `script -qc 'CMD' [FILE]`, `taskset MASK CMD`,
//! `strace -f -o F CMD`, `systemd-run --user CMD`, `chronic CMD`, `coproc CMD`, ... are rows
//! of the program table (`shell/programs.rs`). `parallel` has its own small handler: its
//! command is a template over the arguments after `:::`.

use super::{Peel, add_script, first_operand, keep_from};
use crate::shell::Dialect;
use crate::shell::programs::{Grammar, Prefix, Program};
use crate::shell::word::Word;

/// Upper bound on the commands `parallel` is expanded to.
const MAX_PARALLEL: usize = 16;

/// The command string carried by the script option in `args[from..]`, if any.
fn script_value(args: &[Word], from: usize, opts: Grammar, g: &Prefix) -> Option<(String, usize)> {
    let mut i = from;
    let mut operands = 0;
    while let Some(w) = args.get(i) {
        let t = w.text.as_str();
        if t == "--" {
            return None;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (n, v) = long
                .split_once('=')
                .map_or((long, None), |(n, v)| (n, Some(v)));
            if g.script_long.contains(&n) {
                return match v {
                    Some(v) => Some((v.to_string(), i + 1)),
                    None => args.get(i + 1).map(|w| (w.text.clone(), i + 2)),
                };
            }
            i += if v.is_none() && opts.long.contains(&n) {
                2
            } else {
                1
            };
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let bundle = &t[1..];
            let mut step = 1;
            for (k, c) in bundle.char_indices() {
                let rest = &bundle[k + c.len_utf8()..];
                if g.script_short.contains(c) {
                    return if rest.is_empty() {
                        args.get(i + 1).map(|w| (w.text.clone(), i + 2))
                    } else {
                        Some((rest.to_string(), i + 1))
                    };
                }
                if opts.short.contains(c) {
                    if rest.is_empty() {
                        step = 2;
                    }
                    break;
                }
            }
            i += step;
            continue;
        }
        // The skipped operands (`flock FILE -c …`) may come before the script option.
        operands += 1;
        if !g.permute && operands > g.skip {
            return None;
        }
        i += 1;
    }
    None
}

/// Peels one wrapper by its grammar.
pub(super) fn peel(p: &mut Peel, prog: &Program, g: &Prefix) -> bool {
    let name = prog.name;
    let operand = first_operand(&p.argv, 1, prog.opts);
    if p.argv[1..operand.min(p.argv.len())]
        .iter()
        .any(|w| g.inert.contains(&w.text.as_str()))
    {
        p.argv.clear();
        p.wrappers.push(name.to_string());
        return false;
    }
    if let Some((text, _)) = script_value(&p.argv, 1, prog.opts, g) {
        return add_script(p, text, Dialect::Posix, g.via);
    }
    if g.needs_script {
        p.argv.clear();
        p.wrappers.push(name.to_string());
        return false;
    }
    keep_from(p, operand + g.skip, name)
}

/// `parallel [opts] CMD… ::: ARGS…`: one command per argument, `{}` replaced (or the
/// argument appended), analysed as scripts.
pub(super) fn parallel(p: &mut Peel, prog: &Program) -> bool {
    let i = first_operand(&p.argv, 1, prog.opts);
    let rest = &p.argv[i.min(p.argv.len())..];
    let sep = rest
        .iter()
        .position(|w| matches!(w.text.as_str(), ":::" | "::::" | ":::+"));
    let (cmd, args) = match sep {
        Some(k) => (&rest[..k], &rest[k + 1..]),
        None => (rest, &[][..]),
    };
    let template = super::join_raw(cmd);
    if template.trim().is_empty() {
        return false;
    }
    let mut scripts: Vec<String> = args
        .iter()
        .filter(|w| !w.text.starts_with(":::"))
        .take(MAX_PARALLEL)
        .map(|a| {
            let arg = crate::shell::word::render_word(&a.text);
            if template.contains("{}") {
                template.replace("{}", &arg)
            } else {
                format!("{template} {arg}")
            }
        })
        .collect();
    if scripts.is_empty() {
        // Arguments from stdin: the command with one unknown operand.
        scripts.push(template.replace("{}", "\"$PARALLEL_ARG\""));
    }
    for s in scripts {
        p.scripts.push(super::Script {
            text: s,
            dialect: Dialect::Posix,
            via: "parallel",
            args: None,
        });
    }
    p.wrappers.push("parallel".to_string());
    p.argv.clear();
    false
}
