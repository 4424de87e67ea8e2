"""Refusing work a coordinator cannot obey: the floor, per-job options, pipelines."""

from __future__ import annotations

import pytest

from qex.core.capability_check import (
    CapabilityRefusal,
    Stage,
    job_refusal,
    pipeline_refusal,
    preflight,
    required,
)
from qex.core.coordinator_notes import floor_refusal, version_warning
from qex.core.protocol import CAPABILITIES

ALL = set(CAPABILITIES)
INFO = {"pid": 4321, "version": "0.7.0"}


def test_required_capabilities() -> None:
    assert required({}) == []
    spec = {"needs": ["x"], "locks": ["db"], "claims": {"gpu": {}}, "retries": 2,
            "max_queue_time": 60, "group": "g", "nice": 5, "dedupe_key": "k"}
    assert set(required(spec)) == {"dependencies", "locks", "pools", "retries",
                                   "max-queue-time", "groups", "politeness", "dedupe"}
    assert required({"locks": ["db"]}) == ["locks"]


def test_floor() -> None:
    assert floor_refusal(INFO) is None
    old = floor_refusal({"pid": 7, "version": "0.5.2"})
    assert old is not None and "kill 7" in old and "0.6.0" in old
    assert floor_refusal({"pid": 7, "version": "0.0.0-dev+g98513e2"}) is None
    assert floor_refusal({"pid": 0, "version": "unknown"}) is not None


def test_job_refusal_names_the_option() -> None:
    assert job_refusal({"locks": ["db"]}, ALL, INFO) is None
    message = job_refusal({"locks": ["db"], "retries": 1}, {"retries"}, INFO)
    assert message is not None
    assert "--lock" in message and "kill 4321" in message and "--retries" not in message


def test_pipeline_refusal_attributes_stages_and_config() -> None:
    stages = [
        Stage("build", {"group": "g"}),
        Stage("test", {"group": "g", "needs": ["b"], "max_queue_time": 5.0},
              from_config={"max-queue-time"}),
        Stage("lint", {"group": "g", "needs": ["b"]}),
    ]
    assert pipeline_refusal(stages, ALL, INFO) is None
    message = pipeline_refusal(stages, {"groups"}, INFO)
    assert message is not None
    assert "the stages `test`, `lint`" in message
    assert "default of the configuration" in message
    assert "a group" in pipeline_refusal(stages, set(), INFO)  # type: ignore[operator]


def test_preflight_and_version_note() -> None:
    assert preflight(INFO, ALL, [{"locks": ["x"]}], own_version="0.7.0") == []
    notes = preflight({"pid": 1, "version": "0.6.5"}, ALL, [{}], own_version="0.7.0")
    assert len(notes) == 1 and "0.6.5" in notes[0]
    with pytest.raises(CapabilityRefusal):
        preflight(INFO, set(), [{"locks": ["x"]}])
    replaced = version_warning({"pid": 1, "version": "0.7.0", "program_replaced": True}, "0.7.0")
    assert replaced is not None and "replaced" in replaced
