"""The predictor's exceptions: each one names a problem a user can fix.

Callers catch these and turn them into a message, an event or a declared
fallback; none of them should ever reach a user as a traceback.
"""

from __future__ import annotations


class PredictorError(Exception):
    """Base class of every error the predictor raises on purpose."""


class SeriesError(PredictorError, ValueError):
    """A series cannot be used: empty, all-NaN, unordered, too short, unreadable."""


class ModelFormatError(PredictorError):
    """A file is not a Forescale forecaster model, or one this version cannot read."""


class MetricsUnavailable(PredictorError):
    """Prometheus could not give the series: down, timing out, erroring or empty."""


class TrainingError(PredictorError):
    """Training could not run on the data given (for example too few windows)."""
