"""PrometheusSource against a real Prometheus (Debian package), and against one that is down.

The server is started on 127.0.0.1 with a temporary config and storage; its
data is backfilled with `promtool tsdb create-blocks-from openmetrics` (two
hours of this project's own metrics, ending an hour ago), then it is stopped
by PID.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import numpy as np
import pytest

from forescale_devcluster.procs import free_port
from forescale_predictor import LATENCY_MS, RATE, MetricsUnavailable
from forescale_predictor.presets import get_preset
from forescale_predictor.prometheus_source import PrometheusSource

pytestmark = pytest.mark.skipif(
    shutil.which("prometheus") is None or shutil.which("promtool") is None,
    reason="prometheus/promtool not installed (apt-get install -y prometheus)",
)

LABELS = 'namespace="ml",deployment="chat",pool="a",precision="fp16"'
BUCKETS = (0.05, 0.1, 0.2, 0.5, 1.0)
SHARES = (0.2, 0.6, 0.9, 0.99, 1.0)  # cumulative share of requests under each bucket


def openmetrics(start: int, end: int, step: int = 15) -> str:
    """Counters, a latency histogram and a queue gauge for deployment ml/chat pool a."""
    requests, durations, queue = [], [], []
    total = 0.0
    for t in range(start, end, step):
        rate = 10 + 5 * math.sin((t - start) / 600)
        total += rate * step
        requests.append(f'forescale_requests_total{{{LABELS},code="200"}} {total} {t}')
        for b, share in zip(BUCKETS, SHARES):
            durations.append(f'forescale_request_duration_seconds_bucket{{{LABELS},stage="total",le="{b}"}} {total * share} {t}')
        durations.append(f'forescale_request_duration_seconds_bucket{{{LABELS},stage="total",le="+Inf"}} {total} {t}')
        durations.append(f'forescale_request_duration_seconds_count{{{LABELS},stage="total"}} {total} {t}')
        durations.append(f'forescale_request_duration_seconds_sum{{{LABELS},stage="total"}} {total * 0.08} {t}')
        queue.append(f"forescale_queue_depth{{{LABELS}}} {int(rate)} {t}")
    return "\n".join(
        ["# TYPE forescale_requests counter", *requests,
         "# TYPE forescale_request_duration_seconds histogram", *durations,
         "# TYPE forescale_queue_depth gauge", *queue, "# EOF"]
    ) + "\n"


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    """(url, start, end) of a running Prometheus holding two hours of data."""
    root: Path = tmp_path_factory.mktemp("prometheus")
    end = int(time.time()) - 3600
    start = end - 2 * 3600
    (root / "data.om").write_text(openmetrics(start, end))
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(root / "data.om"), str(root / "tsdb")],
                   check=True, capture_output=True, timeout=60)
    (root / "prometheus.yml").write_text("global:\n  scrape_interval: 15s\nscrape_configs: []\n")
    port = free_port()
    proc = subprocess.Popen(
        ["prometheus", f"--config.file={root / 'prometheus.yml'}", f"--storage.tsdb.path={root / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=30d"],
        stdout=subprocess.DEVNULL, stderr=(root / "prometheus.log").open("w"),
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.time() > deadline:
                pytest.fail(f"prometheus did not start: {(root / 'prometheus.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield url, start, end
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_history_reads_latency_rate_and_queue(prometheus):
    url, start, end = prometheus
    source = PrometheusSource(url, "forescale", timeout=5)
    h = source.history("ml", "chat", "a", start=start + 600, end=end - 60, step=15, quantile=0.99, window="1m")
    assert h.step_seconds == 15
    assert set(h.features) == {LATENCY_MS, RATE, "queue_depth"}
    rate = h.features[RATE]
    assert np.nanmin(rate) > 4 and np.nanmax(rate) < 16  # 10 +- 5 req/s
    latency = h.features[LATENCY_MS]
    assert np.nanmedian(latency) == pytest.approx(500, rel=0.02)  # 99% of requests lie under 0.5 s
    assert np.isfinite(latency).mean() > 0.95


def test_current_values(prometheus):
    url, start, end = prometheus
    source = PrometheusSource(url, "forescale")
    # instant queries at "now" see no data (it ends an hour ago): a clear error, not a crash
    with pytest.raises(MetricsUnavailable, match="no sample"):
        source.current("ml", "chat", "a")


def test_empty_result_is_unavailable(prometheus):
    url, start, end = prometheus
    with pytest.raises(MetricsUnavailable, match="no data"):
        PrometheusSource(url, "forescale").history("ml", "other", start=start, end=end, step=60)


def test_query_error_is_unavailable(prometheus):
    url, start, end = prometheus
    source = PrometheusSource(url, "forescale")
    with pytest.raises(MetricsUnavailable, match="rejected the query"):
        source.query_range("sum(rate(forescale_requests_total[1m]", start=start, end=end, step=60)


def test_injection_attempt_stays_a_label_value(prometheus):
    url, start, end = prometheus
    with pytest.raises(MetricsUnavailable, match="no data"):
        PrometheusSource(url, "forescale").history('a"} or vector(1) #', "chat", start=start, end=end, step=60)


def test_several_series_are_refused(prometheus):
    url, start, end = prometheus
    with pytest.raises(MetricsUnavailable, match="returned 2 series"):
        PrometheusSource(url, "forescale").query_range(
            'forescale_request_duration_seconds_bucket{le=~"0.1|0.2"}', start=start, end=end, step=60)


def test_prometheus_down_is_unavailable():
    port = free_port()  # nothing listens here
    source = PrometheusSource(f"http://127.0.0.1:{port}", "forescale", timeout=2, retries=0)
    t0 = time.monotonic()
    with pytest.raises(MetricsUnavailable, match="cannot reach Prometheus .*connection refused"):
        source.history("ml", "chat", start=time.time() - 600, end=time.time(), step=15)
    assert time.monotonic() - t0 < 5


class _Handler(BaseHTTPRequestHandler):
    mode = "slow"

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.server.mode == "slow":
            time.sleep(3)
            return
        if self.server.mode == "html":
            body, status = b"<html>bad gateway</html>", 200
        elif self.server.mode == "nan":
            body = b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"NaN"],[2,"NaN"]]}]}}'
            status = 200
        elif self.server.mode == "garbage":
            body = b'{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"abc"]]}]}}'
            status = 200
        else:
            body, status = b'{"status":"error","errorType":"internal","error":"boom"}', 500
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_server():
    servers = []

    def start(mode: str) -> str:
        server = HTTPServer(("127.0.0.1", 0), _Handler)
        server.mode = mode
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("slow", "did not answer within 0.5 s"),
        ("error", "rejected the query|failed"),
        ("html", "unreadable answer"),
        ("nan", "only NaN"),
        ("garbage", "not a number"),
    ],
    ids=["timeout", "http-500", "html-body", "all-nan", "garbage"],
)
def test_misbehaving_servers(fake_server, mode, message):
    source = PrometheusSource(fake_server(mode), get_preset("forescale"), timeout=0.5, retries=0)
    with pytest.raises(MetricsUnavailable, match=message):
        source.history("ml", "chat", start=0, end=600, step=15)


def test_train_from_prometheus(prometheus, tmp_path, capsys):
    import json

    from forescale_cli.main import main

    url, start, end = prometheus
    out = tmp_path / "m.pt"
    code = main(["train", "--prometheus-url", url, "--query", "sum(rate(forescale_requests_total[1m]))", "--feature", "rate",
                 "--start", str(start), "--end", str(end), "--step", "60s", "--out", str(out), "--json", "--epochs", "2", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads(captured.out)
    assert result["features"] == ["rate"] and result["training_span"]["steps"] > 100
    assert out.stat().st_size > 1000


def _train_cli(argv, capsys):
    import json

    from forescale_cli.main import main

    code = main(["train", *argv])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 and captured.out.strip() else None), captured.err


def test_fine_tune_on_the_service_own_series_loads_as_a_model_ref(prometheus, tmp_path, capsys):
    from forescale_predictor import load_forecaster

    url, start, end = prometheus
    out = tmp_path / "chat.pt"
    code, result, err = _train_cli(["--prometheus", url, "--namespace", "ml", "--deployment", "chat", "--pool", "a",
                                    "--start", str(start), "--end", str(end), "--out", str(out), "--json", "--epochs", "2",
                                    "--quiet"], capsys)
    assert code == 0, err
    assert result["features"] == ["latency_ms", "rate"] and result["source"].endswith("ml/chat pool a (forescale preset)")
    assert result["training_span"]["steps"] > 400
    model = load_forecaster(out)  # what the operator does with the ConfigMap's bytes
    assert model.config == load_forecaster().config  # same shape and data contract as the packaged model
    assert model.metadata["fine_tuned_from"] == "predictor/scripts/train_default_model.py"


@pytest.mark.parametrize("argv, message", [
    # 5 minutes = 20 points of 15 s: less than one window of the packaged model (16 + 12 steps)
    (lambda s, e: ["--start", str(e - 300), "--end", str(e)], "fine-tuning needs at least 28 (one window"),
    (lambda s, e: ["--start", str(s), "--end", str(e), "--preset", "nope"], "--preset must be one of"),
    (lambda s, e: ["--start", str(s), "--end", str(e), "--query", "up"], "do not give --query"),
    (lambda s, e: ["--start", str(s), "--end", str(e), "--namespace", "other"], "has no data for"),
])
def test_fine_tune_bad_input_is_one_line_and_exit_2(prometheus, tmp_path, capsys, argv, message):
    url, start, end = prometheus
    code, _, err = _train_cli(["--prometheus", url, "--deployment", "chat", "--namespace", "ml", *argv(start, end),
                               "--out", str(tmp_path / "m.pt"), "--quiet"], capsys)
    assert code == 2 and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
