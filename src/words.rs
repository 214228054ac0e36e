//! The words of the client's payloads as types: hook events, tool names and permission modes,
//! each with an `Other(String)` arm for a value this build does not know (a newer client's), so
//! nothing compares them as strings. Also [`string_enum!`], the macro that declares such an enum
//! (used by the ledgers and the directory too).

/// Declares a string-valued enum with an `Other(String)` variant for values this build does not
/// know: serde reads and writes the exact strings, so a line keeps its bytes.
macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $v:ident = $s:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vm])* $v,)*
            /// A value of another build, kept as it is.
            Other(String),
        }

        impl Default for $name {
            fn default() -> $name {
                $name::Other(String::new())
            }
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$v => $s,)*
                    $name::Other(s) => s,
                }
            }

            pub fn parse(s: &str) -> $name {
                match s {
                    $($s => $name::$v,)*
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<$name, D::Error> {
                let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                Ok($name::parse(&s))
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> $name {
                $name::parse(s)
            }
        }

        impl From<String> for $name {
            /// Like [`parse`](Self::parse), keeping the string for `Other` instead of copying it.
            fn from(s: String) -> $name {
                match s.as_str() {
                    $($s => $name::$v,)*
                    _ => $name::Other(s),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

string_enum! {
    /// A hook event (`hook_event_name`).
    HookEvent {
        PreToolUse = "PreToolUse",
        PostToolUse = "PostToolUse",
        SessionStart = "SessionStart",
        SessionEnd = "SessionEnd",
        UserPromptSubmit = "UserPromptSubmit",
        Stop = "Stop",
    }
}

string_enum! {
    /// A tool's name (`tool_name`). MCP tools (`mcp__<server>__<tool>`) are `Other`.
    Tool {
        Bash = "Bash",
        PowerShell = "PowerShell",
        Edit = "Edit",
        Write = "Write",
        MultiEdit = "MultiEdit",
        NotebookEdit = "NotebookEdit",
        Read = "Read",
        Grep = "Grep",
        Glob = "Glob",
    }
}

impl Tool {
    /// The MCP tool part of `mcp__<server>__<tool>`, if this is an MCP tool: the last `__`
    /// component, so a server name holding `__` cannot hide the tool.
    pub fn mcp_tool(&self) -> Option<&str> {
        let Tool::Other(name) = self else { return None };
        let rest = name.strip_prefix("mcp__")?;
        rest.rsplit_once("__").map(|(_, tool)| tool)
    }
}

string_enum! {
    /// A session's permission mode (`permission_mode`, `permissionMode`, `--permission-mode`).
    PermissionMode {
        Default = "default",
        AcceptEdits = "acceptEdits",
        Plan = "plan",
        BypassPermissions = "bypassPermissions",
        DontAsk = "dontAsk",
        Auto = "auto",
    }
}

impl HookEvent {
    /// True when the field was missing or empty.
    pub fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }
}

impl PermissionMode {
    /// True when the field was missing or empty.
    pub fn is_empty(&self) -> bool {
        self.as_str().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_keep_their_text_and_unknown_ones_are_other() {
        assert_eq!(HookEvent::parse("PreToolUse"), HookEvent::PreToolUse);
        assert_eq!(HookEvent::parse("Notification").as_str(), "Notification");
        assert!(HookEvent::default().is_empty());
        assert_eq!(Tool::parse("Bash"), Tool::Bash);
        assert_eq!(
            Tool::parse("mcp__fs__write_file").mcp_tool(),
            Some("write_file")
        );
        assert_eq!(Tool::parse("mcp__a__b__c").mcp_tool(), Some("c"));
        assert_eq!(Tool::Bash.mcp_tool(), None);
        assert_eq!(Tool::parse("mcp__x").mcp_tool(), None);
        let m: PermissionMode = serde_json::from_str("\"bypassPermissions\"").unwrap();
        assert_eq!(m, PermissionMode::BypassPermissions);
        assert_eq!(
            serde_json::to_string(&PermissionMode::parse("later")).unwrap(),
            "\"later\""
        );
    }
}
