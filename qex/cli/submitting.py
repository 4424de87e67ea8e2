"""Turning a command line into a submitted job: options, spec, capability check, submit.

Shared by `submit`, `run`, `pipeline` and `rerun`. The spec is resolved completely HERE, on
the CLI side (helper: `qex.core.jobspec.build_spec`), because the coordinator may be hours
old and live in another shell: the job gets this shell's environment and directory, the
budget as it is now, and the learner's claim for this command.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from qex.cli.common import warn
from qex.cli.jobcmd import fail
from qex.core.model import dataclass, field

if TYPE_CHECKING:
    from qex.client.connection import Connection
    from qex.core.config import Config, Machine
    from qex.core.jobfile import JobFile
    from qex.core.jobspec import SubmitOptions
    from qex.core.protocol import Submitted
    from qex.core.records import JobSpec
    from qex.store.paths import Paths

F = TypeVar("F", bound=Callable[..., Any])

COMMAND_SETTINGS = {"allow_interspersed_args": False}


def spec_options(func: F) -> F:
    """Add the options of `qex submit` and `qex run` that describe the job: one per row of
    `qex.core.job_fields.FIELDS`, then `-- COMMAND...`."""
    import click  # here, so that the fast path can use this module without click

    from qex.cli.path_text import BY_METAVAR
    from qex.core import job_fields as jf

    kinds: dict[str, dict[str, Any]] = {
        jf.TEXT: {},
        jf.INT: {"type": int},
        jf.COUNT: {"type": click.IntRange(min=0)},
        jf.FLAG: {"is_flag": True},
        jf.MULTI: {"multiple": True},
    }
    func = click.argument("command_args", nargs=-1, type=click.UNPROCESSED,
                          metavar="-- COMMAND...")(func)
    for row in reversed(jf.FIELDS):
        settings: dict[str, Any] = {"help": row.help, **kinds[row.kind]}
        if row.metavar is not None:
            settings["metavar"] = row.metavar
            if row.kind == jf.TEXT and row.metavar in BY_METAVAR:
                settings["type"] = BY_METAVAR[row.metavar]
        func = click.option(row.option, row.dest, **settings)(func)
    return func


def submit_options_from(values: dict[str, Any]) -> SubmitOptions:
    """The jobspec options for parsed option values keyed by `dest` (needs/after left as
    words); a parser without click gives the same dictionary."""
    from qex.core import job_fields as jf
    from qex.core.jobspec import SubmitOptions

    given: dict[str, Any] = {"command": list(values.get("command_args") or ())}
    for row in jf.FIELDS:
        if row.name is None:
            continue
        value = values.get(row.dest)
        if row.kind == jf.MULTI:
            value = list(value or ())
        elif row.kind == jf.FLAG:
            value = bool(value)
        given[row.name] = value
    return SubmitOptions(**given)


def read_job_file(path_text: str) -> JobFile:
    """The job of `--job FILE`; an unreadable or wrong file is 121 with its one sentence."""
    from pathlib import Path

    from qex.core.jobfile import JobFileError, parse_job_file
    from qex.store.structured import StructuredError, read_structured

    path = Path(path_text)
    try:
        return parse_job_file(read_structured(path), os.path.abspath(path_text))
    except (StructuredError, JobFileError) as exc:
        fail(str(exc))


@dataclass
class Submitter:
    """Everything a submission needs once: paths, config, machine, and the connection."""

    paths: Paths
    config: Config
    machine: Machine
    conn: Connection
    environ: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    shell_cwd: str = field(default_factory=os.getcwd)
    _records: list[dict[str, Any]] | None = None

    @classmethod
    def open(cls, paths: Paths) -> Submitter:
        from qex.cli.common import load_config
        from qex.cli.reach import open_connection
        from qex.core.states import Exit
        from qex.platform.machine import machine

        config = load_config(paths, Exit.QEX_FAILED)
        conn = open_connection(paths, start=True)
        assert conn is not None
        return cls(paths=paths, config=config, machine=machine(), conn=conn)

    def records(self) -> list[dict[str, Any]]:
        from qex.cli.resolve import fetch_records

        if self._records is None:
            from qex.core.word_match import ResolveError

            try:
                self._records = fetch_records(self.conn, self.paths)
            except ResolveError as exc:
                fail(exc.message)
        return self._records

    def dependency_ids(self, words: Iterable[str], option: str) -> list[str]:
        """Resolve `--needs`/`--after` words (names, ids, groups) to job ids."""
        from qex.cli.exits import Failure
        from qex.core.word_match import ResolveError, dependency_ids
        from qex.store.history import read_all

        words = [w for w in words if w.strip()]
        if not words:
            return []
        history = {k.lower(): v for k, v in read_all(self.paths).items()}
        try:
            return dependency_ids(self.records(), words, option=option, history=history,
                                  now=time.time())
        except ResolveError as exc:
            raise Failure(exc.message, not_found=exc.not_found) from None

    def build(self, opts: SubmitOptions, job_file: JobFile | None, *, job_id: str,
              now: float | None = None, learn_key: list[str] | None = None,
              ) -> tuple[JobSpec, list[str]]:
        """The spec, with the learner's claim when a half of the claim was not given."""
        from qex.core.jobspec import SpecError, build_spec

        when = time.time() if now is None else now
        try:
            spec, warnings = build_spec(
                opts, job_file, config=self.config, machine=self.machine, environ=self.environ,
                shell_cwd=self.shell_cwd, learned=None, job_id=job_id, now=when,
                learn_key=learn_key, config_path=str(self.paths.config_file),
            )
            if spec.explicit_claim or not self.config.learn.enabled:
                return spec, warnings
            learned = self._learned(spec.cwd, learn_key or spec.command)
            if learned is None:
                return spec, warnings
            return build_spec(
                opts, job_file, config=self.config, machine=self.machine, environ=self.environ,
                shell_cwd=self.shell_cwd, learned=learned, job_id=job_id, now=when,
                learn_key=learn_key, config_path=str(self.paths.config_file),
            )
        except SpecError as exc:
            fail(str(exc))

    def _learned(self, cwd: str, argv: list[str]) -> tuple[int | None, int | None] | None:
        from qex.core.learner import learn_key, suggest
        from qex.store.usage import lookup

        try:
            entry = lookup(self.paths, learn_key(cwd, argv))
        except OSError:
            return None
        found = suggest(entry, self.config.learn.margin, self.config.retry.growth,
                        self.config.mem_budget(self.machine))
        return (found[0], found[1]) if found is not None else None

    def preflight(self, specs: list[dict[str, Any]]) -> None:
        """Refuse what the coordinator cannot obey (121); print the version note."""
        from qex.core.capability_check import CapabilityRefusal, preflight

        info = self.conn.info()
        capabilities = self.conn.capabilities()
        try:
            for note in preflight(info, capabilities, specs):
                warn(note)
        except CapabilityRefusal as exc:
            fail(exc.message)

    def send(self, spec: JobSpec) -> Submitted:
        """Submit one spec; the `submitted` answer. A refusal raises `Refused` (121/127)."""
        answer = self.conn.submit(spec.to_dict())
        self._records = None
        return answer
