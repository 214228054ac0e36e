//! getopt-style option parsing of one command's arguments (GNU style).

use super::Word;

/// Options and operands of one command's arguments.
#[derive(Debug, Default)]
pub struct Opts<'a> {
    /// Flags without a value: short letters (`"f"`) and long names (`"--force"`).
    pub flags: Vec<String>,
    /// Options with a value: (`"m"` or `"--message"`, value).
    pub values: Vec<(String, &'a str)>,
    /// Operands in order.
    pub operands: Vec<&'a Word>,
    /// How many operands came before `--` (all of them when there was none).
    pub before_dashdash: usize,
    /// A `--` was seen.
    pub dashdash: bool,
}

impl<'a> Opts<'a> {
    /// Parse `args` (GNU style: options may follow operands; `--` ends options).
    /// `short_val` lists short options that take a value, `long_val` long ones.
    pub fn parse(args: &'a [Word], short_val: &str, long_val: &[&str]) -> Opts<'a> {
        let mut o = Opts::default();
        let mut i = 0;
        while i < args.len() {
            let t = args[i].text.as_str();
            if o.dashdash || t == "-" || !t.starts_with('-') {
                o.operands.push(&args[i]);
                i += 1;
                continue;
            }
            if t == "--" {
                o.dashdash = true;
                o.before_dashdash = o.operands.len();
                i += 1;
                continue;
            }
            if let Some(long) = t.strip_prefix("--") {
                if let Some((n, v)) = long.split_once('=') {
                    o.values.push((format!("--{n}"), v));
                } else if long_val.contains(&long) {
                    let v = args.get(i + 1).map_or("", |w| w.text.as_str());
                    o.values.push((format!("--{long}"), v));
                    i += 1;
                } else {
                    o.flags.push(format!("--{long}"));
                }
                i += 1;
                continue;
            }
            let bundle = &t[1..];
            for (k, c) in bundle.char_indices() {
                if short_val.contains(c) {
                    let rest = &bundle[k + c.len_utf8()..];
                    let v = if rest.is_empty() {
                        i += 1;
                        args.get(i).map_or("", |w| w.text.as_str())
                    } else {
                        rest
                    };
                    o.values.push((c.to_string(), v));
                    break;
                }
                o.flags.push(c.to_string());
            }
            i += 1;
        }
        if !o.dashdash {
            o.before_dashdash = o.operands.len();
        }
        o
    }

    /// A flag or valued option by any of `names` (`"f"`, `"--force"`).
    pub fn has(&self, names: &[&str]) -> bool {
        self.flags.iter().any(|f| names.contains(&f.as_str()))
            || self.values.iter().any(|(n, _)| names.contains(&n.as_str()))
    }

    /// The last value of an option named by any of `names`.
    pub fn value(&self, names: &[&str]) -> Option<&'a str> {
        self.values
            .iter()
            .rev()
            .find(|(n, _)| names.contains(&n.as_str()))
            .map(|(_, v)| *v)
    }

    /// `-h` / `--help`.
    pub fn help(&self) -> bool {
        self.has(&["h", "--help"])
    }
}
