"""The pages of `qex help TOPIC`: one module per topic, each a plain string `TEXT`.

A page is imported only when it is asked for, so `qex help agents` reads one module. The
registry here is small on purpose: names, aliases and a one-line summary for the index.
"""

from __future__ import annotations

import importlib

#: topic -> (module name under qex.cli.topics, one-line summary). Order of the index.
TOPICS: dict[str, tuple[str, str]] = {
    "agents": ("agents", "start here: run a job, wait for it, read the result"),
    "job-file": ("job_file", "describe one job in a TOML, YAML or JSON file"),
    "config": ("config", "every key of ~/.config/qex.toml and its default"),
    "resources": ("resources", "claims, the budget, pools (GPUs, VRAM, counted locks)"),
    "states": ("states", "what each job state means"),
    "events": ("events", "one JSON stream for every change of every job"),
    "output": ("output", "JSON output, the files of a job, logs and their limit"),
    "exit-codes": ("exit_codes", "the exit-code band: the job's codes and qex's codes"),
    "pipeline": ("pipeline", "several linked jobs in one file, one group id"),
    "each-line": ("each_line", "fan-out: one job for each line of an input"),
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


def text(topic: str) -> str:
    """The page of a topic from TOPICS; imports that one module only."""
    module = importlib.import_module(f"{__name__}.{TOPICS[topic][0]}")
    page: str = module.TEXT
    return page
