//! Write targets: the paths a command writes, replaces or deletes, as words.
//!
//! The hook checks each target like an Edit of that path (see `hook/targets.rs`); this
//! module only reads words. A target keeps the word as the shell would pass it (quotes
//! removed, expansions kept and flagged [`Word::dynamic`], patterns flagged
//! [`Word::glob`]), the command that writes it, and its [`Reach`]: a file, or a tree
//! (`rm -r dir`, `mv dir …`, a pathspec) that holds every path below it.
//!
//! Which commands write which operands is the program table's (`programs.rs`): a row's
//! [`Writes`](super::programs::Writes) form and its option grammar. Forms covered:
//! - redirections `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `N>` (not `>&N` duplications);
//! - `tee`, `rm`/`unlink`/`shred`/`rmdir`, `rimraf`/`del-cli`/`trash` (a whole tree), `truncate`, `touch`, `sed -i`, `perl -i`,
//!   `cp`/`install`/`rsync`/`ln` destinations (the destination itself and the file a
//!   source lands as inside it), `mv` destinations and sources, `dd of=`, `patch`;
//! - `curl -o`/`-O`/`--output-dir`, `wget [-O] [-P]` (a saved URL is its last path part),
//!   `sort -o`, `uniq IN OUT`, the compressors (`gzip a` writes `a` and `a.gz`), `awk -i
//!   inplace`;
//! - `tar -x`/`unzip` into their folder: the members named, else the whole folder (a tree
//!   target: it blocks when the folder holds another stream's or a protected file), `tar -c
//!   -f OUT`; `find START -delete` and `find START -exec <writer> {}`: the start folders,
//!   whole (what find finds is not in the text; the derived command's `{}` is dropped);
//! - git: `checkout [<tree-ish>] -- <pathspec>`, `restore`, `rm`, `mv`, `stash push
//!   <pathspec>`, `clean` (the cwd when no pathspec is given), with `-C <dir>` applied;
//! - PowerShell: `Set-Content`, `Add-Content`, `Clear-Content`, `Out-File`, `Tee-Object`,
//!   `New-Item`, `Remove-Item`, `Copy-Item`, `Move-Item`, `Rename-Item` and their aliases,
//!   parameters abbreviated as PowerShell allows;
//! - cmd: `del`/`erase`, `rd`/`rmdir`, `copy`/`xcopy`/`move`, with joined switches (`/S/Q`).
//!
//! Not modelled: writes made by programs the command runs (a build writing `dist/`, a
//! script's own redirections are analysed only when the script is), `xargs` items not
//! known from the text (`<xargs input>`, dynamic: let through like any unknown target).
//! Interpreter one-liners reach this table through the commands `interp.rs` derives
//! from their file calls (`open(p, 'w')` → `tee p`, `os.remove(p)` → `rm p`). A target whose value is unknown stays [`Word::dynamic`]; the hook
//! lets it through (coordination, not a sandbox).

use super::Dialect;
use super::opts::Opts;
use super::programs::{self, Program, Writes as Form};
use super::segment::{Analysis, Segment};
use super::word::{Word, basename, command_name};

/// How much a target covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// The path itself.
    File,
    /// The path and everything below it.
    Tree,
}

/// One path a command writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteTarget {
    /// Index of the segment that writes it.
    pub segment: usize,
    /// The path as the command names it.
    pub word: Word,
    /// The command form that writes it (`rm`, `sed -i`, `>`, `cp destination`).
    pub via: String,
    /// A file or a whole tree.
    pub reach: Reach,
}

/// Every write target of an analysis, in segment order. Segments inside a sandboxed
/// container are skipped: their writes land in the container.
pub fn targets(an: &Analysis) -> Vec<WriteTarget> {
    let mut out = Vec::new();
    for (i, seg) in an.segments.iter().enumerate() {
        if seg.sandboxed {
            continue;
        }
        segment_targets(i, seg, &mut out);
    }
    out
}

fn push(out: &mut Vec<WriteTarget>, segment: usize, word: &Word, via: &str, reach: Reach) {
    let t = word.text.as_str();
    if t.is_empty() || t == "-" {
        return;
    }
    out.push(WriteTarget {
        segment,
        word: word.clone(),
        via: via.to_string(),
        reach,
    });
}

fn segment_targets(i: usize, seg: &Segment, out: &mut Vec<WriteTarget>) {
    for r in &seg.redirects {
        let Some(target) = &r.target else { continue };
        let writes = match r.op {
            ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => true,
            // `>&file` is bash's `&>file`; `>&2` and `>&-` duplicate or close.
            ">&" => !target.text.bytes().all(|b| b.is_ascii_digit()) && target.text != "-",
            _ => false,
        };
        if writes {
            push(out, i, target, r.op, Reach::File);
        }
    }
    let from = out.len();
    argv_targets(i, seg.dialect, &seg.argv, out);
    // `find … -exec rm {} +` runs `rm` on what find finds: the `find` segment names that
    // (its start folders), so the derived command's `{}` is not a file of its own.
    if seg.origin == super::Origin::Derived {
        let mut k = from;
        while k < out.len() {
            if out[k].word.text.contains("{}") {
                out.remove(k);
            } else {
                k += 1;
            }
        }
    }
}

/// The targets `argv` writes as one command of `dialect` (redirections aside).
fn argv_targets(i: usize, dialect: Dialect, argv: &[Word], out: &mut Vec<WriteTarget>) {
    let Some(head) = argv.first() else { return };
    let name = command_name(&head.text);
    let args = &argv[1..];
    match dialect {
        Dialect::PowerShell => {
            if powershell(i, &name, args, out) {
                return;
            }
        }
        Dialect::Cmd => {
            if cmd(i, &name, args, out) {
                return;
            }
        }
        Dialect::Posix => {}
    }
    if name == "git" {
        git(i, argv, out);
        return;
    }
    if let Some(prog) = programs::get(&name)
        && let Some(form) = prog.writes
    {
        posix(i, &name, prog, form, args, out);
    }
}

fn recursive(o: &Opts) -> bool {
    o.has(&["r", "R", "a", "--recursive", "--archive", "--mirror"])
}

fn posix(
    i: usize,
    name: &str,
    prog: &Program,
    form: Form,
    args: &[Word],
    out: &mut Vec<WriteTarget>,
) {
    match form {
        Form::Tar => return tar(i, prog, args, out),
        Form::Find => return find(i, args, out),
        _ => {}
    }
    let o = Opts::parse(args, prog.opts.short, prog.opts.long);
    match form {
        Form::All => {
            for w in &o.operands {
                push(out, i, w, name, Reach::File);
            }
        }
        Form::DeleteTree => {
            for w in &o.operands {
                push(out, i, w, name, Reach::Tree);
            }
        }
        Form::Delete => {
            let reach = if recursive(&o) || name == "rmdir" {
                Reach::Tree
            } else {
                Reach::File
            };
            for w in &o.operands {
                push(out, i, w, name, reach);
            }
        }
        Form::Dest | Form::Move => {
            // `ln -s TARGET` alone links into the cwd under the target's name.
            let dest_opt = o.value(&["t", "--target-directory"]);
            let (sources, dest): (Vec<&Word>, Option<Word>) = match dest_opt {
                Some(d) => (o.operands.clone(), Some(Word::plain(d))),
                None if o.operands.len() >= 2 => {
                    let (last, rest) = o.operands.split_last().expect("two operands");
                    (rest.to_vec(), Some((*last).clone()))
                }
                None => (Vec::new(), None),
            };
            let Some(dest) = dest.filter(|d| !remote(&d.text)) else {
                return;
            };
            let reach = if form == Form::Move || recursive(&o) {
                Reach::Tree
            } else {
                Reach::File
            };
            let via = format!("{name} destination");
            push(out, i, &dest, &via, reach);
            for src in &sources {
                if let Some(inside) = inside_dest(&dest, src) {
                    push(out, i, &inside, &via, reach);
                }
                if form == Form::Move {
                    push(out, i, src, &format!("{name} source"), Reach::Tree);
                }
            }
        }
        Form::InPlace => {
            if !o.has(&["i", "--in-place"]) {
                return;
            }
            let script_given = o.value(&["e", "f", "--expression", "--file"]).is_some();
            let skip = usize::from(!script_given);
            for w in o.operands.iter().skip(skip) {
                push(out, i, w, &format!("{name} -i"), Reach::File);
            }
        }
        Form::Dd => {
            for w in args {
                if let Some(file) = w.text.strip_prefix("of=") {
                    let mut t = w.clone();
                    t.text = file.to_string();
                    push(out, i, &t, "dd of=", Reach::File);
                }
            }
        }
        Form::Patch => {
            if let Some(v) = o.value(&["o", "--output"]) {
                push(out, i, &Word::plain(v), "patch -o", Reach::File);
            } else if let Some(w) = o.operands.first() {
                push(out, i, w, name, Reach::File);
            }
        }
        Form::Output => {
            if let Some(v) = o.value(&["o", "--output"]) {
                push(
                    out,
                    i,
                    &value_word(args, v),
                    &format!("{name} -o"),
                    Reach::File,
                );
            }
        }
        Form::Second => {
            if let Some(w) = o.operands.get(1) {
                push(out, i, w, name, Reach::File);
            }
        }
        Form::Compress(c) => packed(i, name, c, &o, out),
        Form::AwkInPlace => {
            let inplace = o.values.iter().any(|(n, v)| {
                matches!(n.as_str(), "i" | "--include") && matches!(*v, "inplace" | "inplace.awk")
            });
            if !inplace {
                return;
            }
            let given = o.value(&["f", "e", "--file", "--source"]).is_some();
            for w in o.operands.iter().skip(usize::from(!given)) {
                // `var=value` operands are assignments, not files.
                if !super::word::is_assignment(&w.text) {
                    push(out, i, w, &format!("{name} -i inplace"), Reach::File);
                }
            }
        }
        Form::Curl => curl(i, args, &o, out),
        Form::Wget => wget(i, args, &o, out),
        Form::Unzip => {
            if o.has(&["p", "c", "l", "t", "v", "Z", "z"]) {
                return;
            }
            let Some((archive, members)) = o.operands.split_first() else {
                return;
            };
            let _ = archive;
            let dir = o
                .value(&["d"])
                .map_or_else(|| Word::plain("."), |v| value_word(args, v));
            extract_into(i, "unzip", &dir, members, o.has(&["j", "x"]), out);
        }
        Form::Tar | Form::Find => {}
    }
}

/// The word an option's value came from (its quoting and expansions), or a plain word of it
/// when the value was glued to the option (`-oFILE`, `--output=FILE`).
fn value_word(args: &[Word], v: &str) -> Word {
    args.iter()
        .find(|w| w.text == v)
        .cloned()
        .unwrap_or_else(|| {
            let mut w = Word::plain(v);
            w.dynamic = v.contains(['$', '`']);
            w.glob = v.contains(['*', '?', '[']);
            w
        })
}

/// `dir/name`, or `name` when it is absolute or `dir` is the cwd.
fn under(dir: &Word, name: &Word) -> Word {
    if is_abs(&name.text) || dir.text == "." {
        return name.clone();
    }
    let sep = if dir.text.ends_with(['/', '\\']) {
        ""
    } else {
        "/"
    };
    Word {
        text: format!("{}{sep}{}", dir.text, name.text),
        dynamic: dir.dynamic || name.dynamic,
        glob: dir.glob || name.glob,
        quoted: dir.quoted || name.quoted,
        ..Word::default()
    }
}

/// An archive extracted into `dir`: the members named (each may be a folder), or the whole
/// folder when the members are not known from the command (none named, paths rewritten).
fn extract_into(
    i: usize,
    via: &str,
    dir: &Word,
    members: &[&Word],
    whole: bool,
    out: &mut Vec<WriteTarget>,
) {
    if members.is_empty() || whole {
        push(out, i, dir, via, Reach::Tree);
        return;
    }
    for m in members {
        push(out, i, &under(dir, m), via, Reach::Tree);
    }
}

/// `gzip FILE` writes `FILE.gz` and removes `FILE`; `gunzip FILE.gz` the reverse. `-c` writes
/// to stdout (nothing here), `-k` keeps the file it read, `-t`/`-l` only read.
fn packed(i: usize, name: &str, c: &programs::Compress, o: &Opts, out: &mut Vec<WriteTarget>) {
    if o.has(&["c", "t", "l", "--stdout", "--to-stdout", "--test", "--list"]) {
        return;
    }
    let unpack = if c.unpacks {
        !o.has(&["z", "--compress"])
    } else {
        o.has(&["d", "--decompress", "--uncompress"])
    };
    let keep = if c.keeps {
        !o.has(&["--rm"])
    } else {
        o.has(&["k", "--keep"])
    };
    let ext = o.value(&["S", "--suffix"]).unwrap_or(c.ext);
    let reach = if o.has(&["r", "--recursive"]) {
        Reach::Tree
    } else {
        Reach::File
    };
    let via = name.to_string();
    if let Some(v) = o.value(&["o", "--output"]) {
        push(out, i, &Word::plain(v), &format!("{name} -o"), Reach::File);
    }
    for w in &o.operands {
        if !keep {
            push(out, i, w, &via, reach);
        }
        if reach == Reach::Tree || o.value(&["o", "--output"]).is_some() {
            continue;
        }
        let written = if unpack {
            w.text.strip_suffix(ext).map(str::to_string)
        } else {
            Some(format!("{}{ext}", w.text))
        };
        if let Some(t) = written.filter(|t| !t.is_empty()) {
            push(
                out,
                i,
                &Word {
                    text: t,
                    ..(*w).clone()
                },
                &via,
                Reach::File,
            );
        }
    }
}

/// The file name a URL is saved as (`-O`, `wget URL`): its last path part, without the query;
/// `None` when it has none.
fn url_name(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.split(['?', '#']).next().unwrap_or("");
    let (_, path) = path.split_once('/')?;
    let last = path.rsplit('/').next().unwrap_or("");
    (!last.is_empty() && last != "." && last != "..").then_some(last)
}

fn is_url(t: &str) -> bool {
    t.contains("://") || t.contains('.') && !t.starts_with(['.', '/'])
}

/// `curl -o FILE` (each `-o` one URL's), `-O`/`--remote-name` (the URL's last path part),
/// in `--output-dir`; `-D`/`--dump-header`, `-c`/`--cookie-jar`, `--trace` files.
fn curl(i: usize, args: &[Word], o: &Opts, out: &mut Vec<WriteTarget>) {
    let dir = o
        .value(&["--output-dir"])
        .map_or_else(|| Word::plain("."), |v| value_word(args, v));
    for (n, v) in &o.values {
        match n.as_str() {
            "o" | "--output" if *v != "-" => {
                push(
                    out,
                    i,
                    &under(&dir, &value_word(args, v)),
                    "curl -o",
                    Reach::File,
                );
            }
            "D" | "--dump-header" | "c" | "--cookie-jar" | "--trace" | "--trace-ascii"
            | "--etag-save" | "--stderr" => {
                push(
                    out,
                    i,
                    &value_word(args, v),
                    &format!("curl {n}"),
                    Reach::File,
                );
            }
            _ => {}
        }
    }
    let remote = o.has(&["O", "--remote-name", "--remote-name-all"]);
    if !remote {
        return;
    }
    let named = o
        .values
        .iter()
        .filter(|(n, _)| n == "o" || n == "--output")
        .count();
    let urls: Vec<&str> = o
        .operands
        .iter()
        .map(|w| w.text.as_str())
        .chain(
            o.values
                .iter()
                .filter(|(n, _)| n == "--url")
                .map(|(_, v)| *v),
        )
        .collect();
    let all = o.has(&["--remote-name-all"]);
    let count = if all {
        urls.len()
    } else {
        // One `-O` per URL after those given `-o`.
        let os = o
            .flags
            .iter()
            .filter(|f| f.as_str() == "O" || f.as_str() == "--remote-name")
            .count();
        os.min(urls.len().saturating_sub(named))
    };
    for url in urls.iter().skip(if all { 0 } else { named }).take(count) {
        if let Some(name) = url_name(url) {
            let mut w = Word::plain(name);
            w.dynamic = url.contains(['$', '`']);
            push(out, i, &under(&dir, &w), "curl -O", Reach::File);
        }
    }
}

/// `wget URL` saves the URL's last path part (`index.html` for a folder) in `-P DIR`;
/// `-O FILE` one file; `-r`/`-m` a tree under the host's folder; `-o`/`-a` a log.
fn wget(i: usize, args: &[Word], o: &Opts, out: &mut Vec<WriteTarget>) {
    for (n, v) in &o.values {
        if matches!(
            n.as_str(),
            "o" | "a" | "--output-file" | "--append-output" | "--save-cookies"
        ) {
            push(
                out,
                i,
                &value_word(args, v),
                &format!("wget {n}"),
                Reach::File,
            );
        }
    }
    if o.has(&["--spider"]) {
        return;
    }
    if let Some(v) = o.value(&["O", "--output-document"]) {
        push(out, i, &value_word(args, v), "wget -O", Reach::File);
        return;
    }
    let dir = o
        .value(&["P", "--directory-prefix"])
        .map_or_else(|| Word::plain("."), |v| value_word(args, v));
    if o.has(&["r", "m", "--recursive", "--mirror"]) || o.value(&["i", "--input-file"]).is_some() {
        // Names come from the server (or a list file): the whole folder.
        push(out, i, &dir, "wget", Reach::Tree);
        return;
    }
    for w in &o.operands {
        if !is_url(&w.text) {
            continue;
        }
        let name = url_name(&w.text).unwrap_or("index.html");
        let mut t = Word::plain(name);
        t.dynamic = w.dynamic;
        push(out, i, &under(&dir, &t), "wget", Reach::File);
    }
}

/// `tar`'s old bundled first word (`tar xzf a.tar -C d`) as options (`-x -z -f a.tar`).
fn tar_args(prog: &Program, args: &[Word]) -> Vec<Word> {
    let Some(first) = args.first() else {
        return Vec::new();
    };
    if first.text.starts_with('-') || first.text.is_empty() {
        return args.to_vec();
    }
    let mut out = Vec::new();
    let mut rest = args[1..].iter();
    for c in first.text.chars() {
        out.push(Word::plain(format!("-{c}")));
        if prog.opts.short.contains(c)
            && let Some(v) = rest.next()
        {
            out.push(v.clone());
        }
    }
    out.extend(rest.cloned());
    out
}

/// `tar -x` writes into `-C DIR` (the cwd by default): the members named, or the whole
/// folder; `tar -c|-r|-u -f OUT` writes the archive; `--remove-files` deletes the sources.
fn tar(i: usize, prog: &Program, args: &[Word], out: &mut Vec<WriteTarget>) {
    let args = tar_args(prog, args);
    let o = Opts::parse(&args, prog.opts.short, prog.opts.long);
    let dir = o
        .value(&["C", "--directory"])
        .map_or_else(|| Word::plain("."), |v| value_word(&args, v));
    if o.has(&["x", "--extract", "--get"]) {
        if o.has(&["O", "--to-stdout", "--to-command", "t", "--list"]) {
            return;
        }
        let whole = o.has(&[
            "--strip-components",
            "--transform",
            "--xform",
            "--wildcards",
        ]) || o.value(&["T", "--files-from"]).is_some();
        extract_into(i, "tar -x", &dir, &o.operands, whole, out);
        return;
    }
    if o.has(&[
        "c",
        "r",
        "u",
        "A",
        "--create",
        "--append",
        "--update",
        "--catenate",
        "--delete",
    ]) {
        if let Some(f) = o.value(&["f", "--file"]) {
            push(out, i, &value_word(&args, f), "tar -f", Reach::File);
        }
        if o.has(&["--remove-files"]) {
            for w in &o.operands {
                push(out, i, &under(&dir, w), "tar --remove-files", Reach::Tree);
            }
        }
    }
}

/// `find START… -delete` deletes below its start folders; `-exec CMD {} ;` (and `-execdir`,
/// `-ok`) writes them when CMD writes its `{}` (`rm`, `sed -i`, `truncate`): the start
/// folders, whole, since what find finds is not known from the command.
fn find(i: usize, args: &[Word], out: &mut Vec<WriteTarget>) {
    let mut k = 0;
    // Global options: `-H`, `-L`, `-P`, `-D opts`, `-O3`.
    while let Some(w) = args.get(k) {
        match w.text.as_str() {
            "-H" | "-L" | "-P" => k += 1,
            "-D" => k += 2,
            t if t.starts_with("-O") => k += 1,
            _ => break,
        }
    }
    let mut starts: Vec<&Word> = Vec::new();
    while let Some(w) = args.get(k) {
        let t = w.text.as_str();
        if t.starts_with('-') || t == "(" || t == "!" {
            break;
        }
        starts.push(w);
        k += 1;
    }
    let dot = Word::plain(".");
    if starts.is_empty() {
        starts.push(&dot);
    }
    let mut vias: Vec<String> = Vec::new();
    while k < args.len() {
        let t = args[k].text.as_str();
        if t == "-delete" {
            vias.push("find -delete".to_string());
        }
        if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let from = k + 1;
            let mut end = from;
            while let Some(w) = args.get(end) {
                if w.text == ";" || (w.text == "+" && end > from && args[end - 1].text == "{}") {
                    break;
                }
                end += 1;
            }
            let cmd = &args[from..end.min(args.len())];
            let mut inner = Vec::new();
            // `-exec sudo rm {} +`: the command its wrappers run.
            let peeled = super::wrappers::peel(cmd, Dialect::Posix);
            argv_targets(i, Dialect::Posix, &peeled.argv, &mut inner);
            // What the command writes at `{}` (`rm {}`, `mv {} dest`'s source), not a
            // destination that holds it (`cp {} dest/`'s `dest/{}`).
            if let Some(w) = inner.iter().find(|w| w.word.text.starts_with("{}")) {
                vias.push(format!("find {t} {}", w.via));
            }
            k = end;
        }
        k += 1;
    }
    if let Some(via) = vias.first() {
        for s in &starts {
            push(out, i, s, via, Reach::Tree);
        }
    }
}

/// `host:path` (scp, rsync): a path on another machine.
fn remote(t: &str) -> bool {
    match t.find(':') {
        Some(k) => k > 1 && !t[..k].contains(['/', '\\']),
        None => false,
    }
}

/// The path a source lands at when the destination is a directory (`cp a.ts src/` writes
/// `src/a.ts`).
fn inside_dest(dest: &Word, src: &Word) -> Option<Word> {
    let base = basename(&src.text);
    if base.is_empty() || base == "." || base == ".." || src.text == "-" {
        return None;
    }
    let sep = if dest.text.ends_with(['/', '\\']) {
        ""
    } else {
        "/"
    };
    Some(Word {
        text: format!("{}{sep}{base}", dest.text),
        dynamic: dest.dynamic || src.dynamic,
        glob: dest.glob || src.glob,
        quoted: dest.quoted || src.quoted,
        ..Word::default()
    })
}

/// git's global options before the subcommand, with the `-C` directories in order.
pub struct GitCall<'a> {
    /// `-C <dir>` values, in order (each relative to the previous).
    pub dirs: Vec<&'a Word>,
    /// The subcommand, lowercased.
    pub sub: String,
    /// Its arguments.
    pub args: &'a [Word],
}

/// Splits a `git` argv into its `-C` directories, subcommand and arguments; `None` for
/// `git --help`/`--version` or no subcommand.
pub fn git_call(argv: &[Word]) -> Option<GitCall<'_>> {
    if command_name(&argv.first()?.text) != "git" {
        return None;
    }
    let git = programs::get("git")?.opts;
    let mut dirs = Vec::new();
    let mut i = 1;
    while let Some(w) = argv.get(i) {
        let t = w.text.as_str();
        if t == "-C" {
            dirs.extend(argv.get(i + 1));
            i += 2;
            continue;
        }
        if git.takes_value(t) {
            i += 2;
            continue;
        }
        if t.starts_with('-') {
            if matches!(t, "-h" | "--help" | "-v" | "--version") {
                return None;
            }
            i += 1;
            continue;
        }
        return Some(GitCall {
            dirs,
            sub: t.to_ascii_lowercase(),
            args: &argv[i + 1..],
        });
    }
    None
}

/// A git pathspec with its magic read: `Some((top, path))` where `top` means `path` is
/// relative to the repository's top (`:/src`, `:(top)src`, `:(top,icase)x`) rather than
/// the cwd; other magic words are dropped (`:(literal)x`, `:(glob)*.ts`). `None` for an
/// exclusion (`:!x`, `:^x`, `:(exclude)x`), which writes nothing.
pub fn pathspec(text: &str) -> Option<(bool, &str)> {
    let Some(rest) = text.strip_prefix(':') else {
        return Some((false, text));
    };
    if let Some(long) = rest.strip_prefix('(') {
        let (magic, path) = long.split_once(')')?;
        let words: Vec<&str> = magic.split(',').map(str::trim).collect();
        if words.contains(&"exclude") {
            return None;
        }
        return Some((words.contains(&"top"), path));
    }
    // Short magic: `:/`, `:!`, `:^`, optionally ended by another `:`.
    let end = rest
        .find(|c: char| !matches!(c, '/' | '!' | '^'))
        .unwrap_or(rest.len());
    let (magic, path) = rest.split_at(end);
    if magic.contains(['!', '^']) {
        return None;
    }
    let path = path.strip_prefix(':').unwrap_or(path);
    Some((magic.contains('/'), path))
}

/// `word` read from inside the `-C` directories.
fn under_dirs(dirs: &[&Word], word: &Word) -> Word {
    let mut w = word.clone();
    for d in dirs.iter().rev() {
        if is_abs(&w.text) {
            break;
        }
        w.text = format!("{}/{}", d.text.trim_end_matches(['/', '\\']), w.text);
        w.dynamic |= d.dynamic;
    }
    w
}

fn is_abs(p: &str) -> bool {
    let b = p.as_bytes();
    p.starts_with(['/', '\\']) || (b.len() >= 2 && b[1] == b':' && b[0].is_ascii_alphabetic())
}

fn git(i: usize, argv: &[Word], out: &mut Vec<WriteTarget>) {
    let Some(call) = git_call(argv) else { return };
    let args = call.args;
    let via = format!("git {}", call.sub);
    let mut emit = |w: &Word, reach: Reach| {
        // Pathspec magic: `:/x` and `:(top)x` are relative to the root, exclusions write
        // nothing.
        let Some((top, path)) = pathspec(&w.text) else {
            return;
        };
        if top {
            let mut at_root = w.clone();
            at_root.text = format!("$CLAUDE_PROJECT_DIR/{path}");
            at_root.dynamic = true;
            push(out, i, &at_root, &via, reach);
            return;
        }
        let mut plain = w.clone();
        plain.text = path.to_string();
        push(out, i, &under_dirs(&call.dirs, &plain), &via, reach);
    };
    let dry = |o: &Opts| o.has(&["n", "--dry-run"]);
    match call.sub.as_str() {
        "checkout" => {
            let o = Opts::parse(args, "bB", &["orphan", "conflict", "pathspec-from-file"]);
            if o.has(&["b", "B", "--orphan"]) && !o.dashdash {
                return;
            }
            let paths: &[&Word] = if o.dashdash {
                &o.operands[o.before_dashdash..]
            } else if o.operands.len() >= 2 {
                // `git checkout <tree-ish> <path>…`
                &o.operands[1..]
            } else {
                // `git checkout <branch-or-path>`: a branch name names no owned file.
                &o.operands[..]
            };
            for w in paths {
                emit(w, Reach::Tree);
            }
        }
        "restore" => {
            let o = Opts::parse(args, "s", &["source", "pathspec-from-file", "conflict"]);
            if o.has(&["S", "--staged"]) && !o.has(&["W", "--worktree"]) {
                return;
            }
            for w in &o.operands {
                emit(w, Reach::Tree);
            }
        }
        "rm" => {
            let o = Opts::parse(args, "", &["pathspec-from-file"]);
            if o.has(&["--cached"]) || dry(&o) {
                return;
            }
            for w in &o.operands {
                emit(w, Reach::Tree);
            }
        }
        "mv" => {
            let o = Opts::parse(args, "", &[]);
            if dry(&o) {
                return;
            }
            for w in &o.operands {
                emit(w, Reach::Tree);
            }
            if let (Some(dest), true) = (o.operands.last(), o.operands.len() >= 2) {
                for src in &o.operands[..o.operands.len() - 1] {
                    if let Some(inside) = inside_dest(dest, src) {
                        emit(&inside, Reach::Tree);
                    }
                }
            }
        }
        "stash" => {
            let (verb, rest) = match args.first() {
                Some(w) if !w.text.starts_with('-') => (w.text.as_str(), &args[1..]),
                _ => ("push", args),
            };
            if !matches!(verb, "push" | "save") {
                return;
            }
            let o = Opts::parse(rest, "m", &["message", "pathspec-from-file"]);
            if verb == "save" && !o.dashdash {
                return;
            }
            for w in &o.operands[o.before_dashdash.min(o.operands.len())..] {
                emit(w, Reach::Tree);
            }
            if o.dashdash {
                return;
            }
            for w in &o.operands {
                emit(w, Reach::Tree);
            }
        }
        "clean" => {
            let o = Opts::parse(args, "e", &["exclude"]);
            if dry(&o) || !o.has(&["f", "--force"]) {
                return;
            }
            if o.operands.is_empty() {
                emit(&Word::plain("."), Reach::Tree);
            }
            for w in &o.operands {
                emit(w, Reach::Tree);
            }
        }
        // `git merge-file <current> <base> <other>` writes the merge into <current>.
        "merge-file" => {
            let o = Opts::parse(args, "L", &["marker-size", "diff-algorithm"]);
            if o.has(&["p", "--stdout", "--object-id"]) {
                return;
            }
            if let Some(w) = o.operands.first() {
                emit(w, Reach::File);
            }
        }
        "config" => {
            if let Some(w) = config_file(args) {
                push(out, i, &under_dirs(&call.dirs, &w), &via, Reach::File);
            }
        }
        _ => {}
    }
}

/// The file a `git config` call writes: `.git/config` of the repo (or `--file`'s, or
/// `config.worktree`), when it sets, unsets, renames or edits; `None` for a read, and for
/// `--global`/`--system`, which write outside the repo.
fn config_file(args: &[Word]) -> Option<Word> {
    let o = Opts::parse(
        args,
        "f",
        &["file", "blob", "type", "default", "comment", "value", "url"],
    );
    let verb = o.operands.first().map(|w| w.text.as_str());
    let sets = matches!(
        verb,
        Some("set" | "unset" | "edit" | "rename-section" | "remove-section")
    ) || o.has(&[
        "--unset",
        "--unset-all",
        "--add",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "e",
        "--edit",
    ]) || (!matches!(verb, Some("get" | "list"))
        && o.operands.len() >= 2
        && !o.has(&[
            "--get",
            "--get-all",
            "--get-regexp",
            "--get-urlmatch",
            "l",
            "--list",
        ]));
    if !sets || o.has(&["--global", "--system"]) {
        return None;
    }
    if let Some(f) = o.value(&["f", "--file"]) {
        return Some(Word::plain(f));
    }
    let name = if o.has(&["--worktree"]) {
        "config.worktree"
    } else {
        "config"
    };
    let mut w = Word::plain(format!("$CLAUDE_PROJECT_DIR/.git/{name}"));
    w.dynamic = true;
    Some(w)
}

/// PowerShell parameters that are switches (no value), by full name.
const PS_SWITCHES: &[&str] = &[
    "recurse",
    "force",
    "append",
    "nonewline",
    "whatif",
    "confirm",
    "noclobber",
    "passthru",
    "verbose",
    "container",
    "asbytestream",
    "debug",
];
/// PowerShell parameters that carry a path, by full name.
const PS_PATHS: &[&str] = &["path", "literalpath", "filepath", "pspath", "lp"];

struct PsArgs<'a> {
    /// Positional arguments; `a, b` arrays joined back into one word (`a,b`).
    positional: Vec<Word>,
    paths: Vec<&'a Word>,
    destination: Option<&'a Word>,
    new_name: Option<&'a Word>,
    recurse: bool,
}

/// A parameter name as written (`-Rec`, `-LiteralPath:x`) matched by prefix against `full`.
fn ps_is(param: &str, full: &str) -> bool {
    !param.is_empty() && full.starts_with(param)
}

fn ps_args(args: &[Word]) -> PsArgs<'_> {
    let mut a = PsArgs {
        positional: Vec::new(),
        paths: Vec::new(),
        destination: None,
        new_name: None,
        recurse: false,
    };
    let mut k = 0;
    while k < args.len() {
        let w = &args[k];
        let t = w.text.to_ascii_lowercase();
        let is_param = t.len() > 1
            && t.starts_with('-')
            && !w.quoted
            && t[1..].starts_with(|c: char| c.is_ascii_alphabetic());
        if !is_param {
            match a.positional.last_mut() {
                Some(prev) if prev.text.ends_with(',') || w.text.starts_with(',') => {
                    prev.text.push_str(&w.text);
                    prev.dynamic |= w.dynamic;
                    prev.glob |= w.glob;
                }
                _ => a.positional.push(w.clone()),
            }
            k += 1;
            continue;
        }
        let (name, inline) = match t[1..].split_once(':') {
            Some((n, _)) => (n.to_string(), true),
            None => (t[1..].to_string(), false),
        };
        if PS_SWITCHES.iter().any(|s| ps_is(&name, s)) && !PS_PATHS.iter().any(|s| ps_is(&name, s))
        {
            if ps_is(&name, "recurse") && name.len() >= 2 {
                a.recurse = true;
            }
            k += 1;
            continue;
        }
        let value = if inline {
            None
        } else {
            k += 1;
            args.get(k)
        };
        k += 1;
        let Some(v) = value else { continue };
        if PS_PATHS.iter().any(|s| ps_is(&name, s)) {
            a.paths.push(v);
        } else if ps_is(&name, "destination") {
            a.destination = Some(v);
        } else if ps_is(&name, "newname") {
            a.new_name = Some(v);
        }
    }
    a
}

/// `a,b` array arguments split into their elements.
fn ps_items<'a>(words: impl IntoIterator<Item = &'a Word>) -> Vec<Word> {
    let mut out = Vec::new();
    for w in words {
        for part in w.text.split(',') {
            let part = part.trim();
            if !part.is_empty() {
                out.push(Word {
                    text: part.to_string(),
                    ..w.clone()
                });
            }
        }
    }
    out
}

fn powershell(i: usize, name: &str, args: &[Word], out: &mut Vec<WriteTarget>) -> bool {
    let canonical = match name {
        "set-content" | "sc" => "Set-Content",
        "add-content" | "ac" => "Add-Content",
        "clear-content" | "clc" => "Clear-Content",
        "out-file" => "Out-File",
        "tee-object" | "tee" => "Tee-Object",
        "new-item" | "ni" | "mkdir" | "md" => "New-Item",
        "remove-item" | "ri" | "rm" | "rmdir" | "rd" | "del" | "erase" => "Remove-Item",
        "copy-item" | "cpi" | "cp" | "copy" => "Copy-Item",
        "move-item" | "mi" | "mv" | "move" => "Move-Item",
        "rename-item" | "rni" | "ren" => "Rename-Item",
        _ => return false,
    };
    let a = ps_args(args);
    let two = matches!(canonical, "Copy-Item" | "Move-Item");
    let mut positional = a.positional.iter();
    let mut paths = a.paths.clone();
    if paths.is_empty() {
        paths.extend(positional.next());
    }
    let dest = a
        .destination
        .or_else(|| if two { positional.next() } else { None });
    let paths = ps_items(paths);
    match canonical {
        "Copy-Item" | "Move-Item" => {
            let via = format!("{canonical} -Destination");
            let reach = if canonical == "Move-Item" || a.recurse {
                Reach::Tree
            } else {
                Reach::File
            };
            if let Some(d) = dest {
                push(out, i, d, &via, reach);
                for src in &paths {
                    if let Some(inside) = inside_dest(d, src) {
                        push(out, i, &inside, &via, reach);
                    }
                }
            }
            if canonical == "Move-Item" {
                for src in &paths {
                    push(out, i, src, canonical, Reach::Tree);
                }
            }
        }
        "Rename-Item" => {
            for src in &paths {
                push(out, i, src, canonical, Reach::Tree);
                if let Some(n) = a.new_name {
                    let dir = src.text.rfind(['/', '\\']).map_or("", |k| &src.text[..=k]);
                    let mut w = n.clone();
                    if !is_abs(&n.text) {
                        w.text = format!("{dir}{}", n.text);
                    }
                    w.dynamic |= src.dynamic;
                    push(out, i, &w, canonical, Reach::Tree);
                }
            }
        }
        "Remove-Item" => {
            let reach = if a.recurse { Reach::Tree } else { Reach::File };
            for p in &paths {
                push(out, i, p, canonical, reach);
            }
        }
        _ => {
            for p in &paths {
                push(out, i, p, canonical, Reach::File);
            }
        }
    }
    true
}

/// A cmd switch word: `/q`, `/S/Q`, `/a:h`.
pub(crate) fn cmd_switch(t: &str) -> bool {
    t.starts_with('/')
        && t[1..]
            .split('/')
            .all(|s| !s.is_empty() && (s.len() <= 2 || s.contains(':')))
}

fn cmd(i: usize, name: &str, args: &[Word], out: &mut Vec<WriteTarget>) -> bool {
    let (switches, operands): (Vec<&Word>, Vec<&Word>) =
        args.iter().partition(|w| cmd_switch(&w.text));
    let has = |c: char| {
        switches.iter().any(|w| {
            w.text[1..]
                .split('/')
                .any(|s| s.eq_ignore_ascii_case(&c.to_string()))
        })
    };
    match name {
        "del" | "erase" | "rd" | "rmdir" => {
            let reach = if has('s') { Reach::Tree } else { Reach::File };
            for w in operands {
                push(out, i, w, name, reach);
            }
        }
        "copy" | "xcopy" | "move" | "robocopy" => {
            let (dest, sources) = if name == "robocopy" {
                (
                    operands.get(1).copied(),
                    operands.first().copied().into_iter().collect(),
                )
            } else {
                match operands.split_last() {
                    Some((d, rest)) if !rest.is_empty() => (Some(*d), rest.to_vec()),
                    _ => (None, Vec::new()),
                }
            };
            let Some(dest) = dest else { return true };
            let reach = if name == "copy" {
                Reach::File
            } else {
                Reach::Tree
            };
            let via = format!("{name} destination");
            push(out, i, dest, &via, reach);
            for src in &sources {
                if let Some(inside) = inside_dest(dest, src) {
                    push(out, i, &inside, &via, reach);
                }
                if name == "move" {
                    push(out, i, src, "move source", Reach::Tree);
                }
            }
        }
        _ => return false,
    }
    true
}

#[cfg(test)]
#[path = "writes_tests.rs"]
mod tests;
