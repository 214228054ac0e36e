//! The command-case corpus format (`selftest/commands/*.case`), shared by the unit test
//! that checks the rules directly and the selftest runner that drives the real binary.
//!
//! ```text
//! # comment lines start with '#'; blank lines ignored
//! == unique case name
//! $ first line of the command
//! $ second line (text after "$ " is kept verbatim, tabs included; a lone "$" is an empty line)
//! tool: PowerShell          (optional; default Bash; mcp__<server>__<tool> for MCP calls)
//! cwd: web/sub              (optional; payload cwd relative to the repo root)
//! input: {"json": 1}        (MCP cases only; optional, default {})
//! > allow | block <rule-id> | shared <rule-id>
//! ```

use std::fmt;

use serde_json::Value;

/// What a case expects of the guard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Allowed, alone and with other sessions in the tree.
    Allow,
    /// Blocked by this rule alone and with others.
    Block(String),
    /// Blocked by this rule only when another live session works in the tree.
    Shared(String),
}

/// One case of the corpus.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandCase {
    /// Unique name.
    pub name: String,
    /// File it came from (as given to [`parse_cases`]).
    pub file: String,
    /// Line of its `==` header (1-based).
    pub line: usize,
    /// `Bash`, `PowerShell` or an MCP tool name.
    pub tool: String,
    /// The command (lines joined with `\n`); empty for MCP cases.
    pub command: String,
    /// The payload cwd relative to the repository root.
    pub cwd: Option<String>,
    /// The MCP tool input.
    pub input: Value,
    /// The expectation.
    pub expect: Expect,
}

impl CommandCase {
    /// An MCP tool case.
    pub fn is_mcp(&self) -> bool {
        self.tool.starts_with("mcp__")
    }
}

/// A malformed case file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaseError {
    /// The file.
    pub file: String,
    /// The 1-based line.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

impl std::error::Error for CaseError {}

struct Draft {
    name: String,
    line: usize,
    tool: Option<String>,
    lines: Vec<String>,
    cwd: Option<String>,
    input: Option<Value>,
    expect: Option<Expect>,
}

/// Parse one case file. `file` names it in errors.
pub fn parse_cases(text: &str, file: &str) -> Result<Vec<CommandCase>, CaseError> {
    let mut out: Vec<CommandCase> = Vec::new();
    let mut draft: Option<Draft> = None;
    let error = |line: usize, message: String| CaseError {
        file: file.to_string(),
        line,
        message,
    };
    for (k, raw) in text.split('\n').enumerate() {
        let n = k + 1;
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(name) = line.strip_prefix("== ") {
            if let Some(d) = draft.take() {
                let at = d.line;
                out.push(finish(d, file).map_err(|m| error(at, m))?);
            }
            let name = name.trim().to_string();
            if name.is_empty() {
                return Err(error(n, "empty case name".into()));
            }
            if out.iter().any(|c| c.name == name) {
                return Err(error(n, format!("duplicate case name '{name}'")));
            }
            draft = Some(Draft {
                name,
                line: n,
                tool: None,
                lines: Vec::new(),
                cwd: None,
                input: None,
                expect: None,
            });
            continue;
        }
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(d) = draft.as_mut() else {
            return Err(error(
                n,
                format!("'{line}' before the first '== name' line"),
            ));
        };
        if line == "$" {
            d.lines.push(String::new());
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            d.lines.push(cmd.to_string());
        } else if let Some(tool) = line.strip_prefix("tool:") {
            let tool = tool.trim();
            if tool.is_empty() {
                return Err(error(n, "empty tool".into()));
            }
            d.tool = Some(tool.to_string());
        } else if let Some(cwd) = line.strip_prefix("cwd:") {
            d.cwd = Some(cwd.trim().to_string());
        } else if let Some(json) = line.strip_prefix("input:") {
            let v: Value = serde_json::from_str(json.trim())
                .map_err(|e| error(n, format!("input is not JSON: {e}")))?;
            d.input = Some(v);
        } else if let Some(exp) = line.strip_prefix("> ") {
            if d.expect.is_some() {
                return Err(error(n, "second expectation".into()));
            }
            let mut parts = exp.split_whitespace();
            let e = match (parts.next(), parts.next(), parts.next()) {
                (Some("allow"), None, None) => Expect::Allow,
                (Some("block"), Some(id), None) => Expect::Block(id.to_string()),
                (Some("shared"), Some(id), None) => Expect::Shared(id.to_string()),
                _ => {
                    return Err(error(
                        n,
                        format!(
                            "expectation '{exp}' is not 'allow', 'block <id>' or 'shared <id>'"
                        ),
                    ));
                }
            };
            d.expect = Some(e);
        } else {
            return Err(error(n, format!("unknown line '{line}'")));
        }
    }
    if let Some(d) = draft.take() {
        let at = d.line;
        out.push(finish(d, file).map_err(|m| error(at, m))?);
    }
    Ok(out)
}

fn finish(d: Draft, file: &str) -> Result<CommandCase, String> {
    let tool = d.tool.unwrap_or_else(|| "Bash".to_string());
    let expect = d
        .expect
        .ok_or_else(|| format!("case '{}' has no '> ' expectation", d.name))?;
    let mcp = tool.starts_with("mcp__");
    if mcp && !d.lines.is_empty() {
        return Err(format!("MCP case '{}' must not have '$' lines", d.name));
    }
    if !mcp && d.lines.is_empty() {
        return Err(format!("case '{}' has no '$' command line", d.name));
    }
    if !mcp && d.input.is_some() {
        return Err(format!("case '{}': 'input:' is for MCP cases", d.name));
    }
    if !mcp && tool != "Bash" && tool != "PowerShell" {
        return Err(format!(
            "case '{}': tool '{tool}' is not Bash, PowerShell or mcp__…",
            d.name
        ));
    }
    Ok(CommandCase {
        name: d.name,
        file: file.to_string(),
        line: d.line,
        tool,
        command: d.lines.join("\n"),
        cwd: d.cwd,
        input: d.input.unwrap_or_else(|| Value::Object(Default::default())),
        expect,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_field() {
        let text = "# header\n\n== one\n$ cat <<'EOF'\n$ \tindented\n$\n$ EOF\ncwd: web\n> allow\n\
                    == two\ntool: PowerShell\n$ Stop-Process -Name electron\n> block app.restart\n\
                    == three\ntool: mcp__app__kill_process\ninput: {\"pid\": 3}\n> block mcp.arbitrary-command\r\n\
                    == four\n$ git pull\n> shared git.head-change\n";
        let cases = parse_cases(text, "t.case").unwrap();
        assert_eq!(cases.len(), 4);
        assert_eq!(cases[0].command, "cat <<'EOF'\n\tindented\n\nEOF");
        assert_eq!(cases[0].cwd.as_deref(), Some("web"));
        assert_eq!(cases[0].line, 3);
        assert_eq!(cases[0].expect, Expect::Allow);
        assert_eq!(cases[1].tool, "PowerShell");
        assert_eq!(cases[1].expect, Expect::Block("app.restart".into()));
        assert!(cases[2].is_mcp());
        assert_eq!(cases[2].input["pid"], 3);
        assert_eq!(cases[3].expect, Expect::Shared("git.head-change".into()));
        assert_eq!(cases[3].input, serde_json::json!({}));
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse_cases("== a\n$ x\n", "f.case").unwrap_err();
        assert_eq!(e.to_string(), "f.case:1: case 'a' has no '> ' expectation");
        let e = parse_cases("$ x\n", "f.case").unwrap_err();
        assert_eq!(e.line, 1);
        let e = parse_cases("== a\n$ x\n> allow\n== a\n$ y\n> allow\n", "f.case").unwrap_err();
        assert_eq!(e.to_string(), "f.case:4: duplicate case name 'a'");
        let e = parse_cases("== a\n$ x\n> maybe\n", "f.case").unwrap_err();
        assert_eq!(e.line, 3);
        let e = parse_cases("== a\nbogus\n", "f.case").unwrap_err();
        assert_eq!(e.to_string(), "f.case:2: unknown line 'bogus'");
        let e = parse_cases("== a\ntool: mcp__x__y\n$ ls\n> allow\n", "f.case").unwrap_err();
        assert!(e.message.contains("must not have"));
        let e = parse_cases("== a\ninput: {nope\n", "f.case").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_cases("== a\n> allow\n", "f.case").unwrap_err();
        assert!(e.message.contains("no '$' command line"));
        let e = parse_cases("== a\ntool: Zsh\n$ ls\n> allow\n", "f.case").unwrap_err();
        assert!(e.message.contains("is not Bash"));
    }
}
