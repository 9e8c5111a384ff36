import pytest

from forescale_predictor.presets import PRESET_NAMES, PRESETS, escape_label_value, escape_regex_value, get_preset, substitutions

LABELS = dict(namespace="ml", deployment="chat", pool="a", quantile=0.99, window="1m")


@pytest.mark.parametrize(
    ("name", "quantiles", "has_queue", "has_errors"),
    [("forescale", True, True, True), ("vllm", True, True, True), ("triton", False, True, True), ("torchserve", False, False, True)],
)
def test_each_preset_declares_what_it_yields(name, quantiles, has_queue, has_errors):
    preset = PRESETS[name]
    assert preset.yields_quantiles is quantiles
    queries = preset.queries(**LABELS)
    assert {"latency", "rate"} <= set(queries)
    assert ("queue_depth" in queries) is has_queue
    assert ("error_rate" in queries) is has_errors
    if quantiles:
        assert "histogram_quantile(0.99," in queries["latency"]
    else:
        assert "histogram_quantile" not in queries["latency"]


def test_forescale_queries_use_the_servers_metrics():
    q = PRESETS["forescale"].queries(**LABELS)
    assert 'forescale_request_duration_seconds_bucket{namespace="ml",deployment="chat",pool="a",stage="total"}[1m]' in q["latency"]
    assert q["rate"] == 'sum(rate(forescale_requests_total{namespace="ml",deployment="chat",pool="a"}[1m]))'
    assert 'code=~"5..|429"' in q["error_rate"]
    assert "forescale_quality_agreement" in q["agreement"]
    assert "pool=" not in PRESETS["forescale"].query("rate", **{**LABELS, "pool": None})


@pytest.mark.parametrize("pod, deployment, pool, matches", [
    ("chat-a-7c9d8f6b5-x2x9z", "chat", "a", True),
    ("chat-b-7c9d8f6b5-x2x9z", "chat", None, True),
    ("chat-a-a-7c9d8f6b5-x2x9z", "chat", "a", False),   # a pod of the resource `chat-a`, pool a
    ("chat-a-b-7c9d8f6b5-x2x9z", "chat", None, False),
    ("chat-ab-7c9d8f6b5-x2x9z", "chat", "a", False),
    ("chat-a-7c9d8f6b5", "chat", "a", False),           # a ReplicaSet, not a pod
    ("chat.v1-a-7c9d8f6b5-x2x9z", "chat.v1", "a", True),
    ("chatxv1-a-7c9d8f6b5-x2x9z", "chat.v1", "a", False),  # the dot is literal
])
def test_pod_selecting_presets_pick_the_pools_pods_by_whole_name(pod, deployment, pool, matches):
    """PromQL anchors `=~` at both ends: the same as re.fullmatch (after PromQL unquoting)."""
    import re

    selector = substitutions("pod", namespace="ml", deployment=deployment, pool=pool, quantile=0.99, window="1m")["selector"]
    regex = re.search(r'pod=~"((?:[^"\\]|\\.)*)"', selector).group(1).encode().decode("unicode_escape")
    assert bool(re.fullmatch(regex, pod)) is matches


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [('a"b', 'a\\"b'), ("a\\b", "a\\\\b"), ("a\nb", "a\\nb"), ("plain", "plain")],
)
def test_escape_label_value(raw, escaped):
    assert escape_label_value(raw) == escaped


@pytest.mark.parametrize("name", list(PRESETS))
@pytest.mark.parametrize("field", ["namespace", "deployment"])
def test_injection_attempt_stays_inside_the_string(name, field):
    evil = 'a"} or vector(1) #'
    query = PRESETS[name].query("rate", **{**LABELS, field: evil})
    assert '"} or vector(1)' not in query.replace('\\"} or vector(1)', "")
    # the only unescaped quotes are the ones the template itself wrote
    assert query.count('\\"') >= 1


def test_regex_values_are_regex_escaped():
    assert escape_regex_value("a.b") == "a\\\\.b"


@pytest.mark.parametrize(
    ("labels", "message"),
    [
        ({"quantile": 1.5}, "quantile must be in"),
        ({"quantile": "x"}, "quantile must be a number"),
        ({"window": "1m) or vector(1"}, "window must be a PromQL duration"),
        ({"pool": "c"}, "pool must be one of"),
        ({"namespace": ""}, "namespace and deployment are required"),
    ],
)
def test_bad_parameters_are_refused(labels, message):
    with pytest.raises(ValueError, match=message):
        PRESETS["forescale"].query("latency", **{**LABELS, **labels})


def test_custom_preset_substitutes_placeholders():
    preset = get_preset("custom", latency_query='my_p99{$selector,x="$deployment"}', rate_query="sum(rate(reqs{namespace=\"$namespace\"}[$window]))")
    q = preset.queries(**{**LABELS, "deployment": 'we"ird'})
    assert q["latency"] == 'my_p99{namespace="ml",deployment="we\\"ird",pool="a",x="we\\"ird"}'
    assert q["rate"] == 'sum(rate(reqs{namespace="ml"}[1m]))'


def test_custom_preset_errors():
    with pytest.raises(ValueError, match="needs both"):
        get_preset("custom", latency_query="x")
    with pytest.raises(ValueError, match="unknown placeholder \\$service"):
        get_preset("custom", latency_query="x{s=\"$service\"}", rate_query="y").query("latency", **LABELS)
    with pytest.raises(ValueError, match="unknown metrics preset 'prom'"):
        get_preset("prom")


def test_preset_names():
    assert PRESET_NAMES == ("forescale", "vllm", "triton", "torchserve", "custom")


@pytest.mark.parametrize("name, latency_query, has_buckets", [
    ("forescale", "", True),
    ("vllm", "", True),
    ("triton", "", False),       # a mean from counters: no histogram
    ("torchserve", "", False),
    ("forescale", "1000 * avg(my_latency{$selector})", False),  # the buckets belong to the latency it replaced
])
def test_the_histogram_buckets_come_with_the_presets_own_latency(name, latency_query, has_buckets):
    preset = get_preset(name, latency_query=latency_query)
    query = preset.query("latency_buckets", namespace="ml", deployment="chat", pool="a", window="1m")
    assert (query is not None) == has_buckets
    if query:
        assert query.startswith("sum by (le) (rate(") and "_bucket" in query
