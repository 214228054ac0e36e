# Shared by scripts/install-<client>-cli: installs one npm package, pinned, into a cache outside
# the repository and reuses it when present. Sourced, not run. The caller sets:
#
#   name      the CLI's short name, used in messages and the cache entry (claude-code, codex, ...)
#   package   the npm package (@anthropic-ai/claude-code)
#   version   the pinned version (from scripts/<client>-cli-version)
#   bin_rel   the executable inside an install directory (node_modules/.bin/claude)
#   works()   a function: does $1 (an install directory) hold a working CLI of $version?
#
# and may set fixup(), run on a fresh install that does not work yet (say, a postinstall npm
# skipped). Then it calls install_npm_cli, which prints the executable's path as the last line
# on stdout. The cache entry is ${SESSION_LOCK_CACHE:-$HOME/.cache/session-lock}/<name>-<version>/.
# A new install is made in a scratch directory beside it and renamed into place only once it
# works, so an interrupted run leaves nothing half-installed behind.

say() { printf '%s: %s\n' "$(basename "$0")" "$*" >&2; }

install_npm_cli() {
  local cache_root dest scratch
  if [[ -z "$version" ]]; then
    say "no pinned version for $package"
    return 1
  fi
  cache_root="${SESSION_LOCK_CACHE:-$HOME/.cache/session-lock}"
  dest="$cache_root/$name-$version"

  if works "$dest"; then
    say "$name $version already installed in $dest"
    printf '%s\n' "$dest/$bin_rel"
    return 0
  fi

  command -v npm >/dev/null || { say "npm not found: install Node.js and npm first"; return 1; }

  mkdir -p "$cache_root"
  scratch="$(mktemp -d "$cache_root/.$name-$version.XXXXXX")"
  # shellcheck disable=SC2064 # the path is fixed now, on purpose
  trap "rm -rf '$scratch'" EXIT
  chmod 755 "$scratch"   # mktemp makes it private; the cache is meant to be shared

  say "installing $package@$version into $dest"
  # --foreground-scripts: show a postinstall's output if it has something to say.
  npm install --prefix "$scratch" --no-audit --no-fund --no-save --loglevel=error \
    --foreground-scripts "$package@$version" >&2

  if ! works "$scratch" && declare -F fixup >/dev/null; then
    fixup "$scratch" >&2 || true
  fi
  if ! works "$scratch"; then
    say "the installed $name does not answer --version with $version"
    return 1
  fi

  # A concurrent run may have finished first: keep whichever works.
  if [[ -e "$dest" ]] && ! works "$dest"; then
    rm -rf "$dest"
  fi
  if [[ ! -e "$dest" ]]; then
    mv "$scratch" "$dest"
    trap - EXIT
  fi
  say "installed $name $version"
  printf '%s\n' "$dest/$bin_rel"
}
