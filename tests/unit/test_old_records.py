"""Records that an earlier qex wrote still load, write back unchanged, and render the same.

The fixtures and the expected output are described in tests/fixtures/records/README.md.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, get_args

import pytest
from jsonschema import Draft202012Validator

from qex.cli.render_status import status_json, status_text
from qex.cli.render_table import render_jobs
from qex.core import states
from qex.core.record_json import display_record, sort_key
from qex.core.record_view import typed
from qex.core.records import JobSpec, JobStatus
from qex.core.schemas import CLAIM_SOURCES, ENV_CAPTURE, SCHEMAS
from qex.core.states import State
from qex.store import jobs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "records"
EXPECTED = FIXTURES / "expected"
NOW = 1796200000.0  # the clock the expected text was rendered at
CASES = sorted(p.name.removesuffix(".status.json") for p in FIXTURES.glob("*.status.json"))
SPECS = sorted(p.name.removesuffix(".spec.json") for p in FIXTURES.glob("*.spec.json"))
#: Records written by today's code (the hand-made ones drop or add fields on purpose).
WRITTEN = [c for c in CASES if c not in ("older", "rich", "session-oom")]


def _data(case: str, kind: str = "status") -> dict[str, Any]:
    data = json.loads((FIXTURES / f"{case}.{kind}.json").read_text())
    assert isinstance(data, dict)
    return data


def test_the_fixtures_cover_every_state_but_starting() -> None:
    seen = {_data(case)["state"] for case in CASES}
    assert seen >= {s.value for s in State} - {"starting"}
    assert len(CASES) >= 13 and "older" in SPECS


@pytest.mark.parametrize("case", CASES)
def test_a_status_record_loads_with_typed_parts(case: str) -> None:
    record = JobStatus.from_dict(_data(case))
    assert isinstance(record.state, State)
    assert record.claim_source in get_args(states.ClaimSource)
    assert record.oom_evidence is None or record.oom_evidence in states.OOM_EVIDENCE
    if record.enforcement is not None:
        assert record.enforcement.get("mode") in states.ENFORCE_MODES
    assert record.final is (record.state not in (State.QUEUED, State.STARTING, State.RUNNING))


@pytest.mark.parametrize("case", CASES)
def test_the_store_reads_a_record_in_its_job_directory(case: str, tmp_path: Path) -> None:
    shutil.copy(FIXTURES / f"{case}.status.json", tmp_path / jobs.STATUS)
    record = jobs.read_status(tmp_path)
    assert record is not None and record.id == _data(case)["id"]


def _written_back(tmp_path: Path, name: str, record: JobStatus | JobSpec) -> dict[str, Any]:
    if isinstance(record, JobStatus):
        jobs.write_status(tmp_path, record)
    else:
        jobs.write_spec(tmp_path, record)
    data = json.loads((tmp_path / name).read_text())
    assert isinstance(data, dict)
    return data


@pytest.mark.parametrize("case", WRITTEN)
def test_a_record_of_today_writes_back_unchanged(case: str, tmp_path: Path) -> None:
    """Every field comes back in its place with its value; a newer qex only appends fields
    (with their empty defaults) after them."""
    for name, kind, cls in ((jobs.STATUS, "status", JobStatus), (jobs.SPEC, "spec", JobSpec)):
        data = _data(case, kind)
        back = _written_back(tmp_path, name, cls.from_dict(data))
        assert list(back)[:len(data)] == list(data)
        assert {k: back[k] for k in data} == data
        assert all(back[k] in (None, [], {}, False, 0) for k in list(back)[len(data):])


def test_an_older_record_gets_the_defaults_of_the_fields_it_lacks() -> None:
    record = JobStatus.from_dict(_data("older"))
    assert record.enforcement is None and record.oom_retries_left is None
    assert record.queue_time_applies is True and record.note is None
    spec = JobSpec.from_dict(_data("older", "spec"))
    assert spec.hint_keys == [] and spec.explicit_claim is False and spec.learn_key is None


def test_unknown_fields_are_ignored_and_an_unknown_state_refused(tmp_path: Path) -> None:
    data = {**_data("completed"), "from_a_newer_qex": {"x": 1}}
    assert "from_a_newer_qex" not in JobStatus.from_dict(data).to_dict()
    with pytest.raises(ValueError, match="not a valid State"):
        JobStatus.from_dict({**data, "state": "hibernating"})
    (tmp_path / jobs.STATUS).write_text(json.dumps({**data, "state": "hibernating"}))
    assert jobs.read_status(tmp_path) is None


@pytest.mark.parametrize("case", CASES)
def test_status_json_is_unchanged(case: str) -> None:
    shown = json.dumps(status_json(_data(case)), indent=2) + "\n"
    assert shown == (EXPECTED / f"{case}.json.txt").read_text()


@pytest.mark.parametrize("case", CASES)
def test_status_text_is_unchanged(case: str) -> None:
    text = status_text(typed(_data(case)), now=NOW) + "\n"
    assert text == (EXPECTED / f"{case}.text.txt").read_text()


def test_list_json_and_table_are_unchanged() -> None:
    records = sorted((_data(case) for case in CASES), key=sort_key)
    shown = json.dumps([display_record(r) for r in records], indent=2) + "\n"
    assert shown == (EXPECTED / "list.json.txt").read_text()
    table = "\n".join(render_jobs([typed(r) for r in records], now=NOW)) + "\n"
    assert table == (EXPECTED / "list.text.txt").read_text()


def test_the_word_sets_agree_with_their_literals_and_the_schema() -> None:
    assert states.CLAIM_SOURCES == get_args(states.ClaimSource) == tuple(CLAIM_SOURCES)
    assert states.ENV_CAPTURES == get_args(states.EnvCapture) == tuple(ENV_CAPTURE)
    assert get_args(states.EnforceMode) == states.ENFORCE_MODES
    assert get_args(states.OomEvidence) == states.OOM_EVIDENCE
    assert states.pick("soft", states.ENFORCE_MODES) == "soft"
    assert states.pick("medium", states.ENFORCE_MODES) is None


@pytest.mark.parametrize("case", [c for c in CASES if c != "older"])
def test_a_record_of_today_matches_the_published_schema_once_loaded(case: str) -> None:
    validator = Draft202012Validator(SCHEMAS["status"]())
    written = JobStatus.from_dict(_data(case)).to_dict()
    assert [e.message for e in validator.iter_errors(written)] == []
