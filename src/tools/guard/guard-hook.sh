#!/bin/sh
# session-lock's launcher, written by `guard install` and committed with the repo. The hook
# entries in .claude/settings.json run it, so the same settings work on every machine that has
# the suite, wherever its binaries live. It runs the first guard it finds:
#   $SESSION_LOCK_GUARD, `guard` on PATH, ~/.local/bin/guard, ~/.cargo/bin/guard.
# When there is none it blocks the call (exit 2) and says so: a hook whose program is missing
# would let the session run unguarded, over other sessions' work.
# `--tool send-message` or `--tool status` first (the MCP server in .mcp.json, the status line)
# runs that tool instead, from the folder of the guard found the same way: the suite's
# binaries are installed together.
tool=guard
if [ "${1:-}" = "--tool" ]; then
  case "${2:-}" in
    send-message | status) tool=$2; shift 2 ;;
    *) echo "session-lock: guard-hook --tool takes send-message or status, not '${2:-}'" >&2; exit 2 ;;
  esac
fi
if [ "$tool" = guard ]; then
  if [ -n "${SESSION_LOCK_GUARD:-}" ]; then exec "$SESSION_LOCK_GUARD" "$@"; fi
  if command -v guard >/dev/null 2>&1; then exec guard "$@"; fi
  for g in "$HOME/.local/bin/guard" "$HOME/.cargo/bin/guard"; do
    if [ -x "$g" ]; then exec "$g" "$@"; fi
  done
  echo "session-lock: this repo's hooks need the session-lock guard, and none was found (not \$SESSION_LOCK_GUARD, not on PATH, not in ~/.local/bin or ~/.cargo/bin); blocked so this session cannot overwrite another's work. Install the suite (scripts/setup) or set SESSION_LOCK_GUARD to the guard program." >&2
  exit 2
fi
case ${SESSION_LOCK_GUARD:-} in */*) exec "${SESSION_LOCK_GUARD%/*}/$tool" "$@" ;; esac
# PATH walked here rather than with `command -v` in a subshell: no fork on the way.
rest=$PATH
while [ -n "$rest" ]; do
  dir=${rest%%:*}
  case $rest in *:*) rest=${rest#*:} ;; *) rest= ;; esac
  if [ -n "$dir" ] && [ -x "$dir/guard" ]; then exec "$dir/$tool" "$@"; fi
done
for d in "$HOME/.local/bin" "$HOME/.cargo/bin"; do
  if [ -x "$d/guard" ]; then exec "$d/$tool" "$@"; fi
done
echo "session-lock: $tool needs the session-lock suite, and no guard was found to run it beside (not \$SESSION_LOCK_GUARD, not on PATH, not in ~/.local/bin or ~/.cargo/bin). Install the suite (scripts/setup) or set SESSION_LOCK_GUARD to the guard program." >&2
exit 127
