//! What the shell itself resolves before a command runs: variables assigned earlier in the
//! same command, `for` loops over literal lists, aliases defined in it, defaults
//! (`${X:-git}`), and substitutions whose output the text already tells (`$(echo dist)`,
//! `` `echo dist` ``, `$(command -v git)`, `$(which git)`).
//!
//! Decisions:
//! - A variable is known from `NAME=value` (also after `export`, `local`, `declare`,
//!   `readonly`, `typeset`) when its value resolves to literal text; an assignment whose
//!   value does not resolve makes the variable unknown again. Prefix assignments
//!   (`X=1 cmd`) only reach that command's environment and are not recorded.
//! - `for NAME in WORDS` gives NAME every word; a segment using it is analysed once per
//!   value (`for c in status stash; do git $c; done` runs `git status` and `git stash`).
//! - An unassigned `${NAME:-default}` (or `${NAME-default}`, `${NAME:=default}`) is the
//!   default: a variable the command never sets is usually unset.
//! - An unquoted expansion whose value holds blanks splits into words; a value with pattern
//!   characters is a pattern.
//! - Values are scoped like `cd`: a subshell's assignments end with it. Nested scripts
//!   (`bash -c`) see the variables of the command around them.
//! - Positional parameters (`$1`, `"$@"`, `$*`, `$#`, `shift`) are known where the text
//!   tells them: in a function the command calls (its arguments), in `sh -c '…' arg0 args`
//!   and after `set -- …`. Elsewhere they are the caller's and stay as written.
//! - Bounded: [`MAX_VALUE`] bytes per value, [`MAX_VALUES`] values per loop, [`MAX_VARS`]
//!   variables.

use super::word::{Word, is_assignment, split_plain};

/// Longest value kept for one variable.
pub const MAX_VALUE: usize = 4096;
/// Most values one `for` loop gives its variable.
pub const MAX_VALUES: usize = 64;
/// Most variables and aliases remembered in one scope.
pub const MAX_VARS: usize = 256;

/// What the command itself set so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vars {
    /// Variables: `None` when assigned a value the text cannot tell.
    vars: Vec<(String, Option<Vec<String>>)>,
    aliases: Vec<(String, String)>,
    /// `$1`, `$2`, … when the text tells them (a function's call, `sh -c '…' arg0 args`,
    /// `set -- …`); `None` where they are the caller's, which the text does not tell.
    positional: Option<Vec<Word>>,
    /// Arrays assigned a literal list (`a=(git reset --hard)`): their elements.
    arrays: Vec<(String, Vec<String>)>,
}

impl Vars {
    /// Nothing was set.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
            && self.aliases.is_empty()
            && self.positional.is_none()
            && self.arrays.is_empty()
    }

    /// The positional parameters are `args` (a function's call, `sh -c` after `$0`).
    pub fn set_positional(&mut self, args: &[Word]) {
        let mut args = args.to_vec();
        args.truncate(MAX_VALUES);
        for a in &mut args {
            a.subs.clear();
        }
        self.positional = Some(args);
    }

    /// Whether the positional parameters are known.
    pub fn has_positional(&self) -> bool {
        self.positional.is_some()
    }

    fn set(&mut self, name: &str, value: Option<Vec<String>>) {
        self.vars.retain(|(n, _)| n != name);
        if self.vars.len() < MAX_VARS {
            self.vars.push((name.to_string(), value));
        }
    }

    fn get(&self, name: &str) -> Option<&Option<Vec<String>>> {
        self.vars.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }

    fn alias(&self, name: &str) -> Option<&str> {
        self.aliases
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Records what a segment of `words` (leading reserved words removed) sets: plain
    /// assignments, `for NAME in …` headers and `alias NAME=value`. Returns a line for
    /// explanations per variable set.
    pub fn record(&mut self, words: &[Word]) -> Vec<String> {
        let mut notes = Vec::new();
        let Some(first) = words.first() else {
            return notes;
        };
        let decl = matches!(
            first.text.as_str(),
            "export" | "local" | "declare" | "readonly" | "typeset"
        ) && !first.quoted;
        if !first.quoted && first.text == "for" {
            if let (Some(name), Some(kw)) = (words.get(1), words.get(2))
                && kw.text == "in"
                && is_name(&name.text)
            {
                let mut values = Vec::new();
                let mut known = true;
                for w in words[3..].iter().take(MAX_VALUES) {
                    match self.expand(w) {
                        Some(ws) => values.extend(ws.into_iter().map(|w| w.text)),
                        None => known = false,
                    }
                }
                values.truncate(MAX_VALUES);
                notes.push(if known {
                    format!("for ${} in {}", name.text, values.join(" "))
                } else {
                    format!("for ${}: values not known", name.text)
                });
                self.set(&name.text, known.then_some(values));
            }
            return notes;
        }
        if !first.quoted && first.text == "shift" {
            if let Some(p) = self.positional.as_mut() {
                let n = words
                    .get(1)
                    .map_or(Some(1), |w| w.text.parse::<usize>().ok());
                match n {
                    Some(n) => {
                        p.drain(..n.min(p.len()));
                        notes.push(format!("shift {n}"));
                    }
                    None => self.positional = None,
                }
            }
            return notes;
        }
        if !first.quoted && first.text == "set" {
            // `set -- a b`, `set a b`: new positional parameters; `set -e` only sets options.
            let rest = &words[1..];
            let args = match rest.first().map(|w| w.text.as_str()) {
                Some("--") => Some(&rest[1..]),
                Some(t) if !t.starts_with(['-', '+']) => Some(rest),
                _ => None,
            };
            if let Some(args) = args {
                let mut known = Vec::new();
                for w in args {
                    match self.expand_one(w) {
                        Some(ws) => known.extend(ws),
                        None => known.push(w.clone()),
                    }
                }
                notes.push(format!(
                    "set -- {}",
                    known
                        .iter()
                        .map(|w| w.render())
                        .collect::<Vec<_>>()
                        .join(" ")
                ));
                self.set_positional(&known);
            }
            return notes;
        }
        if !first.quoted && first.text == "alias" {
            for w in &words[1..] {
                if let Some((n, v)) = w.text.split_once('=')
                    && !w.dynamic
                    && self.aliases.len() < MAX_VARS
                {
                    self.aliases.retain(|(a, _)| a != n);
                    self.aliases.push((n.to_string(), v.to_string()));
                    notes.push(format!("alias {n}={v}"));
                }
            }
            return notes;
        }
        let assigns = if decl { &words[1..] } else { words };
        let all = !assigns.is_empty()
            && assigns
                .iter()
                .all(|w| is_assignment(&w.text) || (decl && w.text.starts_with('-')));
        if !all {
            return notes;
        }
        for w in assigns.iter().filter(|w| is_assignment(&w.text)) {
            let (name, raw) = w.text.split_once('=').unwrap_or((&w.text, ""));
            let name = name.trim_end_matches('+');
            if name.contains('[') {
                continue;
            }
            self.arrays.retain(|(n, _)| n != name);
            // `a=(x y z)`: an array; `$a` is its first element.
            if let Some(list) = raw.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
                let unknown = w.dynamic || list.contains(['$', '`']);
                let elems: Vec<String> = if unknown {
                    Vec::new()
                } else {
                    list.split_ascii_whitespace()
                        .take(MAX_VALUES)
                        .map(String::from)
                        .collect()
                };
                notes.push(format!("${name} = ({list})"));
                if unknown || list.len() > MAX_VALUE {
                    self.set(name, None);
                    continue;
                }
                self.set(name, Some(vec![elems.first().cloned().unwrap_or_default()]));
                if self.arrays.len() < MAX_VARS {
                    self.arrays.push((name.to_string(), elems));
                }
                continue;
            }
            let value = if w.dynamic {
                let v = Word {
                    text: raw.to_string(),
                    quoted: true,
                    dynamic: true,
                    ..Word::default()
                };
                self.expand(&v)
                    .map(|ws| ws.into_iter().map(|w| w.text).collect::<Vec<_>>().join(" "))
            } else {
                Some(raw.to_string())
            };
            let value = value.filter(|v| v.len() <= MAX_VALUE);
            notes.push(match &value {
                Some(v) => format!("${name} = {v}"),
                None => format!("${name} = (not known)"),
            });
            self.set(name, value.map(|v| vec![v]));
        }
        notes
    }

    /// Records a PowerShell assignment `$name = <value>` (see [`ps_value`]); a value the
    /// text cannot tell forgets the variable. Returns a line for explanations.
    pub fn record_ps(&mut self, words: &[Word]) -> Vec<String> {
        let (Some(var), Some(eq)) = (words.first(), words.get(1)) else {
            return Vec::new();
        };
        let Some(name) = ps_name(&var.text) else {
            return Vec::new();
        };
        if eq.text != "=" || eq.quoted {
            return Vec::new();
        }
        let value = ps_value(&words[2..]).filter(|v| v.len() <= MAX_VALUE);
        let note = match &value {
            Some(v) => format!("${name} = {v}"),
            None => format!("${name} = (not known)"),
        };
        self.set(&format!("ps:{name}"), value.map(|v| vec![v]));
        vec![note]
    }

    /// Replaces PowerShell expansions whose value is known: `$name`/`${name}` words the
    /// command assigned, and a head that is a literal concatenation (`& ('np'+'m')`).
    pub fn apply_ps(&self, words: &mut [Word]) -> Vec<String> {
        let mut notes = Vec::new();
        for (k, w) in words.iter_mut().enumerate() {
            if !w.dynamic {
                continue;
            }
            let value = match ps_name(&w.text) {
                Some(name) => match self.get(&format!("ps:{name}")) {
                    Some(Some(v)) => v.first().cloned(),
                    _ => None,
                },
                None if k == 0 => ps_concat(&w.text).or_else(|| ps_command_of(&w.text)),
                None => None,
            };
            if let Some(v) = value {
                notes.push(format!("{} → {v}", w.text));
                *w = Word {
                    expanded: true,
                    ..Word::quoted(v)
                };
            }
        }
        notes
    }

    /// One scope per value of a loop variable `words` use (empty when they use none): a
    /// segment inside `for d in a b` runs once with each value.
    pub fn each_value(&self, words: &[Word]) -> Vec<Vars> {
        let used = |name: &str| {
            words.iter().any(|w| {
                w.dynamic
                    && (w.text.contains(&format!("${{{name}}}"))
                        || w.text.match_indices(&format!("${name}")).any(|(k, m)| {
                            !w.text[k + m.len()..]
                                .starts_with(|c: char| c == '_' || c.is_ascii_alphanumeric())
                        }))
            })
        };
        let Some((name, values)) = self.vars.iter().find_map(|(n, v)| match v {
            Some(list) if list.len() > 1 && used(n) => Some((n, list)),
            _ => None,
        }) else {
            return Vec::new();
        };
        values
            .iter()
            .map(|v| {
                let mut one = self.clone();
                one.set(name, Some(vec![v.clone()]));
                one
            })
            .collect()
    }

    /// `words` with what the command set substituted: an alias at the head, known
    /// variables and literal substitutions in any word. Words that stay unknown are kept.
    pub fn apply(&self, words: &mut Vec<Word>) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(head) = words.first()
            && !head.quoted
            && !head.dynamic
            && let Some(value) = self.alias(&head.text)
        {
            notes.push(format!("alias {} → {value}", head.text));
            let mut new = split_plain(value, 64);
            new.extend(words.drain(1..));
            *words = new;
        }
        if !words.iter().any(|w| w.dynamic) {
            return notes;
        }
        let mut out = Vec::with_capacity(words.len());
        for w in words.drain(..) {
            if !w.dynamic {
                out.push(w);
                continue;
            }
            match self.expand(&w) {
                Some(ws) => {
                    notes.push(format!(
                        "{} → {}",
                        w.text,
                        ws.iter().map(|w| w.render()).collect::<Vec<_>>().join(" ")
                    ));
                    out.extend(ws.into_iter().map(|mut w| {
                        w.expanded = true;
                        w
                    }));
                }
                None => out.push(w),
            }
        }
        *words = out;
        notes
    }

    /// [`Vars::expand`] for a word that stays as written when it is not known.
    fn expand_one(&self, w: &Word) -> Option<Vec<Word>> {
        if w.dynamic {
            self.expand(w)
        } else {
            Some(vec![w.clone()])
        }
    }

    /// The words `w` stands for, when every expansion in it is known.
    fn expand(&self, w: &Word) -> Option<Vec<Word>> {
        let text = w.text.as_str();
        // `"$@"`: each parameter one word, as it was passed.
        if matches!(text, "$@" | "${@}")
            && let Some(p) = &self.positional
        {
            if w.quoted {
                return Some(p.clone());
            }
            let mut out = Vec::new();
            for a in p {
                if a.dynamic {
                    out.push(a.clone());
                } else {
                    out.extend(a.text.split_ascii_whitespace().map(|s| literal(s, true)));
                }
            }
            return Some(out);
        }
        // `"${a[@]}"`: each element one word.
        if let Some(name) = text
            .strip_prefix("${")
            .and_then(|t| t.strip_suffix("[@]}").or_else(|| t.strip_suffix("[*]}")))
            && let Some((_, elems)) = self.arrays.iter().find(|(n, _)| n == name)
        {
            if w.quoted && text.ends_with("[@]}") {
                return Some(elems.iter().map(|e| literal(e, false)).collect());
            }
            if !w.quoted {
                return Some(elems.iter().map(|e| literal(e, true)).collect());
            }
        }
        // A leading `~` is the home folder, which no variable here holds: the word stays as
        // written (and dynamic) for the path steps that read `~`, not a literal folder named `~`.
        if text.starts_with('~') {
            return None;
        }
        // A process substitution is a file name the shell makes up: not a value.
        if text.starts_with("<(") || text.starts_with(">(") {
            return None;
        }
        let mut parts: Vec<Part> = Vec::new();
        let mut lit = String::new();
        let mut substituted = false;
        let mut i = 0;
        let b = text.as_bytes();
        while i < b.len() {
            let (part, next) = match b[i] {
                b'$' => self.dollar(text, i)?,
                b'`' => {
                    let end = text[i + 1..].find('`')? + i + 1;
                    (literal_output(&text[i + 1..end])?, end + 1)
                }
                _ => {
                    let c = text[i..].chars().next()?;
                    lit.push(c);
                    i += c.len_utf8();
                    continue;
                }
            };
            if !lit.is_empty() {
                parts.push(Part::One(std::mem::take(&mut lit)));
            }
            substituted |= !matches!(part, Part::Kept(_));
            parts.push(part);
            i = next;
        }
        if !lit.is_empty() {
            parts.push(Part::One(lit));
        }
        // A word whose expansions are all kept as written is unchanged.
        let any_kept = parts.iter().any(|p| matches!(p, Part::Kept(_)));
        if any_kept && !substituted {
            return None;
        }
        // Combine: at most one multi-valued part (a loop variable).
        let mut values: Vec<String> = vec![String::new()];
        let mut multi = false;
        let mut passed = false;
        for p in parts {
            match p {
                Part::Passed(s) => {
                    passed = true;
                    values.iter_mut().for_each(|v| v.push_str(&s));
                }
                Part::One(s) | Part::Kept(s) => values.iter_mut().for_each(|v| v.push_str(&s)),
                Part::Many(list) => {
                    if multi {
                        return None;
                    }
                    multi = true;
                    values = list
                        .iter()
                        .flat_map(|l| values.iter().map(move |v| format!("{v}{l}")))
                        .collect();
                }
            }
        }
        let split = !w.quoted;
        // Unquoted, the value splits on `$IFS` (spaces, tabs and newlines unless the command set
        // it); an `IFS` the text cannot tell splits it in ways it cannot tell either.
        let ifs = match self.get("IFS") {
            None => None,
            Some(Some(v)) if v.len() == 1 => Some(v[0].as_str()),
            Some(_) if split => return None,
            Some(_) => None,
        };
        let mut out = Vec::new();
        for v in values {
            if v.len() > MAX_VALUE {
                return None;
            }
            if split && let Some(ifs) = ifs {
                for s in v.split(|c| ifs.contains(c)).filter(|s| !s.is_empty()) {
                    out.push(literal(s, true));
                }
            } else if split {
                for s in v.split_ascii_whitespace() {
                    out.push(literal(s, true));
                }
            } else {
                out.push(literal(&v, false));
            }
        }
        // What is still written as an expansion is still unknown here (the path steps may
        // know it: `$HOME`, the variables the shell inherits).
        out.iter_mut().for_each(|w| w.dynamic |= any_kept || passed);
        Some(out)
    }

    /// The expansion starting at `text[i] == '$'` and where it ends.
    fn dollar(&self, text: &str, i: usize) -> Option<(Part, usize)> {
        let rest = &text[i + 1..];
        if let Some(inner) = rest.strip_prefix('(') {
            if inner.starts_with('(') {
                return None; // arithmetic
            }
            let end = inner.find(')')?;
            let next = i + 2 + end + 1;
            // An output the text cannot tell is kept as written (`$(pwd)` is read as a path).
            let out =
                literal_output(&inner[..end]).unwrap_or_else(|| Part::Kept(text[i..next].into()));
            return Some((out, next));
        }
        if let Some(p) = &self.positional
            && let Some((part, len)) = positional(p, rest)
        {
            return Some((part, i + 1 + len));
        }
        if let Some(inner) = rest.strip_prefix('{') {
            let end = inner.find('}')?;
            let body = &inner[..end];
            let next = i + 2 + end + 1;
            // `${a[1]}`, `${a[@]}` inside a longer word, `${#a[@]}`.
            if let Some((name, idx)) = body.strip_suffix(']').and_then(|b| b.split_once('[')) {
                let (count, name) = match name.strip_prefix('#') {
                    Some(n) => (true, n),
                    None => (false, name),
                };
                let elems = &self.arrays.iter().find(|(n, _)| n == name)?.1;
                let part = match idx {
                    _ if count => Part::One(elems.len().to_string()),
                    "@" | "*" => Part::One(elems.join(" ")),
                    k => Part::One(
                        elems
                            .get(k.parse::<usize>().ok()?)
                            .cloned()
                            .unwrap_or_default(),
                    ),
                };
                return Some((part, next));
            }
            let (name, default) = match body.find([':', '-', '=']) {
                Some(k) => {
                    let op = &body[k..];
                    let d = op
                        .strip_prefix(":-")
                        .or_else(|| op.strip_prefix(":="))
                        .or_else(|| op.strip_prefix('-'))
                        .or_else(|| op.strip_prefix('='))?;
                    (&body[..k], Some(d))
                }
                None => (body, None),
            };
            if !is_name(name) || default.is_some_and(|d| d.contains(['$', '`'])) {
                return None;
            }
            return match (self.get(name), default) {
                (Some(Some(v)), _) => Some((Part::from(v), next)),
                (Some(None), _) => None,
                (None, Some(d)) => Some((Part::One(d.to_string()), next)),
                // Never set by the command: the shell's inherited value, kept as written.
                (None, None) => Some((Part::Kept(text[i..next].to_string()), next)),
            };
        }
        let len = rest
            .bytes()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == b'_')
            .count();
        let name = &rest[..len];
        if !is_name(name) {
            return None;
        }
        match self.get(name) {
            Some(Some(v)) => Some((Part::from(v), i + 1 + len)),
            Some(None) => None,
            None => Some((Part::Kept(text[i..i + 1 + len].to_string()), i + 1 + len)),
        }
    }
}

/// A positional parameter at the start of `rest` (the text after `$`): `$1`, `${12}`, `$#`,
/// `$*`, `$@` (joined: a word that is only `"$@"` is read by [`Vars::expand`]), and how many
/// bytes it spans. A parameter passed as an expansion stays one, as written.
fn positional(p: &[Word], rest: &str) -> Option<(Part, usize)> {
    let (name, len) = match rest.as_bytes().first()? {
        b'0'..=b'9' | b'#' | b'*' | b'@' => (&rest[..1], 1),
        b'{' => {
            let end = rest.find('}')?;
            let inner = &rest[1..end];
            let all_digits = !inner.is_empty() && inner.bytes().all(|b| b.is_ascii_digit());
            if !(all_digits || matches!(inner, "#" | "*" | "@")) {
                return None;
            }
            (inner, end + 1)
        }
        _ => return None,
    };
    let value = |w: &Word| {
        if w.dynamic {
            Part::Passed(w.text.clone())
        } else {
            Part::One(w.text.clone())
        }
    };
    let part = match name {
        "#" => Part::One(p.len().to_string()),
        "*" | "@" => {
            if p.iter().any(|w| w.dynamic) {
                Part::Passed(
                    p.iter()
                        .map(|w| w.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            } else {
                Part::One(
                    p.iter()
                        .map(|w| w.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" "),
                )
            }
        }
        // `$0` is the shell's name, which the text does not tell.
        "0" => return None,
        n => {
            let k: usize = n.parse().ok()?;
            p.get(k - 1).map_or(Part::One(String::new()), value)
        }
    };
    Some((part, len))
}

enum Part {
    One(String),
    Many(Vec<String>),
    /// A parameter passed as an expansion (`f "$X"`): its text, still an expansion.
    Passed(String),
    /// An expansion the command never set, kept as written.
    Kept(String),
}

impl Part {
    fn from(v: &[String]) -> Part {
        match v {
            [one] => Part::One(one.clone()),
            many => Part::Many(many.to_vec()),
        }
    }
}

/// The lowercased name of a PowerShell variable word: `$x`, `${x}`, `$env:X`.
fn ps_name(text: &str) -> Option<String> {
    let rest = text.strip_prefix('$')?;
    let rest = rest
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(rest);
    let ok = !rest.is_empty()
        && rest
            .chars()
            .all(|c| c == '_' || c == ':' || c.is_ascii_alphanumeric());
    ok.then(|| rest.to_ascii_lowercase())
}

/// A PowerShell value the words tell: one literal word, literals joined by `+` words
/// (`'np' + 'm'`), or a parenthesised concatenation (`("np"+"m")`).
pub fn ps_value(words: &[Word]) -> Option<String> {
    if let [w] = words {
        if w.text.starts_with('(') {
            return ps_concat(&w.text);
        }
        return (!w.dynamic).then(|| w.text.clone());
    }
    let mut out = String::new();
    for (k, w) in words.iter().enumerate() {
        if k % 2 == 1 {
            if w.text != "+" || w.quoted {
                return None;
            }
        } else if w.dynamic {
            return None;
        } else {
            out.push_str(&w.text);
        }
    }
    (words.len() % 2 == 1).then_some(out)
}

/// `(Get-Command npm)`, `(gcm npm).Source`: the command it names.
fn ps_command_of(text: &str) -> Option<String> {
    let t = text.strip_prefix('(')?;
    let (inner, after) = t.split_once(')')?;
    let member = after.to_ascii_lowercase();
    if !matches!(
        member.as_str(),
        "" | ".source" | ".path" | ".definition" | ".name"
    ) {
        return None;
    }
    let mut words = inner.split_whitespace();
    let head = words.next()?.to_ascii_lowercase();
    if !matches!(head.as_str(), "get-command" | "gcm") {
        return None;
    }
    let name = words.find(|w| !w.starts_with('-'))?;
    Some(name.trim_matches(['\'', '"']).to_string()).filter(|n| !n.is_empty())
}

/// Raw PowerShell text that is only quoted literals joined by `+`, in parentheses or not
/// (`('np'+'m run build')`): the joined value.
pub fn ps_concat(text: &str) -> Option<String> {
    let mut t = text.trim();
    while let Some(inner) = t.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        t = inner.trim();
    }
    let mut out = String::new();
    let mut rest = t;
    loop {
        rest = rest.trim_start();
        let q = rest.chars().next().filter(|c| matches!(c, '\'' | '"'))?;
        let body = &rest[1..];
        let mut end = None;
        let mut chars = body.char_indices().peekable();
        let mut lit = String::new();
        while let Some((i, c)) = chars.next() {
            if c == q {
                if chars.peek().is_some_and(|(_, n)| *n == q) {
                    lit.push(q);
                    chars.next();
                    continue;
                }
                end = Some(i + 1);
                break;
            }
            if q == '"' && matches!(c, '$' | '`') {
                return None;
            }
            lit.push(c);
        }
        out.push_str(&lit);
        rest = body[end?..].trim_start();
        if rest.is_empty() {
            return Some(out);
        }
        rest = rest.strip_prefix('+')?;
    }
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f == '_' || f.is_ascii_alphabetic())
        && c.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

fn literal(text: &str, unquoted: bool) -> Word {
    Word {
        text: text.to_string(),
        quoted: !unquoted,
        glob: unquoted && text.contains(['*', '?', '[']),
        ..Word::default()
    }
}

/// The output of a substitution the text already tells: `echo WORDS`, `printf %s WORD`,
/// `command -v NAME`, `which NAME`, `type -P NAME`.
fn literal_output(cmd: &str) -> Option<Part> {
    if cmd.contains(['$', '`', '|', ';', '&', '>', '<', '(', '\'', '"', '\\']) {
        return None;
    }
    let words: Vec<&str> = cmd.split_ascii_whitespace().collect();
    let out = match words.as_slice() {
        ["echo", rest @ ..] if !rest.first().is_some_and(|w| w.starts_with('-')) => rest.join(" "),
        ["printf", "%s", w] | ["printf", w] if !w.contains('%') => (*w).to_string(),
        ["command", "-v", name] | ["which", name] | ["type", "-P" | "-p", name] => {
            (*name).to_string()
        }
        _ => return None,
    };
    Some(Part::One(out))
}

#[cfg(test)]
mod tests {
    use crate::shell::{Dialect, analyze};

    fn argvs(cmd: &str) -> Vec<String> {
        analyze(cmd, Dialect::Posix)
            .segments
            .iter()
            .filter(|s| !s.argv.is_empty())
            .map(|s| {
                s.argv
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn variables_set_earlier_are_substituted() {
        assert!(argvs("x=git; $x checkout main").contains(&"git checkout main".into()));
        assert!(argvs("R=rm; $R -rf dist").contains(&"rm -rf dist".into()));
        assert!(argvs("${GIT:-git} reset --hard").contains(&"git reset --hard".into()));
        assert!(
            argvs("export T=tsconfig.node.json && tsc -p \"$T\"")
                .contains(&"tsc -p tsconfig.node.json".into())
        );
        assert!(argvs("C='rm -rf'; $C dist").contains(&"rm -rf dist".into()));
        // A value the text cannot tell stays an expansion.
        assert!(argvs("x=$(date); rm -rf $x").contains(&"rm -rf $x".into()));
        // A prefix assignment only reaches that command's environment.
        assert!(argvs("X=dist true; rm -rf $X").contains(&"rm -rf $X".into()));
    }

    #[test]
    fn loops_functions_aliases_and_literal_substitutions() {
        let loop_ = argvs("for d in dist dist-electron; do rm -rf \"$d\"; done");
        assert!(loop_.contains(&"rm -rf dist".into()), "{loop_:?}");
        assert!(loop_.contains(&"rm -rf dist-electron".into()), "{loop_:?}");
        assert!(argvs("alias g=git; g checkout main").contains(&"git checkout main".into()));
        assert!(argvs("rm -rf $(echo dist)").contains(&"rm -rf dist".into()));
        assert!(argvs("rm -rf `echo dist`").contains(&"rm -rf dist".into()));
        assert!(argvs("G=$(command -v git); $G add -A").contains(&"git add -A".into()));
        assert!(argvs("$(which git) stash").contains(&"git stash".into()));
        // A subshell's assignment ends with it.
        assert!(argvs("(x=git); $x stash").contains(&"$x stash".into()));
    }
}
