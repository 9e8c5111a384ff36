"""The status vocabulary's words, in one place, the way KEDA keeps its condition types and reasons.

- `Reason`: every Kubernetes event reason Forescale posts. Each event's
  message states the numbers behind it, for example
  `Shift 30% to chat-b: p99 412 ms > 2.0 x SLO 200 ms; b ready capacity 140 rps`.
  Events are posted on transitions, not on every tick.
- `ConditionType`: the typed conditions of `status.conditions`.
- `ConditionReason`: why a condition the operator writes has its status.

The phases are in `phase.py`.
"""

from __future__ import annotations

from enum import Enum


class Reason(str, Enum):
    #: the Deployments, Services and route were created
    POOLS_CREATED = "PoolsCreated"
    #: a spec change reached the children (template, Services, router)
    POOLS_UPDATED = "PoolsUpdated"
    #: a pool's desired replicas went up
    SCALED_UP = "ScaledUp"
    #: a pool's desired replicas went down (after the stabilization window)
    SCALED_DOWN = "ScaledDown"
    #: the forecast upper band crosses the trigger line within the horizon
    FORECAST_SPIKE = "ForecastSpike"
    #: the incident playbook started
    EMERGENCY_STARTED = "EmergencyStarted"
    #: route weights changed
    TRAFFIC_SHIFTED = "TrafficShifted"
    #: pool A's servers were asked to run int8
    PRECISION_DOWNGRADED = "PrecisionDowngraded"
    #: the servers' caches were warmed
    CACHE_WARMED = "CacheWarmed"
    #: the servers' log level was raised for a while
    DEBUG_LOGGING_ENABLED = "DebugLoggingEnabled"
    #: the incident scene (metrics window and decisions) was saved
    SNAPSHOT_SAVED = "SnapshotSaved"
    #: the diagnosis checklist ranked a cause first, with its numbers
    ROOT_CAUSE_SUSPECTED = "RootCauseSuspected"
    #: the diagnosis found one bad pod of pool A, and the operator deleted it so its Deployment replaces it
    BAD_POD_DELETED = "BadPodDeleted"
    #: latency has stayed under the SLO for the stable period
    RECOVERED = "Recovered"
    #: one cut-back step moved traffic back to pool A
    CUTBACK_STEP = "CutbackStep"
    #: latency rose during the cut-back; back to the emergency split
    CUTBACK_ABORTED = "CutbackAborted"
    #: all traffic is back on pool A
    CUTBACK_COMPLETED = "CutbackCompleted"
    #: pool A's servers are back at their template precision
    PRECISION_RESTORED = "PrecisionRestored"
    #: A's ready pods cannot carry the load yet and B's idle reserve takes the excess (not an incident)
    OVERLOAD = "Overload"
    #: pool B's pods failed the requests a shift gave them: no shift to B for a while (outlier ejection)
    BACKUP_EJECTED = "BackupEjected"
    #: a pool's fitted latency model contradicts its prior (annotation or load test): the pods win
    CAPACITY_LEARNED = "CapacityLearned"
    #: Prometheus is unreachable or returned nothing, or no Prometheus URL is configured at all; replicas are held
    METRICS_UNAVAILABLE = "MetricsUnavailable"
    #: the spec cannot be acted on
    INVALID_SPEC = "InvalidSpec"
    #: a pod is skipped for admin calls: its forescale.io/admin-port annotation is not a port
    ADMIN_PORT_INVALID = "AdminPortInvalid"
    #: a child's name is held by an object another owner controls; it is left alone
    CHILD_CONFLICT = "ChildConflict"
    #: existing Deployments (targetRef) or an existing route (routeRef) were taken over: scaled and weighted, nothing else
    POOLS_ADOPTED = "PoolsAdopted"
    #: a targetRef or routeRef cannot be taken over (another controller, an HPA, a route without both backends)
    ADOPTION_REFUSED = "AdoptionRefused"
    #: a forescale.io/* annotation has a value that cannot be used; it is ignored (posted once per bad value)
    ANNOTATION_IGNORED = "AnnotationIgnored"
    #: a pool's pods cannot authenticate the playbook's admin calls (no token, a token file with no volume, a missing
    #: Secret, another token); posted once when AdminReady turns False, with the condition's message
    ADMIN_TOKEN_MISSING = "AdminTokenMissing"


#: reasons posted as Warning events; all others are Normal
WARNING_REASONS = frozenset(
    {Reason.EMERGENCY_STARTED, Reason.OVERLOAD, Reason.BACKUP_EJECTED, Reason.CUTBACK_ABORTED,
     Reason.METRICS_UNAVAILABLE, Reason.INVALID_SPEC, Reason.FORECAST_SPIKE, Reason.ADMIN_PORT_INVALID, Reason.CHILD_CONFLICT, Reason.ROOT_CAUSE_SUSPECTED,
     Reason.ADOPTION_REFUSED, Reason.ANNOTATION_IGNORED, Reason.ADMIN_TOKEN_MISSING}
)


#: events whose repetition nothing in status guards: a scale is compared with the engine's last decision and,
#: after a restart, with the Deployment's replicas, so a tick that posts only these need not write status
SCALE_REASONS = frozenset({Reason.SCALED_UP, Reason.SCALED_DOWN})


def event_type(reason: Reason) -> str:
    """`Warning` or `Normal`, as Kubernetes events spell it."""
    return "Warning" if reason in WARNING_REASONS else "Normal"


class ConditionType(str, Enum):
    """Typed conditions in status.conditions. Each starts as Unknown (`ConditionReason.NOT_OBSERVED`)."""

    READY = "Ready"
    METRICS_AVAILABLE = "MetricsAvailable"
    FORECAST_READY = "ForecastReady"
    EMERGENCY = "Emergency"
    #: both pools' pods hold the operator's admin token, so the playbook's admin calls can authenticate
    ADMIN_READY = "AdminReady"


class ConditionReason(str, Enum):
    """The `reason` of a condition written outside the decision engine.

    The engine names its own (engine/report.py): the phase for Ready,
    `MetricsRead`/`MetricsUnavailable`, `ModelReady`/`Fallback`/`NoForecast`,
    `NoIncident`; the operator writes those it passes on unchanged.
    """

    #: any condition before the operator has observed it
    NOT_OBSERVED = "NotObserved"
    #: Ready=True: pool A has a ready replica and the route exists
    POOLS_READY = "PoolsReady"
    #: Ready=False: pool A has no ready replica yet, or the route is missing
    POOLS_NOT_READY = "PoolsNotReady"
    #: MetricsAvailable=True: this tick's latency and rate were read
    METRICS_READ = "MetricsRead"
    #: MetricsAvailable=False: the metric source could not answer (down, timing out, no series); replicas are held
    METRICS_UNAVAILABLE = "MetricsUnavailable"
    #: MetricsAvailable=Unknown: no Prometheus URL, neither operator-wide nor in the spec; the phase is Degraded
    #: once pool A serves, and only readiness is kept
    NO_METRIC_SOURCE = "NoMetricSource"
    #: ForecastReady=False: the model the spec names was refused; the packaged default forecasts meanwhile
    MODEL_REJECTED = "ModelRejected"
    #: ForecastReady=False: the forecaster has nothing to forecast from yet; the engine sizes on the observed rate
    NO_FORECAST = "NoForecast"
    #: AdminReady=True: both pools' pods read the operator's token (the pools Forescale creates get it mounted)
    TOKEN_WIRED = "TokenWired"
    #: AdminReady=False: the operator has no admin token (FORESCALE_ADMIN_TOKEN_SECRET unset): admin calls are off
    #: by configuration, the pods are not at fault; no event
    ADMIN_CALLS_OFF = "AdminCallsOff"
    #: AdminReady=False: an adopted pool's template has no token, or a token file with no Secret volume under it
    TOKEN_MISSING = "TokenMissing"
    #: AdminReady=False: a Secret (or key) the token is read from does not exist in the resource's namespace
    TOKEN_SECRET_MISSING = "TokenSecretMissing"
    #: AdminReady=False: an adopted pool's pods hold another token than the operator's: admin calls would get 401
    TOKEN_MISMATCH = "TokenMismatch"
    #: AdminReady=Unknown: a pool's token comes from where Forescale cannot read it (a CSI volume, a ConfigMap)
    TOKEN_UNVERIFIED = "TokenUnverified"
