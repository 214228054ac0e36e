//! One guard, three clients, through the real binary: a Codex CLI or Gemini CLI hook payload
//! (in the form the research recorded from the real CLIs) is read into the same call, decided
//! by the same checks as Claude Code's, and answered in the form that client honours: Codex the
//! same `permissionDecision` JSON as Claude Code, Gemini a top-level `decision` (it ignores the
//! other form) or, in the exit-2 form, the reason on stderr.
//!
//! Stream `api` (owning `src/api/**`) is held by another live session; the caller holds `ui`.

use crate::support::lifecycle::{Repo, run_with_stdin, sid, text};
use serde_json::{Value, json};
use std::process::Output;

const OWNED: &str = "src/api/x.ts is owned by stream 'api'";

/// A repo where `bob` holds `api` and `who` holds `ui` (claimed the Claude Code way).
fn round(who: &str) -> Repo {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("ui", 1, &["src/ui/**"]);
    repo.write("src/api/x.ts", "export const x = 1;\n");
    repo.write("src/ui/y.ts", "export const y = 1;\n");
    repo.lock("api", "bob", &["src/api/**"], 1, 1_000);
    repo.claim(who, "ui");
    repo
}

/// A Codex `PreToolUse` payload of session `who`, as Codex 0.171 writes it.
fn codex(repo: &Repo, who: &str, tool: &str, input: Value) -> Value {
    json!({
        "session_id": sid(who),
        "turn_id": "01a23ac9-e7d1-73c0-9ad5-539b5d638d2b",
        "transcript_path": null,
        "cwd": repo.path(""),
        "hook_event_name": "PreToolUse",
        "model": "gpt-5.5",
        "permission_mode": "bypassPermissions",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "call_1",
    })
}

/// A Gemini `BeforeTool` payload of session `who`, as Gemini 0.61 writes it.
fn gemini(repo: &Repo, who: &str, tool: &str, input: Value) -> Value {
    json!({
        "session_id": sid(who),
        "transcript_path": "",
        "cwd": repo.path(""),
        "hook_event_name": "BeforeTool",
        "timestamp": "2026-12-03T07:25:43.130Z",
        "tool_name": tool,
        "tool_input": input,
    })
}

fn guard(repo: &Repo, payload: &Value) -> Output {
    run_with_stdin(repo.tool("guard"), payload.to_string().as_bytes())
}

/// The reason of a Codex deny (Claude Code's JSON form, exit 0); `None` for an allow.
/// Anything else fails the test.
#[track_caller]
fn codex_answer(out: &Output) -> Option<String> {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    if out.stdout.is_empty() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let hso = &v["hookSpecificOutput"];
    assert_eq!(hso["hookEventName"], "PreToolUse", "{v}");
    // A notice alone, or the command approved into the kernel floor's wrapper: an allow.
    hso.get("permissionDecision")?;
    if hso["permissionDecision"] == "allow" {
        let cmd = hso["updatedInput"]["command"].as_str().unwrap_or_default();
        assert!(
            cmd.contains(" floor --root "),
            "an allow that is not the floor: {v}"
        );
        return None;
    }
    assert_eq!(hso["permissionDecision"], "deny", "{v}");
    Some(
        hso["permissionDecisionReason"]
            .as_str()
            .expect("a reason")
            .to_string(),
    )
}

/// The reason of a Gemini deny (top-level `decision`, exit 0); `None` for an allow.
#[track_caller]
fn gemini_answer(out: &Output) -> Option<String> {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    if out.stdout.is_empty() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    // A notice alone, or the command rewritten into the kernel floor's wrapper: an allow.
    if v.get("decision").is_none() {
        if let Some(cmd) = v["hookSpecificOutput"]["tool_input"]["command"].as_str() {
            assert!(
                cmd.contains(" floor --root "),
                "a rewrite that is not the floor: {v}"
            );
        }
        return None;
    }
    assert_eq!(v["decision"], "deny", "{v}");
    assert!(
        v.get("hookSpecificOutput").is_none(),
        "Gemini ignores hookSpecificOutput decisions: {v}"
    );
    Some(v["reason"].as_str().expect("a reason").to_string())
}

#[track_caller]
fn assert_denied(answer: Option<String>, why: &str) {
    let reason = answer.unwrap_or_else(|| panic!("allowed; expected a deny saying {why:?}"));
    assert!(reason.contains(why), "{reason}");
}

#[test]
fn codex_shell_patches_and_heredoc_patches_are_checked_like_claude_codes_writes() {
    let repo = round("carol");
    let patch = |text: &str| codex(&repo, "carol", "apply_patch", json!({"command": text}));
    let bash = |cmd: &str| codex(&repo, "carol", "Bash", json!({"command": cmd}));

    assert_denied(
        codex_answer(&guard(&repo, &bash("echo HIJACK > src/api/x.ts"))),
        OWNED,
    );
    let update = "*** Begin Patch\n*** Update File: src/api/x.ts\n@@\n-export const x = 1;\n+HIJACK\n*** End Patch\n";
    assert_denied(codex_answer(&guard(&repo, &patch(update))), OWNED);
    let move_in =
        "*** Begin Patch\n*** Update File: src/ui/y.ts\n*** Move to: src/api/y.ts\n*** End Patch\n";
    assert_denied(
        codex_answer(&guard(&repo, &patch(move_in))),
        "src/api/y.ts is owned by stream 'api'",
    );
    // Several files in one patch: the other stream's file anywhere in it refuses the whole.
    let mixed = "*** Begin Patch\n*** Add File: src/ui/n.ts\n+n\n*** Delete File: src/api/x.ts\n*** End Patch\n";
    assert_denied(codex_answer(&guard(&repo, &patch(mixed))), OWNED);
    let heredoc =
        "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: src/api/x.ts\n*** End Patch\nEOF";
    let reason = codex_answer(&guard(&repo, &bash(heredoc)));
    assert_denied(reason.clone(), OWNED);
    assert_denied(reason, "apply_patch writes it");
    assert_denied(
        codex_answer(&guard(
            &repo,
            &patch("*** Begin Patch\nrm -rf src\n*** End Patch\n"),
        )),
        "cannot be read",
    );
    assert_denied(
        codex_answer(&guard(
            &repo,
            &bash("apply_patch <<'EOF'\nnot a patch\nEOF"),
        )),
        "cannot be read",
    );

    // Its own stream's files, and files nobody owns, stay writable.
    let own = "*** Begin Patch\n*** Add File: src/ui/new.ts\n+export const n = 1;\n*** Update File: src/ui/y.ts\n@@\n-export const y = 1;\n+export const y = 2;\n*** End Patch\n";
    assert_eq!(codex_answer(&guard(&repo, &patch(own))), None);
    assert_eq!(
        codex_answer(&guard(&repo, &bash("echo ok > src/ui/y.ts"))),
        None
    );
    assert_eq!(
        codex_answer(&guard(
            &repo,
            &bash(
                "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes.md\n+n\n*** End Patch\nEOF"
            )
        )),
        None
    );
    // The guard decided; it wrote nothing itself.
    assert_eq!(
        repo.read("src/api/x.ts").as_deref(),
        Some("export const x = 1;\n")
    );
}

#[test]
fn gemini_shell_write_file_and_replace_are_refused_in_the_form_gemini_honours() {
    let repo = round("dave");
    let x = repo.path("src/api/x.ts");
    let shell = |cmd: &str, dir: Option<&str>| {
        let mut input = json!({"command": cmd, "description": "run it"});
        if let Some(d) = dir {
            input["dir_path"] = json!(d);
        }
        gemini(&repo, "dave", "run_shell_command", input)
    };
    assert_denied(
        gemini_answer(&guard(&repo, &shell("echo HIJACK > src/api/x.ts", None))),
        OWNED,
    );
    // `dir_path` is where the command runs: `x.ts` there is the other stream's file.
    assert_denied(
        gemini_answer(&guard(&repo, &shell("echo HIJACK > x.ts", Some("src/api")))),
        OWNED,
    );
    let write = gemini(
        &repo,
        "dave",
        "write_file",
        json!({"file_path": "src/api/x.ts", "content": "HIJACK\n"}),
    );
    assert_denied(gemini_answer(&guard(&repo, &write)), OWNED);
    let replace = gemini(
        &repo,
        "dave",
        "replace",
        json!({"file_path": x, "old_string": "export const x = 1;", "new_string": "HIJACK"}),
    );
    assert_denied(gemini_answer(&guard(&repo, &replace)), OWNED);
    let no_path = gemini(
        &repo,
        "dave",
        "write_file",
        json!({"file_path": 7, "content": ""}),
    );
    assert_denied(
        gemini_answer(&guard(&repo, &no_path)),
        "no file_path string",
    );

    for own in [
        gemini(
            &repo,
            "dave",
            "write_file",
            json!({"file_path": "src/ui/new.ts", "content": "n\n"}),
        ),
        gemini(
            &repo,
            "dave",
            "replace",
            json!({"file_path": "src/ui/y.ts", "old_string": "y = 1", "new_string": "y = 2"}),
        ),
        shell("echo ok > y.ts", Some("src/ui")),
        gemini(
            &repo,
            "dave",
            "read_file",
            json!({"file_path": "src/api/x.ts"}),
        ),
    ] {
        assert_eq!(gemini_answer(&guard(&repo, &own)), None, "{own}");
    }

    // Its own hook entries are part of the protocol: frozen while another stream is live.
    let unwire = gemini(
        &repo,
        "dave",
        "write_file",
        json!({"file_path": ".gemini/settings.json", "content": "{}"}),
    );
    assert_denied(
        gemini_answer(&guard(&repo, &unwire)),
        ".gemini/settings.json",
    );

    // The exit-2 form: the reason on stderr and exit 2, which Gemini honours too.
    repo.config(&json!({"decision": "exit2"}));
    let out = guard(&repo, &write);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains(OWNED), "{}", text(&out.stderr));
}

#[test]
fn a_plans_frontmatter_stays_fixed_under_codex_patches_and_gemini_replace() {
    let repo = round("erin");
    let plan = "plans/r-ms-01-ui/plan.md";
    let before = repo.read(plan).expect("the plan");
    let widen = format!(
        "*** Begin Patch\n*** Update File: {plan}\n@@\n-  - \"src/ui/**\"\n+  - \"**\"\n*** End Patch\n"
    );
    let patch = |text: &str| codex(&repo, "erin", "apply_patch", json!({"command": text}));
    assert_denied(
        codex_answer(&guard(&repo, &patch(&widen))),
        "plans' frontmatter",
    );
    let tick = format!(
        "*** Begin Patch\n*** Update File: {plan}\n@@\n # plan\n+- [x] started\n*** End Patch\n"
    );
    assert_eq!(codex_answer(&guard(&repo, &patch(&tick))), None);
    // A patch the guard cannot apply as written cannot be told harmless.
    let loose = format!(
        "*** Begin Patch\n*** Update File: {plan}\n@@\n-owns:  \n+owns: []\n*** End Patch\n"
    );
    assert_denied(
        codex_answer(&guard(&repo, &patch(&loose))),
        "plans' frontmatter",
    );
    let replace = |old: &str, new: &str| {
        gemini(
            &repo,
            "erin",
            "replace",
            json!({"file_path": plan, "old_string": old, "new_string": new}),
        )
    };
    assert_denied(
        gemini_answer(&guard(&repo, &replace("src/ui/**", "**"))),
        "plans' frontmatter",
    );
    assert_eq!(
        gemini_answer(&guard(&repo, &replace("# plan", "# plan\n- [x] started"))),
        None
    );
    assert_eq!(repo.read(plan).as_deref(), Some(before.as_str()));
}

#[test]
fn a_codex_or_gemini_session_claims_and_its_events_are_answered_in_its_form() {
    let repo = round("frank");
    // A claim from a Codex shell is recorded for that session like Claude Code's.
    repo.plan("docs", 1, &["docs/**"]);
    let out = guard(
        &repo,
        &codex(&repo, "gina", "Bash", json!({"command": "claim docs"})),
    );
    assert_eq!(codex_answer(&out), None, "{}", text(&out.stderr));
    let lock = repo.lock_json("docs").expect("the claim's lock");
    assert_eq!(lock["sessionId"], sid("gina"), "{lock}");
    // Then a Gemini session's write into that stream is refused, and Codex's own passes.
    let write = gemini(
        &repo,
        "hana",
        "write_file",
        json!({"file_path": "docs/a.md", "content": "x"}),
    );
    assert_denied(
        gemini_answer(&guard(&repo, &write)),
        "docs/a.md is owned by stream 'docs'",
    );
    let own = codex(
        &repo,
        "gina",
        "apply_patch",
        json!({"command": "*** Begin Patch\n*** Add File: docs/a.md\n+x\n*** End Patch\n"}),
    );
    assert_eq!(codex_answer(&guard(&repo, &own)), None);
    // `git checkout` is refused while another session works in the tree, for either client
    // (here no registry lists the caller, so the refusal says it cannot tell them apart).
    let checkout = |payload: Value| guard(&repo, &payload);
    assert_denied(
        codex_answer(&checkout(codex(
            &repo,
            "gina",
            "Bash",
            json!({"command": "git checkout -b side"}),
        ))),
        "git.head-change",
    );
    assert_denied(
        gemini_answer(&checkout(gemini(
            &repo,
            "hana",
            "run_shell_command",
            json!({"command": "git checkout -b side"}),
        ))),
        "git.head-change",
    );
    // Gemini's other events are answered silently (nothing to say) and never refuse.
    for event in ["AfterTool", "BeforeAgent", "AfterAgent", "SessionStart"] {
        let mut p = gemini(&repo, "hana", "write_file", json!({}));
        p["hook_event_name"] = json!(event);
        let out = guard(&repo, &p);
        assert_eq!(out.status.code(), Some(0), "{event}: {}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(!stdout.contains("deny"), "{event}: {stdout}");
    }
}
