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
    assert_eq!(code, 0, "{err}");
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
