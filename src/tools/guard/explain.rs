//! `guard explain`: how the guard reads a command (segments, peeled wrappers, heredocs) and the
//! rule it hits. Exits 0 when the verdict is allow and 1 when it is block, as `git diff
//! --exit-code` does, so scripts can test a command.

use crate::exit::{Code, fail};
use std::path::{Path, PathBuf};

pub struct Args<'a> {
    pub command: &'a str,
    pub cwd: Option<&'a Path>,
    pub powershell: bool,
    pub repo: Option<&'a Path>,
}

pub fn run(a: Args) -> anyhow::Result<Code> {
    let root = crate::tools::repo_root(a.repo)
        .or_else(|_| std::env::current_dir().map_err(anyhow::Error::from))?;
    let config =
        crate::config::Config::load(&root).map_err(|e| fail(Code::Usage, e.to_string()))?;
    let rules =
        crate::rules::compile(&config.rules).map_err(|e| fail(Code::Usage, e.to_string()))?;
    let cwd: PathBuf = match a.cwd {
        Some(c) if c.is_absolute() => c.to_path_buf(),
        Some(c) => root.join(c),
        None => root.clone(),
    };
    let (shell, dialect) = if a.powershell {
        (
            crate::rules::Shell::PowerShell,
            crate::shell::Dialect::PowerShell,
        )
    } else {
        (crate::rules::Shell::Bash, crate::shell::Dialect::Posix)
    };
    let ctx =
        crate::rules::CommandContext::new(cwd.display().to_string(), root.display().to_string())
            .with_shell(shell);
    print!("{}", crate::rules::explain(&rules, a.command, &ctx));
    print!(
        "{}",
        crate::hook::bash_writes::explain_command(&root, config.clone(), &ctx, a.command)
    );
    let hits = rules.check_analysis(&crate::shell::analyze(a.command, dialect), &ctx);
    // 1 is "block" here (documented in --help), not an unexpected failure.
    Ok(if hits.is_empty() {
        Code::Success
    } else {
        Code::Failure
    })
}
