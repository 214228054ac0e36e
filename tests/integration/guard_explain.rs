//! `guard explain`: a person sees how the guard reads a command and which rule it hits.

use crate::support::lifecycle::Repo;

fn explain(repo: &Repo, args: &[&str]) -> (i32, String, String) {
    let out = repo
        .tool("guard")
        .arg("explain")
        .args(args)
        .output()
        .expect("run guard explain");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn explain_shows_segments_wrappers_heredocs_and_the_rule() {
    let repo = Repo::new();
    let (code, out, err) = explain(&repo, &["sudo FOO=1 bash -c 'git add -A' && echo ok"]);
    assert_eq!(code, 1, "a block exits 1: {err}");
    assert!(out.contains("[git] [add] [-A]"), "{out}");
    assert!(out.contains("sudo"), "peeled wrappers are shown: {out}");
    assert!(out.contains("verdict: block (git.add-all)"), "{out}");

    let (code, out, _) = explain(&repo, &["cat > notes.md <<'EOF'\nrm -rf dist\nEOF"]);
    assert_eq!(code, 0, "an allow exits 0");
    assert!(out.contains("heredoc"), "{out}");
    assert!(
        out.contains("verdict: allow"),
        "inert prose never fires: {out}"
    );

    let (_, out, _) = explain(&repo, &["--cwd", "web", "rm -rf ../dist"]);
    assert!(out.contains("rm.app-output"), "cwd is applied: {out}");

    let (_, out, _) = explain(&repo, &["--powershell", "Stop-Process -Name electron"]);
    assert!(out.contains("app.restart"), "{out}");
}

#[test]
fn explain_names_the_mechanism_that_decided_each_segment() {
    let repo = Repo::new();
    let (code, out, _) = explain(&repo, &["f() { \"$@\"; }; f git add -A"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("mechanism: function call"), "{out}");
    assert!(
        out.contains(
            "mechanism: function body (function f), expansions resolved, positional parameters"
        ),
        "{out}"
    );
    let (code, out, _) = explain(&repo, &["git status"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("mechanism: plain command"), "{out}");
    // Defined, never called: nothing runs.
    let (code, out, _) = explain(&repo, &["f() { git add -A; }"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn explain_uses_the_repo_config_and_reports_a_bad_one() {
    let repo = Repo::new();
    repo.config(&serde_json::json!({"rules": {"disabled": ["git.add-all"]}}));
    let (code, out, _) = explain(&repo, &["git add ."]);
    assert_eq!(code, 0);
    assert!(
        out.contains("verdict: allow"),
        "a disabled rule does not fire: {out}"
    );
    repo.config(&serde_json::json!({"rules": {"outputDir": ["x"]}}));
    let (code, out, err) = explain(&repo, &["git add ."]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("outputDir"), "the bad key is named: {err}");
}

#[test]
fn explain_shows_each_write_target_and_the_lock_it_hits() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "other", &["src/api/**"], 1, 60_000);
    let (code, out, err) = explain(
        &repo,
        &["cd src && sed -i s/a/b/ api/x.ts; echo ok > \"$OUT/y\" ; rm docs/*.md"],
    );
    assert_eq!(
        code, 1,
        "the guard blocks the write, so explain does: {err}"
    );
    assert!(out.contains("write targets"), "{out}");
    assert!(out.contains("sed -i api/x.ts →"), "{out}");
    assert!(out.contains("src/api/x.ts"), "the cd is applied: {out}");
    assert!(out.contains("$OUT/y → not known"), "{out}");
    assert!(out.contains("docs/*.md (pattern): allowed"), "{out}");
    assert!(
        out.contains("block: session-lock: src/api/x.ts is owned by stream 'api'"),
        "the lock it hits: {out}"
    );
}

/// Issue 28: the writers the program table lacked show their files in `explain`.
#[test]
fn issue_28_explain_shows_the_files_downloads_archives_and_find_write() {
    let repo = Repo::new();
    repo.plan("api", 1, &["src/api/**"]);
    repo.lock("api", "other", &["src/api/**"], 1, 60_000);
    let (code, out, err) = explain(&repo, &["curl -sSLo src/api/x.ts https://example.com/x"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("curl -o src/api/x.ts →"), "{out}");
    let (code, out, _) = explain(&repo, &["find src -name '*.orig' -exec rm {} +"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("find -exec rm src →"), "{out}");
    assert!(out.contains("(and everything below it)"), "{out}");
    let (code, out, _) = explain(&repo, &["tar -xzf vendor.tgz -C /tmp/vendor"]);
    assert_eq!(code, 0, "extracting outside the repo is allowed: {out}");
    assert!(out.contains("tar -x /tmp/vendor →"), "{out}");
    let (code, out, _) = explain(&repo, &["curl -sSL https://example.com/src/api/x.ts"]);
    assert_eq!(code, 0, "a download to stdout writes nothing: {out}");
}

#[test]
fn issue_30_explain_exits_like_the_guard_and_prints_its_decision() {
    let repo = Repo::new();
    repo.plan("ui", 1, &["src/renderer/**"]);
    repo.lock("ui", "other", &["src/renderer/**"], 1, 60_000);
    let cmd = "echo hi > src/renderer/App.tsx";
    let (code, out, err) = explain(&repo, &[cmd]);
    assert_eq!(code, 1, "a block exits 1: {out}{err}");
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(
            "verdict: block (ownership): session-lock: src/renderer/App.tsx is owned by stream 'ui'"
        ),
        "the last line is the guard's decision: {out}"
    );
    assert!(!out.contains("verdict: allow"), "{out}");

    let (code, out, err) = explain(&repo, &["--json", cmd]);
    assert_eq!(code, 1, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).expect("one JSON document");
    assert_eq!(v["verdict"], "deny");
    assert_eq!(v["rule"], "ownership");
    assert_eq!(v["stream"], "ui");
    assert_eq!(v["path"], "src/renderer/App.tsx");
    assert!(
        v["reason"]
            .as_str()
            .unwrap()
            .contains("owned by stream 'ui'")
    );

    // The same command through the guard itself: the same refusal.
    let payload = repo.payload("me", "Bash", serde_json::json!({"command": cmd}));
    let guard = repo.guard(&payload);
    match crate::support::lifecycle::verdict(&guard) {
        Ok(crate::support::lifecycle::Verdict::Block(reason)) => {
            assert_eq!(reason, v["reason"].as_str().unwrap())
        }
        other => panic!("the guard did not block: {other:?}"),
    }

    // Nothing was written: no lock, no log line.
    assert!(
        repo.read("session-lock/blocks.jsonl")
            .is_some_and(|l| l.lines().count() == 1)
    );
    // An allowed command while a round runs goes under the write floor where there is one.
    let (code, out, _) = explain(&repo, &["--json", "echo hi > src/other.ts"]);
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let floored = v["floor"]["applies"] == true;
    assert_eq!(
        v["verdict"],
        if floored { "rewrite" } else { "allow" },
        "{v}"
    );
}
