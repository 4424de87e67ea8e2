"""`qex help each-line`: fan-out, one job per input line."""

from __future__ import annotations

TEXT = """\
qex fan-out: a job per line
===========================

One command, many inputs. `--each-line FILE` reads FILE and submits one job
for every line, putting the line where the command says `{}`.

  qex submit --each-line shards.txt -- ./index {}

The jobs form one group. stdout gets the group id; stderr gets each job's
name and id, so this works:

  G=$(qex submit --each-line shards.txt -- ./index {})
  qex wait "$G"
  qex list --group "$G"

Use `-` to read the lines from standard input:

  find . -name '*.csv' | qex submit --each-line - -- ./load {}

Where {} may appear
-------------------

Anywhere: as a whole argument, as the program, or inside an argument:

  qex submit --each-line hosts.txt -- wget -O {}.txt https://{}/status

Every `{}` receives the line. A command with NO `{}` is an error: every job
would run the identical command and the input would be pointless. `{{}}`
stands for a literal `{}`; nothing else in the command is touched.

Lines are data, never commands
------------------------------

No shell is started. Whatever a line contains (spaces, quotes, semicolons,
dollar signs), it turns into precisely ONE argument. Names coming from a
directory listing or a database are therefore safe. The line

  x y"; rm -rf ~; echo $PATH

is passed as a single argument containing exactly those characters, and no
shell ever interprets it.

If you want shell features, name the shell and hand it the line as an
argument, never spliced into the script text:

  qex submit --each-line words.txt -- sh -c 'printf "%s\\n" "$1" | rev' sh {}

Lines that start with a dash
----------------------------

Since a line becomes an argument, a line like `-rf` or `--output=/etc/hosts`
will look like an OPTION to your program. Which arguments a program parses as
options is something qex cannot know, so it leaves the line alone.

Put `--` before `{}` in the command, and nearly every program will treat the
line as data:

  qex submit --each-line files.txt -- ./scan -- {}

It is the same rule as for `xargs`. Use it for any input you did not write.

Which lines become jobs
-----------------------

  a line                        one job
  an empty line                 nothing
  a line starting with #        nothing (a comment)
  spaces at either end          removed
  CRLF line ends                treated like LF
  a last line without newline   still a job

On stderr, qex reports how many empty and comment lines it skipped, so no
line disappears without notice.

Input that is not UTF-8 is an error that names the line, and nothing is
submitted: a command is text, so qex could not run such a line.

All or nothing, with one exception
----------------------------------

qex reads the entire input and checks the command first. Every problem it can
detect is an error, and then NO job is created.

What remains: jobs are submitted one by one, so if the coordinator dies
halfway, the earlier jobs stay queued. qex then prints the group id and every
id it submitted, and how to stop them. Take the group id from that message
in that case; stdout only carries it when the whole fan-out succeeded.

Limits
------

At most 1000 jobs per fan-out by default, since every job gets a directory
and a 100000-line file would fill the disk. Raise it when you mean it:

  qex submit --each-line many.txt --max-jobs 8000 -- ./index {}

The input may be at most 64 MiB, from a file or a pipe, because qex holds it
in memory. `--max-jobs` does not change that.

Options a fan-out refuses
-------------------------

  --dedupe-key,        a key stands for ONE job; every job of the fan-out
  --dedupe-window      would carry it, and only the first would start
  --json               that prints one job id; use `--id-file NAME.json`
                       for the group and all its jobs
  --job                the `{}` belongs on the command line, where people
                       can see it
  --wait               wait on the group id instead: `qex wait "$G"`

`qex run` does not take `--each-line` at all; it waits for one job.

Job names
---------

Each job is named for `qex list` from the program name, its position in the
input and as much of the line as fits:

  index-01-shard-a.txt
  index-02-shard-b.txt

`--name` replaces the first part and names the group. Names keep only
letters, digits, `.`, `_` and `-`: a line could contain terminal control
codes, and names are printed by `qex list`.

Other options
-------------

Every job of the fan-out gets the same `--cpu`, `--mem`, `--tag`, `--lock`,
`--env`, `--priority`, `--nice`, `--timeout`, `--max-queue-time`, `--needs`,
`--after` and `--retries`.

qex computes the claim once, using the FIRST line's command, and reuses it
for all jobs, since every line stands for the same kind of work.

`--max-queue-time` applies to each job's own wait, not to the group. Jobs
still waiting when it runs out become `expired`.

N jobs means N of everything
----------------------------

`qex events` prints at least three lines per job, and the coordinator keeps
only the last 512 events. Start `qex events` BEFORE a large fan-out, then
keep only the lines whose `.job.group` matches. If you fall behind, a `gap`
line says how many events you missed.

The `[hooks] on_stop` hook runs once for EVERY job that stops, `expired` and
`skipped` included: a 1000-line fan-out runs it 1000 times. The hook's
environment names the job, not the group, so tag the fan-out (`--tag`) and
read QEX_TAGS.

Learning from a fan-out
-----------------------

qex remembers what each command used and offers it as the claim for the next
run of that command. Fan-out jobs would never benefit: `./index a.txt` and
`./index b.txt` are two different commands, each run once.

So every job of a fan-out is measured against the TEMPLATE `./index {}`.
One fan-out produces one entry, and the next run of the same fan-out takes
its claim from it. `qex status` then shows `(from the earlier jobs of this
fan-out)` next to the claim.

When the jobs must not run at the same time, give them a lock:

  qex submit --each-line tables.txt --lock warehouse -- ./load {}

Keeping the ids
---------------

  qex submit --each-line shards.txt --id-file ids.env -- ./index {}
  . ./ids.env           # defines $group and one variable per job

With a name ending in `.json`, the id file is a JSON object instead.
"""
