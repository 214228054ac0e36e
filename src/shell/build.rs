//! The builder: token lists → segments. It peels each segment, follows `cd` steps and
//! subshell scopes, links pipeline stages, and recurses into substitutions, wrapper
//! scripts, heredoc scripts, text piped into a shell, `find -exec` and `xargs` input.

use super::Dialect;
use super::files::{MAX_FILES, Reader as FileReader, Unread, scripts as file_scripts};
use super::heredoc::{BodyKind, Heredoc, Reader, classify, reader_kind};
use super::interp::{self, Lang};
use super::lexer::{Arena, MAX_DEPTH, Op, Redirect, SubKind, Tok, lex};
use super::programs::{self, Stdin, Wrap};
use super::segment::{Analysis, DirStep, MAX_SEGMENTS, Origin, Segment, Source, XARGS_INPUT};
use super::vars::Vars;
use super::word::{Word, command_name, expand_braces, is_assignment, split_plain};
use super::wrappers::{Peel, may_peel, peel};

/// Upper bound on words taken from xargs input.
const MAX_XARGS_WORDS: usize = 256;
/// Redirection targets with what `vars` knows substituted (a target that would become several
/// words is left as it is); the notes of what was resolved.
fn apply_to_targets(vars: &Vars, redirects: &mut [Redirect]) -> Vec<String> {
    let mut resolved = Vec::new();
    for r in redirects.iter_mut() {
        if let Some(t) = r.target.as_mut().filter(|t| t.dynamic) {
            let mut one = vec![t.clone()];
            let notes = vars.apply(&mut one);
            if let [w] = one.as_slice() {
                *t = w.clone();
                resolved.extend(notes);
            }
        }
    }
    resolved
}

/// A command run on behalf of a segment: its words, its redirections, and for a loop copy the
/// variables with the loop variable's one value.
type Derived = (Vec<Word>, Vec<Redirect>, Option<Vars>);

/// Upper bound on per-item copies of an `xargs -I` command.
const MAX_XARGS_ITEMS: usize = 16;

#[derive(Clone)]
pub(crate) struct Ctx {
    pub source: usize,
    pub origin: Origin,
    pub via: String,
    pub depth: u32,
    pub dialect: Dialect,
    pub sandboxed: bool,
    /// Inside a container sharing the host's network or pid namespace.
    pub host_app: bool,
    pub dirs: Vec<DirStep>,
    /// The list's output is run as a command (`$(cat <<EOF …)` in command position).
    pub output_code: bool,
    /// What the command set before this list (variables, aliases).
    pub vars: Vars,
}

impl Ctx {
    fn nested(&self, origin: Origin, dirs: &[DirStep], sandboxed: bool) -> Ctx {
        Ctx {
            source: self.source,
            origin,
            via: self.via.clone(),
            depth: self.depth + 1,
            dialect: self.dialect,
            sandboxed,
            host_app: self.host_app,
            dirs: dirs.to_vec(),
            output_code: false,
            vars: self.vars.clone(),
        }
    }

    /// A nested script source carried by a wrapper, a heredoc or a pipe.
    fn script(
        &self,
        origin: Origin,
        via: String,
        dialect: Dialect,
        sandboxed: bool,
        dirs: &[DirStep],
    ) -> Ctx {
        Ctx {
            source: self.source,
            origin,
            via,
            depth: self.depth + 1,
            dialect,
            sandboxed,
            host_app: self.host_app,
            dirs: dirs.to_vec(),
            output_code: false,
            vars: self.vars.clone(),
        }
    }
}

/// The text an `echo`/`printf`/`Write-Output` command (or a lone PowerShell string)
/// writes to stdout.
fn echo_text(argv: &[Word], dialect: Dialect) -> Option<String> {
    let first = argv.first()?;
    let name = command_name(&first.text);
    let args: Vec<&str> = match &*name {
        "echo" | "write-output" | "write" => argv[1..]
            .iter()
            .skip_while(|w| w.is_flag() && name == "echo")
            .map(|w| w.text.as_str())
            .collect(),
        "printf" => argv[1..].iter().map(|w| w.text.as_str()).collect(),
        _ if dialect == Dialect::PowerShell && argv.len() == 1 && first.quoted => {
            vec![first.text.as_str()]
        }
        _ => return None,
    };
    let text = args.join(" ");
    Some(if name == "printf" || name == "echo" {
        text.replace("\\n", "\n")
    } else {
        text
    })
}

/// Most words one unquoted brace word expands to.
const MAX_BRACE_WORDS: usize = 16;

/// An unquoted literal word with a brace the shell expands (`{a,b}`, `{1..3}`); a lone `{`
/// or `}` is a group.
fn is_brace_word(w: &Word) -> bool {
    w.glob && !w.quoted && !w.dynamic && w.text.len() > 2 && w.text.contains('{')
}

/// A word that is only a process substitution (`<(…)`).
fn is_process_sub(w: &Word) -> bool {
    w.dynamic && w.text.starts_with("<(") && w.text.ends_with(')')
}

/// A word that expands a positional parameter (`$1`, `"$@"`, `${2}`, `$#`).
fn uses_positional(w: &Word) -> bool {
    w.dynamic
        && w.text.match_indices('$').any(|(k, _)| {
            let rest = &w.text.as_bytes()[k + 1..];
            let first = if rest.first() == Some(&b'{') {
                rest.get(1)
            } else {
                rest.first()
            };
            matches!(first, Some(b'1'..=b'9' | b'@' | b'*' | b'#'))
        })
}

/// A word that is only a substitution (`$(…)`, `` `…` ``): in command position its
/// output is run.
fn is_substitution_only(w: &Word) -> bool {
    w.dynamic
        && ((w.text.starts_with("$(") && w.text.ends_with(')'))
            || (w.text.starts_with('`') && w.text.ends_with('`')))
}

#[derive(Default)]
struct Cur {
    words: Vec<Word>,
    redirects: Vec<Redirect>,
    heredocs: Vec<Heredoc>,
}

/// Per-segment facts the post-pass needs.
struct Built {
    idx: usize,
    shell_c: bool,
    xargs: Option<Option<String>>,
    /// The command reads commands from stdin (`bash`, `sh -s`, PowerShell `iex`).
    stdin_shell: Option<Dialect>,
}

/// The dialect of a command that runs what it reads on stdin.
fn stdin_shell(p: &Peel) -> Option<Dialect> {
    if p.argv.is_empty() {
        let iex = p.wrappers.last().is_some_and(|w| w == "Invoke-Expression")
            && p.scripts.last().is_some_and(|s| s.text.trim().is_empty());
        return iex.then_some(Dialect::PowerShell);
    }
    if p.shell_c {
        return None;
    }
    let prog = programs::get(&command_name(&p.argv[0].text))?;
    let source_stdin =
        matches!(prog.wrap, Some(Wrap::Source)) && reader_kind(&p.argv) == Reader::Shell;
    (prog.stdin == Stdin::Shell || source_stdin).then(|| prog.stdin_dialect())
}

pub(crate) struct Builder<'r> {
    pub arena: Arena,
    pub out: Analysis,
    pub input_cut: bool,
    /// Where the text of script files the command runs comes from.
    pub reader: &'r dyn FileReader,
    /// Files read so far (bounded by [`MAX_FILES`]).
    pub files_read: usize,
    /// Functions the command defined so far: name and body, built where they are called.
    pub functions: Vec<(String, Vec<Tok>)>,
    /// Function bodies built so far (bounded by [`MAX_CALLS`]).
    pub calls: usize,
    /// Files the command writes with a text it tells (`cat > x.sh <<EOF`, `echo … > x.sh`),
    /// by [`written_key`]: a script run later in the same command is that text.
    pub written: Vec<(String, String)>,
}

/// Most files remembered as written by the command.
const MAX_WRITTEN: usize = 16;

/// Where a file named `path` after the `cd` steps `dirs` is, as a key of
/// [`Builder::written`]; `None` when a step is not literal.
fn written_key(path: &str, dirs: &[DirStep]) -> Option<String> {
    let path = path.trim_start_matches("./");
    if path.starts_with(['/', '~']) {
        return Some(path.to_string());
    }
    let mut key = String::new();
    for d in dirs {
        match d {
            DirStep::To(p) if p.starts_with('/') => key = p.trim_end_matches('/').to_string(),
            DirStep::To(p) => {
                if !key.is_empty() {
                    key.push('/');
                }
                key.push_str(p.trim_start_matches("./").trim_end_matches('/'));
            }
            _ => return None,
        }
    }
    if !key.is_empty() {
        key.push('/');
    }
    key.push_str(path);
    Some(key)
}

/// The text a segment writes to a file it names, and that file: `echo …`/`printf …` or a
/// heredoc read by `cat` redirected with `>`/`>>`, or a heredoc read by `tee FILE`.
fn writes_text(
    argv: &[Word],
    redirects: &[Redirect],
    heredocs: &[Heredoc],
) -> Option<(Word, String)> {
    let name = command_name(&argv.first()?.text);
    let body = || heredocs.iter().find(|h| h.closed).map(|h| h.body.clone());
    if name == "tee" {
        let file = argv[1..].iter().find(|w| !w.is_flag())?;
        return Some((file.clone(), body()?));
    }
    let target = redirects
        .iter()
        .find(|r| matches!(r.op, ">" | ">>" | ">|") && r.fd.is_none_or(|f| f == 1))?
        .target
        .clone()?;
    let text = match &*name {
        "cat" if argv.len() == 1 => body()?,
        _ => {
            let mut t = echo_text(argv, Dialect::Posix)?;
            if name == "echo" {
                t.push('\n');
            }
            t
        }
    };
    Some((target, text))
}

/// The files the command wrote, in front of the caller's reader.
struct Written<'a> {
    files: &'a [(String, String)],
    inner: &'a dyn FileReader,
}

impl FileReader for Written<'_> {
    fn read(&self, path: &str, dirs: &[DirStep]) -> Result<String, Unread> {
        if let Some(key) = written_key(path, dirs)
            && let Some((_, text)) = self.files.iter().rev().find(|(k, _)| *k == key)
        {
            return Ok(text.clone());
        }
        self.inner.read(path, dirs)
    }
}

/// Most functions remembered, and most function bodies built, in one analysis.
const MAX_FUNCTIONS: usize = 64;
const MAX_CALLS: usize = 128;
/// Most tokens copied for function bodies in one analysis.
const MAX_CALL_TOKENS: usize = 1 << 16;

/// A function definition starting at `toks[i]` (`NAME() { …; }`, `NAME() ( … )`, `function
/// NAME [()] { …; }`): its name, the range of its body's tokens and the index after it.
fn function_def(toks: &[Tok], i: usize) -> Option<(String, std::ops::Range<usize>, usize)> {
    let word = |k: usize| match toks.get(k) {
        Some(Tok::Word(w)) if !w.quoted && !w.dynamic => Some(w.text.as_str()),
        _ => None,
    };
    let op = |k: usize, o: Op| matches!(toks.get(k), Some(Tok::Op(x)) if *x == o);
    let (name, mut k) = if word(i) == Some("function") {
        let name = word(i + 1)?;
        let k = if op(i + 2, Op::Open) && op(i + 3, Op::Close) {
            i + 4
        } else {
            i + 2
        };
        (name, k)
    } else {
        let name = word(i)?;
        if !(op(i + 1, Op::Open) && op(i + 2, Op::Close)) {
            return None;
        }
        (name, i + 3)
    };
    if name.is_empty() || name.contains(['=', '$', '/']) || is_reserved_lead(&Word::plain(name)) {
        return None;
    }
    while op(k, Op::Newline) {
        k += 1;
    }
    let (open_brace, body_start) = match toks.get(k) {
        Some(Tok::Word(w)) if !w.quoted && w.text == "{" => (true, k + 1),
        Some(Tok::Op(Op::Open)) => (false, k + 1),
        _ => return None,
    };
    // The matching `}` in command position (or `)`).
    let mut depth = 1usize;
    let mut at_cmd = true;
    let mut j = body_start;
    while let Some(t) = toks.get(j) {
        match t {
            Tok::Word(w) if open_brace && at_cmd && !w.quoted && w.text == "}" => {
                depth -= 1;
                if depth == 0 {
                    return Some((name.to_string(), body_start..j, j + 1));
                }
            }
            Tok::Word(w) if open_brace && at_cmd && !w.quoted && w.text == "{" => depth += 1,
            Tok::Word(w) => at_cmd = is_reserved_lead(w),
            Tok::Op(Op::Open) if !open_brace => {
                depth += 1;
                at_cmd = true;
            }
            Tok::Op(Op::Close) if !open_brace => {
                depth -= 1;
                if depth == 0 {
                    return Some((name.to_string(), body_start..j, j + 1));
                }
            }
            Tok::Op(_) => at_cmd = true,
            Tok::Redir(..) => {}
        }
        j += 1;
    }
    // Not closed: no definition, the words are analysed as they stand.
    None
}

fn is_reserved_lead(w: &Word) -> bool {
    !w.quoted
        && !w.dynamic
        && matches!(
            w.text.as_str(),
            "if" | "then"
                | "else"
                | "elif"
                | "fi"
                | "do"
                | "done"
                | "while"
                | "until"
                | "!"
                | "{"
                | "}"
                | "esac"
        )
}

fn is_header(w: &Word) -> bool {
    !w.quoted && matches!(w.text.as_str(), "for" | "select" | "case" | "function")
}

/// cmd's `if [/i] [not] exist|defined|errorlevel X cmd…` and `if [not] a==b cmd…`:
/// drop the condition so the command it guards is the segment.
fn strip_cmd_condition(words: &mut Vec<Word>) {
    if !words
        .first()
        .is_some_and(|w| w.text.trim_start_matches('@').eq_ignore_ascii_case("if"))
    {
        return;
    }
    let mut i = 1;
    let lower = |w: Option<&Word>| w.map(|w| w.text.to_ascii_lowercase());
    if lower(words.get(i)).as_deref() == Some("/i") {
        i += 1;
    }
    if lower(words.get(i)).as_deref() == Some("not") {
        i += 1;
    }
    match lower(words.get(i)).as_deref() {
        Some("exist" | "defined" | "errorlevel" | "cmdextversion") => i += 2,
        Some(t) if t.contains("==") => i += 1,
        Some(_) if words.get(i + 1).is_some_and(|w| w.text == "==") => i += 3,
        Some(_)
            if lower(words.get(i + 1)).is_some_and(|t| {
                matches!(t.as_str(), "equ" | "neq" | "lss" | "leq" | "gtr" | "geq")
            }) =>
        {
            i += 3
        }
        _ => return,
    }
    words.drain(..i.min(words.len()));
}

/// The directory change a `cd`-like command makes.
fn cd_step(argv: &[Word]) -> Option<DirStep> {
    let name = command_name(&argv.first()?.text);
    match &*name {
        "cd" | "chdir" | "pushd" | "set-location" | "sl" | "push-location" => {}
        "popd" | "pop-location" => return Some(DirStep::Unknown),
        _ => return None,
    }
    let mut target = None;
    let mut i = 1;
    while let Some(w) = argv.get(i) {
        let t = w.text.to_ascii_lowercase();
        if matches!(t.as_str(), "-path" | "-literalpath" | "-lp") {
            target = argv.get(i + 1);
            break;
        }
        if t == "/d" || (t.starts_with('-') && t.len() > 1) {
            i += 1;
            continue;
        }
        target = Some(w);
        break;
    }
    Some(match target {
        Some(w) if w.text == "-" || w.text.is_empty() => DirStep::Unknown,
        Some(w) if w.dynamic => DirStep::Dynamic(w.text.clone()),
        Some(w) => DirStep::To(w.text.clone()),
        None => DirStep::Unknown,
    })
}

impl Builder<'_> {
    /// Lex `text` as a new source and build its segments.
    pub fn source(&mut self, text: String, ctx: Ctx, parent: Option<usize>) {
        if ctx.depth > MAX_DEPTH || self.out.segments.len() >= MAX_SEGMENTS {
            self.out.truncated = true;
            return;
        }
        let mut toks = lex(&text, ctx.dialect, ctx.depth, &mut self.arena);
        if ctx.dialect == Dialect::Cmd {
            toks = super::cmd_for::expand(toks);
        }
        let idx = self.out.sources.len();
        self.out.sources.push(Source {
            text,
            dialect: ctx.dialect,
            parent,
            via: ctx.via.clone(),
        });
        self.list(toks, Ctx { source: idx, ..ctx });
    }

    /// Build the segments of one token list.
    fn list(&mut self, toks: Vec<Tok>, ctx: Ctx) {
        let mut cur = Cur::default();
        let mut dirs: Vec<Vec<DirStep>> = vec![ctx.dirs.clone()];
        let mut vars: Vec<Vars> = vec![ctx.vars.clone()];
        let mut pipe_from: Option<usize> = None;
        let mut last: Option<usize> = None;
        // About one segment per operator, and one after the last (substitutions and loop copies
        // add theirs): reserved at once so a long script's segments are not copied on every
        // doubling.
        let most = toks.iter().filter(|t| matches!(t, Tok::Op(_))).count() + 1;
        self.out.segments.reserve(most);
        let mut built: Vec<Built> = Vec::with_capacity(most);
        let mut toks = toks;
        let mut at = 0;
        while at < toks.len() {
            // `f() { …; }`: the body runs where the function is called, not here.
            if ctx.dialect == Dialect::Posix
                && cur.words.is_empty()
                && cur.redirects.is_empty()
                && let Some((name, body, next)) = function_def(&toks, at)
            {
                let body: Vec<Tok> = toks[body]
                    .iter_mut()
                    .map(|t| std::mem::replace(t, Tok::Op(Op::Newline)))
                    .collect();
                self.functions.retain(|(n, _)| *n != name);
                if self.functions.len() < MAX_FUNCTIONS {
                    self.functions.push((name, body));
                } else {
                    self.out.truncated = true;
                }
                pipe_from = None;
                at = next;
                continue;
            }
            let tok = std::mem::replace(&mut toks[at], Tok::Op(Op::Newline));
            at += 1;
            let op = match tok {
                Tok::Word(w) => {
                    cur.words.push(w);
                    continue;
                }
                Tok::Redir(r, h) => {
                    cur.heredocs.extend(h.map(|b| *b));
                    // Most commands have one redirection: room for just that (a first push
                    // would make room for four, 320 bytes a segment in a long script).
                    cur.redirects.reserve_exact(1);
                    cur.redirects.push(*r);
                    continue;
                }
                Tok::Op(op) => op,
            };
            let fin = self.finish(&mut cur, &ctx, (&mut dirs, &mut vars), &mut built);
            if let Some(i) = fin {
                if let Some(p) = pipe_from.take() {
                    self.link(p, i);
                }
                last = Some(i);
            }
            match op {
                Op::Pipe | Op::PipeAll => pipe_from = fin.or(last),
                Op::Newline if fin.is_none() => {}
                _ => pipe_from = None,
            }
            match op {
                Op::Open => {
                    let top = dirs.last().cloned().unwrap_or_default();
                    dirs.push(top);
                    let top = vars.last().cloned().unwrap_or_default();
                    vars.push(top);
                }
                Op::Close if dirs.len() > 1 => {
                    dirs.pop();
                    vars.pop();
                }
                _ => {}
            }
        }
        if let Some(i) = self.finish(&mut cur, &ctx, (&mut dirs, &mut vars), &mut built)
            && let Some(p) = pipe_from.take()
        {
            self.link(p, i);
        }
        for b in built {
            self.post(b, &ctx);
        }
    }

    fn link(&mut self, from: usize, to: usize) {
        if from == to {
            return;
        }
        if let Some(s) = self.out.segments.get_mut(from) {
            s.pipe_next = Some(to);
        }
        if let Some(s) = self.out.segments.get_mut(to) {
            s.pipe_prev = Some(from);
        }
    }

    /// Turn the words gathered so far into a segment (and its nested sources).
    fn finish(
        &mut self,
        cur: &mut Cur,
        ctx: &Ctx,
        (dirs, vars): (&mut [Vec<DirStep>], &mut [Vars]),
        built: &mut Vec<Built>,
    ) -> Option<usize> {
        let mut words = std::mem::take(&mut cur.words);
        let mut redirects = std::mem::take(&mut cur.redirects);
        let heredocs = std::mem::take(&mut cur.heredocs);
        if ctx.dialect == Dialect::Cmd {
            strip_cmd_condition(&mut words);
        }
        let lead = words.iter().take_while(|w| is_reserved_lead(w)).count();
        words.drain(..lead);
        if words.is_empty() && redirects.is_empty() {
            return None;
        }
        // Substitutions are built below; the segment keeps plain words.
        let mut subs: Vec<(usize, u32)> = Vec::new();
        let nwords = words.len();
        for (k, w) in words
            .iter_mut()
            .chain(redirects.iter_mut().filter_map(|r| r.target.as_mut()))
            .enumerate()
        {
            subs.extend(w.subs.take().into_iter().map(|s| (k, s)));
        }
        // What the shell resolves first: variables, loop values, aliases, literal output.
        let mut resolved = Vec::new();
        let mut mechanisms: Vec<&'static str> = Vec::new();
        if vars.last().is_some_and(Vars::has_positional)
            && words
                .iter()
                .chain(redirects.iter().filter_map(|r| r.target.as_ref()))
                .any(uses_positional)
        {
            mechanisms.push("positional parameters");
        }
        let mut copies: Vec<Derived> = Vec::new();
        let before = words.len();
        let scoped;
        let top = match vars.last_mut() {
            Some(top) if ctx.dialect == Dialect::Posix => {
                resolved = top.record(&words);
                resolved.extend(apply_to_targets(top, &mut redirects));
                // A loop variable used in a word or in a redirection target (`for d in a b; do
                // echo > $d/x; done`).
                let targets: Vec<Word> = redirects
                    .iter()
                    .filter_map(|r| r.target.as_ref().filter(|t| t.dynamic).cloned())
                    .collect();
                let per = if targets.is_empty() {
                    top.each_value(&words)
                } else {
                    top.each_value(&[words.as_slice(), &targets].concat())
                };
                if per.is_empty() {
                    resolved.extend(top.apply(&mut words));
                } else {
                    // A loop variable: this segment takes the first value, copies the rest.
                    for one in &per {
                        let mut w = words.clone();
                        let mut r = redirects.clone();
                        resolved.extend(one.apply(&mut w));
                        resolved.extend(apply_to_targets(one, &mut r));
                        copies.push((w, r, Some(one.clone())));
                    }
                    let (w, r, _) = copies.remove(0);
                    (words, redirects) = (w, r);
                }
                Some(&*top)
            }
            Some(top) if ctx.dialect == Dialect::PowerShell => {
                // `$x = 'npm'; & $x run build`, `Remove-Item $d -Recurse`.
                let assigns = words.len() >= 3 && words[1].text == "=";
                if assigns {
                    resolved = top.apply_ps(&mut words[2..]);
                    resolved.extend(top.record_ps(&words));
                } else {
                    resolved = top.apply_ps(&mut words);
                }
                Some(&*top)
            }
            _ => None,
        };
        // `{git,stash}`, `rm -rf {dist,out}`, `x{1..3}`: the shell expands unquoted braces
        // into words before anything runs.
        if ctx.dialect == Dialect::Posix && words.iter().any(is_brace_word) {
            let mut out = Vec::with_capacity(words.len() + 4);
            let mut expanded = false;
            for (k, w) in words.drain(..).enumerate() {
                let assigns = k == 0 && is_assignment(&w.text);
                if assigns || !is_brace_word(&w) {
                    out.push(w);
                    continue;
                }
                let alts = expand_braces(&w.text, MAX_BRACE_WORDS);
                if alts.len() < 2 {
                    out.push(w);
                    continue;
                }
                resolved.push(format!("{} → {}", w.text, alts.join(" ")));
                expanded = true;
                out.extend(alts.into_iter().map(|text| Word {
                    glob: text.contains(['*', '?', '[', '{']),
                    text,
                    ..w.clone()
                }));
            }
            words = out;
            if expanded {
                mechanisms.push("brace expansion");
            }
        }
        // The segment sees the variables set so far.
        let ctx = match top {
            Some(top) if !top.is_empty() => {
                scoped = Ctx {
                    vars: top.clone(),
                    ..ctx.clone()
                };
                &scoped
            }
            _ => ctx,
        };
        if words.len() != before {
            // Word positions moved: no substitution is the command name any more.
            subs.iter_mut().for_each(|(k, _)| *k = usize::MAX);
        }
        // `function NAME { BODY…`: the body's first command is this segment.
        if words
            .first()
            .is_some_and(|w| !w.quoted && w.text == "function")
        {
            let mut k = 2;
            while words
                .get(k)
                .is_some_and(|w| matches!(w.text.as_str(), "()" | "{"))
            {
                k += 1;
            }
            if words.len() > k && k > 2 {
                words.drain(..k);
            }
        }
        let seg_dirs = dirs.last().cloned().unwrap_or_default();
        let header = words.first().is_some_and(is_header);
        let p = if header {
            Peel::default()
        } else if may_peel(&words, ctx.dialect) {
            peel(&words, ctx.dialect)
        } else {
            // Nothing to peel: the words are the argv, without a copy.
            Peel {
                argv: std::mem::take(&mut words),
                ..Peel::default()
            }
        };
        if let Some(step) = cd_step(&p.argv)
            && let Some(top) = dirs.last_mut()
        {
            top.push(step);
        }
        let stdin = stdin_shell(&p);
        // The word whose substitution output becomes the command name.
        // A process substitution a shell runs as its script (`source <(…)`, `bash <(…)`):
        // its output is code too.
        let by_shell = p
            .wrappers
            .last()
            .and_then(|w| programs::get(w))
            .is_some_and(|w| w.shell_file);
        let code_word = match p.argv.first() {
            Some(head) if is_substitution_only(head) || (by_shell && is_process_sub(head)) => {
                if words.is_empty() {
                    Some(0)
                } else {
                    words.iter().position(|w| w.text == head.text)
                }
            }
            _ => None,
        };
        // `bash < <(…)`: a shell reading its commands from a process substitution.
        let code_target = stdin.and_then(|_| {
            redirects
                .iter()
                .filter(|r| r.target.is_some())
                .position(|r| r.op == "<" && r.target.as_ref().is_some_and(is_process_sub))
                .map(|j| nwords + j)
        });
        if code_word.is_some_and(|k| by_shell && words.get(k).is_some_and(is_process_sub))
            || code_target.is_some()
        {
            mechanisms.push("generated script");
        }
        let mut p = p;
        if p.argv
            .first()
            .is_some_and(|w| command_name(&w.text) == "git")
        {
            super::gitopts::expand_prefixes(&mut p.argv);
        }
        let Peel {
            argv,
            wrappers,
            scripts,
            derived,
            sandbox,
            host_app,
            xargs,
            shell_c,
        } = p;
        if self.out.segments.len() >= MAX_SEGMENTS {
            self.out.truncated = true;
            return None;
        }
        let sandboxed = ctx.sandboxed || sandbox == Some(true);
        let host_app = ctx.host_app || host_app;
        // `python -c '…'`, `node -e '…'`, an awk program: read for process and file calls.
        let mut program = interp::inline_program(&argv);
        let written = Written {
            files: &self.written,
            inner: self.reader,
        };
        let from_files = if ctx.dialect == Dialect::Posix && self.files_read < MAX_FILES {
            let found = file_scripts(&written, &argv, &wrappers, &seg_dirs);
            self.files_read += found.scripts.len().max(1);
            self.out.unreadable.extend(found.unreadable);
            found.scripts
        } else {
            Vec::new()
        };
        // `python x.py` after the command wrote x.py: the program is that text.
        if program.is_none()
            && !self.written.is_empty()
            && let Some(lang) = argv
                .first()
                .and_then(|h| interp::lang_of(&command_name(&h.text)))
            && let Some(file) = argv[1..].iter().find(|w| !w.is_flag())
            && let Some(key) = written_key(&file.text, &seg_dirs)
            && let Some((_, text)) = self.written.iter().rev().find(|(k, _)| *k == key)
        {
            program = Some((lang, text.clone()));
        }
        if program.is_some() && !from_files.is_empty()
            || from_files.iter().any(|f| f.via == "written file")
        {
            mechanisms.push("generated script");
        }
        self.out.segments.push(Segment {
            source: ctx.source,
            origin: ctx.origin,
            via: ctx.via.clone(),
            depth: ctx.depth,
            dialect: ctx.dialect,
            written: words,
            argv,
            wrappers,
            redirects,
            heredocs,
            pipe_prev: None,
            pipe_next: None,
            sandboxed,
            host_app,
            dirs: seg_dirs.clone(),
            resolved,
            mechanisms,
        });
        let idx = self.out.segments.len() - 1;
        if ctx.dialect == Dialect::Posix {
            let seg = &self.out.segments[idx];
            if let Some((file, text)) = writes_text(&seg.argv, &seg.redirects, &seg.heredocs)
                && !file.dynamic
                && text.len() <= super::files::MAX_FILE_BYTES
                && let Some(key) = written_key(&file.text, &seg.dirs)
            {
                let append = seg.redirects.iter().any(|r| r.op == ">>");
                let old = self.written.iter().position(|(k, _)| *k == key);
                match old {
                    Some(o) if append => self.written[o].1.push_str(&text),
                    Some(o) => self.written[o].1 = text,
                    None if self.written.len() < MAX_WRITTEN => self.written.push((key, text)),
                    None => {}
                }
            }
        }
        built.push(Built {
            idx,
            shell_c,
            xargs,
            stdin_shell: stdin,
        });
        for (k, s) in subs {
            let code = code_word == Some(k) || code_target == Some(k);
            self.sub(s, ctx, &seg_dirs, code);
        }
        for script in scripts {
            let mut nested = ctx.script(
                Origin::Script,
                script.via.to_string(),
                script.dialect,
                sandboxed,
                &seg_dirs,
            );
            nested.host_app = host_app;
            if let Some(args) = &script.args {
                nested.vars.set_positional(args);
            }
            self.source(script.text, nested, Some(ctx.source));
        }
        if ctx.dialect == Dialect::Posix && !self.functions.is_empty() {
            self.call(idx, ctx, (&seg_dirs, sandboxed, host_app));
        }
        for f in from_files {
            let mut nested = ctx.script(
                Origin::Script,
                f.via.to_string(),
                Dialect::Posix,
                sandboxed,
                &seg_dirs,
            );
            nested.host_app = host_app;
            self.source(f.text, nested, Some(ctx.source));
        }
        let place = (&seg_dirs[..], sandboxed, host_app);
        let derived = derived.into_iter().map(|w| (w, Vec::new(), None));
        self.derive(derived.chain(copies), ctx, place, None);
        if let Some((lang, code)) = program {
            self.program(lang, &code, ctx, place);
        }
        Some(idx)
    }

    /// The body of the function segment `idx` calls, built with its arguments as the
    /// positional parameters (a function never called is never built).
    fn call(
        &mut self,
        idx: usize,
        ctx: &Ctx,
        (dirs, sandboxed, host_app): (&[DirStep], bool, bool),
    ) {
        let argv = &self.out.segments[idx].argv;
        let Some(head) = argv.first().filter(|w| !w.dynamic) else {
            return;
        };
        let Some(k) = self.functions.iter().position(|(n, _)| *n == head.text) else {
            return;
        };
        let size = self.functions[k].1.len();
        if ctx.depth >= MAX_DEPTH || self.calls >= MAX_CALLS || size > MAX_CALL_TOKENS {
            self.out.truncated = true;
            return;
        }
        self.calls += 1;
        let args = argv[1..].to_vec();
        let name = self.functions[k].0.clone();
        self.out.segments[idx].mechanisms.push("function call");
        let body = self.functions[k].1.clone();
        let toks = self.copy_toks(body);
        let mut nested = ctx.nested(Origin::Function, dirs, sandboxed);
        nested.host_app = host_app;
        nested.via = format!("function {name}");
        nested.vars.set_positional(&args);
        self.list(toks, nested);
    }

    /// `toks` with their substitutions copied into the arena: a function's body is built
    /// once per call, and building takes a substitution's tokens.
    fn copy_toks(&mut self, mut toks: Vec<Tok>) -> Vec<Tok> {
        for t in &mut toks {
            let w = match t {
                Tok::Word(w) => w,
                Tok::Redir(r, _) => match r.target.as_mut() {
                    Some(w) => w,
                    None => continue,
                },
                Tok::Op(_) => continue,
            };
            let subs = w.subs.take();
            if subs.is_empty() {
                continue;
            }
            let mut copies = Vec::with_capacity(subs.len());
            for s in subs {
                let Some(sub) = self.arena.subs.get(s as usize) else {
                    continue;
                };
                let (kind, inner) = (sub.kind, sub.toks.clone());
                let inner = self.copy_toks(inner);
                copies.push(self.arena.subs.len() as u32);
                self.arena
                    .subs
                    .push(super::lexer::Sub { kind, toks: inner });
            }
            w.subs = copies.into();
            // The original keeps its own indices for a later call.
        }
        toks
    }

    /// Build commands run on behalf of a segment (`find -exec`, loop copies, what an
    /// interpreter program asks for) as segments of their own, each with its redirections.
    fn derive(
        &mut self,
        cmds: impl IntoIterator<Item = Derived>,
        ctx: &Ctx,
        (dirs, sandboxed, host_app): (&[DirStep], bool, bool),
        via: Option<&str>,
    ) {
        for (d, redirects, vars) in cmds {
            if ctx.depth >= MAX_DEPTH {
                self.out.truncated = true;
                return;
            }
            let mut nested = ctx.nested(Origin::Derived, dirs, sandboxed);
            nested.host_app = host_app;
            // A loop copy sees its own value of the loop variable, not the list: what it could
            // not resolve with that value it would only copy again, down to the depth limit.
            if let Some(vars) = vars {
                nested.vars = vars;
            }
            if let Some(v) = via {
                nested.via = v.to_string();
            }
            let mut c = Cur {
                words: d,
                redirects,
                ..Cur::default()
            };
            let mut inner_dirs = vec![dirs.to_vec()];
            let mut inner_vars = vec![nested.vars.clone()];
            let mut inner_built = Vec::new();
            self.finish(
                &mut c,
                &nested,
                (&mut inner_dirs, &mut inner_vars),
                &mut inner_built,
            );
        }
    }

    /// What a program in another language asks for (see `interp.rs`): its shell strings
    /// as scripts, its argv lists and file calls as derived commands.
    fn program(&mut self, lang: Lang, code: &str, ctx: &Ctx, place: (&[DirStep], bool, bool)) {
        let fx = interp::effects(lang, code);
        let (dirs, sandboxed, host_app) = place;
        for text in fx.scripts {
            let mut nested = ctx.script(
                Origin::Script,
                interp::via(lang).to_string(),
                Dialect::Posix,
                sandboxed,
                dirs,
            );
            nested.host_app = host_app;
            self.source(text, nested, Some(ctx.source));
        }
        let commands = fx.commands.into_iter().map(|w| (w, Vec::new(), None));
        self.derive(commands, ctx, place, Some(interp::via(lang)));
    }

    /// Build a substitution's segments; `code` when its output is run as a command.
    fn sub(&mut self, ix: u32, ctx: &Ctx, dirs: &[DirStep], code: bool) {
        let Some(sub) = self.arena.subs.get_mut(ix as usize) else {
            return;
        };
        let toks = std::mem::take(&mut sub.toks);
        let kind = sub.kind;
        let origin = match kind {
            SubKind::Process => Origin::ProcessSubstitution,
            _ => Origin::Substitution,
        };
        let mut nested = ctx.nested(origin, dirs, ctx.sandboxed);
        nested.output_code = code;
        if kind == SubKind::Array {
            for t in toks {
                if let Tok::Word(mut w) = t {
                    for s in w.subs.take() {
                        self.sub(s, &nested, dirs, false);
                    }
                }
            }
            return;
        }
        self.list(toks, nested);
    }

    /// After a list is built (pipes linked): heredoc bodies and xargs input.
    fn post(&mut self, b: Built, ctx: &Ctx) {
        if b.idx >= self.out.segments.len() {
            return;
        }
        let seg = &self.out.segments[b.idx];
        // Output run as a command: from the last stage of a substitution in command
        // position, or from echo/printf piped into a shell.
        let code_out = ctx.output_code && seg.pipe_next.is_none();
        let text = match b.stdin_shell {
            Some(d) => seg
                .pipe_prev
                .and_then(|p| {
                    let prev = &self.out.segments[p];
                    echo_text(&prev.argv, prev.dialect)
                })
                .map(|t| (t, d)),
            None if code_out => echo_text(&seg.argv, seg.dialect).map(|t| (t, ctx.dialect)),
            None => None,
        };
        if let Some((text, d)) = text {
            let (sandboxed, host_app, dirs) = (seg.sandboxed, seg.host_app, seg.dirs.clone());
            let mut nested = ctx.script(Origin::Script, "pipe".to_string(), d, sandboxed, &dirs);
            nested.host_app = host_app;
            self.source(text, nested, Some(ctx.source));
        }
        // `echo "import os; os.system('…')" | python3`: a program read from the pipe.
        let piped = self.out.segments.get(b.idx).and_then(|seg| {
            let prev = &self.out.segments[seg.pipe_prev?];
            let lang = interp::lang_of(&seg.head())?;
            (reader_kind(&seg.argv) == Reader::Foreign)
                .then(|| echo_text(&prev.argv, prev.dialect))
                .flatten()
                .map(|t| (lang, t, seg.dirs.clone(), seg.sandboxed, seg.host_app))
        });
        if let Some((lang, text, dirs, sandboxed, host_app)) = piped {
            self.program(lang, &text, ctx, (&dirs, sandboxed, host_app));
        }
        let Some(seg) = self.out.segments.get(b.idx) else {
            return;
        };
        if seg.heredocs.is_empty() && b.xargs.is_none() {
            return;
        }
        let mut later: Vec<Vec<Word>> = Vec::new();
        let mut next = seg.pipe_next;
        while let Some(n) = next {
            if later.len() > 64 {
                break;
            }
            let s = &self.out.segments[n];
            later.push(s.argv.clone());
            next = s.pipe_next;
        }
        if code_out {
            later.push(vec![Word::plain("sh")]);
        }
        let later_refs: Vec<&[Word]> = later.iter().map(Vec::as_slice).collect();
        let mut scripts = Vec::new();
        let mut programs: Vec<(Lang, String)> = Vec::new();
        let mut xargs_input: Vec<Word> = Vec::new();
        let seg = &mut self.out.segments[b.idx];
        for h in &mut seg.heredocs {
            let (kind, why) = classify(
                h,
                &seg.argv,
                b.shell_c,
                b.xargs.is_some(),
                &later_refs,
                self.input_cut,
            );
            h.kind = kind;
            h.why = why;
            match kind {
                BodyKind::Script => {
                    let d = seg
                        .argv
                        .first()
                        .and_then(|w| programs::get(&command_name(&w.text)))
                        .map_or(Dialect::Posix, |p| p.stdin_dialect());
                    scripts.push((h.body.clone(), d));
                }
                BodyKind::Arguments => xargs_input.extend(split_plain(&h.body, MAX_XARGS_WORDS)),
                BodyKind::Foreign => {
                    if let Some(lang) = seg
                        .argv
                        .first()
                        .and_then(|w| interp::lang_of(&command_name(&w.text)))
                    {
                        programs.push((lang, h.body.clone()));
                    }
                }
                BodyKind::Inert => {}
            }
        }
        let (sandboxed, host_app) = (seg.sandboxed, seg.host_app);
        let dirs = seg.dirs.clone();
        let reader = seg.head();
        if let Some(replace) = b.xargs {
            if xargs_input.is_empty() {
                xargs_input = self.piped_words(b.idx);
            }
            self.xargs(b.idx, replace, xargs_input, ctx);
        }
        for (text, d) in scripts {
            let mut nested = ctx.script(Origin::Heredoc, reader.clone(), d, sandboxed, &dirs);
            nested.host_app = host_app;
            self.source(text, nested, Some(ctx.source));
        }
        let place = (&dirs[..], sandboxed, host_app);
        for (lang, text) in programs {
            self.program(lang, &text, ctx, place);
        }
    }

    /// Words an `echo`/`printf` stage pipes into the segment.
    fn piped_words(&self, idx: usize) -> Vec<Word> {
        let Some(prev) = self.out.segments[idx].pipe_prev else {
            return Vec::new();
        };
        let argv = &self.out.segments[prev].argv;
        let name = argv
            .first()
            .map(|w| command_name(&w.text))
            .unwrap_or_default();
        let args: Vec<&Word> = match &*name {
            "echo" => argv[1..].iter().skip_while(|w| w.is_flag()).collect(),
            "printf" => argv[1..].iter().collect(),
            _ => return Vec::new(),
        };
        let text = args
            .iter()
            .map(|w| w.text.replace("\\n", " "))
            .collect::<Vec<_>>()
            .join(" ");
        split_plain(&text, MAX_XARGS_WORDS)
    }

    fn xargs(&mut self, idx: usize, replace: Option<String>, input: Vec<Word>, ctx: &Ctx) {
        if input.is_empty() {
            let mut item = Word::plain(XARGS_INPUT);
            item.dynamic = true;
            match replace {
                // Unknown items still reach the command as operands.
                None => self.out.segments[idx].argv.push(item),
                // `xargs -I{} git add {}`: each `{}` is an unknown item.
                Some(r) if !r.is_empty() => {
                    for w in &mut self.out.segments[idx].argv[1..] {
                        if w.text == r {
                            *w = item.clone();
                        } else if w.text.contains(&r) {
                            w.dynamic = true;
                        }
                    }
                }
                Some(_) => {}
            }
            return;
        }
        let Some(r) = replace else {
            self.out.segments[idx].argv.extend(input);
            return;
        };
        let base = self.out.segments[idx].argv.clone();
        let subst = |item: &Word| -> Vec<Word> {
            base.iter()
                .map(|w| {
                    let mut w = w.clone();
                    if !r.is_empty() && w.text.contains(&r) {
                        w.text = w.text.replace(&r, &item.text);
                    }
                    w
                })
                .collect()
        };
        self.out.segments[idx].argv = subst(&input[0]);
        for item in input.iter().skip(1).take(MAX_XARGS_ITEMS) {
            if self.out.segments.len() >= MAX_SEGMENTS {
                self.out.truncated = true;
                return;
            }
            let mut copy = self.out.segments[idx].clone();
            copy.argv = subst(item);
            copy.origin = Origin::Derived;
            copy.depth = ctx.depth + 1;
            copy.pipe_prev = None;
            copy.pipe_next = None;
            self.out.segments.push(copy);
        }
    }
}
