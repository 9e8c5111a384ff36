"""FORESCALE_* settings: defaults, parsing, and a clear error per bad value."""

from __future__ import annotations

import pytest

from forescale_operator.config import Config, ConfigError, load_config


def test_defaults():
    config = load_config({})
    assert config == Config()
    assert (config.metrics_port, config.health_port, config.peering, config.namespaces) == (8080, 8081, "forescale", ())


def test_values_are_parsed():
    config = load_config({
        "FORESCALE_PROMETHEUS_URL": "http://prom:9090", "FORESCALE_NAMESPACES": "ml, serving,",
        "FORESCALE_LOG_LEVEL": "debug", "FORESCALE_ADMIN_TOKEN_SECRET": "forescale-admin/token",
        "FORESCALE_METRICS_PORT": "9000", "FORESCALE_HEALTH_PORT": "9001", "FORESCALE_PEERING": "ha",
        "POD_NAME": "forescale-operator-abc", "FORESCALE_MIN_LOOP_SECONDS": "0.5",
        "FORESCALE_DIAGNOSIS_NOW_SECONDS": "20", "FORESCALE_DIAGNOSIS_BEFORE_SECONDS": "90"})
    assert config.prometheus_url == "http://prom:9090" and config.namespaces == ("ml", "serving")
    assert config.log_level == "DEBUG" and config.admin_token_secret == ("forescale-admin", "token")
    assert config.admin_token_copy_from is None
    assert load_config({"FORESCALE_ADMIN_TOKEN_SECRET": "forescale-admin-token/token",
                        "FORESCALE_ADMIN_TOKEN_COPY_FROM": "forescale"}).admin_token_copy_from == "forescale"
    assert (config.metrics_port, config.health_port, config.peering, config.min_loop_seconds) == (9000, 9001, "ha", 0.5)
    assert (config.diagnosis_now_seconds, config.diagnosis_before_seconds) == (20, 90)
    assert (load_config({}).diagnosis_now_seconds, load_config({}).diagnosis_before_seconds) == (30, 600)


@pytest.mark.parametrize("env, message", [
    ({"FORESCALE_PROMETHEUS_URL": "prom:9090"}, "FORESCALE_PROMETHEUS_URL: must be an http(s) URL"),
    ({"FORESCALE_NAMESPACES": "ml,Bad_NS"}, "FORESCALE_NAMESPACES: 'Bad_NS' is not a valid namespace name"),
    ({"FORESCALE_LOG_LEVEL": "chatty"}, "FORESCALE_LOG_LEVEL: must be one of"),
    ({"FORESCALE_ADMIN_TOKEN_SECRET": "only-a-name"}, "FORESCALE_ADMIN_TOKEN_SECRET: must be <secret name>/<key>"),
    ({"FORESCALE_ADMIN_TOKEN_SECRET": "a/b/c"}, "FORESCALE_ADMIN_TOKEN_SECRET: must be <secret name>/<key>"),
    ({"FORESCALE_ADMIN_TOKEN_COPY_FROM": "forescale"}, "FORESCALE_ADMIN_TOKEN_COPY_FROM: needs FORESCALE_ADMIN_TOKEN_SECRET"),
    ({"FORESCALE_ADMIN_TOKEN_SECRET": "t/token", "FORESCALE_ADMIN_TOKEN_COPY_FROM": "Bad_NS"},
     "FORESCALE_ADMIN_TOKEN_COPY_FROM: 'Bad_NS' is not a valid namespace name"),
    ({"FORESCALE_METRICS_PORT": "http"}, "FORESCALE_METRICS_PORT: must be a port number"),
    ({"FORESCALE_HEALTH_PORT": "70000"}, "FORESCALE_HEALTH_PORT: must be 1..65535"),
    ({"FORESCALE_METRICS_PORT": "9000", "FORESCALE_HEALTH_PORT": "9000"}, "must differ from FORESCALE_METRICS_PORT"),
    ({"FORESCALE_PEERING": "Not A Name"}, "FORESCALE_PEERING: 'Not A Name' is not a valid object name"),
    ({"FORESCALE_PRIORITY": "high"}, "FORESCALE_PRIORITY: must be an integer"),
    ({"FORESCALE_MIN_LOOP_SECONDS": "0"}, "FORESCALE_MIN_LOOP_SECONDS: must be 0.1..3600"),
    ({"FORESCALE_MIN_LOOP_SECONDS": "fast"}, "FORESCALE_MIN_LOOP_SECONDS: must be a number"),
    ({"FORESCALE_DIAGNOSIS_NOW_SECONDS": "5"}, "FORESCALE_DIAGNOSIS_NOW_SECONDS: must be 10..3600"),
    ({"FORESCALE_DIAGNOSIS_NOW_SECONDS": "1m"}, "FORESCALE_DIAGNOSIS_NOW_SECONDS: must be a whole number"),
    ({"FORESCALE_DIAGNOSIS_NOW_SECONDS": "120", "FORESCALE_DIAGNOSIS_BEFORE_SECONDS": "60"},
     "FORESCALE_DIAGNOSIS_BEFORE_SECONDS: must be 120..86400"),
])
def test_bad_values_name_the_variable(env, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(env)


@pytest.mark.parametrize("pods", [("forescale-operator-7d9f-abcde", "forescale-operator-7d9f-fghij"),
                                  ("op-0", "op-1")])
def test_replicas_get_distinct_priorities_from_their_pod_names(pods):
    first, second = (load_config({"POD_NAME": p}).peering_priority for p in pods)
    assert first != second and first > 0 and second > 0


def test_explicit_priority_wins():
    assert load_config({"POD_NAME": "x", "FORESCALE_PRIORITY": "7"}).peering_priority == 7


@pytest.mark.parametrize("spec, expected", [
    ({"forecast": {"stepSeconds": 5}}, 5.0), ({"forecast": {"stepSeconds": 0.2}}, 1.0), ({}, 15.0),
    ({"forecast": None}, 15.0), ({"forecast": {"stepSeconds": "fast"}}, 15.0), ({"forecast": {"stepSeconds": True}}, 15.0)])
def test_loop_interval_follows_the_spec_with_a_floor(spec, expected):
    from forescale_operator.registration import _step_seconds

    assert _step_seconds({"spec": spec}, load_config({})) == expected


def test_empty_peering_means_standalone():
    assert load_config({"FORESCALE_PEERING": ""}).peering is None
    assert load_config({"FORESCALE_PEERING": "  "}).peering is None
    assert load_config({}).peering == "forescale"
