"""kopf registration: thin decorated functions that call the plain handlers in `handlers/`.

All kopf tuning lives in `configure()` (the one `@kopf.on.startup`). API
errors worth retrying (409, 429, 5xx, an unreachable server) become
`kopf.TemporaryError` with a delay (Retry-After when given): never a crash.

Operators of different scopes (`-A` and `-n default`) share one coordination
Lease per namespace (leases.py): the handlers act on a resource only while
this operator holds the Lease of its namespace. `converge` is filtered out
otherwise (so kopf stores no progress or diff-base for it either), and the
loop stands by; the loop converges once when it takes the Lease over, since
the changes made meanwhile were filtered out here.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import zlib
from contextlib import contextmanager
from typing import Any, Iterator, Mapping

import kopf

from . import telemetry
from .actuators import Actuators
from .children import Owner
from .config import Config
from .events import KubeEvents
from .forecast_loop.binding import Bindings
from .forecast_loop.loop import ForecastLoop
from .handlers.reconcile import reconcile
from .handlers.release import release
from .handlers.tick import TickContext, TickDeps, tick
from .kube.errors import ApiError
from .kube import indexed
from .kube.http import Connection, HttpKubeApi
from .kube.indexed import IndexedReads
from .kube.refs import INFERENCE_DEPLOYMENTS
from .leases import LeaseTiming, NamespaceLeases, start_leases
from .peering import prepare_peering

GROUP, VERSION, PLURAL = "forescale.io", "v1alpha1", "inferencedeployments"
FINALIZER = "forescale.io/finalizer"
#: seconds before a non-retryable API error (403, 404) is tried again: permissions may be granted meanwhile
SLOW_RETRY_SECONDS = 30.0
#: seconds a deleted resource's namespace stays contended for: its delete handler's 20 tries, 2 s apart
DELETION_GRACE_SECONDS = 60.0

logger = logging.getLogger("forescale.operator")


plain = indexed.plain


@contextmanager
def retrying() -> Iterator[None]:
    try:
        yield
    except ApiError as exc:
        delay = exc.retry_after or (1.0 if exc.retryable else SLOW_RETRY_SECONDS)
        raise kopf.TemporaryError(f"{exc} (retrying in {delay:g}s)", delay=delay) from exc


def _deps(memo: kopf.Memo, body: Mapping[str, Any], reads: IndexedReads | None = None) -> TickDeps:
    api: HttpKubeApi = memo.api
    events = KubeEvents(api, Owner.from_body(body), instance=memo.config.pod_name)
    return TickDeps(api=api, actuators=Actuators(api, memo.config.admin_token_secret, memo.config.admin_token_copy_from),
                    events=events,
                    prometheus_url=memo.config.prometheus_url,
                    loop=memo.loop, reads=reads)


# The tick's children and pods, from the watch streams instead of a GET and two LISTs per tick
# (kube/indexed.py). kopf lists every indexed kind before it starts any other handler.
@kopf.index("apps", "v1", "deployments", labels={indexed.OWNER_LABEL: kopf.PRESENT})
def forescale_deployments(namespace: str | None, name: str | None, body: kopf.Body, **_: Any) -> dict:
    return indexed.by_name(namespace, name, body)


@kopf.index("", "v1", "pods", labels={indexed.OWNER_LABEL: kopf.PRESENT})
def forescale_pods(namespace: str | None, labels: kopf.Labels, body: kopf.Body, **_: Any) -> dict:
    return indexed.by_owner(namespace, labels, body)


@kopf.index("", "v1", "services", labels={indexed.OWNER_LABEL: kopf.PRESENT})
def forescale_services(namespace: str | None, labels: kopf.Labels, body: kopf.Body, **_: Any) -> dict:
    return indexed.by_owner(namespace, labels, body)


def _reads(memo: kopf.Memo, handed: Mapping[str, Any]) -> IndexedReads:
    """The indexes kopf handed to a handler, over the operator's API (an index not handed over: not synced)."""
    return IndexedReads(memo.api, deployments=handed.get("forescale_deployments"), pods=handed.get("forescale_pods"),
                        services=handed.get("forescale_services"), secrets=memo.setdefault("secret_reads", {}))


#: how long a modelRef's ConfigMap, once read, serves every resource naming it (forecasting/forecaster.py)
MODEL_CONFIG_MAP_TTL_S = 60.0


def make_forecast_loop(config: Config, api: HttpKubeApi) -> ForecastLoop:
    """The loop behind every tick: Prometheus (the operator-wide URL unless a spec names one), the predictor,
    the admin token Secret, and the operator's metrics on the served registry."""
    from prometheus_client import REGISTRY

    # The predictor's model code loads here, once, not when the handlers are imported.
    from .forecasting.forecaster import PredictorForecastSource
    from .diagnosis import Windows
    from .act.incident_diagnosis import IncidentDiagnoses
    from .readings.prom_query import HttpPromQuery

    windows = Windows(now_seconds=config.diagnosis_now_seconds, before_seconds=config.diagnosis_before_seconds)
    return ForecastLoop(bindings=Bindings(prometheus_url=config.prometheus_url, admin_secret=config.admin_token_secret),
                        forecasts=PredictorForecastSource(api, config_map_ttl_s=MODEL_CONFIG_MAP_TTL_S), telemetry=telemetry.OperatorMetrics(REGISTRY),
                        diagnoses=IncidentDiagnoses(lambda url, timeout_s, at: HttpPromQuery(url, timeout_s=timeout_s, at=at),
                                                    windows=windows))


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    """Tune kopf and decide on peering. Runs before any watch starts."""
    config: Config = memo.config
    memo.api = HttpKubeApi(Connection.from_environment(user_agent=f"forescale-operator/{memo.identity}"))
    if "loop" not in memo:
        memo.loop = make_forecast_loop(config, memo.api)
    settings.persistence.finalizer = FINALIZER
    # Keep kopf's bookkeeping in annotations: the CRD's status schema is complete and would prune status.kopf.
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix="forescale.io")
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
        prefix="forescale.io", key="last-handled-configuration")
    # Events are ours alone (reasons.py); kopf's handler logs stay in the log.
    settings.posting.enabled = False
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330
    settings.watching.connect_timeout = 10
    settings.watching.reconnect_backoff = 0.5
    settings.networking.request_timeout = 30
    settings.networking.error_backoffs = (0.5, 1, 2, 5, 10)
    settings.execution.default_backoff = 5
    settings.background.cancellation_polling = 1
    settings.peering.priority = config.peering_priority
    settings.peering.lifetime = memo.get("peering_lifetime", 60)
    if config.peering is None:
        logger.info("FORESCALE_PEERING is empty: running standalone (run one replica only).")
        peered = False
    else:
        settings.peering.name = config.peering
        try:
            peered = await prepare_peering(memo.api, config.peering, memo.clusterwide, memo.namespaces)
        except ApiError as exc:
            logger.warning("Cannot check for the peering CRDs (%s); running standalone.", exc)
            peered = False
    settings.peering.standalone = not peered
    # With the CRDs present, stay paused until the peers are known: no two replicas ever act at once.
    settings.peering.mandatory = peered
    if peered:
        logger.info("Peering %r with priority %d.", config.peering, config.peering_priority)
    # Across scopes (and installs), one Lease per namespace decides which operator acts there (leases.py).
    timing = LeaseTiming(config.lease_seconds, config.lease_renew_seconds) if config.lease_seconds else None
    # The Leases get a client of their own (own connections, own in-flight slots), as
    # kube-controller-manager gives leader election its own: a renewal queued behind the work
    # it coordinates misses its deadline. At 1,000 resources, renewals waiting behind the
    # reconcile's requests lost every namespace's Lease again and again (docs/operator-scale.md).
    memo.lease_api = HttpKubeApi(Connection.from_environment(user_agent=f"forescale-operator/{memo.identity}"),
                                 max_in_flight=4)
    try:
        memo.leases = await start_leases(memo.lease_api, memo.identity, timing)
    except ApiError as exc:
        # Acting uncoordinated is the defect the Lease exists for: stand by, and say why, until discovery answers.
        logger.warning("Cannot check for the Lease API (%s); standing by until it answers.", exc)
        memo.leases = NamespaceLeases(memo.lease_api, memo.identity, timing or LeaseTiming())
    memo.lease_task = asyncio.create_task(memo.leases.run()) if memo.leases is not None else None


@kopf.on.cleanup()
async def close(memo: kopf.Memo, **_: Any) -> None:
    leases: NamespaceLeases | None = memo.get("leases")
    if leases is not None:
        # Release every Lease: the other operator takes over within one renewal period, not a whole duration.
        await leases.close(memo.get("lease_task"))
    for name in ("lease_api", "api"):
        api = memo.get(name)
        if api is not None:
            await api.close()


def holds_lease(memo: kopf.Memo, namespace: str | None, **_: Any) -> bool:
    """kopf filter: act only where this operator holds the namespace's Lease (always, without coordination)."""
    leases: NamespaceLeases | None = memo.get("leases")
    return leases is None or leases.holds(namespace or "")


@kopf.on.resume(GROUP, VERSION, PLURAL, backoff=2, when=holds_lease)
@kopf.on.create(GROUP, VERSION, PLURAL, backoff=2, when=holds_lease)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec", backoff=2, when=holds_lease)
async def converge(body: kopf.Body, memo: kopf.Memo, logger: logging.Logger, **_: Any) -> None:
    """Create or converge the children (handlers/reconcile.py)."""
    raw = plain(body)
    with retrying():
        try:
            # The loop's converge after a takeover, a tick and this never act at once (no double events).
            async with memo.loop.acting(Owner.from_body(raw)):
                summary = await reconcile(raw, _deps(memo, raw))
        except ApiError:
            telemetry.RECONCILES.labels("retry").inc()
            raise
    telemetry.RECONCILES.labels("invalid" if summary.startswith("invalid") else "ok").inc()
    logger.info(summary)


@kopf.on.delete(GROUP, VERSION, PLURAL, backoff=2, retries=20)
async def give_back(body: kopf.Body, memo: kopf.Memo, logger: logging.Logger, **_: Any) -> None:
    """Restore an adopted route to 100/0 (handlers/release.py); the children go with their owner references.

    Waits for a tick in flight (kopf signals the daemon to stop, but a tick already acting could otherwise
    shift the weights after they were restored). After `retries` failed tries kopf lets the deletion go on.

    Only the holder of the namespace's Lease gives back. Not filtered out like `converge`: every operator's
    kopf shares the one finalizer, and one whose handlers were all done would remove it while the holder
    still works. The other waits until the resource is gone (the holder gave back and kopf let it go), or
    until it holds the Lease itself (the holder died), and then gives back."""
    raw = plain(body)
    owner = Owner.from_body(raw)
    leases: NamespaceLeases | None = memo.get("leases")
    if leases is not None:
        leases.want(owner.namespace)
    try:
        if leases is not None and not await _wait_for_lease(leases, memo.api, owner):
            logger.info("released by the operator holding the Lease of namespace %s", owner.namespace)
            return
        async with memo.loop.releasing(owner):
            with retrying():
                summary = await release(raw, _deps(memo, raw))
        logger.info(summary)
    finally:
        if leases is not None:
            leases.drop(owner.namespace)


async def _wait_for_lease(leases: NamespaceLeases, api: HttpKubeApi, owner: Owner) -> bool:
    """True once this operator holds the Lease of the owner's namespace; False once the resource is gone."""
    while not leases.holds(owner.namespace):
        with retrying():
            if await api.get(INFERENCE_DEPLOYMENTS, owner.namespace, owner.name) is None:
                return False
        await asyncio.sleep(min(1.0, leases.timing.renew_s))
    return True


@kopf.daemon(GROUP, VERSION, PLURAL, cancellation_timeout=5, initial_delay=1)
async def loop(body: kopf.Body, memo: kopf.Memo, stopped: kopf.DaemonStopped, logger: logging.Logger,
               **handed: Any) -> None:
    """Tick every forecast.stepSeconds (re-read live from the spec) until the resource goes or the operator pauses.

    Only while this operator holds the Lease of the resource's namespace; otherwise it stands by, and on
    taking the Lease (at start-up too) it converges once before its first tick."""
    config: Config = memo.config
    leases: NamespaceLeases | None = memo.get("leases")
    namespace = str((body.get("metadata") or {}).get("namespace") or "")
    if leases is not None:
        leases.want(namespace)
    try:
        await _run_loop(body, memo, stopped, logger, config, leases, namespace, _reads(memo, handed))
    finally:
        deleted = bool(stopped.reason and stopped.reason & kopf.DaemonStoppingReason.RESOURCE_DELETED)
        if leases is not None and deleted:
            # Keep contending while the delete handler may still need the Lease (its 20 tries, 2 s apart).
            leases.drop_later(namespace, DELETION_GRACE_SECONDS)
        elif leases is not None:
            leases.drop(namespace)
    if deleted:
        # Drop the deleted resource's binding, history, memory, forecasts and metric series (no dashboard
        # ghosts); on a pause or an exit they are kept, the resource still exists.
        memo.loop.forget(Owner.from_body(plain(body)))


async def _run_loop(body: kopf.Body, memo: kopf.Memo, stopped: kopf.DaemonStopped, logger: logging.Logger,
                    config: Config, leases: NamespaceLeases | None, namespace: str, reads: IndexedReads) -> None:
    acting = leases is None
    spread = False
    due = time.monotonic()
    while not stopped:
        if leases is not None and not leases.holds(namespace):
            # Standing by: another operator holds the namespace's Lease (or none does yet). Nothing is written.
            if acting:
                logger.warning("Standing by: this operator no longer holds the Lease of namespace %s.", namespace)
                acting = False
            await stopped.wait(min(1.0, leases.timing.renew_s))
            continue
        if not acting:
            # At once, as kopf's resume would: it was filtered out while the Lease was not held.
            retry_in = await _converge_on_takeover(body, memo, logger)
            if retry_in is not None:
                await stopped.wait(retry_in)
                continue
            acting = True
            due = time.monotonic()  # ticks resume from now, not from before the stand-by
        if not spread:
            # Spread the resources' ticks over the step: after a start or restart every
            # daemon would otherwise tick in the same second, and stay bunched: one burst
            # of API calls per step (1,000 resources: thousands of requests at once).
            await stopped.wait(_phase(body, _step_seconds(plain(body), config)))
            spread, due = True, time.monotonic()
            continue
        started = time.monotonic()
        telemetry.TICK_LAG.observe(max(0.0, started - due))
        raw = plain(body)
        step = _step_seconds(raw, config)
        try:
            async with memo.loop.acting(Owner.from_body(raw)):
                if stopped:  # deleted while waiting: the route was given back, no tick may act after that
                    break
                summary = await tick(TickContext(raw), _deps(memo, raw, reads))
            telemetry.TICKS.labels("ok").inc()
            (logger.info if summary.startswith("waiting") else logger.debug)(summary)
        except ApiError as exc:
            # The next tick is the retry: a tick is an observation, nothing is lost by skipping one.
            telemetry.TICKS.labels("error").inc()
            logger.warning("tick failed, next in %gs: %s", step, exc)
            if exc.retry_after:
                step = max(step, exc.retry_after)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - a bug in one tick must not end this resource's loop for good
            telemetry.TICKS.labels("error").inc()
            logger.exception("tick failed unexpectedly, next in %gs", step)
        telemetry.TICK_DURATION.observe(time.monotonic() - started)
        # Fixed rate: the next tick is due one step after this one was due, not one
        # step after it ended (the loop would drift by every tick's duration).
        due += step
        behind = time.monotonic() - due
        if behind > step:  # whole ticks were missed: skip them rather than run them back to back
            due += step * math.floor(behind / step)
        await stopped.wait(max(0.0, due - time.monotonic()))


async def _converge_on_takeover(body: kopf.Body, memo: kopf.Memo, logger: logging.Logger) -> float | None:
    """Converge once after taking the Lease: kopf's handlers were filtered out while another operator (or none)
    held it, so a spec change made meanwhile may not be applied yet. Returns None when done, else the seconds
    to wait before retrying (as `retrying()` would have kopf wait)."""
    raw = plain(body)
    try:
        async with memo.loop.acting(Owner.from_body(raw)):
            summary = await reconcile(raw, _deps(memo, raw))
    except ApiError as exc:
        telemetry.RECONCILES.labels("retry").inc()
        delay = exc.retry_after or (1.0 if exc.retryable else SLOW_RETRY_SECONDS)
        logger.warning("Converging after taking the Lease failed, retrying in %gs: %s", delay, exc)
        return delay
    telemetry.RECONCILES.labels("invalid" if summary.startswith("invalid") else "ok").inc()
    logger.info("Holding the Lease of namespace %s: %s", raw["metadata"].get("namespace"), summary)
    return None


def _phase(body: Mapping[str, Any], step: float) -> float:
    """A stable offset in [0, step) from the resource's uid, so ticks spread evenly over the step."""
    uid = str((body.get("metadata") or {}).get("uid") or (body.get("metadata") or {}).get("name") or "")
    return (zlib.crc32(uid.encode()) % 1000) / 1000.0 * step


def _step_seconds(raw: Mapping[str, Any], config: Config) -> float:
    """forecast.stepSeconds of the live spec (15 when unreadable), floored by FORESCALE_MIN_LOOP_SECONDS."""
    forecast = (raw.get("spec") or {}).get("forecast")
    step = forecast.get("stepSeconds", 15) if isinstance(forecast, Mapping) else 15
    if isinstance(step, bool) or not isinstance(step, (int, float)) or step <= 0:
        step = 15
    return max(config.min_loop_seconds, float(step))
