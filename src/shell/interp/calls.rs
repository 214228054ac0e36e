//! The interpreter heuristic's call table: which names are process, file and HTTP calls in
//! each language, how their literal arguments are read, and the shell command each becomes.

use super::lexer::Tok;
use super::{Effects, Lang, MAX_CALL_TOKENS, MAX_EFFECTS};
use crate::shell::word::Word;

/// One argument of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Arg {
    /// A string literal (`None`: built at run time).
    Str(Option<String>),
    /// A list of literals (`None` when one of them is not known).
    List(Option<Vec<String>>),
    /// Anything else (a variable, an object, an expression).
    Other,
}

/// A call found in the program: the name, its top-level arguments, and every known string
/// inside its parentheses (for HTTP calls).
pub(super) struct Call {
    name: String,
    pub(super) args: Vec<Arg>,
    pub(super) strings: Vec<String>,
    /// `recursive: true` / `recursive=True` among the arguments.
    recursive: bool,
    /// `shell: true` / `shell=True` among the arguments.
    shell: bool,
}

/// Read the arguments after `toks[i]` (a `(` or the first argument of a call without
/// parentheses); returns the call and the index after it.
pub(super) fn call_at(name: &str, toks: &[Tok], mut i: usize) -> Call {
    let mut c = Call {
        name: name.to_string(),
        args: Vec::new(),
        strings: Vec::new(),
        recursive: false,
        shell: false,
    };
    let parens = toks.get(i) == Some(&Tok::P('('));
    if parens {
        i += 1;
    }
    let end = i.saturating_add(MAX_CALL_TOKENS).min(toks.len());
    let toks = &toks[..end];
    let mut depth = 0usize;
    let mut cur: Option<Arg> = None;
    let mut seen = 0usize;
    let mut list: Option<Vec<String>> = None;
    let mut list_ok = true;
    let mut prev_name: Option<&str> = None;
    while let Some(t) = toks.get(i) {
        match t {
            Tok::P('(' | '[' | '{') => {
                if depth == 0 && seen == 0 && *t == Tok::P('[') {
                    list = Some(Vec::new());
                    list_ok = true;
                }
                depth += 1;
            }
            Tok::P(')' | ']' | '}') => {
                if depth == 0 {
                    break;
                }
                depth -= 1;
                if depth == 0
                    && let Some(l) = list.take()
                {
                    cur = Some(Arg::List(list_ok.then_some(l)));
                    seen += 1;
                }
            }
            Tok::P(',') if depth == 0 => {
                c.args.push(cur.take().unwrap_or(Arg::Other));
                seen = 0;
            }
            Tok::P(';' | '\n') if depth == 0 && !parens => break,
            Tok::Str(s) => {
                if let Some(s) = s {
                    c.strings.push(s.clone());
                }
                if depth == 1 && list.is_some() {
                    match (s, list.as_mut()) {
                        (Some(s), Some(l)) => l.push(s.clone()),
                        _ => list_ok = false,
                    }
                } else if depth == 0 {
                    cur = Some(if seen == 0 {
                        Arg::Str(s.clone())
                    } else {
                        Arg::Other
                    });
                    seen += 1;
                }
            }
            Tok::Name(n) => {
                let lower = n.to_ascii_lowercase();
                if matches!(prev_name, Some("recursive")) && lower == "true" {
                    c.recursive = true;
                }
                if matches!(prev_name, Some("shell")) && lower == "true" {
                    c.shell = true;
                }
                if depth == 1 && list.is_some() {
                    list_ok = false;
                } else if depth == 0 {
                    if !parens {
                        // A call without parentheses takes literals only.
                        break;
                    }
                    cur = Some(Arg::Other);
                    seen += 1;
                }
                prev_name = Some(match lower.as_str() {
                    "recursive" => "recursive",
                    "shell" => "shell",
                    _ => "",
                });
                i += 1;
                continue;
            }
            Tok::P(':' | '=') => {
                if depth == 0
                    && *t == Tok::P('=')
                    && matches!(toks.get(i.wrapping_sub(1)), Some(Tok::Name(_)))
                {
                    // A keyword argument (`mode='w'`): its value is the argument.
                    cur = None;
                    seen = 0;
                }
                i += 1;
                continue;
            }
            _ => {
                if depth == 0 {
                    if !parens && seen > 0 {
                        // `system "a" . "b"`: the argument is built at run time.
                        cur = Some(Arg::Other);
                    } else if !parens {
                        break;
                    } else {
                        cur = Some(Arg::Other);
                    }
                    seen += 1;
                } else if depth == 1 && list.is_some() && !matches!(t, Tok::P(',')) {
                    list_ok = false;
                }
            }
        }
        prev_name = None;
        i += 1;
        if c.strings.len() > MAX_EFFECTS * 4 {
            break;
        }
    }
    if let Some(a) = cur {
        c.args.push(a);
    }
    c
}

/// What a call does, by name and language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// A string is a shell command, a list (or several strings) an argv.
    Process,
    /// `spawn(cmd, [args])`, `execFile`, `Deno.Command`: a program then its arguments.
    Spawn,
    /// `os.exec*`/`os.spawn*`: a path, then the argv (a list or the remaining strings).
    Exec,
    /// Deletes its path arguments, recursively.
    RmTree,
    /// Deletes its path arguments; recursively with `recursive: true`.
    Rm,
    /// Removes an empty directory.
    Rmdir,
    /// Moves its first argument to its second.
    Move,
    /// Copies its first argument to its second.
    Copy,
    /// Writes its first argument.
    Write,
    /// Opens its first argument; a write when a later string argument is a write mode.
    Open,
    /// An HTTP request.
    Http,
}

/// The kind of call `name` is in `lang`, from its last part and the module before it.
pub(super) fn kind(lang: Lang, name: &str, program: &str) -> Option<Kind> {
    let name = name.trim_start_matches('.');
    let (module, f) = match name.rsplit_once('.') {
        Some((m, f)) => (m.rsplit('.').next().unwrap_or(m), f),
        None => ("", name),
    };
    use Kind::*;
    Some(match lang {
        Lang::Python => {
            let from = |m: &str| {
                module == m || (module.is_empty() && program.contains(&format!("from {m} import")))
            };
            match f {
                "system" | "popen" if from("os") => Process,
                "run" | "call" | "check_call" | "check_output" | "Popen" | "getoutput"
                | "getstatusoutput"
                    if from("subprocess") =>
                {
                    Process
                }
                f if (f.starts_with("exec") || f.starts_with("spawn")) && from("os") => Exec,
                "rmtree" if from("shutil") => RmTree,
                "remove" | "unlink" if from("os") => Rm,
                "rmdir" | "removedirs" if from("os") => Rmdir,
                "rename" | "replace" | "renames" if from("os") => Move,
                "move" if from("shutil") => Move,
                "copy" | "copy2" | "copyfile" | "copytree" if from("shutil") => Copy,
                "open" if matches!(module, "" | "io" | "codecs" | "builtins") => Open,
                "urlopen" | "Request" => Http,
                "get" | "post" | "put" | "delete" | "patch" | "request"
                    if matches!(module, "requests" | "httpx" | "session" | "s") =>
                {
                    Http
                }
                _ => return None,
            }
        }
        Lang::Js => match f {
            "execSync" | "exec" | "execaCommand" | "execaCommandSync" => Process,
            "spawnSync" | "spawn" | "execFileSync" | "execFile" | "execa" | "execaSync"
                if module != "Bun" =>
            {
                Spawn
            }
            "Command" if module == "Deno" => Spawn,
            "spawn" | "spawnSync" => Process,
            "rmdirSync" | "rmdir" if fs_module(module) => Rmdir,
            "rmSync" | "rm" | "unlinkSync" | "unlink" if fs_module(module) => Rm,
            "remove" | "removeSync" | "emptyDir" | "emptyDirSync" if fs_module(module) => RmTree,
            "rimraf" | "rimrafSync" => RmTree,
            "sync" if module == "rimraf" || program.contains("rimraf") => RmTree,
            "renameSync" | "rename" | "move" | "moveSync" if fs_module(module) => Move,
            "copyFileSync" | "copyFile" | "cpSync" | "cp" | "copy" | "copySync"
                if fs_module(module) =>
            {
                Copy
            }
            "writeFileSync" | "writeFile" | "appendFileSync" | "appendFile"
            | "createWriteStream" | "outputFile" | "outputFileSync" | "truncateSync"
            | "truncate"
                if fs_module(module) =>
            {
                Write
            }
            "fetch" => Http,
            "get" | "post" | "put" | "delete" | "patch" | "request"
                if matches!(module, "axios" | "http" | "https" | "got" | "ky") =>
            {
                Http
            }
            _ => return None,
        },
        Lang::Perl => match f {
            "system" | "exec" | "readpipe" => Process,
            "rmtree" | "remove_tree" => RmTree,
            "unlink" => Rm,
            "rmdir" => Rmdir,
            "rename" | "move" | "mv" => Move,
            "copy" | "cp" => Copy,
            "open" | "sysopen" => Open,
            _ => return None,
        },
        Lang::Ruby => match f {
            "system" | "exec" | "spawn" | "popen" | "capture2" | "capture2e" | "capture3"
            | "popen2" | "popen3" | "pipeline" => Process,
            "rm_rf" | "rm_r" | "remove_dir" | "remove_entry" | "remove_entry_secure" | "rmtree" => {
                RmTree
            }
            "rm" | "rm_f" | "remove" | "remove_file" | "delete" | "unlink"
                if matches!(module, "FileUtils" | "File" | "FileUtils::Verbose") =>
            {
                Rm
            }
            "rmdir" | "delete" | "unlink" if module == "Dir" || module == "FileUtils" => Rmdir,
            "mv" | "move" | "rename" if matches!(module, "FileUtils" | "File") => Move,
            "cp" | "copy" | "cp_r" | "copy_file" if module == "FileUtils" => Copy,
            "write" | "binwrite" if matches!(module, "File" | "IO") => Write,
            "touch" if module == "FileUtils" => Write,
            "open" if matches!(module, "File" | "") => Open,
            "get" | "post" | "get_response" | "post_form" | "start" if module == "HTTP" => Http,
            _ => return None,
        },
        Lang::Php => match f {
            "system" | "exec" | "shell_exec" | "passthru" | "popen" | "proc_open" => Process,
            "unlink" => Rm,
            "rmdir" => Rmdir,
            "rename" => Move,
            "copy" => Copy,
            "file_put_contents" => Write,
            "fopen" => Open,
            "file_get_contents" if program.contains("http") => Http,
            _ => return None,
        },
        Lang::Awk => match f {
            "system" => Process,
            _ => return None,
        },
    })
}

fn fs_module(module: &str) -> bool {
    matches!(
        module,
        "" | "fs" | "fsp" | "promises" | "fse" | "fsExtra" | "fsPromises" | "Deno" | "fs_extra"
    )
}

fn words(texts: impl IntoIterator<Item = String>) -> Vec<Word> {
    texts.into_iter().map(Word::quoted).collect()
}

pub(super) fn str_arg(a: Option<&Arg>) -> Option<&str> {
    match a {
        Some(Arg::Str(Some(s))) => Some(s),
        _ => None,
    }
}

/// A mode string that writes (`w`, `a`, `x`, `+`, perl `>`/`>>`/`+<`).
pub(super) fn writes_mode(m: &str) -> bool {
    let m = m.trim();
    !m.is_empty()
        && m.len() <= 4
        && (m.chars().all(|c| "rwaxbt+U".contains(c)) && m.contains(['w', 'a', 'x', '+'])
            || m.starts_with('>')
            || m == "+<")
}

impl Effects {
    pub(super) fn full(&self) -> bool {
        self.scripts.len() + self.commands.len() >= MAX_EFFECTS
    }

    pub(super) fn command(&mut self, argv: Vec<String>) {
        if !argv.is_empty() && !self.full() {
            self.commands.push(words(argv));
        }
    }

    pub(super) fn script(&mut self, text: String) {
        if !text.trim().is_empty() && !self.full() {
            self.scripts.push(text);
        }
    }

    /// The shell meaning of one call of kind `k`.
    pub(super) fn call(&mut self, lang: Lang, k: Kind, c: &Call) {
        let a = &c.args;
        let strs: Vec<&str> = a.iter().map_while(|x| str_arg(Some(x))).collect();
        match k {
            Kind::Process => match a.first() {
                Some(Arg::Str(Some(s))) if strs.len() == 1 || lang == Lang::Awk => {
                    self.script(s.clone())
                }
                Some(Arg::Str(Some(_))) => {
                    self.command(strs.iter().map(|s| s.to_string()).collect())
                }
                Some(Arg::List(Some(l))) => self.command(l.clone()),
                _ => {}
            },
            Kind::Spawn => {
                let Some(cmd) = str_arg(a.first()) else {
                    return;
                };
                let rest = match a.get(1) {
                    Some(Arg::List(Some(l))) => l.clone(),
                    Some(Arg::List(None)) => return,
                    _ if c.name.ends_with("Command") => match c.strings.get(1..) {
                        Some(r) => r.to_vec(),
                        None => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                if c.shell {
                    let mut text = cmd.to_string();
                    for r in &rest {
                        text.push(' ');
                        text.push_str(r);
                    }
                    self.script(text);
                } else {
                    let mut argv = vec![cmd.to_string()];
                    argv.extend(rest);
                    self.command(argv);
                }
            }
            Kind::Exec => {
                if let Some(Arg::List(Some(l))) = a.iter().find(|x| matches!(x, Arg::List(_))) {
                    self.command(l.clone());
                } else {
                    let known: Vec<String> = a
                        .iter()
                        .filter_map(|x| str_arg(Some(x)).map(str::to_string))
                        .skip(1)
                        .collect();
                    self.command(known);
                }
            }
            Kind::RmTree | Kind::Rm | Kind::Rmdir => {
                let many = matches!(lang, Lang::Perl | Lang::Ruby);
                let paths: Vec<String> = if many {
                    a.iter()
                        .flat_map(|x| match x {
                            Arg::Str(Some(s)) => vec![s.clone()],
                            Arg::List(Some(l)) => l.clone(),
                            _ => Vec::new(),
                        })
                        .collect()
                } else {
                    str_arg(a.first()).map(str::to_string).into_iter().collect()
                };
                if paths.is_empty() {
                    return;
                }
                let mut argv = match (k, c.recursive) {
                    (Kind::RmTree, _) | (_, true) => vec!["rm".to_string(), "-rf".to_string()],
                    (Kind::Rmdir, false) => vec!["rmdir".to_string()],
                    _ => vec!["rm".to_string(), "-f".to_string()],
                };
                argv.push("--".to_string());
                argv.extend(paths);
                self.command(argv);
            }
            Kind::Move | Kind::Copy => {
                if let (Some(from), Some(to)) = (str_arg(a.first()), str_arg(a.get(1))) {
                    let head = if k == Kind::Move { "mv" } else { "cp" };
                    let mut argv = vec![head.to_string()];
                    if k == Kind::Copy {
                        argv.push("-r".to_string());
                    }
                    argv.extend(["--".to_string(), from.to_string(), to.to_string()]);
                    self.command(argv);
                }
            }
            Kind::Write => {
                if let Some(p) = str_arg(a.first()) {
                    self.command(vec!["tee".to_string(), "--".to_string(), p.to_string()]);
                }
            }
            Kind::Open => self.open(lang, a),
            Kind::Http => {
                let Some(url) = c
                    .strings
                    .iter()
                    .find(|s| s.contains("://") || s.starts_with('/'))
                else {
                    return;
                };
                let mut argv = vec!["curl".to_string(), url.clone()];
                for s in c.strings.iter().filter(|s| *s != url) {
                    argv.extend(["-d".to_string(), s.clone()]);
                }
                self.command(argv);
            }
        }
    }

    /// `open(p, 'w')`, perl `open(F, '>', p)` / `open(F, '>p')`, `fopen(p, 'w')`.
    fn open(&mut self, lang: Lang, a: &[Arg]) {
        let target = match lang {
            Lang::Perl => {
                let mode = str_arg(a.get(1));
                match (mode, str_arg(a.get(2))) {
                    (Some(m), Some(p)) if writes_mode(m) => Some(p.to_string()),
                    (Some(m), None) if a.len() == 2 => {
                        let m = m.trim_start();
                        m.strip_prefix(">>")
                            .or_else(|| m.strip_prefix('>'))
                            .map(|rest| rest.trim().to_string())
                    }
                    _ => None,
                }
            }
            _ => {
                let p = str_arg(a.first());
                let mode = a.iter().skip(1).find_map(|x| str_arg(Some(x)));
                p.zip(mode)
                    .filter(|(_, m)| writes_mode(m))
                    .map(|(p, _)| p.to_string())
            }
        };
        if let Some(p) = target.filter(|p| !p.is_empty()) {
            self.command(vec!["tee".to_string(), "--".to_string(), p]);
        }
    }
}
