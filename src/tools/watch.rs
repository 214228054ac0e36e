//! `status --watch`: a live view of the round, redrawn in place until `q`, Esc or Ctrl-C:
//! the streams (state, session, heartbeat age, round), the build lock's holder and queue,
//! messages in flight to the streams' sessions, and the last blocks from the block log. Only
//! on a terminal: elsewhere it says so and exits (a snapshot is `status` or `status --json`).

use super::{build_renderer, report};
use crate::config::Config;
use crate::exit::{Code, fail};
use crate::hook::blocklog;
use crate::state::{Layout, short_id};
use crate::time;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::layout::{Constraint, Layout as Split};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table};
use std::io::IsTerminal;
use std::path::Path;
use std::time::Duration;

/// How often the view reads the state again.
const REFRESH: Duration = Duration::from_secs(1);
/// How many blocks the view shows.
const LAST_BLOCKS: usize = 5;

/// What one frame shows.
pub struct Snapshot {
    pub report: report::Report,
    pub build: build_renderer::Status,
    /// Messages queued or held for the streams' sessions, one line each.
    pub messages: Vec<String>,
    pub blocks: Vec<blocklog::Entry>,
}

/// Reads everything a frame shows.
pub fn snapshot(root: &Path, cfg: &Config, layout: &Layout) -> Snapshot {
    let report = report::report(root, cfg, layout);
    let build = build_renderer::status(layout);
    let messages = in_flight(&report);
    let mut blocks = blocklog::read(root).unwrap_or_default();
    let keep = blocks.len().saturating_sub(LAST_BLOCKS);
    blocks.drain(..keep);
    Snapshot {
        report,
        build,
        messages,
        blocks,
    }
}

/// Messages not yet delivered to the sessions that hold this round's streams.
fn in_flight(report: &report::Report) -> Vec<String> {
    let Some(home) = crate::sessions::state_home() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for row in &report.streams {
        let Some(session) = row.session_id.as_deref() else {
            continue;
        };
        let Some(ledger) = crate::messaging::ledger::Ledger::existing_inbound(&home, session)
        else {
            continue;
        };
        for e in ledger.entries().unwrap_or_default() {
            if e.state.is_final() {
                continue;
            }
            out.push(format!(
                "{} from {} to {} ({}): {}",
                e.id,
                e.sender_id().map_or("?", short_id),
                row.stream,
                e.state.as_str(),
                e.summary()
                    .or(e.text())
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
            ));
        }
    }
    out
}

fn stream_rows(r: &report::Report) -> Vec<Row<'static>> {
    r.streams
        .iter()
        .map(|row| {
            let mut state = row.state.as_str().to_string();
            if row.orphaned {
                state.push_str(" (orphaned)");
            }
            Row::new(vec![
                row.stream.clone(),
                row.milestone.map_or("-".into(), |m| format!("{m:02}")),
                state,
                row.session_id.as_deref().map_or("-", short_id).to_string(),
                row.heartbeat_age_s
                    .map_or("-".into(), |s| format!("{} ago", time::age(s * 1000))),
                row.round.map_or("-".into(), |n| n.to_string()),
                r.blocks
                    .get(&row.stream)
                    .map_or(String::new(), |n| n.to_string()),
            ])
        })
        .collect()
}

fn build_lines(s: &build_renderer::Status, now: u64) -> Vec<Line<'static>> {
    let mut lines = vec![Line::from(match &s.holder {
        Some(h) if h.alive => format!("held by {}", h.party.describe(now)),
        Some(h) => format!("free; the last holder died ({})", h.party.describe(now)),
        None => "free".to_string(),
    })];
    if s.queue.is_empty() {
        lines.push(Line::from("queue: empty"));
    }
    for (i, w) in s.queue.iter().enumerate() {
        lines.push(Line::from(format!("{}. {}", i + 1, w.describe(now))));
    }
    lines
}

fn block_lines(blocks: &[blocklog::Entry]) -> Vec<Line<'static>> {
    if blocks.is_empty() {
        return vec![Line::from("none")];
    }
    blocks
        .iter()
        .rev()
        .map(|e| {
            Line::from(format!(
                "{} {} {} {}: {}",
                e.time.get(11..19).unwrap_or(&e.time),
                e.stream.as_deref().unwrap_or_else(|| short_id(&e.session)),
                e.tool,
                e.rule.as_deref().unwrap_or("fail-open"),
                e.segment
            ))
        })
        .collect()
}

/// Draws one frame.
pub fn draw(frame: &mut ratatui::Frame, s: &Snapshot) {
    let now = time::now_ms();
    let build = build_lines(&s.build, now);
    let messages: Vec<Line> = if s.messages.is_empty() {
        vec![Line::from("none")]
    } else {
        s.messages.iter().map(|m| Line::from(m.clone())).collect()
    };
    let blocks = block_lines(&s.blocks);
    let height = |n: usize| Constraint::Length(n as u16 + 2);
    let areas = Split::vertical([
        Constraint::Length(1),
        Constraint::Min(4),
        height(build.len()),
        height(messages.len()),
        height(blocks.len()),
    ])
    .split(frame.area());
    let title = format!(
        "session-lock: round {} · {} · q to quit",
        s.report.round,
        time::iso(now).get(11..19).unwrap_or("")
    );
    frame.render_widget(
        Paragraph::new(title).style(Style::default().add_modifier(Modifier::BOLD)),
        areas[0],
    );
    let header = Row::new([
        "STREAM",
        "MS",
        "STATE",
        "SESSION",
        "HEARTBEAT",
        "ROUND",
        "BLOCKS",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let widths = [
        Constraint::Min(12),
        Constraint::Length(3),
        Constraint::Length(18),
        Constraint::Length(9),
        Constraint::Length(10),
        Constraint::Length(5),
        Constraint::Length(6),
    ];
    let mut streams = Block::bordered().title(" streams ");
    if let Some(p) = s.report.problems.first() {
        streams = streams.title_bottom(format!(" problem: {p} "));
    }
    frame.render_widget(
        Table::new(stream_rows(&s.report), widths)
            .header(header)
            .block(streams),
        areas[1],
    );
    frame.render_widget(
        Paragraph::new(build).block(Block::bordered().title(" build lock ")),
        areas[2],
    );
    frame.render_widget(
        Paragraph::new(messages).block(Block::bordered().title(" messages in flight ")),
        areas[3],
    );
    frame.render_widget(
        Paragraph::new(blocks).block(Block::bordered().title(" last blocks (guard log) ")),
        areas[4],
    );
}

/// Puts the terminal back however the view ends.
struct Screen;

impl Screen {
    fn enter() -> std::io::Result<Screen> {
        enable_raw_mode()?;
        let screen = Screen;
        execute!(std::io::stdout(), EnterAlternateScreen)?;
        Ok(screen)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        let _ = execute!(std::io::stdout(), LeaveAlternateScreen);
        let _ = disable_raw_mode();
    }
}

/// True for the keys that end the view: `q`, Esc, Ctrl-C.
fn quits(ev: &Event) -> bool {
    let Event::Key(k) = ev else { return false };
    k.kind == KeyEventKind::Press
        && (matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
            || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL)))
}

/// Runs the view until the person quits.
pub fn run(root: &Path, cfg: &Config, layout: &Layout) -> anyhow::Result<Code> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(fail(
            Code::Usage,
            "--watch draws on a terminal, and stdin or stdout is not one; for a snapshot run status (or status --json)",
        ));
    }
    let screen = Screen::enter()
        .map_err(|e| fail(Code::Failure, format!("cannot set up the terminal: {e}")))?;
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))?;
    terminal.clear()?;
    loop {
        let s = snapshot(root, cfg, layout);
        terminal.draw(|f| draw(f, &s))?;
        if event::poll(REFRESH)? && quits(&event::read()?) {
            break;
        }
    }
    drop(terminal);
    drop(screen);
    Ok(Code::Success)
}
