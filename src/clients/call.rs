//! A hook payload read into what the guard checks, whichever client wrote it: the client, the
//! event, the session, the folder the call runs in, and the tool call as one of a few kinds (a
//! shell command, writes of files, an MCP tool). Claude Code's payloads are the guard's own form
//! and are left to it as they are ([`Tool::Native`]).
//!
//! What each client's tools become (the payloads as the research recorded them are the tests):
//!
//! | payload | [`Tool`] | folder |
//! |---|---|---|
//! | Codex `Bash` `{command}` | `Shell` | `cwd` (Codex sets it per call, to `exec_command`'s `workdir`) |
//! | Codex `apply_patch` `{command: <patch>}` | `Files`, one per path of the patch | `cwd` |
//! | Gemini `run_shell_command` `{command, dir_path?}` | `Shell` | `cwd` joined with `dir_path` |
//! | Gemini `write_file` `{file_path, content}` | `Files` `[Content]` | `cwd` |
//! | Gemini `replace` `{file_path, old_string, new_string, allow_multiple?}` | `Files` `[Replace]` | `cwd` |
//! | `mcp__<server>__<tool>` (Codex), `mcp_<server>_<tool>` (Gemini) | `Mcp` in Claude's name form | `cwd` |
//!
//! An input the guard must read to decide and cannot (a patch that does not parse, a shell
//! command or a path that is not a string) is [`Tool::Unreadable`]: the guard refuses it, since
//! the model shapes that input.

use super::patch::{self, Op};
use super::{Client, Event};
use serde_json::Value;

/// A file a tool writes, and what it becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileWrite {
    /// As the payload names it: relative to [`Read::cwd`], or absolute.
    pub path: String,
    pub change: Change,
}

/// What a write does to its file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The whole new text (Gemini's `write_file`, a patch's `Add File`).
    Content(String),
    /// `old` replaced by `new`, once or everywhere (Gemini's `replace`).
    Replace { old: String, new: String, all: bool },
    /// A patch's chunks applied to the file ([`patch::apply`]).
    Patch(Vec<patch::Chunk>),
    /// The file is removed (a patch's `Delete File`, the source of a `Move to`).
    Remove,
    /// The file is created from another one (a `Move to` destination): its text is the source's
    /// after the chunks.
    MovedFrom {
        source: String,
        chunks: Vec<patch::Chunk>,
    },
}

/// The tool call, as the guard checks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Tool {
    /// A Claude Code payload: the guard reads it as it always has.
    Native,
    /// Not a tool event (a session start, a prompt, …).
    None,
    /// A shell command, run in [`Read::cwd`].
    Shell { command: String },
    /// Files written, each once per operation.
    Files(Vec<FileWrite>),
    /// An MCP tool, named `mcp__<server>__<tool>` as the rules know it, with its input.
    Mcp { name: String, input: Value },
    /// Any other tool (reads, searches, plans): nothing for the guard to check.
    Other(String),
    /// An input the guard cannot read; the reason, for the model.
    Unreadable(String),
}

/// A payload as the guard reads it.
#[derive(Clone, Debug, PartialEq)]
pub struct Read {
    pub client: Client,
    pub event: Event,
    pub session_id: String,
    /// The folder the call runs in and its relative paths are relative to (for Gemini's shell,
    /// `dir_path` below the session folder).
    pub cwd: String,
    pub tool: Tool,
}

fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Reads a hook payload (a JSON object) of any client.
pub fn read(raw: &Value) -> Read {
    let client = Client::detect(raw);
    let event = Event::of(client, text(raw, "hook_event_name").unwrap_or(""));
    let cwd = text(raw, "cwd").unwrap_or("").to_string();
    let mut read = Read {
        client,
        event,
        session_id: text(raw, "session_id").unwrap_or("").to_string(),
        cwd,
        tool: Tool::None,
    };
    if !event.is_tool() {
        return read;
    }
    let name = text(raw, "tool_name").unwrap_or("");
    let input = raw.get("tool_input").unwrap_or(&Value::Null);
    read.tool = match client {
        Client::Claude => Tool::Native,
        Client::Codex => codex_tool(name, input),
        Client::Gemini => {
            let (tool, dir) = gemini_tool(name, input, raw.get("mcp_context"));
            if let Some(dir) = dir {
                read.cwd = crate::paths::lexical::join(&read.cwd, &dir);
            }
            tool
        }
    };
    read
}

/// The `command` string of a shell tool's input.
fn shell_command(name: &str, input: &Value) -> Tool {
    match input.get("command") {
        Some(Value::String(c)) => Tool::Shell { command: c.clone() },
        _ => Tool::Unreadable(format!(
            "this {name} call's input has no command string, so the guard cannot check what it runs"
        )),
    }
}

fn codex_tool(name: &str, input: &Value) -> Tool {
    match name {
        "Bash" => shell_command(name, input),
        "apply_patch" => match input.get("command").and_then(Value::as_str) {
            None => Tool::Unreadable(
                "this apply_patch call's input has no patch text, so the guard cannot check what it writes".into(),
            ),
            Some(text) => match patch::parse(text) {
                Ok(p) => Tool::Files(patch_writes(p)),
                Err(e) => Tool::Unreadable(format!(
                    "this apply_patch call's patch cannot be read ({e}), so the guard cannot check which files it writes; send one well-formed patch (*** Begin Patch … *** End Patch)"
                )),
            },
        },
        _ if name.starts_with("mcp__") => Tool::Mcp {
            name: name.to_string(),
            input: input.clone(),
        },
        _ => Tool::Other(name.to_string()),
    }
}

/// Each file a patch writes: its operations, a move as its source removed and its destination
/// written.
pub fn patch_writes(p: patch::Patch) -> Vec<FileWrite> {
    let mut out = Vec::new();
    for op in p.ops {
        match op {
            Op::Add { path, content } => out.push(FileWrite {
                path,
                change: Change::Content(content),
            }),
            Op::Delete { path } => out.push(FileWrite {
                path,
                change: Change::Remove,
            }),
            Op::Update {
                path,
                move_to: None,
                chunks,
            } => out.push(FileWrite {
                path,
                change: Change::Patch(chunks),
            }),
            Op::Update {
                path,
                move_to: Some(to),
                chunks,
            } => {
                out.push(FileWrite {
                    path: to,
                    change: Change::MovedFrom {
                        source: path.clone(),
                        chunks,
                    },
                });
                out.push(FileWrite {
                    path,
                    change: Change::Remove,
                });
            }
        }
    }
    out
}

/// Gemini's tool, and the folder (`dir_path`) its shell command runs in.
fn gemini_tool(name: &str, input: &Value, mcp: Option<&Value>) -> (Tool, Option<String>) {
    let path = || match input.get("file_path") {
        Some(Value::String(p)) => Ok(p.clone()),
        _ => Err(Tool::Unreadable(format!(
            "this {name} call's input has no file_path string, so the guard cannot check which file it writes"
        ))),
    };
    let string = |key: &str| text(input, key).unwrap_or("").to_string();
    let tool = match name {
        "run_shell_command" => {
            let dir = match input.get("dir_path") {
                None | Some(Value::Null) => None,
                Some(Value::String(d)) if d.is_empty() => None,
                Some(Value::String(d)) => Some(d.clone()),
                Some(_) => {
                    return (
                        Tool::Unreadable(
                            "this run_shell_command call's dir_path is not a string, so the guard cannot tell where it runs".into(),
                        ),
                        None,
                    );
                }
            };
            return (shell_command(name, input), dir);
        }
        "write_file" => match path() {
            Ok(path) => Tool::Files(vec![FileWrite {
                path,
                change: Change::Content(string("content")),
            }]),
            Err(t) => t,
        },
        "replace" => match path() {
            Ok(path) => Tool::Files(vec![FileWrite {
                path,
                change: Change::Replace {
                    old: string("old_string"),
                    new: string("new_string"),
                    all: input
                        .get("allow_multiple")
                        .and_then(Value::as_bool)
                        .unwrap_or(false),
                },
            }]),
            Err(t) => t,
        },
        _ => match gemini_mcp(name, mcp) {
            Some((server, tool)) => Tool::Mcp {
                name: format!("mcp__{server}__{tool}"),
                input: input.clone(),
            },
            None => Tool::Other(name.to_string()),
        },
    };
    (tool, None)
}

/// The server and tool of a Gemini MCP call: its `mcp_context` when the payload carries one,
/// else the name `mcp_<server>_<tool>` split at its first `_`, as Gemini splits it.
fn gemini_mcp(name: &str, context: Option<&Value>) -> Option<(String, String)> {
    let from_context = context.and_then(|c| Some((text(c, "server_name")?, text(c, "tool_name")?)));
    if let Some((server, tool)) = from_context {
        return Some((server.to_string(), tool.to_string()));
    }
    let (server, tool) = name.strip_prefix("mcp_")?.split_once('_')?;
    (!server.is_empty() && !tool.is_empty()).then(|| (server.to_string(), tool.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn codex(tool: &str, input: Value) -> Value {
        json!({"session_id":"01a23ac9-ac6b-70a3-935c-c236735b5600","turn_id":"t",
            "transcript_path":"/h/sessions/2026/12/03/rollout-x.jsonl","cwd":"/s/proj",
            "hook_event_name":"PreToolUse","model":"gpt-5.5","permission_mode":"bypassPermissions",
            "tool_name":tool,"tool_input":input,"tool_use_id":"call_1"})
    }

    fn gemini(tool: &str, input: Value) -> Value {
        json!({"session_id":"74e8b17c","transcript_path":"/h/.gemini/tmp/proj/chats/s.jsonl",
            "cwd":"/s/proj","hook_event_name":"BeforeTool","timestamp":"2026-12-03T07:25:54.625Z",
            "tool_name":tool,"tool_input":input})
    }

    #[test]
    fn codex_shell_and_patch_payloads() {
        let r = read(&codex(
            "Bash",
            json!({"command": "echo HIJACK > target.txt"}),
        ));
        assert_eq!((r.client, r.event), (Client::Codex, Event::PreTool));
        assert_eq!(r.session_id, "01a23ac9-ac6b-70a3-935c-c236735b5600");
        assert_eq!(r.cwd, "/s/proj");
        assert_eq!(
            r.tool,
            Tool::Shell {
                command: "echo HIJACK > target.txt".into()
            }
        );
        let r = read(&codex(
            "apply_patch",
            json!({"command": "*** Begin Patch\n*** Update File: target.txt\n@@\n-original\n+HIJACK\n*** End Patch\n"}),
        ));
        let Tool::Files(files) = &r.tool else {
            panic!("{r:?}")
        };
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].path, "target.txt");
        assert!(matches!(&files[0].change, Change::Patch(c) if c.len() == 1));
        let moved = read(&codex(
            "apply_patch",
            json!({"command": "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b/c.txt\n*** Delete File: d\n*** End Patch"}),
        ));
        let Tool::Files(files) = &moved.tool else {
            panic!("{moved:?}")
        };
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["b/c.txt", "a.txt", "d"]);
        assert_eq!(
            files[0].change,
            Change::MovedFrom {
                source: "a.txt".into(),
                chunks: vec![]
            }
        );
        assert_eq!(files[1].change, Change::Remove);
    }

    #[test]
    fn unreadable_inputs_are_refusable_not_skipped() {
        for input in [
            json!({"command": "rm -rf x"}),
            json!({}),
            json!({"command": 7}),
        ] {
            let r = read(&codex("apply_patch", input.clone()));
            assert!(matches!(r.tool, Tool::Unreadable(_)), "{input}: {r:?}");
        }
        assert!(matches!(
            read(&codex("Bash", json!({"command": ["ls"]}))).tool,
            Tool::Unreadable(_)
        ));
        assert!(matches!(
            read(&gemini("write_file", json!({"content": "x"}))).tool,
            Tool::Unreadable(_)
        ));
        assert!(matches!(
            read(&gemini(
                "run_shell_command",
                json!({"command": "ls", "dir_path": 3})
            ))
            .tool,
            Tool::Unreadable(_)
        ));
        let Tool::Unreadable(why) = read(&codex("apply_patch", json!({"command": "nope"}))).tool
        else {
            unreachable!()
        };
        assert!(why.contains("'*** Begin Patch'"), "{why}");
    }

    #[test]
    fn gemini_tools_and_the_shells_folder() {
        let r = read(&gemini(
            "run_shell_command",
            json!({"command":"echo HIJACK > target.txt","description":"write target"}),
        ));
        assert_eq!((r.client, r.event), (Client::Gemini, Event::PreTool));
        assert_eq!(r.cwd, "/s/proj");
        assert_eq!(
            r.tool,
            Tool::Shell {
                command: "echo HIJACK > target.txt".into()
            }
        );
        let r = read(&gemini(
            "run_shell_command",
            json!({"command":"echo HIJACK > ../target.txt","description":"…","dir_path":"sub"}),
        ));
        assert_eq!(r.cwd, "/s/proj/sub");
        let r = read(&gemini(
            "run_shell_command",
            json!({"command":"ls","dir_path":"/elsewhere"}),
        ));
        assert_eq!(r.cwd, "/elsewhere");
        let r = read(&gemini(
            "write_file",
            json!({"file_path":"target.txt","content":"HIJACK\n"}),
        ));
        assert_eq!(
            r.tool,
            Tool::Files(vec![FileWrite {
                path: "target.txt".into(),
                change: Change::Content("HIJACK\n".into())
            }])
        );
        let r = read(&gemini(
            "replace",
            json!({"file_path":"target.txt","old_string":"original","new_string":"HIJACK","instruction":"replace the word"}),
        ));
        assert_eq!(
            r.tool,
            Tool::Files(vec![FileWrite {
                path: "target.txt".into(),
                change: Change::Replace {
                    old: "original".into(),
                    new: "HIJACK".into(),
                    all: false
                }
            }])
        );
        assert_eq!(
            read(&gemini("read_file", json!({"file_path": "a"}))).tool,
            Tool::Other("read_file".into())
        );
    }

    #[test]
    fn mcp_tools_get_claudes_name_form() {
        let r = read(&gemini("mcp_fs_write_file", json!({"path": "a"})));
        assert_eq!(
            r.tool,
            Tool::Mcp {
                name: "mcp__fs__write_file".into(),
                input: json!({"path": "a"})
            }
        );
        let mut with_context = gemini("mcp_my_fs_save", json!({}));
        with_context["mcp_context"] = json!({"server_name": "my_fs", "tool_name": "save"});
        assert!(
            matches!(read(&with_context).tool, Tool::Mcp { name, .. } if name == "mcp__my_fs__save")
        );
        assert!(matches!(
            read(&codex("mcp__fs__write", json!({}))).tool,
            Tool::Mcp { name, .. } if name == "mcp__fs__write"
        ));
        assert_eq!(
            read(&gemini("mcp_", json!({}))).tool,
            Tool::Other("mcp_".into())
        );
    }

    #[test]
    fn claude_payloads_and_non_tool_events_are_left_as_they_are() {
        let claude = json!({"session_id":"s","cwd":"/p","hook_event_name":"PreToolUse",
            "tool_name":"Write","tool_input":{"file_path":"a","content":"b"}});
        let r = read(&claude);
        assert_eq!((r.client, r.tool), (Client::Claude, Tool::Native));
        let start = json!({"session_id":"s","cwd":"/p","hook_event_name":"BeforeAgent",
            "timestamp":"t","prompt":"hi"});
        let r = read(&start);
        assert_eq!(
            (r.client, r.event, r.tool),
            (Client::Gemini, Event::Prompt, Tool::None)
        );
    }
}
