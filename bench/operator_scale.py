"""One operator, many InferenceDeployments: `python -m bench.operator_scale [--resources N] [--seconds S]`.

Issue 6's performance goal: with 1,000 InferenceDeployments in the emulated
API and a Prometheus answering for all of them, one operator process keeps
every timer on schedule at a 15 s step, with engine + forecast under 5 ms p99
per resource, under one core and under 1 GiB.

What runs (everything real except the Kubernetes API and the serving pods):
- the emulated API server (KMock, `ready_deployments=True`: Deployments report
  their replicas ready without pods), in this process;
- a synthetic exporter (a subprocess) that exports the `forescale_*` series of
  N deployments x 2 pools with the model server's own histogram buckets, a
  slow sine of load per deployment and latency that grows with each pod's
  load: the replicas the operator sets, read from the emulated API every 5 s
  (a closed loop; `--open-loop`: latency grows with the load alone);
- Debian's real Prometheus scraping it every 5 s;
- the real operator, `forescale operator -A`, as a subprocess.

Measured from outside: CPU share (utime+stime from /proc/<pid>/stat over the
measured window / wall), peak RSS (VmHWM), Prometheus queries per 15 s
(Prometheus' own `prometheus_http_requests_total{handler="/api/v1/query"}`);
from the operator's metrics: the decision time per resource
(`forescale_operator_decision_duration_seconds`: engine + forecast compute),
tick lag (`forescale_operator_tick_lag_seconds`: start past previous start +
step) and ticks run. Then, side by side in this process against the same
Prometheus, the per-resource source and the batched one read M resources
(queries and time per resource, and whether their values agree).

This machine's 2 cores are shared with other work (and, during the run, with
Prometheus, the exporter and the emulated API server): absolute figures are
noisy. Every goal is printed, whatever happened: met, MISSED with the reason read from the run's
data, or NOT MEASURED with the stage that failed (exit status 1 only then).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from forescale_devcluster.procs import free_port
from forescale_operator.children import LABEL_DEPLOYMENT, LABEL_POOL

ROOT = Path(__file__).resolve().parent.parent
STEP = 15
#: every resource's SLO target (its spec), which `within_slo` judges pool A's p99 against
SLO_MS = 200
GOAL_DECISION_P99 = 0.005
GOAL_CPU = 1.0
GOAL_RSS = 1024 ** 3
TEMPLATE = {"spec": {"containers": [{"name": "server", "image": "forescale/server:bench",
                                     "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}


# -- the synthetic exporter (runs in its own process) -------------------------

def latency_buckets() -> list[float]:
    """Every second bucket of the model server's (forescale_server/metrics.py: geometric, ratio 1.2,
    0.5 ms to 10 s): ratio 1.44, 29 bounds. The full set (57) makes 126,000 series whose page a
    Python exporter cannot build within Prometheus' 1 s scrape timeout on a shared core."""
    buckets, b = [], 0.0005
    while b < 10.0:
        buckets.append(round(b, 6))
        b *= 1.2
    buckets.append(10.0)
    return buckets[::2] + ([10.0] if buckets[::2][-1] != 10.0 else [])


class Exporter:
    """Cumulative counters for N deployments x 2 pools, advanced at each scrape by the time since the last.

    Two modes:
    - closed loop (`replicas_file` given, the default of the run): latency follows each pod's load, so the
      operator's scaling acts on what it reads, as on a real service. A pool of n pods carrying rate r runs
      each pod at u = r / (n mu); its median latency is s / (1 - u) (u capped at 0.95), the M/M/1 sojourn
      time's growth that the engine's latency model also assumes; the pods of each resource saturate at
      mu = 8-25 rps, which with s = 10-25 ms and a p99 of 3.2x the median (sigma 0.5) puts their capacity at
      the 200 ms SLO around the engine's 10 rps default prior, some above it and some below. The replicas
      are the Deployments' as the emulated API holds them, written to the file by the run every few seconds.
    - open loop (`--open-loop`, runs 1-20 of docs/operator-scale.md): latency grows with the swell's load
      whatever the operator does. No scaling ever brings it down, so the engine reads its pods as slowed and
      starts incidents that never end: the operator's busiest case, not its steady state.

    Written as exposition text directly: a prometheus_client registry builds
    one Python object per sample (~130,000 here), which costs seconds per
    scrape on a shared core; the text is the same format.
    """

    def __init__(self, resources: int, namespaces: int, seed: int = 0, replicas_file: Path | None = None) -> None:
        rng = np.random.default_rng(seed)
        self.names = [(f"bench-{i % namespaces}", f"svc-{i:04d}") for i in range(resources)]
        self.base = rng.uniform(2.0, 40.0, resources)  # requests/s on pool a
        self.phase = rng.uniform(0, 2 * math.pi, resources)
        self.median = rng.uniform(0.03, 0.09, resources)  # seconds at base load (open loop)
        self.replicas_file = replicas_file
        self.service = rng.uniform(0.010, 0.025, resources)  # an unloaded pod's median, seconds (closed loop)
        self.mu = rng.uniform(8.0, 25.0, resources)  # the rate at which a pod saturates (closed loop)
        self.replicas = np.tile([2.0, 1.0], (resources, 1))  # the pools' minReplicas until the file says more
        self.replicas_read = 0.0
        self.buckets = np.array(latency_buckets())
        n = resources
        self.counts = np.zeros((n, 2, self.buckets.size))
        self.total = np.zeros((n, 2))
        self.sum = np.zeros((n, 2))
        self.errors = np.zeros((n, 2))
        self.queued = np.zeros((n, 2))
        self.last = time.time()
        self.lock = threading.Lock()
        le = [f"{b:g}" for b in self.buckets] + ["+Inf"]
        self.bucket_prefix = []
        self.other_prefix = []
        for ns, dep in self.names:
            for pool, precision in (("a", "fp16"), ("b", "int8")):
                labels = f'namespace="{ns}",deployment="{dep}",pool="{pool}",precision="{precision}"'
                self.bucket_prefix.append([f'forescale_request_duration_seconds_bucket{{{labels},stage="total",le="{x}"}} ' for x in le])
                self.other_prefix.append(labels)
        self.index = {dep: i for i, (_, dep) in enumerate(self.names)}

    def read_replicas(self) -> None:
        """The pools' ready replicas as the run last wrote them ({deployment: [a, b]}); kept when unreadable."""
        try:
            mtime = self.replicas_file.stat().st_mtime
            if mtime == self.replicas_read:
                return
            written = json.loads(self.replicas_file.read_text())
        except (OSError, ValueError):
            return
        for dep, (a, b) in written.items():
            i = self.index.get(dep)
            if i is not None:
                self.replicas[i] = (max(a, 1), max(b, 1))  # a pool at 0 still answers B's tenth somewhere
        self.replicas_read = mtime

    def advance(self) -> None:
        now = time.time()
        dt, self.last = now - self.last, now
        load = 1.0 + 0.4 * np.sin(2 * math.pi * now / 900.0 + self.phase)  # a 15-minute swell
        rate = np.stack([self.base * load, 0.1 * self.base * load], axis=1)  # b takes a tenth
        if self.replicas_file is None:
            median = np.stack([self.median * load, 0.7 * self.median * load], axis=1)
        else:
            self.read_replicas()
            used = np.minimum(rate / (self.replicas * self.mu[:, None]), 0.95)
            unloaded = np.stack([self.service, 0.7 * self.service], axis=1)  # b runs int8
            median = unloaded / (1.0 - used)
        sigma = 0.5
        from scipy.special import ndtr

        z = (np.log(self.buckets)[None, None, :] - np.log(median)[:, :, None]) / sigma
        cdf = ndtr(z)
        new = rate * dt
        self.counts += new[:, :, None] * cdf
        self.total += new
        self.sum += new * median * math.exp(sigma ** 2 / 2)
        self.errors += new * 0.002
        if self.replicas_file is not None:  # Little's law on the wait alone: the requests queued in the pool
            self.queued = rate * (median - unloaded) * math.exp(sigma ** 2 / 2)

    def text(self) -> str:
        with self.lock:
            self.advance()
            lines = []
            n_pools = 2
            for i in range(len(self.names)):
                for p in range(n_pools):
                    k = i * n_pools + p
                    prefix = self.bucket_prefix[k]
                    counts = self.counts[i, p]
                    total = self.total[i, p]
                    lines.extend(f"{prefix[j]}{counts[j]:.3f}" for j in range(counts.size))
                    lines.append(f"{prefix[-1]}{total:.3f}")
                    labels = self.other_prefix[k]
                    lines.append(f'forescale_request_duration_seconds_count{{{labels},stage="total"}} {total:.3f}')
                    lines.append(f'forescale_request_duration_seconds_sum{{{labels},stage="total"}} {self.sum[i, p]:.4f}')
                    lines.append(f'forescale_requests_total{{{labels},code="200"}} {total - self.errors[i, p]:.3f}')
                    lines.append(f'forescale_requests_total{{{labels},code="500"}} {self.errors[i, p]:.3f}')
                    queue = int(total) % 5 if self.replicas_file is None else round(self.queued[i, p])
                    lines.append(f"forescale_queue_depth{{{labels}}} {queue}")
                    lines.append(f"forescale_quality_agreement{{{labels}}} {0.995 if p == 0 else 0.978}")
            return "\n".join(lines) + "\n"


def serve_exporter(port: int, resources: int, namespaces: int, every: float = 5.0,
                   replicas_file: Path | None = None) -> None:
    """`--exporter`: serve /metrics until killed. The page is rebuilt every `every` seconds in a
    thread and served as built, so a scrape never waits for the build (as a real exporter's cache)."""
    exporter = Exporter(resources, namespaces, replicas_file=replicas_file)
    page = [exporter.text().encode()]

    def rebuild() -> None:
        while True:
            time.sleep(every)
            page[0] = exporter.text().encode()

    threading.Thread(target=rebuild, daemon=True).start()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server interface
            body = page[0]
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def within_slo(prom, target_s: float = SLO_MS / 1000, window: str = "1m") -> dict:
    """How many resources' pool A p99 over the last `window` was within the SLO at the window's end: in the
    closed loop, what the operator's scaling achieved; in the open loop, what the clock allowed."""
    rows = prom.query(f'histogram_quantile(0.99, sum by (namespace, deployment, le) '
                      f'(rate(forescale_request_duration_seconds_bucket{{pool="a"}}[{window}])))')
    values = [float(r["value"][1]) for r in rows]
    return {"resources": len(values), "within": sum(1 for v in values if v <= target_s), "target_ms": target_s * 1000}


def write_replicas(api, path: Path) -> None:
    """The pools' ready replicas from the emulated API's store, {deployment: [a, b]}, replaced atomically
    (the exporter reads the file while it is written)."""
    replicas: dict[str, list[int]] = {}
    for dep in api.objects("deployments"):
        labels = dep["metadata"].get("labels") or {}
        name, pool = labels.get(LABEL_DEPLOYMENT), labels.get(LABEL_POOL)
        if name is None or pool not in ("a", "b"):
            continue
        ready = (dep.get("status") or {}).get("readyReplicas")
        count = ready if ready is not None else (dep.get("spec") or {}).get("replicas", 0)
        replicas.setdefault(name, [0, 0])["ab".index(pool)] = int(count or 0)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(replicas))
    tmp.replace(path)


def feed_replicas(api, path: Path, stop: threading.Event, every: float = 5.0) -> None:
    """Until `stop`: write the replicas every `every` s, the exporter's scrape interval (closed loop)."""
    while not stop.wait(every):
        try:
            write_replicas(api, path)
        except TimeoutError:  # the API server's loop is busy: the exporter keeps the last replicas
            pass


# -- measuring a process from outside ------------------------------------------

def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (and its reaped children), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def peak_rss(pid: int) -> int:
    """VmHWM in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


class ScrapeFailed(RuntimeError):
    """Every attempt to read a /metrics page failed."""


#: a busy operator answers its /metrics late (run 6: later than 10 s); wait this long per attempt, this many times
SCRAPE_TIMEOUT_S = 60.0
SCRAPE_ATTEMPTS = 3


def scrape(url: str, timeout: float = SCRAPE_TIMEOUT_S, attempts: int = SCRAPE_ATTEMPTS,
           took: list[float] | None = None) -> dict[str, float]:
    """A /metrics page as {series text: value} (comments dropped); retried, then ScrapeFailed.

    `took`, when given, gets the seconds the answered attempt took (how busy the operator's event loop was)."""
    last: Exception | None = None
    for attempt in range(1, attempts + 1):
        started = time.monotonic()
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                text = response.read().decode()
        except OSError as exc:  # URLError, a refused connection and a timeout are all OSErrors
            last = exc
            log(f"scrape of {url} failed (attempt {attempt} of {attempts}, {time.monotonic() - started:.0f} s): {exc}")
            time.sleep(2.0)
            continue
        if took is not None:
            took.append(time.monotonic() - started)
        break
    else:
        raise ScrapeFailed(f"{url}: {attempts} attempts of up to {timeout:g} s each failed, the last with: {last}")
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.rpartition(" ")
            try:
                out[key] = float(value)
            except ValueError:
                continue
    return out


def histogram(before: dict[str, float], after: dict[str, float], name: str) -> list[tuple[float, float]]:
    """[(upper bound, count in the window)] of an unlabelled histogram, cumulative."""
    rows = []
    for key, value in after.items():
        if key.startswith(name + "_bucket{le="):
            le = key.split('le="', 1)[1].rstrip('"}')
            rows.append((float(le), value - before.get(key, 0.0)))
    return sorted(rows)


def labelled_histograms(before: dict[str, float], after: dict[str, float], name: str,
                        label: str) -> dict[str, list[tuple[float, float]]]:
    """{label value: [(upper bound, count in the window)]} of a histogram with one label besides `le`."""
    rows: dict[str, list[tuple[float, float]]] = {}
    for key, value in after.items():
        if not key.startswith(name + "_bucket{"):
            continue
        labels = dict(part.split("=", 1) for part in key[len(name) + 8:].rstrip("}").split(","))
        value_of = labels.get(label, "").strip('"')
        le = float(labels.get("le", "nan").strip('"'))
        rows.setdefault(value_of, []).append((le, value - before.get(key, 0.0)))
    return {k: sorted(v) for k, v in rows.items()}


def quantile(rows: list[tuple[float, float]], q: float) -> float:
    """Linear interpolation inside the bucket holding quantile q (Prometheus' histogram_quantile)."""
    total = rows[-1][1] if rows else 0.0
    if total <= 0:
        return float("nan")
    rank, lo, below = q * total, 0.0, 0.0
    for le, cum in rows:
        if cum >= rank:
            if math.isinf(le):
                return lo
            return lo + (le - lo) * (rank - below) / max(cum - below, 1e-12)
        lo, below = le, cum
    return lo


def seconds(value: float, top: float = 30.0) -> str:
    """A histogram quantile for display; the open bucket above `top` has no upper bound."""
    return f">{top:g}" if value >= top else f"{value:.2f}"


def share_at_most(rows: list[tuple[float, float]], bound: float) -> float:
    total = rows[-1][1] if rows else 0.0
    hit = next((cum for le, cum in rows if abs(le - bound) < 1e-12), float("nan"))
    return hit / total if total else float("nan")


def _key(obj: dict) -> tuple:
    """An object's identity in the emulated API (namespace, name): an Event's name is unique per namespace."""
    return obj["metadata"].get("namespace"), obj["metadata"]["name"]


def prometheus_queries(prom_url: str) -> float:
    """Instant queries Prometheus has answered since it started (its own counter)."""
    metrics = scrape(prom_url + "/metrics")
    return sum(v for k, v in metrics.items() if k.startswith("prometheus_http_requests_total{") and 'handler="/api/v1/query"' in k)


# -- the run --------------------------------------------------------------------

def infd(namespace: str, name: str) -> dict:
    return {
        "apiVersion": "forescale.io/v1alpha1", "kind": "InferenceDeployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"slo": {"targetLatencyMs": SLO_MS},
                 "pools": {"a": {"minReplicas": 2, "maxReplicas": 20, "template": TEMPLATE},
                           "b": {"minReplicas": 1, "maxReplicas": 10, "template": TEMPLATE}},
                 "forecast": {"stepSeconds": STEP},
                 "traffic": {"router": "none"}},
    }


def wait_for(predicate, timeout: float, what: str, every: float = 2.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")


def compare_sources(prom_url: str, names: list[tuple[str, str]]) -> dict:
    """Read the same resources through the per-resource source and the batched one, side by side."""
    from forescale_operator.readings.prometheus import PrometheusMetricSource
    from forescale_operator.readings.prometheus_batched import BatchedPrometheusMetricSource
    from forescale_operator.spec import parse_spec

    spec = parse_spec(infd("x", "y")["spec"])
    out = {}
    samples = {}
    for label, source in (("per-resource", PrometheusMetricSource(prom_url)), ("batched", BatchedPrometheusMetricSource(prom_url))):
        started, cpu0 = time.perf_counter(), time.process_time()
        got = [source.sample(ns, name, spec, time.time()) for ns, name in names]
        wall = time.perf_counter() - started
        queries = sum(s.queries for s in got)
        out[label] = {"resources": len(names), "queries": queries, "seconds": wall,
                      "ms_per_resource": 1000 * wall / len(names), "queries_per_resource": queries / len(names),
                      "cpu_seconds_here": time.process_time() - cpu0, "available": sum(s.available for s in got)}
        samples[label] = got
    return out


def parity(prom, names: list[tuple[str, str]], quantile: float = 0.99, window: str = "30s") -> dict:
    """Grouped and per-resource PromQL evaluated at the same instant: do they give the same numbers?

    The per-resource queries are the preset's own (`forescale_predictor.presets.FORESCALE`);
    the grouped ones are `readings/grouped_queries.py`. Evaluating both at one
    `time=` removes the drift of data between two reads.
    """
    from forescale_operator.readings import grouped_queries as gq
    from forescale_predictor.presets import FORESCALE

    at = time.time() - 10
    grouped = dict(gq.base_queries(window), **gq.latency_queries(quantile, window))
    tables = {kind: gq.parse_vector(prom.query(q, at=at), pooled=gq.by_pool(kind), where=kind) for kind, q in grouped.items()}
    pairs = {"latency_pool": "latency", "rate_pool": "rate", "error_rate_pool": "error_rate", "queue_depth_pool": "queue_depth",
             "latency_total": "latency", "rate_total": "rate"}
    checked = equal = 0
    worst = 0.0
    for namespace, name in names:
        for kind, preset_kind in pairs.items():
            for pool in (("a", "b") if gq.by_pool(kind) else (None,)):
                query = FORESCALE.query(preset_kind, namespace=namespace, deployment=name, pool=pool, quantile=quantile, window=window)
                answer = prom.query(query, at=at)
                mine = answer[0]["value"][1] if answer else None
                key = (namespace, name, pool) if pool else (namespace, name)
                theirs = tables[kind].get(key)
                a = float(mine) if mine is not None else None
                checked += 1
                if a is None or theirs is None:
                    same = a is None and theirs is None
                elif math.isnan(a) or math.isnan(theirs):
                    same = math.isnan(a) and math.isnan(theirs)
                else:
                    diff = abs(a - theirs) / max(abs(a), abs(theirs), 1e-12)
                    worst = max(worst, diff)
                    same = diff <= 1e-9
                equal += same
    return {"values": checked, "equal": equal, "worst_relative_difference": worst}


def log_count(path: Path, text: str, start: int = 0, end: int | None = None) -> int:
    """Lines containing `text` in the operator's log between two byte offsets (the log grows while we read)."""
    try:
        with path.open("rb") as f:
            f.seek(start)
            data = f.read() if end is None else f.read(max(0, end - start))
    except OSError:
        return 0
    return data.count(text.encode())


def file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


#: the operator's log line when it stops acting in a namespace whose Lease it lost (registration.py)
LEASE_LOST = "Standing by: this operator no longer holds the Lease"


def operator_figures(result: dict, before: dict[str, float], after: dict[str, float]) -> None:
    """Ticks, decision time, tick lag and duration over the window, from two scrapes of the operator's /metrics."""
    ticks = sum(after.get(f'forescale_operator_ticks_total{{result="{r}"}}', 0) - before.get(f'forescale_operator_ticks_total{{result="{r}"}}', 0)
                for r in ("ok", "error"))
    result["ticks"] = ticks
    result["tick_errors"] = after.get('forescale_operator_ticks_total{result="error"}', 0) - before.get('forescale_operator_ticks_total{result="error"}', 0)
    decision = histogram(before, after, "forescale_operator_decision_duration_seconds")
    lag = histogram(before, after, "forescale_operator_tick_lag_seconds")
    duration = histogram(before, after, "forescale_operator_tick_duration_seconds")
    result["decision_p50_s"], result["decision_p99_s"] = quantile(decision, 0.5), quantile(decision, 0.99)
    result["decision_share_le_5ms"] = share_at_most(decision, 0.005)
    result["decisions"] = decision[-1][1] if decision else 0
    result["tick_lag_p50_s"], result["tick_lag_p99_s"] = quantile(lag, 0.5), quantile(lag, 0.99)
    result["tick_lag_share_le_1s"] = share_at_most(lag, 1.0)
    result["tick_duration_p50_s"], result["tick_duration_p99_s"] = quantile(duration, 0.5), quantile(duration, 0.99)
    # Why status was written: a pressing change (the engine acted, a condition flipped) or the periodic refresh.
    result["status_writes_by_cause"] = {
        cause: after.get(f'forescale_operator_status_writes_total{{cause="{cause}"}}', 0)
        - before.get(f'forescale_operator_status_writes_total{{cause="{cause}"}}', 0) for cause in ("pressing", "refresh")}
    # Where the tick's wall time went, by step (handlers/tick.py): a late tick's wait has a name.
    steps = labelled_histograms(before, after, "forescale_operator_tick_step_seconds", "step")
    result["tick_step_seconds"] = {step: {"p50": quantile(rows, 0.5), "p99": quantile(rows, 0.99),
                                          "count": rows[-1][1] if rows else 0.0}
                                   for step, rows in steps.items()}


def run(args: argparse.Namespace) -> dict:
    """Set up, reconcile, warm up, measure. Never raises past set-up: a stage that fails is recorded in
    `result["problems"]` and the stages after it measure what they still can (report() says what is missing)."""
    from forescale_devcluster.apiserver import start_apiserver
    from forescale_devcluster.prometheus_process import PrometheusProcess, find_prometheus

    if find_prometheus() is None:
        raise SystemExit("operator_scale: the prometheus binary is not installed (apt-get install -y prometheus)")
    namespaces = tuple(f"bench-{i}" for i in range(args.namespaces))
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen] = []
    problems: list[str] = []
    result: dict = {"resources": args.resources, "step_seconds": STEP, "problems": problems,
                    "load_average_start": os.getloadavg()}
    exporter_port = free_port()
    replicas_file = None if args.open_loop else work / "replicas.json"
    result["exporter"] = "open loop" if args.open_loop else "closed loop"
    if replicas_file is not None and replicas_file.exists():
        replicas_file.unlink()  # a previous run's replicas are not this one's
    procs.append(subprocess.Popen([sys.executable, "-m", "bench.operator_scale", "--exporter", str(exporter_port),
                                   "--resources", str(args.resources), "--namespaces", str(args.namespaces)]
                                  + ([] if replicas_file is None else ["--replicas-file", str(replicas_file)]), cwd=ROOT))
    feeding = threading.Event()
    prom = PrometheusProcess(static_jobs={"synthetic": [f"127.0.0.1:{exporter_port}"]}, scrape_interval="5s")
    api = None
    operator = None
    log_path = work / "operator.log"

    def problem(text: str) -> None:
        problems.append(text)
        log("problem: " + text)

    try:
        prom.start()
        series = 2 * args.resources
        try:
            wait_for(lambda: (prom.query_value("count(forescale_requests_total)") or 0) >= 2 * series, 90, "the first scrape")
        except TimeoutError as exc:
            problem(f"set-up: Prometheus did not scrape the exporter: {exc}")
            return result
        scraped = prom.query_value('count({__name__=~"forescale_.*"})')
        log(f"Prometheus scrapes {scraped:.0f} series of the exporter")
        api = start_apiserver(ROOT / "crds", ready_deployments=True, namespaces=namespaces)
        if replicas_file is not None:
            threading.Thread(target=feed_replicas, args=(api, replicas_file, feeding), daemon=True).start()
        started = time.perf_counter()
        for i in range(args.resources):
            api.put(infd(namespaces[i % len(namespaces)], f"svc-{i:04d}"))
        log(f"created {args.resources} InferenceDeployments in {time.perf_counter() - started:.1f} s")

        metrics_port = free_port()
        env = dict(os.environ, KUBECONFIG=str(api.kubeconfig_path), FORESCALE_PROMETHEUS_URL=prom.url, FORESCALE_PEERING="",
                   FORESCALE_METRICS_PORT=str(metrics_port), FORESCALE_HEALTH_PORT=str(free_port()),
                   FORESCALE_LOG_LEVEL="WARNING", OMP_NUM_THREADS="1")
        env.pop("FORESCALE_NAMESPACES", None)
        env.pop("FORESCALE_METRICS_BATCH", None)
        log_file = log_path.open("w")
        t_start = time.monotonic()
        operator = subprocess.Popen([str(Path(sys.executable).parent / "forescale"), "operator", "-A"], env=env,
                                    stdout=log_file, stderr=subprocess.STDOUT)
        metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"

        # Reconcile: every resource past Pending. Counted from the emulated API's store directly (no HTTP:
        # its listing competes with the operator for the same thread).
        def past_pending(last: int) -> int:
            try:
                items = api.objects("inferencedeployments")
            except TimeoutError:  # the API server's loop is busy: ask again at the next poll
                return last
            return sum(1 for o in items if (o.get("status") or {}).get("phase") not in (None, "Pending"))

        deadline, reconciled = time.monotonic() + args.startup_timeout, 0
        while time.monotonic() < deadline and operator.poll() is None:
            reconciled = past_pending(reconciled)
            if reconciled >= args.resources:
                break
            time.sleep(5.0)
        result["startup_seconds"] = time.monotonic() - t_start
        result["reconciled"] = reconciled
        result["lease_lost_during_startup"] = log_count(log_path, LEASE_LOST)
        if operator.poll() is not None:
            problem(f"the operator exited with {operator.returncode} during reconcile (log: {log_path})")
            return result
        if reconciled < args.resources:
            problem(f"reconcile: only {reconciled} of {args.resources} resources past Pending after "
                    f"{args.startup_timeout:g} s; measured anyway, so the figures include reconciling")
        else:
            log(f"operator: all {args.resources} resources reconciled and ticking after {result['startup_seconds']:.0f} s")

        # Warm up until every history holds the LSTM's lookback (16 x 15 s): before that it forecasts with a baseline.
        log(f"warming up for {args.warmup:.0f} s")
        time.sleep(args.warmup)
        others = {"prometheus": prom.proc.pid, "exporter": procs[0].pid, "bench (API server)": os.getpid()}
        took: list[float] = []
        try:
            before = scrape(metrics_url, took=took)
        except ScrapeFailed as exc:
            before = None
            problem(f"the operator's /metrics before the window: {exc}")
        requests0, log0 = len(api.request_log), file_size(log_path)
        events0 = {_key(e) for e in api.objects("events")}
        cpu0, t0 = cpu_seconds(operator.pid), time.monotonic()
        try:
            q0 = prometheus_queries(prom.url)
        except ScrapeFailed as exc:
            q0 = None
            problem(f"Prometheus' own /metrics before the window: {exc}")
        others0 = {k: cpu_seconds(pid) for k, pid in others.items()}
        log(f"measuring for {args.seconds:.0f} s")
        time.sleep(args.seconds)
        # Everything measured from outside first, at the window's end; the operator's page may take long.
        t1, cpu1, log1 = time.monotonic(), cpu_seconds(operator.pid), file_size(log_path)
        made = api.request_log.records()[requests0:]
        window = t1 - t0
        result["measured_seconds"] = window
        result["load_average_end"] = os.getloadavg()
        result["cpu_share"] = (cpu1 - cpu0) / window
        result["cpu_share_others"] = {k: (cpu_seconds(pid) - others0[k]) / window for k, pid in others.items()}
        result["peak_rss_bytes"] = peak_rss(operator.pid)
        result["ticks_expected"] = args.resources * window / STEP
        result["lease_lost_in_window"] = log_count(log_path, LEASE_LOST, log0, log1)
        result["tick_failures_logged_in_window"] = log_count(log_path, "tick failed", log0, log1)
        # Every request the API server answered in the window (the operator's own client and kopf's).
        result["api_requests"] = len(made)
        result["api_requests_by_kind"] = dict(Counter(
            f"{r.verb} {r.resource}{'/' + r.subresource if r.subresource else ''}" for r in made).most_common())
        # What the events of the window say (each one is a request): which of the engine's reasons cost the most.
        result["events_by_reason"] = dict(Counter(
            e.get("reason") for e in api.objects("events") if _key(e) not in events0).most_common())
        try:
            q1 = prometheus_queries(prom.url)
        except ScrapeFailed as exc:
            q1 = None
            problem(f"Prometheus' own /metrics after the window: {exc}")
        if q0 is not None and q1 is not None:
            result["prometheus_queries"] = q1 - q0
            result["prometheus_queries_per_15s"] = (q1 - q0) / window * STEP
        try:
            after = scrape(metrics_url, took=took)
        except ScrapeFailed as exc:
            after = None
            problem(f"the operator's /metrics after the window: {exc}")
        result["operator_scrape_seconds"] = took
        if before is not None and after is not None:
            operator_figures(result, before, after)
            result["api_requests_per_tick"] = len(made) / max(result["ticks"], 1)
        try:
            result["within_slo"] = within_slo(prom)
        except Exception as exc:  # noqa: BLE001 - a detail of the report, not a figure of the goals
            problem(f"reading the pools' p99 from Prometheus: {exc}")
        log("measured: " + json.dumps(result))
        try:
            models: dict[str, int] = {}
            for obj in api.objects("inferencedeployments"):
                model = ((obj.get("status") or {}).get("forecast") or {}).get("model") or "none"
                models[model] = models.get(model, 0) + 1
            result["forecast_models"] = models
        except Exception as exc:  # noqa: BLE001 - a detail of the report, not a figure of the goals
            problem(f"reading the forecast models from status: {exc}")
        result["operator_alive"] = operator.poll() is None
        if args.compare:
            names = [(namespaces[i % len(namespaces)], f"svc-{i:04d}") for i in range(min(args.compare, args.resources))]
            try:
                result["compare"] = compare_sources(prom.url, names)
                result["parity"] = parity(prom, names[:20])
            except Exception as exc:  # noqa: BLE001 - the side-by-side is not a goal figure; keep the rest
                problem(f"side by side of the metric sources: {exc}")
        return result
    except Exception as exc:  # noqa: BLE001 - whatever is measured so far is still reported
        problem(f"the run stopped: {type(exc).__name__}: {exc}")
        return result
    finally:
        feeding.set()
        if operator is not None and operator.poll() is None:
            operator.terminate()
            try:
                operator.wait(20)
            except subprocess.TimeoutExpired:
                operator.kill()
        if api is not None:
            api.stop()
        prom.stop()
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


GOAL_TICKS_RUN = 0.99
GOAL_API_PER_TICK = 1.0


def goals(r: dict) -> list[tuple[str, str, str, str, str]]:
    """The issue's goals: (measure, measured, goal, MET / MISSED / NOT MEASURED, why) — every row, whatever happened."""
    why_missing = "; ".join(r.get("problems") or []) or "not reached"
    rows = []

    def row(name: str, value: float | None, shown: str, goal: str, met: bool | None, why: str) -> None:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            rows.append((name, "-", goal, "NOT MEASURED", why_missing))
        else:
            rows.append((name, shown, goal, "met" if met else "MISSED", "" if met else why))

    ticks, due = r.get("ticks"), r.get("ticks_expected")
    share = ticks / due if ticks is not None and due else None
    others = r.get("cpu_share_others") or {}
    row("due ticks run (a tick more than a step late is skipped)", share,
        f"{share:.1%} ({ticks:.0f} of {due:.0f})" if share is not None else "", ">= 99%",
        share is not None and share >= GOAL_TICKS_RUN,
        (f"tick lag p50 {seconds(r.get('tick_lag_p50_s', float('nan')))} s, p99 {seconds(r.get('tick_lag_p99_s', float('nan')))} s; "
         f"tick wall p50 {seconds(r.get('tick_duration_p50_s', float('nan')))} s; "
         f"slowest step at p50: {slowest_step(r)}; "
         f"API server (the bench's process) {others.get('bench (API server)', float('nan')):.2f} core, "
         f"operator {r.get('cpu_share', float('nan')):.2f} core; "
         f"Lease lost {r.get('lease_lost_in_window', 0)} times in the window; {r.get('tick_errors', 0):.0f} tick errors"))
    per_tick = r.get("api_requests_per_tick")
    kinds = r.get("api_requests_by_kind") or {}
    top = ", ".join(f"{k} {v / max(ticks or 1, 1):.2f}" for k, v in list(kinds.items())[:4])
    mode = r.get("exporter", "open loop")  # runs before the closed loop existed were open loop
    row(f"API requests per tick ({mode}; every request the API answered / ticks run)", per_tick,
        f"{per_tick:.2f}" if per_tick is not None else "", "<= 1", per_tick is not None and per_tick <= GOAL_API_PER_TICK,
        f"per tick: {top}" + status_causes(r, ticks))
    p99 = r.get("decision_p99_s")
    row("decision time (engine + forecast, thread CPU) p99", p99, f"{p99 * 1000:.2f} ms" if p99 is not None else "",
        "< 5 ms", p99 is not None and p99 < GOAL_DECISION_P99,
        f"{100 * r.get('decision_share_le_5ms', float('nan')):.1f}% of decisions within 5 ms; forecast models "
        + ", ".join(f"{k}: {v}" for k, v in sorted((r.get("forecast_models") or {}).items())))
    rss = r.get("peak_rss_bytes")
    row("operator peak memory (VmHWM)", rss, f"{rss / 2 ** 20:.0f} MiB" if rss is not None else "", "< 1 GiB",
        rss is not None and rss < GOAL_RSS, "")
    cpu = r.get("cpu_share")
    row("operator CPU over the window", cpu, f"{cpu:.2f} core" if cpu is not None else "", "< 1 core",
        cpu is not None and cpu < GOAL_CPU, "")
    return rows


def status_causes(r: dict, ticks: float | None) -> str:
    """'; status PATCHes per tick by cause: pressing 0.30, refresh 0.25', or '' from an operator without the counter."""
    causes = r.get("status_writes_by_cause") or {}
    if not any(causes.values()):
        return ""
    return "; status PATCHes per tick by cause: " + ", ".join(f"{k} {v / max(ticks or 1, 1):.2f}" for k, v in causes.items())


def slowest_step(r: dict) -> str:
    """The tick step with the longest median wall time, with it, or '-' before any was recorded."""
    steps = {k: v["p50"] for k, v in (r.get("tick_step_seconds") or {}).items() if not math.isnan(v["p50"])}
    if not steps:
        return "-"
    step = max(steps, key=steps.get)
    return f"{step} {seconds(steps[step])} s"


def report(r: dict) -> None:
    ms = 1000.0
    nan = float("nan")
    load = r.get("load_average_start"), r.get("load_average_end")
    print(f"\nOne operator, {r['resources']} InferenceDeployments, step {r['step_seconds']} s, "
          f"measured over {r.get('measured_seconds', 0):.0f} s after {r.get('startup_seconds', nan):.0f} s to reconcile "
          f"{r.get('reconciled', 0)}, exporter in {r.get('exporter', 'open loop')} (shared 2-core machine: noisy; load average "
          + " -> ".join(f"{x[0]:.1f}" for x in load if x) + ")")
    print("\nGoals:")
    rows = goals(r)
    width = max(len(x[0]) for x in rows)
    for name, value, goal, verdict, why in rows:
        print(f"  {name:<{width}}  {value:>22}  {goal:>8}  {verdict}" + (f": {why}" if why else ""))
    for text in r.get("problems") or []:
        print(f"  problem: {text}")
    print("\nDetails:")
    details = [
        ("decision p50 (engine+forecast)", f"{r.get('decision_p50_s', nan) * ms:.2f} ms"),
        ("decisions <= 5 ms", f"{100 * r.get('decision_share_le_5ms', nan):.1f} %"),
        ("tick errors", f"{r.get('tick_errors', nan):.0f}"),
        ("tick lag p50 / p99", f"{seconds(r.get('tick_lag_p50_s', nan))} / {seconds(r.get('tick_lag_p99_s', nan))} s"),
        ("ticks starting <= 1 s late", f"{100 * r.get('tick_lag_share_le_1s', nan):.1f} %"),
        ("tick wall p50 / p99", f"{seconds(r.get('tick_duration_p50_s', nan))} / {seconds(r.get('tick_duration_p99_s', nan))} s"),
        ("tick steps, wall p50 / p99", ", ".join(f"{k} {seconds(v['p50'])} / {seconds(v['p99'])} s"
                                                for k, v in (r.get("tick_step_seconds") or {}).items()) or "-"),
        ("Lease lost (reconcile / window)", f"{r.get('lease_lost_during_startup', 0)} / {r.get('lease_lost_in_window', 0)}"),
        ("operator /metrics answered in", ", ".join(f"{x:.1f} s" for x in r.get("operator_scrape_seconds") or []) or "-"),
        ("Prometheus queries per 15 s", f"{r.get('prometheus_queries_per_15s', nan):.1f}"),
        ("API requests in the window", f"{r.get('api_requests', nan):.0f}: "
         + ", ".join(f"{k} {v}" for k, v in list((r.get("api_requests_by_kind") or {}).items())[:6])),
        ("pool A p99 within the SLO at the end", (lambda w: f"{w['within']} of {w['resources']} resources "
                                                  f"(p99 over 1 m <= {w['target_ms']:.0f} ms)" if w else "-")(r.get("within_slo"))),
        ("events in the window by reason", ", ".join(f"{k} {v}" for k, v in list((r.get("events_by_reason") or {}).items())[:8]) or "-"),
        ("CPU share of the rest", ", ".join(f"{k} {v:.2f}" for k, v in (r.get("cpu_share_others") or {}).items())),
        ("forecast model in status", ", ".join(f"{k}: {v}" for k, v in sorted((r.get("forecast_models") or {}).items()))),
    ]
    width = max(len(a) for a, _ in details)
    for name, value in details:
        print(f"  {name:<{width}}  {value}")
    c = r.get("compare")
    if c:
        per, bat = c["per-resource"], c["batched"]
        print(f"\nReading {per['resources']} resources once, side by side against the same Prometheus:")
        print(f"  {'source':<14}{'queries':>9}{'per resource':>14}{'ms/resource':>13}{'available':>11}")
        for label in ("per-resource", "batched"):
            x = c[label]
            print(f"  {label:<14}{x['queries']:>9}{x['queries_per_resource']:>14.2f}{x['ms_per_resource']:>13.2f}{x['available']:>11}")
        print(f"  ratio per-resource / batched: queries {per['queries'] / max(bat['queries'], 1):.0f}x, "
              f"time {per['seconds'] / max(bat['seconds'], 1e-9):.1f}x")
    p = r.get("parity")
    if p:
        print(f"  same instant, grouped vs per-resource PromQL: {p['equal']} of {p['values']} values identical "
              f"(worst relative difference {p['worst_relative_difference']:.1e})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.operator_scale", description=__doc__.split("\n")[0])
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=120.0, help="measured window after the warm-up")
    parser.add_argument("--warmup", type=float, default=260.0,
                        help="seconds after every resource is reconciled before measuring (the LSTM needs 16 x 15 s of history)")
    parser.add_argument("--namespaces", type=int, default=5)
    parser.add_argument("--compare", type=int, default=100, help="resources to read side by side (0: skip)")
    parser.add_argument("--startup-timeout", type=float, default=600.0,
                        help="seconds to wait for every resource to leave Pending; past it, measured anyway (and said so)")
    parser.add_argument("--workdir", default="/tmp/forescale-operator-scale")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object on stdout")
    parser.add_argument("--open-loop", action="store_true",
                        help="latency follows the clock's swell, not the replicas (runs 1-20): the operator's busiest case")
    parser.add_argument("--exporter", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--replicas-file", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.resources < 1 or args.seconds <= 0 or args.namespaces < 1 or args.compare < 0:
        print("operator_scale: --resources and --namespaces must be >= 1, --seconds > 0, --compare >= 0", file=sys.stderr)
        return 2
    if args.exporter is not None:
        serve_exporter(args.exporter, args.resources, args.namespaces, replicas_file=args.replicas_file)
        return 0
    result = run(args)
    result["goals"] = [dict(zip(("measure", "measured", "goal", "verdict", "why"), row)) for row in goals(result)]
    if args.json:
        print(json.dumps(result))
    else:
        report(result)
    # 1 when a goal figure could not be measured (the table says which and why); a miss is a result, not a failure
    return 1 if any(g["verdict"] == "NOT MEASURED" for g in result["goals"]) else 0


if __name__ == "__main__":
    sys.exit(main())
