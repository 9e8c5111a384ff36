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
class PoolSpec:
    name: str
    min_replicas: int
    max_replicas: int
    precision: str
    cost_weight: float = 1.0
    template: Mapping[str, Any] = field(default_factory=dict)


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
class TrafficSpec:
    router: str = "gatewayapi"
    parent_refs: tuple[Mapping[str, Any], ...] = ()
    hostnames: tuple[str, ...] = ()
    gateways: tuple[str, ...] = ()
    emergency_weight_percent: int = 30
    cutback: CutbackSpec = CutbackSpec()


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
    template = validate_template(raw.get("template"), f"{path}template")
    return PoolSpec(name, min_replicas, max_replicas, precision, float(cost_weight), template)


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
    traffic = TrafficSpec(
        router=_choice(traffic_raw, "router", "traffic.", "gatewayapi", ROUTERS),
        parent_refs=tuple(dict(r) for r in parent_refs),
        hostnames=_hostnames(traffic_raw),
        gateways=_string_list(traffic_raw, "gateways", "traffic."),
        emergency_weight_percent=_number(traffic_raw, "emergencyWeightPercent", "traffic.", 30, minimum=0, maximum=100, integer=True),
        cutback=CutbackSpec(
            step_percent=_number(cutback_raw, "stepPercent", "traffic.cutback.", 10, minimum=1, maximum=100, integer=True),
            interval_seconds=_number(cutback_raw, "intervalSeconds", "traffic.cutback.", 60, minimum=1, integer=True),
            stable_seconds=_number(cutback_raw, "stableSeconds", "traffic.cutback.", 120, minimum=1, integer=True),
        ),
    )
    if traffic.router == "gatewayapi" and not traffic.parent_refs:
        raise SpecError("traffic.parentRefs", "router gatewayapi needs at least one parentRef (the Gateway)")

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
