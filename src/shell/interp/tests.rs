use super::*;

fn fx(lang: Lang, program: &str) -> (Vec<String>, Vec<String>) {
    let e = effects(lang, program);
    let cmds = e
        .commands
        .iter()
        .map(|c| {
            c.iter()
                .map(|w| w.text.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    (e.scripts, cmds)
}

fn scripts(lang: Lang, program: &str) -> Vec<String> {
    fx(lang, program).0
}

fn cmds(lang: Lang, program: &str) -> Vec<String> {
    fx(lang, program).1
}

fn ws(s: &str) -> Vec<Word> {
    s.split(' ').map(Word::plain).collect()
}

#[test]
fn inline_programs_by_interpreter() {
    let code = |argv: &[Word]| inline_program(argv).map(|(_, c)| c);
    let mut a = ws("python3 -c X");
    a[2].text = "import os".into();
    assert_eq!(code(&a).as_deref(), Some("import os"));
    assert_eq!(code(&ws("python -Ic pass")).as_deref(), Some("pass"));
    assert_eq!(code(&ws("python -m http.server -c x")), None);
    assert_eq!(code(&ws("python script.py -c x")), None);
    assert_eq!(code(&ws("node -e 1")).as_deref(), Some("1"));
    assert_eq!(code(&ws("node --eval=2")).as_deref(), Some("2"));
    assert_eq!(
        code(&ws("node -r dotenv/config -p 3")).as_deref(),
        Some("3")
    );
    assert_eq!(code(&ws("node app.js -e 1")), None);
    assert_eq!(code(&ws("deno eval -p 4")).as_deref(), Some("4"));
    assert_eq!(code(&ws("bun -e 5")).as_deref(), Some("5"));
    assert_eq!(code(&ws("perl -lne 6")).as_deref(), Some("6"));
    assert_eq!(code(&ws("perl -e a -e b")).as_deref(), Some("a\nb"));
    assert_eq!(code(&ws("perl -MFile::Path -e 7")).as_deref(), Some("7"));
    assert_eq!(code(&ws("ruby -rfileutils -e 8")).as_deref(), Some("8"));
    assert_eq!(code(&ws("php -r 9")).as_deref(), Some("9"));
    assert_eq!(code(&ws("awk -F: 10 file")).as_deref(), Some("10"));
    assert_eq!(code(&ws("awk -f prog.awk file")), None);
    assert_eq!(code(&ws("gawk -e 11 file")).as_deref(), Some("11"));
    assert_eq!(code(&ws("python3")), None);
    assert_eq!(code(&ws("ls -c x")), None);
    assert_eq!(code(&ws("python -c")), None);
}

#[test]
fn python_process_and_file_calls() {
    let py = Lang::Python;
    assert_eq!(
        scripts(py, "import os; os.system('rm -rf dist')"),
        ["rm -rf dist"]
    );
    assert_eq!(
        scripts(
            py,
            "import subprocess\nsubprocess.run(\"git reset --hard\", shell=True)"
        ),
        ["git reset --hard"]
    );
    assert_eq!(
        cmds(
            py,
            "import subprocess; subprocess.check_call(['npm', 'run', 'build'])"
        ),
        ["npm run build"]
    );
    assert_eq!(
        cmds(
            py,
            "from subprocess import run; run(['git','checkout','main'])"
        ),
        ["git checkout main"]
    );
    assert_eq!(
        cmds(py, "os.execvp('git', ['git', 'stash'])"),
        ["git stash"]
    );
    assert_eq!(
        cmds(py, "os.spawnlp(os.P_WAIT, 'rm', 'rm', '-rf', 'dist')"),
        ["rm -rf dist"]
    );
    assert_eq!(
        cmds(py, "import shutil; shutil.rmtree('dist')"),
        ["rm -rf -- dist"]
    );
    assert_eq!(
        cmds(py, "os.remove(r'src\\api\\x.ts')"),
        ["rm -f -- src\\api\\x.ts"]
    );
    assert_eq!(cmds(py, "os.rename('a', 'b')"), ["mv -- a b"]);
    assert_eq!(cmds(py, "shutil.copytree('a', \"b\")"), ["cp -r -- a b"]);
    assert_eq!(
        cmds(py, "open('src/x.ts', 'w').write('')"),
        ["tee -- src/x.ts"]
    );
    assert_eq!(cmds(py, "open('src/x.ts', mode='a')"), ["tee -- src/x.ts"]);
    assert_eq!(
        cmds(
            py,
            "from pathlib import Path; Path('src/x.ts').write_text('x')"
        ),
        ["tee -- src/x.ts"]
    );
    assert_eq!(
        cmds(py, "pathlib.Path('dist/a.js').unlink()"),
        ["rm -f -- dist/a.js"]
    );
    // Reads, prints and strings built at run time are nothing.
    for p in [
        "print('rm -rf dist')",
        "open('src/x.ts').read()",
        "open('src/x.ts', 'r')",
        "os.system(f'rm -rf {d}')",
        "os.system('rm -rf ' + d)",
        "shutil.rmtree(os.path.join(root, 'dist'))",
        "subprocess.run(['rm', '-rf', d])",
        "# os.system('rm -rf dist')",
        "x.run('rm -rf dist')",
        "asyncio.run(main())",
        "'''os.system(\"rm -rf dist\")'''",
    ] {
        assert_eq!(fx(py, p), (Vec::new(), Vec::new()), "{p}");
    }
}

#[test]
fn javascript_process_and_file_calls() {
    let js = Lang::Js;
    assert_eq!(
        scripts(
            js,
            "require('child_process').execSync('git reset --hard', {stdio: 'inherit'})"
        ),
        ["git reset --hard"]
    );
    assert_eq!(
        cmds(
            js,
            "const {spawnSync} = require('child_process'); spawnSync('npm', ['run', 'build'])"
        ),
        ["npm run build"]
    );
    assert_eq!(
        scripts(js, "cp.spawn('rm', ['-rf', 'dist'], {shell: true})"),
        ["rm -rf dist"]
    );
    assert_eq!(
        cmds(js, "Bun.spawnSync(['git', 'clean', '-fdx'])"),
        ["git clean -fdx"]
    );
    assert_eq!(scripts(js, "await Bun.$`rm -rf dist`"), ["rm -rf dist"]);
    assert_eq!(
        cmds(
            js,
            "new Deno.Command('git', {args: ['checkout', 'main']}).outputSync()"
        ),
        ["git checkout main"]
    );
    assert_eq!(
        cmds(js, "fs.rmSync('dist', { recursive: true, force: true })"),
        ["rm -rf -- dist"]
    );
    assert_eq!(
        cmds(js, "require('fs').unlinkSync(\"src/x.ts\")"),
        ["rm -f -- src/x.ts"]
    );
    assert_eq!(cmds(js, "fs.rmdirSync('dist')"), ["rmdir -- dist"]);
    assert_eq!(
        cmds(js, "fs.writeFileSync('src/x.ts', 'x')"),
        ["tee -- src/x.ts"]
    );
    assert_eq!(
        cmds(js, "require('rimraf').sync('dist')"),
        ["rm -rf -- dist"]
    );
    assert_eq!(
        cmds(
            js,
            "fetch('http://127.0.0.1:3210/app/relaunch', {method: 'POST'})"
        ),
        ["curl http://127.0.0.1:3210/app/relaunch -d POST"]
    );
    for p in [
        "console.log('rm -rf dist')",
        "fs.readFileSync('src/x.ts', 'utf8')",
        "execSync(`rm -rf ${dir}`)",
        "// execSync('rm -rf dist')",
        "/* fs.rmSync('dist', {recursive: true}) */",
        "fs.rmSync(path.join(__dirname, 'dist'), {recursive: true})",
        "spawn('rm', ['-rf', dir])",
        "new Command('build')",
    ] {
        assert_eq!(fx(js, p), (Vec::new(), Vec::new()), "{p}");
    }
}

#[test]
fn perl_ruby_php_awk_calls() {
    assert_eq!(
        scripts(Lang::Perl, "system('git reset --hard')"),
        ["git reset --hard"]
    );
    assert_eq!(
        scripts(Lang::Perl, "system \"rm -rf dist\";"),
        ["rm -rf dist"]
    );
    assert_eq!(
        cmds(Lang::Perl, "system('rm', '-rf', 'dist')"),
        ["rm -rf dist"]
    );
    assert_eq!(cmds(Lang::Perl, "system(qw(git stash))"), ["git stash"]);
    assert_eq!(
        scripts(Lang::Perl, "my $x = `git checkout main`;"),
        ["git checkout main"]
    );
    assert_eq!(
        scripts(Lang::Perl, "print qx{rm -rf dist}"),
        ["rm -rf dist"]
    );
    assert_eq!(
        cmds(Lang::Perl, "use File::Path; rmtree('dist')"),
        ["rm -rf -- dist"]
    );
    assert_eq!(
        cmds(Lang::Perl, "File::Path::remove_tree(\"dist\")"),
        ["rm -rf -- dist"]
    );
    assert_eq!(
        cmds(Lang::Perl, "unlink 'a.ts', 'b.ts';"),
        ["rm -f -- a.ts b.ts"]
    );
    assert_eq!(
        cmds(Lang::Perl, "open(my $fh, '>', 'src/x.ts')"),
        ["tee -- src/x.ts"]
    );
    assert_eq!(
        cmds(Lang::Perl, "open(F, '>>src/x.ts')"),
        ["tee -- src/x.ts"]
    );
    assert_eq!(
        cmds(Lang::Perl, "open(F, '<', 'src/x.ts')"),
        Vec::<String>::new()
    );
    assert_eq!(
        scripts(Lang::Perl, "system(\"rm -rf $dir\")"),
        Vec::<String>::new()
    );
    assert_eq!(
        scripts(Lang::Perl, "print 'rm -rf dist'"),
        Vec::<String>::new()
    );

    assert_eq!(
        scripts(Lang::Ruby, "system('git reset --hard')"),
        ["git reset --hard"]
    );
    assert_eq!(scripts(Lang::Ruby, "puts `git stash`"), ["git stash"]);
    assert_eq!(scripts(Lang::Ruby, "%x(rm -rf dist)"), ["rm -rf dist"]);
    assert_eq!(
        cmds(Lang::Ruby, "system('npm', 'run', 'build')"),
        ["npm run build"]
    );
    assert_eq!(
        cmds(Lang::Ruby, "require 'fileutils'; FileUtils.rm_rf 'dist'"),
        ["rm -rf -- dist"]
    );
    assert_eq!(
        cmds(Lang::Ruby, "FileUtils.rm_rf(%w[dist dist-electron])"),
        ["rm -rf -- dist dist-electron"]
    );
    assert_eq!(
        cmds(Lang::Ruby, "File.write('src/x.ts', 'x')"),
        ["tee -- src/x.ts"]
    );
    assert_eq!(
        scripts(Lang::Ruby, "system(\"rm -rf #{d}\")"),
        Vec::<String>::new()
    );

    assert_eq!(
        scripts(Lang::Php, "shell_exec('git reset --hard');"),
        ["git reset --hard"]
    );
    assert_eq!(
        cmds(Lang::Php, "file_put_contents('src/x.ts', '');"),
        ["tee -- src/x.ts"]
    );

    assert_eq!(
        scripts(Lang::Awk, "BEGIN { system(\"rm -rf dist\") }"),
        ["rm -rf dist"]
    );
    assert_eq!(
        scripts(Lang::Awk, "BEGIN { \"git stash\" | getline x }"),
        ["git stash"]
    );
    assert_eq!(
        cmds(Lang::Awk, "{ print > \"src/x.ts\" }"),
        ["tee -- src/x.ts"]
    );
    assert_eq!(fx(Lang::Awk, "{ print $1 }"), (Vec::new(), Vec::new()));
    assert_eq!(
        fx(Lang::Awk, "BEGIN { print \"rm -rf dist\" }"),
        (Vec::new(), Vec::new())
    );
}

#[test]
fn bounded_and_never_panics() {
    let long = "os.system('x');".repeat(10_000);
    let e = effects(Lang::Python, &long);
    assert!(e.scripts.len() + e.commands.len() <= MAX_EFFECTS);
    for lang in [
        Lang::Python,
        Lang::Js,
        Lang::Perl,
        Lang::Ruby,
        Lang::Php,
        Lang::Awk,
    ] {
        for p in [
            "",
            "'",
            "\"",
            "`",
            "(",
            ")",
            "[",
            "system(",
            "system('",
            "q(",
            "%x(",
            "%",
            "r'''",
            "\\",
            "os.system(\"\\",
            "é'ü",
            "Path(",
            "Path('x').",
            "open(F, '>",
            "$`",
        ] {
            let _ = effects(lang, p);
        }
    }
}

#[test]
fn module_aliases_and_renamed_imports_are_followed() {
    let py = Lang::Python;
    assert_eq!(
        cmds(py, "import subprocess as sp\nsp.run(['git', 'add', '-A'])"),
        ["git add -A"]
    );
    assert_eq!(
        scripts(
            py,
            "from os import system as s, popen\ns('git stash')\npopen('ls')"
        ),
        ["git stash", "ls"]
    );
    assert_eq!(
        scripts(py, "__import__('os').system('git stash')"),
        ["git stash"]
    );
    assert_eq!(
        scripts(py, "importlib.import_module('os').system('x')"),
        ["x"]
    );
    assert_eq!(
        cmds(py, "import shutil as sh; sh.rmtree('dist')"),
        ["rm -rf -- dist"]
    );
    // A name that is no alias of a process module stays what it was.
    assert!(scripts(py, "import json as sp\nsp.run('git stash')").is_empty());
    let js = Lang::Js;
    assert_eq!(
        scripts(
            js,
            "const { execSync: run, spawn } = require('child_process'); run('git add -A')"
        ),
        ["git add -A"]
    );
    assert_eq!(
        scripts(
            js,
            "import { execSync as x } from 'node:child_process'; x('git stash')"
        ),
        ["git stash"]
    );
    assert_eq!(
        cmds(
            js,
            "const f = require('fs'); f.rmSync('dist', { recursive: true })"
        ),
        ["rm -rf -- dist"]
    );
    assert_eq!(
        cmds(
            js,
            "import * as fsx from 'fs'; fsx.rmSync('dist', { recursive: true })"
        ),
        ["rm -rf -- dist"]
    );
}
