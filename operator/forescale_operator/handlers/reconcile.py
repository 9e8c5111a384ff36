"""Create, resume, update: converge the children to the spec and report what changed.

Idempotent: run twice (an operator restart, a retry after a 409) it changes
nothing the second time and posts no event. A spec the schema could not
catch (no container, a router kind this cluster does not serve, a template
the API server rejects) makes the resource Invalid and touches no child.
"""

from __future__ import annotations

from typing import Any, Mapping

from .. import observe as observing
from ..actuators.deployments import DeploymentChange
from ..children import ChildConflict, Owner, name_problem
from ..kube.errors import ApiError
from ..kube.refs import HTTP_ROUTES, VIRTUAL_SERVICES
from ..reasons import Reason
from ..spec import InferenceSpec, SpecError, check_name, parse_spec
from ..status import StatusUpdate, write_status
from ..weights import Weights
from .deps import HandlerDeps
from .invalid import mark_invalid

_ROUTE_KINDS = {"gatewayapi": (HTTP_ROUTES, "the Gateway API CRDs"), "istio": (VIRTUAL_SERVICES, "Istio")}


async def check_cluster(spec: InferenceSpec, deps: HandlerDeps) -> None:
    """Checks against the cluster itself: the router's kind must be served (API discovery)."""
    if spec.traffic.router in _ROUTE_KINDS:
        ref, what = _ROUTE_KINDS[spec.traffic.router]
        if not await deps.api.served(ref):
            raise SpecError("traffic.router", f"{spec.traffic.router} needs {ref.kind} ({ref.api_version}), which this "
                                              f"cluster does not serve; install {what} or use another router")


def _replicas(n: int) -> str:
    return f"{n} replica" if n == 1 else f"{n} replicas"


def _image(pool) -> str:
    containers = (pool.template.get("spec") or {}).get("containers") or [{}]
    return str(containers[0].get("image", "?"))


def _scaling_events(spec: InferenceSpec, changes: list[DeploymentChange]) -> list[tuple[Reason, str]]:
    events = []
    for change, pool in zip(changes, (spec.a, spec.b)):
        if change.created or change.replicas_before is None or change.replicas_before == change.replicas:
            continue
        reason = Reason.SCALED_UP if change.replicas > change.replicas_before else Reason.SCALED_DOWN
        events.append((reason, f"Scaled {change.name} {change.replicas_before} -> {change.replicas}: outside the new "
                               f"bounds {pool.min_replicas}..{pool.max_replicas}"))
    return events


def _previous_weights(status: Mapping[str, Any]) -> Weights | None:
    weights = status.get("weights") or {}
    try:
        return Weights(int(weights["a"]), int(weights["b"]))
    except (KeyError, TypeError, ValueError):
        return None


async def reconcile(body: Mapping[str, Any], deps: HandlerDeps) -> str:
    """Converge one InferenceDeployment; returns a one-line summary for kopf's log."""
    meta = body["metadata"]
    status = body.get("status") or {}
    problem = name_problem(meta["name"])
    if problem:
        await mark_invalid(body, ValueError(f"metadata.name: {problem}"), deps)
        return f"invalid: {problem}"
    try:
        check_name(meta.get("name"))
        spec = parse_spec(body.get("spec") or {})
        await check_cluster(spec, deps)
    except SpecError as err:
        await mark_invalid(body, err, deps)
        return f"invalid: {err}"

    owner = Owner.from_body(body)
    router = deps.actuators.router(spec.traffic.router)
    try:
        a = await deps.actuators.ensure_deployment(owner, spec.a)
        b = await deps.actuators.ensure_deployment(owner, spec.b)
        services = await deps.actuators.ensure_services(owner, spec.a, spec.b)
        route = await deps.actuators.ensure_route(owner, router, spec.traffic, _previous_weights(status))
    except ChildConflict as exc:
        # Another controller's object holds a child's name: touch nothing of it, say so, retry each tick.
        await mark_invalid(body, exc, deps, Reason.CHILD_CONFLICT)
        return f"conflict: {exc}"
    except ApiError as exc:
        if exc.status in (400, 422):
            # The API server rejected what the template asks for: a spec problem, not a transient one.
            await mark_invalid(body, SpecError("pools", f"the API server rejected a child: {exc.message}"), deps)
            return f"invalid: {exc.message}"
        raise

    route_text = (f"route {router.describe(owner)} weights {route.weights}" if router.ref is not None
                  else f"no router (Service {owner.name} spans both pools)")
    created = [f"{c.name} ({_replicas(c.replicas)}, {p.precision})" for c, p in ((a, spec.a), (b, spec.b)) if c.created]
    if created:
        await deps.events.post(Reason.POOLS_CREATED, (
            f"Created {', '.join(created)}, services {', '.join(services) or 'unchanged'}, {route_text}"))
    else:
        changed = [f"{c.name} template ({_image(p)}, {p.precision}, {_replicas(c.replicas)})"
                   for c, p in ((a, spec.a), (b, spec.b)) if c.template_changed]
        changed += [f"service {name}" for name in services]
        changed += [f"removed {text}" for text in route.removed]
        if route.created:
            # After a router change the route is new; otherwise someone deleted it and it is back.
            changed.append(f"{'created' if route.removed else 'recreated'} {route_text}")
        if changed:
            await deps.events.post(Reason.POOLS_UPDATED, "Updated " + ", ".join(changed))
    for reason, message in _scaling_events(spec, [a, b]):
        await deps.events.post(reason, message)
    if status.get("phase") == "Invalid":
        await deps.events.post(Reason.POOLS_UPDATED, "Spec valid again: children converged")

    update = StatusUpdate(status, meta.get("generation"))
    update.observed_generation(meta.get("generation", 1))
    seen = await observing.observe(deps.actuators, owner, router)
    observing.record(update, spec, seen)
    # Without a metric source nothing is scaled: say Degraded from the start, not Stable until the first tick.
    update.phase(seen.phase if spec.metrics.prometheus_url or deps.prometheus_url else seen.phase_without_metrics)
    await write_status(deps.api, owner.namespace, owner.name, update)
    return f"converged: {a.name} {a.replicas}, {b.name} {b.replicas}, {route_text}"
