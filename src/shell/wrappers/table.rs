//! Wrappers described by their grammar, not by code: which options take a value, how many
//! operands come before the command, and which option carries a command string.
//!
//! `flock [-x] FILE CMD…` / `flock FILE -c 'CMD'`, `su [-] [USER] -c 'CMD'`, `runuser -u U --
//! CMD`, `script -qc 'CMD' [FILE]`, `taskset MASK CMD`, `strace -f -o F CMD`, `systemd-run
//! --user CMD`, `chronic CMD`, `coproc CMD`, ... are rows of [`GRAMMARS`]. `parallel` has its
//! own small handler: its command is a template over the arguments after `:::`.

use super::{Peel, add_script, first_operand, keep_from};
use crate::shell::Dialect;
use crate::shell::word::Word;

/// Upper bound on the commands `parallel` is expanded to.
const MAX_PARALLEL: usize = 16;

/// How one wrapper reads its arguments.
pub(super) struct Grammar {
    pub names: &'static [&'static str],
    /// Short options that take a value.
    pub short_val: &'static str,
    /// Long options that take a value (without `--`).
    pub long_val: &'static [&'static str],
    /// Operands before the command (`flock FILE`, `taskset MASK`, `chrt PRIO`).
    pub skip: usize,
    /// Short options whose value is a command string.
    pub script_short: &'static str,
    /// Long options whose value is a command string.
    pub script_long: &'static [&'static str],
    /// Options may follow operands (`su - root -c 'cmd'`): look for the script option in
    /// every argument.
    pub permute: bool,
    /// Nothing runs without the script option (`su USER` is an interactive shell).
    pub needs_script: bool,
}

const fn g(names: &'static [&'static str], short_val: &'static str) -> Grammar {
    Grammar {
        names,
        short_val,
        long_val: &[],
        skip: 0,
        script_short: "",
        script_long: &[],
        permute: false,
        needs_script: false,
    }
}

/// The table. Rows are plain prefixes unless they say otherwise.
pub(super) const GRAMMARS: &[Grammar] = &[
    Grammar {
        long_val: &["timeout", "conflict-exit-code"],
        skip: 1,
        script_short: "c",
        script_long: &["command"],
        ..g(&["flock"], "wE")
    },
    Grammar {
        long_val: &["group", "supp-group", "shell", "whitelist-environment"],
        script_short: "c",
        script_long: &["command", "session-command"],
        permute: true,
        needs_script: true,
        ..g(&["su", "sg"], "gGsw")
    },
    Grammar {
        long_val: &["user", "group", "supp-group", "shell"],
        script_short: "c",
        script_long: &["command", "session-command"],
        ..g(&["runuser"], "ugGs")
    },
    Grammar {
        long_val: &[
            "timing",
            "log-in",
            "log-out",
            "log-io",
            "log-timing",
            "echo",
        ],
        script_short: "c",
        script_long: &["command"],
        needs_script: true,
        ..g(&["script"], "ETIOBm")
    },
    Grammar {
        skip: 1,
        ..g(&["taskset"], "")
    },
    Grammar {
        skip: 1,
        ..g(&["chrt"], "")
    },
    Grammar {
        skip: 1,
        ..g(&["faketime"], "f")
    },
    Grammar {
        long_val: &["output", "signal", "trace", "expr"],
        ..g(&["strace", "ltrace"], "oepsuaEIXSbPn")
    },
    Grammar {
        long_val: &[
            "unit",
            "property",
            "description",
            "slice",
            "uid",
            "gid",
            "nice",
            "working-directory",
            "setenv",
            "on-active",
            "on-calendar",
            "machine",
            "host",
            "timer-property",
            "path-property",
            "socket-property",
        ],
        ..g(&["systemd-run"], "pEMH")
    },
    Grammar {
        long_val: &[
            "cpunodebind",
            "membind",
            "physcpubind",
            "interleave",
            "preferred",
        ],
        ..g(&["numactl"], "NmCip")
    },
    g(&["cgexec"], "g"),
    g(
        &[
            "chronic",
            "coproc",
            "pkexec",
            "dbus-launch",
            "catchsegv",
            "proxychains",
            "tsocks",
            "torsocks",
            "sem",
        ],
        "",
    ),
    g(&["unshare", "nsenter"], "tSGw"),
    g(&["xvfb-run"], "nsfpe"),
    g(&["valgrind", "firejail"], ""),
    Grammar {
        skip: 1,
        ..g(&["entr"], "")
    },
    Grammar {
        script_long: &["run", "command"],
        needs_script: false,
        ..g(&["nix-shell"], "pIA")
    },
];

/// The grammar of a wrapper named `name`, if the table has one.
pub(super) fn grammar(name: &str) -> Option<&'static Grammar> {
    GRAMMARS.iter().find(|g| g.names.contains(&name))
}

/// The command string carried by the script option in `args[from..]`, if any.
fn script_value(args: &[Word], from: usize, g: &Grammar) -> Option<(String, usize)> {
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
            i += if v.is_none() && g.long_val.contains(&n) {
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
                if g.short_val.contains(c) {
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
pub(super) fn peel(p: &mut Peel, name: &str, g: &Grammar) -> bool {
    if let Some((text, _)) = script_value(&p.argv, 1, g) {
        let via: &'static str = match name {
            "flock" => "flock -c",
            "su" | "sg" => "su -c",
            "runuser" => "runuser -c",
            "script" => "script -c",
            "nix-shell" => "nix-shell --run",
            _ => "wrapper -c",
        };
        return add_script(p, text, Dialect::Posix, via);
    }
    if g.needs_script {
        p.argv.clear();
        p.wrappers.push(name.to_string());
        return false;
    }
    let i = first_operand(&p.argv, 1, g.short_val, g.long_val);
    keep_from(p, i + g.skip, name)
}

/// `parallel [opts] CMD… ::: ARGS…`: one command per argument, `{}` replaced (or the
/// argument appended), analysed as scripts.
pub(super) fn parallel(p: &mut Peel) -> bool {
    let i = first_operand(
        &p.argv,
        1,
        "jSn",
        &["jobs", "sshlogin", "max-args", "delay", "joblog", "results"],
    );
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
        });
    }
    p.wrappers.push("parallel".to_string());
    p.argv.clear();
    false
}
