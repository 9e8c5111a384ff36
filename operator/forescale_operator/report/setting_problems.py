"""Settings a resource is running without, said once each as a Warning event rather than on every tick.

Two things make the operator act other than the user asked, without making
the spec Invalid: no metric source at all (nothing is forecast or scaled, so
the phase is Degraded), and a `forescale.io/capacity-rps` annotation that is
not a number in range (the engine starts from its default prior instead).
Both used to show only in a condition or the operator's log; a user running
`kubectl describe` needs to see them among the events.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from ..events import EventSink
from ..reasons import ConditionReason, ConditionType, Reason
from ..forecast_loop.binding import ResourceBinding
from ..forecast_loop.memory import ResourceMemory

logger = logging.getLogger(__name__)

#: what the MetricsUnavailable event says when no Prometheus URL is configured
NO_METRIC_SOURCE = ("No metric source: the operator's FORESCALE_PROMETHEUS_URL is not set and spec.metrics.prometheusUrl "
                    "is empty; nothing is forecast or scaled (replicas stay where they are, no incident playbook) "
                    "until one is set")


def had_no_metric_source(status: Mapping[str, Any]) -> bool:
    """Whether the last status written already said MetricsAvailable=Unknown for want of a metric source."""
    return any(c.get("type") == ConditionType.METRICS_AVAILABLE.value
               and c.get("reason") == ConditionReason.NO_METRIC_SOURCE.value
               for c in status.get("conditions") or [] if isinstance(c, Mapping))


async def report_no_metric_source(events: EventSink, status: Mapping[str, Any]) -> None:
    """One MetricsUnavailable Warning when the resource starts running without a metric source.

    Once per transition, read from status rather than memory, so an operator restart does not say it again.
    """
    if not had_no_metric_source(status):
        await events.post(Reason.METRICS_UNAVAILABLE, NO_METRIC_SOURCE)


async def report_ignored_annotation(events: EventSink, binding: ResourceBinding, memory: ResourceMemory) -> None:
    """One AnnotationIgnored Warning (and log line) per bad capacity annotation value; a good or absent one resets it."""
    if binding.params_problem is None:
        memory.reported_annotation = None
        return
    if memory.reported_annotation != binding.annotation:
        memory.reported_annotation = binding.annotation
        logger.warning("%s/%s: %s", binding.owner.namespace, binding.owner.name, binding.params_problem)
        await events.post(Reason.ANNOTATION_IGNORED, binding.params_problem)
