"""The simulator's exceptions. Each names a problem the user can fix; the CLI
turns them into one clear line, never a traceback."""

from __future__ import annotations


class SimError(Exception):
    """Base class of every error the simulator raises on purpose."""


class TraceError(SimError, ValueError):
    """A trace file cannot be replayed: missing, empty, wrong format, unsorted."""


class IncidentSpecError(SimError, ValueError):
    """An `--incidents` spec that does not parse."""
