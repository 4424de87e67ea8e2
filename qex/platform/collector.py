"""The interpreter's garbage collector, held while a qex process imports what it runs on.

Why: a process that starts imports a few hundred modules (the coordinator: asyncio, the
config, its own modules; a fresh supervisor: its own; a command on the full path: click
and the command's module) and, in the coordinator, reads every job record. Nearly
everything it makes then lives as long as the process. The collector runs whenever enough
new objects were made, and walks the young generations each time, so during a start it
walks that growing heap again and again and frees nothing: 38 collections and 5 ms of
the 57 ms that the coordinator's imports take in a fresh interpreter on the development
machine, on the path of a command that waits for a cold coordinator, and 3 to 5 ms of a
rare command's 45 to 60 ms. (A hot command's few imports gain too little to hold it.)

`hold` stops collections; `release`, once the start is done, freezes what the start made
(moved where no later collection walks it) and collects again. Without the freeze the first
collection after the start would walk the whole heap, on the path of a request. Cyclic
garbage that a start made would stay frozen for the life of the process; the coordinator's
start makes none (a collection of its unfrozen heap at the release frees nothing).

A process forked while the collector is held inherits the hold and releases it for itself.
The fork server does so at once, and never holds it: its supervisors share its heap, and a
preload made with the collector held left them 0.12 MB more PSS each (5.98 against 6.10 MB,
six runs), most likely because the garbage of its rehearsals, freed in one go at the end,
leaves holes in the shared pages where each child's first allocations land and copy them.
Its start is not on a command's path (it is ready before the coordinator's first job).

Only a process of qex's own holds the collector: a release in a program that called qex
would freeze that program's heap.
"""

from __future__ import annotations

import gc

#: True while this process (or the one it was forked from) holds the collector.
_held = False


def hold() -> None:
    """No collection until `release`. A collector that is off already (an embedding program
    turned it off) is left off, and `release` leaves it so."""
    global _held
    if gc.isenabled():
        gc.disable()
        _held = True


def release(*, freeze: bool = True) -> None:
    """End a `hold`: freeze what was made meanwhile, then collect again. Without a hold in
    force, nothing changes.

    `freeze=False`: collect again at once, walking what the hold let pile up, for a process
    that should not start held (the fork server, forked from a coordinator that holds it)."""
    global _held
    if not _held:
        return
    _held = False
    if freeze:
        gc.freeze()
    gc.enable()
