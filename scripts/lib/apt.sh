# Sourced by scripts/setup.sh. apt prints progress and debconf's notes by the screenful; a user needs what is
# installed and, if it fails, why. So apt's output goes to a log that is shown only when apt fails.
# DEBIAN_FRONTEND is set past sudo, which would drop it from the environment.
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
apt_get_quietly() {
  local log; log="$(mktemp -t chronos-apt.XXXXXX)"
  if $SUDO env DEBIAN_FRONTEND=noninteractive apt-get "$@" >"$log" 2>&1; then rm -f "$log"; return 0; fi
  echo "error: 'apt-get $*' failed; its output:" >&2
  cat "$log" >&2; rm -f "$log"; return 1
}
