#!/bin/sh
# session-lock's hook launcher, written by `guard install` and committed with the repo. The
# hook entries in .claude/settings.json run it, so the same settings work on every machine
# that has the suite, wherever its binaries live. It runs the first guard it finds:
#   $SESSION_LOCK_GUARD, `guard` on PATH, ~/.local/bin/guard, ~/.cargo/bin/guard.
# When there is none it blocks the call (exit 2) and says so: a hook whose program is missing
# would let the session run unguarded, over other sessions' work.
if [ -n "${SESSION_LOCK_GUARD:-}" ]; then exec "$SESSION_LOCK_GUARD" "$@"; fi
if command -v guard >/dev/null 2>&1; then exec guard "$@"; fi
for g in "$HOME/.local/bin/guard" "$HOME/.cargo/bin/guard"; do
  if [ -x "$g" ]; then exec "$g" "$@"; fi
done
echo "session-lock: this repo's hooks need the session-lock guard, and none was found (not \$SESSION_LOCK_GUARD, not on PATH, not in ~/.local/bin or ~/.cargo/bin); blocked so this session cannot overwrite another's work. Install the suite (scripts/setup) or set SESSION_LOCK_GUARD to the guard program." >&2
exit 2
