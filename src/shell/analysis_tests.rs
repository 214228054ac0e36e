use super::*;

fn argv_of(s: &Segment) -> String {
    s.argv
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The argv of every segment that runs something.
fn cmds(src: &str) -> Vec<String> {
    cmds_in(src, Dialect::Posix)
}

fn cmds_in(src: &str, d: Dialect) -> Vec<String> {
    analyze(src, d)
        .segments
        .iter()
        .filter(|s| !s.argv.is_empty())
        .map(argv_of)
        .collect()
}

fn find<'a>(a: &'a Analysis, argv: &str) -> &'a Segment {
    a.segments
        .iter()
        .find(|s| argv_of(s) == argv)
        .unwrap_or_else(|| panic!("no segment `{argv}` in {:#?}", a.segments))
}

#[test]
fn chains_become_segments() {
    assert_eq!(
        cmds("git checkout -b x && git reset --hard; npm test || echo no"),
        [
            "git checkout -b x",
            "git reset --hard",
            "npm test",
            "echo no"
        ]
    );
    assert_eq!(cmds("a\nb\n\nc"), ["a", "b", "c"]);
}

#[test]
fn reserved_words_are_not_commands() {
    assert_eq!(
        cmds("if git pull; then npm run build; else echo x; fi"),
        ["git pull", "npm run build", "echo x"]
    );
    assert_eq!(
        cmds("for f in $(git ls-files); do rm -rf \"$f\"; done"),
        ["git ls-files", "rm -rf $f"]
    );
    assert_eq!(cmds("while true; do git pull; done"), ["true", "git pull"]);
    assert_eq!(cmds("{ git stash; }"), ["git stash"]);
    assert_eq!(cmds("! git diff --quiet"), ["git diff --quiet"]);
    assert_eq!(cmds("(cd web && vite build)"), ["cd web", "vite build"]);
    assert_eq!(cmds("case $1 in b) vite build;; esac"), ["vite build"]);
}

#[test]
fn quoted_text_stays_one_word() {
    let a = analyze(
        r#"git commit -m "wrap vite build" && echo "rm -rf dist""#,
        Dialect::Posix,
    );
    assert_eq!(a.segments.len(), 2);
    assert_eq!(argv_of(&a.segments[0]), "git commit -m wrap vite build");
    assert_eq!(a.segments[0].argv[3].text, "wrap vite build");
    assert!(a.segments[0].argv[3].quoted);
}

#[test]
fn substitutions_are_segments() {
    let a = analyze(
        "echo $(git checkout main) `vite build` <(npm run dev)",
        Dialect::Posix,
    );
    assert_eq!(a.segments.len(), 4);
    assert_eq!(find(&a, "git checkout main").origin, Origin::Substitution);
    assert_eq!(find(&a, "vite build").origin, Origin::Substitution);
    assert_eq!(find(&a, "npm run dev").origin, Origin::ProcessSubstitution);
    assert_eq!(find(&a, "git checkout main").depth, 1);
    assert_eq!(cmds("x=$(git stash)"), ["git stash"]);
    assert_eq!(
        cmds("cat > f <<EOF\n$(git pull)\nEOF"),
        ["cat", "$(git pull)", "git pull"]
    );
}

#[test]
fn wrapper_scripts_are_sources() {
    let a = analyze(
        "sudo bash -lc 'cd web && npm run build' && eval 'git pull'",
        Dialect::Posix,
    );
    assert_eq!(cmds_of(&a), ["cd web", "npm run build", "git pull"]);
    let b = find(&a, "npm run build");
    assert_eq!(b.origin, Origin::Script);
    assert_eq!(b.via, "bash -c");
    assert_eq!(b.dirs, [DirStep::To("web".into())]);
    assert_eq!(a.sources.len(), 3);
    assert_eq!(a.sources[1].parent, Some(0));
    assert_eq!(
        cmds(r#"cmd /c "taskkill /im electron.exe /f & run.bat""#),
        ["taskkill /im electron.exe /f", "run.bat"]
    );
    assert_eq!(
        cmds(r#"powershell -Command "Stop-Process -Name electron; npm run build""#),
        ["Stop-Process -Name electron", "npm run build"]
    );
    assert_eq!(
        cmds(r#"bash -c "bash -c 'sh -c \"vite build\"'""#),
        ["vite build"]
    );
}

fn cmds_of(a: &Analysis) -> Vec<String> {
    a.segments
        .iter()
        .filter(|s| !s.argv.is_empty())
        .map(argv_of)
        .collect()
}

#[test]
fn heredoc_inert_when_read_by_cat() {
    let a = analyze(
        "cat > notes.md <<'EOF'\nnpm run build\ngit reset --hard\nEOF",
        Dialect::Posix,
    );
    assert_eq!(cmds_of(&a), ["cat"]);
    let h = &a.segments[0].heredocs[0];
    assert_eq!(h.kind, BodyKind::Inert);
    assert!(h.quoted && h.closed);
    assert_eq!(h.delimiter, "EOF");
    let a = analyze(
        "git commit -F - <<EOF\nvite build is wrapped\nEOF",
        Dialect::Posix,
    );
    assert_eq!(cmds_of(&a), ["git commit -F -"]);
}

#[test]
fn heredoc_scripts_are_analyzed() {
    assert_eq!(
        cmds("bash <<EOF\nnpm run build\nEOF"),
        ["bash", "npm run build"]
    );
    assert_eq!(cmds("sh -s <<'EOF'\ngit pull\nEOF"), ["sh -s", "git pull"]);
    assert_eq!(
        cmds("cat <<'EOF' | bash\ngit stash\nEOF"),
        ["cat", "bash", "git stash"]
    );
    assert_eq!(
        cmds("cat <<'EOF' | sudo sh\ngit stash\nEOF"),
        ["cat", "sh", "git stash"]
    );
    assert_eq!(
        cmds("cat <<EOF > x\nhello $(vite build)\nEOF"),
        ["cat", "hello $(vite build)", "vite build"]
    );
    assert_eq!(cmds("cat <<EOF\nrm -rf dist"), ["cat", "rm -rf dist"]);
    assert_eq!(cmds("bash <<< 'git pull'"), ["bash", "git pull"]);
    assert_eq!(cmds("grep x <<< 'git pull'"), ["grep x"]);
    assert_eq!(
        cmds("mystery <<'EOF'\ngit pull\nEOF"),
        ["mystery", "git pull"]
    );
    let a = analyze("bash <<EOF\nvite build\nEOF", Dialect::Posix);
    assert_eq!(find(&a, "vite build").origin, Origin::Heredoc);
}

#[test]
fn foreign_interpreters_are_not_lexed_as_shell_but_their_process_calls_are_read() {
    let a = analyze(
        "python3 - <<'EOF'\nimport os\nos.system('vite build')\nEOF",
        Dialect::Posix,
    );
    assert_eq!(cmds_of(&a), ["python3 -", "vite build"]);
    assert_eq!(find(&a, "vite build").via, "python -c");
    assert_eq!(a.segments[0].heredocs[0].kind, BodyKind::Foreign);
    assert_eq!(cmds("node <<'EOF'\nx\nEOF"), ["node"]);
}

#[test]
fn heredoc_operator_line_keeps_lexing() {
    assert_eq!(
        cmds("cat <<'EOF' > f && git checkout main\nbody\nEOF\nnpm test"),
        ["cat", "git checkout main", "npm test"]
    );
}

#[test]
fn pipes_link_stages() {
    let a = analyze("a | b |& c; d", Dialect::Posix);
    assert_eq!(a.segments[0].pipe_next, Some(1));
    assert_eq!(a.segments[1].pipe_prev, Some(0));
    assert_eq!(a.segments[2].pipe_prev, Some(1));
    assert_eq!(a.segments[3].pipe_prev, None);
    let a = analyze("a |\n  b", Dialect::Posix);
    assert_eq!(a.segments[1].pipe_prev, Some(0));
    let a = analyze("(a; b) | c", Dialect::Posix);
    assert_eq!(find(&a, "c").pipe_prev, Some(1));
}

#[test]
fn cd_steps_follow_scopes() {
    let a = analyze("cd web && rm -rf ../dist", Dialect::Posix);
    assert_eq!(find(&a, "rm -rf ../dist").dirs, [DirStep::To("web".into())]);
    let a = analyze("(cd web && x) && rm -rf dist", Dialect::Posix);
    assert_eq!(find(&a, "x").dirs, [DirStep::To("web".into())]);
    assert!(find(&a, "rm -rf dist").dirs.is_empty());
    let a = analyze("cd \"$X\"; rm -rf dist", Dialect::Posix);
    assert_eq!(
        find(&a, "rm -rf dist").dirs,
        [DirStep::Dynamic("$X".into())]
    );
    let a = analyze("cd -; rm -rf dist", Dialect::Posix);
    assert_eq!(find(&a, "rm -rf dist").dirs, [DirStep::Unknown]);
    let a = analyze("cd a; cd b; y", Dialect::Posix);
    assert_eq!(
        find(&a, "y").dirs,
        [DirStep::To("a".into()), DirStep::To("b".into())]
    );
    let a = analyze("cd web && echo $(rm -rf x)", Dialect::Posix);
    assert_eq!(find(&a, "rm -rf x").dirs, [DirStep::To("web".into())]);
    let a = analyze("Set-Location -Path web; Remove-Item x", Dialect::PowerShell);
    assert_eq!(find(&a, "Remove-Item x").dirs, [DirStep::To("web".into())]);
}

#[test]
fn docker_sandbox_marks_payload_only() {
    let a = analyze(
        "docker run --rm -v kazuo-linux:/p img sh -c 'npm run build:linux' && npm run build:win",
        Dialect::Posix,
    );
    assert!(find(&a, "npm run build:linux").sandboxed);
    assert!(!find(&a, "npm run build:win").sandboxed);
    let a = analyze("docker run -v .:/p img npm run build", Dialect::Posix);
    assert!(!find(&a, "npm run build").sandboxed);
    let a = analyze(
        "docker run -v vol:/p img echo $(npm run build)",
        Dialect::Posix,
    );
    assert!(!find(&a, "npm run build").sandboxed);
}

#[test]
fn xargs_input_from_echo_and_heredoc() {
    assert_eq!(
        cmds("echo dist | xargs rm -rf"),
        ["echo dist", "rm -rf dist"]
    );
    assert_eq!(
        cmds("printf 'dist\\n' | xargs rm -rf"),
        ["printf dist\\n", "rm -rf dist"]
    );
    assert_eq!(cmds("xargs rm -rf <<< 'dist'"), ["rm -rf dist"]);
    assert_eq!(
        cmds("echo a b | xargs -I{} git checkout {}"),
        ["echo a b", "git checkout a", "git checkout b"]
    );
    assert_eq!(cmds("ls | xargs rm -rf"), ["ls", "rm -rf <xargs input>"]);
}

#[test]
fn find_exec_is_derived() {
    let a = analyze(
        r"find . -name x -exec sh -c 'vite build' \;",
        Dialect::Posix,
    );
    assert_eq!(
        cmds_of(&a),
        [r"find . -name x -exec sh -c vite build ;", "vite build"]
    );
    assert_eq!(a.segments[1].origin, Origin::Derived);
}

#[test]
fn powershell_segments() {
    let ps = |s: &str| cmds_in(s, Dialect::PowerShell);
    assert_eq!(
        ps("Get-Process electron | Stop-Process; & .\\run.bat"),
        ["Get-Process electron", "Stop-Process", ".\\run.bat"]
    );
    assert_eq!(
        ps(
            "Invoke-RestMethod -Method Post -Body (ConvertTo-Json @{ id = 'ai-chat' }) http://x/plugins/toggle"
        ),
        [
            "Invoke-RestMethod -Method Post -Body (ConvertTo-Json @{ id = 'ai-chat' }) http://x/plugins/toggle",
            "ConvertTo-Json",
            "id = ai-chat"
        ]
    );
    assert_eq!(
        ps("Start-Process electron -ArgumentList '.'"),
        ["electron ."]
    );
}

#[test]
fn truncation_is_reported() {
    let big = "x".repeat(MAX_INPUT_BYTES + 10);
    let a = analyze(&big, Dialect::Posix);
    assert!(a.truncated);
    let a = analyze("ls", Dialect::Posix);
    assert!(!a.truncated);
    let many = "a;".repeat(segment::MAX_SEGMENTS + 5);
    let a = analyze(&many, Dialect::Posix);
    assert!(a.truncated);
    assert_eq!(a.segments.len(), segment::MAX_SEGMENTS);
}

#[test]
fn rendering() {
    let a = analyze("git commit -m 'a b'\nls", Dialect::Posix);
    assert_eq!(a.segments[0].render(), "git commit -m 'a b'");
    assert_eq!(a.segments[0].head(), "git");
}

#[test]
fn text_that_becomes_code_is_analyzed() {
    // The output is literal: the shell's own substitution is the command (issue 12).
    assert_eq!(cmds("$(echo git stash)"), ["git stash", "echo git stash"]);
    assert_eq!(
        cmds("$(echo git stash; true)"),
        [
            "$(echo git stash; true)",
            "echo git stash",
            "true",
            "git stash"
        ]
    );
    assert_eq!(
        cmds("echo $(echo git stash)"),
        ["echo git stash", "echo git stash"]
    );
    assert_eq!(
        cmds("bash -c \"$(cat <<'EOF'\nvite build\nEOF\n)\""),
        [
            "cat",
            "$(cat <<'EOF'\nvite build\nEOF\n)",
            "cat",
            "vite build"
        ]
    );
    assert_eq!(
        cmds("echo 'npm run build' | bash"),
        ["echo npm run build", "bash", "npm run build"]
    );
    assert_eq!(
        cmds("echo 'npm run build' | cat"),
        ["echo npm run build", "cat"]
    );
    let ps = |s: &str| cmds_in(s, Dialect::PowerShell);
    assert_eq!(ps("'git stash' | iex"), ["git stash", "git stash"]);
    assert_eq!(cmds("sudo -s <<'EOF'\ngit pull\nEOF"), ["sh", "git pull"]);
}

#[test]
fn cmd_conditions_guard_commands() {
    let cmd = |s: &str| cmds_in(s, Dialect::Cmd);
    assert_eq!(cmd("if exist dist rmdir /s /q dist"), ["rmdir /s /q dist"]);
    assert_eq!(cmd("IF /I NOT \"%A%\"==\"x\" npm start"), ["npm start"]);
    assert_eq!(cmd("if %E% EQU 1 run.bat"), ["run.bat"]);
    assert_eq!(
        cmd("if exist dist (rmdir /s /q dist) else (echo none)"),
        ["rmdir /s /q dist", "echo none"]
    );
    assert_eq!(cmd("if"), Vec::<String>::new());
}

#[test]
fn functions_run_where_they_are_called_with_their_arguments() {
    // Defined and never called: nothing runs.
    assert!(cmds("f() { git reset --hard; }").is_empty());
    assert!(cmds("function f { git stash; }").is_empty());
    // Called: the body, with `$1`, `"$@"` and `shift` read from the call.
    assert_eq!(
        cmds("f() { git reset --hard \"$1\"; }; f HEAD~1"),
        ["f HEAD~1", "git reset --hard HEAD~1"]
    );
    assert_eq!(
        cmds("f() { \"$@\"; }; f git add -A"),
        ["f git add -A", "git add -A"]
    );
    assert_eq!(
        cmds("f() { shift; \"$@\"; }; f x git stash"),
        ["f x git stash", "shift", "git stash"]
    );
    // Called twice: built twice, each with its own arguments.
    assert_eq!(
        cmds("g() { git \"$1\"; }\ng status\ng stash"),
        ["g status", "git status", "g stash", "git stash"]
    );
    // An argument the text does not tell stays an expansion.
    let a = analyze("f() { rm -rf \"$1\"; }; f \"$X\"", Dialect::Posix);
    let rm = a
        .segments
        .iter()
        .find(|s| s.head() == "rm")
        .expect("rm built");
    assert!(rm.argv[2].dynamic, "{:?}", rm.argv);
    let f = find(&a, "rm -rf $X");
    assert_eq!(f.origin, Origin::Function);
    assert!(
        f.mechanism().contains("positional parameters"),
        "{}",
        f.mechanism()
    );
}

#[test]
fn function_calls_are_bounded() {
    // A function calling itself stops at the nesting bound and says so.
    let a = analyze("f() { f; git status; }; f", Dialect::Posix);
    assert!(a.truncated);
    assert!(a.segments.len() < 200, "{}", a.segments.len());
}

#[test]
fn shell_scripts_and_set_take_positional_parameters() {
    assert_eq!(cmds("sh -c 'git \"$@\"' sh add -A"), ["git add -A"]);
    assert_eq!(cmds("bash -c 'rm -rf \"$1\"' x dist"), ["rm -rf dist"]);
    assert_eq!(
        cmds("set -- git add -A; \"$@\""),
        ["set -- git add -A", "git add -A"]
    );
    // `set -e` sets options, not parameters: `$1` stays the caller's.
    let a = analyze("set -e; rm -rf \"$1\"", Dialect::Posix);
    assert!(find(&a, "rm -rf $1").argv[2].dynamic);
}

#[test]
fn generated_scripts_are_read() {
    // A process substitution run by a shell, or fed as its stdin.
    assert!(cmds("source <(echo git add -A)").contains(&"git add -A".to_string()));
    assert!(cmds("bash < <(echo git reset --hard)").contains(&"git reset --hard".to_string()));
    // A script written and run in the same command.
    assert!(
        cmds("cat > x.sh <<'EOF'\ngit add -A\nEOF\nbash x.sh").contains(&"git add -A".to_string())
    );
    assert!(cmds("echo 'git stash' > t.sh && sh ./t.sh").contains(&"git stash".to_string()));
    // Written but never run: only data.
    assert!(!cmds("echo 'git stash' > t.sh").contains(&"git stash".to_string()));
    // `trap` runs its action later in the same shell; `trap - EXIT` runs nothing.
    assert!(cmds("trap 'git stash' EXIT").contains(&"git stash".to_string()));
    assert!(cmds("trap - EXIT").is_empty());
}

#[test]
fn braces_ifs_and_arrays_expand_as_the_shell_does() {
    assert_eq!(cmds("{git,stash}"), ["git stash"]);
    assert_eq!(cmds("rm -rf d{1..3}"), ["rm -rf d1 d2 d3"]);
    // Quoted braces, a lone group brace and an assignment stay.
    assert_eq!(cmds("echo '{a,b}'"), ["echo {a,b}"]);
    assert_eq!(cmds("{ git status; }"), ["git status"]);
    let a = analyze("{git,stash}", Dialect::Posix);
    assert!(a.segments[0].mechanism().contains("brace expansion"));
    // `$IFS` the command sets splits unquoted values; one it cannot tell leaves them unknown.
    assert_eq!(cmds("IFS=,; c='git,add,-A'; $c"), ["git add -A"]);
    assert_eq!(cmds("IFS=,; c='a,b'; echo \"$c\""), ["echo a,b"]);
    assert_eq!(cmds("IFS=$X; c='git add -A'; $c"), ["$c"]);
    // Arrays: every element, one element, their count; an unknown element keeps it unknown.
    assert_eq!(
        cmds("a=(git reset --hard); \"${a[@]}\""),
        ["git reset --hard"]
    );
    assert_eq!(
        cmds("a=(x dist); rm -rf \"${a[1]}\" ${#a[@]}"),
        ["rm -rf dist 2"]
    );
    assert_eq!(cmds("a=($X); \"${a[@]}\""), ["${a[@]}"]);
}
