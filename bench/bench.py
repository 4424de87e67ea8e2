"""qex benchmark: the figures that matter to users, each beside a baseline run on the same
machine in the same run, so the ratio means something on any machine.

    .venv/bin/python bench/bench.py            # full run (~2 minutes on 2 cores)
    .venv/bin/python bench/bench.py --quick    # fewer repetitions

Every figure is a median. The state is private (XDG_* and QEX_PEERS_DIR in a temp dir), so the
benchmark never touches a user's queue. Baselines:
  start-up         `python -c pass` with the same interpreter (the floor any Python CLI pays)
  submit->done     spawning `true` with subprocess and waiting for it (no queue at all)
  drain rate       a 2-worker pool of subprocess `true` (what 2 slots could do with no bookkeeping)
  50 ms jobs       the ideal time: jobs x 50 ms / 2 slots, and beside it a 2-worker pool of
                   the same command (the ideal counts no process start; the pool does)
  memory           RSS of a bare `python -c` that sleeps (the interpreter's own floor)

The shell-loop section (`--shell`, also part of the full run) measures qex as a user's shell
loop or an agent uses it: one `qex` process per call, each call timed beside the floor
`python -S -c pass` in the same round (interleaved), so load on the machine hits both alike.
`--only NAME[,NAME]` runs only some sections: hot, loop, drain, cold, scale, idle, chain
(the steps from one job's end to the next job's exec, from the trace of `QEX_CHAIN_TRACE`,
at one slot and at two, where each start is paired with the end that freed its slot; with
`--before DIR`, also the whole chain of both trees in interleaved rounds). With
`--before DIR` the loop, drain and scale sections run in two rounds, each tree first once.
`--slow-creations` makes that side-by-side chain delete each round's state instead of
setting it aside, so file creations run in the slow phase that follows deletions (as after
`qex clean`). `--dir DIR` puts the private state on another file system (default /tmp): the records'
syncs and file creations are a large part of the per-job chain, and they differ between
file systems (see docs/performance.md, twenty-fourth pass). `--installed` runs qex, and the
floor, from a layout as `pipx install` makes it: a development environment's `.pth` files
(coverage, setuptools, the editable install) add about a millisecond to every call.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
# QEX_BENCH_BIN names another program (an older build's console script, say) to measure.
QEX_BIN = Path(os.environ.get("QEX_BENCH_BIN") or Path(PY).parent / "qex")
QEX = [str(QEX_BIN)] if QEX_BIN.exists() else [PY, "-m", "qex"]
#: In an environment made for `--before DIR`, the program to run (the older checkout's).
PROGRAM_KEY = "QEX_BENCH_PROGRAM"


def prog(env: dict[str, str] | None) -> list[str]:
    """The qex program that serves this environment."""
    if env and PROGRAM_KEY in env:
        return list(json.loads(env[PROGRAM_KEY]))
    return QEX


#: The interpreter that runs an older tree's script (`--installed` sets its own).
PROGRAM_PY = PY


def installed_layout(where: Path) -> str:
    """For `--installed`: a layout like the one `pipx install` makes, and its interpreter. A
    virtual environment of the same base interpreter, without pip, whose one `.pth` file
    names this checkout and the development environment's libraries, and a `qex` script as
    the wheel installs it. The development environment's own `.pth` files (coverage's
    start-up hook, setuptools' distutils shim, the editable install's finder) cost every
    call about a millisecond that an installed qex does not pay; here they are not read."""
    import sysconfig

    base = getattr(sys, "_base_executable", PY)
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True)
    python = where / "bin" / "python"
    found = subprocess.run([str(python), "-c",
                            "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                           capture_output=True, text=True, check=True)
    libraries = sysconfig.get_paths()["purelib"]
    Path(found.stdout.strip(), "qex-libraries.pth").write_text(f"{HERE.parent}\n{libraries}\n")
    body = (HERE.parent / "scripts" / "qex").read_text().split("\n", 1)[1]
    script = where / "bin" / "qex"
    script.write_text(f"#!{python}\n{body}")
    script.chmod(0o755)
    return str(python)


def before_env(root: Path, tree: Path) -> dict[str, str]:
    """An environment that runs the qex of the checkout `tree` as it was installed: its own
    program script (`scripts/qex`) where it has one, else a console-script wrapper of the
    installer's kind (it imports `re` first, as entry points did). A wrapper that called
    `main()` of a tree that installs `scripts/qex` made every call of the older tree slower
    than it ever was for its users (its `re`, and the interpreter's teardown that `program`
    skips): 68 against 44 ms for submit-then-wait."""
    env = make_env(root)
    env["PYTHONPATH"] = str(tree)
    script = tree / "scripts" / "qex"
    if script.is_file():
        env[PROGRAM_KEY] = json.dumps([PROGRAM_PY, str(script)])
        return env
    wrapper = root / "qex-console-script"
    wrapper.write_text(
        f"#!{PROGRAM_PY}\nimport re\nimport sys\nfrom qex.cli.main import main\n"
        "if __name__ == '__main__':\n"
        "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
        "    sys.exit(main())\n")
    wrapper.chmod(0o755)
    env[PROGRAM_KEY] = json.dumps([str(wrapper)])
    return env


def make_env(root: Path, cpu_budget: int = 2) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QEX_", "XDG_"))}
    for sub in ("home", "config", "state", "run", "peers", "tmp"):
        (root / sub).mkdir(exist_ok=True)
    env.update({
        "HOME": str(root / "home"), "XDG_CONFIG_HOME": str(root / "config"),
        "XDG_STATE_HOME": str(root / "state"), "XDG_RUNTIME_DIR": str(root / "run"),
        "QEX_PEERS_DIR": str(root / "peers"), "TMPDIR": str(root / "tmp"),
        "QEX_IDLE_EXIT_SECS": "600",
    })
    (root / "config" / "qex.toml").write_text(
        f'[budget]\ncpu = {cpu_budget}\nmem = "90%"\n[system]\nreserve_mem = "64MB"\n'
        '[queue]\nsettle = "0"\n[learn]\nenabled = false\n[peers]\nenabled = false\n'
    )
    return env


def qex(env: dict[str, str], *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([*prog(env), *args], env=env, capture_output=True, text=True, timeout=600)
    if check and proc.returncode not in (0,):
        raise SystemExit(f"qex {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - start


def median_of(n: int, fn: object) -> float:
    assert callable(fn)
    return float(statistics.median(fn() for _ in range(n)))


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kb(pid: int) -> int:
    """Proportional set size: shared pages split among their users (what a process costs)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def ctx_switches(pid: int) -> int:
    total = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
            total += int(line.split()[1])
    return total


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def cpu_ns(pid: int) -> int:
    """A process's CPU time in ns: the scheduler's own count where the kernel keeps one, else
    the clock ticks of /proc/<pid>/stat."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return cpu_ticks(pid) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def coordinator_pid(env: dict[str, str]) -> int:
    return int(json.loads(qex(env, "info", "--json").stdout)["pid"])


def drain(env: dict[str, str], root: Path, count: int, argv: list[str],
          cpu: dict[str, float] | None = None, served: list[int] | None = None,
          submitted: list[float] | None = None) -> float:
    """Queue `count` jobs behind a paused queue (one fan-out), then time from the resume to
    the end of the last job: the rate the coordinator and supervisors sustain, without the
    cost of `count` separate CLI start-ups. With `cpu`, also the CPU milliseconds per job
    that each kind of process spent in that time (`service_cpu`; Linux only); with `served`,
    the number of jobs each supervisor process served (from the records); with `submitted`,
    the seconds that the fan-out's submission took (the durable records of every job)."""
    lines = root / f"lines-{count}.txt"
    lines.write_text("".join(f"{i}\n" for i in range(count)))
    qex(env, "pause", "queue", "--reason", "benchmark")
    began = time.perf_counter()
    group = qex(env, "submit", "--each-line", str(lines), "--max-jobs", str(count),
                "--cpu", "1", "--mem", "16MB", "--", *argv, "{}").stdout.strip()
    if submitted is not None:
        submitted.append(time.perf_counter() - began)
    before = service_cpu(root) if cpu is not None else None
    start = time.perf_counter()
    qex(env, "resume", "queue")
    qex(env, "wait", "-q", group, check=False)
    took = time.perf_counter() - start
    if served is not None:
        served.extend(supervisors_of(root, group).values())
    if cpu is not None and before is not None:
        time.sleep(0.3)  # the last supervisors' exits, which their fork server counts
        after = service_cpu(root)
        if after is not None:
            cpu.update({kind: (after[kind] - before[kind]) * 1000.0 / count for kind in after})
    return took


def supervisors_of(root: Path, group: str) -> collections.Counter[int]:
    """How many jobs of `group` each supervisor pid served, from their records."""
    served: collections.Counter[int] = collections.Counter()
    for path in (root / "state" / "qex" / "jobs").glob("*/status.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if record.get("group") == group and isinstance(record.get("supervisor_pid"), int):
            served[record["supervisor_pid"]] += 1
    return served


def service_cpu(root: Path) -> dict[str, float] | None:
    """CPU seconds so far of the coordinator of `root`, of its fork server, and of its
    supervisors with their jobs: those the server has reaped, and those still alive (a
    spare, and supervisors that serve job after job, whose CPU would reach the server's
    count only at their exit); None without /proc, or while either is missing."""
    try:
        coordinator = int((root / "state" / "qex" / "run" / "coordinator.pid")
                          .read_text().split()[0])
        children = Path(f"/proc/{coordinator}/task/{coordinator}/children").read_text().split()
        servers = [int(pid) for pid in children
                   if b"forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        if not servers:
            return None
        tick = os.sysconf("SC_CLK_TCK")

        def times(pid: int) -> list[float]:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            return [int(value) / tick for value in fields[11:15]]  # utime stime cutime cstime

        own, server = times(coordinator), times(servers[0])
        alive = 0.0
        for pid in Path(f"/proc/{servers[0]}/task/{servers[0]}/children").read_text().split():
            try:
                alive += sum(times(int(pid)))
            except OSError:
                continue  # it exited meanwhile: the server's count has it, or soon will
    except (OSError, ValueError, IndexError):
        return None
    return {"coordinator": own[0] + own[1], "fork server": server[0] + server[1],
            "supervisors and jobs": server[2] + server[3] + alive}


def pool_drain(count: int, argv: list[str], workers: int = 2) -> float:
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda _: subprocess.run(argv, check=False), range(count)))
    return time.perf_counter() - start


FLOOR = [PY, "-S", "-c", "pass"]
#: The floor (ms) of the machine on which issue 7 set the loop's target of 60 jobs/s.
LOOP_TARGET_FLOOR_MS = 7.0


def cpu_timed(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU (user + system of the child) suffers less from a
    busy machine than the wall clock does."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timed(argv, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


CPU: dict[str, float] = {}


def interleaved(reps: int, argvs: dict[str, list[str]],
                env: dict[str, str] | dict[str, dict[str, str]]) -> dict[str, float]:
    """Median ms of each argv, and of the floor, each round running every one once (the
    CPU-time medians go to CPU)."""
    samples: dict[str, list[float]] = {name: [] for name in ["floor", *argvs]}
    cpu: dict[str, list[float]] = {name: [] for name in ["floor", *argvs]}
    for _ in range(reps):
        for name, argv in [("floor", FLOOR), *argvs.items()]:
            own = env.get(name) if isinstance(env.get(name), dict) else env
            wall, used = cpu_timed(argv, None if name == "floor" else own)  # type: ignore[arg-type]
            samples[name].append(wall)
            cpu[name].append(used)
    CPU.clear()
    CPU.update({name: statistics.median(values) * 1000 for name, values in cpu.items()})
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def floor_row(name: str, value: float, floor: float, target: float | None,
              cpu: tuple[float, float] | None = None) -> None:
    ratio = value / floor if floor else float("nan")
    aim = f"target <= {target:g} x" if target is not None else ""
    flag = "" if target is None or ratio <= target else "  MISSED"
    used = f"  (cpu {cpu[0]:.1f} / {cpu[1]:.1f} ms x{cpu[0] / cpu[1]:.2f})" if cpu and cpu[1] else ""
    print(f"{name:<34} {value:>8.1f} ms  floor {floor:>6.1f} ms  x{ratio:>5.2f}  {aim}{flag}{used}")


def submit_id(env: dict[str, str], *args: str) -> str:
    return qex(env, "submit", *args).stdout.strip()


def hot_argvs(env: dict[str, str]) -> dict[str, list[str]]:
    done = submit_id(env, "--cpu", "1", "--mem", "16MB", "--tag", "bench", "--name", "hello",
                     "--", "echo", "hello")
    more = [submit_id(env, "--cpu", "1", "--mem", "16MB", "--", "true") for _ in range(2)]
    lines = Path(env["HOME"]) / "fan-lines.txt"
    lines.write_text("a\nb\nc\n")
    group = submit_id(env, "--cpu", "1", "--mem", "16MB", "--each-line", str(lines), "--name",
                      "fan", "--", "echo", "{}")
    qex(env, "wait", "-q", done, *more, group, check=False)
    pipeline = Path(env["HOME"]) / "ci.toml"
    pipeline.write_text('[[jobs]]\nname = "build"\ncommand = ["true"]\n'
                        '[[jobs]]\nname = "test"\ncommand = ["true"]\nneeds = ["build"]\n')
    return {
        "submit -- true": [*prog(env), "submit", "--", "true"],
        "submit --cpu 1 --mem 16MB -- true": [*prog(env), "submit", "--cpu", "1", "--mem", "16MB", "--", "true"],
        "submit --after ID -- true": [*prog(env), "submit", "--after", done, "--", "true"],
        "submit --each-line (3 lines)": [*prog(env), "submit", "--each-line", str(lines), "--",
                                         "true", "{}"],
        "pipeline FILE (2 stages)": [*prog(env), "pipeline", str(pipeline)],
        "rerun ID": [*prog(env), "rerun", more[0]],
        "wait ID (finished)": [*prog(env), "wait", done],
        "wait --timeout 1m ID ID ID (finished)": [*prog(env), "wait", "--timeout", "1m", done,
                                                  *more],
        "wait NAME (finished)": [*prog(env), "wait", "hello"],
        "status ID": [*prog(env), "status", done],
        "status ID --json": [*prog(env), "status", done, "--json"],
        "status NAME": [*prog(env), "status", "hello"],
        "status GROUP-NAME (3 stages)": [*prog(env), "status", "fan"],
        "kill GROUP (3 stopped stages)": [*prog(env), "kill", group],
        "status --wait ID": [*prog(env), "status", "--wait", done],
        "status ID --tail 5": [*prog(env), "status", done, "--tail", "5"],
        "status ID --follow (finished)": [*prog(env), "status", done, "--follow"],
        "list": [*prog(env), "list"],
        "list --json": [*prog(env), "list", "--json"],
        "list --tag bench --cwd": [*prog(env), "list", "--tag", "bench", "--cwd"],
        "list --json --state running": [*prog(env), "list", "--json", "--state", "running"],
        "logs ID": [*prog(env), "logs", done],
        "logs ID --grep hel --lines 1:5": [*prog(env), "logs", done, "--grep", "hel", "--lines",
                                           "1:5"],
        "logs ID --grep '^h.l' -C 1 (dots)": [*prog(env), "logs", done, "--grep", "^h.l", "-C",
                                              "1"],
        "logs ID --grep 'h[a-z]+o' (regex)": [*prog(env), "logs", done, "--grep", "h[a-z]+o"],
        "logs ID --grep '(?i)HEL+O' (any case)": [*prog(env), "logs", done, "--grep",
                                                  "(?i)HEL+O"],
        "logs ID --grep 'l(?=o)' (look-ahead: re)": [*prog(env), "logs", done, "--grep",
                                                     "l(?=o)"],
        "logs ID --grep 'oops|^hel' (branches)": [*prog(env), "logs", done, "--grep",
                                                  "oops|^hel"],
        "logs ID --follow (finished)": [*prog(env), "logs", done, "--follow"],
        "status ID --grep hel --json": [*prog(env), "status", done, "--grep", "hel", "--json"],
        "kill ID (finished: refused)": [*prog(env), "kill", done],
        "cancel ID (finished: refused)": [*prog(env), "cancel", done],
        # Every record read, none selected: the clean that an agent runs after its work,
        # without the deletions (which the fortieth and forty-second passes measured).
        "clean --state oom (nothing to delete)": [*prog(env), "clean", "--state", "oom"],
        "kill --signal INT ID ID ID (refused)": [*prog(env), "kill", "--signal", "INT", done,
                                                 *more],
        "info --json": [*prog(env), "info", "--json"],
        "events --json --count 1": [*prog(env), "events", "--json", "--count", "1"],
        "info": [*prog(env), "info"],
        # Rarer commands that left click in the forty-seventh pass: the agents' check for
        # loops left behind, the page that says whether limits hold here, the disk's use.
        "watchers": [*prog(env), "watchers"],
        "config show": [*prog(env), "config", "show"],
        "config path": [*prog(env), "config", "path"],
        "du": [*prog(env), "du"],
        "gc --dry-run": [*prog(env), "gc", "--dry-run"],
        "schema status": [*prog(env), "schema", "status"],
        "version": [*prog(env), "version"],
        "--version": [*prog(env), "--version"],
        "help agents": [*prog(env), "help", "agents"],
        "qex (no arguments: banner and commands)": [*prog(env)],
        "--help": [*prog(env), "--help"],
        "submit --help": [*prog(env), "submit", "--help"],
        "pause queue -h": [*prog(env), "pause", "queue", "-h"],
        "completion bash (a shell's start-up file)": [*prog(env), "completion", "bash"],
        "pause (what is paused)": [*prog(env), "pause"],
        # The two in this order, last in each round: no other command meets a paused queue.
        "pause queue": [*prog(env), "pause", "queue"],
        "resume queue": [*prog(env), "resume", "queue"],
    }


#: Tab presses of the completion scripts: (COMP_WORDS, COMP_CWORD) as bash's script sets them.
#: A Tab press: the shell whose script calls back, its COMP_WORDS and COMP_CWORD.
TAB_PRESSES = {
    "st<Tab> (a command's name)": ("bash", "qex st", "1"),
    "submit --c<Tab> (option names)": ("bash", "qex submit --c", "2"),
    "status <Tab> (ids and names)": ("bash", "qex status ", "2"),
    "submit --cpu=2 --<Tab> (zsh, a joined value)": ("zsh", "qex submit --cpu=2 --", "3"),
    "submit --name 'a b' --<Tab> (quotes)": ("bash", "qex submit --name 'a b' --", "4"),
}


def hot_commands(envs: dict[str, dict[str, str]], reps: int) -> None:
    """Each hot command as one process, beside `python -S -c pass` (target 2 x); with
    several programs (`--before`), their runs are interleaved in the same rounds."""
    argvs: dict[str, list[str]] = {}
    owner: dict[str, dict[str, str]] = {}
    for label, env in envs.items():
        for name, argv in hot_argvs(env).items():
            key = f"{label}{name}"
            argvs[key] = argv
            owner[key] = env
        for name, (shell, words, cword) in TAB_PRESSES.items():
            key = f"{label}{name}"
            argvs[key] = prog(env)
            owner[key] = {**env, "_QEX_COMPLETE": f"{shell}_complete", "COMP_WORDS": words,
                          "COMP_CWORD": cword}
    found = interleaved(reps, argvs, owner)
    print(f"-- hot commands, one process each (load {os.getloadavg()[0]:.2f}) --")
    for key in argvs:
        floor_row(f"qex {key}", found[key], found["floor"], 2.0, (CPU[key], CPU["floor"]))
    for env in envs.values():
        settle(env)


def settle(env: dict[str, str]) -> None:
    """Wait for every job to stop (the hot-command submits leave jobs behind)."""
    listing = json.loads(qex(env, "list", "--json").stdout)
    jobs = listing if isinstance(listing, list) else listing.get("jobs", [])
    ids = [j["id"] for j in jobs if j.get("state") in ("queued", "starting", "running")]
    if ids:
        qex(env, "wait", "-q", *ids, check=False)


def submit_then_wait(env: dict[str, str], reps: int
                     ) -> tuple[float, float, float, float, float]:
    """ms of `qex submit -- true` then `qex wait ID` as two processes, of the one process
    `qex submit --wait -q -- true` (with `--wait-timeout 1m` in every other round), of
    `qex run -- true` (the output copied here), and the floor (interleaved)."""
    samples, single, floors = [], [], []
    limited, followed = [], []
    for _ in range(reps):
        floors.append(timed(FLOOR))
        start = time.perf_counter()
        job = subprocess.run([*prog(env), "submit", "--", "true"], env=env, capture_output=True,
                             text=True).stdout.strip()
        subprocess.run([*prog(env), "wait", job], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        samples.append(time.perf_counter() - start)
        single.append(timed([*prog(env), "submit", "--wait", "-q", "--", "true"], env))
        limited.append(timed([*prog(env), "submit", "--wait", "-q", "--wait-timeout", "1m", "--",
                              "true"], env))
        followed.append(timed([*prog(env), "run", "--", "true"], env))
    return (statistics.median(samples) * 1000, statistics.median(single) * 1000,
            statistics.median(limited) * 1000, statistics.median(followed) * 1000,
            statistics.median(floors) * 1000)


def shell_loop(env: dict[str, str], root: Path, count: int, job: str) -> float:
    """Seconds for a shell loop of `count` `qex submit -- JOB`, then one `qex wait` on all.

    Each job claims one core and 16 MB, as the fan-out's do, so that the two slots of the
    budget are what limits the jobs: without a claim a job takes the default share of the
    memory (half of it), and the loop would time one slot."""
    script = root / "loop.sh"
    ids = root / "loop-ids"
    submit = f'{" ".join(prog(env))} submit --cpu 1 --mem 16MB -- {job}'
    script.write_text(
        f'i=0; : > {ids}\n'
        f'while [ $i -lt {count} ]; do {submit} >> {ids}; i=$((i+1)); done\n'
        f'{" ".join(prog(env))} wait -q $(cat {ids})\n'
    )
    start = time.perf_counter()
    subprocess.run(["sh", str(script)], env=env, check=False)
    return time.perf_counter() - start


#: What `set_aside` moved out of the way, deleted when the benchmark ends.
_SET_ASIDE: list[Path] = []
#: `--slow-creations`: the side-by-side chain deletes each round's directory (`whole_chain`).
DELETE_ROUNDS = False


def set_aside(path: Path) -> None:
    """Take `path` out of the way without deleting it until the benchmark ends.

    On ext4 without a journal (this project's development machine) every new inode in a
    block group is first checked against the group's recently deleted ones: after 2,000 jobs'
    directories were deleted, creating a file cost 0.9 ms of CPU in place of 0.03 ms for
    the next few seconds (up to five minutes while the inode table is dirty), so each
    section ran slower than the one before it. A rename frees no inode."""
    if not path.exists():
        return
    aside = path.with_name(f".{path.name}.set-aside-{len(_SET_ASIDE)}")
    path.rename(aside)  # beside it, so on the same file system
    _SET_ASIDE.append(aside)


def stop_coordinator(env: dict[str, str], root: Path) -> None:
    pid_file = root / "state" / "qex" / "run" / "coordinator.pid"
    sock = root / "state" / "qex" / "run" / "qex.sock"
    try:
        pid = int(pid_file.read_text().split()[0])
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError, IndexError):
        return
    for _ in range(400):
        try:
            os.kill(pid, 0)
        except OSError:
            break
        time.sleep(0.01)
    for _ in range(100):
        if not sock.exists():
            break
        time.sleep(0.01)


#: The marks of a cold start, as `qex.platform.chaintrace` writes them ("-" is the job of the
#: start-up marks; `t0`, `t1` and `t3` are the benchmark's own: the submit's start and end,
#: and the end of the wait), each with what happened by then.
COLD_MARKS = (
    ("t0", "submit starts"),
    ("cli.start", "submit: nobody listens, starts a coordinator"),
    ("co.process", "coordinator: forked from the submit, in `qex daemon`"),
    ("co.config", "coordinator: config read"),
    ("co.forkserver", "coordinator: fork server forked"),
    ("fs.process", "fork server: in its entry"),
    ("co.bound", "coordinator: socket bound"),
    ("co.imported", "coordinator: imports done"),
    ("co.recovered", "coordinator: recovery done"),
    ("co.listening", "coordinator: serving the socket"),
    ("cli.connected", "submit: connected"),
    ("co.request", "coordinator: first request read"),
    ("co.start", "coordinator: job admitted"),
    ("co.starting.written", "coordinator: `starting` written"),
    ("fs.ready", "fork server: imports done"),
    ("fs.fork", "fork server: hands the job to a supervisor"),
    ("sup.exec", "supervisor: execs the job"),
    ("sup.written.final", "supervisor: final record written"),
    ("t1", "submit returns"),
    ("t3", "wait returns"),
)


def cold_marks(trace: Path) -> dict[str, int]:
    """The first time of each mark in one cold round's trace (ns, CLOCK_MONOTONIC)."""
    found: dict[str, int] = {}
    try:
        text = trace.read_text()
    except OSError:
        return found
    for line in text.splitlines():
        t_text, _pid, _job, step = line.split(" ", 3)
        for state in FINAL_MARKS:
            step = step.replace(f".{state}", ".final")
        found.setdefault(step, int(t_text))
    return found


def cold_start(envs: dict[str, dict[str, str]], reps: int
               ) -> dict[str, tuple[float, float, dict[str, list[float]]]]:
    """submit-then-wait with no coordinator running (it is stopped before each round), in a
    state directory of its own: recovery reads every record, and the other sections leave
    thousands behind. With several programs (`--before`), each round runs every one, so a
    change of load hits them alike. Each run has a chain trace of its own
    (`QEX_CHAIN_TRACE`). Per program: the median ms, the floor's, and per mark its ms after
    the submit's start in each round."""
    setups = {}
    for label, env in envs.items():
        root = root_of(env) / "cold"
        root.mkdir(exist_ok=True)
        fresh = make_env(root)
        own = {**env, **{k: v for k, v in fresh.items()
                         if k.startswith("XDG_") or k in ("HOME", "QEX_PEERS_DIR", "TMPDIR")}}
        setups[label] = (root, own)
    samples: dict[str, list[float]] = {label: [] for label in envs}
    floors: list[float] = []
    offsets: dict[str, dict[str, list[float]]] = {
        label: {mark: [] for mark, _ in COLD_MARKS} for label in envs}
    for rep in range(reps):
        for label, (root, env) in setups.items():
            stop_coordinator(env, root)
            set_aside(root / "state" / "qex" / "jobs")
            trace = root / f"cold-{rep}.trace"
            traced = {**env, "QEX_CHAIN_TRACE": str(trace)}
            time.sleep(0.2)
            floors.append(timed(FLOOR))
            t0 = time.monotonic_ns()
            start = time.perf_counter()
            job = subprocess.run([*prog(env), "submit", "--", "true"], env=traced,
                                 capture_output=True, text=True).stdout.strip()
            t1 = time.monotonic_ns()
            subprocess.run([*prog(env), "wait", job], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            samples[label].append(time.perf_counter() - start)
            marks = {**cold_marks(trace), "t0": t0, "t1": t1, "t3": time.monotonic_ns()}
            for mark, values in offsets[label].items():
                if mark in marks:
                    values.append((marks[mark] - t0) / 1e6)
    for root, env in setups.values():
        stop_coordinator(env, root)
    floor = statistics.median(floors) * 1000
    return {label: (statistics.median(samples[label]) * 1000, floor, offsets[label])
            for label in envs}


def print_cold_steps(offsets: dict[str, list[float]]) -> None:
    """The cold start as a timeline: each mark's median time after the submit's start, in
    the order of those medians, and the gap to the row above."""
    rows = sorted((statistics.median(values), mark) for mark, values in offsets.items()
                  if values)
    names = dict(COLD_MARKS)
    print(f"{'step (median ms after the submit started)':<52} {'at':>8} {'gap':>8}")
    before = 0.0
    for at, mark in rows:
        print(f"{names[mark]:<52} {at:>8.1f} {at - before:>+8.1f}   {mark}")
        before = at


def scale_argvs(env: dict[str, str], short: str) -> dict[str, list[str]]:
    """The calls timed at 10 and at thousands of queued jobs; `short` is an id's first 8
    characters, as the table shows it and people type it."""
    return {"submit": [*prog(env), "submit", "--", "true"],
            "list --json": [*prog(env), "list", "--json"],
            "list --json --state running": [*prog(env), "list", "--json", "--state", "running"],
            "list --tag bench --cwd": [*prog(env), "list", "--tag", "bench", "--cwd"],
            "list": [*prog(env), "list"],
            "status SHORT-ID": [*prog(env), "status", short]}


def finished_argvs(env: dict[str, str], short: str) -> dict[str, list[str]]:
    """The look-ups agents repeat, timed while the coordinator holds thousands of finished
    jobs: by a short id, and the filters of live states."""
    return {"status SHORT-ID": [*prog(env), "status", short],
            "wait SHORT-ID": [*prog(env), "wait", short],
            "list --state running": [*prog(env), "list", "--state", "running"],
            "list --json --state queued": [*prog(env), "list", "--json", "--state", "queued"]}


def scale(env: dict[str, str], root: Path, reps: int, queued: int = 2000) -> None:
    """With the queue paused: one submit at 10 queued and at `queued`, `list --json`, the
    `list` table, `status` by a short id, RSS."""
    qex(env, "pause", "queue", "--reason", "benchmark")
    first = submit_id(env, "--", "true")
    for _ in range(9):
        submit_id(env, "--", "true")
    pid = coordinator_pid(env)
    rss_10 = rss_kb(pid)
    few = interleaved(reps, scale_argvs(env, first[:8]), env)
    lines = root / "scale-lines.txt"
    have = 10 + reps
    lines.write_text("".join(f"{i}\n" for i in range(queued - have)))
    started = time.perf_counter()
    qex(env, "submit", "--each-line", str(lines), "--max-jobs", str(queued), "--", "true", "{}")
    fan_out = time.perf_counter() - started
    time.sleep(1.0)
    rss_many = rss_kb(pid)
    many = interleaved(reps, scale_argvs(env, first[:8]), env)
    rss_listed = rss_kb(pid)  # the coordinator now also keeps each job's listing text and row
    print(f"-- scale: {queued} queued (load {os.getloadavg()[0]:.2f}) --")
    filled = queued - have
    print(f"{f'fan-out of {filled} lines, paused':<34} {fan_out * 1000:>8.0f} ms  "
          f"({fan_out * 1000 / filled:.2f} ms per job: the durable records of each)")
    floor_row("submit, 10 queued", few["submit"], few["floor"], 2.0)
    floor_row(f"submit, {queued} queued", many["submit"], many["floor"], 2.0)
    print(f"{'list --json, 10 queued':<34} {few['list --json']:>8.1f} ms")
    print(f"{f'list --json, {queued} queued':<34} {many['list --json']:>8.1f} ms  (target <= 100 ms)")
    for name in ("list", "list --tag bench --cwd", "list --json --state running",
                 "status SHORT-ID"):
        print(f"{f'{name}, 10 queued':<34} {few[name]:>8.1f} ms")
        print(f"{f'{name}, {queued} queued':<34} {many[name]:>8.1f} ms")
    grown = (rss_many - rss_10) / (queued - 10)
    print(f"{'coordinator RSS per queued job':<34} {grown:>8.2f} KB  (target < 10 KB)")
    listed = (rss_listed - rss_10) / (queued - 10)
    print(f"{'  the same after the listings':<34} {listed:>8.2f} KB  (target < 10 KB)")
    resumed = time.perf_counter()
    longest, typical = answers_after_resume(env)
    print(f"{'info --json after the resume':<34} {longest:>8.1f} ms  (the longest in 1.5 s; "
          f"median {typical:.1f} ms: every queued job's reason changes at once)")
    settle(env)  # the queued jobs run to their ends: a coordinator that holds them finished
    drained = time.perf_counter() - resumed
    print(f"{f'{queued} queued, drained at 2 slots':<34} {queued / drained:>8.1f} jobs/s  "
          "(from the resume, `info --json` asked in its first 1.5 s; the drain section "
          "drains 500)")
    done = interleaved(reps, finished_argvs(env, first[:8]), env)
    print(f"-- scale: {queued} finished (load {os.getloadavg()[0]:.2f}) --")
    for name in finished_argvs(env, first[:8]):
        floor_row(f"{name}, {queued} done", done[name], done["floor"], 2.0)
    behind_busy_slots(env, root, reps, queued)
    stop_coordinator(env, root)
    set_aside(root / "state" / "qex")
    qex(env, "info", "--json")


def submits_costed(env: dict[str, str], pid: int, argv: list[str], count: int
                   ) -> tuple[float, float]:
    """`count` runs of `argv`, one process each: the median wall time (ms), and the
    coordinator's CPU per run (ms), the scheduler passes that the runs woke included."""
    walls: list[float] = []
    before = cpu_ns(pid)
    for _ in range(count):
        walls.append(timed(argv, env) * 1000)
    time.sleep(0.3)  # a pass that a submission woke runs after its answer
    return statistics.median(walls), (cpu_ns(pid) - before) / 1e6 / count


def behind_busy_slots(env: dict[str, str], root: Path, reps: int, queued: int) -> None:
    """Submissions into a queue whose slots are busy, at 10 and at `queued` queued: two long
    jobs hold the budget of two cores, and every job queued behind them claims what the
    submissions claim. Each queued job waits for cores; its reason is the scheduler's."""
    claim = ["--cpu", "1", "--mem", "16MB"]
    holders = [submit_id(env, *claim, "--", "sleep", "600") for _ in range(2)]
    for _ in range(8):
        submit_id(env, *claim, "--", "true")
    time.sleep(0.5)
    pid = coordinator_pid(env)
    argv = [*prog(env), "submit", *claim, "--", "true"]
    count = max(reps, 20)
    few = submits_costed(env, pid, argv, count)
    filled = queued - 10 - count
    lines = root / "busy-lines.txt"
    lines.write_text("".join(f"{i}\n" for i in range(filled)))
    started = time.perf_counter()
    group = qex(env, "submit", "--each-line", str(lines), "--max-jobs", str(queued), *claim,
                "--", "true", "{}").stdout.strip()
    fan_out = time.perf_counter() - started
    time.sleep(1.0)  # the reasons that a pass deferred are written
    many = submits_costed(env, pid, argv, count)
    print(f"-- scale: {queued} queued behind busy slots (load {os.getloadavg()[0]:.2f}) --")
    print(f"{f'fan-out of {filled} lines, busy':<34} {fan_out * 1000:>8.0f} ms  "
          f"({fan_out * 1000 / filled:.2f} ms per job)")
    for label, (wall, cpu) in (("10", few), (str(queued), many)):
        print(f"{f'submit, {label} queued, busy':<34} {wall:>8.1f} ms  "
              f"(coordinator CPU {cpu:.2f} ms per submission)")
    started = time.perf_counter()
    qex(env, "cancel", group, check=False)
    cancelled = time.perf_counter() - started
    print(f"{f'cancel of that group ({filled} jobs)':<34} {cancelled * 1000:>8.0f} ms  "
          f"({cancelled * 1000 / filled:.2f} ms per job)")
    qex(env, "kill", *holders, check=False)
    settle(env)
    skipped_group(env, root, filled)
    needing_group(env, root, filled)
    drain_beside_waiting(env, root, filled)
    drain_beside_waiting(env, root, filled, lock=True)
    drain_beside_a_peers_pool(env, root, filled)


def group_behind(env: dict[str, str], root: Path, count: int, first: str) -> float:
    """Seconds from the resume of the queue to the end of `qex wait GROUP`, for a fan-out of
    `count` × `true` that all need one job whose command is `first`, submitted while the
    queue was paused."""
    qex(env, "pause", "queue")
    needed = submit_id(env, "--cpu", "1", "--mem", "16MB", "--", first)
    lines = root / f"behind-{first}.txt"
    lines.write_text("".join(f"{i}\n" for i in range(count)))
    group = qex(env, "submit", "--each-line", str(lines), "--max-jobs", str(count),
                "--needs", needed, "--cpu", "1", "--mem", "16MB", "--", "true", "{}"
                ).stdout.strip()
    started = time.perf_counter()
    qex(env, "resume", "queue")
    qex(env, "wait", "-q", group, check=False)
    return time.perf_counter() - started


def needing_group(env: dict[str, str], root: Path, count: int) -> None:
    """A fan-out that needs one short job, drained at the budget's two slots: once that job
    completed, at the rate of a fan-out that needs nothing (the drain of 2,000 above)."""
    took = group_behind(env, root, count, "true")
    print(f"{f'{count} that need a job, drained':<34} {count / took:>8.1f} jobs/s  "
          "(from the resume, 2 slots)")


def skipped_group(env: dict[str, str], root: Path, count: int) -> None:
    """A fan-out whose needed job fails: the coordinator skips every stage and writes its
    record."""
    took = group_behind(env, root, count, "false")
    print(f"{f'a failed need skips {count} jobs':<34} {took * 1000:>8.0f} ms  "
          f"({took * 1000 / count:.2f} ms per job, from the resume to `wait GROUP`)")


#: What the jobs of the drains beside waiting jobs claim: a core each is one slot.
CLAIM_SMALL = ("--cpu", "1", "--mem", "16MB")


def drain_beside_waiting(env: dict[str, str], root: Path, count: int, drained: int = 500, *,
                         lock: bool = False) -> None:
    """A fan-out of `drained` × `true` drained in the slot that a long job leaves, while
    `count` jobs queued before it need that long job (or, with `lock`, wait for the lock it
    holds). Each pass once judged every one of them; now they are judged once and left out
    until the long job's state (or the lock's holder) changes."""
    qex(env, "pause", "queue")
    held = ["--lock", "bench-long"] if lock else []
    needed = submit_id(env, *CLAIM_SMALL, *held, "--", "sleep", "600")
    drained_beside(env, root, count, drained, held or ["--needs", needed],
                   f"{count} {'on a lock' if lock else 'waiting'}",
                   f"the others wait for {'the lock of ' if lock else ''}a long job")
    qex(env, "kill", needed, check=False)
    settle(env)


def drained_beside(env: dict[str, str], root: Path, count: int, drained: int,
                   waits: list[str], label: str, why: str, *, settle_first: float = 0.0,
                   still_waiting: bool = False) -> None:
    """Into a paused queue, `count` jobs that wait as `waits` says, then `drained` × `true`
    behind them; prints the rate from the resume (after `settle_first`) to the end of the
    drained ones, and cancels the waiting jobs. `still_waiting`: the row says so if some of
    the waiting jobs ran, which would make it measure something else."""
    waiting_lines = root / "waiting-lines.txt"
    waiting_lines.write_text("".join(f"{i}\n" for i in range(count)))
    waiting = qex(env, "submit", "--each-line", str(waiting_lines), "--max-jobs", str(count),
                  *waits, *CLAIM_SMALL, "--", "true", "{}").stdout.strip()
    lines = root / "beside-lines.txt"
    lines.write_text("".join(f"{i}\n" for i in range(drained)))
    group = qex(env, "submit", "--each-line", str(lines), "--max-jobs", str(drained),
                *CLAIM_SMALL, "--", "true", "{}").stdout.strip()
    time.sleep(settle_first)
    started = time.perf_counter()
    qex(env, "resume", "queue")
    qex(env, "wait", "-q", group, check=False)
    took = time.perf_counter() - started
    if still_waiting:
        listing = json.loads(qex(env, "list", "--json", "--state", "queued").stdout)
        queued = len(listing if isinstance(listing, list) else listing.get("jobs", []))
        if queued < count:
            why += f"; {count - queued} of the waiting jobs ran"
    print(f"{f'{drained} drained, {label}':<34} {drained / took:>8.1f} jobs/s  (one slot; {why})")
    qex(env, "cancel", waiting, check=False)


def drain_beside_a_peers_pool(env: dict[str, str], root: Path, count: int,
                              drained: int = 500) -> None:
    """A fan-out of `drained` × `true` drained while `count` jobs queued before it claim the
    one device of a pool that another user's coordinator holds (a second state beside this
    one that shares its peers' folder). Such a wait can end at any pass, with no event of
    this queue's own, so every pass judges all of them: once per set of claims and change of
    the load since the forty-fifth pass, where it judged each one."""
    config = root / "config" / "qex.toml"
    saved = config.read_text()
    shared = (saved.replace("[peers]\nenabled = false", "[peers]\nenabled = true")
              + '[[pool]]\nname = "gpu"\ndevices = ["8GB"]\n')
    peer_root = root / "peer"
    peer_root.mkdir(exist_ok=True)
    own = ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "TMPDIR")
    peer_env = {**env, **{key: value for key, value in make_env(peer_root).items()
                          if key in own}}  # the same program, the same peers' folder
    stop_coordinator(env, root)  # the next command starts one that reads the pool
    config.write_text(shared)
    (peer_root / "config" / "qex.toml").write_text(shared)
    try:
        holder = submit_id(peer_env, *CLAIM_SMALL, "--claim", "gpu=1", "--", "sleep", "600")
        qex(env, "pause", "queue")
        # The coordinator reads its peers' claims every half second.
        drained_beside(env, root, count, drained, ["--claim", "gpu=1"],
                       f"{count} on a peer's pool", "another user holds a core and the pool",
                       settle_first=1.5, still_waiting=True)
        qex(peer_env, "kill", holder, check=False)
        settle(env)
    finally:
        stop_coordinator(peer_env, peer_root)
        stop_coordinator(env, root)
        config.write_text(saved)


def learned_store(env: dict[str, str], root: Path, reps: int, commands: int = 5000) -> None:
    """`submit` when the learner knows `commands` commands (a shell loop over files makes
    each line a command of its own). The store is written as earlier versions kept it, one
    `usage.json`; this tree splits it into a file per command when the first job ends, an
    older tree reads and rewrites the whole file at every submission and every job's end."""
    config = root / "config" / "qex.toml"
    saved = config.read_text()
    config.write_text(saved.replace("[learn]\nenabled = false", "[learn]\nenabled = true"))
    state = root / "state" / "qex"
    state.mkdir(parents=True, exist_ok=True)
    sample = {"kind": "peak", "max_rss": 50 * 1024 * 1024, "cpu_secs": 0.5,
              "elapsed_secs": 1.0, "claim": None}
    store = {f"{number:016x}": {"name": f"job-{number}",
                                "samples": [{**sample, "at": 1.7e9 + number + i} for i in range(3)]}
             for number in range(commands)}
    (state / "usage.json").write_text(json.dumps({"commands": store}, separators=(",", ":")))
    try:
        qex(env, "submit", "--wait", "--", "true")  # the first job's end
        time.sleep(0.5)  # its supervisor learns after it reported the result
        found = interleaved(reps, {"submit": [*prog(env), "submit", "--", "true"]}, env)
        print(f"-- scale: {commands} commands learned (load {os.getloadavg()[0]:.2f}) --")
        floor_row(f"submit, {commands} learned", found["submit"], found["floor"], 2.0)
        settle(env)
    finally:
        config.write_text(saved)
        stop_coordinator(env, root)
        set_aside(state)
    qex(env, "info", "--json")


def answers_after_resume(env: dict[str, str], window: float = 1.5) -> tuple[float, float]:
    """The longest and the median time (ms) of `qex info --json`, asked again and again for
    `window` seconds after `resume` ends a pause of the whole queue: how long the
    coordinator keeps a person waiting while it gives each queued job its new reason and
    writes those records."""
    qex(env, "resume", "queue")
    argv = [*prog(env), "info", "--json"]
    times: list[float] = []
    end = time.perf_counter() + window
    while time.perf_counter() < end:
        times.append(timed(argv, env) * 1000.0)
    return max(times), statistics.median(times)


#: The chain from one job's end to the next job's exec, as `qex.platform.chaintrace` marks it:
#: (label, job whose mark starts the step, its mark, job whose mark ends it, its mark); "prev"
#: is the job that ended, "next" the one that takes its slot, "tick" the coordinator's first
#: pass after the previous step.
CHAIN_STEPS = (
    ("supervisor: exit seen -> ending note", "prev", "sup.ended", "prev", "sup.ending"),
    ("ending note reaches the coordinator", "prev", "sup.ending", "prev", "co.ending"),
    ("coordinator: loop wakes", "prev", "co.ending", "tick", "co.tick"),
    ("coordinator: pass until start", "tick", "co.tick", "next", "co.start"),
    ("coordinator: `starting` written", "next", "co.start", "next", "co.starting.written"),
    ("coordinator: pid file, go to the parked child", "next", "co.starting.written", "next",
     "co.launched"),
    ("supervisor: released", "next", "co.launched", "next", "sup.held.go"),
    ("supervisor: record read", "next", "sup.held.go", "next", "sup.read"),
    ("supervisor: lock", "next", "sup.read", "next", "sup.locked"),
    ("supervisor: sandbox", "next", "sup.locked", "next", "sup.sandbox"),
    ("supervisor: attempt set up", "next", "sup.sandbox", "next", "sup.attempt"),
    ("supervisor: logs, env", "next", "sup.attempt", "next", "sup.spawn"),
    ("supervisor: fork and exec", "next", "sup.spawn", "next", "sup.exec"),
)
#: Outside the chain, but paid by every job (on a busy machine it competes for the cores).
SIDE_STEPS = (
    ("fork server: hand-out (while `starting` syncs)", "next", "fs.fork", "next", "fs.answered"),
    ("supervisor: spec and config read (parked)", "next", "sup.start", "next", "sup.config"),
    ("coordinator: after the go (event, watch)", "next", "co.launched", "next", "co.pidfile"),
    ("supervisor: `running` written", "next", "sup.write.running", "next", "sup.written.running"),
    ("supervisor: `running` note answered", "next", "sup.written.running", "next",
     "sup.noted.running"),
    ("supervisor: final record written", "prev", "sup.write.final", "prev", "sup.written.final"),
    ("supervisor: final note answered", "prev", "sup.written.final", "prev", "sup.noted.final"),
)
FINAL_MARKS = ("completed", "failed", "oom", "killed", "timeout", "cancelled")


def read_chain(trace: Path) -> tuple[dict[str, list[float]], list[float]]:
    """ms per step of the chain (and of the side steps) for each start and the job whose end
    freed its slot, and the whole chain (end seen -> next exec) of each such pair.

    Each ending note frees one slot, and the first start after it takes that slot: the
    endings are matched to the starts in order. At one slot that is the job before; at two,
    both slots' jobs often end close together, and each start still pairs with its own end.
    The starts that fill the empty slots at the resume have no end before them and are left
    out."""
    marks: dict[str, dict[str, int]] = {}
    ticks: list[int] = []
    for line in trace.read_text().splitlines():
        t_text, _pid, job, step = line.split(" ", 3)
        t = int(t_text)
        for state in FINAL_MARKS:  # one name for every final state
            step = step.replace(f".{state}", ".final")
        if step == "co.tick":
            ticks.append(t)
            continue
        own = marks.setdefault(job, {})
        if step == "co.note":
            own[step] = t  # the last note of a job is the one of its final record
        else:
            own.setdefault(step, t)
    ticks.sort()
    timeline = sorted(
        [(m["co.start"], 1, job) for job, m in marks.items() if "co.start" in m]
        + [(m["co.ending"], 0, job) for job, m in marks.items() if "co.ending" in m]
    )
    freed: collections.deque[str] = collections.deque()
    pairs: list[tuple[str, str]] = []
    for _t, is_start, job in timeline:
        if not is_start:
            freed.append(job)
        elif freed:
            pairs.append((freed.popleft(), job))
    steps: dict[str, list[float]] = {name: [] for name, *_ in (*CHAIN_STEPS, *SIDE_STEPS)}
    whole: list[float] = []
    for prev, nxt in pairs:
        pair = {"prev": marks[prev], "next": marks[nxt]}
        ended = pair["prev"]["co.ending"]
        tick = next((t for t in ticks if t >= ended), None)
        pair["tick"] = {"co.tick": tick} if tick is not None else {}
        for name, a_job, a_mark, b_job, b_mark in (*CHAIN_STEPS, *SIDE_STEPS):
            a, b = pair[a_job].get(a_mark), pair[b_job].get(b_mark)
            if a is not None and b is not None:
                steps[name].append((b - a) / 1e6)
        a, b = pair["prev"].get("sup.ended"), pair["next"].get("sup.exec")
        if a is not None and b is not None:
            whole.append((b - a) / 1e6)
    return steps, whole


def chain(root: Path, count: int, slots: int = 1) -> None:
    """The per-job chain, step by step: `count` jobs queued as one fan-out, with the chain
    trace on. At one slot, `true` (each start waits for the previous end); at two, 50 ms
    jobs, as in the drain, where the two slots' chains share the coordinator and the disk."""
    root = root / f"chain-{slots}"
    root.mkdir(exist_ok=True)
    env = make_env(root, cpu_budget=slots)
    trace = root / "chain.trace"
    env["QEX_CHAIN_TRACE"] = str(trace)
    qex(env, "submit", "--wait", "-q", "--cpu", "1", "--mem", "16MB", "--", "true", check=False)
    trace.unlink(missing_ok=True)
    argv = ["true"] if slots == 1 else ["sh", "-c", "sleep 0.05", "job"]
    drain(env, root, count, argv)
    stop_coordinator(env, root)
    steps, whole = read_chain(trace)
    what = "true" if slots == 1 else "50 ms"
    print(f"-- chain: one job's end to the next job's exec, {count} x {what} at {slots} "
          f"slot{'s' if slots > 1 else ''} (load {os.getloadavg()[0]:.2f}) --")
    print(f"{'step':<42} {'median':>8} {'p90':>8}")
    total = 0.0
    for name, *_ in CHAIN_STEPS:
        values = sorted(steps[name])
        if not values:
            print(f"{name:<42} {'-':>8}")
            continue
        mid = statistics.median(values)
        total += mid
        print(f"{name:<42} {mid:>6.2f} ms {values[int(len(values) * 0.9)]:>6.2f} ms")
    print(f"{'sum of the medians':<42} {total:>6.2f} ms")
    if whole:
        print(f"{'whole chain (end seen -> next exec)':<42} {statistics.median(whole):>6.2f} ms "
              f"{sorted(whole)[int(len(whole) * 0.9)]:>6.2f} ms   (target: <= 5 ms per slot)")
    print("beside the chain, per job:")
    for name, *_ in SIDE_STEPS:
        values = sorted(steps[name])
        if values:
            print(f"  {name:<40} {statistics.median(values):>6.2f} ms "
                  f"{values[int(len(values) * 0.9)]:>6.2f} ms")


def whole_chain(env: dict[str, str], root: Path, count: int) -> tuple[float, float]:
    """(median whole chain in ms, drain seconds) of `count` x true at one slot, for the
    program of `env` (any tree whose supervisors mark `sup.ended` and `sup.exec`)."""
    root.mkdir(exist_ok=True)
    one = make_env(root, cpu_budget=1)
    for key in ("PYTHONPATH", PROGRAM_KEY):
        if key in env:
            one[key] = env[key]
    trace = root / "chain.trace"
    one["QEX_CHAIN_TRACE"] = str(trace)
    try:
        qex(one, "submit", "--wait", "-q", "--cpu", "1", "--mem", "16MB", "--", "true",
            check=False)
        trace.unlink(missing_ok=True)
        took = drain(one, root, count, ["true"])
    finally:
        stop_coordinator(one, root)
    _steps, whole = read_chain(trace)
    if DELETE_ROUNDS:
        shutil.rmtree(root, ignore_errors=True)
    else:
        set_aside(root)
    return (statistics.median(whole) if whole else float("nan")), took


def chain_side_by_side(envs: dict[str, dict[str, str]], rounds: int, count: int) -> None:
    """The whole chain of each tree, in interleaved rounds (the load of this machine moves
    from minute to minute, so one tree measured after the other would compare two loads)."""
    found: dict[str, list[tuple[float, float]]] = {label: [] for label in envs}
    for number in range(rounds):
        for label, env in envs.items():
            found[label].append(whole_chain(env, root_of(env) / f"side-{number}", count))
    print(f"-- the whole chain side by side, {count} x true at 1 slot, {rounds} interleaved "
          f"rounds (load {os.getloadavg()[0]:.2f}) --")
    for label, values in found.items():
        chains = ", ".join(f"{c:.1f}" for c, _ in values)
        drains = ", ".join(f"{d:.2f}" for _, d in values)
        print(f"{label:<10} end seen -> next exec {statistics.median(c for c, _ in values):6.2f} ms"
              f" (rounds: {chains}); drain {statistics.median(d for _, d in values):.2f} s"
              f" (rounds: {drains})")


def pool_row(count: int, took: float, argv: list[str]) -> None:
    """The same 50 ms jobs run by a bare 2-worker pool, timed now: the ideal counts no
    process start at all, so this shows how much of the distance to it is the jobs' own
    fork and exec, and how much qex adds."""
    pooled = pool_drain(count, argv)
    ideal = count * 0.05 / 2
    print(f"  beside a 2-worker subprocess pool of the same command: {pooled:.2f} s "
          f"(x{pooled / ideal:.2f} ideal); qex adds {(took - pooled) / count * 2 * 1000:.1f} ms "
          f"per job and slot to it, x{took / pooled:.2f}")


def row(name: str, value: float, unit: str, base: float, base_name: str, target: str) -> None:
    ratio = value / base if base else float("nan")
    print(f"{name:<34} {value:>9.2f} {unit:<6} baseline {base:>8.2f} {unit:<6} "
          f"x{ratio:>6.2f}  ({base_name}; target {target})")


SECTIONS = ("hot", "loop", "drain", "cold", "scale", "idle", "chain")


def root_of(env: dict[str, str]) -> Path:
    return Path(env["XDG_STATE_HOME"]).parent


def sections(label: str, env: dict[str, str], only: set[str], quick: bool, reps: int,
             n_true: int, n_50ms: int) -> None:
    """The whole-workload sections for one program."""
    root = root_of(env)
    if "loop" in only:
        t_sw, t_single, t_limited, t_run, floor = submit_then_wait(env, max(reps, 15))
        print(f"-- {label}shell loop, one process per call (load {os.getloadavg()[0]:.2f}) --")
        floor_row("submit -- true; wait ID", t_sw, floor, 4.0)
        floor_row("submit --wait -q -- true", t_single, floor, 4.0)
        floor_row("submit --wait -q --wait-timeout 1m", t_limited, floor, 4.0)
        floor_row("run -- true", t_run, floor, 4.0)
        t_loop = shell_loop(env, root, n_true, "true")
        per_job = t_loop / n_true * 1000
        # The target was set where the floor was 7 ms: 60 jobs/s is 16.7 ms a job, 2.4 x it.
        print(f"{f'{n_true} x submit -- true in a loop':<34} {n_true / t_loop:>8.1f} jobs/s  "
              f"(to all done; {per_job:.1f} ms per job, x{per_job / floor:.2f} the floor; "
              f"target >= 60 jobs/s, x{1000 / 60 / LOOP_TARGET_FLOOR_MS:.1f} the floor it was "
              "set on)")
        t_50l = shell_loop(env, root, n_50ms, "sleep 0.05")
        ideal = n_50ms * 0.05 / 2
        per = (t_50l - ideal) / n_50ms * 2 * 1000
        print(f"{f'{n_50ms} x 50 ms in a loop, 2 slots':<34} {t_50l:>8.2f} s  ideal {ideal:.2f} s  "
              f"x{t_50l / ideal:.2f}  ({per:.1f} ms per job and slot; target <= 1.1 x)")
        pool_row(n_50ms, t_50l, ["sleep", "0.05"])
    if "drain" in only:
        print(f"-- {label}batch: one fan-out, timed from the resume (load {os.getloadavg()[0]:.2f}) --")
        cpu_per_job: dict[str, float] = {}
        served: list[int] = []
        submitted: list[float] = []
        t_drain = drain(env, root, n_true, ["true"], cpu=cpu_per_job, served=served,
                        submitted=submitted)
        b_drain = pool_drain(n_true, ["true"])
        row(f"{n_true} x true, 2 slots", n_true / t_drain, "jobs/s", n_true / b_drain,
            "2-worker subprocess pool", ">= 60 jobs/s")
        if cpu_per_job:
            print("  CPU per job: " + ", ".join(f"{kind} {ms:.1f} ms" for kind, ms in cpu_per_job.items())
                  + f"; {sum(cpu_per_job.values()):.1f} ms in all")
        if served:
            print(f"  supervisors: {len(served)} processes served the {sum(served)} jobs "
                  f"(at most {max(served)} each)")
        if submitted:
            print(f"  the fan-out's submission, paused: {submitted[0] * 1000:.0f} ms, "
                  f"{submitted[0] * 1000 / n_true:.2f} ms per job (the durable records of each)")
        t_50 = drain(env, root, n_50ms, ["sh", "-c", "sleep 0.05", "job"])
        ideal = n_50ms * 0.05 / 2
        per = (t_50 - ideal) / n_50ms * 2 * 1000
        row(f"{n_50ms} x 50 ms, 2 slots", t_50, "s", ideal, "ideal",
            f"<= 1.05 x ideal; {per:.1f} ms per job and slot")
        pool_row(n_50ms, t_50, ["sh", "-c", "sleep 0.05", "job", "0"])
    if "scale" in only:
        print(f"-- {label}scale --")
        scale(env, root, 5 if quick else 15, 500 if quick else 2000)
        learned_store(env, root, 5 if quick else 15, 1000 if quick else 5000)
    if "chain" in only and PROGRAM_KEY not in env:  # an older tree has no trace to read
        chain(root, 40 if quick else 200)
        chain(root, 40 if quick else 200, slots=2)


def cold_section(envs: dict[str, dict[str, str]], reps: int) -> None:
    found = cold_start(envs, reps)
    print(f"-- cold start, {reps} rounds (load {os.getloadavg()[0]:.2f}) --")
    for label, (t_cold, floor, _) in found.items():
        floor_row(f"{label}no coordinator: submit; wait", t_cold, floor, None)
    print(f"{'':<34} target <= 80 ms")
    for label, (_, _, offsets) in found.items():
        if PROGRAM_KEY not in envs[label]:  # an older tree may lack the start-up marks
            print(f"-- {label}cold start, step by step --")
            print_cold_steps(offsets)


def idle_figures(label: str, env: dict[str, str], quick: bool) -> None:
    """Idle wake-ups and memory of the coordinator, and one supervisor's size."""
    root = root_of(env)
    print(f"-- {label}idle and memory --")
    pid = coordinator_pid(env)
    time.sleep(1.0)
    window = 5.0 if quick else 20.0
    c0, t0 = ctx_switches(pid), cpu_ticks(pid)
    time.sleep(window)
    c1, t1 = ctx_switches(pid), cpu_ticks(pid)
    wakes = (c1 - c0) / window
    hz = os.sysconf("SC_CLK_TCK")
    print(f"{'idle coordinator wake-ups':<34} {wakes:>9.2f} /s     "
          f"(cpu {100 * (t1 - t0) / hz / window:.3f}%; target: at most one every few seconds)")

    bare = subprocess.Popen([PY, "-c", "import time; time.sleep(3)"])
    time.sleep(0.5)
    base_rss = rss_kb(bare.pid) / 1024
    bare.kill()
    bare.wait()
    row("idle coordinator RSS", rss_kb(pid) / 1024, "MB", base_rss, "bare python", "small")

    gate = root / "gate"
    sid = qex(env, "submit", "--cpu", "1", "--mem", "16MB", "--", "sh", "-c",
              f"while [ ! -e {gate} ]; do sleep 0.05; done").stdout.strip()
    sup_pid = 0
    for _ in range(200):
        rec = json.loads((root / "state" / "qex" / "jobs" / sid / "status.json").read_text())
        if rec.get("state") == "running" and rec.get("supervisor_pid"):
            sup_pid = int(rec["supervisor_pid"])
            break
        time.sleep(0.05)
    time.sleep(0.3)
    sup_rss = rss_kb(sup_pid) / 1024 if sup_pid else float("nan")
    sup_pss = pss_kb(sup_pid) / 1024 if sup_pid else float("nan")
    gate.touch()
    qex(env, "wait", "-q", sid, check=False)
    row("supervisor RSS", sup_rss, "MB", base_rss, "bare python", "<= 15 MB")
    row("supervisor PSS (shared pages split)", sup_pss, "MB", base_rss, "bare python RSS",
        "<= 15 MB")


def main() -> None:
    global QEX, FLOOR, PROGRAM_PY, DELETE_ROUNDS  # set by `--installed`, `--slow-creations`
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and jobs")
    parser.add_argument("--only", default="", help="comma-separated sections: " + ",".join(SECTIONS))
    parser.add_argument("--dir", metavar="DIR", type=Path, default=Path("/tmp"),
                        help="where the private state lives (its file system; default /tmp)")
    parser.add_argument("--before", metavar="DIR", type=Path,
                        help="also measure the qex of this checkout (an older tree), side by side")
    parser.add_argument("--slow-creations", action="store_true",
                        help="in the side-by-side chain, delete each round's directory instead "
                             "of setting it aside, so the next round creates its files in the "
                             "slow phase that follows deletions on ext4 without a journal")
    parser.add_argument("--installed", action="store_true",
                        help="run qex (and the floor) from a layout as `pipx install` makes it, "
                             "without the development environment's .pth files")
    args = parser.parse_args()
    only = set(filter(None, args.only.split(","))) or set(SECTIONS)
    DELETE_ROUNDS = args.slow_creations
    reps = 5 if args.quick else 21
    n_true = 100 if args.quick else 500
    n_50ms = 40 if args.quick else 200

    # Byte-compile qex first: with PYTHONDONTWRITEBYTECODE set (some harnesses set it), an
    # editable install would otherwise compile its changed modules in every measured run.
    import compileall

    compileall.compile_dir(str(HERE.parent / "qex"), quiet=1)
    root = Path(tempfile.mkdtemp(prefix="qxb", dir=args.dir))
    program = f"{QEX[0]} (the development environment's)"
    if args.installed:
        PROGRAM_PY = installed_layout(root / "installed")
        QEX = [str(root / "installed" / "bin" / "qex")]
        FLOOR = [PROGRAM_PY, "-S", "-c", "pass"]
        program = f"{QEX[0]} (as installed: --installed)"
    env = make_env(root)
    envs = {"": env}
    if args.before is not None:
        compileall.compile_dir(str(args.before / "qex"), quiet=1)
        root_b = Path(tempfile.mkdtemp(prefix="qxb", dir=args.dir))
        envs = {"now: ": env, "before: ": before_env(root_b, args.before.resolve())}
    try:
        print(f"qex benchmark, {os.cpu_count()} cores, python {sys.version.split()[0]}, medians, "
              f"load {os.getloadavg()[0]:.2f}\nprogram: {program}\n")
        # Warm the coordinator and one finished job for the read paths.
        for one in envs.values():
            qex(one, "submit", "--wait", "-q", "--cpu", "1", "--mem", "16MB", "--", "true", check=False)
        if "hot" in only:
            hot_commands(envs, max(reps, 15))
        if "cold" in only:
            cold_section(envs, 7 if args.quick else 15)
        rounds = [list(envs.items())]
        if len(envs) > 1:
            # A section runs on a machine that the sections before it have warmed and filled
            # (the same tree's shell loop gave 47.7 jobs/s as the first section and 30.3 as
            # the second), so with two trees each runs first once: compare the rounds.
            rounds.append(rounds[0][::-1])
        for number, order in enumerate(rounds, 1):
            for label, one in order:
                named = f"{label}round {number}, " if len(rounds) > 1 else label
                sections(named, one, only if number == 1 else only - {"chain"}, args.quick,
                         reps, n_true, n_50ms)
        if "chain" in only and len(envs) > 1:
            chain_side_by_side(envs, 3 if args.quick else 5, 40 if args.quick else 100)
        if "idle" not in only:
            return
        for label, one in envs.items():
            idle_figures(label, one, args.quick)
    finally:
        for one in envs.values():
            stop_coordinator(one, root_of(one))
            shutil.rmtree(root_of(one), ignore_errors=True)
        for aside in _SET_ASIDE:
            shutil.rmtree(aside, ignore_errors=True)


if __name__ == "__main__":
    main()
