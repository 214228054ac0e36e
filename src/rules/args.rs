//! Small matchers the rules share: getopt-style option parsing, glob matching of one
//! name, and "does this text name that program/plugin" token checks.

pub use crate::shell::opts::Opts;

/// Glob match of one name: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`/`[^x]`.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ti));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                '[' => {
                    if let Some((ok, next)) = class(&p, pi, t[ti]) {
                        if ok {
                            pi = next;
                            ti += 1;
                            continue;
                        }
                    } else if t[ti] == '[' {
                        pi += 1;
                        ti += 1;
                        continue;
                    }
                }
                c if c == t[ti] => {
                    pi += 1;
                    ti += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Match `c` against the class starting at `p[start] == '['`; `None` if unterminated.
fn class(p: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = matches!(p.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if p[i] <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                matched = true;
            }
            i += 1;
        }
        first = false;
    }
    None
}

/// Whether `text` names the program `name`: some token of it (split on characters other
/// than letters, digits, `-`, `_`, `.`, `*`, `?`), lowercased and without `.exe`, equals
/// `name` or glob-matches it.
pub fn names_program(text: &str, name: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    lower
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '*' | '?')))
        .any(|tok| {
            let tok = tok.trim_end_matches('.');
            let tok = tok.strip_suffix(".exe").unwrap_or(tok);
            tok == name || (tok.contains(['*', '?']) && glob_match(tok, name))
        })
}

/// Whether `text` contains `id` bounded by characters that cannot be part of an id
/// (anything but letters, digits, `-`, `_`, `.`), case-insensitively.
pub fn mentions_id(text: &str, id: &str) -> bool {
    if id.is_empty() {
        return false;
    }
    let hay = text.to_ascii_lowercase();
    let id = id.to_ascii_lowercase();
    let inner = |c: u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_');
    let b = hay.as_bytes();
    let mut from = 0;
    while let Some(k) = hay[from..].find(&id) {
        let s = from + k;
        let e = s + id.len();
        let before = s == 0 || !inner(b[s - 1]);
        let after = e >= b.len() || !inner(b[e]);
        if before && after {
            return true;
        }
        from = s + 1;
        while from < hay.len() && !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

/// Whether `text` contains the URL path `path` followed by a path boundary, as written or
/// as the server routes it (see [`url_route`]).
pub fn has_url_path(text: &str, path: &str) -> bool {
    match url_route(text) {
        Some(route) => has_path(&route, path),
        None => has_path(text, path),
    }
}

/// `text` percent-decoded once (`%2e` → `.`); `None` when it holds no escape.
pub fn percent_decoded(text: &str) -> Option<String> {
    if !text.contains('%') {
        return None;
    }
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut changed = false;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (
                b.get(i + 1).and_then(|c| hex(*c)),
                b.get(i + 2).and_then(|c| hex(*c)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            changed = true;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    changed.then(|| String::from_utf8_lossy(&out).into_owned())
}

/// `text` with JSON string escapes read (`\u002d` → `-`, `\/` → `/`); `None` when it
/// holds none.
pub fn json_unescaped(text: &str) -> Option<String> {
    if !text.contains('\\') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    let mut changed = false;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = (hex.len() == 4)
                    .then(|| u32::from_str_radix(&hex, 16).ok())
                    .flatten()
                    .and_then(char::from_u32);
                match code {
                    Some(d) => out.push(d),
                    None => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(d @ ('/' | '"' | '\\')) => out.push(d),
            Some(d) => {
                out.push('\\');
                out.push(d);
                continue;
            }
            None => out.push('\\'),
        }
        changed = true;
    }
    changed.then_some(out)
}

/// The URL `text` as a server routes it (the route, not the text, decides then): the path
/// percent-decoded once, `.` and `..`
/// segments resolved (curl itself does this unless `--path-as-is`) and runs of `/`
/// collapsed; `None` when nothing in it needs that.
pub fn url_route(text: &str) -> Option<String> {
    let (scheme, rest) = match text.find("://") {
        Some(k) => text.split_at(k + 3),
        None => ("", text),
    };
    let start = rest.find('/')?;
    let (authority, rest) = rest.split_at(start);
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let (path, query) = rest.split_at(end);
    if !path.contains(['%', '.']) && !path.contains("//") {
        return None;
    }
    let decoded = percent_decoded(path).unwrap_or_else(|| path.to_string());
    let mut parts: Vec<&str> = Vec::new();
    for c in decoded.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            _ => parts.push(c),
        }
    }
    let slash = if decoded.ends_with('/') && !parts.is_empty() {
        "/"
    } else {
        ""
    };
    Some(format!(
        "{scheme}{authority}/{}{slash}{query}",
        parts.join("/")
    ))
}

fn has_path(text: &str, path: &str) -> bool {
    let hay = text.to_ascii_lowercase();
    let path = path.to_ascii_lowercase();
    let mut from = 0;
    while let Some(k) = hay[from..].find(&path) {
        let e = from + k + path.len();
        match hay.as_bytes().get(e) {
            None => return true,
            Some(c) if !c.is_ascii_alphanumeric() && !matches!(c, b'-' | b'_') => return true,
            _ => {}
        }
        from += k + 1;
        while from < hay.len() && !hay.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

pub use crate::shell::word::expand_braces;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shell::Word;

    fn ws(s: &str) -> Vec<Word> {
        s.split_whitespace().map(Word::plain).collect()
    }

    #[test]
    fn option_parsing() {
        let a = ws("-fdx -- .");
        let o = Opts::parse(&a, "", &[]);
        assert_eq!(o.flags, ["f", "d", "x"]);
        assert_eq!(o.operands.len(), 1);
        assert!(o.dashdash);
        assert_eq!(o.before_dashdash, 0);
        let a = ws("-am msg file --author=x --date y");
        let o = Opts::parse(&a, "m", &["date"]);
        assert!(o.has(&["a"]));
        assert_eq!(o.value(&["m"]), Some("msg"));
        assert_eq!(o.value(&["--author"]), Some("x"));
        assert_eq!(o.value(&["--date"]), Some("y"));
        assert_eq!(o.operands.len(), 1);
        let a = ws("-b new");
        assert_eq!(Opts::parse(&a, "b", &[]).value(&["b"]), Some("new"));
        let a = ws("-bnew");
        assert_eq!(Opts::parse(&a, "b", &[]).value(&["b"]), Some("new"));
        let a = ws("-");
        assert_eq!(Opts::parse(&a, "", &[]).operands.len(), 1);
    }

    #[test]
    fn globbing() {
        assert!(glob_match("*", "dist"));
        assert!(glob_match("di*", "dist"));
        assert!(glob_match("d?st", "dist"));
        assert!(glob_match("[cd]ist", "dist"));
        assert!(glob_match("[!x]ist", "dist"));
        assert!(glob_match("[a-e]ist", "dist"));
        assert!(glob_match("*-electron", "dist-electron"));
        assert!(!glob_match("*.js", "dist"));
        assert!(!glob_match("src*", "dist"));
        assert!(glob_match("a[", "a["));
        assert!(glob_match("**", ""));
    }

    #[test]
    fn program_names() {
        assert!(names_program("electron.exe", "electron"));
        assert!(names_program("$(pgrep -f electron)", "electron"));
        assert!(names_program("electr*", "electron"));
        assert!(names_program("imagename eq ELECTRON.EXE", "electron"));
        assert!(!names_program("electron-builder", "electron"));
        assert!(!names_program("node", "electron"));
    }

    #[test]
    fn ids_and_paths() {
        assert!(mentions_id(r#"{"id":"ai-chat"}"#, "ai-chat"));
        assert!(mentions_id("?id=AI-CHAT&x", "ai-chat"));
        assert!(!mentions_id("ai-chat-tools", "ai-chat"));
        assert!(!mentions_id("my-ai-chat", "ai-chat"));
        assert!(mentions_id("plugins/ai-chat", "ai-chat"));
        assert!(has_url_path(
            "http://127.0.0.1:3000/app/relaunch",
            "/app/relaunch"
        ));
        assert!(has_url_path("http://x/app/relaunch?now=1", "/app/relaunch"));
        assert!(!has_url_path("http://x/app/relaunched", "/app/relaunch"));
        assert!(has_url_path("http://x/plugins/toggle", "/plugins/toggle"));
        for url in [
            "http://x/plugins/./toggle",
            "http://x/plugins//toggle",
            "http://x//plugins/toggle",
            "http://x/plugins/%74oggle",
            "http://x/plugins%2ftoggle",
            "http://x/plugins/%2e/toggle",
            "http://x/a/../plugins/toggle?id=1",
            "x:1/plugins/x/../toggle",
        ] {
            assert!(has_url_path(url, "/plugins/toggle"), "{url}");
        }
        for url in [
            "http://x/plugins/toggles",
            "http://x/plugins/toggle/../list",
            "http://x/plugins/%74oggled",
            "http://x/plugins/./toggle-all",
        ] {
            assert!(!has_url_path(url, "/plugins/toggle"), "{url}");
        }
        assert_eq!(url_route("http://x/a"), None);
        assert_eq!(
            url_route("http://x/a/./b/").as_deref(),
            Some("http://x/a/b/")
        );
    }

    #[test]
    fn decoding() {
        assert_eq!(percent_decoded("ai%2Dchat").as_deref(), Some("ai-chat"));
        assert_eq!(percent_decoded("100%"), None);
        assert_eq!(percent_decoded("%zz"), None);
        assert_eq!(
            json_unescaped(r#"{"id":"ai\u002dchat"}"#).as_deref(),
            Some(r#"{"id":"ai-chat"}"#)
        );
        assert_eq!(json_unescaped(r"a\/b").as_deref(), Some("a/b"));
        assert_eq!(json_unescaped("plain"), None);
        assert_eq!(json_unescaped(r"\u12").as_deref(), Some(r"\u12"));
    }

    #[test]
    fn braces() {
        assert_eq!(
            expand_braces("{dist,dist-electron}", 8),
            ["dist", "dist-electron"]
        );
        assert_eq!(
            expand_braces("a/{b,c}/{d,e}", 8),
            ["a/b/d", "a/b/e", "a/c/d", "a/c/e"]
        );
        assert_eq!(expand_braces("{x}", 8), ["{x}"]);
        assert_eq!(expand_braces("d{1..3}", 8), ["d1", "d2", "d3"]);
        assert_eq!(expand_braces("{c..a}", 8), ["c", "b", "a"]);
        assert_eq!(
            expand_braces("{1..999}", 8),
            ["{1..999}"],
            "too long a sequence stays"
        );
        assert_eq!(expand_braces("{a..bc}", 8), ["{a..bc}"]);
        assert_eq!(expand_braces("plain", 8), ["plain"]);
    }
}
