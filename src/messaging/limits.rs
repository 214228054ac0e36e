//! The guard rails (§9): message size, summary length, duplicates, rate per sender→target,
//! pending messages per target. Pure functions over folded ledgers; arguments are checked
//! before anything else, so a refused request spends no quota.

use super::ledger::{Entry, State};
use crate::config::MessagingConfig;

/// The summary as it is kept: trimmed, and none when blank.
pub fn summary_of(summary: Option<&str>) -> Option<&str> {
    summary.map(str::trim).filter(|s| !s.is_empty())
}

/// Checks the message and summary themselves. `Err` is the `refused` detail.
pub fn check_args(text: &str, summary: Option<&str>, cfg: &MessagingConfig) -> Result<(), String> {
    if text.trim().is_empty() {
        return Err("the message is empty".into());
    }
    if text.len() > cfg.max_message_bytes {
        // Stdin is read only a little past the limit, so its true size is not known here.
        return Err(format!(
            "the message is over {} bytes, the limit (messaging.maxMessageBytes)",
            cfg.max_message_bytes
        ));
    }
    if let Some(s) = summary {
        let n = s.chars().count();
        if n > cfg.max_summary_chars {
            return Err(format!(
                "the summary is {n} characters; the limit is {} (messaging.maxSummaryChars)",
                cfg.max_summary_chars
            ));
        }
        if s.contains(['\n', '\r']) {
            return Err("the summary must be one line".into());
        }
    }
    Ok(())
}

/// The id of the same message (sender's outbox: same target, text and summary) sent within the
/// window, if any.
pub fn duplicate_of<'a>(
    outbox: &'a [Entry],
    target: &str,
    text: &str,
    summary: Option<&str>,
    now_ms: u64,
    window_ms: u64,
) -> Option<&'a str> {
    outbox
        .iter()
        .rev()
        .filter(|e| now_ms.saturating_sub(e.first_ms) <= window_ms)
        .filter(|e| !matches!(e.state, State::Refused | State::Expired))
        .find(|e| e.target_id() == Some(target) && e.text() == Some(text) && e.summary() == summary)
        .map(|e| e.id.as_str())
}

/// How many messages the sender sent this target in the last minute (duplicates were never
/// recorded, refused ones do not count).
pub fn sent_last_minute(outbox: &[Entry], target: &str, now_ms: u64) -> usize {
    outbox
        .iter()
        .filter(|e| now_ms.saturating_sub(e.first_ms) < 60_000)
        .filter(|e| {
            matches!(
                e.state,
                State::Queued | State::Accepted | State::Held | State::Delivered
            )
        })
        .filter(|e| e.target_id() == Some(target))
        .count()
}

/// Messages waiting for the target (its inbound ledger): queued or accepted, not delivered.
pub fn pending(inbound: &[Entry]) -> usize {
    inbound.iter().filter(|e| e.state.is_open()).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::messaging::ledger::{Op, Record, fold};

    fn q(id: &str, target: &str, text: &str, summary: Option<&str>, at: u64) -> Record {
        let mut r = Record::new(Op::Queued, id, at);
        r.target_id = Some(target.into());
        r.text = Some(text.into());
        r.summary = summary.map(str::to_string);
        r
    }

    #[test]
    fn size_and_summary_limits() {
        let cfg = MessagingConfig::default();
        assert!(check_args("hi", None, &cfg).is_ok());
        assert!(check_args(&"x".repeat(65_536), None, &cfg).is_ok());
        let e = check_args(&"x".repeat(65_537), None, &cfg).unwrap_err();
        assert!(e.contains("over 65536 bytes"), "{e}");
        // bytes, not characters
        assert!(check_args(&"é".repeat(32_769), None, &cfg).is_err());
        assert!(check_args(" \n", None, &cfg).is_err());
        assert!(check_args("hi", Some(&"s".repeat(200)), &cfg).is_ok());
        assert!(check_args("hi", Some(&"s".repeat(201)), &cfg).is_err());
        assert!(check_args("hi", Some(&"é".repeat(200)), &cfg).is_ok());
    }

    #[test]
    fn duplicates_within_the_window_only() {
        let base = 1_000_000;
        let out = fold([
            q("m1", "t", "hello", Some("s"), base),
            q("m2", "t", "other", None, base + 1000),
        ]);
        let w = 10_000;
        assert_eq!(
            duplicate_of(&out, "t", "hello", Some("s"), base + 5000, w),
            Some("m1")
        );
        assert_eq!(
            duplicate_of(&out, "t", "hello", None, base + 5000, w),
            None,
            "summary counts"
        );
        assert_eq!(
            duplicate_of(&out, "u", "hello", Some("s"), base + 5000, w),
            None,
            "target counts"
        );
        assert_eq!(
            duplicate_of(&out, "t", "hello", Some("s"), base + 10_001, w),
            None
        );
    }

    #[test]
    fn rate_counts_sends_to_that_target_in_the_last_minute() {
        let base = 10_000_000;
        let mut lines = Vec::new();
        for i in 0..20 {
            lines.push(q(
                &format!("m{i}"),
                "t",
                &format!("x{i}"),
                None,
                base + i * 1000,
            ));
        }
        lines.push(q("old", "t", "old", None, base - 61_000));
        lines.push(q("u", "u", "to u", None, base));
        lines.push(q("r", "t", "refused", None, base));
        lines.push(Record::new(Op::Refused, "r", base));
        lines.push(Record::new(Op::Delivered, "m0", base + 100));
        let out = fold(lines);
        assert_eq!(sent_last_minute(&out, "t", base + 20_000), 20);
        assert_eq!(sent_last_minute(&out, "u", base + 20_000), 1);
        assert_eq!(sent_last_minute(&out, "t", base + 60_500), 19);
        assert_eq!(pending(&out), 21, "queued, not delivered, not refused");
    }
}
