"""Read a job file or a pipeline file: TOML, YAML or JSON, chosen by the file's extension.

`.yaml`/`.yml` is YAML, `.json` is JSON, anything else is TOML (the format of the docs).
YAML is imported only when a YAML file is read, so the fast commands never pay for it.
Every failure is one `StructuredError` sentence that names the file, and for a syntax
error the line, so the person can go straight to it.

A FIFO is allowed here (`qex submit --job <(generate)` hands over a pipe), but a directory
or a device is refused before it is opened, and the read stops at a size no job file
reaches, so `/dev/zero` can never fill the memory of the command.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qex.core.names import visible

if TYPE_CHECKING:
    from qex.core.jobfile import JobFile, PipelineFile

#: No job or pipeline file comes near this; a larger input is a mistake, not a job.
MAX_BYTES = 16 * 1024 * 1024
#: Lists and tables nest at most this deep: a job file needs three levels or so.
MAX_DEPTH = 32

_TOML_POSITION = re.compile(
    r"^(?P<what>.*?)\s*\((?:at line (?P<line>\d+), column (?P<col>\d+)|at end of document)\)$"
)


class StructuredError(ValueError):
    """A file that qex cannot read as TOML, YAML or JSON; the message names the file."""


def file_format(path: Path) -> str:
    """`yaml`, `json` or `toml`, from the extension (case-insensitive)."""
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return "yaml"
    if suffix == ".json":
        return "json"
    return "toml"


def kind_of(mode: int) -> str:
    """What a path that is not a regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (a named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def toml_error_text(exc: ValueError) -> str:
    """`invalid value at line 3, column 7` from tomllib's message, for our own sentence."""
    text = str(exc)
    match = _TOML_POSITION.match(text)
    if match is None:
        return text[:1].lower() + text[1:]
    what = match.group("what")
    what = what[:1].lower() + what[1:]
    if match.group("line"):
        return f"{what} at line {match.group('line')}, column {match.group('col')}"
    return f"{what} at the end of the file"


def _read_bytes(path: Path) -> bytes:
    shown = visible(str(path))
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise StructuredError(f"the file {shown} does not exist; check the path") from None
    except OSError as exc:
        raise StructuredError(f"qex cannot read the file {shown}: {exc.strerror}") from None
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISFIFO(info.st_mode)):
        raise StructuredError(
            f"the path {shown} is {kind_of(info.st_mode)}, not a file; give the path of a "
            "TOML, YAML or JSON file"
        )
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise StructuredError(f"qex cannot read the file {shown}: {exc.strerror}") from None
    if len(data) > MAX_BYTES:
        raise StructuredError(
            f"the file {shown} is larger than 16MB, far beyond any job file; give the right file"
        )
    return data


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"the key `{visible(key)}` appears twice in one object")
        result[key] = value
    return result


def _too_deep(value: object) -> bool:
    """True when lists and tables nest deeper than MAX_DEPTH (walked without recursion)."""
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_structured(data: bytes, path: Path) -> dict[str, Any]:
    """The mapping at the top of `data`, read in the format that `path`'s extension names.

    A file that nests deeper than the parser's recursion (`[[[[…` a hundred thousand times)
    is one sentence like every other bad file, not a traceback.
    """
    try:
        return _parse_structured(data, path)
    except RecursionError:
        raise StructuredError(
            f"the file {visible(str(path))} nests its values more than {MAX_DEPTH} levels deep, "
            "and no job or pipeline field needs more than a few; correct the file"
        ) from None


def _parse_structured(data: bytes, path: Path) -> dict[str, Any]:
    shown = visible(str(path))
    fmt = file_format(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise StructuredError(
            f"the file {shown} is not UTF-8 text (a bad byte on line {line}); save it as UTF-8"
        ) from None
    if fmt == "toml":
        import tomllib

        try:
            value: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise StructuredError(
                f"the file {shown} is not valid TOML: {toml_error_text(exc)}; correct that "
                "line (or give the file a .yaml or .json name if it is in that format)"
            ) from None
    elif fmt == "json":
        try:
            value = json.loads(text, object_pairs_hook=_reject_duplicates)
        except json.JSONDecodeError as exc:
            raise StructuredError(
                f"the file {shown} is not valid JSON: {exc.msg.lower()} at line {exc.lineno}, "
                f"column {exc.colno}; correct that line"
            ) from None
        except ValueError as exc:
            raise StructuredError(
                f"the file {shown} is not valid JSON: {exc}; keep one of them"
            ) from None
    else:
        import yaml

        try:
            value = yaml.safe_load(text)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            where = ""
            if mark is not None:
                where = f" at line {mark.line + 1}, column {mark.column + 1}"
            problem = exc.problem or "a syntax error"
            raise StructuredError(
                f"the file {shown} is not valid YAML: {problem}{where}; correct that line"
            ) from None
        except yaml.YAMLError as exc:
            raise StructuredError(
                f"the file {shown} is not valid YAML: {exc}; correct it"
            ) from None
    if value is None:
        value = {}
    if _too_deep(value):
        raise StructuredError(
            f"the file {shown} nests its values more than {MAX_DEPTH} levels deep, and no job "
            "or pipeline field needs more than a few; correct the file"
        )
    if not isinstance(value, dict):
        raise StructuredError(
            f"the file {shown} holds a {type(value).__name__} at the top, and qex needs a table "
            "of fields (keys and values), such as command = [\"make\"]"
        )
    return value


def read_structured(path: Path) -> dict[str, Any]:
    """Read and parse a job or pipeline file; every failure is a `StructuredError`."""
    return parse_structured(_read_bytes(path), path)


def load_job_file(path: Path) -> JobFile:
    """Read and check a job file (`qex submit --job`); errors are `ValueError` sentences."""
    from qex.core.jobfile import parse_job_file

    return parse_job_file(read_structured(path), str(path))


def load_pipeline(path: Path) -> PipelineFile:
    """Read and check a pipeline file (`qex pipeline`); errors are `ValueError` sentences."""
    from qex.core.jobfile import parse_pipeline

    return parse_pipeline(read_structured(path), str(path))
