//! Words: one argv element after quote removal, and the small helpers rules use on them
//! (command names, flag unbundling, assignments).

/// One argv word after quote removal.
///
/// Expansions whose value is unknown before the command runs (`$HOME`, `${x}`, `$(…)`,
/// `` `…` ``, `%VAR%`) are kept in [`Word::text`] as written and flag the word
/// [`dynamic`](Word::dynamic); the commands inside substitutions become segments of their own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Word {
    /// The value with quotes and escapes removed.
    pub text: String,
    /// Some part of the word was quoted or escaped.
    pub quoted: bool,
    /// Some part is an expansion (parameter, command or process substitution, tilde).
    pub dynamic: bool,
    /// Holds an unquoted pattern character (`*`, `?`, `[`, `{`).
    pub glob: bool,
    /// The word began with a backslash escape (`\rm`), the usual way to skip an alias.
    pub backslashed: bool,
    /// The text came from an expansion the analysis resolved (`$S` after `S=api`,
    /// `${S:-api}`, `"$1"`): known now, but not written literally, so a rule that wants a
    /// literal name (a stream to claim or release) still refuses it.
    pub expanded: bool,
    /// Substitutions inside the word, as indices into the lexer's arena.
    pub(crate) subs: Subs,
}

/// The substitutions inside a word, as indices into the lexer's arena. Almost every word has
/// none, so the list is kept out of line: a word is 40 bytes, not 56, and a long script's
/// token and segment lists hold thousands of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(clippy::box_collection)] // the box is the point: one pointer in the word, not three
pub(crate) struct Subs(Option<Box<Vec<u32>>>);

impl Subs {
    pub(crate) fn clear(&mut self) {
        self.0 = None;
    }

    /// The indices, leaving none.
    pub(crate) fn take(&mut self) -> Vec<u32> {
        self.0.take().map(|v| *v).unwrap_or_default()
    }

    #[cfg(test)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().flat_map(|v| v.iter().copied())
    }
}

impl From<Vec<u32>> for Subs {
    fn from(v: Vec<u32>) -> Subs {
        // `Some` only when there is one, so that equal words compare equal.
        Subs((!v.is_empty()).then(|| Box::new(v)))
    }
}

impl Word {
    /// The word is written as it is meant: no expansion, resolved or not, made its text.
    pub fn is_written(&self) -> bool {
        !self.dynamic && !self.expanded
    }

    /// A plain unquoted literal word.
    pub fn plain(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            ..Word::default()
        }
    }

    /// A literal word that came out of quotes (used for words split out of a string).
    pub fn quoted(text: impl Into<String>) -> Word {
        Word {
            text: text.into(),
            quoted: true,
            ..Word::default()
        }
    }

    /// `-x`, `-abc` or `--long`: an option word (a lone `-` is an operand).
    pub fn is_flag(&self) -> bool {
        self.text.len() > 1 && self.text.starts_with('-')
    }

    /// The single-letter flags of a `-abc` word, unbundled (`-fdx` → `f`, `d`, `x`).
    /// Empty for long options, operands and `--`.
    pub fn short_flags(&self) -> impl Iterator<Item = char> + '_ {
        let t = self.text.as_str();
        let bundle = if t.len() > 1 && t.starts_with('-') && !t.starts_with("--") {
            &t[1..]
        } else {
            ""
        };
        bundle.chars()
    }

    /// The name of a `--long[=value]` option, without dashes and value.
    pub fn long_flag(&self) -> Option<&str> {
        let rest = self.text.strip_prefix("--")?;
        if rest.is_empty() {
            return None;
        }
        Some(rest.split_once('=').map_or(rest, |(n, _)| n))
    }

    /// Whether this word is the command-name form of `name` (see [`command_name`]).
    pub fn is_command(&self, name: &str) -> bool {
        command_name(&self.text) == name
    }

    /// Render the word back as shell text that would produce the same value.
    pub fn render(&self) -> String {
        render_word(&self.text)
    }
}

/// `text` quoted for a POSIX shell: unchanged when every byte is an ASCII letter, digit or
/// one of `-_./:=@+,%`, else in single quotes (`'` written `'\''`). The one quoting
/// function of the crate: hook command lines, shown argv, re-joined scripts.
pub fn quote_posix(text: &str) -> std::borrow::Cow<'_, str> {
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@+,%".contains(&b));
    if plain {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(format!("'{}'", text.replace('\'', r"'\''")))
    }
}

/// `text` for display as the command wrote it: expansions (`$x`, `*`, `~`) stay unquoted so
/// an explanation shows them; anything else a shell would split is quoted. Not for building
/// command lines: use [`quote_posix`].
pub fn render_word(text: &str) -> String {
    if text.is_empty() {
        return "''".to_string();
    }
    let plain = text.bytes().all(|b| {
        b.is_ascii_alphanumeric()
            || b >= 0x80
            || matches!(
                b,
                b'-' | b'_'
                    | b'.'
                    | b'/'
                    | b':'
                    | b'='
                    | b'+'
                    | b','
                    | b'@'
                    | b'%'
                    | b'$'
                    | b'{'
                    | b'}'
                    | b'*'
                    | b'?'
                    | b'['
                    | b']'
                    | b'~'
                    | b'\\'
                    | b'^'
            )
    });
    if plain {
        text.to_string()
    } else if !text.contains('\'') {
        format!("'{text}'")
    } else {
        let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
        format!("\"{escaped}\"")
    }
}

/// The last path component of `text`, splitting on `/` and `\`.
pub fn basename(text: &str) -> &str {
    let b = text.as_bytes();
    let mut end = b.len();
    while end > 0 && matches!(b[end - 1], b'/' | b'\\') {
        end -= 1;
    }
    let start = b[..end]
        .iter()
        .rposition(|&c| c == b'/' || c == b'\\')
        .map_or(0, |i| i + 1);
    &text[start..end]
}

/// Whether a command word reads like a Windows program: a `.exe`-style suffix, a backslash
/// or a drive letter.
pub fn is_windowsish(text: &str) -> bool {
    let b = text.as_bytes();
    let drive = b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic();
    drive || text.contains('\\') || windows_ext(basename(text)).is_some()
}

fn windows_ext(base: &str) -> Option<usize> {
    let b = base.as_bytes();
    if b.len() < 5 || b[b.len() - 4] != b'.' {
        return None;
    }
    let ext = &b[b.len() - 3..];
    let known = [b"exe", b"cmd", b"bat", b"com"]
        .iter()
        .any(|e| ext.eq_ignore_ascii_case(*e));
    known.then_some(b.len() - 4)
}

/// The name a command word runs, for comparing heads: the basename, lowercased, with
/// `.exe`/`.cmd`/`.bat`/`.com` dropped (`C:\Git\bin\GIT.EXE` → `git`).
///
/// Names compare case-insensitively everywhere: a guard that misses `Git` on Windows
/// costs more than one that also matches a rare mixed-case Linux program.
///
/// Borrowed when the name is already in that form (the common case: `git`, `npm`), so the
/// analysis of a long script does not allocate a string per command word.
pub fn command_name(text: &str) -> std::borrow::Cow<'_, str> {
    // Most command words (`grep`, `echo`, `-rn`) have no separator, no extension and no
    // capital: the name is the word, found in one pass. It is asked several times a segment.
    if !text.bytes().any(|b| NAME_BREAK[usize::from(b)]) {
        return std::borrow::Cow::Borrowed(text);
    }
    let base = basename(text);
    let stem = match windows_ext(base) {
        Some(end) => &base[..end],
        None => base,
    };
    lowercased(stem)
}

/// The bytes that make a command word more than its own name: separators, an extension's dot
/// and capitals. A table, as the test runs on every byte of every command word.
static NAME_BREAK: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = matches!(b as u8, b'/' | b'\\' | b'.' | b'A'..=b'Z');
        b += 1;
    }
    t
};

/// `text` in ASCII lowercase, borrowed when it already is.
fn lowercased(text: &str) -> std::borrow::Cow<'_, str> {
    if text.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(text.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The lowercased basename with its extension kept (`.\run.BAT` → `run.bat`).
pub fn base_lower(text: &str) -> String {
    basename(text).to_ascii_lowercase()
}

/// [`base_lower`], borrowed when the basename is already lowercase (most command words).
pub fn base_lowered(text: &str) -> std::borrow::Cow<'_, str> {
    lowercased(basename(text))
}

/// A Windows `/switch` lowercased, with Git Bash's doubled slash (`//c`, written so MSYS
/// does not turn it into a path) reduced to one.
pub fn win_switch(text: &str) -> String {
    let t = text.to_ascii_lowercase();
    match t.strip_prefix('/') {
        Some(rest) if rest.starts_with('/') && rest.len() > 1 => rest.to_string(),
        _ => t,
    }
}

/// `NAME=value` (or `NAME+=value`, `NAME[i]=value`): a shell variable assignment.
pub fn is_assignment(text: &str) -> bool {
    // Most words are not: a name starts with a letter or `_`, and the `=` is searched only then.
    if !text
        .as_bytes()
        .first()
        .is_some_and(|&c| c == b'_' || c.is_ascii_alphabetic())
    {
        return false;
    }
    let Some(eq) = text.bytes().position(|b| b == b'=') else {
        return false;
    };
    let mut name = &text[..eq];
    if let Some(n) = name.strip_suffix('+') {
        name = n;
    }
    if let Some(open) = name.find('[') {
        if !name.ends_with(']') {
            return false;
        }
        name = &name[..open];
    }
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Split `text` on ASCII whitespace into literal words (for xargs input and similar data).
pub fn split_plain(text: &str, max: usize) -> Vec<Word> {
    text.split_ascii_whitespace()
        .take(max)
        .map(Word::quoted)
        .collect()
}

/// Expand `{a,b}` alternatives and `{1..3}` sequences as the shell does (one level at a time,
/// at most `max` results).
pub fn expand_braces(text: &str, max: usize) -> Vec<String> {
    let mut out = vec![text.to_string()];
    let mut rounds = 0;
    while rounds < 8 {
        rounds += 1;
        let mut next = Vec::new();
        let mut changed = false;
        for s in &out {
            match split_brace(s) {
                Some((pre, alts, post)) => {
                    changed = true;
                    for a in alts {
                        if next.len() < max {
                            next.push(format!("{pre}{a}{post}"));
                        }
                    }
                }
                None => next.push(s.clone()),
            }
        }
        out = next;
        if !changed {
            break;
        }
    }
    out
}

/// Most items a sequence brace (`{1..5}`, `{a..e}`) yields.
const MAX_SEQUENCE: u32 = 32;

/// The items of a sequence brace body `A..B` of numbers or of single letters.
fn sequence(body: &str) -> Option<Vec<String>> {
    let (a, b) = body.split_once("..")?;
    if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
        if a.abs_diff(b) >= u64::from(MAX_SEQUENCE) {
            return None;
        }
        let items: Vec<String> = if a <= b {
            (a..=b).map(|n| n.to_string()).collect()
        } else {
            (b..=a).rev().map(|n| n.to_string()).collect()
        };
        return Some(items);
    }
    let (mut a, mut b) = (a.chars(), b.chars());
    let (Some(x), None, Some(y), None) = (a.next(), a.next(), b.next(), b.next()) else {
        return None;
    };
    if !x.is_ascii_alphabetic() || !y.is_ascii_alphabetic() {
        return None;
    }
    let (lo, hi) = (x.min(y) as u8, x.max(y) as u8);
    let mut items: Vec<String> = (lo..=hi).map(|c| char::from(c).to_string()).collect();
    if x > y {
        items.reverse();
    }
    Some(items)
}

fn split_brace(s: &str) -> Option<(&str, Vec<String>, &str)> {
    let open = s.find('{')?;
    let mut depth = 0;
    let mut parts = Vec::new();
    let mut last = open + 1;
    for (i, c) in s[open..].char_indices() {
        let i = open + i;
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    parts.push(s[last..i].to_string());
                    if parts.len() < 2 {
                        let (pre, post) = (&s[..open], &s[i + 1..]);
                        return sequence(&parts[0]).map(|seq| (pre, seq, post));
                    }
                    return Some((&s[..open], parts, &s[i + 1..]));
                }
            }
            ',' if depth == 1 => {
                parts.push(s[last..i].to_string());
                last = i + 1;
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_names_drop_paths_and_windows_suffixes() {
        assert_eq!(command_name("git"), "git");
        assert_eq!(command_name("/usr/bin/git"), "git");
        assert_eq!(command_name(r"C:\Program Files\Git\bin\GIT.EXE"), "git");
        assert_eq!(command_name("taskkill.exe"), "taskkill");
        assert_eq!(command_name("run.bat"), "run");
        assert_eq!(command_name("npx.cmd"), "npx");
        assert_eq!(command_name("script.sh"), "script.sh");
        assert_eq!(base_lower(r".\Run.BAT"), "run.bat");
        assert_eq!(base_lowered(r".\Run.BAT"), "run.bat");
        assert!(matches!(
            base_lowered("bin/run.sh"),
            std::borrow::Cow::Borrowed("run.sh")
        ));
        assert_eq!(basename("dist/"), "dist");
        assert_eq!(command_name(""), "");
        // The one-pass case borrows; a capital or a separator takes the long way.
        assert!(matches!(
            command_name("grep"),
            std::borrow::Cow::Borrowed("grep")
        ));
        assert_eq!(command_name("Git"), "git");
        assert_eq!(command_name("bin/"), "bin");
        assert_eq!(command_name("-rn"), "-rn");
    }

    #[test]
    fn windows_switches() {
        assert_eq!(win_switch("/C"), "/c");
        assert_eq!(win_switch("//c"), "/c");
        assert_eq!(win_switch("//"), "//");
        assert_eq!(win_switch("-im"), "-im");
    }

    #[test]
    fn windowsish_names() {
        assert!(is_windowsish("run.bat"));
        assert!(is_windowsish(r"C:\x\y"));
        assert!(is_windowsish(r"bin\tool"));
        assert!(!is_windowsish("/usr/bin/env"));
    }

    #[test]
    fn short_flags_unbundle() {
        let w = Word::plain("-fdx");
        assert_eq!(w.short_flags().collect::<String>(), "fdx");
        assert_eq!(Word::plain("--force").short_flags().count(), 0);
        assert_eq!(Word::plain("-").short_flags().count(), 0);
        assert_eq!(Word::plain("--force=yes").long_flag(), Some("force"));
        assert_eq!(Word::plain("--").long_flag(), None);
        assert!(Word::plain("-r").is_flag());
        assert!(!Word::plain("-").is_flag());
    }

    #[test]
    fn assignments() {
        assert!(is_assignment("FOO=1"));
        assert!(is_assignment("_x="));
        assert!(is_assignment("PATH+=:/x"));
        assert!(is_assignment("arr[2]=x"));
        assert!(!is_assignment("1X=2"));
        assert!(!is_assignment("--opt=2"));
        assert!(!is_assignment("a-b=2"));
        assert!(!is_assignment("plain"));
    }

    #[test]
    fn posix_quoting_round_trips_through_sh() {
        for (text, want) in [
            ("git", "git"),
            ("/repo/bin/guard", "/repo/bin/guard"),
            ("a b", "'a b'"),
            ("it's", r"'it'\''s'"),
            ("", "''"),
            ("$HOME", "'$HOME'"),
            ("ünï", "'ünï'"),
            ("50%", "50%"),
        ] {
            assert_eq!(quote_posix(text), want, "{text}");
        }
        // What sh reads back is the text itself.
        if let Ok(out) = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf %s {}", quote_posix("it's $x `y` \\ \"z\"")))
            .output()
        {
            assert_eq!(String::from_utf8_lossy(&out.stdout), "it's $x `y` \\ \"z\"");
        }
    }

    #[test]
    fn rendering_quotes_only_when_needed() {
        assert_eq!(render_word("git"), "git");
        assert_eq!(render_word("wrap vite build"), "'wrap vite build'");
        assert_eq!(render_word("it's"), "\"it's\"");
        assert_eq!(render_word(""), "''");
    }
}
