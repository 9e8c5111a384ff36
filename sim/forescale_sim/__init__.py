"""Forescale replay simulator (`forescale replay`, docs/replay.md).

Public API:
- `forescale_sim.session.run_replay(ReplayOptions(trace, fmt, policies=..., slo_ms=..., startup_seconds=...,
  incidents=..., seed=..., max_replicas=..., forecaster=..., spec_overrides=...)) -> ReplayResult`;
  `ReplayResult.to_json()` is the `--json` object, `ReplayResult.runs[name]` a `PolicyRun`.
- `forescale_sim.traces.load_trace(path, fmt, seed=0, compress=None)`: the trace readers.
- `forescale_sim.incidents.parse_incidents(spec)`, `default_incidents(duration, seed)`.
- `forescale_sim.metrics`: windows over the SLO, episodes, time to recover.
- `forescale_sim.plot.plot_replay(result, out_png)`.
Importing this package loads neither kopf nor kubernetes nor torch.
"""
