"""Sizes and durations written for people: the formatting half of `qex.core.units`.

Split from the parsers so that the hot reads (`qex status`, `qex list`), which format but
never parse, do not import `re`, `math` and `decimal`. Pure, and free of imports.
"""

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB
TIB = 1024 * GIB


def format_size(num_bytes: int | float) -> str:
    """`8GB`, `1.5GB`, `512MB`, `64KB`, `100B`: steps of 1024, one decimal unless whole."""
    value = float(num_bytes)
    units = (("TB", TIB), ("GB", GIB), ("MB", MIB), ("KB", KIB))
    for position, (unit, scale) in enumerate(units):
        if abs(value) >= scale:
            rounded = round(value / scale, 1)
            if abs(rounded) >= 1024 and position > 0:
                # 1023.96KB rounds to 1024KB: say 1MB instead.
                bigger, bigger_scale = units[position - 1]
                rounded = round(value / bigger_scale, 1)
                unit = bigger
            if rounded.is_integer():
                return f"{int(rounded)}{unit}"
            return f"{rounded:.1f}{unit}"
    return f"{int(value)}B"


def format_duration(seconds: float | None) -> str:
    """`45s`, `5m30s`, `1h5m`, `2d3h`; two units at most, the larger first."""
    if seconds is None:
        return "no limit"
    total = round(seconds)
    if total < 60:
        tenths = round(float(seconds), 1)
        if tenths < 10 and not tenths.is_integer():
            return f"{tenths:.1f}s"
        return f"{total}s"
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m{secs}s" if secs else f"{minutes}m"
