"""A resource bound once per generation: its parsed spec and what the tick reads and acts through.

Parsing the spec, the capacity annotation and the admin secret reference, and
picking the metric source and the router, depend only on the spec, that one
annotation and the operator's settings. They used to be redone on every tick;
a `ResourceBinding` does them once and `Bindings` keeps it by uid until the
generation (a spec change) or the annotation changes.

A tick binds once, at its start, and finishes on that binding even when the
resource changes meanwhile: the next tick rebinds. A body without a
generation (never so from an API server) is bound afresh every time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

from ..capacity_annotation import engine_params, raw_values
from ..children import Owner
from ..engine import EngineParams
from ..kube.client import KubeApi
from ..readings import MetricSource, make_metric_source
from ..readings.noop import NoopMetricSource
from ..routers.base import Router
from ..routers.factory import router_for
from ..spec import InferenceSpec, parse_spec


@dataclass(frozen=True)
class ResourceBinding:
    """One resource at one generation, as every step of its ticks needs it."""

    owner: Owner
    #: metadata.generation bound (None: not cached)
    generation: int | None
    #: the forescale.io/capacity-rps annotations bound (their raw text, None where absent)
    annotation: tuple[str | None, ...]
    spec: InferenceSpec
    #: the engine's parameters: the capacity annotation's prior, or the default one
    params: EngineParams
    #: what is wrong with the capacity annotation (the tick says it once per bad value), or None
    params_problem: str | None
    #: the spec's Prometheus or the operator-wide one; a no-op when neither exists
    metric_source: MetricSource
    #: the route backend of spec.traffic (its routeRef, or traffic.router's)
    router: Router
    #: FORESCALE_ADMIN_TOKEN_SECRET as (secret, key), read in the resource's namespace when the playbook calls the pods
    admin_secret: tuple[str, str] | None
    #: the Prometheus the metric source reads (the spec's, else the operator's), for the incident's diagnosis
    prometheus_url: str | None = None

    @property
    def reads_metrics(self) -> bool:
        """False when no Prometheus URL exists for this resource: the tick then only keeps readiness true."""
        return not isinstance(self.metric_source, NoopMetricSource)


def bind(body: Mapping[str, Any], api: KubeApi, *, sources: dict[str, MetricSource],
         prometheus_url: str | None = None, admin_secret: tuple[str, str] | None = None,
         build: Callable[[str], MetricSource] | None = None, batch: bool = True) -> ResourceBinding:
    """Bind `body` as it is now; SpecError when its spec does not parse. Metric sources are shared by URL in `sources`."""
    meta = body["metadata"]
    owner = Owner.from_body(body)
    annotation = raw_values(meta.get("annotations"))
    spec = parse_spec(body.get("spec") or {})
    params, problem = engine_params(owner.name, meta.get("annotations"))
    if spec.adopts:
        # Events name the Deployments as users know them: `chat`, not `<name>-a`.
        params = replace(params, pool_names={p.name: owner.deployment_of(p) for p in (spec.a, spec.b)})
    return ResourceBinding(
        owner=owner, generation=meta.get("generation"), annotation=annotation, spec=spec, params=params,
        params_problem=problem,
        metric_source=make_metric_source(spec, prometheus_url, cache=sources, build=build, batch=batch),
        router=router_for(spec.traffic, api), admin_secret=admin_secret,
        prometheus_url=spec.metrics.prometheus_url or prometheus_url,
    )


class Bindings:
    """The current binding of every resource, by uid, with the operator-wide settings they are made from."""

    def __init__(self, *, prometheus_url: str | None = None, admin_secret: tuple[str, str] | None = None,
                 build: Callable[[str], MetricSource] | None = None, batch: bool = True) -> None:
        #: FORESCALE_PROMETHEUS_URL: the metric source of a spec without metrics.prometheusUrl
        self.prometheus_url = prometheus_url
        self.admin_secret = admin_secret
        #: builds a metric source for a URL (tests pass fakes); None: Prometheus (readings/factory.py)
        self._build = build
        #: grouped queries shared by all resources (readings/prometheus_batched.py); False: per resource
        self._batch = batch
        #: metric sources by URL, shared by the resources that read the same Prometheus
        self._sources: dict[str, MetricSource] = {}
        self._bound: dict[str, ResourceBinding] = {}

    def bind(self, body: Mapping[str, Any], api: KubeApi) -> ResourceBinding:
        """The binding of `body`'s generation and capacity annotation: the one held, or a new one."""
        meta = body["metadata"]
        held = self._bound.get(meta["uid"])
        generation = meta.get("generation")
        if (held is not None and generation is not None and held.generation == generation
                and held.annotation == raw_values(meta.get("annotations"))):
            return held
        binding = bind(body, api, sources=self._sources, prometheus_url=self.prometheus_url,
                       admin_secret=self.admin_secret, build=self._build, batch=self._batch)
        self._bound[binding.owner.uid] = binding
        return binding

    def forget(self, owner: Owner) -> None:
        self._bound.pop(owner.uid, None)
