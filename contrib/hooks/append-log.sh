#!/bin/sh
# qex stop hook: append one tab-separated line per finished job to a log file.
#
#   [hooks]
#   on_stop = ["/usr/local/share/qex/hooks/append-log.sh"]
#
# Columns: UTC time, job id, state, exit code, signal, seconds, attempts, peak memory
# (bytes), name, tags, directory. Empty when qex has no value.
#
# The file is $QEX_HOOK_LOG when the hook's environment sets it (for example in the
# coordinator's unit), else $XDG_STATE_HOME/qex/stopped.log. It is created 0600.
#
# Safety: data comes only from the QEX_* environment. qex already replaces control
# characters in those values; tabs and line breaks are removed again here so that one job
# is always exactly one line with the same columns.
set -eu

log=${QEX_HOOK_LOG:-${XDG_STATE_HOME:-$HOME/.local/state}/qex/stopped.log}
umask 077
mkdir -p -- "$(dirname -- "$log")"

# One field: no tab, no newline, no carriage return.
field() {
    printf '%s' "$1" | tr '\t\n\r' '   '
}

line=$(printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$(field "${QEX_JOB_ID:-}")" \
    "$(field "${QEX_STATE:-}")" \
    "$(field "${QEX_EXIT_CODE:-}")" \
    "$(field "${QEX_SIGNAL:-}")" \
    "$(field "${QEX_ELAPSED_SECS:-}")" \
    "$(field "${QEX_ATTEMPTS:-}")" \
    "$(field "${QEX_MAX_RSS:-}")" \
    "$(field "${QEX_JOB_NAME:-}")" \
    "$(field "${QEX_TAGS:-}")" \
    "$(field "${QEX_CWD:-}")")

# A single short write with O_APPEND, so lines from hooks that run at the same time do not
# interleave; flock makes that explicit where it exists.
if command -v flock >/dev/null 2>&1; then
    flock -- "$log" sh -c 'printf "%s\n" "$1" >> "$2"' sh "$line" "$log"
else
    printf '%s\n' "$line" >> "$log"
fi
