//! The builder: token lists → segments. It peels each segment, follows `cd` steps and
//! subshell scopes, links pipeline stages, and recurses into substitutions, wrapper
//! scripts, heredoc scripts, text piped into a shell, `find -exec` and `xargs` input.

use super::Dialect;
use super::files::{MAX_FILES, Reader as FileReader, scripts as file_scripts};
use super::heredoc::{BodyKind, Heredoc, Reader, classify, reader_kind};
use super::interp::{self, Lang};
use super::lexer::{Arena, MAX_DEPTH, Op, Redirect, SubKind, Tok, lex};
use super::programs::{self, Stdin, Wrap};
use super::segment::{Analysis, DirStep, MAX_SEGMENTS, Origin, Segment, Source, XARGS_INPUT};
use super::vars::Vars;
use super::word::{Word, command_name, split_plain};
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
        for tok in toks {
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
        for (k, w) in words
            .iter_mut()
            .chain(redirects.iter_mut().filter_map(|r| r.target.as_mut()))
            .enumerate()
        {
            subs.extend(w.subs.take().into_iter().map(|s| (k, s)));
        }
        // What the shell resolves first: variables, loop values, aliases, literal output.
        let mut resolved = Vec::new();
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
        let code_word = match p.argv.first() {
            Some(head) if is_substitution_only(head) => {
                if words.is_empty() {
                    Some(0)
                } else {
                    words.iter().position(|w| w.text == head.text)
                }
            }
            _ => None,
        };
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
        let program = interp::inline_program(&argv);
        let from_files = if ctx.dialect == Dialect::Posix && self.files_read < MAX_FILES {
            let found = file_scripts(self.reader, &argv, &wrappers, &seg_dirs);
            self.files_read += found.scripts.len().max(1);
            self.out.unreadable.extend(found.unreadable);
            found.scripts
        } else {
            Vec::new()
        };
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
        });
        let idx = self.out.segments.len() - 1;
        built.push(Built {
            idx,
            shell_c,
            xargs,
            stdin_shell: stdin,
        });
        for (k, s) in subs {
            self.sub(s, ctx, &seg_dirs, code_word == Some(k));
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
            self.source(script.text, nested, Some(ctx.source));
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
            if replace.is_none() {
                // Unknown items still reach the command as operands.
                let mut w = Word::plain(XARGS_INPUT);
                w.dynamic = true;
                self.out.segments[idx].argv.push(w);
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
