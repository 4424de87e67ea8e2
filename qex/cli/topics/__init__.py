"""The pages of `qex help TOPIC`: one plain-text file per topic, shipped in this package.

`<topic>.txt` beside this module is the page, exactly as `qex help TOPIC` prints it; only the
asked-for file is read. The docs link these files rather than restate them, and
tests/unit/test_help_topics.py checks the places where a page and docs/ must agree (the exit
codes against `qex.core.states.Exit`, the states, the configuration keys). The registry here
is small on purpose: names, aliases and a one-line summary for the index.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

#: This package's directory, as text: `qex help` is on the lean path, which spares `pathlib`.
HERE = os.path.dirname(os.path.realpath(__file__))

#: topic -> (file stem under qex/cli/topics, one-line summary). Order of the index.
TOPICS: dict[str, tuple[str, str]] = {
    "agents": ("agents", "start here: run a job, wait for it, read the result"),
    "job-file": ("job-file", "describe one job in a TOML, YAML or JSON file"),
    "config": ("config", "every key of ~/.config/qex.toml and its default"),
    "resources": ("resources", "claims, the budget, pools (GPUs, VRAM, counted locks)"),
    "states": ("states", "what each job state means"),
    "events": ("events", "one JSON stream for every change of every job"),
    "output": ("output", "JSON output, the files of a job, logs and their limit"),
    "exit-codes": ("exit-codes", "the exit-code band: the job's codes and qex's codes"),
    "pipeline": ("pipeline", "several linked jobs in one file, one group id"),
    "each-line": ("each-line", "fan-out: one job for each line of an input"),
    "pause": ("pause", "hold the queue or a lock for yourself, and give it back"),
    "enforcement": ("enforcement", "memory limits on Linux: off, soft, hard, and OOM retries"),
}

#: Other words that open a topic.
ALIASES: dict[str, str] = {
    "agent": "agents",
    "jobfile": "job-file",
    "job": "job-file",
    "configuration": "config",
    "resource": "resources",
    "budget": "resources",
    "state": "states",
    "event": "events",
    "stream": "events",
    "json": "output",
    "exit": "exit-codes",
    "exitcodes": "exit-codes",
    "pipelines": "pipeline",
    "eachline": "each-line",
    "fan-out": "each-line",
    "fanout": "each-line",
    "resume": "pause",
    "limits": "enforcement",
    "oom": "enforcement",
}


def resolve(word: str) -> str | None:
    """The topic that a word names (case and surrounding space do not matter), or None."""
    key = word.strip().lower()
    if key in TOPICS:
        return key
    return ALIASES.get(key)


def path(topic: str) -> Path:
    """The file that holds the page of a topic from TOPICS."""
    from pathlib import Path

    return Path(_file(topic))


def _file(topic: str) -> str:
    return os.path.join(HERE, f"{TOPICS[topic][0]}.txt")


def text(topic: str) -> str:
    """The page of a topic from TOPICS; reads that one file only."""
    with open(_file(topic), encoding="utf-8") as page:
        return page.read()


def index_text() -> str:
    """What `qex help` alone prints: the one page an agent reads first, then every topic."""
    width = max(len(name) for name in TOPICS)
    lines = [
        " ==> AGENTS: run `qex help agents` before anything else. It shows how to start a job,",
        "     wait for it and read its result. Never write a polling loop: `qex wait` is one.",
        "",
        "Usage: qex help TOPIC",
        "",
        "Topics:",
    ]
    lines += [f"  {name.ljust(width)}  {summary}" for name, (_, summary) in TOPICS.items()]
    lines += ["", "Run `qex --help` for the list of commands, and `qex COMMAND --help` for one."]
    return "\n".join(lines)


def show(topic: str | None) -> int | None:
    """`qex help [TOPIC]` without click: 0 once the page is printed; None for a word that
    names no topic (the click command says so, with its code)."""
    import sys

    if topic is None:
        page = index_text()
    else:
        found = resolve(topic)
        if found is None:
            return None
        page = text(found).rstrip("\n")
    sys.stdout.write(page + "\n")
    sys.stdout.flush()
    return 0
