"""`qex help [TOPIC]`: the built-in manual.

Agents read these pages instead of guessing, so every page is complete for its subject and
`qex help` alone points at the one page an agent must read first. The fast path prints the
pages through the same `qex.cli.topics.show`, without click.
"""

from __future__ import annotations

import click


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
    from qex.cli.topics import TOPICS, show

    if show(topic) is None:
        from qex.cli.common import die
        from qex.core.names import visible

        die(f"there is no help topic `{visible(topic or '')}`; the topics are "
            f"{', '.join(TOPICS)}", 2)
