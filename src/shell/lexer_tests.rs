use super::*;

/// Render a token list compactly: words as `text` with flag marks, operators by name.
fn show(toks: &[Tok], arena: &Arena) -> String {
    let mut out = Vec::new();
    for t in toks {
        match t {
            Tok::Word(w) => {
                let mut s = format!("<{}>", w.text);
                if w.quoted {
                    s.push('q');
                }
                if w.dynamic {
                    s.push('$');
                }
                if w.glob {
                    s.push('*');
                }
                if w.backslashed {
                    s.push('\\');
                }
                for ix in w.subs.iter() {
                    let sub = &arena.subs[ix as usize];
                    s.push_str(&format!("{{{}}}", show(&sub.toks, arena)));
                }
                out.push(s);
            }
            Tok::Op(op) => out.push(format!("{op:?}")),
            Tok::Redir(r, h) => {
                let fd = r.fd.map(|f| f.to_string()).unwrap_or_default();
                let target = r.target.as_ref().map(|w| w.text.as_str()).unwrap_or("-");
                let mut s = format!("R[{fd}{}{target}]", r.op);
                if let Some(h) = h {
                    s.push_str(&format!(
                        "H[{:?}{}{}]",
                        h.body,
                        if h.quoted { " quoted" } else { "" },
                        if h.closed { "" } else { " open" }
                    ));
                }
                out.push(s);
            }
        }
    }
    out.join(" ")
}

fn lx(src: &str) -> String {
    lx_in(src, Dialect::Posix)
}

fn lx_in(src: &str, d: Dialect) -> String {
    let mut arena = Arena::new(1 << 20);
    let toks = lex(src, d, 0, &mut arena);
    show(&toks, &arena)
}

#[test]
fn words_and_blanks() {
    assert_eq!(lx("git  status\t-s"), "<git> <status> <-s>");
    assert_eq!(lx(""), "");
    assert_eq!(lx("   "), "");
}

#[test]
fn single_and_double_quotes() {
    assert_eq!(
        lx(r#"git commit -m "wrap vite build""#),
        "<git> <commit> <-m> <wrap vite build>q"
    );
    assert_eq!(lx("echo 'a \"b\" $x'"), "<echo> <a \"b\" $x>q");
    assert_eq!(lx(r#"echo "a\"b\\c\$d\e""#), r#"<echo> <a"b\c$d\e>q"#);
    assert_eq!(lx(r#"echo ab"cd"'ef'"#), "<echo> <abcdef>q");
    assert_eq!(lx("echo ''"), "<echo> <>q");
}

#[test]
fn ansi_c_and_locale_quotes() {
    assert_eq!(lx(r"echo $'a\tb\n'"), "<echo> <a\tb\n>q");
    assert_eq!(lx(r"echo $'\x41\101\u00e9\''"), "<echo> <AAé'>q");
    assert_eq!(lx(r"echo $'\cA'"), "<echo> <\u{1}>q");
    assert_eq!(lx(r#"echo $"hi""#), "<echo> <hi>q");
    assert_eq!(lx(r"echo $'\z'"), r"<echo> <\z>q");
}

#[test]
fn backslash_escapes_and_continuation() {
    assert_eq!(lx(r"\rm -rf x"), r"<rm>q\ <-rf> <x>");
    assert_eq!(lx(r"echo a\ b"), "<echo> <a b>q");
    assert_eq!(lx("npm run \\\nbuild"), "<npm> <run> <build>");
    assert_eq!(lx("npm ru\\\nn build"), "<npm> <run> <build>");
    assert_eq!(lx("echo \"a\\\nb\""), "<echo> <ab>q");
    assert_eq!(lx("echo x\\"), "<echo> <x\\>");
}

#[test]
fn comments_only_at_word_start() {
    assert_eq!(lx("echo a#b # comment\nls"), "<echo> <a#b> Newline <ls>");
    assert_eq!(lx("# whole line\nls"), "Newline <ls>");
    assert_eq!(lx("echo '#x'"), "<echo> <#x>q");
}

#[test]
fn operators() {
    assert_eq!(
        lx("a; b & c && d || e | f |& g\nh"),
        "<a> Seq <b> Background <c> And <d> Or <e> Pipe <f> PipeAll <g> Newline <h>"
    );
    assert_eq!(lx("(a)"), "Open <a> Close");
    assert_eq!(lx("{ a; }"), "<{>* <a> Seq <}>");
    assert_eq!(lx("a&&b"), "<a> And <b>");
}

#[test]
fn redirections() {
    assert_eq!(lx("a > out 2>&1"), "<a> R[>out] R[2>&1]");
    assert_eq!(lx("a >>log <in"), "<a> R[>>log] R[<in]");
    assert_eq!(lx("a &> all"), "<a> R[&>all]");
    assert_eq!(lx("a &>> all"), "<a> R[&>>all]");
    assert_eq!(lx("a 2>/dev/null"), "<a> R[2>/dev/null]");
    assert_eq!(lx("a>b"), "<a> R[>b]");
    assert_eq!(lx("a >| f <> g"), "<a> R[>|f] R[<>g]");
    assert_eq!(lx("echo 2 > x"), "<echo> <2> R[>x]");
    assert_eq!(lx("a >"), "<a> R[>-]");
}

#[test]
fn heredocs() {
    assert_eq!(
        lx("cat <<EOF > f\nrm -rf dist\nEOF\nls"),
        r#"<cat> R[<<EOF]H["rm -rf dist\n"] R[>f] Newline <ls>"#
    );
    assert_eq!(
        lx("cat <<'EOF'\n$(x)\nEOF"),
        r#"<cat> R[<<EOF]H["$(x)\n" quoted] Newline"#
    );
    assert_eq!(
        lx("cat <<-\"E\"\n\tone\n\t\tE2\n\tE\n"),
        r#"<cat> R[<<-E]H["one\nE2\n" quoted] Newline"#
    );
    assert_eq!(
        lx("cat <<A <<B\na\nA\nb\nB\necho"),
        r#"<cat> R[<<A]H["a\n"] R[<<B]H["b\n"] Newline <echo>"#
    );
    assert_eq!(
        lx("cat <<EOF | bash\nnpm run build\nEOF"),
        r#"<cat> R[<<EOF]H["npm run build\n"] Pipe <bash> Newline"#
    );
    assert_eq!(
        lx("bash <<< 'rm -rf x'"),
        r#"<bash> R[<<<rm -rf x]H["rm -rf x" quoted]"#
    );
    assert_eq!(
        lx("cat <<EOF\nunclosed"),
        r#"<cat> R[<<EOF]H["unclosed" open] Newline"#
    );
    assert_eq!(lx("cat <<EOF"), r#"<cat> R[<<EOF]H["" open]"#);
    assert_eq!(
        lx("cat <<EOF\r\nbody\r\nEOF\r\n"),
        "<cat> R[<<EOF]H[\"body\\r\\n\"] Newline"
    );
}

#[test]
fn substitutions_are_nested_sources() {
    assert_eq!(
        lx("echo $(git checkout main) `npm run build`"),
        "<echo> <$(git checkout main)>${<git> <checkout> <main>} <`npm run build`>${<npm> <run> <build>}"
    );
    assert_eq!(
        lx("diff <(ls a) >(tee x)"),
        "<diff> <<(ls a)>${<ls> <a>} <>(tee x)>${<tee> <x>}"
    );
    assert_eq!(
        lx(r#"echo "in $(rm -rf dist) quotes""#),
        "<echo> <in $(rm -rf dist) quotes>q${<rm> <-rf> <dist>}"
    );
    assert_eq!(
        lx("echo $(echo $(vite build))"),
        "<echo> <$(echo $(vite build))>${<echo> <$(vite build)>${<vite> <build>}}"
    );
    assert_eq!(lx("echo $((1 + (2*3)))"), "<echo> <$((1 + (2*3)))>$");
    assert_eq!(
        lx("echo ${x:-$(git pull)}"),
        "<echo> <${x:-$(git pull)}>${<git> <pull>}"
    );
    assert_eq!(
        lx("a=(x $(git stash) y)"),
        "<a=(x $(git stash) y)>{<x> <$(git stash)>${<git> <stash>} <y>}"
    );
    assert_eq!(
        lx("echo $HOME ${x} $1 $?"),
        "<echo> <$HOME>$ <${x}>$ <$1>$ <$?>$"
    );
    assert_eq!(
        lx("echo `echo \\`ls\\``"),
        "<echo> <`echo \\`ls\\``>${<echo> <`ls`>${<ls>}}"
    );
    assert_eq!(lx("echo ~/x a~b"), "<echo> <~/x>$ <a~b>");
}

#[test]
fn heredoc_inside_substitution() {
    assert_eq!(
        lx("x=$(cat <<'EOF'\nbody\nEOF\n)"),
        r#"<x=$(cat <<'EOF'
body
EOF
)>${<cat> R[<<EOF]H["body\n" quoted] Newline}"#
    );
}

#[test]
fn case_statements() {
    assert_eq!(
        lx("case $x in build|dev) npm run build;; *) echo no;; esac; ls"),
        "<case> <$x>$ Seq Seq <npm> <run> <build> Seq Seq <echo> <no> Seq Seq Seq <ls>"
    );
    assert_eq!(
        lx("echo $(case a in a) git pull;; esac)"),
        "<echo> <$(case a in a) git pull;; esac)>${<case> <a> Seq Seq <git> <pull> Seq Seq}"
    );
}

#[test]
fn globs_and_dynamic_marks() {
    assert_eq!(
        lx("rm -rf di* {a,b} 'x*'"),
        "<rm> <-rf> <di*>* <{a,b}>* <x*>q"
    );
}

#[test]
fn unclosed_constructs_lex_what_is_there() {
    assert_eq!(lx("echo 'abc"), "<echo> <abc>q");
    assert_eq!(lx("echo \"abc"), "<echo> <abc>q");
    assert_eq!(lx("echo $(git pull"), "<echo> <$(git pull>${<git> <pull>}");
    assert_eq!(lx("echo `ls"), "<echo> <`ls>${<ls>}");
    assert_eq!(lx("echo ${x"), "<echo> <${x>$");
    assert_eq!(lx("echo $'ab"), "<echo> <ab>q");
    assert_eq!(lx("a )"), "<a> Close");
}

#[test]
fn depth_limit_skips_without_failing() {
    let deep = "$(".repeat(100) + "ls" + &")".repeat(100);
    let mut arena = Arena::new(1 << 20);
    let toks = lex(
        &format!("echo {deep}; git pull"),
        Dialect::Posix,
        0,
        &mut arena,
    );
    assert!(arena.truncated);
    let text = show(&toks, &arena);
    assert!(text.ends_with("Seq <git> <pull>"), "{text}");
}

#[test]
fn powershell_quoting() {
    let ps = |s: &str| lx_in(s, Dialect::PowerShell);
    assert_eq!(
        ps("Remove-Item 'it''s' \"a`\"b\""),
        "<Remove-Item> <it's>q <a\"b>q"
    );
    assert_eq!(ps("Write-Host \"x`ty\""), "<Write-Host> <x\ty>q");
    assert_eq!(
        ps("Write-Host \"say \"\"hi\"\"\""),
        "<Write-Host> <say \"hi\">q"
    );
    assert_eq!(
        ps(r"Remove-Item C:\app\dist -Recurse"),
        r"<Remove-Item> <C:\app\dist> <-Recurse>"
    );
    assert_eq!(
        ps("a; b | c && d || e & f"),
        "<a> Seq <b> Pipe <c> And <d> Or <e> Background <f>"
    );
    assert_eq!(ps("npm run `\nbuild"), "<npm> <run> <build>");
    assert_eq!(ps("a # c\nb <# block\n #> c"), "<a> Newline <b> <c>");
    assert_eq!(ps("$env:FOO = 1"), "<$env:FOO>$ <=> <1>");
}

#[test]
fn powershell_nested_commands() {
    let ps = |s: &str| lx_in(s, Dialect::PowerShell);
    assert_eq!(
        ps("Write-Output $(Stop-Process -Name electron)"),
        "<Write-Output> <$(Stop-Process -Name electron)>${<Stop-Process> <-Name> <electron>}"
    );
    assert_eq!(
        ps("irm -Body (ConvertTo-Json @{id='ai-chat'})"),
        "<irm> <-Body> <(ConvertTo-Json @{id='ai-chat'})>${<ConvertTo-Json> BlockOpen <id=ai-chat>q BlockClose}"
    );
    assert_eq!(
        ps("(Get-Process electron)"),
        "Open <Get-Process> <electron> Close"
    );
    assert_eq!(
        ps("Invoke-Command { npm run build }"),
        "<Invoke-Command> BlockOpen <npm> <run> <build> BlockClose"
    );
    assert_eq!(ps("a > out 2>&1 *> all"), "<a> R[>out] R[2>&1] R[>all]");
    assert_eq!(
        ps("$s = @'\nrm -rf dist\n'@\nls"),
        "<$s>$ <=> <rm -rf dist>q Newline <ls>"
    );
    assert_eq!(
        ps("$s = @\"\nx $(git pull) y\n\"@"),
        "<$s>$ <=> <x $(git pull) y>q${<git> <pull>}"
    );
}

#[test]
fn cmd_dialect() {
    let cmd = |s: &str| lx_in(s, Dialect::Cmd);
    assert_eq!(
        cmd("taskkill /im electron.exe /f & run.bat"),
        "<taskkill> </im> <electron.exe> </f> Seq <run.bat>"
    );
    assert_eq!(cmd("echo a^&b"), "<echo> <a&b>q");
    assert_eq!(
        cmd("rmdir /s /q \"C:\\my dir\\dist\""),
        "<rmdir> </s> </q> <C:\\my dir\\dist>q"
    );
    assert_eq!(cmd("echo %PATH% 'x y'"), "<echo> <%PATH%>$ <'x> <y'>");
    assert_eq!(cmd("a && b || c | d"), "<a> And <b> Or <c> Pipe <d>");
    assert_eq!(
        cmd("if exist dist (rmdir /s /q dist)"),
        "<if> <exist> <dist> Open <rmdir> </s> </q> <dist> Close"
    );
}

#[test]
fn budget_is_charged() {
    let mut arena = Arena::new(4);
    let toks = lex("echo hello", Dialect::Posix, 0, &mut arena);
    assert!(toks.is_empty());
    assert!(arena.truncated);
}
