"""qex: a queued executor for one machine."""

__version__ = "0.7.0"
