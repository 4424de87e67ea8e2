"""`qex pool suggest`: find this machine's GPUs and print a `[[pool]]` section for them.

The output is TOML to paste into the config file (or append with `>>`): one pool per GPU
vendor, one `devices` entry per card in PCI bus order, its VRAM where the kernel reports
it, and a value that the config loader refuses where it does not, so a guess never
becomes a silent wrong capacity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from qex.cli.common import die, print_json

#: Not a size, on purpose: the config loader refuses it until the user writes the real VRAM.
PLACEHOLDER = "SET-VRAM"

_VENDOR_TITLE = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}


def _pool_name(base: str, vendor: str, several: bool) -> str:
    return f"{base}-{vendor}" if several else base


def render(devices: list[Any], source: str, base_name: str) -> str:
    """The TOML text (comments included) for these display devices."""
    import tomli_w

    from qex.core.units import format_size
    from qex.platform.devices import group_by_vendor

    groups, skipped = group_by_vendor(devices)
    count = sum(len(g) for g in groups.values())
    lines = [
        f"# qex pool suggest: {count} GPU(s) found through {source}.",
        "# Add this to the config file (`qex config path` prints where it is). Entry i of",
        "# `devices` is the i-th card below, in PCI bus order; a job's claim of a pool gets",
        "# the indices of its cards in the pool's `env` variable.",
    ]
    for device in skipped:
        lines.append(f"# Skipped {device.address} (PCI vendor {device.vendor_id}): a display "
                     "controller that no GPU runtime uses.")
    several = len(groups) > 1
    for vendor, cards in groups.items():
        name = _pool_name(base_name, vendor, several)
        title = _VENDOR_TITLE.get(vendor, vendor)
        lines.append("")
        for index, card in enumerate(cards):
            size = format_size(card.vram) if card.vram else "VRAM unknown"
            driver = card.driver or "no driver bound"
            model = f" ({card.name})" if card.name else ""
            lines.append(f"# {name}[{index}] = {card.address} {title} "
                         f"{card.vendor_id}:{card.device_id}{model}, {driver}, {size}")
        if any(card.vram is None for card in cards):
            lines.append(f"# The kernel does not report the memory of every card: replace each "
                         f"\"{PLACEHOLDER}\" with it (such as \"24GB\").")
            if vendor == "nvidia":
                lines.append("#   nvidia-smi --query-gpu=pci.bus_id,memory.total --format=csv "
                             "lists it; with `pip install 'qex-queue[nvidia]'` NVML fills it in.")
        if vendor == "nvidia":
            lines.append("# Give jobs CUDA_DEVICE_ORDER=PCI_BUS_ID so CUDA numbers the cards in "
                         "this order.")
        if vendor == "intel" and all(card.vram is None for card in cards):
            lines.append("# An Intel card with no VRAM of its own is usually integrated "
                         "graphics: delete this pool if jobs should not use it.")
        section = {"pool": [{
            "name": name,
            "size": "vram",
            "devices": [format_size(c.vram) if c.vram else PLACEHOLDER for c in cards],
            "env": cards[0].env,
        }]}
        lines.append(tomli_w.dumps(section).rstrip("\n"))
    return "\n".join(lines) + "\n"


@click.group("pool")
def command() -> None:
    """Work with the [[pool]] sections of the config file."""


@command.command("suggest")
@click.option("--name", "base_name", default="gpu", show_default=True,
              help="The pool name (a vendor suffix is added when cards of several vendors "
                   "are found).")
@click.option("--from", "source", type=click.Choice(["auto", "udev", "sysfs"]), default="auto",
              show_default=True,
              help="Where to look: pyudev (the qex[udev] extra), plain sysfs, or pyudev "
                   "when it is installed.")
@click.option("--sysfs", "sys_root", type=click.Path(file_okay=False, path_type=Path),
              default=Path("/sys"), hidden=True, help="Another sysfs root (tests).")
@click.option("--json", "as_json", is_flag=True, help="Print the cards found as JSON instead.")
def suggest(*, base_name: str, source: str, sys_root: Path, as_json: bool) -> None:
    """Find this machine's GPUs and print a [[pool]] section for them, with one device
    per card and its VRAM, ready to paste into the config file."""
    from qex.core.names import is_safe_name
    from qex.platform.devices import DiscoveryError, discover, group_by_vendor

    if not is_safe_name(base_name):
        die(f"`{base_name}` is not a pool name qex accepts; use letters, digits, `.`, `_` "
            "and `-`", 2)
    try:
        devices, used = discover(source, sys_root)
    except DiscoveryError as exc:
        die(f"{exc}", 1)
    if as_json:
        print_json({"source": used, "devices": [
            {"address": d.address, "vendor": d.vendor, "vendor_id": d.vendor_id,
             "device_id": d.device_id, "class": f"0x{d.pci_class:06x}", "driver": d.driver,
             "vram": d.vram, "name": d.name, "env": d.env} for d in devices]})
        return
    groups, _ = group_by_vendor(devices)
    if not groups:
        die(f"found no GPU (no NVIDIA, AMD or Intel display device through {used}); a pool "
            "of plain units (`count = N`) needs no discovery", 1)
    click.echo(render(devices, used, base_name), nl=False)
