"""The text rules: safe names, visible arguments, printable sentences, ids.

Pure. Anything that another agent typed (names, tags, locks, reasons) reaches a terminal only
through these functions, so an ESC byte in a job name cannot repaint someone's screen.
"""

from __future__ import annotations

# No `re` here: every read command shows names, and `re` alone costs about half of the
# interpreter's start-up. The loops below give what the patterns in their docstrings would.
_SAFE_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
#: The characters of an id as qex writes it (lower case); a word made of others names no job
#: by its id or a short id.
ID_CHARS = frozenset("0123456789abcdef-")
_HEX_AND_DASH = ID_CHARS | frozenset("ABCDEF")
MAX_NAME_BYTES = 128


def safe_name(name: str) -> str:
    """Keep letters, digits, `.`, `_` and `-`; each other run becomes one `_`; no leading `-`.
    (The substitution of `[^A-Za-z0-9._-]+` by `_`.)"""
    if _SAFE_CHARS.issuperset(name):
        text = name
    else:
        out: list[str] = []
        in_run = False
        for char in name:
            if char in _SAFE_CHARS:
                out.append(char)
                in_run = False
            elif not in_run:
                out.append("_")
                in_run = True
        text = "".join(out)
    if text.startswith("-"):
        text = "_" + text[1:]
    return text[:MAX_NAME_BYTES]


def is_safe_name(name: str) -> bool:
    return bool(name) and safe_name(name) == name and not is_uuid(name)


def is_uuid(text: str) -> bool:
    """8-4-4-4-12 hex digits, either case; as a `$`-anchored pattern would, one trailing
    newline is allowed."""
    if len(text) == 37 and text[36] == "\n":
        text = text[:36]
    # Dashes at those four places and nowhere else; a directory scan asks this of every name.
    return (len(text) == 36 and text[8] == text[13] == text[18] == text[23] == "-"
            and text.count("-") == 4 and _HEX_AND_DASH.issuperset(text))


def new_id() -> str:
    """A random id in the form of `str(uuid.uuid4())` (version 4, RFC 4122 variant), without
    the `uuid` module, which imports `platform` and asks the kernel for its name."""
    import os

    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def short_id(job_id: str) -> str:
    return job_id[:8]


def visible(text: str) -> str:
    """Show control characters as escapes (`\\n`, `\\x1b`), for arguments, paths and env values."""
    # `str.isprintable` (C) is False for every character escaped below but the backslash, so
    # the common plain text skips the loop (`qex list --json` shows thousands of fields).
    if text.isprintable() and "\\" not in text:
        return text
    return _visible_chars(text)


def _visible_chars(text: str) -> str:
    out: list[str] = []
    for char in text:
        if char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\r":
            out.append("\\r")
        elif char == "\t":
            out.append("\\t")
        elif ord(char) < 0x20 or ord(char) == 0x7F or 0x80 <= ord(char) < 0xA0:
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8"))
        else:
            out.append(char)
    return "".join(out)


def printable(text: str) -> str:
    """Replace control characters with a space, for sentences and the hook environment."""
    if text.isprintable():  # none of them (as in `visible`)
        return text
    return _printable_chars(text)


def _printable_chars(text: str) -> str:
    return "".join(
        " " if (ord(c) < 0x20 and c != "\n") or ord(c) == 0x7F or 0x80 <= ord(c) < 0xA0 else c
        for c in text
    )


def printable_line(text: str) -> str:
    """Like `printable`, and a newline also becomes a space."""
    return printable(text).replace("\n", " ")


def lock_shown(name: str) -> str:
    """A lock name as text: written as given (`target/debug`, `build dir`), control bytes as
    escapes. Lock names are never squeezed into safe form: two locks that differ only in a
    `/` and a `_` are two different locks, and a message must name the one it means."""
    return visible(name)


def lock_arg(name: str) -> str:
    """A lock name as one shell word, for the commands that messages suggest."""
    shown = visible(name)
    if shown and all(c.isalnum() or c in "._-/:+@%=," for c in shown):
        return shown
    return "'" + shown.replace("'", "'\\''") + "'"


def derive_name(argv0: str) -> str:
    """A job's default name: the program's base name in safe form (`job` when nothing is left)."""
    base = argv0.rstrip("/").rsplit("/", 1)[-1]
    name = safe_name(base)
    if not name or is_uuid(name) or set(name) <= {"_"}:
        return "job"
    return name
