//! macOS: a `sandbox-exec` profile (SBPL) that denies what a [`DeniedSet`] denies, from its
//! pattern rules, so nothing has to exist: `dir/**` is a `subpath`, a literal path a `literal`,
//! any other glob a `regex`, and each `!` exception an `allow` after the denies (in SBPL the
//! last matching rule wins). Seatbelt matches the path the write reaches, symlinks resolved.
//!
//! `guard floor` runs a floored command as `sandbox-exec -p '<profile>' /bin/bash -c …` with
//! [`paths_profile`], the profile of the paths it was handed (each denied path a `subpath`, in
//! the form it was given and resolved, since Seatbelt matches resolved paths: `/tmp` is
//! `/private/tmp`). Not run by the tests here (there is no Mac in CI); the generated text is
//! unit-tested. Paths compare as written (case-sensitive),
//! while macOS volumes are usually case-insensitive: a differently-cased spelling is not
//! refused.

use super::DeniedSet;

/// The profile text.
pub fn profile(set: &DeniedSet) -> String {
    let mut s = String::from("(version 1)\n(allow default)\n");
    for rule in &set.patterns {
        s.push_str(&format!(
            "(deny file-write* {}) ; {}\n",
            filter(&rule.include),
            rule.owner.label()
        ));
    }
    let mut allowed: Vec<&str> = Vec::new();
    for e in set.patterns.iter().flat_map(|r| r.except.iter()) {
        if !allowed.contains(&e.as_str()) {
            allowed.push(e);
            s.push_str(&format!("(allow file-write* {})\n", filter(e)));
        }
    }
    s
}

/// The profile that denies every write to each of `denied` and below it (what `guard floor`
/// runs a command under on macOS).
pub fn paths_profile(denied: &[super::Denied]) -> String {
    let mut s = String::from("(version 1)\n(allow default)\n");
    for d in denied {
        let given = d.path.display().to_string();
        let mut forms = vec![given.clone()];
        if let Ok(real) = std::fs::canonicalize(&d.path)
            && real != d.path
        {
            forms.push(real.display().to_string());
        }
        for form in forms {
            s.push_str(&format!(
                "(deny file-write* (subpath {})) ; {}\n",
                string(&form),
                d.owner.label()
            ));
        }
    }
    s
}

/// One rule's path filter: `(subpath "…")`, `(literal "…")` or `(regex #"…")`.
fn filter(glob: &str) -> String {
    let wild = |t: &str| t.contains(['*', '?', '[', '{']);
    if let Some(dir) = glob.strip_suffix("/**")
        && !wild(dir)
    {
        return format!("(subpath {})", string(dir));
    }
    if !wild(glob) {
        return format!("(literal {})", string(glob));
    }
    format!("(regex #\"{}\")", regex(glob).replace('"', "\\\""))
}

fn string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// An absolute glob as an anchored POSIX extended regex: `**/` any folders, `**` anything, `*`
/// within a name, `?` one character of a name, `[…]` a class (`[!…]` negated), `{a,b}` either.
pub fn regex(glob: &str) -> String {
    let mut out = String::from("^");
    let chars: Vec<char> = glob.chars().collect();
    let mut i = 0;
    let mut braces = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' if chars.get(i + 1) == Some(&'*') => {
                if chars.get(i + 2) == Some(&'/') {
                    out.push_str("(.*/)?");
                    i += 3;
                } else {
                    out.push_str(".*");
                    i += 2;
                }
                continue;
            }
            '*' => out.push_str("[^/]*"),
            '?' => out.push_str("[^/]"),
            '[' => {
                let end = chars[i + 1..].iter().position(|&c| c == ']');
                match end {
                    Some(n) if n > 0 => {
                        let body: String = chars[i + 1..i + 1 + n].iter().collect();
                        let body = match body.strip_prefix('!') {
                            Some(rest) => format!("^{rest}"),
                            None => body,
                        };
                        out.push('[');
                        out.push_str(&body);
                        out.push(']');
                        i += n + 2;
                        continue;
                    }
                    _ => out.push_str("\\["),
                }
            }
            '{' => {
                braces += 1;
                out.push('(');
            }
            '}' if braces > 0 => {
                braces -= 1;
                out.push(')');
            }
            ',' if braces > 0 => out.push('|'),
            '.' | '+' | '(' | ')' | '|' | '^' | '$' | '\\' | '}' | ']' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
        i += 1;
    }
    out.push('$');
    out
}

#[cfg(test)]
mod tests {
    use super::super::Owner;
    use super::super::set::{Inputs, Rule, compute};
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_paths_profile_denies_each_path_as_given_and_as_resolved() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().canonicalize().unwrap();
        std::fs::create_dir(real.join("api")).unwrap();
        std::os::unix::fs::symlink(real.join("api"), real.join("link")).unwrap();
        let denied = [
            super::super::Denied {
                path: real.join("api"),
                owner: Owner::Stream("api".into()),
            },
            super::super::Denied {
                path: real.join("link"),
                owner: Owner::Protocol,
            },
            super::super::Denied {
                path: real.join("say \"hi\".md"),
                owner: Owner::Stream("docs".into()),
            },
        ];
        let r = real.display();
        assert_eq!(
            paths_profile(&denied),
            format!(
                "(version 1)\n(allow default)\n\
                 (deny file-write* (subpath \"{r}/api\")) ; stream:api\n\
                 (deny file-write* (subpath \"{r}/link\")) ; protocol\n\
                 (deny file-write* (subpath \"{r}/api\")) ; protocol\n\
                 (deny file-write* (subpath \"{r}/say \\\"hi\\\".md\")) ; stream:docs\n"
            )
        );
    }

    #[test]
    fn globs_become_anchored_regexes() {
        assert_eq!(
            regex("/r/src/**/*.test.ts"),
            r"^/r/src/(.*/)?[^/]*\.test\.ts$"
        );
        assert_eq!(regex("/r/a?/[!x]{b,c}.md"), r"^/r/a[^/]/[^x](b|c)\.md$");
        assert_eq!(regex("/r/dist/**"), "^/r/dist/.*$");
        assert_eq!(regex("/r/(x)+"), r"^/r/\(x\)\+$");
    }

    #[test]
    fn a_profile_denies_folders_files_and_globs_and_allows_exceptions_last() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let v = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let set = compute(&Inputs {
            root: root.clone(),
            rules: vec![
                Rule {
                    owner: Owner::Stream("api".into()),
                    patterns: v(&["src/api/**", "!src/api/generated.ts", "docs/api.md"]),
                    keep: Vec::new(),
                },
                Rule {
                    owner: Owner::Stream("tests".into()),
                    patterns: v(&["src/**/*.test.ts"]),
                    keep: Vec::new(),
                },
            ],
            ..Inputs::default()
        });
        // As a profile string writes it: a Windows temp folder's backslashes are escaped.
        let r = root.display().to_string().replace('\\', "\\\\");
        let text = profile(&set);
        assert_eq!(
            text,
            format!(
                "(version 1)\n(allow default)\n\
                 (deny file-write* (subpath \"{r}/src/api\")) ; stream:api\n\
                 (deny file-write* (literal \"{r}/docs/api.md\")) ; stream:api\n\
                 (deny file-write* (regex #\"^{re}/src/(.*/)?[^/]*\\.test\\.ts$\")) ; stream:tests\n\
                 (allow file-write* (literal \"{r}/src/api/generated.ts\"))\n",
                re = regex(&root.display().to_string())
                    .trim_start_matches('^')
                    .trim_end_matches('$'),
            )
        );
        assert!(set.denied.is_empty(), "nothing exists: Linux binds nothing");
    }
}
