//! The analysis never panics and always terminates, whatever the input.

use super::*;
use proptest::prelude::*;

const DIALECTS: [Dialect; 3] = [Dialect::Posix, Dialect::PowerShell, Dialect::Cmd];

fn all(s: &str) {
    for d in DIALECTS {
        let a = analyze(s, d);
        for seg in &a.segments {
            let _ = seg.render();
            assert!(seg.source < a.sources.len());
        }
    }
}

fn fragment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "$(",
        ")",
        "(",
        "`",
        "'",
        "\"",
        "$'",
        "\\",
        "\\\n",
        "${",
        "}",
        "{",
        "<(",
        ">(",
        "$((",
        "<<EOF\n",
        "<<-'E'\n",
        "\nEOF\n",
        "\n\tE\n",
        "<<<",
        "|",
        "|&",
        "&&",
        "||",
        ";",
        ";;",
        "&",
        "\n",
        " ",
        "\t",
        "#",
        "<#",
        "#>",
        "@'\n",
        "\n'@",
        "@\"",
        "@(",
        "`n",
        "^",
        "%X%",
        ">",
        "2>&1",
        "&>",
        "case x in ",
        " in ",
        "a)",
        "esac",
        "if ",
        "then ",
        "fi",
        "for i in ",
        "do ",
        "done",
        "bash -c ",
        "sh -lc ",
        "eval ",
        "cmd /c ",
        "powershell -Command ",
        "pwsh -enc ",
        "bgBwAG0A",
        "xargs ",
        "find . -exec ",
        " \\; ",
        "docker run -v x:/y img ",
        "env -S ",
        "git checkout main",
        "npm run build",
        "rm -rf dist",
        "git -c alias.x=!x x",
        "tmux new ",
        "Start-Process ",
        "-ArgumentList ",
        "cd ..",
        "echo dist | ",
        "x=(",
        "$x",
        "~",
        "*",
        "python3 -c ",
        "node -e ",
        "perl -e ",
        "ruby -e ",
        "awk ",
        "python3 - <<EOF\n",
        "os.system(",
        "subprocess.run([",
        "shutil.rmtree(",
        "open(",
        "Path(",
        "', '",
        "%x(",
        "qw(",
        "Bun.$`",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn any_text_is_analyzed(s in ".{0,300}") {
        all(&s);
    }

    #[test]
    fn any_bytes_are_analyzed(b in prop::collection::vec(any::<u8>(), 0..300)) {
        all(&String::from_utf8_lossy(&b));
    }

    #[test]
    fn shell_fragments_are_analyzed(parts in prop::collection::vec(fragment(), 0..80)) {
        all(&parts.concat());
    }
}

#[test]
fn pathological_inputs_finish() {
    let inputs = [
        "$(".repeat(50_000),
        "(".repeat(200_000),
        "`".repeat(100_001),
        "bash -c '".repeat(5_000),
        "eval eval eval ".repeat(10_000),
        "${".repeat(50_000),
        "<<EOF\n".repeat(20_000),
        "\"$(\"".repeat(20_000),
        "x | ".repeat(100_000),
        "cat <<'EOF' | bash\n".repeat(5_000) + "EOF\n",
        format!("bash -c \"{}\"", "bash -c \\\"".repeat(200)),
        "a=( ".repeat(20_000),
        "case x in ".repeat(20_000),
        "@(".repeat(30_000),
        format!("python3 -c \"{}\"", "os.system('".repeat(20_000)),
        format!("python3 -c \"{}\"", "os.system(x ".repeat(20_000)),
        format!("perl -e '{}'", "q(".repeat(50_000)),
        format!("ruby -e '{}'", "%x(".repeat(30_000)),
        format!("node -e \"{}\"", "execSync('node -e \\\"".repeat(200)),
        format!("python3 - <<'EOF'\n{}\nEOF\n", "Path('x').".repeat(20_000)),
    ];
    for s in &inputs {
        all(s);
    }
}

#[test]
fn huge_input_is_cut_at_a_char_boundary() {
    let s = "é".repeat(MAX_INPUT_BYTES);
    let a = analyze(&s, Dialect::Posix);
    assert!(a.truncated);
}
