#!/usr/bin/env bash
# The app launcher's round keys for session-lock.
#   [R] rebuild and restart the app now.
#   [W] wait until every claimed stream is released (status --wait), archive the round into
#       session-lock/history/<timestamp>/, then rebuild and restart like [R].
#   [S] show the round's status.   [Q] quit.
# Non-interactive: scripts/run.sh R | W | S. The rebuild and restart commands come from
# session-lock/config.json (rebuildCommand, restartCommand). The suite's binaries are found on
# PATH, or in SESSION_LOCK_BIN.
set -u
repo=${SESSION_LOCK_REPO:-$(git rev-parse --show-toplevel 2>/dev/null || pwd)}
bin=${SESSION_LOCK_BIN:-}
tool() { if [ -n "$bin" ]; then "$bin/$1" "${@:2}"; else "$@"; fi; }
pidfile="$repo/session-lock/app.pid"

restart() {
  rebuild=$(tool status --repo "$repo" --config-value rebuildCommand) || return 1
  start=$(tool status --repo "$repo" --config-value restartCommand) || return 1
  echo "run: rebuilding: $rebuild"
  (cd "$repo" && sh -c "$rebuild") || { echo "run: rebuild failed; the app was not restarted" >&2; return 1; }
  if [ -f "$pidfile" ]; then
    old=$(cat "$pidfile")
    if [ -n "$old" ] && kill -0 "$old" 2>/dev/null; then
      echo "run: stopping the app (pid $old)"
      kill "$old" 2>/dev/null
      for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$old" 2>/dev/null || break; sleep 0.5; done
    fi
  fi
  echo "run: starting: $start"
  mkdir -p "$repo/session-lock"
  (cd "$repo" && nohup sh -c "$start" >"$repo/session-lock/app.log" 2>&1 & echo $! >"$pidfile")
  echo "run: app started (pid $(cat "$pidfile")), log in session-lock/app.log"
}

wait_round() {
  echo "run: waiting until every claimed stream is released (a lock stale for 60 min counts as finished)"
  tool status --repo "$repo" --wait --archive || { echo "run: the wait did not finish; nothing restarted" >&2; return 1; }
  restart
}

key() {
  case "$1" in
    R|r) restart ;;
    W|w) wait_round ;;
    S|s) tool status --repo "$repo" ;;
    Q|q) exit 0 ;;
    *) echo "run: unknown key '$1' (R, W, S or Q)" >&2; return 2 ;;
  esac
}

if [ $# -gt 0 ]; then key "$1"; exit $?; fi
while true; do
  printf '\n[R] rebuild + restart   [W] wait for the round, archive, restart   [S] status   [Q] quit\n> '
  read -r k || exit 0
  key "$k"
done
