"""One step of a resource's loop, every `forecast.stepSeconds`: the seam the forecast loop plugs into.

Today a tick re-reads the children and keeps status true (pools, weights,
phase, Ready). Issue 6 fills `TickDeps.metrics`, `.forecaster` and `.decide`
(Prometheus -> predictor -> `engine.decide()` -> actuators); with the no-op
defaults there is no data, and the tick does nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping

from .. import observe as observing
from ..children import Owner
from ..forecasting import Forecaster, NoForecaster
from ..metric_source import MetricSource, NoMetrics
from ..phase import ConditionType, Phase
from ..reasons import Reason
from ..spec import InferenceSpec, SpecError, parse_spec
from ..status import StatusUpdate, write_status
from .deps import HandlerDeps
from .reconcile import reconcile

#: decide(ctx, spec, observation, observations, forecast, update, deps): acts and records its decision
Decide = Callable[..., Awaitable[None]]


@dataclass
class TickDeps(HandlerDeps):
    metrics: MetricSource = field(default_factory=NoMetrics)
    forecaster: Forecaster = field(default_factory=NoForecaster)
    decide: Decide | None = None


@dataclass(frozen=True)
class TickContext:
    """The resource as the tick sees it (kopf's live body)."""

    body: Mapping[str, Any]

    @property
    def owner(self) -> Owner:
        return Owner.from_body(self.body)

    @property
    def status(self) -> Mapping[str, Any]:
        return self.body.get("status") or {}


async def tick(ctx: TickContext, deps: TickDeps) -> str:
    """Observe, then (when the loop has data) forecast and decide. Returns a summary for the log."""
    if ctx.status.get("phase") == Phase.INVALID.value:
        # Re-check: the router's API may have been installed since, without a spec change.
        return await reconcile(ctx.body, deps)
    try:
        spec: InferenceSpec = parse_spec(ctx.body.get("spec") or {})
    except SpecError as err:
        return f"skipped: {err}"  # reconcile reports it on the next create/update/resume

    owner = ctx.owner
    seen = await observing.observe(deps.actuators, owner, spec)
    if (not (seen.a.exists and seen.b.exists and seen.a.owned and seen.b.owned and seen.weights is not None)
            or not await deps.actuators.services_intact(owner)):
        # A child was deleted behind our back, never made it, or is no longer ours: put it back within
        # one step (reconcile refuses, with a Warning, what another controller holds).
        return await reconcile(ctx.body, deps)
    update = StatusUpdate(ctx.status, ctx.body["metadata"].get("generation"))
    # An incident phase belongs to the decision engine; readiness alone does not end it.
    observing.record(update, spec, seen, set_phase=deps.decide is None)

    observations = await deps.metrics.observe(owner, spec)
    if observations is None:
        if deps.metrics.configured:
            was = next((c for c in ctx.status.get("conditions") or [] if c.get("type") == "MetricsAvailable"), {})
            update.condition(ConditionType.METRICS_AVAILABLE, False, "NoData", "the metric source returned no data")
            if was.get("status") != "False":
                await deps.events.post(Reason.METRICS_UNAVAILABLE, "No metrics for this service; replicas are held")
        else:
            update.condition(ConditionType.METRICS_AVAILABLE, None, "NoMetricSource", "no metric source is configured")
        await write_status(deps.api, owner.namespace, owner.name, update)
        return f"observed: {seen.summary()}; no metrics"

    update.condition(ConditionType.METRICS_AVAILABLE, True, "MetricsRead", "observations read")
    forecast = await deps.forecaster.forecast(owner, spec, observations)
    if deps.decide is not None:
        await deps.decide(ctx=ctx, spec=spec, observation=seen, observations=observations, forecast=forecast,
                          update=update, deps=deps)
    await write_status(deps.api, owner.namespace, owner.name, update)
    return f"observed: {seen.summary()}"
