"""Claims as a person writes them: `--cpu 4`, `--mem guess`, `--claim net=2`, `--lock db`.

Pure. A claim word is resolved against the budget AT SUBMISSION, so the record holds an
exact number and a later change of the budget never changes a job that already waits:

    half, guess, auto   half of the budget (cores: at least 1; memory: at least 1MB)
    full, max, all      the whole budget

Zero is refused everywhere: a job that claims nothing would let the queue start any number
of them together, which is the exact failure a claim exists to prevent.
"""

from __future__ import annotations

import re
from typing import TypeAlias

from qex.core.names import visible
from qex.core.records import PoolClaim
from qex.core.units import MIB, UnitError, parse_count, parse_size

HALF_WORDS = frozenset({"half", "guess", "auto"})
FULL_WORDS = frozenset({"full", "max", "all"})

#: A resolved claim request: a number (cores or bytes), or the canonical word.
ClaimRequest: TypeAlias = int | str

#: Pool and `--claim` names: they become part of variable names (QEX_CLAIM_NET), so they keep
#: to letters, digits, `.`, `_` and `-`, and start with a letter or a digit. Lock names are
#: free text (`lock_name_problem`): they never name a variable or a file.
_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
RESERVED_NAMES = frozenset({"cpu", "mem"})


class ClaimError(ValueError):
    """A claim qex cannot use; the message says which and what to write instead."""


def claim_word(value: object) -> str | None:
    """`half` or `full` for any of their spellings (any case), else None."""
    if not isinstance(value, str):
        return None
    word = value.strip().lower()
    if word in HALF_WORDS:
        return "half"
    if word in FULL_WORDS:
        return "full"
    return None


def parse_cpu_claim(value: object, *, what: str = "--cpu") -> ClaimRequest:
    """A whole number of cores (1 or more) or a claim word."""
    word = claim_word(value)
    if word is not None:
        return word
    try:
        cores = parse_count(value, what=what)
    except UnitError:
        raise ClaimError(
            f"{what} takes a whole number of cores or a word (guess, half, full), "
            f"and `{visible(str(value))}` is neither; give for example {what} 2 or {what} guess"
        ) from None
    if cores < 1:
        raise ClaimError(
            f"a job needs 1 core or more, and {what} gives {cores}; give 1 or more, "
            "or a word such as guess or full"
        )
    return cores


def parse_mem_claim(value: object, *, what: str = "--mem") -> ClaimRequest:
    """A size (1 byte or more) or a claim word."""
    word = claim_word(value)
    if word is not None:
        return word
    try:
        size = parse_size(value, what=f"{what} value")
    except UnitError as exc:
        raise ClaimError(f"{exc}, or a word such as guess or full") from None
    if size < 1:
        raise ClaimError(
            f"a job needs 1 byte of memory or more, and {what} gives 0; give a size "
            "such as 512MB or 4GB, or a word such as guess or full"
        )
    return size


def resolve_cpu(request: ClaimRequest, budget: int) -> int:
    """Cores for a request: a word against the cpu budget, a number as given."""
    if request == "half":
        return max(1, budget // 2)
    if request == "full":
        return max(1, budget)
    return int(request)


def resolve_mem(request: ClaimRequest, budget: int) -> int:
    """Bytes for a request: a word against the memory budget, a size as given."""
    if request == "half":
        return max(MIB, budget // 2)
    if request == "full":
        return max(MIB, budget)
    return int(request)


def is_resource_name(name: str) -> bool:
    """A name that a pool, a lock or a claim may have."""
    return bool(_RESOURCE_NAME.match(name)) and name.lower() not in RESERVED_NAMES


def resource_name_problem(name: str, *, what: str) -> str | None:
    """Why `name` cannot name a pool or a lock, or None when it can."""
    if name.lower() in RESERVED_NAMES:
        return (
            f"{what} `{name}` is reserved: cores and memory are claimed with --cpu and --mem "
            "and budgeted in [budget], so choose another name"
        )
    if not _RESOURCE_NAME.match(name):
        return (
            f"{what} `{visible(name)}` is not a name qex accepts; use letters, digits, `.`, "
            "`_` and `-` (64 at most), starting with a letter or a digit, such as gpu or net"
        )
    return None


def parse_claim_option(text: str) -> tuple[str, PoolClaim]:
    """`NAME=N` or `NAME=N:SIZE` (SIZE on each device) from `--claim`."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name or not rest.strip():
        raise ClaimError(
            f"--claim takes NAME=N or NAME=N:SIZE, and `{visible(text)}` is neither; "
            "give for example --claim net=1 or --claim tpu=2:8GB"
        )
    problem = resource_name_problem(name, what="the pool name")
    if problem is not None:
        raise ClaimError(problem)
    count_text, colon, size_text = rest.partition(":")
    try:
        count = parse_count(count_text, what=f"the count of --claim {name}")
    except UnitError as exc:
        raise ClaimError(f"{exc}; give for example --claim {name}=1") from None
    if count < 1:
        raise ClaimError(
            f"--claim {name} asks for {count} units, and a claim is 1 unit or more; "
            f"give --claim {name}=1 or more, or leave the option out"
        )
    size: int | None = None
    if colon:
        try:
            size = parse_size(size_text, what=f"size of --claim {name}")
        except UnitError as exc:
            raise ClaimError(str(exc)) from None
        if size < 1:
            raise ClaimError(
                f"--claim {name} gives a size of 0 on each device; give a size such as 8GB, "
                "or leave out `:SIZE` to take whole devices"
            )
    return name, PoolClaim(count=count, size=size)


#: A lock name is any text a person can type, up to this many characters.
MAX_LOCK_NAME = 256
#: What follows the last `:` of `--lock NAME:N` when it is meant as a count.
_COUNT_TAIL = re.compile(r"^\s*[-+]?[0-9][0-9.]*\s*$")


def lock_name_problem(name: str) -> str | None:
    """Why `name` cannot name a lock, or None when it can.

    A lock is a word that jobs agree on, often a path (`target/debug`, `/srv/data/cache`), so
    any printable text is accepted. A lock name never becomes a file name or a variable name:
    it lives in the records and the pause file as JSON text, and is escaped when printed.
    """
    if not name:
        return ("a lock needs a name; give for example --lock db, --lock target/debug or "
                "--lock net:2")
    if any(ord(c) < 0x20 or ord(c) == 0x7F or 0x80 <= ord(c) < 0xA0 for c in name):
        return (f"the lock name `{visible(name)}` holds a control character, which no one can "
                "type or read; remove it")
    if len(name) > MAX_LOCK_NAME:
        return (f"the lock name `{visible(name[:40])}...` is {len(name)} characters long; give "
                f"a name of {MAX_LOCK_NAME} characters or fewer")
    if name.lower() in RESERVED_NAMES:
        return (f"the lock name `{name}` is reserved: cores and memory are claimed with --cpu "
                "and --mem and budgeted in [budget], so choose another name")
    return None


def parse_lock_option(text: str) -> tuple[str, int]:
    """`NAME` (one unit) or `NAME:N` from `--lock`; `--lock NAME` is `--claim NAME=1`.

    Only a number after the LAST `:` is a count, so `--lock net:2` holds two units of `net`
    while `--lock host:db` and `--lock /srv/a:b` are plain names.
    """
    head, colon, tail = text.rpartition(":")
    if colon and not tail.strip():
        raise ClaimError(
            f"--lock {visible(text)} ends with `:` and no count; give --lock {visible(head)} "
            f"for one unit, or a count such as --lock {visible(head)}:2"
        )
    counted = bool(colon) and bool(_COUNT_TAIL.match(tail))
    name = (head if counted else text).strip()
    problem = lock_name_problem(name)
    if problem is not None:
        raise ClaimError(problem)
    if not counted:
        return name, 1
    shown = visible(name)
    try:
        count = parse_count(tail.strip(), what=f"the count of --lock {shown}")
    except UnitError as exc:
        raise ClaimError(f"{exc}; give for example --lock {shown} or --lock {shown}:2") from None
    if count < 1:
        raise ClaimError(
            f"--lock {shown}:{count} holds no unit; give --lock {shown} for one unit, or a count "
            "of 1 or more"
        )
    return name, count
