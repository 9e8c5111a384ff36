"""Pure pieces of the emulated API server: URL paths, selectors, JSONPath and ages."""

from __future__ import annotations

import pytest

from forescale_devcluster.paths import ApiPath, parse_api_path
from forescale_devcluster.selectors import SelectorError, field_selector, label_selector
from forescale_devcluster.tables import human_duration, json_path


@pytest.mark.parametrize("path, expected", [
    ("/api", ApiPath("discovery")),
    ("/apis", ApiPath("groups")),
    ("/apis/apps", ApiPath("discovery", group="apps")),
    ("/api/v1", ApiPath("discovery", group="", version="v1")),
    ("/api/v1/namespaces", ApiPath("resource", "", "v1", "namespaces")),
    ("/api/v1/namespaces/ml", ApiPath("resource", "", "v1", "namespaces", None, "ml")),
    ("/api/v1/namespaces/ml/services", ApiPath("resource", "", "v1", "services", "ml")),
    ("/apis/apps/v1/namespaces/ml/deployments/chat-a/scale",
     ApiPath("resource", "apps", "v1", "deployments", "ml", "chat-a", "scale")),
    ("/apis/apps/v1/deployments", ApiPath("resource", "apps", "v1", "deployments")),
    ("/version", None),
    ("/metrics", None),
])
def test_parse_api_path(path, expected):
    assert parse_api_path(path) == expected


@pytest.mark.parametrize("selector, labels, expected", [
    ("", {}, True),
    ("a=b", {"a": "b"}, True),
    ("a==b", {"a": "c"}, False),
    ("a!=b", {}, True),
    ("a in (x, y),b", {"a": "y", "b": ""}, True),
    ("a notin (x)", {"a": "x"}, False),
    ("!a", {"a": "1"}, False),
    ("forescale.io/pool=a", {"forescale.io/pool": "a"}, True),
])
def test_label_selector(selector, labels, expected):
    assert label_selector(selector)(labels) is expected


def test_label_selector_rejects_garbage():
    with pytest.raises(SelectorError, match="unable to parse"):
        label_selector("a b c")


@pytest.mark.parametrize("selector, expected", [
    ("metadata.name=x", True), ("metadata.name!=x", False), ("involvedObject.uid=u", True), ("spec.x=1", False)])
def test_field_selector(selector, expected):
    obj = {"metadata": {"name": "x"}, "involvedObject": {"uid": "u"}}
    assert field_selector(selector)(obj) is expected


@pytest.mark.parametrize("path, expected", [
    (".status.phase", "Stable"), (".status.pools.a.readyReplicas", 2), (".status.missing.deep", None),
    (".spec.items[1]", "b"), ("{.spec.items[5]}", None), (".metadata.labels.forescale\\.io/pool", "a")])
def test_json_path(path, expected):
    obj = {"status": {"phase": "Stable", "pools": {"a": {"readyReplicas": 2}}}, "spec": {"items": ["a", "b"]},
           "metadata": {"labels": {"forescale.io/pool": "a"}}}
    assert json_path(obj, path) == expected


@pytest.mark.parametrize("seconds, text", [(5, "5s"), (119, "119s"), (312, "5m12s"), (600, "10m"),
                                           (3 * 3600 + 240, "3h4m"), (30 * 3600, "30h"), (2 * 86400 + 5 * 3600, "2d5h"),
                                           (400 * 86400, "400d")])
def test_human_duration(seconds, text):
    assert human_duration(seconds) == text
