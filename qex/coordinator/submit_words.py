"""The `submit_words` request: build the job's spec HERE from the command's options.

`qex submit` used to build the spec itself: read the config, measure the machine, look up
the learner, import the spec code, then send the spec. The coordinator has all of that at
hand, warm, so the fast path (`qex.cli.fast`) sends only what belongs to the calling shell
(its options, its environment, its directory, its version) and this handler builds the spec
with the same code (`qex.core.jobspec.build_spec`) and the same inputs: the config file is
read again for each request (the command's config paths, a cached parse while the bytes
stay the same), so a submission sees the file as it is now, as before, and a broken file
refuses the job with the same sentence.

The spec then goes through the ordinary `submit` handler, unchanged. Errors that the command
used to print itself carry `"build": true`, so it prints them as it did (121).
"""

from __future__ import annotations

import os
import time
from typing import Any

from qex.coordinator.state import Coordinator
from qex.coordinator.submit import handle_submit
from qex.core import protocol

#: The options a `submit_words` request may carry (the fields of `SubmitOptions`).
OPTION_FIELDS = frozenset({
    "command", "cpu", "mem", "gpu", "vram", "claims", "name", "cwd", "env", "env_capture",
    "no_env_capture", "tags", "priority", "timeout", "max_queue_time", "retries", "locks",
    "nice", "no_limit_env_hints", "dedupe_key", "dedupe_window", "engine",
})

def _refused(message: str) -> dict[str, Any]:
    answer = protocol.error(protocol.REFUSED, message)
    answer["build"] = True
    return answer


def _config(config_path: Any) -> Any:
    """The config in force for this path, parsed again only when its bytes changed (the
    coordinator's own read at its start counts: `parsed_config`)."""
    from qex.store.config_file import look_at, parsed_config

    return parsed_config(look_at(config_path), config_path)


def _learned(paths: Any, config: Any, machine: Any, cwd: str,
             argv: list[str]) -> tuple[int | None, int | None] | None:
    from qex.core.learner import learn_key, suggest
    from qex.store.usage import lookup

    try:
        entry = lookup(paths, learn_key(cwd, argv))
    except OSError:
        return None
    found = suggest(entry, config.learn.margin, config.retry.growth, config.mem_budget(machine))
    return (found[0], found[1]) if found is not None else None


def _options_ok(options: object) -> bool:
    return isinstance(options, dict) and set(options) <= OPTION_FIELDS


def handle_submit_words(coord: Coordinator, message: dict[str, Any]) -> dict[str, Any]:
    from qex.coordinator.queries import program_replaced
    from qex.core.capability_check import version_warning
    from qex.core.config import ConfigError
    from qex.core.jobspec import SpecError, SubmitOptions, build_spec
    from qex.core.names import new_id
    from qex.platform.machine import machine
    from qex.store.paths import PathError, Paths

    options = message.get("options")
    environ = message.get("environ")
    cwd = message.get("cwd")
    if not (_options_ok(options) and isinstance(environ, dict) and isinstance(cwd, str)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in environ.items())):
        return protocol.error(protocol.INTERNAL,
                              "qex could not read this job: the request's options are malformed")
    assert isinstance(options, dict)
    try:
        paths = Paths.from_env(environ)
        config = _config(paths.config_file)
    except (PathError, ConfigError) as exc:
        return _refused(str(exc))
    here = machine()
    now = time.time()
    opts = SubmitOptions(**options)
    job_id = new_id()
    try:
        spec, warnings = build_spec(opts, None, config=config, machine=here, environ=environ,
                                    shell_cwd=cwd, learned=None, job_id=job_id, now=now,
                                    config_path=str(paths.config_file))
        if not spec.explicit_claim and config.learn.enabled:
            learned = _learned(paths, config, here, spec.cwd, spec.command)
            if learned is not None:
                spec, warnings = build_spec(opts, None, config=config, machine=here,
                                            environ=environ, shell_cwd=cwd, learned=learned,
                                            job_id=job_id, now=now,
                                            config_path=str(paths.config_file))
    except SpecError as exc:
        return _refused(str(exc))
    # The command printed the config's notes first, then the spec's warnings (in order).
    warnings = [*getattr(config, "notes", ()), *warnings]
    info = {"pid": os.getpid(), "version": protocol.VERSION,
            "program_replaced": program_replaced(coord)}
    note = version_warning(info, str(message.get("client_version") or ""))
    if note:
        warnings.append(note)
    answer = handle_submit(coord, {"op": "submit", "spec": spec.to_dict()})
    answer["build_warnings"] = warnings
    return answer
