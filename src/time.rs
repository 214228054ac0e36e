//! Wall-clock time as the suite stores it: UTC timestamps `2026-11-30T05:40:00.123Z` in JSON,
//! `20261130T054000Z` in folder names. The only module that reads the clock.

use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Moves this process's clock forward by that many milliseconds. Tests of time limits
/// (`resendAfterSeconds`, `holdExpirySeconds`, …) run a command "that much later" with it
/// instead of sleeping; unset, empty or not a number, the clock is the system's.
pub const AHEAD_SWITCH: &str = "SESSION_LOCK_CLOCK_AHEAD_MS";

fn ahead_ms() -> u64 {
    static AHEAD: OnceLock<u64> = OnceLock::new();
    *AHEAD.get_or_init(|| {
        std::env::var(AHEAD_SWITCH)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    })
}

/// Milliseconds since the Unix epoch, now (plus [`AHEAD_SWITCH`]).
pub fn now_ms() -> u64 {
    let system = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64;
    system.saturating_add(ahead_ms())
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn parts(ms: u64) -> (i64, u32, u32, u64, u64, u64, u64) {
    let secs = ms / 1000;
    let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    (y, mo, d, rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000)
}

/// `2026-11-30T05:40:00.123Z`
pub fn iso(ms: u64) -> String {
    let (y, mo, d, h, mi, s, milli) = parts(ms);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
}

/// `20261130T054000Z`, for folder names that sort by time.
pub fn compact(ms: u64) -> String {
    let (y, mo, d, h, mi, s, _) = parts(ms);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

/// `Wed Dec  3 08:31:00 2025`: the seconds since the epoch as `LC_ALL=C TZ=UTC ps -o lstart=`
/// prints them (C's `%c` in the C locale, in UTC), the form Claude Code records a process's
/// start in on macOS.
pub fn ps_lstart(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, mo, d, h, mi, s, _) = parts(secs.saturating_mul(1000));
    let weekday = DAYS[(secs / 86_400 % 7) as usize];
    let month = MONTHS[(mo - 1) as usize];
    format!("{weekday} {month} {d:>2} {h:02}:{mi:02}:{s:02} {y}")
}

/// Parses what [`iso`] writes (fraction optional, `Z` or `+00:00`). `None` if it is not that.
pub fn parse_iso(text: &str) -> Option<u64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u64> { text.get(r)?.parse::<u64>().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &text[19..];
    let mut milli = 0u64;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        // The first three digits, as milliseconds (`.5` is 500, `.1234` is 123).
        for (c, scale) in frac.bytes().take(digits).zip([100, 10, 1]) {
            milli += u64::from(c - b'0') * scale;
        }
        rest = &frac[digits..];
    }
    if rest != "Z" && rest != "+00:00" {
        return None;
    }
    let days = days_from_civil(y as i64, mo as u32, d as u32);
    if days < 0 {
        return None;
    }
    Some(((days as u64 * 86_400) + h * 3600 + mi * 60 + s) * 1000 + milli)
}

/// `42s`, `4m`, `2h05m`, `3d` — how long ago, for tables and messages.
pub fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trips() {
        for ms in [0u64, 1_796_011_455_037, 951_782_400_000, 4_102_444_800_999] {
            assert_eq!(parse_iso(&iso(ms)), Some(ms), "{}", iso(ms));
        }
        assert_eq!(iso(1_796_011_455_037), "2026-11-30T04:04:15.037Z");
        assert_eq!(compact(1_796_011_455_037), "20261130T040415Z");
    }

    /// Against GNU `LC_ALL=C TZ=UTC date -d @N '+%c'`: the day padded with a space, a leap day,
    /// the last second of a century's year.
    #[test]
    fn ps_lstart_is_c_locale_percent_c_in_utc() {
        assert_eq!(ps_lstart(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ps_lstart(951_782_400), "Tue Feb 29 00:00:00 2000");
        assert_eq!(ps_lstart(1_764_750_660), "Wed Dec  3 08:31:00 2025");
        assert_eq!(ps_lstart(1_796_011_455), "Mon Nov 30 04:04:15 2026");
        assert_eq!(ps_lstart(4_102_444_799), "Thu Dec 31 23:59:59 2099");
    }

    #[test]
    fn parse_rejects_garbage() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-11-30T05:40:00",
            "2026-11-30T05:40:00.Z",
        ] {
            assert_eq!(parse_iso(bad), None, "{bad}");
        }
        assert_eq!(
            parse_iso("2026-11-30T04:04:15+00:00"),
            Some(1_796_011_455_000)
        );
    }

    #[test]
    fn fractions_are_read_to_the_millisecond() {
        let base = 1_796_011_455_000;
        for (frac, ms) in [
            (".5", 500),
            (".12", 120),
            (".037", 37),
            (".1239", 123),
            (".000001", 0),
        ] {
            let text = format!("2026-11-30T04:04:15{frac}Z");
            assert_eq!(parse_iso(&text), Some(base + ms), "{text}");
        }
    }

    #[test]
    fn ages_read_well() {
        assert_eq!(age(5_000), "5s");
        assert_eq!(age(240_000), "4m");
        assert_eq!(age(7_500_000), "2h05m");
        assert_eq!(age(3 * 86_400_000), "3d");
    }
}
