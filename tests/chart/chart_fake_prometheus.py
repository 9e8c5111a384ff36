"""A stand-in Prometheus for the chart's operator runs: answers the `forescale`
preset's instant queries, per resource or grouped, with a service in trouble (p99 900 ms,
100 rps, no errors).

Only `/api/v1/query` is answered, which is all the operator's loop asks; a
query it does not recognise gets an empty vector, as Prometheus would for a
series that does not exist.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

#: (substring of the query, value): first match wins.
INCIDENT = [
    ("histogram_quantile", "900"),  # p99 latency in ms: 4.5 x a 200 ms SLO
    ('code=~"5..|429"', "0"),  # error ratio
    ("forescale_requests_total", "100"),  # request rate
    ("forescale_queue_depth", "0"),
]


#: the resource the chart's operator runs apply (crds/examples/minimal.yaml, unless told another)
RESOURCE = {"namespace": "default", "deployment": "chat"}


def _result(query: str, resource: dict[str, str] = RESOURCE) -> list[dict]:
    """One sample per series the query asks for: the operator batches its reads into
    queries grouped `by (namespace, deployment[, pool])`, so those get the resource's labels."""
    for needle, value in INCIDENT:
        if needle in query:
            if "by (namespace, deployment, pool" in query:
                metrics = [{**resource, "pool": pool} for pool in ("a", "b")]
            elif "by (namespace, deployment" in query:
                metrics = [dict(resource)]
            else:
                metrics = [{}]
            return [{"metric": m, "value": [time.time(), value]} for m in metrics]
    return []


class _Handler(BaseHTTPRequestHandler):
    resource: dict[str, str] = RESOURCE

    def _reply(self, params: dict[str, list[str]]) -> None:
        query = (params.get("query") or [""])[0]
        result = _result(query, self.resource)
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - the http.server API
        self._reply(parse_qs(urlsplit(self.path).query))

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        self._reply(parse_qs(self.rfile.read(length).decode()))

    def log_message(self, *args) -> None:  # keep the test output clean
        pass


def start_fake_prometheus(name: str = RESOURCE["deployment"]) -> ThreadingHTTPServer:
    """Serve on a free 127.0.0.1 port in a daemon thread, for the resource `name`; `.shutdown()` stops it."""
    handler = type("Handler", (_Handler,), {"resource": {**RESOURCE, "deployment": name}})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, name="fake-prometheus", daemon=True).start()
    return server
