//! The floor stage of the hook, through the real `guard` binary: an allowed Bash call while a
//! round runs comes back as `updatedInput` that runs it under the write floor (no permission
//! decision, the call's other fields kept); run the way the client's Bash tool runs it, a write
//! the analysis misses fails and ordinary work does not; and `guard explain` and `guard doctor`
//! show the floor.

use crate::floor::bubblewrap_here;
use crate::support::lifecycle::{Repo, Verdict, floored_command, text, verdict};
use serde_json::{Value, json};
use std::process::{Command, Output, Stdio};

const API: &str = "export const api = 1;\n";

/// Session `other` holds `api` (src/api/**), session `me` holds `web` (src/web/**).
fn round() -> Repo {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.plan("web", 1, &["src/web/**"]);
    repo.write("src/api/x.ts", API);
    repo.write("src/web/app.ts", "export const web = 1;\n");
    repo.lock("api", "other", &["src/api/**"], 1, 1_000);
    repo.lock("web", "me", &["src/web/**"], 1, 1_000);
    repo
}

/// The guard's answer to `me` running `input` with the Bash tool, in permission mode
/// `bypassPermissions` (where `"auto"` floors).
fn guard_bash(repo: &Repo, input: Value) -> Output {
    let mut payload = repo.payload("me", "Bash", input);
    payload["permission_mode"] = json!("bypassPermissions");
    repo.guard(&payload)
}

/// The rewritten call's `updatedInput`, asserting it is the floor's and carries no decision.
fn rewritten(repo: &Repo, command: &str) -> String {
    let out = guard_bash(repo, json!({"command": command}));
    assert_eq!(verdict(&out), Ok(Verdict::Allow), "{}", text(&out.stdout));
    floored_command(&out).unwrap_or_else(|| panic!("not floored: {}", text(&out.stdout)))
}

/// `command` as the client's Bash tool runs it: eval'd in a bash from the cwd, then `pwd -P`.
/// Returns the output and the cwd the next command would start in.
fn as_client(repo: &Repo, command: &str) -> (Output, String) {
    let cwd_file = repo.base.join("client-cwd");
    let _ = std::fs::remove_file(&cwd_file);
    let outer = format!(
        "eval {} && pwd -P >| {}",
        session_lock::shell::word::quote_posix(command),
        session_lock::shell::word::quote_posix(&cwd_file.to_string_lossy()),
    );
    let out = repo
        .scrubbed(Command::new("/bin/bash"))
        .args(["-c", &outer])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let cwd = std::fs::read_to_string(&cwd_file).unwrap_or_default();
    (out, cwd.trim_end().to_string())
}

fn shown(o: &Output) -> String {
    format!(
        "rc {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    )
}

#[test]
fn an_allowed_bash_call_is_rewritten_into_the_floor_keeping_its_other_fields() {
    let repo = round();
    let input = json!({"command": "ls src", "description": "list", "timeout": 5000, "run_in_background": false});
    let out = guard_bash(&repo, input.clone());
    assert!(out.status.success(), "{}", shown(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    let hso = &v["hookSpecificOutput"];
    assert_eq!(hso["hookEventName"], "PreToolUse");
    assert!(
        hso.get("permissionDecision").is_none(),
        "a rewrite leaves the client's permission flow in place: {v}"
    );
    let updated = &hso["updatedInput"];
    for key in ["description", "timeout", "run_in_background"] {
        assert_eq!(updated[key], input[key], "{key} is kept: {v}");
    }
    let command = updated["command"].as_str().unwrap();
    let root = repo.root.canonicalize().unwrap();
    assert!(
        command.contains(&format!("stream:api={}/src/api", root.display()))
            && command.contains(&format!("protocol={}/session-lock", root.display()))
            && command.contains("-- 'ls src'"),
        "{command}"
    );
    assert!(
        !command.contains("stream:web"),
        "the caller's own stream is not denied: {command}"
    );
    assert!(
        !command.contains("rm ") && !command.contains("bash -c"),
        "nothing the client's own checks refuse: {command}"
    );
}

#[test]
fn a_write_the_analysis_misses_fails_under_the_rewritten_command() {
    if !bubblewrap_here() {
        return;
    }
    let repo = round();
    for trick in [
        // Names built at run time: the analysis cannot know the target.
        "python3 -c \"import os; p=os.path.join('src','a'+'pi','x.ts'); open(p,'a').write('pwn')\"",
        "perl -e 'open(F, \">>\", \"src/\" . \"a\" . \"pi/x.ts\") or die \"$!\\n\"; print F \"pwn\"'",
        "printf 'echo pwn >> src/a%si/x.ts\\n' p > \"$TMPDIR/w.sh\"; sh \"$TMPDIR/w.sh\"",
        "(echo pwn >> \"src/$(echo YXBp | base64 -d)/x.ts\") & wait $!",
    ] {
        let trick = trick.replace("$TMPDIR", &repo.base.display().to_string());
        let command = rewritten(&repo, &trick);
        let (out, _) = as_client(&repo, &command);
        assert_eq!(
            repo.read("src/api/x.ts").as_deref(),
            Some(API),
            "{trick}\n{}",
            shown(&out)
        );
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{trick}: {}", shown(&out));
        assert!(
            err.contains("Read-only file system")
                && err.contains("session-lock: this command ran under the write floor")
                && err.contains("src/api (owned by stream 'api')"),
            "{trick}: the failure names the floor and the owner: {err}"
        );
    }
    // The protocol's state too, by a spelling the analysis does not read.
    let command = rewritten(
        &repo,
        "python3 -c \"open('session-lock/'+'api'+'.lock','w').write('{}')\"",
    );
    let (out, _) = as_client(&repo, &command);
    assert!(!out.status.success(), "{}", shown(&out));
    assert!(
        repo.lock_json("api").is_some_and(|l| l["sessionId"] != ""),
        "the other stream's lock is intact"
    );
}

#[test]
fn ordinary_commands_still_work_through_the_rewritten_command() {
    if !bubblewrap_here() {
        return;
    }
    let repo = round();
    let command = rewritten(
        &repo,
        "echo ok >> src/web/app.ts && echo n > NOTES.md && mkdir -p src/lib && echo l > src/lib/new.ts && cat src/api/x.ts && cd src/web",
    );
    let (out, cwd) = as_client(&repo, &command);
    assert!(out.status.success(), "{}", shown(&out));
    assert_eq!(
        text(&out.stdout),
        API,
        "reading another stream's file is fine"
    );
    assert!(
        out.stderr.is_empty(),
        "a command that works hears nothing: {}",
        shown(&out)
    );
    assert_eq!(
        repo.read("src/web/app.ts").as_deref(),
        Some("export const web = 1;\nok\n")
    );
    assert!(repo.exists("NOTES.md") && repo.exists("src/lib/new.ts"));
    assert_eq!(
        cwd,
        repo.path("src/web")
            .canonicalize()
            .unwrap()
            .display()
            .to_string(),
        "the cd carries over to the next command"
    );
    let command = rewritten(&repo, "echo \"it's\" | tr a-z A-Z; exit 4");
    let (out, _) = as_client(&repo, &command);
    assert_eq!(out.status.code(), Some(4), "{}", shown(&out));
    assert_eq!(text(&out.stdout), "IT'S\n");
}

#[test]
fn nothing_is_rewritten_outside_a_round_for_the_suite_s_plain_calls_or_when_off() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    let out = guard_bash(&repo, json!({"command": "ls"}));
    assert!(out.stdout.is_empty(), "no live lock: {}", shown(&out));
    let repo = round();
    let out = guard_bash(&repo, json!({"command": "claim web"}));
    assert!(
        floored_command(&out).is_none(),
        "a plain call of a suite command writes session-lock/ itself: {}",
        shown(&out)
    );
    let out = guard_bash(&repo, json!({"command": "true && claim web"}));
    assert!(
        floored_command(&out).is_some(),
        "any other command that runs one stays inside: {}",
        shown(&out)
    );
    repo.config(&json!({"floor": "off"}));
    let out = guard_bash(&repo, json!({"command": "ls"}));
    assert_eq!(verdict(&out), Ok(Verdict::Allow));
    assert!(out.stdout.is_empty(), "floor off: {}", shown(&out));
}

#[test]
fn where_the_client_asks_permissions_only_required_floors() {
    let repo = round();
    // Default mode: the client would match its rules against the rewrite; analysis alone, said once.
    let out = repo.bash("me", "ls");
    assert_eq!(verdict(&out), Ok(Verdict::Allow));
    assert!(floored_command(&out).is_none(), "{}", shown(&out));
    let v: Value = serde_json::from_slice(&out.stdout).expect("a notice");
    assert!(
        v["systemMessage"].as_str().is_some_and(
            |m| m.contains("without the kernel write floor in permission mode 'default'")
        ),
        "{v}"
    );
    let out = repo.bash("me", "ls");
    assert!(
        out.stdout.is_empty(),
        "said once per session: {}",
        shown(&out)
    );
    repo.config(&json!({"floor": "required"}));
    let out = repo.bash("me", "ls");
    assert!(
        floored_command(&out).is_some() || !bubblewrap_here(),
        "required floors in every mode: {}",
        shown(&out)
    );
}

#[test]
fn explain_and_doctor_show_the_floor_and_what_it_denies() {
    let repo = round();
    let trick = "python3 -c \"open('src/'+'api/x.ts','a')\"";
    let out = repo
        .tool("guard")
        .args(["explain", trick])
        .output()
        .unwrap();
    let said = text(&out.stdout);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(said.contains("floor (auto): mechanism here: "), "{said}");
    if bubblewrap_here() {
        assert!(
            said.contains("  the command runs under it\n")
                && said.contains("    src/api (owned by stream 'api')\n")
                && said.contains("    session-lock (part of the session-lock protocol)\n")
                && said.ends_with("verdict: allow, under the write floor\n"),
            "{said}"
        );
    }
    let out = repo
        .tool("guard")
        .args(["explain", "--json", trick])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["floor"]["mode"], "auto", "{v}");
    if bubblewrap_here() {
        assert_eq!(v["verdict"], "rewrite", "{v}");
        assert_eq!(v["floor"]["mechanism"], "bubblewrap", "{v}");
        let owners: Vec<&str> = v["floor"]["denied"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["owner"].as_str())
            .collect();
        assert!(
            owners.contains(&"stream:api") && owners.contains(&"protocol"),
            "{v}"
        );
    }
    let out = repo
        .tool("guard")
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let v: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", shown(&out)));
    let row = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "write floor")
        .cloned()
        .unwrap_or_else(|| panic!("no write floor row: {v}"));
    if bubblewrap_here() {
        assert_eq!(row["level"], "ok", "{row}");
        let detail = row["detail"].as_str().unwrap();
        assert!(
            detail.starts_with("bubblewrap; now a shell command runs under it, denying ")
                && detail.contains("src/api"),
            "{row}"
        );
    }
    // Required, where the machine has a floor: nothing changes; off: said.
    repo.config(&json!({"floor": "off"}));
    let out = repo
        .tool("guard")
        .args(["doctor", "--json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let row = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "write floor")
        .cloned()
        .unwrap();
    assert!(
        row["detail"]
            .as_str()
            .unwrap()
            .starts_with("off in session-lock/config.json"),
        "{row}"
    );
}

/// Issue 26: the denied set is kept between calls, and a lock claimed or released, or a kept
/// file gone corrupt, gives the set the lock files give.
#[test]
fn the_kept_denied_set_follows_the_locks_and_survives_a_corrupt_file() {
    let repo = round();
    let root = repo.root.canonicalize().unwrap();
    let api = format!("stream:api={}/src/api", root.display());
    let lib = format!("stream:lib={}/lib", root.display());
    let first = rewritten(&repo, "ls src");
    assert!(first.contains(&api) && !first.contains(&lib), "{first}");
    let kept: Vec<_> = std::fs::read_dir(repo.root.join("session-lock/.index"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("floor-")
        })
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        rewritten(&repo, "ls src"),
        first,
        "the kept set answers the same"
    );

    repo.plan("lib", 1, &["lib/**"]);
    repo.write("lib/l.ts", API);
    repo.lock("lib", "other", &["lib/**"], 1, 1_000);
    let claimed = rewritten(&repo, "ls src");
    assert!(
        claimed.contains(&api) && claimed.contains(&lib),
        "{claimed}"
    );

    std::fs::remove_file(repo.root.join("session-lock/api.lock")).unwrap();
    let released = rewritten(&repo, "ls src");
    assert!(
        !released.contains(&api) && released.contains(&lib),
        "{released}"
    );

    std::fs::write(&kept[0], "{\"version\":1,\"key\":").unwrap();
    assert_eq!(
        rewritten(&repo, "ls src"),
        released,
        "a corrupt file is not trusted"
    );
    assert!(
        serde_json::from_slice::<Value>(&std::fs::read(&kept[0]).unwrap()).is_ok(),
        "and is written again"
    );
}
