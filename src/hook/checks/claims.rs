//! Claims and releases a command runs, at the head of a segment once wrappers are peeled.
//!
//! Only the hook receives the real `session_id`, so the hook (not `claim`) writes the lock when
//! it sees a Bash call that runs `claim <stream>`; `claim` then reads it back. A `release` may
//! only be run by the session holding the stream.

use crate::hook::Payload;
use crate::hook::context::{Call, Ctx, Env, describe};
use crate::hook::decision::{Checked, Refusal, Rule};
use crate::hook::session::STATE_LOCK_WAIT;
use crate::state::{Held, LockRecord};
use crate::{liveness, plans, time};

/// Records each claim the command runs, and refuses a release of another session's stream.
pub fn check(ctx: &Ctx, call: &Call) -> Checked {
    let Some(command) = &call.command else {
        return Ok(());
    };
    let segments = command.analysis.segments.iter().map(|s| s.argv.as_slice());
    for sc in stream_commands(segments) {
        match sc {
            StreamCommand::Claim(w) => claim(ctx, call.p, call.env, &w)?,
            StreamCommand::Release(w) => check_release(ctx, call.p, &w)?,
            StreamCommand::Bare(_) => {}
        }
    }
    Ok(())
}

/// One word of a command, as the shell analysis gives it.
pub use crate::shell::Word;

/// A claim or release the command runs, found at the head of a segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamCommand {
    Claim(Word),
    Release(Word),
    /// The tool was named with no stream.
    Bare(&'static str),
}

/// Records a claim, or explains why it cannot be taken.
pub fn claim(ctx: &Ctx, p: &Payload, env: &Env, stream: &Word) -> Checked {
    record_claim(ctx, p, env, stream).map_err(|why| refusal(Rule::Claim, stream, why))
}

/// A refusal about the stream `stream` names (when it names one literally).
fn refusal(rule: Rule, stream: &Word, why: String) -> Refusal {
    let r = Refusal::new(rule, why);
    if !stream.is_written() {
        r
    } else {
        r.with_stream(stream.text.clone())
    }
}

/// `claim $S` as written, or `claim` with the value an expansion resolved to
/// (`claim` ('api')), so the model is not told it wrote `claim api`.
fn as_written(tool: &str, stream: &Word) -> String {
    if stream.dynamic {
        format!("`{tool} {}`", stream.text)
    } else {
        format!("`{tool}` ('{}')", stream.text)
    }
}

fn record_claim(ctx: &Ctx, p: &Payload, env: &Env, stream: &Word) -> Result<(), String> {
    if !stream.is_written() {
        return Err(format!(
            "session-lock: {} names its stream through an expansion; write the stream name literally (claim <stream>) so the claim can be recorded",
            as_written("claim", stream)
        ));
    }
    let name = stream.text.as_str();
    if let Some(problem) = plans::stream_name_problem(name) {
        return Err(format!(
            "session-lock: '{name}' is not a stream name ({problem})"
        ));
    }
    if p.session_id.is_empty() && !ctx.dry {
        return Err(format!(
            "session-lock: the hook payload carries no session_id, so the claim of '{name}' cannot be recorded (a lock without its session protects nothing)"
        ));
    }
    // Decided under the state lock, the fast path too: a lock read before it could be one
    // another claim is replacing (a released stream's done marker already gone, the new lock
    // not yet written), and a re-claim passed on it would make two winners.
    // `guard explain` reads the lock as it stands, without the state lock, and writes nothing.
    let _guard = if ctx.dry {
        None
    } else {
        Some(
            ctx.layout
                .lock_state(STATE_LOCK_WAIT)
                .map_err(|e| {
                    format!(
                        "session-lock: cannot lock {}: {e}",
                        ctx.layout.dir.display()
                    )
                })?
                .ok_or_else(|| {
                    "session-lock: the state folder stayed locked; try the claim again".to_string()
                })?,
        )
    };
    if unchanged_re_claim(ctx, p, env, name) {
        return Ok(());
    }
    let plan = &claimed_plan(ctx, name)?;
    let existing = ctx.layout.read_lock(name).map_err(|bad| {
        format!("session-lock: cannot claim '{name}': {bad}; fix or delete that file")
    })?;
    if existing
        .as_ref()
        .is_none_or(|h| h.record.session_id != p.session_id)
        && let Some(why) = late_protected_plan(ctx, p, plan)
    {
        return Err(why);
    }
    let mut record = record_for(ctx, p, env, plan);
    if let Some(held) = &existing {
        if writes_nothing(ctx, p, held, &record) {
            return Ok(());
        }
        let mine = held.record.session_id == p.session_id;
        if !mine && held.is_live(ctx.now, ctx.stale_ms()) {
            return Err(format!(
                "session-lock: stream '{name}' is held by another session ({}). Pick another stream, or wait for it: wait-milestone {name} --stream <yours>",
                describe(held, ctx.now)
            ));
        }
        if mine && !held.done {
            record.claimed_at = held.record.claimed_at.clone();
            if record.owns != held.record.owns
                && let Some(other) = others_live(ctx, &p.session_id)
            {
                return Err(format!(
                    "session-lock: the plan of '{name}' now owns [{}], not the [{}] it was claimed with; a stream's owns cannot change while another stream is live ('{other}')",
                    record.owns.join(", "),
                    held.record.owns.join(", ")
                ));
            }
        }
        if !mine && !held.done {
            record.taken_from = Some(held.record.session_id.clone());
        }
    }
    if ctx.dry {
        return Ok(());
    }
    let index = crate::round_index::Index::before_write(&ctx.layout);
    let write = match existing {
        None => ctx.layout.create_lock(&record).and_then(|created| {
            if created {
                Ok(())
            } else {
                Err(std::io::Error::other(
                    "another claim was written at the same instant",
                ))
            }
        }),
        Some(held) => {
            if held.done {
                let _ = std::fs::remove_file(ctx.layout.done_path(name));
                let _ = std::fs::remove_file(ctx.layout.milestone_done(held.record.milestone));
            }
            ctx.layout.write_lock(&record)
        }
    };
    crate::round_index::Index::after_write(&ctx.layout, index, &[name]);
    write.map_err(|e| format!("session-lock: could not record the claim of '{name}': {e}"))
}

/// The plan declaring `name`, read through the plan cache: its own line, and of the others only
/// their stat and the stream their line names (any plan may declare any stream, and a stream
/// declared twice is neither's). When no one plan declares it, every plan is loaded for the
/// message, which lists the streams and the broken plans.
fn claimed_plan(ctx: &Ctx, name: &str) -> Result<plans::Stream, String> {
    let (root, glob) = (&ctx.root, &ctx.config.plan_glob);
    let cannot = |e: plans::PlanError| format!("session-lock: cannot claim '{name}': {e}");
    if let Some(plan) =
        crate::plan_cache::declaring(root, glob, &ctx.layout, name).map_err(cannot)?
    {
        return Ok(plan);
    }
    let (mut streams, broken) =
        crate::plan_cache::load_each(root, glob, &ctx.layout).map_err(cannot)?;
    match streams.iter().position(|s| s.name == name) {
        Some(i) => Ok(streams.swap_remove(i)),
        None => Err(format!(
            "session-lock: {} (plans: {glob})",
            plans::undeclared(name, &streams, &broken, "; "),
        )),
    }
}

/// The lock a claim of `plan` by this call's session records (claimed and beating now).
fn record_for(ctx: &Ctx, p: &Payload, env: &Env, plan: &plans::Stream) -> LockRecord {
    let now_iso = time::iso(ctx.now);
    LockRecord {
        stream: plan.name.clone(),
        session_id: p.session_id.clone(),
        owns: plan.owns.clone(),
        plan: plan.plan.clone(),
        milestone: plan.milestone,
        claimed_at: now_iso.clone(),
        heartbeat_at: now_iso,
        round: ctx.layout.round(),
        cwd: p.cwd.clone(),
        client_pid: env.client_pid,
        client_start: env.client_pid.and_then(liveness::start_time),
        taken_from: None,
    }
}

/// A re-claim that changes nothing (the caller's own live lock, the same plan, owns and
/// client) while the heartbeat is fresh writes nothing: the lock on disk already says it all.
fn writes_nothing(ctx: &Ctx, p: &Payload, held: &Held, record: &LockRecord) -> bool {
    let same = LockRecord {
        claimed_at: held.record.claimed_at.clone(),
        heartbeat_at: held.record.heartbeat_at.clone(),
        ..record.clone()
    } == held.record;
    let throttle = ctx.config.heartbeat_throttle_seconds * 1000;
    held.record.session_id == p.session_id
        && !held.done
        && same
        && ctx.now.saturating_sub(held.heartbeat_ms) < throttle
}

/// The re-claim of a stream this session holds, whose plan (read alone, now) still declares it
/// as the lock records it: nothing to record, and no other plan to read. Anything else (a
/// first claim, a changed plan, a stale heartbeat) goes through the whole claim. Called under the
/// state lock.
fn unchanged_re_claim(ctx: &Ctx, p: &Payload, env: &Env, name: &str) -> bool {
    let Ok(Some(held)) = ctx.layout.read_lock(name) else {
        return false;
    };
    if held.record.session_id != p.session_id || held.done {
        return false;
    }
    crate::plan_cache::read_one(&ctx.root, &held.record.plan)
        .filter(|plan| plan.name == name)
        .is_some_and(|plan| writes_nothing(ctx, p, &held, &record_for(ctx, p, env, &plan)))
}

/// A plan that owns protocol files (`protectedPaths`) and was written after another session's
/// live claim cannot be claimed: a stream declared mid-round would own the protocol itself.
fn late_protected_plan(ctx: &Ctx, p: &Payload, plan: &plans::Stream) -> Option<String> {
    let ci = ctx.paths.case_insensitive();
    let owns_protocol = crate::globs::OverlapSet::new(&plan.owns, ci)
        .first_overlap(&crate::globs::OverlapSet::new(
            &ctx.config.protected_paths,
            ci,
        ))
        .is_some();
    if !owns_protocol {
        return None;
    }
    let written = std::fs::metadata(ctx.root.join(&plan.plan))
        .and_then(|m| m.modified())
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis() as u64;
    let (locks, _) = ctx.layout.read_locks();
    let earlier = locks.iter().find(|h| {
        h.record.session_id != p.session_id
            && h.is_live(ctx.now, ctx.stale_ms())
            && time::parse_iso(&h.record.claimed_at).is_some_and(|c| c < written)
    })?;
    Some(format!(
        "session-lock: the plan of '{}' ({}) owns protocol files and was written after stream '{}' was claimed; a stream that owns the protocol cannot be declared inside a round. Claim it when no other stream is live",
        plan.name, plan.plan, earlier.record.stream
    ))
}

/// Another session's live stream, if any.
fn others_live(ctx: &Ctx, session_id: &str) -> Option<String> {
    let (locks, _) = ctx.layout.read_locks();
    locks
        .into_iter()
        .find(|h| h.record.session_id != session_id && h.is_live(ctx.now, ctx.stale_ms()))
        .map(|h| h.record.stream)
}

/// `release <stream>` may only be run by the session holding the stream, with a literal name.
pub fn check_release(ctx: &Ctx, p: &Payload, stream: &Word) -> Checked {
    release_problem(ctx, p, stream).map_err(|why| refusal(Rule::Release, stream, why))
}

fn release_problem(ctx: &Ctx, p: &Payload, stream: &Word) -> Result<(), String> {
    if !stream.is_written() {
        return Err(format!(
            "session-lock: {} names its stream through an expansion; the guard cannot check whose stream that is. Write the stream name literally",
            as_written("release", stream)
        ));
    }
    if let Ok(Some(held)) = ctx.layout.read_lock(&stream.text)
        && held.record.session_id != p.session_id
    {
        return Err(format!(
            "session-lock: stream '{}' belongs to another session ({}); only its own session may release it",
            stream.text,
            describe(&held, ctx.now)
        ));
    }
    Ok(())
}

/// The claims and releases a command runs, from its segments.
pub fn stream_commands<'a>(segments: impl IntoIterator<Item = &'a [Word]>) -> Vec<StreamCommand> {
    let mut out = Vec::new();
    for seg in segments {
        let Some(head) = seg.first() else { continue };
        let base = crate::shell::word::command_name(&head.text);
        let cmd = match &*base {
            "claim" => "claim",
            "release" => "release",
            _ => continue,
        };
        // The first argument that is not an option; `--repo DIR` takes a value.
        let mut args = seg.iter().skip(1);
        let mut stream = None;
        while let Some(w) = args.next() {
            if !w.is_written() || !w.text.starts_with('-') {
                stream = Some(w);
                break;
            }
            if w.text == "--repo" {
                args.next();
            }
        }
        match stream {
            Some(w) if cmd == "claim" => out.push(StreamCommand::Claim(w.clone())),
            Some(w) => out.push(StreamCommand::Release(w.clone())),
            None => out.push(StreamCommand::Bare(cmd)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    #[test]
    fn a_re_claim_that_changes_nothing_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let plan = dir.path().join("plans/r-ms-01-api");
        std::fs::create_dir_all(&plan).unwrap();
        std::fs::write(plan.join("plan.md"), "---\nowns: [src/api/**]\n---\n").unwrap();
        let ctx = Ctx::new(dir.path().to_path_buf(), Config::default());
        let p = Payload {
            session_id: "s-1".into(),
            cwd: ctx.root.display().to_string(),
            ..Payload::default()
        };
        let env = Env::default();
        claim(&ctx, &p, &env, &Word::plain("api")).unwrap();
        let first = std::fs::read(ctx.layout.lock_path("api")).unwrap();
        let later = Ctx::new(ctx.root.clone(), Config::default()).at(ctx.now + 1_000);
        claim(&later, &p, &env, &Word::plain("api")).unwrap();
        assert_eq!(
            std::fs::read(ctx.layout.lock_path("api")).unwrap(),
            first,
            "same plan, fresh heartbeat: the lock stays as written"
        );
        // Past the heartbeat throttle the re-claim renews the heartbeat, and keeps claimedAt.
        let throttle = later.config.heartbeat_throttle_seconds * 1000;
        let much_later = Ctx::new(ctx.root.clone(), Config::default()).at(ctx.now + throttle + 1);
        claim(&much_later, &p, &env, &Word::plain("api")).unwrap();
        let held = ctx.layout.read_lock("api").unwrap().unwrap();
        assert_eq!(held.heartbeat_ms, much_later.now);
        assert_eq!(held.record.claimed_at, time::iso(ctx.now));
        // A plan that now owns more is written at once (no other stream is live).
        std::fs::write(
            plan.join("plan.md"),
            "---\nowns: [src/api/**, docs/**]\n---\n",
        )
        .unwrap();
        claim(&much_later, &p, &env, &Word::plain("api")).unwrap();
        let held = ctx.layout.read_lock("api").unwrap().unwrap();
        assert_eq!(held.record.owns, vec!["src/api/**", "docs/**"]);
    }
}
