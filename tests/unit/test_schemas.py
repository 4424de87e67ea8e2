"""The JSON Schemas match the records qex really writes, checked with `jsonschema`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from qex.cli.commands.schema import command as schema_command
from qex.core import jobfile, model
from qex.core.records import JobSpec, JobStatus
from qex.core.schemas import DIALECT, SCHEMAS, STATUS_PROPERTIES, render
from qex.core.states import State


def valid(name: str, value: Any) -> list[str]:
    """Every way in which `value` breaks the schema `name` (an empty list: it is valid)."""
    validator = Draft202012Validator(SCHEMAS[name]())
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '$'}: {e.message}"
            for e in validator.iter_errors(value)]


def _spec(**overrides: Any) -> JobSpec:
    values: dict[str, Any] = {
        "id": "3f0c1d2e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", "name": "fit", "cwd": "/srv/p",
        "command": ["python", "fit.py"], "env": {"PATH": "/usr/bin"}, "cpu": 2,
        "mem": 4 * 1024**3, "submitted_at": 1_700_000_000.25,
    }
    values.update(overrides)
    return JobSpec(**values)


# --- every schema is a well-formed draft 2020-12 document -------------------------------------


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_schema_is_json_with_the_2020_12_dialect(name: str) -> None:
    document = json.loads(render(name))
    Draft202012Validator.check_schema(document)
    assert document["$schema"] == DIALECT
    assert document["$id"].endswith(name)
    assert document["type"] == "object"


def test_the_schema_names_are_the_documented_ones() -> None:
    assert set(SCHEMAS) == {"status", "job", "pipeline", "event"}


# --- status: the schema IS the record --------------------------------------------------------


def test_the_status_schema_lists_exactly_the_fields_of_jobstatus() -> None:
    fields = [f.name for f in model.fields(JobStatus)]
    assert list(STATUS_PROPERTIES) == fields
    assert SCHEMAS["status"]()["required"] == fields


def test_the_state_enum_is_every_state() -> None:
    assert STATUS_PROPERTIES["state"]["enum"] == [s.value for s in State]


def test_a_new_record_is_valid() -> None:
    record = JobStatus.new(_spec(), boot_id="b", oom_retries=2).to_dict()
    assert valid("status", record) == []


def test_a_finished_record_with_every_optional_part_is_valid() -> None:
    spec = _spec(group="0e9d8c7b-6a5f-4e3d-9c1b-a09876543210", group_name="ci",
                 needs=["11111111-2222-4333-8444-555555555555"], locks=["db"],
                 claims={"gpu": {"count": 2, "size": 8 * 1024**3}}, tags=["x"], retries=1,
                 dedupe_key="k")
    status = JobStatus.new(spec, boot_id="b", oom_retries=0)
    status.state = State.OOM.value
    status.exit_code = None
    status.signal = 9
    status.last_pid = 4242
    status.started_at = 1_700_000_010.0
    status.finished_at = 1_700_000_020.0
    status.usage = {"max_rss": 123456, "cpu_secs": 1.5, "source": "cgroup"}
    status.assigned = {"gpu": {"units": 2, "devices": [0, 3], "size": 8 * 1024**3}}
    status.logs_dropped = {"stdout_bytes": 10, "stdout_lines": 1, "stderr_bytes": 0,
                           "stderr_lines": 0, "limit": 32 * 1024**2, "incomplete": False}
    status.enforcement = {"mode": "hard", "active": True, "reason": None,
                          "backend": "pystemd", "unit": "qex-3f0c1d2e.scope",
                          "memory_max": 4 * 1024**3, "memory_high": None}
    status.oom_evidence = "cgroup"
    status.error = "the kernel stopped this job for memory"
    status.attempts = 3
    assert valid("status", status.to_dict()) == []


@given(
    state=st.sampled_from(list(State)),
    cpu=st.integers(min_value=1, max_value=512),
    mem=st.integers(min_value=0, max_value=2**50),
    exit_code=st.none() | st.integers(min_value=-1, max_value=255),
    name=st.text(max_size=20),
    command=st.lists(st.text(max_size=10), min_size=1, max_size=4),
)
def test_any_record_the_model_can_hold_is_valid(
    state: State, cpu: int, mem: int, exit_code: int | None, name: str, command: list[str],
) -> None:
    status = JobStatus.new(_spec(name=name, command=command, cpu=cpu, mem=mem),
                           boot_id=None, oom_retries=0)
    status.state = state.value
    status.exit_code = exit_code
    assert valid("status", status.to_dict()) == []


def test_the_status_schema_rejects_what_qex_never_writes() -> None:
    good = JobStatus.new(_spec(), boot_id="b", oom_retries=2).to_dict()
    assert valid("status", {**good, "state": "paused"})
    assert valid("status", {**good, "cpu": 0})
    assert valid("status", {**good, "forced": "yes"})
    missing = dict(good)
    del missing["attempts"]
    assert valid("status", missing)


def test_an_unknown_field_in_a_record_is_allowed() -> None:
    good = JobStatus.new(_spec(), boot_id="b", oom_retries=2).to_dict()
    assert valid("status", {**good, "field_from_the_future": [1, 2]}) == []


# --- job and pipeline files ------------------------------------------------------------------


def test_a_full_job_file_is_valid_and_a_misspelt_key_is_not() -> None:
    job = {
        "name": "fit-model", "cwd": "/srv/project", "command": ["python", "fit.py"],
        "timeout": "6h", "max_queue_time": 2700, "tags": ["nightly"], "priority": 1,
        "needs": ["prepare"], "after": ["tidy"], "env_capture": "minimal", "nice": 10,
        "locks": ["dataset"], "retries": 2, "no_limit_env_hints": False,
        "dedupe_key": "fit:/srv/project", "dedupe_window": "1h",
        "resources": {"cpu": "guess", "mem": "12GB", "gpu": 1, "vram": "16GB",
                      "claims": {"net": 1, "fpga": {"count": 2, "size": "4GB"}}},
        "env": {"DATA_ROOT": "/srv/data"},
    }
    assert valid("job", job) == []
    assert valid("job", {"command": ["true"]}) == []
    assert valid("job", {"comand": ["true"]})
    assert valid("job", {"command": ["true"], "resources": {"cpu": "lots"}})
    assert valid("job", {"command": ["true"], "resources": {"cpu": 0}})
    assert valid("job", {"command": ["true"], "nice": 40})
    assert valid("job", {"command": "make test"})


def test_the_file_schemas_have_exactly_the_fields_the_parser_takes() -> None:
    job, pipeline = SCHEMAS["job"](), SCHEMAS["pipeline"]()
    assert set(job["properties"]) == set(jobfile.JOB_FIELDS)
    assert set(pipeline["properties"]) == set(jobfile.PIPELINE_FIELDS)
    assert set(pipeline["$defs"]["stage"]["properties"]) == set(jobfile.STAGE_FIELDS)
    assert set(job["properties"]["resources"]["properties"]) == set(jobfile.RESOURCE_FIELDS)


def test_what_the_schema_accepts_the_parser_accepts() -> None:
    job = {
        "name": "fit", "command": ["python", "fit.py"], "timeout": "6h",
        "max_queue_time": 2700, "env_capture": "minimal", "nice": 5, "retries": 1,
        "dedupe_key": "fit:/p", "dedupe_window": "1h", "tags": ["a"], "locks": ["db"],
        "resources": {"cpu": "2", "mem": "12GB", "gpu": 1, "vram": "16GB",
                      "claims": {"net": 1, "fpga": {"count": 2, "size": "4GB"}}},
        "env": {"A": "b"},
    }
    assert valid("job", job) == []
    jobfile.parse_job_file(job, "fit.toml")
    pipeline = {"name": "ci", "jobs": [
        {"name": "a", "command": ["make"]},
        {"name": "b", "command": ["make", "check"], "needs": ["a"]},
    ]}
    assert valid("pipeline", pipeline) == []
    jobfile.parse_pipeline(pipeline, "ci.toml")


def test_a_pipeline_file_is_valid_and_a_stage_cannot_have_a_dedupe_key() -> None:
    pipeline: dict[str, Any] = {
        "name": "release",
        "jobs": [
            {"name": "compile", "command": ["make"]},
            {"name": "tests", "command": ["make", "check"], "needs": ["compile"],
             "resources": {"cpu": 4, "mem": "8GB"}},
        ],
    }
    assert valid("pipeline", pipeline) == []
    pipeline["jobs"][1]["dedupe_key"] = "x"
    assert valid("pipeline", pipeline)
    assert valid("pipeline", {"jobs": []})
    assert valid("pipeline", {"jobs": [{"name": "a"}]})


# --- event lines ---------------------------------------------------------------------------


def test_each_kind_of_event_line_is_valid() -> None:
    record = JobStatus.new(_spec(), boot_id="b", oom_retries=2).to_dict()
    stream = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
    lines = [
        {"event": "stream", "time": 1.0, "version": "0.7.0", "pid": 10, "stream_id": stream,
         "coordinator_started_at": 0.5, "first_seq": 1, "last_seq": 0},
        {"event": "job", "seq": 1, "time": 1.0, "id": record["id"], "name": "fit",
         "state": "queued", "previous": None, "change": "state", "job": record},
        {"event": "gap", "time": 2.0, "missed": None, "next_seq": 5, "reason": "new stream"},
        {"event": "bye", "time": 3.0, "reason": "no job operates"},
        {"event": "something-new", "whatever": True},
    ]
    for line in lines:
        assert valid("event", line) == [], line


def test_a_job_line_must_carry_a_valid_record() -> None:
    record = JobStatus.new(_spec(), boot_id="b", oom_retries=2).to_dict()
    line = {"event": "job", "seq": 1, "time": 1.0, "id": record["id"], "name": "fit",
            "state": "queued", "previous": None, "change": "state",
            "job": {**record, "state": "bogus"}}
    assert valid("event", line)
    del line["job"]
    assert valid("event", line)


# --- the command ---------------------------------------------------------------------------


def test_the_command_prints_each_schema_and_refuses_other_names() -> None:
    runner = CliRunner()
    for name in SCHEMAS:
        result = runner.invoke(schema_command, [name])
        assert result.exit_code == 0
        assert json.loads(result.output) == SCHEMAS[name]()
    assert runner.invoke(schema_command, ["STATUS"]).exit_code == 0
    assert runner.invoke(schema_command, ["config"]).exit_code == 2
    assert runner.invoke(schema_command, []).exit_code == 2
