"""bench/operator_scale.py always reports its goal table: met, MISSED with the reason, or NOT MEASURED with why.

Run 6 of the 1,000-resource benchmark ended on a 10 s scrape timeout and printed nothing at all;
these check, on hand-made results, that a partial run still gives every row, and that a scrape is retried.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.operator_scale import ScrapeFailed, goals, operator_figures, report, scrape

FULL = {
    "resources": 200, "step_seconds": 15, "problems": [], "measured_seconds": 120.0, "startup_seconds": 56.0,
    "reconciled": 200, "ticks": 1500.0, "ticks_expected": 1600.0, "tick_errors": 0.0,
    "tick_lag_p50_s": 0.2, "tick_lag_p99_s": 12.0, "tick_duration_p50_s": 0.4, "tick_duration_p99_s": 3.0,
    "tick_lag_share_le_1s": 0.8, "decision_p50_s": 0.002, "decision_p99_s": 0.004, "decision_share_le_5ms": 0.995,
    "api_requests_per_tick": 1.4, "api_requests": 2100, "api_requests_by_kind": {"patch inferencedeployments/status": 1500,
                                                                                 "create events": 600},
    "status_writes_by_cause": {"pressing": 1200.0, "refresh": 300.0},
    "peak_rss_bytes": 600 * 2 ** 20, "cpu_share": 0.4, "cpu_share_others": {"bench (API server)": 0.5},
    "lease_lost_in_window": 3, "forecast_models": {"lstm": 200}, "load_average_start": (1.0, 1.0, 1.0),
    "load_average_end": (3.0, 2.0, 1.0),
    "tick_step_seconds": {"read": {"p50": 0.2, "p99": 1.0, "count": 1500.0},
                          "forecast": {"p50": 11.0, "p99": 29.0, "count": 1500.0}},
}


def _verdicts(result: dict) -> dict[str, str]:
    return {name.split(" (")[0]: verdict for name, _, _, verdict, _ in goals(result)}


def test_a_full_run_gives_met_and_missed_with_the_reason() -> None:
    rows = {name.split(" (")[0]: (verdict, why) for name, _, _, verdict, why in goals(FULL)}
    assert rows["due ticks run"][0] == "MISSED"  # 1500 of 1600 = 93.8%
    assert "Lease lost 3 times" in rows["due ticks run"][1] and "p99 12.00 s" in rows["due ticks run"][1]
    assert "slowest step at p50: forecast 11.00 s" in rows["due ticks run"][1]
    assert rows["API requests per tick"] == ("MISSED", "per tick: patch inferencedeployments/status 1.00, create events 0.40; "
                                              "status PATCHes per tick by cause: pressing 0.80, refresh 0.20")
    assert rows["decision time"] == ("met", "")
    assert rows["operator peak memory"] == ("met", "")
    assert rows["operator CPU over the window"] == ("met", "")


@pytest.mark.parametrize("missing, not_measured", [
    # the operator's /metrics never answered: its own figures are missing, the outside ones are not
    (("ticks", "api_requests_per_tick", "decision_p99_s"), {"due ticks run", "API requests per tick", "decision time"}),
    # the run stopped during reconcile: nothing was measured
    (tuple(k for k in FULL if k not in ("resources", "step_seconds", "problems")),
     {"due ticks run", "API requests per tick", "decision time", "operator peak memory", "operator CPU over the window"}),
])
def test_a_partial_run_still_gives_every_row(missing: tuple, not_measured: set, capsys: pytest.CaptureFixture) -> None:
    partial = {k: v for k, v in FULL.items() if k not in missing}
    partial["problems"] = ["the operator's /metrics after the window: 3 attempts failed"]
    verdicts = _verdicts(partial)
    assert len(verdicts) == 5
    assert {k for k, v in verdicts.items() if v == "NOT MEASURED"} == not_measured
    report(partial)  # must not raise on what is missing
    out = capsys.readouterr().out
    assert out.count("NOT MEASURED: the operator's /metrics after the window") == len(not_measured)


def test_a_scrape_is_retried_and_then_fails_with_the_cause() -> None:
    answered = []

    class Slow(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            answered.append(1)
            if len(answered) == 1:
                threading.Event().wait(1.0)  # the first attempt times out
            body = b"# HELP x\nforescale_operator_ticks_total{result=\"ok\"} 7\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        took: list[float] = []
        page = scrape(f"http://127.0.0.1:{server.server_address[1]}/metrics", timeout=0.3, attempts=2, took=took)
        assert page == {'forescale_operator_ticks_total{result="ok"}': 7.0}
        assert len(answered) == 2 and len(took) == 1
    finally:
        server.shutdown()
    with pytest.raises(ScrapeFailed, match="2 attempts"):
        scrape(f"http://127.0.0.1:{server.server_address[1]}/metrics", timeout=0.3, attempts=2)


def test_the_window_splits_the_tick_wall_time_by_step() -> None:
    """Two scrapes of the operator's /metrics, as `scrape` reads them: each step's quantiles over the window."""
    name = "forescale_operator_tick_step_seconds_bucket"

    def scraped(read: tuple, forecast: tuple) -> dict[str, float]:
        out = {}
        for step, counts in (("read", read), ("forecast", forecast)):
            for le, count in zip(("0.1", "1.0", "30.0", "+Inf"), counts):
                out[f'{name}{{step="{step}",le="{le}"}}'] = count
        return out

    before = scraped((5, 5, 5, 5), (0, 0, 5, 5))
    after = scraped((105, 105, 105, 105), (0, 0, 105, 105))  # the window: 100 reads within 0.1 s, 100 forecasts 1-30 s
    result: dict = {}
    operator_figures(result, before, after)
    steps = result["tick_step_seconds"]
    assert steps["read"]["count"] == 100 and steps["read"]["p99"] <= 0.1
    assert steps["forecast"]["count"] == 100 and 1.0 < steps["forecast"]["p50"] < 30.0
