"""The pure half of the Slurm engine: claims to sbatch options, Slurm's answers to qex words."""

from __future__ import annotations

import pytest

from qex.core.states import State
from qex.engine.slurm import mapping
from qex.engine.slurm.mapping import Request

GB = 1024**3


def request(**fields: object) -> Request:
    base: dict[str, object] = {"job_id": "0123456789abcdef", "name": "train", "cpu": 4,
                               "mem": 8 * GB}
    base.update(fields)
    return Request(**base)  # type: ignore[arg-type]


def test_claim_becomes_cpus_mem_gres_time_and_dependency() -> None:
    args = mapping.sbatch_args(request(gpus=2, timeout=90, afterok=("11", "12"),
                                       afterany=("13",), partition="gpu", account="lab",
                                       qos="high", extra=("--constraint=a100",),
                                       output="/s/jobs/x/slurm.out", chdir="/s/jobs/x"))
    assert "--cpus-per-task=4" in args
    assert "--mem=8192M" in args
    assert "--gres=gpu:2" in args
    assert "--time=3" in args                       # 90 s -> 2 min, plus the 1 min margin
    assert "--dependency=afterok:11:12,afterany:13" in args
    assert "--kill-on-invalid-dep=no" in args
    assert {"--partition=gpu", "--account=lab", "--qos=high"} <= set(args)
    assert "--output=/s/jobs/x/slurm.out" in args and "--chdir=/s/jobs/x" in args
    assert args[-1] == "--constraint=a100"          # the user's options come last and win
    assert "--hold" in args and "--parsable" in args and "--no-requeue" in args


def test_no_gpu_no_timeout_no_dependency_adds_nothing() -> None:
    args = mapping.sbatch_args(request(), hold=False)
    assert not [a for a in args if a.startswith(("--gres", "--time", "--dependency", "--hold",
                                                 "--partition"))]


def test_memory_rounds_up_to_whole_mebibytes() -> None:
    assert mapping.mem_megabytes(1) == 1
    assert mapping.mem_megabytes(mapping.MIB + 1) == 2
    assert mapping.mem_megabytes(300 * mapping.MIB) == 300


@pytest.mark.parametrize(("text", "minutes"), [
    ("infinite", None), ("30", 30), ("1:30:00", 90), ("2-00:00:00", 2880), ("10:30", 11),
    ("1-02", 1560),
])
def test_slurm_times_in_minutes(text: str, minutes: int | None) -> None:
    assert mapping.minutes(text) == minutes


def test_job_id_from_parsable_answer() -> None:
    assert mapping.parse_job_id("1234\n") == "1234"
    assert mapping.parse_job_id("1234;cluster\n") == "1234"
    with pytest.raises(ValueError, match="instead of a job id"):
        mapping.parse_job_id("sbatch: error: nope")


SINFO = """main*|2|23593|(null)|infinite|up
gpu|32|515000|gpu:4(S:0-1)|2-00:00:00|up
gpu|64+|1031000|gpu:8|2-00:00:00|up
"""


def test_partitions_take_the_largest_node() -> None:
    parts = {p.name: p for p in mapping.parse_partitions(SINFO)}
    assert parts["main"].default and parts["main"].cpus == 2 and parts["main"].mem_mb == 23593
    assert parts["main"].max_minutes is None
    assert (parts["gpu"].cpus, parts["gpu"].gpus, parts["gpu"].max_minutes) == (64, 8, 2880)


def test_a_claim_no_partition_holds_is_refused_with_the_reason() -> None:
    parts = mapping.parse_partitions(SINFO)
    assert mapping.refusal(request(cpu=2, mem=GB), parts) is None
    too_many = mapping.refusal(request(cpu=3, mem=GB), parts)
    assert too_many is not None and "`main` cannot give 3 cores" in too_many
    assert "largest node has 2" in too_many
    gpus = mapping.refusal(request(cpu=8, gpus=2, partition="main"), parts)
    assert gpus is not None and "2 GPUs" in gpus
    assert mapping.refusal(request(cpu=8, gpus=8, partition="gpu"), parts) is None
    long = mapping.refusal(request(cpu=8, partition="gpu", timeout=3 * 86400), parts)
    assert long is not None and "minutes (its limit is 2880)" in long
    unknown = mapping.refusal(request(partition="nope"), parts)
    assert unknown is not None and "no partition `nope`" in unknown and "gpu, main" in unknown
    assert mapping.refusal(request(), []) is not None


def test_squeue_lines_and_their_kinds() -> None:
    found = mapping.parse_squeue("5|PENDING|Resources\n6|RUNNING|None\n7|COMPLETED|None\n\n")
    assert mapping.pending(found["5"]) and mapping.live(found["6"]) and mapping.ended(found["7"])
    assert found["5"].reason == "Resources"


@pytest.mark.parametrize(("reason", "words"), [
    ("Resources", "for resources"), ("Priority", "higher priority"),
    ("Dependency", "jobs it depends on"), ("QOSMaxCpuPerUserLimit", "QOS limit"),
    ("AssocGrpCpuLimit", "limit of the account"), ("JobHeldUser", "scontrol release"),
    ("None", "scheduler"), ("Something_New", "(Something_New)"),
])
def test_pending_reasons_in_qex_words(reason: str, words: str) -> None:
    text = mapping.reason_words(reason, "42")
    assert text.startswith("waits in Slurm (job 42)") and words in text


@pytest.mark.parametrize(("state", "ran", "qex_state"), [
    ("CANCELLED", False, State.CANCELLED), ("CANCELLED", True, State.KILLED),
    ("TIMEOUT", True, State.TIMEOUT), ("NODE_FAIL", True, State.FAILED),
    ("PREEMPTED", True, State.KILLED), ("OUT_OF_MEMORY", True, State.OOM),
    (None, True, State.FAILED), ("FAILED", True, State.FAILED),
])
def test_a_job_slurm_ended_without_a_record_gets_one(state: str | None, ran: bool,
                                                      qex_state: State) -> None:
    ending = mapping.ending(state, ran=ran, slurm_id="9", killed_by_qex=False)
    assert ending.state == qex_state
    assert "Slurm job 9" in ending.error
    assert ending.oom == (state == "OUT_OF_MEMORY")


def test_qex_kill_wins_over_slurms_word() -> None:
    assert mapping.ending("CANCELLED", ran=True, slurm_id="9",
                          killed_by_qex=True).state == State.KILLED


def test_batch_script_quotes_and_runs_the_node_program() -> None:
    text = mapping.batch_script(python="/opt/py thon/bin/python", job_id="abc",
                                env={"XDG_STATE_HOME": "/shared/it's"})
    assert text.startswith("#!/bin/sh\n")
    assert "export XDG_STATE_HOME='/shared/it'\"'\"'s'" in text
    assert text.rstrip().endswith("exec '/opt/py thon/bin/python' -P -m qex.engine.slurm.node abc")


def test_only_a_completed_record_lets_afterok_pass() -> None:
    assert mapping.node_exit_status("completed") == 0
    assert all(mapping.node_exit_status(s) != 0 for s in ("failed", "queued", "oom", "killed"))


def test_the_job_gets_its_allocations_variables_and_only_its_gpus() -> None:
    batch = {"SLURM_JOB_ID": "5", "SLURM_CPUS_PER_TASK": "2", "PATH": "/bin",
             "CUDA_VISIBLE_DEVICES": "3"}
    without = mapping.allocation_env(batch)
    assert without["SLURM_JOB_ID"] == "5" and without["SLURM_CPUS_PER_TASK"] == "2"
    assert "PATH" not in without
    assert without["CUDA_VISIBLE_DEVICES"] is None          # exported from the submit host
    with_gpus = mapping.allocation_env({**batch, "SLURM_JOB_GPUS": "0,1",
                                        "CUDA_VISIBLE_DEVICES": "0,1"})
    assert with_gpus["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert with_gpus["ROCR_VISIBLE_DEVICES"] is None
