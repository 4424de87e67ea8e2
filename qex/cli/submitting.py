"""Turning a command line into a submitted job: options, spec, capability check, submit.

Shared by `submit`, `run`, `pipeline` and `rerun`. The spec is resolved completely HERE, on
the CLI side (helper: `qex.core.jobspec.build_spec`), because the coordinator may be hours
old and live in another shell: the job gets this shell's environment and directory, the
budget as it is now, and the learner's claim for this command.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from qex.cli.common import warn
from qex.cli.jobcmd import fail
from qex.core.model import dataclass, field

if TYPE_CHECKING:
    from qex.client.connection import Connection
    from qex.core.config import Config, Machine
    from qex.core.jobfile import JobFile
    from qex.core.jobspec import SubmitOptions
    from qex.core.records import JobSpec
    from qex.store.paths import Paths

F = TypeVar("F", bound=Callable[..., Any])

#: The keyword names that `spec_options` adds (everything that shapes the job itself).
SPEC_OPTION_NAMES = (
    "cpu", "mem", "gpu", "vram", "claim", "lock", "name", "cwd", "env", "env_capture",
    "no_env_capture", "tag", "priority", "timeout", "max_queue_time", "needs", "after", "job",
    "retries", "nice", "no_limit_env_hints", "dedupe_key", "dedupe_window", "id_file",
)

COMMAND_SETTINGS = {"allow_interspersed_args": False}


def spec_options(func: F) -> F:
    """Add the options of `qex submit` and `qex run` that describe the job."""
    decorators = [
        click.option("--cpu", metavar="N|WORD",
                     help="Cores this job claims: a number, or half/guess or full/max."),
        click.option("--mem", metavar="SIZE|WORD",
                     help="Memory this job claims: 512MB, 8GB, or half/guess or full/max."),
        click.option("--gpu", metavar="N", help="Devices claimed from the pool `gpu`."),
        click.option("--vram", metavar="SIZE", help="Memory claimed on EACH GPU the job gets."),
        click.option("--claim", multiple=True, metavar="NAME=N[:SIZE]",
                     help="Units of a declared pool (repeatable)."),
        click.option("--lock", multiple=True, metavar="NAME",
                     help="A lock that no two jobs hold at once (repeatable)."),
        click.option("--name", metavar="NAME",
                     help="A name for `qex list`, usable in place of the id."),
        click.option("--cwd", metavar="DIR", help="The directory the job runs in."),
        click.option("--env", multiple=True, metavar="K=V",
                     help="Add or replace one environment variable (repeatable)."),
        click.option("--env-capture", metavar="all|minimal|none",
                     help="How much of this shell's environment the job gets."),
        click.option("--no-env-capture", is_flag=True,
                     help="Give the job none of this shell's environment."),
        click.option("--tag", multiple=True, metavar="TAG", help="A tag for `qex list --tag`."),
        click.option("--priority", type=int, metavar="N",
                     help="A larger number starts earlier (negative numbers are fine)."),
        click.option("--timeout", metavar="TIME",
                     help="Stop the JOB after this time (30s, 5m, 4h, 2d; 0 = no limit)."),
        click.option("--max-queue-time", metavar="TIME",
                     help="Give up (state expired) if the job has not started after this time."),
        click.option("--needs", multiple=True, metavar="ID[,ID]",
                     help="Wait for these jobs, and do not run unless they succeed."),
        click.option("--after", multiple=True, metavar="ID[,ID]",
                     help="Wait for these jobs to stop, whatever their result."),
        click.option("--job", metavar="FILE", help="Read the job from a TOML, YAML or JSON file."),
        click.option("--retries", type=click.IntRange(min=0), metavar="N",
                     help="Run the job again up to N times when it fails."),
        click.option("--nice", type=int, metavar="N",
                     help="-20 to 19; a larger number gives way to people (default 10)."),
        click.option("--no-limit-env-hints", is_flag=True,
                     help="Do not tell the job its claim (QEX_CPU, OMP_NUM_THREADS, ...)."),
        click.option("--dedupe-key", metavar="KEY",
                     help="Start nothing while a job with this key waits or runs; give its id."),
        click.option("--dedupe-window", metavar="TIME",
                     help="Keep the key of a job that succeeded for this long."),
        click.option("--id-file", metavar="FILE",
                     help="Write the id here (atomically) before anything else happens."),
        click.argument("command_args", nargs=-1, type=click.UNPROCESSED, metavar="-- COMMAND..."),
    ]
    for decorator in reversed(decorators):
        func = decorator(func)
    return func


def submit_options_from(values: dict[str, Any]) -> SubmitOptions:
    """The jobspec options for parsed click values (needs/after left as words)."""
    from qex.core.jobspec import SubmitOptions

    return SubmitOptions(
        command=list(values.get("command_args") or ()),
        cpu=values.get("cpu"), mem=values.get("mem"), gpu=values.get("gpu"),
        vram=values.get("vram"), claims=list(values.get("claim") or ()),
        name=values.get("name"), cwd=values.get("cwd"), env=list(values.get("env") or ()),
        env_capture=values.get("env_capture"),
        no_env_capture=bool(values.get("no_env_capture")),
        tags=list(values.get("tag") or ()), priority=values.get("priority"),
        timeout=values.get("timeout"), max_queue_time=values.get("max_queue_time"),
        retries=values.get("retries"), locks=list(values.get("lock") or ()),
        nice=values.get("nice"), no_limit_env_hints=bool(values.get("no_limit_env_hints")),
        dedupe_key=values.get("dedupe_key"), dedupe_window=values.get("dedupe_window"),
    )


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
            from qex.cli.resolve import ResolveError

            try:
                self._records = fetch_records(self.conn, self.paths)
            except ResolveError as exc:
                fail(exc.message)
        return self._records

    def dependency_ids(self, words: Iterable[str], option: str) -> list[str]:
        """Resolve `--needs`/`--after` words (names, ids, groups) to job ids."""
        from qex.cli.exits import Failure
        from qex.cli.resolve import ResolveError, dependency_ids
        from qex.store.history import read_all

        words = [w for w in words if w.strip()]
        if not words:
            return []
        history = {k.lower(): v for k, v in read_all(self.paths).items()}
        try:
            return dependency_ids(self.records(), words, option=option, history=history)
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
                learn_key=learn_key,
            )
            if spec.explicit_claim or not self.config.learn.enabled:
                return spec, warnings
            learned = self._learned(spec.cwd, learn_key or spec.command)
            if learned is None:
                return spec, warnings
            return build_spec(
                opts, job_file, config=self.config, machine=self.machine, environ=self.environ,
                shell_cwd=self.shell_cwd, learned=learned, job_id=job_id, now=when,
                learn_key=learn_key,
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
        from qex.client.capability_check import CapabilityRefusal, preflight

        info = self.conn.info()
        capabilities = self.conn.capabilities()
        try:
            for note in preflight(info, capabilities, specs):
                warn(note)
        except CapabilityRefusal as exc:
            fail(exc.message)

    def send(self, spec: JobSpec) -> dict[str, Any]:
        """Submit one spec; the `submitted` answer. A refusal raises `Refused` (121/127)."""
        answer = self.conn.submit(spec.to_dict())
        if not isinstance(answer.get("id"), str):
            fail("the coordinator accepted the job and gave no id for it; run `qex list`")
        self._records = None
        return answer


def announce(job_id: str) -> None:
    """`qex: job <id>` on stderr: with --wait/--follow/run the id never goes to stdout."""
    print(f"qex: job {job_id}", file=sys.stderr, flush=True)


def write_id_file(path_text: str | None, text: str) -> None:
    """Write the id file (atomic, fsynced) and warn about scratch places; never fatal."""
    if not path_text:
        return
    from pathlib import Path

    from qex.cli.idfile import scratch_warning, write_or_warn

    path = Path(path_text)
    problem = write_or_warn(path, text)
    if problem:
        warn(problem)
        return
    note = scratch_warning(path)
    if note:
        warn(note)
