"""The two listings of every job: `list_json` (`qex list --json`) and `list_table` (`qex list`).

Both answer with a line and a document after it (`protocol.list_json`, `protocol.list_table`),
and both are made from what each job keeps between listings (`Listed`): a listing of
thousands of jobs then copies text instead of encoding every record again, and the command
receives the cells of its table instead of every field of every record (at 2,000 jobs the
command spent 80 of its 120 ms parsing records it then showed seven short cells of).

What a job keeps is remade when its record differs from the copy that it was made from:
the record's field names, and its values as `to_dict` gave them (copies of the lists and
dicts among them, and `==` goes into them, so a change inside `assigned` counts too). The
names are one tuple shared by all jobs, to keep the memory per job small.
"""

from __future__ import annotations

from _json import encode_basestring_ascii
from typing import Any

from qex.coordinator import pausing
from qex.coordinator.queries import damaged_entries, refresh_active
from qex.coordinator.state import Coordinator, Job
from qex.core import protocol
from qex.core import state_words as words
from qex.core.job_filters import chosen_jobs
from qex.core.jsontext import array, array_item
from qex.core.protocol import Result
from qex.core.record_json import display_record
from qex.core.record_view import JobView, RowCells, pool_use_lines, row_cells, time_text


class Listed:
    """What one job keeps for the listings, each part made on the first listing that needs
    it: the `list --json` item text, and the table row (its cells, and for a final job the
    row's text too, since nothing but the record changes it; another job's TIME moves on,
    so it is made again for each listing)."""

    __slots__ = ("cells", "item", "names", "row", "values")

    def __init__(self, names: tuple[str, ...], values: tuple[Any, ...]) -> None:
        self.names, self.values = names, values
        self.item: str | None = None
        self.cells: RowCells | None = None
        self.row: str | None = None

    def holds(self, fields: dict[str, Any]) -> bool:
        """True when this was made from a record with these fields (`vars(record)`)."""
        return self.values == tuple(fields.values()) and self.names == tuple(fields)


#: One tuple of field names shared by every job's `Listed`.
_FIELD_NAMES: dict[tuple[str, ...], tuple[str, ...]] = {}


def _listed(job: Job) -> tuple[Listed, dict[str, Any] | None]:
    """The job's `Listed`, remade when its record changed; with the record's dict when it
    was remade now (the parts are then made from it), else None."""
    kept = job.listed
    if kept is not None and kept.holds(vars(job.record)):
        return kept, None
    data = job.record.to_dict()
    names = tuple(data)
    kept = job.listed = Listed(_FIELD_NAMES.setdefault(names, names), tuple(data.values()))
    return kept, data


def handle_list_json(coord: Coordinator, message: dict[str, Any] | None = None
                     ) -> tuple[dict[str, Any], bytes]:
    """`list_json`: the answer line (the pauses, the damaged entries, and `filtered` when the
    message's filters chose the jobs) and the document that follows it
    (`protocol.list_json`). A group word that names no group gets the `no_such_job`
    refusal and no text."""
    refresh_active(coord)
    chosen = _chosen_jobs(coord, message or {})
    if isinstance(chosen, dict):
        return chosen, b""
    jobs, filters, _groups = chosen
    items: list[str] = []
    for job in jobs:
        kept, data = _listed(job)
        if kept.item is None:
            kept.item = array_item(display_record(data or job.record.to_dict()))
        items.append(kept.item)
    document = array(items).encode("ascii")
    answer = protocol.answer(Result.JOBS_JSON, size=len(document), pauses=_pauses(coord))
    if filters:
        answer["filtered"] = True
    damaged = damaged_entries(coord)
    if damaged:
        answer["damaged"] = damaged
    return answer, document


def _pauses(coord: Coordinator) -> dict[str, Any]:
    """The pause state as both listings send it (the `pause_state` answer's two parts)."""
    pauses = pausing.state_answer(coord)
    return {"queue": pauses["queue"], "locks": pauses["locks"]}


def _chosen_jobs(coord: Coordinator, message: dict[str, Any]
                 ) -> tuple[list[Job], dict[str, Any], list[str]] | dict[str, Any]:
    """(the jobs in submission order that the message's filters keep, the filters, the ids
    of the groups a group word named when it named several), or the refusal: filters of
    the wrong shape, or a group word that names no group."""
    filters = _filters(message)
    if isinstance(filters, str):
        return protocol.error(protocol.INTERNAL, filters)
    if "group_word" in filters:
        # A group word names a group by any of its stages: it is looked up among every job.
        jobs = coord.jobs.ordered()
    else:
        states = filters.get("states")
        found = coord.jobs.tagged_or_in(filters.get("tags", ()), filters.get("cwd_dir"),
                                        filters.get("under_dir"))
        jobs = coord.jobs.for_states(states) if found is None else found
        if states:
            # The test `chosen_jobs` makes, on the record itself: only the jobs it keeps get
            # their filter fields made (2,000 queued jobs for `list --state running`).
            wanted = {str(state) for state in states}
            jobs = [job for job in jobs if str(job.record.state) in wanted]
    groups: list[str] = []
    if filters:
        by_id = {job.id: job for job in jobs}
        try:
            kept = chosen_jobs([_filtered_fields(job) for job in jobs], **filters,
                               on_groups=groups.extend)
        except LookupError:
            word = filters["group_word"]
            return protocol.error(protocol.NO_SUCH_JOB, f"there is no group with the id or "
                                  f"the name `{word}`")
        jobs = [by_id[str(fields["id"])] for fields in kept]
    return jobs, filters, groups


def _row_text(cells: RowCells) -> str:
    return "[" + ",".join(map(encode_basestring_ascii, cells)) + "]"


def _row(job: Job, now: float) -> str:
    """One job's row of the table as JSON text: kept whole for a final job; for any other,
    the kept cells with the TIME of `now`."""
    kept, data = _listed(job)
    if kept.row is not None:
        return kept.row
    if kept.cells is None:
        record = JobView(data or job.record.to_dict())
        kept.cells = row_cells(record, now)
        if record.state in words.FINAL_WORDS:
            kept.row = _row_text(kept.cells)
            return kept.row
        return _row_text(kept.cells)
    # The record is the one the cells were made from, so its clock fields are theirs.
    now_record = job.record
    clock = JobView({"state": str(now_record.state), "submitted_at": now_record.submitted_at,
                     "started_at": now_record.started_at,
                     "finished_at": now_record.finished_at})
    cells = kept.cells
    return _row_text((*cells[:5], time_text(clock, now), cells[6]))


def handle_list_table(coord: Coordinator, message: dict[str, Any] | None = None
                      ) -> tuple[dict[str, Any], bytes]:
    """`list_table`: the answer line (the pool lines, the pauses, the damaged entries) and
    the rows that follow it (`protocol.list_table`): every job's, or those that the
    message's filters keep. A group word that names no group gets the `no_such_job`
    refusal and no text."""
    refresh_active(coord)
    now = coord.now()
    chosen = _chosen_jobs(coord, message or {})
    if isinstance(chosen, dict):
        return chosen, b""
    jobs, filters, groups = chosen
    rows = [_row(job, now) for job in jobs]
    document = ("[" + ",\n".join(rows) + "]").encode("ascii")
    answer = protocol.answer(
        Result.JOBS_TABLE, size=len(document),
        pools=pool_use_lines([job.record.to_dict() for job in coord.started_jobs()]),
        pauses=_pauses(coord))
    if groups:
        answer.update(groups=groups, group=filters["group_word"])
    damaged = damaged_entries(coord)
    if damaged:
        answer["damaged"] = damaged
    return answer, document


def _filters(message: dict[str, Any]) -> dict[str, Any] | str:
    """The keywords of `chosen_jobs` that the message asks for, or what is wrong with them."""
    found: dict[str, Any] = {}
    for key, name in (("states", "states"), ("tags", "tags")):
        value = message.get(key)
        if value is None:
            continue
        if not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            return f"`{key}` must be a list of words"
        found[name] = value
    for key, name in (("group", "group_word"), ("cwd", "cwd_dir"), ("under", "under_dir")):
        value = message.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            return f"`{key}` must be a string"
        found[name] = value
    return found


def _filtered_fields(job: Job) -> dict[str, Any]:
    """The fields of a record that `chosen_jobs` reads, as the record's dict has them; kept
    once the job is final, since a final record never changes (a filtered listing of
    thousands of finished jobs made them all again each time)."""
    kept = job.filter_fields
    if kept is not None:
        return kept
    record = job.record
    fields = {"id": record.id, "state": str(record.state), "tags": record.tags,
              "group": record.group, "group_name": record.group_name, "cwd": record.cwd}
    if job.final:
        job.filter_fields = fields
    return fields
