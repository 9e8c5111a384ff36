"""Watches, discovery, Table responses, fault injection and the request log of the emulated API server."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

from pathlib import Path

import httpx
import pytest
import yaml

from forescale_devcluster.request_log import RequestLog

SERVICES = "/api/v1/namespaces/default/services"
INFDS = "/apis/forescale.io/v1alpha1/namespaces/default/inferencedeployments"


def service(name: str) -> dict:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": {"app": name}}, "spec": {}}


def collect_watch(url: str, params: dict, out: list, stop_after: int) -> None:
    with httpx.stream("GET", url, params={"watch": "true", **params}, timeout=10) as response:
        for line in response.iter_lines():
            if line.strip():
                out.append(json.loads(line))
                if len(out) >= stop_after:
                    return


def test_watch_resumes_from_a_resource_version(apiserver, http):
    first = http.post(SERVICES, json=service("one")).json()
    events: list = []
    watcher = threading.Thread(target=collect_watch, args=(apiserver.url + SERVICES,
                               {"resourceVersion": first["metadata"]["resourceVersion"]}, events, 2))
    watcher.start()
    http.post(SERVICES, json=service("two"))
    http.delete(f"{SERVICES}/one")
    watcher.join(10)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "two"), ("DELETED", "one")]


def test_watch_without_version_starts_with_the_current_objects_and_filters_labels(apiserver, http):
    http.post(SERVICES, json=service("one"))
    http.post(SERVICES, json=service("two"))
    events: list = []
    collect_watch(apiserver.url + SERVICES, {"labelSelector": "app=two", "timeoutSeconds": "1"}, events, 5)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "two")]


def test_dropped_watches_end_their_streams(apiserver, http):
    done = threading.Event()

    def watch() -> None:
        with httpx.stream("GET", apiserver.url + SERVICES, params={"watch": "true", "resourceVersion": "1"},
                          timeout=20) as response:
            for _ in response.iter_lines():
                pass
        done.set()

    threading.Thread(target=watch, daemon=True).start()
    assert not done.wait(0.5)
    apiserver.drop_watches()
    assert done.wait(5)


def test_too_old_resource_version_answers_410_in_the_stream(apiserver, http):
    for i in range(3):
        http.post(SERVICES, json=service(f"s{i}"))
    apiserver.server.changes.compact(1)  # as if the server had compacted its history
    events: list = []
    collect_watch(apiserver.url + SERVICES, {"resourceVersion": "1"}, events, 1)
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410


def test_discovery_lists_served_kinds_and_forgets_unserved_ones(apiserver, http):
    groups = {g["name"] for g in http.get("/apis").json()["groups"]}
    assert {"apps", "forescale.io", "gateway.networking.k8s.io", "networking.istio.io", "kopf.dev"} <= groups
    infd = next(r for r in http.get("/apis/forescale.io/v1alpha1").json()["resources"] if r["name"] == "inferencedeployments")
    assert infd["shortNames"] == ["infd"] and "forescale" in infd["categories"] and infd["namespaced"] is True
    assert any(r["name"] == "inferencedeployments/status" for r in http.get("/apis/forescale.io/v1alpha1").json()["resources"])
    apiserver.set_served("httproutes", False)
    assert "gateway.networking.k8s.io" not in {g["name"] for g in http.get("/apis").json()["groups"]}
    assert http.get("/apis/gateway.networking.k8s.io/v1").status_code == 404
    assert http.get("/apis/gateway.networking.k8s.io/v1/namespaces/default/httproutes").status_code == 404


def test_table_response_uses_the_crds_printer_columns(apiserver, http):
    obj = yaml.safe_load((Path(__file__).parents[2] / "crds" / "examples" / "minimal.yaml").read_text())
    obj["metadata"] = {"name": "chat"}
    assert http.post(INFDS, json=obj).status_code == 201
    status = {"phase": "Stable", "pools": {"a": {"summary": "2/2"}, "b": {"summary": "1/1"}}, "weights": {"b": 30}}
    http.patch(f"{INFDS}/chat/status", json={"status": status}, headers={"Content-Type": "application/merge-patch+json"})
    table = http.get(INFDS, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Phase", "A", "B", "Weight-B", "Forecast-p99", "SLO", "Age"]
    assert table["rows"][0]["cells"][:7] == ["chat", "Stable", "2/2", "1/1", 30, None, 200]
    assert table["rows"][0]["cells"][7].endswith("s")


@pytest.mark.parametrize("status, verbs, retry_after", [(409, {"create"}, None), (429, None, "1"), (500, {"create"}, None)])
def test_injected_faults_answer_the_next_n_requests(apiserver, http, status, verbs, retry_after):
    apiserver.inject_faults(status, count=2, resource="services", verbs=verbs)
    answers = [http.post(SERVICES, json=service(f"s{i}")) for i in range(3)]
    assert [a.status_code for a in answers] == [status, status, 201]
    assert answers[0].headers.get("Retry-After") == retry_after
    assert answers[0].json()["code"] == status


def test_fault_plan_rejects_non_errors(apiserver):
    with pytest.raises(ValueError, match="HTTP error status"):
        apiserver.inject_faults(200)


def test_request_log_records_what_rbac_sees(apiserver, http, tmp_path):
    http.post(SERVICES, json=service("one"))
    http.get(SERVICES)
    http.patch(f"{INFDS}/missing/status", json={}, headers={"Content-Type": "application/merge-patch+json"})
    keys = apiserver.request_log.rbac_keys()
    assert ("create", "", "services", "", "default") in keys
    assert ("list", "", "services", "", "default") in keys
    assert ("patch", "forescale.io", "inferencedeployments", "status", "default") in keys
    statuses = {(r.verb, r.resource): r.status for r in apiserver.request_log}
    assert statuses[("create", "services")] == 201 and statuses[("patch", "inferencedeployments")] == 404


def test_request_log_file_round_trips(tmp_path):
    from forescale_devcluster.request_log import RequestRecord
    log = RequestLog(tmp_path / "log.jsonl")
    log.append(RequestRecord("get", "apps", "deployments", "", "ml", "x", 200))
    assert RequestLog.read(tmp_path / "log.jsonl") == log.records()


def test_cli_rejects_a_bad_port_with_a_clear_message():
    result = subprocess.run([sys.executable, "-m", "forescale_devcluster.apiserver", "--port", "70000"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--port must be 0..65535" in result.stderr


def test_cli_rejects_a_missing_crd_folder(tmp_path):
    result = subprocess.run([sys.executable, "-m", "forescale_devcluster.apiserver", "--crds", str(tmp_path / "nope")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "does not exist" in result.stderr


def test_watch_in_table_form_for_kubectl_get_w(apiserver, http):
    http.post(SERVICES, json=service("one"))
    events: list = []
    with httpx.stream("GET", apiserver.url + SERVICES, params={"watch": "true", "timeoutSeconds": "1"},
                      headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, timeout=10) as response:
        for line in response.iter_lines():
            if line.strip():
                events.append(json.loads(line))
    assert events[0]["type"] == "ADDED" and events[0]["object"]["kind"] == "Table"
    assert events[0]["object"]["rows"][0]["cells"][:3] == ["one", "ClusterIP", events[0]["object"]["rows"][0]["cells"][2]]


def test_cli_serves_until_terminated_and_writes_a_kubeconfig(tmp_path, crds_dir):
    import time

    kubeconfig, log = tmp_path / "kubeconfig", tmp_path / "requests.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "forescale_devcluster.apiserver", "--crds", str(crds_dir),
                                "--kubeconfig", str(kubeconfig), "--request-log", str(log)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert "serving the emulated Kubernetes API at http://127.0.0.1:" in line
        url = line.split(" at ")[1].split(";")[0]
        assert yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"] == url
        assert httpx.get(url + "/apis/forescale.io/v1alpha1/inferencedeployments", timeout=5).status_code == 200
        deadline = time.monotonic() + 5
        while not log.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert RequestLog.read(log)[-1].resource == "inferencedeployments"
    finally:
        process.terminate()
        assert process.wait(10) == 0
