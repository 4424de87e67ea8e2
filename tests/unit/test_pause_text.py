"""The pause sentences and the oversized-claim sentences."""

from __future__ import annotations

from qex.core.pause_text import (
    fault_summary,
    lock_pause_summary,
    lock_paused_reason,
    queue_fault_reason,
    queue_pause_summary,
    queue_paused_reason,
)
from qex.core.size_check import forced_reason, oversized_refusal, oversized_warning, size_reason

GB = 1024**3


def test_the_queue_reason_names_the_pauser_the_note_and_the_way_out() -> None:
    text = queue_paused_reason("recording\x1b[2J a demo", 4321, "14:02:11")
    assert "pid 4321 paused it at 14:02:11" in text
    assert "\x1b" not in text and "recording [2J a demo" in text
    assert "`qex resume queue`" in text and "no end set" in text
    timed = queue_paused_reason(None, None, "14:02:11", until_clock="14:32:11")
    assert "an unknown process paused it" in timed and "lifts by itself at 14:32:11" in timed
    assert "note" not in timed


def test_the_fault_reason_says_why_the_queue_is_held_and_how_to_free_it() -> None:
    text = queue_fault_reason("/x/paused.json: bad JSON\n")
    assert "cannot be read" in text and "qex resume queue" in text and "\n" not in text


def test_a_lock_reason_tells_the_job_who_holds_it() -> None:
    text = lock_paused_reason("gpu 0", "benchmark", 77, "09:00:00")
    assert text.startswith("waits for the lock `gpu 0`: pid 77 reserved it for a person")
    assert "(note: benchmark)" in text and "qex resume lock 'gpu 0'" in text
    escaped = lock_paused_reason("a\x1bb", None, 77, "09:00:00")
    assert "\x1b" not in escaped and "`a\\x1bb`" in escaped


def test_summaries_show_the_end_or_say_there_is_none() -> None:
    line = queue_pause_summary(paused_clock="10:00:00", paused_for="5m", by_pid=12,
                               until_clock="10:30:00", until_in="25m", reason="demo")
    assert line == ("queue paused at 10:00:00 (5m ago) by pid 12 · lifts at 10:30:00 (in 25m)"
                    " · note: demo")
    line = queue_pause_summary(paused_clock="10:00:00", paused_for="5m", by_pid=None)
    assert "by an unknown process" in line and "NO END SET" in line and "qex resume queue" in line
    assert fault_summary("broken").startswith("QUEUE HELD BY A FAULT: the pause record")


def test_a_lock_summary_says_whether_a_job_still_has_it() -> None:
    held = lock_pause_summary(name="db", paused_clock="10:00:00", paused_for="1m", by_pid=5,
                              holder="a1b2c3d4 (migrate)")
    assert "the job a1b2c3d4 (migrate) still holds it" in held and "qex resume lock db" in held
    free = lock_pause_summary(name="db", paused_clock="10:00:00", paused_for="1m", by_pid=5,
                              until_clock="11:00:00")
    assert "yours now" in free and "lifts at 11:00:00" in free


def test_size_reason_names_each_dimension_that_is_too_large() -> None:
    assert size_reason(4, 8 * GB, 4, 8 * GB) is None
    cores = size_reason(5, GB, 4, 8 * GB)
    assert cores == "the job claims 5 cores, more than the whole budget of 4 cores"
    both = size_reason(5, 9 * GB, 4, 8 * GB)
    assert both is not None and "; the job claims 9GB of memory" in both


def test_oversized_texts_name_the_policy_and_the_remedy() -> None:
    reason = "the job claims 5 cores, more than the whole budget of 4 cores"
    assert "oversized = \"reject\"" in oversized_refusal(reason)
    assert "oversized = \"queue\"" in oversized_warning(reason, "queue")
    assert "alone" in oversized_warning(reason, "run-when-idle")
    assert forced_reason(reason).startswith(reason + ". qex started it on its own")
