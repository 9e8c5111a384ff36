"""Create, resume, update: converge the children to the spec and report what changed.

Idempotent: run twice (an operator restart, a retry after a 409) it changes
nothing the second time and posts no event. A spec the schema could not
catch (no container, a router kind this cluster does not serve, a template
the API server rejects) makes the resource Invalid and touches no child.

A pool with a targetRef and a routeRef name objects the user already runs:
they are checked first (they exist here, no other controller or HPA holds
the Deployment, the route sends traffic to both pools' Services), so a bad
reference creates nothing; then only their replicas (into the pool's bounds)
and later the route's two weights are ever written. In Preview nothing of
theirs is written at all.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..observe import admin_readiness
from .. import observe as observing
from ..actuators.deployments import DeploymentChange
from ..actuators.routes import RouteChange
from ..children import AdoptionRefused, ChildConflict, Owner, name_problem
from ..engine.preview import would
from ..kube.errors import ApiError
from ..kube.refs import HTTP_ROUTES, VIRTUAL_SERVICES
from ..phase import INCIDENT_PHASES
from ..reasons import Reason
from ..routers.base import Router
from ..spec import InferenceSpec, PoolSpec, SpecError, check_name, parse_spec
from ..status import StatusUpdate, write_status
from ..weights import ALL_ON_A, Weights
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
        message = (f"Scaled {change.name} {change.replicas_before} -> {change.replicas}: outside the "
                   f"{'' if pool.adopted else 'new '}bounds {pool.min_replicas}..{pool.max_replicas}")
        # Preview writes nothing of an adopted Deployment: it says what Auto would do.
        events.append((reason, would(message) if pool.adopted and spec.preview else message))
    return events


def _not_created(owner: Owner, pool: PoolSpec) -> DeploymentChange:
    """A pool with a template in read-only Preview: not created; Auto would create it at minReplicas."""
    return DeploymentChange(owner.pool_name(pool.name), False, False, None, pool.min_replicas)


def _adopted(spec: InferenceSpec, router: Router, owner: Owner) -> str:
    """`Deployment chat as pool a, ..., HTTPRoute chat`: what this resource takes over ("" when nothing).

    Kept in status.adopted: a change of it (or of the mode) is announced once with PoolsAdopted."""
    parts = [f"{p.target_ref.describe()} as pool {p.name}" for p in (spec.a, spec.b) if p.target_ref is not None]
    if spec.traffic.route_ref is not None:
        parts.append(router.describe(owner))
    if parts and spec.preview:
        parts[-1] += " (Preview: read only)"
    return ", ".join(parts)


def _adoption_message(spec: InferenceSpec, changes: list[DeploymentChange], router: Router, owner: Owner,
                      weights: Weights) -> str:
    """The PoolsAdopted event: each Deployment with its replicas and precision, the route with its split now."""
    parts = [f"Deployment {c.name} as pool {p.name} ({_replicas(c.replicas_before or 0)}, {p.precision})"
             for c, p in zip(changes, (spec.a, spec.b)) if p.adopted]
    if spec.traffic.route_ref is not None:
        text = f"{router.describe(owner)} (weights {weights}"
        if weights != ALL_ON_A:
            text += f"; {'Auto would set' if spec.preview else 'the loop sets'} 100/0 outside an incident"
        parts.append(text + ")")
    if spec.preview:
        created = [f"create {c.name} ({_replicas(c.replicas)}, {p.precision})"
                   for c, p in zip(changes, (spec.a, spec.b)) if not p.adopted]
        return would(f"Adopt {', '.join(parts)}{' and ' if created else ''}{', '.join(created)}: "
                     f"in Preview nothing is created or changed")
    return (f"Adopted {', '.join(parts)}: replicas are set through the scale subresource and only the two weights "
            f"of the route; nothing of theirs is deleted")


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
    router = deps.actuators.router(spec.traffic)
    try:
        # What the spec names of the user's is checked before anything is written: a bad reference creates nothing.
        targets = {p.name: await deps.actuators.check_target(owner, p) for p in (spec.a, spec.b) if p.adopted}
        if spec.traffic.route_ref is not None:
            await router.ensure(owner, spec.traffic, ALL_ON_A)
    except SpecError as err:
        await mark_invalid(body, err, deps)
        return f"invalid: {err}"
    except AdoptionRefused as exc:
        await mark_invalid(body, exc, deps, Reason.ADOPTION_REFUSED)
        return f"invalid: {exc}"
    # Preview with a targetRef is read only: nothing is created, nothing written but this resource's status and events.
    read_only = spec.preview and spec.adopts
    try:
        if not read_only:
            # Before the pools: their pods mount it, and would wait on a missing Secret.
            await deps.actuators.ensure_admin_token(owner)
        a, b = [await deps.actuators.ensure_target(owner, p, targets[p.name], preview=spec.preview) if p.adopted
                else _not_created(owner, p) if read_only
                else await deps.actuators.ensure_deployment(owner, p) for p in (spec.a, spec.b)]
        if read_only:
            services = []
            route = RouteChange(False, (), await router.get_weights(owner) or ALL_ON_A)
        else:
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
                  else "no router" if spec.adopts else f"no router (Service {owner.name} spans both pools)")
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
    adopted = _adopted(spec, router, owner)
    if adopted and adopted != status.get("adopted"):
        await deps.events.post(Reason.POOLS_ADOPTED, _adoption_message(spec, [a, b], router, owner, route.weights))
    for reason, message in _scaling_events(spec, [a, b]):
        await deps.events.post(reason, message)
    if status.get("phase") == "Invalid":
        await deps.events.post(Reason.POOLS_UPDATED, "Spec valid again: children converged")

    update = StatusUpdate(status, meta.get("generation"))
    update.observed_generation(meta.get("generation", 1))
    seen = await observing.observe(deps.api, owner, router, spec)
    observing.record(update, spec, seen)
    update.adopted(adopted)
    # Whether the playbook's admin calls can authenticate on both pools (an adopted template may lack the token).
    admin = await admin_readiness.check(deps.api, owner, spec, seen, deps.actuators.admin_secret,
                                        deps.actuators.admin_copy_from)
    admin_readiness.record(update, admin)
    await admin_readiness.report(deps.events, status, admin, owner)
    # Without a metric source nothing is scaled: say Degraded from the start, not Stable until the first tick.
    # An incident outlives a restart or a spec change: its phase stays until a tick's engine ends it (written
    # from readiness here, a cut-back resumed by a new operator read Stable for a tick with B still at 20%).
    if status.get("phase") not in INCIDENT_PHASES:  # a str enum: "Emergency" is Phase.EMERGENCY
        update.phase(seen.phase_for(spec) if spec.metrics.prometheus_url or deps.prometheus_url
                     else seen.phase_without_metrics(spec))
    await write_status(deps.api, owner.namespace, owner.name, update)
    return f"converged: {a.name} {a.replicas}, {b.name} {b.replicas}, {route_text}"
