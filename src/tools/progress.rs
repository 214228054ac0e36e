//! Progress of a wait (`wait-milestone`, `status --wait`, `build-renderer` waiting for the
//! build lock), on stderr. On a terminal: one live line, redrawn in place, with what is still
//! open, elapsed time and time left. Not on a terminal: a plain line when what is waited for
//! changes, and at least once a minute. `--quiet`: nothing. The live line is cut to the
//! terminal's width, so it never wraps.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// How often a plain (not a terminal) progress line repeats when nothing changes.
pub const PLAIN_EVERY: Duration = Duration::from_secs(60);

enum Mode {
    Live(ProgressBar),
    Plain {
        last_key: Option<String>,
        last_print: Instant,
    },
    Quiet,
}

/// The progress of one wait.
pub struct Progress {
    tool: &'static str,
    start: Instant,
    limit: Option<Duration>,
    mode: Mode,
}

/// `1m05s`, `42s`, `2h03m`.
pub fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

impl Progress {
    /// A live line when stderr is a terminal, plain lines otherwise, nothing with `quiet`.
    /// `limit`: when the wait gives up (for "time left").
    pub fn new(tool: &'static str, quiet: bool, limit: Option<Duration>) -> Progress {
        let start = Instant::now();
        let mode = if quiet {
            Mode::Quiet
        } else if std::io::stderr().is_terminal() {
            Mode::Live(live_bar(tool, start, limit))
        } else {
            Mode::Plain {
                last_key: None,
                last_print: start,
            }
        };
        Progress {
            tool,
            start,
            limit,
            mode,
        }
    }

    /// True when progress is the live terminal line.
    pub fn is_live(&self) -> bool {
        matches!(self.mode, Mode::Live(_))
    }

    /// What the wait stands at. `key` names what is waited for (it changes when a stream
    /// finishes or a holder changes); `detail` says it for people, ages included.
    pub fn update(&mut self, key: &str, detail: &str) {
        let elapsed = self.start.elapsed();
        match &mut self.mode {
            Mode::Quiet => {}
            Mode::Live(bar) => bar.set_message(detail.to_string()),
            Mode::Plain {
                last_key,
                last_print,
            } => {
                let changed = last_key.as_deref() != Some(key);
                if changed || last_print.elapsed() >= PLAIN_EVERY {
                    let left = self
                        .limit
                        .map(|l| format!(", {} left", span(l.saturating_sub(elapsed))))
                        .unwrap_or_default();
                    let _ = writeln!(
                        std::io::stderr(),
                        "{}: waiting for {detail} [{} elapsed{left}]",
                        self.tool,
                        span(elapsed)
                    );
                    *last_key = Some(key.to_string());
                    *last_print = Instant::now();
                }
            }
        }
    }

    /// Ends the live line (it is cleared) and prints `text` as a plain line, unless quiet.
    pub fn finish(&mut self, text: &str) {
        if let Mode::Live(bar) = &self.mode {
            bar.finish_and_clear();
        }
        if !matches!(self.mode, Mode::Quiet) && !text.is_empty() {
            let _ = writeln!(std::io::stderr(), "{}: {text}", self.tool);
        }
    }

    /// Clears the live line (before an error is printed), leaving nothing behind.
    pub fn clear(&mut self) {
        if let Mode::Live(bar) = &self.mode {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.clear();
    }
}

fn live_bar(tool: &'static str, start: Instant, limit: Option<Duration>) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let style =
        ProgressStyle::with_template("{spinner} {prefix}: waiting for {wide_msg} [{since}{left}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner())
            .with_key(
                "since",
                move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    let _ = write!(w, "{} elapsed", span(start.elapsed()));
                },
            )
            .with_key(
                "left",
                move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                    if let Some(l) = limit {
                        let _ = write!(w, ", {} left", span(l.saturating_sub(start.elapsed())));
                    }
                },
            );
    bar.set_style(style);
    bar.set_prefix(tool);
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans() {
        assert_eq!(span(Duration::from_secs(42)), "42s");
        assert_eq!(span(Duration::from_secs(65)), "1m05s");
        assert_eq!(span(Duration::from_secs(7380)), "2h03m");
    }
}
