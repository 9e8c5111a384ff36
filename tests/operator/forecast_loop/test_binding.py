"""A resource is bound once per generation: spec, engine parameters, metric source, router and admin Secret."""

from __future__ import annotations

import pytest

from forescale_operator.capacity_annotation import ANNOTATION, ANNOTATION_B
from forescale_operator.children import Owner
from forescale_operator.forecast_loop.binding import Bindings
from forescale_operator.readings.noop import NoopMetricSource
from forescale_operator.spec import SpecError

API = object()  # the routers only keep the client; nothing is called here


class Built:
    """A metric source standing in for Prometheus at `url`."""

    name = "built"

    def __init__(self, url: str) -> None:
        self.url = url


def _body(example, *, generation=1, annotations=None, uid="uid-1") -> dict:
    body = example("minimal")
    body["metadata"].update(uid=uid, generation=generation, annotations=dict(annotations or {}))
    return body


@pytest.mark.parametrize("generation, annotations, rebinds", [
    pytest.param(1, {}, False, id="same-generation"),
    pytest.param(2, {}, True, id="spec-changed"),
    pytest.param(1, {ANNOTATION: "22"}, True, id="capacity-annotation-changed"),
    pytest.param(1, {ANNOTATION_B: "60"}, True, id="pool-b-capacity-annotation-changed"),
    pytest.param(1, {"forescale.io/last-handled-configuration": "{}"}, False, id="kopf-annotation-changed"),
])
def test_a_binding_is_kept_until_the_generation_or_the_capacity_annotation_changes(example, generation, annotations,
                                                                                  rebinds):
    bindings = Bindings()
    first = bindings.bind(_body(example), API)
    second = bindings.bind(_body(example, generation=generation, annotations=annotations), API)
    assert (second is not first) == rebinds
    assert bindings.bind(_body(example, generation=generation, annotations=annotations), API) is second


def test_a_body_without_a_generation_is_bound_afresh_each_time(example):
    bindings = Bindings()
    first = bindings.bind(_body(example, generation=None), API)
    assert bindings.bind(_body(example, generation=None), API) is not first


def test_forget_drops_the_binding_and_only_that_resources(example):
    bindings = Bindings()
    chat, other = bindings.bind(_body(example), API), bindings.bind(_body(example, uid="uid-2"), API)
    bindings.forget(Owner("chat", "default", "uid-1"))
    assert bindings.bind(_body(example), API) is not chat
    assert bindings.bind(_body(example, uid="uid-2"), API) is other


@pytest.mark.parametrize("spec_url, operator_url, source_url", [
    pytest.param(None, None, None, id="no-url-anywhere"),
    pytest.param(None, "http://operator:9090", "http://operator:9090", id="operator-wide"),
    pytest.param("http://spec:9090", "http://operator:9090", "http://spec:9090", id="spec-overrides"),
])
def test_the_metric_source_is_the_specs_prometheus_else_the_operators(example, spec_url, operator_url, source_url):
    body = _body(example)
    if spec_url:
        body["spec"]["metrics"] = {"prometheusUrl": spec_url}
    binding = Bindings(prometheus_url=operator_url, build=Built).bind(body, API)
    assert binding.reads_metrics == (source_url is not None)
    if source_url is None:
        assert isinstance(binding.metric_source, NoopMetricSource)
    else:
        assert binding.metric_source.url == source_url


def test_resources_reading_one_prometheus_share_its_source(example):
    bindings = Bindings(prometheus_url="http://operator:9090", build=Built)
    chat, other = bindings.bind(_body(example), API), bindings.bind(_body(example, uid="uid-2"), API)
    assert chat.metric_source is other.metric_source


@pytest.mark.parametrize("router", ["gatewayapi", "istio", "none"])
def test_the_router_is_the_specs(example, router):
    body = _body(example)
    body["spec"]["traffic"]["router"] = router
    binding = Bindings().bind(body, API)
    assert binding.router.name == router and binding.spec.traffic.router == router


@pytest.mark.parametrize("annotation, prior_rps, problem", [
    pytest.param(None, None, None, id="absent"),
    pytest.param("22", 22.0, None, id="load-tested"),
    pytest.param("fast", None, "must be a positive number", id="not-a-number"),
])
def test_the_engine_parameters_come_from_the_capacity_annotation(example, annotation, prior_rps, problem):
    body = _body(example, annotations={ANNOTATION: annotation} if annotation is not None else {})
    binding = Bindings().bind(body, API)
    default = Bindings().bind(_body(example), API).params.fallback_capacity_rps
    assert binding.params.name == "chat"
    assert binding.params.fallback_capacity_rps == (prior_rps if prior_rps is not None else default)
    assert (binding.params_problem is None) if problem is None else (problem in binding.params_problem)


def test_the_admin_secret_reference_is_passed_as_validated(example):
    binding = Bindings(admin_secret=("forescale-admin", "token")).bind(_body(example), API)
    assert binding.admin_secret == ("forescale-admin", "token")


def test_a_spec_that_does_not_parse_is_not_bound(example):
    bindings = Bindings()
    good = bindings.bind(_body(example), API)
    body = _body(example, generation=2)
    body["spec"]["slo"]["targetLatencyMs"] = -1
    with pytest.raises(SpecError):
        bindings.bind(body, API)
    assert bindings.bind(_body(example), API) is good  # the last good binding is still held for its generation
