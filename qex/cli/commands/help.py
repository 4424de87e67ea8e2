"""`qex help [TOPIC]`: the built-in manual.

Agents read these pages instead of guessing, so every page is complete for its subject and
`qex help` alone points at the one page an agent must read first.
"""

from __future__ import annotations

import click


def _index() -> str:
    from qex.cli.topics import TOPICS

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


def _complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    from qex.cli.topics import TOPICS

    return [name for name in TOPICS if name.startswith(incomplete.lower())]


@click.command(name="help")
@click.argument("topic", required=False, shell_complete=_complete)
def command(topic: str | None) -> None:
    """Read a help topic; with no topic, list the topics.

    Topics: agents, job-file, config, resources, states, events, output, exit-codes,
    pipeline, each-line, pause, enforcement (several have short aliases, such as `job`
    or `oom`).
    """
    from qex.cli.topics import TOPICS, resolve, text

    if topic is None:
        click.echo(_index())
        return
    found = resolve(topic)
    if found is None:
        from qex.cli.common import die
        from qex.core.names import visible

        die(f"there is no help topic `{visible(topic)}`; the topics are {', '.join(TOPICS)}", 2)
    click.echo(text(found).rstrip("\n"))
