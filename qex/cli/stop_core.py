"""The bodies of `qex kill` and `qex cancel`, without click (the fast path calls them too)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from qex.cli.common import get_paths


def kill_jobs(jobs: Sequence[str], signum: int, grace_secs: float) -> None:
    """Send `signum` to the running jobs that `jobs` name; end the command with its code."""
    from qex.cli.reach import open_connection
    from qex.cli.stop_jobs import Outcome, already_stopped, resolve_all, send
    from qex.core.states import FINAL
    from qex.platform.procs import signal_name

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    final = {s.value for s in FINAL}
    outcome = Outcome("kill")
    with conn:
        for found in resolve_all(conn, paths, jobs):
            for record in found.jobs:
                job_id = str(record.get("id"))
                if not outcome.first_time(job_id):
                    continue
                state = str(record.get("state"))
                if found.group is not None and state in final:
                    print(already_stopped(record), flush=True)
                    continue
                if found.group is not None and state == "queued":
                    send(outcome, f"{job_id} left the queue", conn.cancel, job_id)
                    continue
                send(outcome, f"{job_id} received the signal {signal_name(signum)}",
                     conn.kill, job_id, signum, grace_secs)
    sys.exit(outcome.code)


def cancel_jobs(jobs: Sequence[str]) -> None:
    """Take the queued jobs that `jobs` name out of the queue; end the command with its code."""
    from qex.cli.reach import open_connection
    from qex.cli.stop_jobs import Outcome, already_stopped, resolve_all, send
    from qex.core.states import FINAL

    paths = get_paths()
    conn = open_connection(paths, start=True)
    assert conn is not None
    final = {s.value for s in FINAL}
    outcome = Outcome("cancel")
    with conn:
        for found in resolve_all(conn, paths, jobs):
            for record in found.jobs:
                job_id = str(record.get("id"))
                if not outcome.first_time(job_id):
                    continue
                if found.group is not None and str(record.get("state")) in final:
                    print(already_stopped(record), flush=True)
                    continue
                send(outcome, f"{job_id} left the queue", conn.cancel, job_id)
    sys.exit(outcome.code)
