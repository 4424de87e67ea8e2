"""One table of job fields (qex.core.job_fields): every field has its option, its job-file
key, its schema entry and its documentation, and the click commands are built from it."""

from __future__ import annotations

from pathlib import Path

import pytest

from qex.core import job_fields as jf
from qex.core import jobfile, schemas
from qex.core.jobspec import SubmitOptions
from qex.core.model import fields

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_submit_option_is_a_row() -> None:
    names = {row.name for row in jf.FIELDS if row.name is not None}
    assert {f.name for f in fields(SubmitOptions)} == names | set(jf.NOT_OPTIONS)
    assert len({row.option for row in jf.FIELDS}) == len(jf.FIELDS)
    assert len({row.dest for row in jf.FIELDS}) == len(jf.FIELDS)


@pytest.mark.parametrize("command", ["submit", "run"])
def test_the_click_commands_have_every_option(command: str) -> None:
    import importlib

    module = importlib.import_module(f"qex.cli.commands.{command}")
    options = {opt for param in module.command.params for opt in param.opts}
    assert {row.option for row in jf.FIELDS} <= options


def test_job_file_keys_and_schema_come_from_the_table() -> None:
    assert jf.file_keys() == jobfile.JOB_FIELDS
    assert jf.file_keys(stage=True) == jobfile.STAGE_FIELDS
    job = schemas.job_schema()["properties"]
    stage = schemas.pipeline_schema()["$defs"]["stage"]["properties"]
    for row in jf.FIELDS:
        if row.file_key is None:
            continue
        top, _, sub = row.file_key.partition(".")
        assert top in job, row
        assert (top in stage) == row.stage or top == "resources", row
        if sub:
            assert sub in job[top]["properties"], row


def test_every_field_is_documented() -> None:
    cli = (DOCS / "cli.md").read_text()
    records = (DOCS / "records.md").read_text()
    job_files = records[records.index("## Job files"):]
    for row in jf.FIELDS:
        assert f"`{row.option}" in cli, row.option
        if row.file_key is not None:
            key = row.file_key.rpartition(".")[2]
            assert f"`{key}`" in job_files or f"[{row.file_key}]" in job_files, row.file_key


def test_submit_options_from_reads_every_dest() -> None:
    from qex.cli.submitting import submit_options_from

    values: dict[str, object] = {"command_args": ("make",)}
    for row in jf.FIELDS:
        values[row.dest] = {jf.MULTI: ("a",), jf.FLAG: True, jf.INT: 3, jf.COUNT: 2}.get(
            row.kind, "x")
    opts = submit_options_from(values)
    assert opts.command == ["make"]
    for row in jf.FIELDS:
        if row.name is not None:
            assert getattr(opts, row.name) == (["a"] if row.kind == jf.MULTI
                                               else values[row.dest]), row
    empty = submit_options_from({})
    assert empty == SubmitOptions()


def test_each_capability_of_an_option_is_one_the_coordinator_can_name() -> None:
    from qex.core.capability_check import OPTION_TEXT
    from qex.core.protocol import CAPABILITIES

    needing = jf.options_needing()
    assert set(needing) <= set(CAPABILITIES)
    assert needing["dependencies"] == "--needs and --after"
    assert needing["pools"] == "--gpu, --vram and --claim"
    assert set(needing) | {"groups"} <= set(OPTION_TEXT)
