#!/bin/sh
# qex stop hook: show a desktop notification when a job ends.
#
#   [hooks]
#   on_stop = ["/usr/local/share/qex/hooks/notify-send.sh"]
#
# Safety: every value comes from the QEX_* environment that qex sets for the hook, and
# each one is passed to notify-send as a separate argument. Nothing here is ever handed
# to a shell as code, and the body is escaped because notification daemons may read it as
# markup.
set -eu

command -v notify-send >/dev/null 2>&1 || exit 0   # no desktop here: nothing to do

# Escape the three characters that notification markup gives a meaning.
markup_escape() {
    printf '%s' "$1" | sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g'
}

id=${QEX_JOB_ID:-}
name=${QEX_JOB_NAME:-job}
state=${QEX_STATE:-unknown}
code=${QEX_EXIT_CODE:-}
signal=${QEX_SIGNAL:-}
elapsed=${QEX_ELAPSED_SECS:-}
cwd=${QEX_CWD:-}

case $state in
    completed) urgency=low ;;
    failed|oom|timeout|killed|expired) urgency=critical ;;
    *) urgency=normal ;;
esac

detail="state: $state"
[ -n "$code" ] && detail="$detail, exit code $code"
[ -n "$signal" ] && detail="$detail, signal $signal"
[ -n "$elapsed" ] && detail="$detail, after ${elapsed}s"

body="$(markup_escape "$detail")
$(markup_escape "$cwd")
qex status $(markup_escape "$(printf '%.8s' "$id")")"

exec notify-send --app-name=qex --urgency="$urgency" -- "qex: $name $state" "$body"
