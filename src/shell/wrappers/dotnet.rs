//! PowerShell's .NET static calls that delete, write, move or start things:
//! `[IO.Directory]::Delete('dist', $true)`, `[IO.File]::WriteAllText('x', …)`,
//! `[IO.File]::Move(a, b)`, `[Microsoft.VisualBasic.FileIO.FileSystem]::DeleteDirectory(…)`,
//! `[Diagnostics.Process]::Start('electron', '.')`. Each becomes the cmdlet that does the
//! same (`Remove-Item -Recurse -LiteralPath dist`), analysed as a derived command, so the
//! rules and the write check see it. Arguments are read when they are literals
//! (`'x'`, `"x"`, `'a' + 'b'`, `$true`); a call with another argument is left alone.

use super::Peel;
use crate::shell::Dialect;
use crate::shell::vars::ps_concat;
use crate::shell::word::Word;

/// `[Type]::Method(args)` split into the lowercased type (without `System.`), the
/// lowercased method and the raw argument text.
fn split_call(text: &str) -> Option<(String, String, &str)> {
    let rest = text.strip_prefix('[')?;
    let (ty, rest) = rest.split_once("]::")?;
    let open = rest.find('(')?;
    let method = rest[..open].trim().to_ascii_lowercase();
    let args = rest[open + 1..].trim_end().strip_suffix(')')?;
    let ty = ty.trim().to_ascii_lowercase();
    let ty = ty.strip_prefix("system.").unwrap_or(&ty).to_string();
    Some((ty, method, args))
}

/// Top-level comma-separated arguments, each a literal value (`None` when not literal).
fn literal_args(args: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0usize, None::<char>, 0usize);
    for (i, c) in args.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => depth += 1,
            (None, ')' | ']' | '}') => depth = depth.saturating_sub(1),
            (None, ',') if depth == 0 => {
                out.push(&args[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&args[start..]);
    out.into_iter()
        .map(|a| {
            let a = a.trim();
            match a.to_ascii_lowercase().as_str() {
                "$true" => Some("$true".to_string()),
                "$false" => Some("$false".to_string()),
                // `"$PWD\dist"`: kept as an expansion, which the rules resolve.
                _ if a.len() > 1 && a.starts_with('"') && a.ends_with('"') && !a.contains('`') => {
                    Some(a[1..a.len() - 1].to_string())
                }
                _ => ps_concat(a),
            }
        })
        .collect()
}

/// The cmdlet line a .NET call amounts to.
fn as_cmdlet(ty: &str, method: &str, args: &[Option<String>]) -> Option<Vec<String>> {
    let arg = |k: usize| args.get(k).cloned().flatten();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let file_ty = matches!(ty, "io.file" | "io.fileinfo");
    let dir_ty = matches!(ty, "io.directory" | "io.directoryinfo");
    let vb = ty == "microsoft.visualbasic.fileio.filesystem";
    Some(match method {
        "delete" if dir_ty => {
            let mut v = s(&["Remove-Item"]);
            if arg(1).as_deref() == Some("$true") {
                v.push("-Recurse".into());
            }
            v.extend(["-LiteralPath".to_string(), arg(0)?]);
            v
        }
        "deletedirectory" if vb => {
            let mut v = s(&["Remove-Item", "-Recurse", "-LiteralPath"]);
            v.push(arg(0)?);
            v
        }
        "delete" | "deletefile" if file_ty || vb => {
            let mut v = s(&["Remove-Item", "-LiteralPath"]);
            v.push(arg(0)?);
            v
        }
        "writealltext" | "writealllines" | "writeallbytes" | "appendalltext" | "appendalllines"
        | "create" | "createtext" | "openwrite" | "appendtext"
            if file_ty =>
        {
            let mut v = s(&["Set-Content", "-LiteralPath"]);
            v.push(arg(0)?);
            v
        }
        "move" | "copy" | "replace" | "movefile" | "copyfile" | "movedirectory"
        | "copydirectory"
            if file_ty || dir_ty || vb =>
        {
            let cmdlet = if method.starts_with("copy") {
                "Copy-Item"
            } else {
                "Move-Item"
            };
            let mut v = s(&[cmdlet, "-Recurse", "-LiteralPath"]);
            v.extend([arg(0)?, "-Destination".to_string(), arg(1)?]);
            v
        }
        "start" if ty == "diagnostics.process" => {
            let mut v = vec![arg(0)?];
            if let Some(a) = arg(1) {
                v.extend(a.split_whitespace().map(str::to_string));
            }
            v
        }
        _ => return None,
    })
}

/// Whether `head` may be a .NET static call (a cheap look).
pub(super) fn may_be_call(head: &str) -> bool {
    head.starts_with('[') && head.contains("]::")
}

/// The arguments of a call up to the `)` that closes it (`'x').Invoke(` → `'x'`).
fn own_args(args: &str) -> &str {
    let (mut depth, mut quote) = (0usize, None::<char>);
    for (i, c) in args.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') if depth == 0 => return &args[..i],
            (None, ')') => depth -= 1,
            _ => {}
        }
    }
    args
}

/// `[Type]::Method(…)` at the head: the cmdlet it amounts to, as a derived command;
/// `[scriptblock]::Create('…')` is a script.
pub(super) fn call(p: &mut Peel) -> bool {
    let Some((ty, method, args)) = p.argv.first().and_then(|w| split_call(&w.text)) else {
        return false;
    };
    let args = literal_args(own_args(args));
    if ty == "management.automation.scriptblock" || ty == "scriptblock" {
        if method == "create"
            && let Some(Some(text)) = args.first()
        {
            let text = text.clone();
            return super::add_script(p, text, Dialect::PowerShell, "[scriptblock]::Create");
        }
        return false;
    }
    if let Some(cmd) = as_cmdlet(&ty, &method, &args) {
        let words = cmd.into_iter().map(|t| {
            // Parameters stay parameters; values are strings.
            if t.starts_with('-') {
                return Word::plain(t);
            }
            let mut w = Word::quoted(t);
            w.dynamic = w.text.contains('$') && w.text != "$true" && w.text != "$false";
            w
        });
        p.derived.push(words.collect());
        p.wrappers.push(format!("[{ty}]::{method}"));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Option<String> {
        let (ty, m, a) = split_call(text)?;
        as_cmdlet(&ty, &m, &literal_args(a)).map(|v| v.join(" "))
    }

    #[test]
    fn calls_become_cmdlets() {
        assert_eq!(
            line("[IO.Directory]::Delete(\"dist\", $true)").as_deref(),
            Some("Remove-Item -Recurse -LiteralPath dist")
        );
        assert_eq!(
            line("[System.IO.Directory]::Delete('di' + 'st')").as_deref(),
            Some("Remove-Item -LiteralPath dist")
        );
        assert_eq!(
            line("[IO.File]::WriteAllText('src\\x.ts', 'a, b')").as_deref(),
            Some("Set-Content -LiteralPath src\\x.ts")
        );
        assert_eq!(
            line("[IO.File]::Move('a', 'b')").as_deref(),
            Some("Move-Item -Recurse -LiteralPath a -Destination b")
        );
        assert_eq!(
            line("[Microsoft.VisualBasic.FileIO.FileSystem]::DeleteDirectory('dist', 'DeleteAllContents')")
                .as_deref(),
            Some("Remove-Item -Recurse -LiteralPath dist")
        );
        assert_eq!(
            line("[Diagnostics.Process]::Start('electron', '.')").as_deref(),
            Some("electron .")
        );
        assert_eq!(line("[IO.Directory]::Delete($d, $true)"), None);
        assert_eq!(line("[IO.File]::ReadAllText('dist/x')"), None);
        assert_eq!(line("[Math]::Round(1.5)"), None);
        assert_eq!(line("[IO.Directory]::Delete("), None);
        assert_eq!(line("not a call"), None);
        assert_eq!(own_args("'a)b', 1).Invoke("), "'a)b', 1");
    }

    #[test]
    fn script_blocks_are_scripts() {
        let mut p = Peel {
            argv: vec![Word::plain(
                "[scriptblock]::Create('Remove-Item -Recurse dist').Invoke()",
            )],
            ..Peel::default()
        };
        call(&mut p);
        assert_eq!(p.scripts[0].text, "Remove-Item -Recurse dist");
        let mut p = Peel {
            argv: vec![Word::plain("[ScriptBlock]::Create($s)")],
            ..Peel::default()
        };
        call(&mut p);
        assert!(p.scripts.is_empty());
    }
}
