"""Parse an InferenceDeployment's spec once into typed, validated settings.

The CRD's OpenAPI schema and CEL rules reject most bad specs at admission;
this module repeats those checks (the operator must not trust that the CRD
installed in a cluster is the current one) and adds the ones a schema cannot
express. Every error names the field, as `spec.pools.a.maxReplicas: ...`.

Pure Python: the decision engine and the simulator use it without kopf.
The defaults here are the single source of truth; the CRD's defaults are
checked against them by a test.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from forescale_profiles.precision import PRECISIONS

MODES = ("Auto", "Preview")
ROUTERS = ("gatewayapi", "istio", "none")
#: the kinds a pool's targetRef may name: scaled through their scale subresource
TARGET_KINDS = {("apps/v1", "Deployment")}
#: the route kind a traffic.routeRef names, by router
ROUTE_KINDS = {"gatewayapi": "HTTPRoute", "istio": "VirtualService"}
PRESETS = ("forescale", "vllm", "triton", "torchserve", "custom")
POOLS = ("a", "b")


class SpecError(ValueError):
    """A spec that cannot be acted on. `field` is the dotted path under `root`
    (`spec`, or `metadata` for the name)."""

    def __init__(self, field: str, reason: str, root: str = "spec") -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"{root}.{field}: {reason}")


# What the operator copies into an HTTPRoute must pass the Gateway API's own
# schema (HTTPRoute v1, standard channel: Hostname, Namespace, SectionName, Group,
# Kind), or the route is refused only when the operator writes it, long after
# `kubectl apply` said yes. The CRD carries the same patterns and lengths
# (tests/operator/test_route_patterns.py checks both against the official CRD).
DNS_SUBDOMAIN = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
HOSTNAME_PATTERN = rf"^(\*\.)?{DNS_SUBDOMAIN}$"
NAMESPACE_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
SECTION_NAME_PATTERN = rf"^{DNS_SUBDOMAIN}$"
#: a Deployment's or a route's name
DNS_SUBDOMAIN_PATTERN = rf"^{DNS_SUBDOMAIN}$"
GROUP_PATTERN = rf"^$|^{DNS_SUBDOMAIN}$"
KIND_PATTERN = r"^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$"
#: (pattern, shortest, longest) of each string field of a parentRef
PARENT_REF_FIELDS = {
    "name": (None, 1, 253),
    "namespace": (NAMESPACE_PATTERN, 1, 63),
    "group": (GROUP_PATTERN, 0, 253),
    "kind": (KIND_PATTERN, 1, 63),
    "sectionName": (SECTION_NAME_PATTERN, 1, 253),
}
MAX_PARENT_REFS = 32
MAX_HOSTNAMES = 16
MAX_HOSTNAME_LENGTH = 253

# Children are named `<name>-a` and `<name>-b` (Deployments, Services) and
# labelled with `<name>`; a Service name is a DNS-1035 label of at most 63
# characters, so the resource's own name is one with room for the suffix.
NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
MAX_NAME_LENGTH = 63 - len("-a")


def _matches(value: str, pattern: str | None, shortest: int, longest: int) -> str | None:
    """Why `value` breaks the rule, or None."""
    if not shortest <= len(value) <= longest:
        return f"must be {shortest} to {longest} characters long, got {len(value)}: {value!r}"
    if pattern is not None and not re.match(pattern, value):
        return f"must match the Gateway API pattern {pattern}, got {value!r}"
    return None


def check_name(name: Any) -> None:
    """The InferenceDeployment's name must leave every child name valid."""
    if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH or not re.match(NAME_PATTERN, name):
        raise SpecError("name", f"must be a DNS-1035 label ({NAME_PATTERN}) of at most {MAX_NAME_LENGTH} characters, "
                                f"so that the children {name}-a and {name}-b are valid Service names; got {name!r}", root="metadata")


@dataclass(frozen=True)
class SloSpec:
    target_latency_ms: float
    quantile: float = 0.99


@dataclass(frozen=True)
class TargetRef:
    """An existing workload a pool scales instead of creating its own (KEDA's `scaleTargetRef` shape)."""

    name: str
    api_version: str = "apps/v1"
    kind: str = "Deployment"
    #: as written; only the resource's own namespace is accepted (checked against the cluster, handlers/adoption.py)
    namespace: str = ""

    def describe(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class PoolSpec:
    name: str
    min_replicas: int
    max_replicas: int
    precision: str
    cost_weight: float = 1.0
    template: Mapping[str, Any] = field(default_factory=dict)
    #: an existing Deployment to scale instead of creating `<name>-<pool>` from `template`
    target_ref: TargetRef | None = None
    #: scale the targetRef even when another controller owns it or an HPA targets it
    adopt_owned: bool = False

    @property
    def adopted(self) -> bool:
        """The pool is a Deployment Forescale did not create: scaled, never rewritten or deleted."""
        return self.target_ref is not None


@dataclass(frozen=True)
class ForecastSpec:
    horizon_seconds: int = 180
    step_seconds: int = 15
    model_config_map: str | None = None
    model_key: str = "model.pt"


@dataclass(frozen=True)
class MetricsSpec:
    prometheus_url: str | None = None
    preset: str = "forescale"
    latency_query: str = ""
    rate_query: str = ""


@dataclass(frozen=True)
class CutbackSpec:
    step_percent: int = 10
    interval_seconds: int = 60
    stable_seconds: int = 120


@dataclass(frozen=True)
class RouteRef:
    """An existing HTTPRoute or VirtualService whose weights the operator patches, leaving the rest as it is."""

    kind: str
    name: str
    #: as written; only the resource's own namespace is accepted (checked against the cluster)
    namespace: str = ""
    #: pool -> the Service the route's backendRef (or destination host) names; absent: `<name>-<pool>`
    backends: Mapping[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class TrafficSpec:
    router: str = "gatewayapi"
    parent_refs: tuple[Mapping[str, Any], ...] = ()
    hostnames: tuple[str, ...] = ()
    gateways: tuple[str, ...] = ()
    emergency_weight_percent: int = 30
    #: the most of the traffic an overload shift sends to B outside an incident (0: overloads are only scaled)
    overload_max_percent: int = 100
    cutback: CutbackSpec = CutbackSpec()
    #: an existing route to patch instead of creating the route `<name>`
    route_ref: RouteRef | None = None


@dataclass(frozen=True)
class EmergencySpec:
    trigger_ratio: float = 2.0
    error_rate_percent: float = 5.0
    precision_fallback: bool = True
    min_agreement: float = 0.97
    cache_warmup: bool = True
    debug_log_seconds: int = 300


@dataclass(frozen=True)
class InferenceSpec:
    """The whole spec, typed. Build it with `parse_spec`."""

    slo: SloSpec
    a: PoolSpec
    b: PoolSpec
    mode: str = "Auto"
    warm_reserve_percent: int = 20
    forecast: ForecastSpec = ForecastSpec()
    metrics: MetricsSpec = MetricsSpec()
    traffic: TrafficSpec = TrafficSpec()
    emergency: EmergencySpec = EmergencySpec()

    @property
    def preview(self) -> bool:
        return self.mode == "Preview"

    @property
    def adopts(self) -> bool:
        """Some pool is an existing Deployment (a targetRef)."""
        return self.a.adopted or self.b.adopted

    def pool(self, name: str) -> PoolSpec:
        if name == "a":
            return self.a
        if name == "b":
            return self.b
        raise KeyError(f"unknown pool {name!r}; expected 'a' or 'b'")


# --- small typed readers: each names the field it reads -------------------


def _section(raw: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SpecError(f"{path}{key}", f"must be an object, got {type(value).__name__}")
    return value


def _number(raw: Mapping[str, Any], key: str, path: str, default: Any, *, minimum=None, maximum=None,
            exclusive_minimum=None, integer=False) -> Any:
    name = f"{path}{key}"
    value = raw.get(key, default)
    if value is None:
        raise SpecError(name, "is required")
    # bool is an int in Python, but `true` is never a valid count or ratio.
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(name, f"must be a number, got {value!r}")
    if integer:
        if isinstance(value, float) and not value.is_integer():
            raise SpecError(name, f"must be an integer, got {value!r}")
        # The API server reads integers as int64; a larger one is not an integer there.
        if not -(2**63) <= value < 2**63:
            raise SpecError(name, f"must fit in a 64-bit integer, got {value!r}")
        value = int(value)
    if value != value or value in (float("inf"), float("-inf")):
        raise SpecError(name, f"must be finite, got {value!r}")
    if minimum is not None and value < minimum:
        raise SpecError(name, f"must be >= {minimum}, got {value}")
    if exclusive_minimum is not None and value <= exclusive_minimum:
        raise SpecError(name, f"must be > {exclusive_minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise SpecError(name, f"must be <= {maximum}, got {value}")
    return value


def _choice(raw: Mapping[str, Any], key: str, path: str, default: str, choices: tuple[str, ...]) -> str:
    value = raw.get(key, default)
    if value not in choices:
        raise SpecError(f"{path}{key}", f"must be one of {', '.join(choices)}, got {value!r}")
    return value


def _bool(raw: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise SpecError(f"{path}{key}", f"must be true or false, got {value!r}")
    return value


def _string_list(raw: Mapping[str, Any], key: str, path: str) -> tuple[str, ...]:
    value = raw.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise SpecError(f"{path}{key}", f"must be a list of non-empty strings, got {value!r}")
    return tuple(value)


def _optional_string(raw: Mapping[str, Any], key: str, path: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise SpecError(f"{path}{key}", f"must be a string, got {value!r}")
    return value


def _parent_refs(value: Any) -> list[Mapping[str, Any]]:
    """The same checks as the CRD and as the Gateway API's ParentReference: they
    end up in the HTTPRoute, so nothing it would refuse may get that far."""
    if not isinstance(value, list):
        raise SpecError("traffic.parentRefs", f"must be a list of objects with a name, got {value!r}")
    if len(value) > MAX_PARENT_REFS:
        raise SpecError("traffic.parentRefs", f"has {len(value)} items; the Gateway API allows at most {MAX_PARENT_REFS}")
    for i, ref in enumerate(value):
        where = f"traffic.parentRefs[{i}]"
        if not isinstance(ref, Mapping) or not isinstance(ref.get("name"), str) or not ref["name"]:
            raise SpecError(f"{where}.name", f"must be a non-empty string, got {ref.get('name') if isinstance(ref, Mapping) else ref!r}")
        for key, (pattern, shortest, longest) in PARENT_REF_FIELDS.items():
            if key not in ref:
                continue
            if not isinstance(ref[key], str):
                raise SpecError(f"{where}.{key}", f"must be a string, got {ref[key]!r}")
            problem = _matches(ref[key], pattern, shortest, longest)
            if problem:
                raise SpecError(f"{where}.{key}", problem)
        port = ref.get("port")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535):
            raise SpecError(f"{where}.port", f"must be an integer from 1 to 65535, got {port!r}")
    return value


def _hostnames(traffic_raw: Mapping[str, Any]) -> tuple[str, ...]:
    """HTTPRoute hostnames (or VirtualService hosts): the Gateway API's Hostname rule."""
    names = _string_list(traffic_raw, "hostnames", "traffic.")
    if len(names) > MAX_HOSTNAMES:
        raise SpecError("traffic.hostnames", f"has {len(names)} items; the Gateway API allows at most {MAX_HOSTNAMES}")
    for i, name in enumerate(names):
        problem = _matches(name, HOSTNAME_PATTERN, 1, MAX_HOSTNAME_LENGTH)
        if problem:
            raise SpecError(f"traffic.hostnames[{i}]", problem)
    return names


def validate_template(template: Any, path: str) -> Mapping[str, Any]:
    """A PodTemplateSpec needs at least one container with a name and an image.

    Resources are accepted as users write them (`nvidia.com/gpu: 1` as an int).
    """
    if not isinstance(template, Mapping):
        raise SpecError(path, "must be a PodTemplateSpec object")
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, Mapping):
        raise SpecError(f"{path}.spec", "is required (a PodSpec with at least one container)")
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        raise SpecError(f"{path}.spec.containers", "must list at least one container")
    for i, container in enumerate(containers):
        where = f"{path}.spec.containers[{i}]"
        if not isinstance(container, Mapping):
            raise SpecError(where, "must be an object")
        if not isinstance(container.get("name"), str) or not container.get("name"):
            raise SpecError(f"{where}.name", "is required")
        if not isinstance(container.get("image"), str) or not container.get("image"):
            raise SpecError(f"{where}.image", "is required")
    return template


def _ref_name(raw: Mapping[str, Any], key: str, path: str, *, required: bool, pattern: str, longest: int,
              what: str) -> str:
    """A name (or namespace) in an object reference: `what` says which rule it follows."""
    value = raw.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or not value:
        raise SpecError(f"{path}{key}", f"must be a non-empty string, got {value!r}")
    if len(value) > longest or not re.match(pattern, value):
        raise SpecError(f"{path}{key}", f"must be {what} of at most {longest} characters ({pattern}), got {value!r}")
    return value


def _target_ref(value: Any, path: str) -> TargetRef:
    """`{apiVersion, kind, name}` as KEDA's scaleTargetRef: apiVersion and kind default to apps/v1 Deployment."""
    if not isinstance(value, Mapping):
        raise SpecError(path, f"must be an object {{apiVersion, kind, name}} naming an existing Deployment, got {value!r}")
    api_version, kind = value.get("apiVersion", "apps/v1"), value.get("kind", "Deployment")
    if api_version not in {v for v, _ in TARGET_KINDS}:
        raise SpecError(f"{path}.apiVersion", f"must be apps/v1 (a Deployment), got {api_version!r}")
    if (api_version, kind) not in TARGET_KINDS:
        raise SpecError(f"{path}.kind", f"must be Deployment: Forescale scales Deployments through their scale "
                                        f"subresource, got {kind!r}")
    return TargetRef(
        name=_ref_name(value, "name", f"{path}.", required=True, pattern=DNS_SUBDOMAIN_PATTERN, longest=253,
                       what="a DNS subdomain"),
        api_version=api_version, kind=kind,
        namespace=_ref_name(value, "namespace", f"{path}.", required=False, pattern=NAMESPACE_PATTERN, longest=63,
                            what="a DNS label"),
    )


def _route_ref(traffic_raw: Mapping[str, Any], router: str) -> RouteRef | None:
    """traffic.routeRef: `{kind, name, backends: {a, b}}`; the kind goes with the router."""
    value = traffic_raw.get("routeRef")
    if value is None:
        return None
    path = "traffic.routeRef"
    if not isinstance(value, Mapping):
        raise SpecError(path, f"must be an object {{kind, name, backends}} naming an existing route, got {value!r}")
    kind = value.get("kind")
    if kind not in ROUTE_KINDS.values():
        raise SpecError(f"{path}.kind", f"must be one of {', '.join(ROUTE_KINDS.values())}, got {kind!r}")
    if router not in ROUTE_KINDS:
        raise SpecError(path, f"needs router gatewayapi (an HTTPRoute) or istio (a VirtualService), not {router}")
    if ROUTE_KINDS[router] != kind:
        raise SpecError(f"{path}.kind", f"router {router} patches a {ROUTE_KINDS[router]}, got {kind}")
    backends_raw = _section(value, "backends", f"{path}.")
    backends = {}
    for pool in POOLS:
        name = _ref_name(backends_raw, pool, f"{path}.backends.", required=False, pattern=NAME_PATTERN, longest=63,
                         what="a Service name (DNS-1035 label)")
        if name:
            backends[pool] = name
    if len(backends) == 2 and backends["a"] == backends["b"]:
        raise SpecError(f"{path}.backends.b", f"must name another Service than pool a's ({backends['a']}): the split "
                                              f"is between two backends")
    return RouteRef(
        kind=kind,
        name=_ref_name(value, "name", f"{path}.", required=True, pattern=DNS_SUBDOMAIN_PATTERN, longest=253,
                       what="a DNS subdomain"),
        namespace=_ref_name(value, "namespace", f"{path}.", required=False, pattern=NAMESPACE_PATTERN, longest=63,
                            what="a DNS label"),
        backends=backends,
    )


def _pool(raw: Mapping[str, Any], name: str) -> PoolSpec:
    path = f"pools.{name}."
    if not raw:
        raise SpecError(f"pools.{name}", "is required")
    min_default = 1 if name == "a" else 0
    min_replicas = _number(raw, "minReplicas", path, min_default, minimum=1 if name == "a" else 0, integer=True)
    max_replicas = _number(raw, "maxReplicas", path, max(min_replicas, 10), minimum=1, integer=True)
    if min_replicas > max_replicas:
        raise SpecError(f"{path}maxReplicas", f"must be >= minReplicas ({min_replicas}), got {max_replicas}")
    precision = _choice(raw, "precision", path, "fp16" if name == "a" else "int8", PRECISIONS)
    cost_weight = _number(raw, "costWeight", path, 1.0, exclusive_minimum=0)
    # A template (Forescale creates <name>-<pool>) or a targetRef (an existing Deployment), exactly one.
    if raw.get("template") is not None and raw.get("targetRef") is not None:
        raise SpecError(f"pools.{name}", "takes a template (Forescale creates the Deployment) or a targetRef "
                                         "(an existing Deployment), not both")
    adopt_owned = _bool(raw, "adoptOwned", path, False)
    if raw.get("targetRef") is not None:
        target_ref = _target_ref(raw["targetRef"], f"{path}targetRef")
        return PoolSpec(name, min_replicas, max_replicas, precision, float(cost_weight), {}, target_ref, adopt_owned)
    if adopt_owned:
        raise SpecError(f"{path}adoptOwned", "applies only to a pool with a targetRef")
    if raw.get("template") is None:
        raise SpecError(f"{path}template", "is required (a PodTemplateSpec), or a targetRef naming an existing Deployment")
    template = validate_template(raw.get("template"), f"{path}template")
    return PoolSpec(name, min_replicas, max_replicas, precision, float(cost_weight), template)


def _check_adoption(a: PoolSpec, b: PoolSpec, traffic: TrafficSpec) -> None:
    """The rules between pools and traffic that a targetRef or a routeRef brings (the CRD's CEL rules say the same)."""
    ref = traffic.route_ref
    if ref is not None:
        for key, value in (("parentRefs", traffic.parent_refs), ("hostnames", traffic.hostnames),
                           ("gateways", traffic.gateways)):
            if value:
                raise SpecError(f"traffic.{key}", f"is not used with routeRef: {ref.describe()} keeps its own; remove it")
    elif traffic.router == "gatewayapi" and not traffic.parent_refs:
        raise SpecError("traffic.parentRefs", "router gatewayapi needs at least one parentRef (the Gateway), "
                                              "or a routeRef naming an existing HTTPRoute")
    if a.target_ref and b.target_ref and a.target_ref.name == b.target_ref.name:
        raise SpecError("pools.b.targetRef.name", f"must name another Deployment than pool a's ({a.target_ref.name}): "
                                                  f"the pools are two Deployments")
    for pool in (a, b):
        if not pool.adopted:
            continue
        if ref is None and traffic.router != "none":
            raise SpecError("traffic.routeRef", f"is required: pool {pool.name} is an existing Deployment (targetRef), "
                                                f"and Forescale puts no route of its own in front of Deployments it did "
                                                f"not create; name the existing route, or set router none")
        if ref is not None and pool.name not in ref.backends:
            raise SpecError(f"traffic.routeRef.backends.{pool.name}", f"is required: pool {pool.name} is an existing "
                                                                      f"Deployment (targetRef); name the Service the "
                                                                      f"route sends its traffic to")


def parse_spec(raw: Mapping[str, Any]) -> InferenceSpec:
    """Parse and validate a spec; raise SpecError naming the first bad field."""
    if not isinstance(raw, Mapping):
        raise SpecError("", "must be an object")
    mode = _choice(raw, "mode", "", "Auto", MODES)

    slo_raw = _section(raw, "slo", "")
    if not slo_raw:
        raise SpecError("slo", "is required (slo.targetLatencyMs)")
    slo = SloSpec(
        target_latency_ms=float(_number(slo_raw, "targetLatencyMs", "slo.", None, exclusive_minimum=0)),
        quantile=float(_number(slo_raw, "quantile", "slo.", 0.99, exclusive_minimum=0, maximum=0.9999)),
    )

    pools_raw = _section(raw, "pools", "")
    a = _pool(_section(pools_raw, "a", "pools."), "a")
    b = _pool(_section(pools_raw, "b", "pools."), "b")

    forecast_raw = _section(raw, "forecast", "")
    model_ref = _section(forecast_raw, "modelRef", "forecast.")
    config_map = model_ref.get("configMap")
    if model_ref and (not isinstance(config_map, str) or not config_map):
        raise SpecError("forecast.modelRef.configMap", "must name a ConfigMap")
    model_key = model_ref.get("key", "model.pt")
    if not isinstance(model_key, str) or not model_key:
        raise SpecError("forecast.modelRef.key", f"must be a non-empty string, got {model_key!r}")
    forecast = ForecastSpec(
        horizon_seconds=_number(forecast_raw, "horizonSeconds", "forecast.", 180, minimum=1, integer=True),
        step_seconds=_number(forecast_raw, "stepSeconds", "forecast.", 15, minimum=1, integer=True),
        model_config_map=config_map or None,
        model_key=model_key,
    )
    if forecast.step_seconds > forecast.horizon_seconds:
        raise SpecError("forecast.stepSeconds", f"must be <= horizonSeconds ({forecast.horizon_seconds}), got {forecast.step_seconds}")

    metrics_raw = _section(raw, "metrics", "")
    url = metrics_raw.get("prometheusUrl") or None
    if url is not None and (not isinstance(url, str) or not url.startswith(("http://", "https://"))):
        raise SpecError("metrics.prometheusUrl", f"must be an http(s) URL, got {url!r}")
    metrics = MetricsSpec(
        prometheus_url=url,
        preset=_choice(metrics_raw, "preset", "metrics.", "forescale", PRESETS),
        latency_query=_optional_string(metrics_raw, "latencyQuery", "metrics."),
        rate_query=_optional_string(metrics_raw, "rateQuery", "metrics."),
    )
    if metrics.preset == "custom" and not (metrics.latency_query and metrics.rate_query):
        raise SpecError("metrics.latencyQuery", "preset custom needs both latencyQuery and rateQuery")

    traffic_raw = _section(raw, "traffic", "")
    cutback_raw = _section(traffic_raw, "cutback", "traffic.")
    parent_refs = _parent_refs(traffic_raw.get("parentRefs") or [])
    router = _choice(traffic_raw, "router", "traffic.", "gatewayapi", ROUTERS)
    traffic = TrafficSpec(
        router=router,
        parent_refs=tuple(dict(r) for r in parent_refs),
        hostnames=_hostnames(traffic_raw),
        gateways=_string_list(traffic_raw, "gateways", "traffic."),
        emergency_weight_percent=_number(traffic_raw, "emergencyWeightPercent", "traffic.", 30, minimum=0, maximum=100, integer=True),
        overload_max_percent=_number(traffic_raw, "overloadMaxPercent", "traffic.", 100, minimum=0, maximum=100, integer=True),
        cutback=CutbackSpec(
            step_percent=_number(cutback_raw, "stepPercent", "traffic.cutback.", 10, minimum=1, maximum=100, integer=True),
            interval_seconds=_number(cutback_raw, "intervalSeconds", "traffic.cutback.", 60, minimum=1, integer=True),
            stable_seconds=_number(cutback_raw, "stableSeconds", "traffic.cutback.", 120, minimum=1, integer=True),
        ),
        route_ref=_route_ref(traffic_raw, router),
    )
    _check_adoption(a, b, traffic)

    emergency_raw = _section(raw, "emergency", "")
    emergency = EmergencySpec(
        trigger_ratio=float(_number(emergency_raw, "triggerRatio", "emergency.", 2.0, exclusive_minimum=1.0)),
        error_rate_percent=float(_number(emergency_raw, "errorRatePercent", "emergency.", 5, minimum=0, maximum=100)),
        precision_fallback=_bool(emergency_raw, "precisionFallback", "emergency.", True),
        min_agreement=float(_number(emergency_raw, "minAgreement", "emergency.", 0.97, minimum=0, maximum=1)),
        cache_warmup=_bool(emergency_raw, "cacheWarmup", "emergency.", True),
        debug_log_seconds=_number(emergency_raw, "debugLogSeconds", "emergency.", 300, minimum=1, integer=True),
    )

    return InferenceSpec(
        slo=slo,
        a=a,
        b=b,
        mode=mode,
        warm_reserve_percent=_number(raw, "warmReservePercent", "", 20, minimum=0, maximum=100, integer=True),
        forecast=forecast,
        metrics=metrics,
        traffic=traffic,
        emergency=emergency,
    )
