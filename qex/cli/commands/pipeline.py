"""`qex pipeline FILE`: submit every stage of a pipeline file as one group.

The names in the file belong to this one submission: each becomes the id made a moment
before, so a second run of the same file never waits for a stage of the first. The whole
file is read, built and checked (capabilities included) before the first stage is submitted.
"""

from __future__ import annotations

import click

from qex.cli.path_text import FILE


@click.command("pipeline")
@click.argument("file", metavar="FILE", type=FILE)
@click.option("--name", metavar="NAME", help="The group's name (default: the file's `name`).")
@click.option("--id-file", metavar="FILE", type=FILE,
              help="Write the group id and every stage id here (`.json` for JSON).")
@click.option("--json", "as_json", is_flag=True,
              help="Print {group, group_name, jobs: [{name, id}]} instead of the group id.")
def command(file: str, name: str | None, id_file: str | None, as_json: bool) -> None:
    """Submit the stages of FILE (TOML, YAML or JSON); print the group id on stdout and each
    stage's id on stderr."""
    from qex.cli.pipeline_submit import submit_pipeline

    submit_pipeline(file, name=name, id_file=id_file, as_json=as_json)
