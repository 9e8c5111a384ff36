"""A tiny Prometheus stand-in for the odd answers a real one rarely gives on demand.

It speaks just enough of `/api/v1/query` for `prometheus-api-client`:
healthy answers come from `latency_ms` / `rate`; `mode` switches to a fault:

| mode | answer |
|---|---|
| ok | one sample per query, by what the query asks for (a histogram's buckets: one per bound) |
| nan | `"NaN"` as every value |
| negative | `-50` as every value (a broken exporter) |
| negative-rate | `-50` for the rates, the rest as healthy |
| empty | `result: []` |
| garbage | an HTML page with status 200 (a proxy's error page) |
| wrong-shape | `result` is an object, not a list |
| not-a-number | values that are not numbers (`"abc"`) |
| two-series | two series where one is expected |
| http-500 | a 500 with a JSON error body |
| slow | waits `slow_seconds` before answering (longer than the client's timeout) |

`stop()` closes the listening socket (connection refused: Prometheus down);
`start()` opens it again on the same port.

The operator's grouped queries (`sum by (namespace, deployment[, pool])`, what a
real operator process sends for the operator-wide Prometheus URL) get one series
per resource in `resources` (and per pool), labelled as Prometheus would.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

MODES = ("ok", "nan", "negative", "negative-rate", "empty", "garbage", "wrong-shape", "not-a-number", "two-series", "http-500", "slow")


class FakePrometheus:
    def __init__(self) -> None:
        self.mode = "ok"
        self.latency_ms = 60.0
        self.rate = 40.0
        self.slow_seconds = 1.0
        self.queries: list[str] = []
        #: (namespace, deployment) of the resources the grouped queries answer for
        self.resources: list[tuple[str, str]] = [("default", "chat")]
        self.port = 0
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "FakePrometheus":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep the test output clean
                pass

            def do_GET(self) -> None:
                self._answer(parse_qs(urlparse(self.path).query).get("query", [""])[0])

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                self._answer(form.get("query", [""])[0])

            def _answer(self, query: str) -> None:
                fake.queries.append(query)
                status, body, kind = fake.answer(query)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (the slow mode): that is the point

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def value_for(self, query: str, pool: str | None = None) -> float:
        pool_b = pool == "b" or (pool is None and 'pool="b"' in query)
        if "histogram_quantile" in query:
            return self.latency_ms if not pool_b else 30.0
        if "code=~" in query:
            return 0.0
        if "queue_depth" in query:
            return 0.0
        if "quality_agreement" in query:
            return 0.99
        return self.rate if not pool_b else 0.0

    def _buckets(self, query: str, now: float, value: str | None = None) -> list[dict]:
        """A latency histogram's buckets (every request within 0.1 s), one series per bound, per resource and
        pool for the grouped query; `value` overrides every bucket's rate (a fault)."""
        def series(labels: dict, pool: str | None) -> list[dict]:
            rate = value if value is not None else repr(self.value_for(query.replace("_bucket", ""), pool))
            return [{"metric": {**labels, "le": le}, "value": [now, rate]} for le in ("0.1", "+Inf")]
        if "by (namespace, deployment, pool, le" in query:
            return [s for ns, name in self.resources for pool in ("a", "b")
                    for s in series({"namespace": ns, "deployment": name, "pool": pool}, pool)]
        return series({}, None)

    def _grouped(self, query: str, now: float) -> list[dict] | None:
        """The answer to a grouped query, or None for a per-resource one."""
        if "_bucket" in query and "histogram_quantile" not in query:
            return self._buckets(query, now)
        if "by (namespace, deployment, pool" in query:
            return [{"metric": {"namespace": ns, "deployment": name, "pool": pool},
                     "value": [now, repr(self.value_for(query, pool))]}
                    for ns, name in self.resources for pool in ("a", "b")]
        if "by (namespace, deployment" in query:
            return [{"metric": {"namespace": ns, "deployment": name}, "value": [now, repr(self.value_for(query, "a"))]}
                    for ns, name in self.resources]
        return None

    def answer(self, query: str) -> tuple[int, bytes, str]:
        mode = self.mode
        now = time.time()
        if mode == "slow":
            time.sleep(self.slow_seconds)
            mode = "ok"
        if mode == "garbage":
            return 200, b"<html><body>502 Bad Gateway</body></html>", "text/html"
        if mode == "http-500":
            return 500, json.dumps({"status": "error", "errorType": "internal", "error": "query failed"}).encode(), "application/json"
        labels = {"pool": "a", "precision": "fp16"}
        grouped = self._grouped(query, now) if mode == "ok" else None
        if grouped is not None:
            result: object = grouped
        elif mode == "empty":
            result = []
        elif mode == "wrong-shape":
            result = {"metric": labels, "value": [now, "1"]}
        elif mode == "two-series":
            result = [{"metric": labels, "value": [now, "1"]}, {"metric": {**labels, "pool": "b"}, "value": [now, "2"]}]
        elif "_bucket" in query and "histogram_quantile" not in query:  # the histogram's buckets, one series per bound
            result = self._buckets(query, now, {"nan": "NaN", "not-a-number": "abc", "negative": "-50"}.get(mode))
        else:
            value = {"nan": "NaN", "not-a-number": "abc", "negative": "-50"}.get(mode, repr(self.value_for(query)))
            if mode == "negative-rate" and "histogram_quantile" not in query and "code=~" not in query \
                    and "queue_depth" not in query and "quality_agreement" not in query:
                value = "-50"
            result = [{"metric": labels, "value": [now, value]}]
        body = {"status": "success", "data": {"resultType": "vector", "result": result}}
        return 200, json.dumps(body).encode(), "application/json"
