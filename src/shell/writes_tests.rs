use super::*;
use crate::shell::{Dialect, analyze};

/// `(via, path, tree)` of every target of `cmd`.
fn t(cmd: &str) -> Vec<(String, String, bool)> {
    t_in(cmd, Dialect::Posix)
}

fn t_in(cmd: &str, d: Dialect) -> Vec<(String, String, bool)> {
    targets(&analyze(cmd, d))
        .into_iter()
        .map(|t| (t.via, t.word.text, t.reach == Reach::Tree))
        .collect()
}

fn paths(cmd: &str) -> Vec<String> {
    t(cmd).into_iter().map(|(_, p, _)| p).collect()
}

#[test]
fn redirections_write_their_target_but_not_duplications() {
    assert_eq!(paths("echo hi > a.txt"), ["a.txt"]);
    assert_eq!(paths("echo hi >> a.txt 2>&1"), ["a.txt"]);
    assert_eq!(paths("make &> log.txt"), ["log.txt"]);
    assert_eq!(paths("cmd 2> err.txt >&2"), ["err.txt"]);
    assert_eq!(paths("cat <<EOF > src/x.ts\nhi\nEOF"), ["src/x.ts"]);
    assert!(paths("cat a.txt < b.txt").is_empty());
    assert!(paths("grep -r x src | sort").is_empty());
}

#[test]
fn file_commands_name_what_they_write() {
    assert_eq!(paths("tee -a a b"), ["a", "b"]);
    assert_eq!(paths("sed -i 's/a/b/' f1 f2"), ["f1", "f2"]);
    assert_eq!(paths("sed -i.bak -e 's/a/b/' f1"), ["f1"]);
    assert_eq!(paths("sed -n 's/a/b/p' f1"), Vec::<String>::new());
    assert_eq!(paths("perl -pi -e 's/a/b/' f"), ["f"]);
    assert_eq!(paths("touch -d 2020-01-01 f"), ["f"]);
    assert_eq!(paths("truncate -s 0 f"), ["f"]);
    assert_eq!(paths("dd if=/dev/zero of=disk.img bs=1"), ["disk.img"]);
    assert_eq!(paths("patch -p1 src/a.ts fix.patch"), ["src/a.ts"]);
    assert_eq!(paths("patch -o out.ts < fix.patch"), ["out.ts"]);
    assert_eq!(
        t("rm -rf dist x"),
        [
            ("rm".into(), "dist".into(), true),
            ("rm".into(), "x".into(), true)
        ]
    );
    assert_eq!(t("rm f"), [("rm".into(), "f".into(), false)]);
}

#[test]
fn copies_write_the_destination_and_moves_the_source_too() {
    assert_eq!(paths("cp a.ts src/api/"), ["src/api/", "src/api/a.ts"]);
    assert_eq!(paths("cp -t dir a b"), ["dir", "dir/a", "dir/b"]);
    assert_eq!(
        paths("mv src/api/x.ts lib/"),
        ["lib/", "lib/x.ts", "src/api/x.ts"]
    );
    assert_eq!(paths("ln -sf ../a link"), ["link", "link/a"]);
    assert_eq!(paths("rsync -a src/ host:backup/"), Vec::<String>::new());
    assert_eq!(paths("cp src/api/x.ts \"$TMPDIR/x\"").len(), 2);
}

#[test]
fn git_writes_its_pathspecs() {
    assert_eq!(paths("git checkout -- src/a.ts"), ["src/a.ts"]);
    assert_eq!(paths("git checkout main -- src/a.ts"), ["src/a.ts"]);
    assert_eq!(paths("git checkout HEAD~1 src/a.ts"), ["src/a.ts"]);
    assert!(paths("git checkout -b feature").is_empty());
    assert_eq!(paths("git restore src/a.ts"), ["src/a.ts"]);
    assert!(paths("git restore --staged src/a.ts").is_empty());
    assert_eq!(paths("git rm -r src/api"), ["src/api"]);
    assert!(paths("git rm --cached src/a.ts").is_empty());
    assert_eq!(paths("git stash push -- src/a.ts"), ["src/a.ts"]);
    assert_eq!(paths("git stash push -m wip src/a.ts"), ["src/a.ts"]);
    assert!(paths("git stash list").is_empty());
    assert_eq!(paths("git clean -fd"), ["."]);
    assert!(paths("git clean -nd").is_empty());
    assert_eq!(paths("git -C web checkout -- a.ts"), ["web/a.ts"]);
    assert!(paths("git status").is_empty());
}

#[test]
fn powershell_cmdlets_and_aliases() {
    let ps = |c: &str| -> Vec<String> {
        t_in(c, Dialect::PowerShell)
            .into_iter()
            .map(|(_, p, _)| p)
            .collect()
    };
    assert_eq!(ps("Set-Content -Path src/a.ts -Value x"), ["src/a.ts"]);
    assert_eq!(ps("Set-Content src/a.ts 'x'"), ["src/a.ts"]);
    assert_eq!(ps("'x' | Out-File -FilePath a.txt -Append"), ["a.txt"]);
    assert_eq!(ps("Add-Content -LiteralPath a.txt -Value y"), ["a.txt"]);
    assert_eq!(ps("Remove-Item -Rec -Force dist"), ["dist"]);
    assert_eq!(ps("rm a.ts, b.ts"), ["a.ts", "b.ts"]);
    assert_eq!(
        ps("Copy-Item a.ts -Destination src/api"),
        ["src/api", "src/api/a.ts"]
    );
    assert_eq!(ps("Move-Item a.ts b.ts"), ["b.ts", "b.ts/a.ts", "a.ts"]);
    assert_eq!(ps("New-Item -ItemType File -Path x.ts"), ["x.ts"]);
    assert!(ps("Get-Content a.ts").is_empty());
    let tree = t_in("Remove-Item -Recurse dist", Dialect::PowerShell);
    assert!(tree[0].2);
}

#[test]
fn cmd_switches_may_be_joined() {
    let cmd = |c: &str| t_in(c, Dialect::Cmd);
    assert_eq!(cmd("rd /S/Q dist"), [("rd".into(), "dist".into(), true)]);
    assert_eq!(cmd("del /q a.txt"), [("del".into(), "a.txt".into(), false)]);
    assert_eq!(cmd("copy a.txt b.txt").len(), 2);
}

#[test]
fn sandboxed_and_unknown_targets_are_marked() {
    assert!(paths("docker run --rm node:20 rm -rf /app/dist").is_empty());
    let an = analyze("rm -rf \"$OUT/x\" src/*.ts", Dialect::Posix);
    let ts = targets(&an);
    assert!(ts[0].word.dynamic);
    assert!(ts[1].word.glob && !ts[1].word.dynamic);
}

#[test]
fn git_pathspec_magic() {
    use super::pathspec;
    assert_eq!(pathspec("src/a.ts"), Some((false, "src/a.ts")));
    assert_eq!(pathspec(":/"), Some((true, "")));
    assert_eq!(pathspec(":/src/api"), Some((true, "src/api")));
    assert_eq!(pathspec(":/:src"), Some((true, "src")));
    assert_eq!(pathspec(":(top)src"), Some((true, "src")));
    assert_eq!(pathspec(":(top,icase)SRC"), Some((true, "SRC")));
    assert_eq!(pathspec(":(literal)a*b"), Some((false, "a*b")));
    assert_eq!(pathspec(":(glob)**/*.ts"), Some((false, "**/*.ts")));
    assert_eq!(pathspec(":!src/api"), None);
    assert_eq!(pathspec(":^src/api"), None);
    assert_eq!(pathspec(":/!src"), None);
    assert_eq!(pathspec(":(exclude)src/api"), None);
    assert_eq!(pathspec(":(top,exclude)src"), None);
    assert_eq!(pathspec(":(top"), None);
    assert_eq!(paths("git checkout -- :/"), ["$CLAUDE_PROJECT_DIR/"]);
    assert_eq!(
        paths("git restore :/src/api"),
        ["$CLAUDE_PROJECT_DIR/src/api"]
    );
    assert_eq!(paths("git -C web checkout -- ':(literal)x'"), ["web/x"]);
    assert!(paths("git restore -- :!src/api").is_empty());
}

#[test]
fn downloads_write_the_files_they_save() {
    assert_eq!(paths("curl -o src/a.ts https://h/x"), ["src/a.ts"]);
    assert_eq!(paths("curl --output src/a.ts https://h/x"), ["src/a.ts"]);
    assert_eq!(paths("curl -sSLosrc/a.ts https://h/x"), ["src/a.ts"]);
    assert_eq!(paths("curl -O https://h/dl/a.tgz?v=1#top"), ["a.tgz"]);
    assert_eq!(
        paths("curl --remote-name --output-dir src https://h/a.ts"),
        ["src/a.ts"]
    );
    assert_eq!(
        paths("curl -D hdr.txt -c jar.txt https://h/"),
        ["hdr.txt", "jar.txt"]
    );
    // Reads, stdout, and a URL with no file name.
    assert!(paths("curl https://h/src/a.ts").is_empty());
    assert!(paths("curl -o - https://h/x").is_empty());
    assert!(paths("curl -O https://h/").is_empty());
    assert!(paths("curl -d @src/a.ts -H 'X: 1' https://h/x").is_empty());
    assert_eq!(paths("wget -O src/a.ts https://h/x"), ["src/a.ts"]);
    assert_eq!(
        paths("wget --output-document=src/a.ts https://h/x"),
        ["src/a.ts"]
    );
    assert_eq!(paths("wget https://h/dl/a.js"), ["a.js"]);
    assert_eq!(paths("wget https://h/"), ["index.html"]);
    assert_eq!(paths("wget -P src https://h/a.js"), ["src/a.js"]);
    assert_eq!(
        t("wget -r -P src https://h/"),
        [("wget".into(), "src".into(), true)]
    );
    assert!(paths("wget -O - https://h/x").is_empty());
    assert!(paths("wget --spider https://h/x").is_empty());
}

#[test]
fn sort_and_uniq_write_only_their_output() {
    assert_eq!(paths("sort -o src/a.ts src/a.ts"), ["src/a.ts"]);
    assert_eq!(paths("sort --output=out.txt in.txt"), ["out.txt"]);
    assert_eq!(paths("sort -t , -k 2 -oout.txt in.txt"), ["out.txt"]);
    assert!(paths("sort -k 2 -t , src/a.ts").is_empty());
    assert_eq!(paths("uniq -c in.txt out.txt"), ["out.txt"]);
    assert_eq!(paths("uniq -f 1 in.txt out.txt"), ["out.txt"]);
    assert!(paths("uniq -c src/a.ts").is_empty());
}

#[test]
fn compressors_replace_their_files() {
    assert_eq!(paths("gzip src/a.ts"), ["src/a.ts", "src/a.ts.gz"]);
    assert_eq!(paths("gzip -k src/a.ts"), ["src/a.ts.gz"]);
    assert_eq!(paths("gzip -S .z a"), ["a", "a.z"]);
    assert_eq!(paths("gunzip a.ts.gz"), ["a.ts.gz", "a.ts"]);
    assert_eq!(paths("gzip -d a.ts.gz"), ["a.ts.gz", "a.ts"]);
    assert_eq!(paths("bzip2 a"), ["a", "a.bz2"]);
    assert_eq!(paths("xz -d a.xz"), ["a.xz", "a"]);
    assert_eq!(paths("unxz -k a.xz"), ["a"]);
    // zstd keeps its input unless `--rm`.
    assert_eq!(paths("zstd a"), ["a.zst"]);
    assert_eq!(paths("zstd --rm a"), ["a", "a.zst"]);
    assert_eq!(paths("zstd a -o b.zst"), ["b.zst"]);
    assert_eq!(t("gzip -r dist"), [("gzip".into(), "dist".into(), true)]);
    for read in [
        "gzip -c a",
        "gunzip --stdout a.gz",
        "gzip -t a.gz",
        "xz -l a.xz",
        "gzip",
    ] {
        assert!(paths(read).is_empty(), "{read}");
    }
}

#[test]
fn awk_in_place_edits_its_files() {
    assert_eq!(paths("awk -i inplace '{print}' a b"), ["a", "b"]);
    assert_eq!(paths("gawk -i inplace -f fix.awk n=1 a"), ["a"]);
    assert_eq!(paths("gawk --include=inplace -v x=1 '1' a"), ["a"]);
    assert!(paths("awk '{print}' a").is_empty());
    assert!(paths("gawk -i join '{print}' a").is_empty());
    assert!(paths("awk -F , '{print $1}' a").is_empty());
}

#[test]
fn archives_write_into_their_folder() {
    assert_eq!(t("tar -xf a.tar"), [("tar -x".into(), ".".into(), true)]);
    assert_eq!(
        t("tar xzf a.tgz -C out"),
        [("tar -x".into(), "out".into(), true)]
    );
    assert_eq!(
        paths("tar -xf a.tar -C out src/x src/y"),
        ["out/src/x", "out/src/y"]
    );
    assert_eq!(
        paths("tar --extract --file=a.tar --directory=/tmp/y"),
        ["/tmp/y"]
    );
    // Members renamed or read from a list: the folder.
    assert_eq!(paths("tar -xf a.tar --strip-components=1 src/x"), ["."]);
    assert!(paths("tar -tf a.tar").is_empty());
    assert!(paths("tar -xOf a.tar x").is_empty());
    assert_eq!(paths("tar -c -f out.tar src"), ["out.tar"]);
    assert_eq!(paths("tar czf out.tgz src"), ["out.tgz"]);
    assert!(paths("tar -cf - src").is_empty());
    assert_eq!(
        t("tar -cf out.tar --remove-files src"),
        [
            ("tar -f".into(), "out.tar".into(), false),
            ("tar --remove-files".into(), "src".into(), true)
        ]
    );
    assert_eq!(
        t("unzip a.zip -d out"),
        [("unzip".into(), "out".into(), true)]
    );
    assert_eq!(paths("unzip a.zip"), ["."]);
    assert_eq!(paths("unzip a.zip src/x -d out"), ["out/src/x"]);
    assert!(paths("unzip -l a.zip").is_empty());
    assert!(paths("unzip -p a.zip x").is_empty());
}

#[test]
fn find_writes_its_start_folders_whole() {
    assert_eq!(
        t("find src -delete"),
        [("find -delete".into(), "src".into(), true)]
    );
    assert_eq!(
        t("find src lib -name '*.orig' -exec rm -f {} +"),
        [
            ("find -exec rm".into(), "src".into(), true),
            ("find -exec rm".into(), "lib".into(), true)
        ]
    );
    assert_eq!(
        t("find -L -name x -exec sed -i s/a/b/ {} \\;"),
        [("find -exec sed -i".into(), ".".into(), true)]
    );
    assert_eq!(
        t("find src -exec sudo rm -f {} +"),
        [("find -exec rm".into(), "src".into(), true)]
    );
    // The derived command's `{}` is not a file of its own.
    assert!(paths("find src -exec cat {} +").is_empty());
    assert!(paths("find src -exec sed -n 1p {} \\;").is_empty());
    assert!(paths("find src -name x -print").is_empty());
    // A destination outside what find finds is the copy's own target.
    assert_eq!(paths("find src -exec cp {} /tmp/o/ \\;"), ["/tmp/o/"]);
}

#[test]
fn xargs_and_sudo_reach_the_writer() {
    let an = analyze("git ls-files | xargs rm", Dialect::Posix);
    let ts = targets(&an);
    assert_eq!(ts.len(), 1);
    assert!(ts[0].word.dynamic, "unknown input is an unknown target");
    assert_eq!(paths("echo a b | xargs rm"), ["a", "b"]);
    assert_eq!(paths("echo x | sudo tee -a f"), ["f"]);
    assert_eq!(paths("sudo -u root sed -i s/a/b/ f"), ["f"]);
}
