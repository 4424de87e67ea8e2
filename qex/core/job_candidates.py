"""Which jobs a Tab press offers after a command that takes ids, and in what order.

One rule for the two places that apply it: the coordinator, which holds the records and
answers `complete` (`qex.coordinator.queries.handle_complete`), and the command, which reads
them from disk when no coordinator answers (`qex.cli.complete_jobs`). Pure: it sees (id,
name) pairs, newest first, and says what to offer.
"""

from __future__ import annotations

from qex.core.names import safe_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

#: What a command's id argument offers: every job, the jobs that run, the queued ones.
KINDS = ("ids", "active", "queued")
_STATES = {"active": frozenset({"starting", "running"}), "queued": frozenset({"queued"})}
#: At most this many candidates: the recent jobs are the ones a person completes, and a shell
#: that lists thousands of ids at one Tab press is of no help.
MAX_ITEMS = 200


def pair(job_id: str, name: object) -> tuple[str, str]:
    """A job's (id, name as offered): its safe name, `job` for a job without one."""
    return job_id, safe_name(str(name or "job"))


def states_of(kind: str) -> frozenset[str] | None:
    """The states of the jobs that `kind` offers; None for every job (`ids`, or a kind this
    build does not know)."""
    return _STATES.get(kind)


def kept(kind: str, state: object) -> bool:
    """Whether a job in `state` is offered for `kind`."""
    states = states_of(kind)
    return states is None or state in states


def matching(pairs: Iterable[tuple[str, str]], incomplete: str
             ) -> Iterable[tuple[str, str]]:
    """The (id, safe name) pairs that can give a candidate for `incomplete`."""
    return (pair for pair in pairs if pair[0].startswith(incomplete)
            or pair[1].startswith(incomplete))


def offered(pairs: Iterable[tuple[str, str]], incomplete: str) -> list[tuple[str, str]]:
    """(value, help) of what a Tab press offers for `incomplete` from (id, safe name) pairs,
    newest first: each job's id, and its name the first time it comes, up to `MAX_ITEMS`."""
    items: list[tuple[str, str]] = []
    names: set[str] = set()
    for job_id, name in pairs:
        if job_id.startswith(incomplete):
            items.append((job_id, name))
        if name.startswith(incomplete) and name not in names:
            names.add(name)
            items.append((name, f"the name of {job_id[:8]}"))
        if len(items) >= MAX_ITEMS:
            break
    return items
