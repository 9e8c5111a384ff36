"""Security pass: PromQL built from spec values is escaped. Injection is tried through the namespace,
the name, the pool and a custom preset; every query must keep each value inside one quoted label
matcher, i.e. have exactly the shape of the same query built from harmless values.
"""

from __future__ import annotations

import re

import pytest

from fake_prometheus import FakePrometheus
from forescale_operator.readings.prometheus import PrometheusMetricSource, preset_for
from forescale_operator.spec import parse_spec
from forescale_predictor.presets import POD_SUFFIX, PRESETS, QUERY_KINDS, custom_preset

#: a PromQL string literal in double quotes, escapes included
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
PAYLOADS = [
    'a"} or vector(1) #',
    'x\\"} or up{job=~".+',
    "line\nbreak",
    "back\\slash\\",
    "$selector",
    '",namespace=~".*',
    "ns} or on() vector(9)",
    "ünï\"cødé",
]
CUSTOM = custom_preset('1000 * max(my_latency{$selector, ns="$namespace", dep="$deployment"})',
                       'sum(rate(my_requests{$selector,pool="$pool"}[$window]))')


def skeleton(query: str) -> str:
    """The query with every string literal replaced: an injection changes this, an escaped value does not."""
    return _STRING.sub('"S"', query)


def unescape(literal: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), literal[1:-1])


@pytest.mark.parametrize("preset", [*PRESETS.values(), CUSTOM], ids=[*PRESETS, "custom"])
@pytest.mark.parametrize("payload", PAYLOADS)
def test_injected_names_stay_inside_one_quoted_matcher(preset, payload, tally):
    with tally.attempt("promql injection (security)"):
        for kind in QUERY_KINDS:
            for pool in ("a", None):
                benign = preset.query(kind, namespace="ml", deployment="chat", pool=pool)
                if benign is None:
                    continue
                for labels in ({"namespace": payload, "deployment": "chat"}, {"namespace": "ml", "deployment": payload}):
                    query = preset.query(kind, pool=pool, **labels)
                    assert skeleton(query) == skeleton(benign), (kind, query)
                    literals = [unescape(s) for s in _STRING.findall(query)]
                    if preset.selector == "labels":
                        assert payload in literals, (query, literals)
                    else:  # a regex matcher on the pod name: it must match the name literally
                        pattern = next(s for s in literals if s.endswith(f"-{POD_SUFFIX}"))
                        assert re.fullmatch(pattern, f"{labels['deployment']}-{pool or 'b'}-7c9d8f6b5-x2x9z")


@pytest.mark.parametrize("pool", ['a"}', "c", "", "a|b"])
def test_a_pool_is_a_or_b_never_free_text(pool):
    with pytest.raises(ValueError, match="pool must be one of"):
        PRESETS["forescale"].query("rate", namespace="ml", deployment="chat", pool=pool)


def test_what_the_operator_sends_prometheus_for_an_injected_resource_keeps_its_shape(tally):
    spec = parse_spec({"slo": {"targetLatencyMs": 200},
                       "pools": {p: {"template": {"spec": {"containers": [{"name": "s", "image": "i"}]}}} for p in "ab"},
                       "traffic": {"router": "none"},
                       "metrics": {"preset": "custom", "latencyQuery": CUSTOM.latency, "rateQuery": CUSTOM.rate}})
    fake = FakePrometheus().start()
    try:
        with tally.attempt("promql injection via the operator (security)"):
            source = PrometheusMetricSource(fake.url, timeout=1.0)
            source.sample("ml", "chat", spec, 0.0)
            benign = list(fake.queries)
            fake.queries.clear()
            source.sample(PAYLOADS[0], PAYLOADS[1], spec, 0.0)
            assert len(fake.queries) == len(benign) > 0
            assert [skeleton(q) for q in fake.queries] == [skeleton(q) for q in benign]
            assert preset_for(spec).name == "custom"
    finally:
        fake.stop()
