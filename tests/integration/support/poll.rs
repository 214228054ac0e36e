//! Waiting for an event in a test: a condition asked again and again until it holds, never a
//! sleep that orders events. The one poller of the tests.

use std::time::{Duration, Instant};

/// How often a condition is asked.
const EVERY: Duration = Duration::from_millis(20);

/// Asks `done` every 20 ms until it holds or `limit` passes (it is asked once more at the
/// end, so a slow last step still counts); whether it held.
pub fn until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(EVERY);
    }
}

/// [`until`], failing the test with `what` it waited for when `limit` passes first.
#[track_caller]
pub fn expect(what: &str, limit: Duration, done: impl FnMut() -> bool) {
    assert!(
        until(limit, done),
        "timed out after {limit:?} waiting for {what}"
    );
}
