"""The one error type the stress tool shows to users."""

from __future__ import annotations


class StressError(Exception):
    """A problem with the user's input or target, shown as one line without a
    traceback (`forescale stress: error: <message>`) and a non-zero exit."""
