//! One guard, three clients: a real Codex CLI session and a real Gemini CLI session, each beside
//! a real Claude Code session that holds another stream, in one repo wired by `guard install`.
//! Each tries to write the other stream's file by shell and by its own file tools (and
//! `apply_patch`, as a tool and from a shell command, for Codex): the file stays as it was and
//! the model receives the guard's reason. Its own stream's files stay writable. `git checkout`
//! is refused while the Claude Code session works in the tree. While it runs, the session is
//! registered (its client process, found over the parent chain), so `status`, the registry and
//! `send-message list` see it; once it ended, its stream shows orphaned.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::claude::{Cli, Finished, Session, require_claude};
use crate::support::codex::require_codex;
use crate::support::e2e::{
    API_X, Bed, Gate, WAIT, assert_blocked, assert_ran, bash, call, explain, output_text, refused,
    result_of,
};
use crate::support::fake_model::{FakeModel, Turn, Wire};
use crate::support::gemini::require_gemini;

const OWNED: &str = "src/api/x.ts is owned by stream 'api'";

/// A Claude Code session that claims `api` and then waits at `gate`, live, holding it.
#[track_caller]
fn holder(bed: &Bed, gate: &Gate) -> (Session, FakeModel) {
    let model = FakeModel::start(vec![
        bash("claim api"),
        bash(&gate.wait_command()),
        Turn::text("done"),
    ]);
    let session = bed.session(&model, "A").spawn();
    gate.wait_reached();
    (session, model)
}

/// The session id the running CLI announced first (Codex's thread, Gemini's init).
#[track_caller]
fn announced_id(session: &Session) -> String {
    let event = session
        .wait_for_event(WAIT, |e| {
            e["type"] == "thread.started" || (e["type"] == "init" && e["session_id"].is_string())
        })
        .expect("the session announces its id");
    event["thread_id"]
        .as_str()
        .or_else(|| event["session_id"].as_str())
        .expect("an id")
        .to_string()
}

/// `/proc/<pid>/comm`.
fn program_of(pid: u64) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The session, once it stands at `gate`; when it never gets there, the test fails with what
/// the session did instead.
#[track_caller]
fn reached_or_explain(gate: &Gate, session: Session, model: &FakeModel) -> Session {
    if gate.reached() {
        return session;
    }
    let run = session.wait();
    panic!(
        "{}",
        explain(&run, model, "the session never reached its gate")
    );
}

/// While session `id` (a `cli` session of the bed, pid `spawned`) waits at its gate: the
/// guard registered it with its client process (below the spawned one, named `program`), and
/// `status` and `send-message list` see it working on `ui`.
#[track_caller]
fn assert_seen_while_running(bed: &Bed, id: &str, spawned: u32, program: &str) {
    let entry = bed
        .registry()
        .into_iter()
        .find(|e| e["sessionId"] == id)
        .unwrap_or_else(|| panic!("no registry entry for {id}: {:?}", bed.registry()));
    let pid = entry["pid"].as_u64().expect("the client's pid");
    assert!(
        session_lock::liveness::descends_from(pid as u32, spawned),
        "{entry}: the client runs below the spawned CLI {spawned}"
    );
    assert!(
        program_of(pid).starts_with(program),
        "{entry}: {}",
        program_of(pid)
    );
    assert_eq!(entry["cwd"], json!(bed.repo.path()), "{entry}");
    let row = bed.status_row("ui");
    assert_eq!(row["sessionId"], id, "{row}");
    assert_eq!(row["orphaned"], false, "{row}");
    let out = bed
        .tool("send-message")
        .args(["list", "--json"])
        // As a person in the repo: the workspace is the caller's folder.
        .current_dir(bed.repo.path())
        .output()
        .expect("run send-message list");
    assert!(out.status.success(), "{}", output_text(&out));
    let listed: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        listed.to_string().contains(id),
        "send-message list shows {id}: {listed}"
    );
}

/// After the run: the other stream's file as it was, the branch not made, the session's own
/// files written; its stream orphaned now that its client is gone.
#[track_caller]
fn assert_outcome(bed: &Bed, own: &[(&str, &str)]) {
    assert_eq!(bed.repo.read("src/api/x.ts").as_deref(), Some(API_X));
    assert!(bed.repo.exists("src/api/x.ts"));
    let branches = bed.repo.git(&["branch", "--list", "side"]);
    assert!(
        String::from_utf8_lossy(&branches.stdout).trim().is_empty(),
        "git checkout -b side ran"
    );
    for (rel, text) in own {
        assert_eq!(bed.repo.read(rel).as_deref(), Some(*text), "{rel}");
    }
    assert_eq!(bed.status_row("ui")["orphaned"], true);
}

/// The model saw its `git checkout -b side` refused by the guard's HEAD rule, which names the
/// Claude Code session working in the tree.
#[track_caller]
fn assert_head_change_blocked(run: &Finished, model: &FakeModel) {
    let r = result_of(run, model, "checkout");
    assert!(
        refused(run, &r)
            && r.content.contains("git.head-change: ")
            && r.content.contains("Other live sessions in this tree")
            && r.content.contains("(claude)"),
        "{}",
        explain(run, model, "expected checkout blocked by git.head-change")
    );
}

fn exec(id: &str, cmd: &str) -> Turn {
    call(id, "exec_command", json!({"cmd": cmd}))
}

fn patch(id: &str, text: &str) -> Turn {
    call(id, "apply_patch", json!(text))
}

#[test]
fn a_codex_session_is_guarded_by_shell_patch_and_git_beside_claude_code() {
    let claude = require_claude!();
    let codex = require_codex!();
    let bed = Bed::wired_for(claude, json!({}), &["codex"]);
    let gate_a = bed.gate("a");
    let (a, model_a) = holder(&bed, &gate_a);
    let gate_b = bed.gate("b");
    let update_x = "*** Begin Patch\n*** Update File: src/api/x.ts\n@@\n-export const x = 1;\n+HIJACK\n*** End Patch\n";
    let model = FakeModel::start_as(
        Wire::Responses,
        vec![
            exec("claim", "claim ui"),
            exec("shell-other", "echo HIJACK > src/api/x.ts"),
            patch("patch-other", update_x),
            patch(
                "move-other",
                // Codex refuses a move without a hunk itself, before any hook.
                "*** Begin Patch\n*** Update File: src/ui/y.ts\n*** Move to: src/api/y.ts\n@@\n-export const y = 1;\n+export const y = 3;\n*** End Patch\n",
            ),
            exec(
                "heredoc-other",
                "apply_patch <<'EOF'\n*** Begin Patch\n*** Delete File: src/api/x.ts\n*** End Patch\nEOF",
            ),
            patch("bad-patch", "*** Begin Patch\nrm -rf src\n*** End Patch\n"),
            patch(
                "patch-own",
                "*** Begin Patch\n*** Add File: src/ui/new.ts\n+export const n = 1;\n*** End Patch\n",
            ),
            exec("shell-own", "echo 'export const y = 2;' > src/ui/y.ts"),
            exec("checkout", "git checkout -b side"),
            call(
                "wait",
                "exec_command",
                json!({"cmd": gate_b.wait_command(), "yield_time_ms": 30000}),
            ),
            Turn::text("done"),
        ],
    );
    let b = bed.cli_session(&codex, &model, "B").spawn();
    let id = announced_id(&b);
    let b = reached_or_explain(&gate_b, b, &model);
    assert_seen_while_running(&bed, &id, b.pid(), "codex");
    gate_b.open();
    let run = b.wait();
    run.assert_success();

    assert_ran(&run, &model, "claim");
    for blocked in ["shell-other", "patch-other", "move-other", "heredoc-other"] {
        assert_blocked(&run, &model, blocked, "is owned by stream 'api'");
    }
    assert_blocked(&run, &model, "patch-other", OWNED);
    // Codex checks a patch's envelope itself before it asks any hook: the model hears Codex's
    // refusal (the guard's own, for an envelope Codex takes and it cannot read, is in
    // `guard_clients`), and nothing ran.
    let bad = result_of(&run, &model, "bad-patch");
    assert!(
        bad.content.contains("not a valid hunk header"),
        "{}",
        explain(&run, &model, "Codex refused the bad patch")
    );
    assert_ran(&run, &model, "patch-own");
    assert_ran(&run, &model, "shell-own");
    assert_head_change_blocked(&run, &model);
    assert!(
        bed.repo.exists("src/ui/y.ts") && !bed.repo.exists("src/api/y.ts"),
        "{}",
        explain(&run, &model, "the move ran")
    );
    let lock = bed.lock("ui").expect("the claim's lock");
    assert_eq!(lock["sessionId"], id.as_str(), "{lock}");
    let client = lock["clientPid"]
        .as_u64()
        .expect("the claim names its client") as u32;
    assert!(
        !session_lock::liveness::is_alive(client, lock["clientStart"].as_str()),
        "{lock}: the client ended with the session"
    );
    assert_outcome(
        &bed,
        &[
            ("src/ui/new.ts", "export const n = 1;\n"),
            ("src/ui/y.ts", "export const y = 2;\n"),
        ],
    );
    gate_a.open();
    a.wait().assert_success();
    drop(model_a);
}

fn shell(id: &str, command: &str, dir: Option<&str>) -> Turn {
    let mut input = json!({"command": command, "description": "run it"});
    if let Some(dir) = dir {
        input["dir_path"] = json!(dir);
    }
    call(id, "run_shell_command", input)
}

fn gemini_session(bed: &Bed, gemini: &Cli, model: &FakeModel) -> Session {
    bed.cli_session(gemini, model, "B")
        .timeout(Duration::from_secs(180))
        .spawn()
}

#[test]
fn a_gemini_session_is_guarded_by_shell_write_file_replace_and_git_beside_claude_code() {
    let claude = require_claude!();
    let gemini = require_gemini!();
    let bed = Bed::wired_for(claude, json!({}), &["gemini"]);
    let gate_a = bed.gate("a");
    let (a, model_a) = holder(&bed, &gate_a);
    let gate_b = bed.gate("b");
    let x = bed.repo.join("src/api/x.ts");
    let model = FakeModel::start_as(
        Wire::Gemini,
        vec![
            shell("claim", "claim ui", None),
            shell("shell-other", "echo HIJACK > src/api/x.ts", None),
            shell("dir-other", "echo HIJACK > x.ts", Some("src/api")),
            call(
                "write-other",
                "write_file",
                json!({"file_path": "src/api/x.ts", "content": "HIJACK\n"}),
            ),
            call(
                "replace-other",
                "replace",
                json!({"file_path": x, "old_string": "export const x = 1;", "new_string": "HIJACK",
                       "instruction": "overwrite"}),
            ),
            call(
                "write-own",
                "write_file",
                json!({"file_path": "src/ui/new.ts", "content": "export const n = 1;\n"}),
            ),
            call(
                "replace-own",
                "replace",
                json!({"file_path": "src/ui/y.ts", "old_string": "y = 1", "new_string": "y = 2",
                       "instruction": "bump"}),
            ),
            shell("checkout", "git checkout -b side", None),
            shell("wait", &gate_b.wait_command_plain(), None),
            Turn::text("done"),
        ],
    );
    let b = gemini_session(&bed, &gemini, &model);
    let id = announced_id(&b);
    let b = reached_or_explain(&gate_b, b, &model);
    assert_seen_while_running(&bed, &id, b.pid(), "node");
    gate_b.open();
    let run = b.wait();
    run.assert_success();

    assert_ran(&run, &model, "claim");
    for blocked in ["shell-other", "dir-other", "write-other", "replace-other"] {
        assert_blocked(&run, &model, blocked, OWNED);
    }
    assert_ran(&run, &model, "write-own");
    assert_ran(&run, &model, "replace-own");
    assert_head_change_blocked(&run, &model);
    let lock = bed.lock("ui").expect("the claim's lock");
    assert_eq!(lock["sessionId"], id.as_str(), "{lock}");
    assert_outcome(
        &bed,
        &[
            ("src/ui/new.ts", "export const n = 1;\n"),
            ("src/ui/y.ts", "export const y = 2;\n"),
        ],
    );
    gate_a.open();
    a.wait().assert_success();
    drop(model_a);
}

/// The repo's plan frontmatter stays fixed under Gemini's `replace` and Codex's patches too,
/// while their checklists stay editable.
#[test]
fn plans_frontmatter_is_fixed_for_codex_patches_while_another_stream_is_live() {
    let claude = require_claude!();
    let codex = require_codex!();
    let bed = Bed::wired_for(claude, json!({}), &["codex"]);
    let gate_a = bed.gate("a");
    let (a, model_a) = holder(&bed, &gate_a);
    let plan = "plans/r-ms-01-ui/plan.md";
    let widen = format!(
        "*** Begin Patch\n*** Update File: {plan}\n@@\n-  - src/ui/**\n+  - '**'\n*** End Patch\n"
    );
    let tick = format!(
        "*** Begin Patch\n*** Update File: {plan}\n@@\n # The ui stream\n+- [x] started\n*** End Patch\n"
    );
    let model = FakeModel::start_as(
        Wire::Responses,
        vec![
            exec("claim", "claim ui"),
            patch("widen", &widen),
            patch("tick", &tick),
            Turn::text("done"),
        ],
    );
    let run = bed.cli_session(&codex, &model, "B").run();
    run.assert_success();
    assert_blocked(&run, &model, "widen", "plans' frontmatter");
    assert_ran(&run, &model, "tick");
    let text = bed.repo.read(plan).unwrap_or_default();
    assert!(
        text.contains("  - src/ui/**") && text.contains("- [x] started"),
        "{text}"
    );
    gate_a.open();
    a.wait().assert_success();
    drop(model_a);
}
