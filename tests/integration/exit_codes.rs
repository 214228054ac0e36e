//! The exit-code table, once: PROTOCOL.md's table is `exit::Code`, and every tool's `--help`
//! has exactly one exit-code section, made from the codes the tool declares in `exit::tools`.

use crate::support::lifecycle::bin;
use session_lock::exit::{self, Code};
use std::process::Command;

/// The rows of PROTOCOL.md's exit-code table: (code, meaning without backticks).
fn protocol_rows() -> Vec<(i32, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/PROTOCOL.md");
    let text = std::fs::read_to_string(path).expect("read PROTOCOL.md");
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("Exit codes"))
        .expect("PROTOCOL.md has an exit-code section");
    section
        .lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l
                .trim()
                .trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect();
            match cells.as_slice() {
                [n, meaning] => Some((n.parse().ok()?, meaning.replace('`', ""))),
                _ => None,
            }
        })
        .collect()
}

#[test]
fn protocol_md_table_is_the_enum() {
    let want: Vec<(i32, String)> = Code::ALL
        .iter()
        .map(|c| (c.as_i32(), c.meaning().to_string()))
        .collect();
    assert_eq!(protocol_rows(), want);
}

#[test]
fn every_help_has_one_exit_code_section_from_the_tools_list() {
    for (tool, codes) in exit::tools::ALL {
        let out = Command::new(bin(tool))
            .arg("--help")
            .output()
            .unwrap_or_else(|e| panic!("{tool} --help: {e}"));
        assert!(out.status.success(), "{tool} --help failed");
        let help = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            help.matches("Exit codes").count(),
            1,
            "{tool} --help has one exit-code section:\n{help}"
        );
        let section = if tool == "guard" {
            exit::section("Exit codes (hook mode, nothing else):", codes)
        } else {
            exit::help(codes)
        };
        assert!(
            help.contains(section.trim_end()),
            "{tool} --help lacks its declared codes:\n{section}\nin:\n{help}"
        );
    }
}
