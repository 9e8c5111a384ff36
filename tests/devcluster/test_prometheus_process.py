"""The real Prometheus binary, started and stopped by PID, scraping file_sd targets."""

from __future__ import annotations

import os
import socket
import time

import pytest
from prometheus_client import CollectorRegistry, Gauge, start_http_server

from forescale_devcluster.podrunner_sd import ScrapeTarget, write_file_sd
from forescale_devcluster.procs import free_port
from forescale_devcluster.prometheus_process import (
    INSTALL_HINT, PrometheusNotInstalled, PrometheusProcess, PrometheusQueryError, find_prometheus,
)

pytestmark = pytest.mark.timeout(90)

needs_prometheus = pytest.mark.skipif(find_prometheus() is None,
                                      reason=f"prometheus is not installed ({INSTALL_HINT})")


def metrics_server(value: float, **labels: str) -> tuple[int, object]:
    """A real /metrics endpoint serving one gauge with the given labels."""
    registry = CollectorRegistry()
    gauge = Gauge("forescale_test_value", "A value to scrape.", list(labels), registry=registry)
    (gauge.labels(**labels) if labels else gauge).set(value)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    return port, server


def wait_value(prom: PrometheusProcess, promql: str, timeout: float = 20.0) -> list[dict]:
    deadline = time.monotonic() + timeout
    while True:
        result = prom.query(promql)
        if result:
            return result
        assert time.monotonic() < deadline, f"{promql} returned nothing within {timeout} s"
        time.sleep(0.3)


def port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@needs_prometheus
def test_scrapes_pods_and_static_jobs_answers_queries_and_stops(tmp_path):
    pod_port, pod_server = metrics_server(42, deployment="chat", pool="a", precision="fp16")
    gw_port, gw_server = metrics_server(7)
    sd = str(tmp_path / "pods.json")
    write_file_sd(sd, [ScrapeTarget(f"127.0.0.1:{pod_port}", "ml", "chat-a-x1", "chat", "a")])
    prom = PrometheusProcess(pod_sd_file=sd, static_jobs={"gateway": [], "operator": []}, scrape_interval="1s")
    try:
        url = prom.start()
        assert url == f"http://127.0.0.1:{prom.port}" and prom.running()
        (series,) = wait_value(prom, 'forescale_test_value{job="pods"}')
        # honor_labels: the server's own labels, the file_sd's pod/namespace, and no exported_* copies.
        assert series["metric"] | {} == {"__name__": "forescale_test_value", "deployment": "chat", "pool": "a",
                                         "precision": "fp16", "namespace": "ml", "pod": "chat-a-x1",
                                         "instance": f"127.0.0.1:{pod_port}", "job": "pods"}
        assert float(series["value"][1]) == 42
        # A static job's targets change without a restart.
        prom.set_targets("gateway", [f"127.0.0.1:{gw_port}"])
        wait_value(prom, 'forescale_test_value{job="gateway"}')
        assert prom.query_value('forescale_test_value{job="gateway"}') == 7
        assert prom.query_value("1 + 1") == 2
        assert prom.query_value('up{job="operator"}') is None
        up = prom.wait_for_targets_up("pods", 1, timeout=10)
        assert up[0]["labels"]["pod"] == "chat-a-x1"
        with pytest.raises(PrometheusQueryError, match="query 'sum\\(' failed"):
            prom.query("sum(")
        with pytest.raises(PrometheusQueryError, match="returned 2 series"):
            prom.query_value('{__name__="forescale_test_value"}')
        # Stopped with its data kept, it comes back on the same URL with the old samples.
        prom.stop(keep_data=True)
        with pytest.raises(PrometheusQueryError, match="unreachable"):
            prom.query("up")
        assert prom.start() == url
        assert float(prom.query('forescale_test_value{job="pods"}')[0]["value"][1]) == 42
        workdir, pid = prom.workdir, prom.proc.pid
    finally:
        prom.stop()
        pod_server.shutdown()
        gw_server.shutdown()
    assert not prom.running() and not port_open(prom.port) and not os.path.exists(workdir)
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z"
    with pytest.raises(PrometheusQueryError, match="unreachable"):
        prom.query("up")


@needs_prometheus
def test_a_port_in_use_is_reported_with_prometheus_own_words(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        prom = PrometheusProcess(port=busy.getsockname()[1])
        with pytest.raises(RuntimeError, match="Prometheus did not start") as info:
            prom.start(timeout=10)
    assert "address already in use" in str(info.value)
    assert prom.workdir is None and prom.proc is None


def test_missing_binary_names_the_install_command():
    with pytest.raises(PrometheusNotInstalled, match="apt-get install -y prometheus"):
        PrometheusProcess(binary="no-such-prometheus-binary").start()


@pytest.mark.parametrize("kwargs, message", [
    ({"scrape_interval": "1"}, "scrape_interval must be a Prometheus duration"),
    ({"scrape_interval": 2}, "scrape_interval must be a Prometheus duration"),
    ({"retention": "forever"}, "retention must be a Prometheus duration"),
    ({"static_jobs": {"bad job": []}}, "job name 'bad job' is not usable"),
    ({"static_jobs": {"pods": []}}, "'pods' is taken"),
])
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PrometheusProcess(**kwargs)


def test_unknown_static_job():
    with pytest.raises(ValueError, match="unknown job 'operator'"):
        PrometheusProcess(static_jobs={"gateway": []}).set_targets("operator", ["127.0.0.1:1"])


@pytest.mark.parametrize("interval, timeout", [("1s", "1s"), ("500ms", "500ms"), ("5s", "1s")])
def test_config_keeps_timeout_within_interval(tmp_path, interval, timeout):
    config = PrometheusProcess(pod_sd_file=str(tmp_path / "p.json"), scrape_interval=interval).config()
    assert config["global"]["scrape_timeout"] == timeout
    assert config["scrape_configs"][0]["honor_labels"] is True


@pytest.mark.parametrize("args, message", [
    (["--static", "gateway"], "JOB=HOST:PORT"),
    (["--scrape-interval", "soon"], "scrape_interval must be a Prometheus duration"),
])
def test_command_line_bad_input(capsys, args, message):
    from forescale_devcluster.prometheus_process import main

    try:
        code = main(args)
    except SystemExit as exc:  # argparse's own errors exit 2 too
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err
