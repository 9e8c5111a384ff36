"""The side-by-side table `forescale replay` prints (rich, on stdout)."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

from .session import ReplayResult

COLUMNS = (
    ("policy", None),
    ("requests", "requests"),
    ("over SLO %", "requests_over_slo_fraction"),
    ("violation s", "violation_seconds"),
    ("episodes", "episodes"),
    ("MTTR s", "mttr_seconds"),
    ("GPU-h", "gpu_hours"),
    ("scalings", "scaling_actions"),
    ("weight chg", "weight_changes"),
    ("on B %", "requests_on_b_fraction"),
    ("target/pod", "target_per_pod"),
)


def _cell(key: str, value) -> str:
    if key in ("requests_over_slo_fraction", "requests_on_b_fraction"):
        return f"{100 * value:.2f}"
    if key in ("gpu_hours", "target_per_pod"):
        return f"{value:.3f}"
    if key == "mttr_seconds":
        return f"{value:.0f}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def replay_table(result: ReplayResult) -> Table:
    """One row per policy, the replay's measurements as columns."""
    data = result.to_json()
    incidents = "; ".join(
        f"{i['kind']} {i['pool']} x{i.get('factor', '')} at {i['start']:g} s for {i.get('seconds', 0):g} s" if i["kind"] == "slowdown"
        else f"crash {i['pool']} {i['pods']} pod(s) at {i['start']:g} s" for i in data["incidents"]
    ) or "none"
    title = (f"{data['trace']} ({data['format']}, {data['duration_seconds']:g} s); SLO {data['slo_ms']:g} ms; "
             f"start-up {data['startup_seconds']:g} s; incidents: {incidents}")
    table = Table(title=title, title_justify="left")
    for header, _ in COLUMNS:
        table.add_column(header, justify="left" if header == "policy" else "right", no_wrap=True)
    for name, row in data["policies"].items():
        table.add_row(name, *(_cell(key, row[key]) for _, key in COLUMNS[1:]))
    return table


def print_report(result: ReplayResult, console: Console | None = None) -> None:
    """The table, then the calibration and the notes a reader needs to judge it."""
    # A pipe gets 80 columns by default, which would truncate the policy names.
    console = console or (Console() if sys.stdout.isatty() else Console(width=150))
    console.print(replay_table(result))
    cal = result.calibration
    console.print(f"calibration: {cal['profile']} ({cal['source']}); capacity at SLO "
                  f"{cal['capacity_rps_at_slo']['fp16']} rps/pod fp16, {cal['capacity_rps_at_slo']['int8']} int8; "
                  f"peers' target_per_pod = {cal['peer_utilization']:.0%} x capacity = {cal['target_per_pod']}")
    console.print(f"forecaster: {result.forecaster}")
    console.print(f"reserve floor: {result.reserve_floor_gpu_hours:.3f} GPU-h (A at exactly ceil(rate / fp16 capacity) "
                  "per 10 s window, no start-up, no margin, plus one B pod: no policy that keeps the warm reserve and serves "
                  "at 100/0 on A outside incidents spends less)")
    for note in result.trace.notes:
        console.print(f"note: {note}")
