"""The Slurm engine against a real one-node Slurm: the same qex commands, by the same qex id,
with Slurm as the scheduler and qex's own supervisor inside the allocation.

Slurm here has no cgroups, so nothing enforces --mem and Slurm never says OUT_OF_MEMORY: the
OOM path is tested with a fake job cgroup here (QEX_TEST_SLURM_CGROUP), and with Slurm's
state faked in tests/unit/test_slurm_engine.py.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
from conftest import SlurmEnv, scontrol

pytestmark = pytest.mark.slurm

GATED = "while [ ! -e {gate} ]; do sleep 0.1; done; echo {word}"


def gated(env: SlurmEnv, name: str = "gate", word: str = "done") -> list[str]:
    return ["sh", "-c", GATED.format(gate=env.root / name, word=word)]


def test_claims_reach_slurm_and_kill_stops_the_job(slurm_env: SlurmEnv) -> None:
    job = slurm_env.submit("--cpu", "2", "--mem", "300M", "--timeout", "5m", "--",
                           *gated(slurm_env))
    slurm_id = slurm_env.slurm_id(job)
    shown = scontrol(slurm_id)
    assert shown["NumCPUs"] == "2"
    assert shown["MinMemoryNode"] == "300M"
    assert shown["TimeLimit"] == "00:06:00"          # 5 min + qex's margin of 1 min
    assert shown["JobName"].startswith(f"qex-{job[:8]}")
    slurm_env.wait_until(lambda: slurm_env.state_of(job) == "running", "running")
    listed = slurm_env.run("list", check=True).stdout
    assert f"{job[:8]} slurm:{slurm_id}" in listed
    assert slurm_env.run("kill", job).returncode == 0
    done = slurm_env.run("status", "--wait", job, timeout=120)
    assert done.returncode == 125, done.stdout + done.stderr
    assert slurm_env.record(job)["state"] == "killed"
    slurm_env.wait_until(lambda: scontrol(slurm_id)["JobState"] == "CANCELLED", "CANCELLED")


def test_exit_code_and_output_come_back(slurm_env: SlurmEnv) -> None:
    script = 'echo from-the-node; echo "slurm=$SLURM_JOB_ID gpus=${CUDA_VISIBLE_DEVICES-none}"; exit 7'
    submitted = slurm_env.run("submit", "--mem", "100M", "--", "sh", "-c", script, check=True,
                              extra_env={"CUDA_VISIBLE_DEVICES": "3"})
    job = submitted.stdout.strip()
    done = slurm_env.run("status", "--wait", job, timeout=120)
    assert done.returncode == 7, done.stdout + done.stderr
    logs = slurm_env.run("logs", job, check=True).stdout
    assert "from-the-node" in logs
    # The job sees its allocation, and no GPU the submit shell named (it holds none).
    assert f"slurm={slurm_env.record(job)['engine_id']} gpus=none" in logs
    assert slurm_env.run("wait", "-q", job, timeout=60).returncode == 7
    record = slurm_env.record(job)
    assert record["exit_code"] == 7 and record["usage"]["max_rss"] > 0
    events = slurm_env.run("events", "--json", "--since", "start", "--count", "3", timeout=60)
    states = [json.loads(line).get("state") for line in events.stdout.splitlines()
              if json.loads(line).get("id") == job]
    assert "queued" in states
    shown = slurm_env.run("status", job, check=True).stdout
    assert f"slurm:     job {record['engine_id']}" in shown
    info = json.loads(slurm_env.run("info", "--json", check=True).stdout)
    assert info["engines"]["slurm"]["squeue_calls"] >= 1
    assert info["engines"]["slurm"]["partitions"] == ["main"]


def test_a_job_waiting_for_resources_says_so_and_cancel_reaches_slurm(
        slurm_env: SlurmEnv) -> None:
    cores = str(os.cpu_count() or 1)
    blocker = slurm_env.submit("--cpu", cores, "--mem", "100M", "--", *gated(slurm_env))
    slurm_env.wait_until(lambda: slurm_env.state_of(blocker) == "running", "the blocker runs")
    waiter = slurm_env.submit("--cpu", cores, "--mem", "100M", "--", "true")
    slurm_id = slurm_env.slurm_id(waiter)
    slurm_env.wait_until(lambda: "for resources" in slurm_env.run("list").stdout,
                         "the reason in qex list")
    listed = [line for line in slurm_env.run("list", check=True).stdout.splitlines()
              if line.startswith(waiter[:8])]
    assert listed and f"slurm:{slurm_id}" in listed[0] and "waits in Slurm" in listed[0]
    assert slurm_env.run("cancel", waiter).returncode == 0
    assert slurm_env.run("status", "--wait", waiter, timeout=60).returncode == 125
    assert slurm_env.record(waiter)["state"] == "cancelled"
    slurm_env.wait_until(lambda: scontrol(slurm_id)["JobState"] == "CANCELLED", "CANCELLED")
    (slurm_env.root / "gate").touch()
    assert slurm_env.run("status", "--wait", blocker, timeout=120).returncode == 0


def test_a_dependency_chain_runs_in_order_and_a_failed_need_skips(slurm_env: SlurmEnv) -> None:
    order = slurm_env.root / "order"
    first = slurm_env.submit("--mem", "100M", "--", "sh", "-c",
                             f"while [ ! -e {slurm_env.root / 'gate'} ]; do sleep 0.1; done; "
                             f"echo a >> {order}")
    second = slurm_env.submit("--mem", "100M", "--needs", first, "--", "sh", "-c",
                              f"echo b >> {order}")
    third = slurm_env.submit("--mem", "100M", "--needs", second, "--", "sh", "-c",
                             f"echo c >> {order}")
    first_id = slurm_env.slurm_id(first)
    second_id = slurm_env.slurm_id(second)
    assert f"afterok:{first_id}" in scontrol(second_id)["Dependency"]
    (slurm_env.root / "gate").touch()
    assert slurm_env.run("status", "--wait", third, timeout=120).returncode == 0
    assert order.read_text().split() == ["a", "b", "c"]
    broken = slurm_env.submit("--mem", "100M", "--", "sh", "-c", "exit 3")
    dependent = slurm_env.submit("--mem", "100M", "--needs", broken, "--", "true")
    dependent_id = slurm_env.slurm_id(dependent)
    done = slurm_env.run("status", "--wait", dependent, timeout=120)
    assert done.returncode == 126, done.stdout + done.stderr
    record = slurm_env.record(dependent)
    assert record["state"] == "skipped" and record["caused_by"] == broken
    slurm_env.wait_until(lambda: scontrol(dependent_id)["JobState"] == "CANCELLED",
                         "the dependent taken out of Slurm")


def test_scancel_from_outside_is_recorded_as_killed(slurm_env: SlurmEnv) -> None:
    job = slurm_env.submit("--mem", "100M", "--", *gated(slurm_env))
    slurm_id = slurm_env.slurm_id(job)
    slurm_env.wait_until(lambda: slurm_env.state_of(job) == "running", "running")
    subprocess.run(["scancel", slurm_id], check=True, timeout=30)
    done = slurm_env.run("status", "--wait", job, timeout=120)
    assert done.returncode == 125, done.stdout + done.stderr
    record = slurm_env.record(job)
    assert record["state"] == "killed"
    assert "Slurm stopped this job while it ran" in record["error"]
    assert slurm_env.run("status", job, check=True).stdout.count("scancel") == 1


def test_each_line_fan_out_runs_every_line(slurm_env: SlurmEnv) -> None:
    lines = slurm_env.root / "lines"
    lines.write_text("one\ntwo\nthree\n")
    out = slurm_env.root / "out"
    group = slurm_env.run("submit", "--each-line", str(lines), "--cpu", "1", "--mem", "100M",
                          "--", "sh", "-c", f'echo "$1" >> {out}', "job", "{}", check=True)
    gid = group.stdout.strip()
    assert slurm_env.run("wait", "-q", gid, timeout=180).returncode == 0
    assert sorted(out.read_text().split()) == ["one", "three", "two"]
    records = json.loads(slurm_env.run("status", gid, "--json", check=True).stdout)
    assert len(records) == 3 and len({r["engine_id"] for r in records}) == 3


def test_coordinator_kill_nine_loses_nothing(slurm_env: SlurmEnv) -> None:
    running = slurm_env.submit("--mem", "100M", "--", *gated(slurm_env, word="ran"))
    later = slurm_env.submit("--mem", "100M", "--needs", running, "--", "sh", "-c", "exit 4")
    slurm_env.wait_until(lambda: slurm_env.state_of(running) == "running", "running")
    later_id = slurm_env.slurm_id(later)
    pid = slurm_env.coordinator_pid()
    assert pid
    os.kill(pid, signal.SIGKILL)
    (slurm_env.root / "gate").touch()
    done = slurm_env.run("status", "--wait", later, timeout=120)   # a new coordinator
    assert done.returncode == 4, done.stdout + done.stderr
    assert slurm_env.record(running)["state"] == "completed"
    assert "ran" in slurm_env.run("logs", running, check=True).stdout
    assert slurm_env.record(later)["engine_id"] == later_id        # not submitted twice
    names = subprocess.run(["squeue", "-h", "-t", "all", "-o", "%j"], capture_output=True,
                           text=True, check=True, timeout=30).stdout.split()
    assert sum(name.startswith(f"qex-{later[:8]}") for name in names) == 1


def test_a_memory_kill_proven_by_the_job_cgroup_resubmits_larger(slurm_env: SlurmEnv) -> None:
    cgroup = slurm_env.root / "cgroup"
    cgroup.mkdir()
    events = cgroup / "memory.events"
    events.write_text("oom 0\noom_kill 0\n")
    slurm_env.env["QEX_TEST_SLURM_CGROUP"] = str(cgroup)
    once = slurm_env.root / "once"
    script = (f'if [ ! -e {once} ]; then touch {once}; printf "oom 1\\noom_kill 1\\n" > {events};'
              ' kill -9 $$; fi; echo second')
    job = slurm_env.submit("--cpu", "1", "--mem", "200M", "--", "sh", "-c", script)
    first_id = slurm_env.slurm_id(job)
    done = slurm_env.run("status", "--wait", job, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    record = slurm_env.record(job)
    assert record["attempts"] == 2 and record["mem"] == 400 * 1024 * 1024
    assert record["engine_id"] != first_id
    assert scontrol(record["engine_id"])["MinMemoryNode"] == "400M"
    assert "second" in slurm_env.run("logs", job, check=True).stdout


def test_a_claim_no_partition_holds_is_refused(slurm_env: SlurmEnv) -> None:
    too_many = str((os.cpu_count() or 1) + 1)
    refused = slurm_env.run("submit", "--cpu", too_many, "--mem", "100M", "--", "true")
    assert refused.returncode == 121
    assert "no Slurm partition can hold this claim" in refused.stderr
    gpus = slurm_env.run("submit", "--gpu", "1", "--mem", "100M", "--", "true")
    assert gpus.returncode == 121 and "1 GPUs (its largest node has 0)" in gpus.stderr
    assert not list((slurm_env.state / "jobs").glob("*"))


def test_run_rerun_dedupe_and_the_stop_hook_behave_as_on_one_machine(
        slurm_env: SlurmEnv) -> None:
    hook_out = slurm_env.root / "hook.out"
    slurm_env.write_config(
        '[engine]\nkind = "slurm"\npoll = 1\n[hooks]\non_stop = ["/bin/sh", "-c", '
        f'"echo $QEX_STATE $QEX_EXIT_CODE >> {hook_out}"]\n')
    attached = slurm_env.run("run", "--mem", "100M", "--", "sh", "-c", "echo attached; exit 3",
                             timeout=120)
    assert attached.returncode == 3 and "attached" in attached.stdout
    first = slurm_env.submit("--mem", "100M", "--dedupe-key", "k", "--", *gated(slurm_env))
    again = slurm_env.submit("--mem", "100M", "--dedupe-key", "k", "--", "true")
    assert again == first
    (slurm_env.root / "gate").touch()
    assert slurm_env.run("wait", "-q", first, timeout=120).returncode == 0
    rerun = slurm_env.run("rerun", first, check=True).stdout.strip().split()[-1]
    assert rerun != first
    assert slurm_env.run("wait", "-q", rerun, timeout=120).returncode == 0
    assert slurm_env.record(rerun)["engine"] == "slurm"
    assert slurm_env.record(rerun)["engine_id"] != slurm_env.record(first)["engine_id"]
    slurm_env.wait_until(lambda: hook_out.read_text().count("\n") >= 3, "three stop hooks")
    assert sorted(hook_out.read_text().splitlines()) == ["completed 0", "completed 0",
                                                          "failed 3"]


def test_qex_timeout_ends_the_job_before_slurms_limit(slurm_env: SlurmEnv) -> None:
    job = slurm_env.submit("--mem", "100M", "--timeout", "2s", "--", "sleep", "120")
    slurm_id = slurm_env.slurm_id(job)
    assert scontrol(slurm_id)["TimeLimit"] == "00:02:00"
    done = slurm_env.run("status", "--wait", job, timeout=120)
    assert done.returncode == 125, done.stdout + done.stderr
    assert slurm_env.record(job)["state"] == "timeout"


def test_a_pipeline_runs_on_slurm_and_a_failed_stage_skips_the_rest(slurm_env: SlurmEnv) -> None:
    pipeline = slurm_env.root / "ci.toml"
    pipeline.write_text(
        'name = "ci"\n'
        '[[jobs]]\nname = "build"\ncommand = ["sh", "-c", "echo built"]\n'
        '[jobs.resources]\nmem = "100MB"\n'
        '[[jobs]]\nname = "test"\ncommand = ["sh", "-c", "exit 4"]\nneeds = ["build"]\n'
        '[jobs.resources]\nmem = "100MB"\n'
        '[[jobs]]\nname = "ship"\ncommand = ["true"]\nneeds = ["test"]\n'
        '[jobs.resources]\nmem = "100MB"\n')
    result = slurm_env.run("pipeline", str(pipeline), check=True)
    group = result.stdout.strip()
    assert slurm_env.run("wait", "-q", group, timeout=180).returncode == 4
    records = {r["name"]: r for r in
               json.loads(slurm_env.run("status", group, "--json", check=True).stdout)}
    assert [records[n]["state"] for n in ("build", "test", "ship")] == \
        ["completed", "failed", "skipped"]
    assert all(r["engine"] == "slurm" for r in records.values())
