"""The help pages: every topic and alias opens a page, and the pages are our own words."""

from __future__ import annotations

import glob
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from qex.cli.commands.help import command as help_command
from qex.cli.topics import ALIASES, TOPICS, resolve, text
from qex.cli.topics import path as topic_path
from qex.core import model
from qex.core.config import Config
from qex.core.config_dict import config_to_dict
from qex.core.records import JobStatus
from qex.core.states import Exit, State

# The shared seeds sit beside the checkout: ../shared/seeds from the repository root.
SEEDS = Path(__file__).resolve().parents[2] / ".." / "shared" / "seeds"
SEED_GLOB = str(SEEDS / "001_*.txt")
EARLIER_URL = "github.com/stephenc"

EXPECTED_TOPICS = {
    "agents", "job-file", "config", "resources", "states", "events", "output",
    "exit-codes", "pipeline", "each-line", "pause", "enforcement",
}
EXPECTED_ALIASES = {
    "agent": "agents", "jobfile": "job-file", "job": "job-file", "configuration": "config",
    "resource": "resources", "budget": "resources", "state": "states", "event": "events",
    "stream": "events", "json": "output", "exit": "exit-codes", "exitcodes": "exit-codes",
    "pipelines": "pipeline", "eachline": "each-line", "fan-out": "each-line",
    "fanout": "each-line", "resume": "pause", "limits": "enforcement", "oom": "enforcement",
}


def test_the_topic_list_is_the_agreed_one() -> None:
    assert set(TOPICS) == EXPECTED_TOPICS
    assert ALIASES == EXPECTED_ALIASES


@pytest.mark.parametrize("topic", sorted(EXPECTED_TOPICS))
def test_every_topic_resolves_to_itself_and_has_a_titled_page(topic: str) -> None:
    assert resolve(topic) == topic
    assert resolve(f"  {topic.upper()} ") == topic
    page = text(topic)
    lines = page.splitlines()
    # A title, then an underline of the same length.
    assert lines[0].startswith("qex")
    assert lines[1] == "=" * len(lines[0])
    assert len(lines) > 20


@pytest.mark.parametrize(("alias", "topic"), sorted(EXPECTED_ALIASES.items()))
def test_every_alias_opens_its_topic(alias: str, topic: str) -> None:
    assert resolve(alias) == topic
    assert text(resolve(alias) or "") == text(topic)


def test_unknown_words_resolve_to_nothing() -> None:
    for word in ("", "agentz", "help", "exit codes", "job_file"):
        assert resolve(word) is None


@pytest.mark.parametrize("topic", sorted(EXPECTED_TOPICS))
def test_no_page_points_at_the_earlier_project(topic: str) -> None:
    assert EARLIER_URL not in text(topic)
    assert "https://github.com" not in text(topic)


@pytest.mark.parametrize("topic", sorted(EXPECTED_TOPICS))
def test_pages_fit_a_terminal_and_hold_no_control_characters(topic: str) -> None:
    for line in text(topic).splitlines():
        assert len(line) <= 80, line
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", line), line


def test_a_page_is_a_file_in_the_package_and_reading_it_imports_nothing() -> None:
    before = set(sys.modules)
    page = text("states")
    assert set(sys.modules) == before
    assert page == topic_path("states").read_text(encoding="utf-8")
    shipped = {p.stem for p in topic_path("states").parent.glob("*.txt")}
    assert shipped == {stem for stem, _ in TOPICS.values()}


def test_the_enforcement_page_covers_our_linux_design() -> None:
    page = text("enforcement")
    for needle in ("off", "soft", "hard", "scope", "NOT ACTIVE", "qex config show",
                   "memory.max", "memory.high", "memory.oom.group", "oom_kill",
                   "[retry] growth", "on_oom", "99", "docs/enforcement.md", "docs/systemd.md"):
        assert needle in page, needle


def test_the_agents_page_sends_sandbox_trouble_to_our_docs() -> None:
    assert "docs/sandbox.md" in text("agents")


# --- our own words: no long line of the earlier help text appears in ours ------------------


def _normal(line: str) -> str:
    """Collapse spacing and case, and undo the escapes of the seed's string literals."""
    line = line.replace('\\"', '"').replace("\\\\", "\\")
    return " ".join(line.split()).casefold()


def _seed_lines() -> set[str]:
    paths = glob.glob(SEED_GLOB)
    if not paths:
        pytest.skip("the earlier help text is not on this machine")
    lines: set[str] = set()
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for raw in handle:
                line = _normal(raw)
                # Underlines and rules carry no words; only prose and examples count.
                if len(line) > 40 and any(ch.isalnum() for ch in line):
                    lines.add(line)
    return lines


def test_no_line_of_our_topics_repeats_a_long_line_of_the_earlier_help() -> None:
    seed = _seed_lines()
    copied = [
        f"{topic}: {line.strip()}"
        for topic in TOPICS
        for line in text(topic).splitlines()
        if _normal(line) in seed
    ]
    assert copied == []


# --- the command ---------------------------------------------------------------------------


def test_help_without_a_topic_prints_the_banner_and_the_topic_list() -> None:
    result = CliRunner().invoke(help_command, [])
    assert result.exit_code == 0
    assert "qex help agents" in result.output
    assert "Usage: qex help TOPIC" in result.output
    for topic in TOPICS:
        assert f"  {topic}" in result.output


def test_help_with_an_alias_prints_the_page() -> None:
    result = CliRunner().invoke(help_command, ["fanout"])
    assert result.exit_code == 0
    assert result.output.rstrip("\n") == text("each-line").rstrip("\n")


def test_help_with_an_unknown_topic_names_the_topics_and_exits_2() -> None:
    result = CliRunner().invoke(help_command, ["nonsense\x1b[2J"])
    assert result.exit_code == 2
    # Every click version puts stderr into `output` by default.
    message = result.output
    assert message.startswith("qex: ")
    assert "\x1b" not in message
    assert "agents" in message
    assert "enforcement" in message


# --- docs/ and the pages agree where they say the same thing --------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: A word that the line of each band code says, in docs/exit-codes.md and in the page.
CODE_WORDS = {
    Exit.JOB_HIGH: "exited", Exit.SIGNAL: "signal", Exit.OOM: "memory",
    Exit.NOT_FINISHED: "not finished", Exit.QEX_FAILED: "could not", Exit.WAIT_INTERRUPTED: "wait",
    Exit.EXPIRED: "max-queue-time", Exit.WAIT_TIMEOUT: "time limit", Exit.STOPPED: "timeout",
    Exit.SKIPPED: "did not succeed", Exit.NO_SUCH_JOB: "job", Exit.RESULT_LOST: "result is lost",
}


def _band() -> set[int]:
    codes = {value for name, value in vars(Exit).items() if name.isupper()}
    return {code for code in codes if 97 <= code <= 127}


def _doc_code_rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in (DOCS / "exit-codes.md").read_text().splitlines():
        found = re.match(r"\| (\d+(?:–\d+|\+)?) \| (.+) \|$", line)
        if found:
            rows[found.group(1)] = found.group(2)
    return rows


def _page_code_rows() -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in text("exit-codes").splitlines():
        found = re.match(r"  (\d+(?:-\d+|\+)?) +(\S.*)$", line)
        if found and found.group(1) not in rows:
            rows[found.group(1).replace("-", "–")] = found.group(2)
    return rows


def test_the_exit_codes_of_docs_and_page_are_the_exit_class() -> None:
    docs, page = _doc_code_rows(), _page_code_rows()
    singles = {int(code) for code in docs if code.isdigit()}
    assert singles == _band(), "docs/exit-codes.md"
    assert {int(code) for code in page if code.isdigit()} == _band(), "qex help exit-codes"
    assert {"0–96", "128+"} <= set(docs) and {"0–96", "128+"} <= set(page)
    assert CODE_WORDS.keys() == _band()
    for code, word in CODE_WORDS.items():
        assert word in docs[str(code)].lower(), (code, docs[str(code)])
        assert word in page[str(code)].lower(), (code, page[str(code)])


def test_the_states_of_docs_and_page_are_the_state_enum() -> None:
    rows = [line.split()[0] for line in text("states").splitlines()
            if re.match(r"  [a-z]+ {2,}\S", line)]
    assert rows == [s.value for s in State]
    line = next(row for row in (DOCS / "records.md").read_text().splitlines()
                if row.startswith("| `state` |"))
    assert re.findall(r"`([a-z]+)`", line.split("|")[3]) == [s.value for s in State]


def test_every_field_of_a_status_record_has_a_row_in_records_md() -> None:
    documented: set[str] = set()
    for row in (DOCS / "records.md").read_text().splitlines():
        if row.startswith("| `"):
            documented.update(re.findall(r"`([a-z_]+)`", row.split("|")[1]))
    missing = [f.name for f in model.fields(JobStatus) if f.name not in documented]
    assert missing == []


def test_every_config_key_is_in_docs_and_in_the_config_page() -> None:
    docs = (DOCS / "config.md").read_text()
    page = text("config")
    for section, keys in config_to_dict(Config()).items():
        assert f"[{section}]" in docs and f"[{section}]" in page, section
        for key in keys:
            assert f"| `{key}` |" in docs or f"`{section}.{key}`" in docs, (section, key)
            assert re.search(rf"\b{key}\b", page), (section, key)
