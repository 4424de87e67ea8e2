"""The learner's store through the real program: a claim learned in the single-file store of
earlier versions still applies, the first job that ends splits that store into one file per
command, and the claims go on from there."""

from __future__ import annotations

import json
import stat
from typing import Any

from conftest import Env

from qex.core.learner import learn_key

MIB = 1024 * 1024


def entry_of(env: Env, key: str) -> dict[str, Any] | None:
    try:
        data = json.loads((env.state / "usage" / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def test_a_learned_claim_outlives_the_change_of_store(qex_env: Env) -> None:
    qex_env.write_config('[budget]\nmem = "90%"\n')
    command = ["sh", "-c", "exit 0"]
    key = learn_key(str(qex_env.root), command)
    learned = {"name": "old", "samples": [{"kind": "peak", "max_rss": 200 * MIB, "cpu_secs": 0.1,
                                           "elapsed_secs": 1.0, "at": 1.0}]}
    qex_env.state.mkdir(parents=True)
    (qex_env.state / "usage.json").write_text(json.dumps({"commands": {key: learned}}))

    first = qex_env.submit("--", *command)
    record = qex_env.record(first)
    assert (record["claim_source"], record["mem"]) == ("learned", 300 * MIB)
    qex_env.run("wait", "-q", first, check=True)
    entry = qex_env.wait_for(
        lambda: (found := entry_of(qex_env, key)) and len(found["samples"]) == 2 and found,
        what="the finished job's sample in the store of one file per command")
    assert entry["samples"][0] == learned["samples"][0]
    assert entry["samples"][1]["kind"] == "peak" and entry["name"] == "sh"
    assert not (qex_env.state / "usage.json").exists()
    kept = json.loads((qex_env.state / "usage.json.migrated").read_text())
    assert kept == {"commands": {key: learned}}
    assert stat.S_IMODE((qex_env.state / "usage").stat().st_mode) == 0o700
    assert stat.S_IMODE((qex_env.state / "usage" / f"{key}.json").stat().st_mode) == 0o600

    second = qex_env.submit("--", *command)
    record = qex_env.record(second)
    assert (record["claim_source"], record["mem"]) == ("learned", 300 * MIB)
    qex_env.run("wait", "-q", second, check=True)
