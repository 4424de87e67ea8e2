"""What `qex watchers` prints, without click: the monitor loops of this machine, oldest
first, each with why its test can lie and what to run instead.

The agents' help page sends an agent here to check that it left no loop behind, so the fast
path (`qex.cli.fast`) and the click command both call `show_watchers`: the two cannot
differ, and the fast one pays for no option framework.
"""

from __future__ import annotations

import sys

#: A longer command line is cut to this many characters, its end marked with `...`.
MAX_SHOWN = 160


def _age(seconds: object) -> str:
    if not isinstance(seconds, float):
        return "for an unknown time"
    from qex.core.units import format_duration

    return "for " + format_duration(seconds)


def _shown(command: str) -> str:
    from qex.core.names import visible

    text = visible(command)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def show_watchers(*, as_json: bool) -> int:
    """Print the loops found; the exit code: 1 when there is at least one (so that a script
    can use the command as a check), 0 when there is none."""
    import os
    import time

    from qex.core.watchers import find_watchers
    from qex.platform.proclist import list_processes

    now = time.time()
    found = find_watchers(list_processes(), self_pid=os.getpid())
    if as_json:
        from qex.cli.common import print_json

        print_json([watcher.to_dict(now) for watcher in found])
        return 1 if found else 0
    if not found:
        sys.stdout.write("No monitor loops found. Keep it that way: wait for a job with "
                         "`qex wait <id>`.\n")
        return 0
    lines: list[str] = []
    for watcher in found:
        data = watcher.to_dict(now)
        lines += [f"pid {watcher.pid}, running {_age(data['age_secs'])}",
                  f"  command: {_shown(watcher.command)}",
                  f"  kind:    {watcher.kind.value}: {data['why']}",
                  f"  instead: {data['instead']}"]
    sys.stdout.write("\n".join(lines) + "\n")
    noun = "loop" if len(found) == 1 else "loops"
    from qex.cli.common import warn

    warn(f"found {len(found)} monitor {noun}; stop each with `kill <pid>` once its work runs "
         "under qex")
    return 1
