"""`forescale replay` end to end on short real slices, through the dispatcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forescale_cli.main import main

KEYS = {"requests", "requests_over_slo_fraction", "violation_seconds", "episodes", "mttr_seconds",
        "gpu_hours", "scaling_actions", "weight_changes", "target_per_pod"}


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["replay", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_has_every_design_key_for_every_policy(azure_slice: Path, capsys, tmp_path: Path) -> None:
    code, out, err = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--json",
                         "--incidents", "slowdown:pool=a,factor=2.5,start=120,seconds=60",
                         "--plot", str(tmp_path / "replay.png"))
    assert code == 0, err
    data = json.loads(out)  # exactly one JSON object on stdout
    assert out.count("\n") == 1
    assert {"trace", "duration_seconds", "slo_ms", "startup_seconds", "incidents", "policies"} <= set(data)
    assert data["slo_ms"] == 1000 and data["startup_seconds"] == 90
    assert data["incidents"] == [{"kind": "slowdown", "pool": "a", "factor": 2.5, "start": 120, "seconds": 60}]
    assert list(data["policies"]) == ["forescale", "hpa", "keda", "kpa", "static", "oracle"]
    target = data["calibration"]["target_per_pod"]
    for name, row in data["policies"].items():
        assert KEYS <= set(row), name
        assert row["requests"] == 2000
        assert row["gpu_hours"] > 0
        assert row["target_per_pod"] == pytest.approx(target)
    assert target == pytest.approx(0.7 * data["calibration"]["capacity_rps_at_slo"]["fp16"], rel=1e-3)
    # the reserve floor: at least one B pod for the whole replay, plus A's minimum
    assert data["reserve_floor_gpu_hours"] >= 2 * data["duration_seconds"] / 3600 - 1e-6
    assert data["reserve_floor_gpu_hours"] <= data["policies"]["static"]["gpu_hours"] + data["duration_seconds"] / 3600
    # peers scale pool A only and never move traffic
    assert all(data["policies"][p]["weight_changes"] == 0 for p in ("hpa", "keda", "kpa", "static", "oracle"))
    assert all(data["policies"][p]["requests_on_b_fraction"] == 0 for p in ("hpa", "keda", "kpa", "static", "oracle"))
    assert 0 < data["policies"]["forescale"]["requests_on_b_fraction"] < 0.5  # the playbook's split, for a while
    assert data["policies"]["static"]["scaling_actions"] == 0
    assert "calibration" in err  # progress went to stderr
    assert (tmp_path / "replay.png").stat().st_size > 10_000
    # the forescale policy runs the real predictor: the packaged LSTM made its forecasts
    from forescale_predictor import DEFAULT_MODEL_PATH

    models = data["policies"]["forescale"]["forecast_models"]
    if DEFAULT_MODEL_PATH.is_file():
        assert data["forecaster"].startswith("lstm") and models.get("lstm", 0) > 0, models


def test_table_output(azure_slice: Path, capsys) -> None:
    code, out, _ = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--policies", "hpa,static",
                       "--incidents", "none")
    assert code == 0
    assert "hpa" in out and "static" in out and "target_per_pod" in out


def test_unreachable_slo_saturates_and_reports_degraded(azure_slice: Path) -> None:
    """Bounds that make the SLO unreachable: the engine saturates at maxReplicas and
    reports Degraded with a reason. The playbook's triggers are set out of reach so
    the incident phases (which take precedence) do not mask Degraded."""
    from forescale_sim.session import ReplayOptions, run_replay

    result = run_replay(ReplayOptions(
        str(azure_slice), "azure", policies=["forescale"], max_replicas=1, incidents="none", forecaster="ewm",
        spec_overrides={"emergency": {"triggerRatio": 1000, "errorRatePercent": 100}}, progress=lambda _: None))
    run = result.runs["forescale"]
    row = run.to_dict()
    assert run.recorder.replicas[0].max() == 1  # saturated at maxReplicas
    assert row["degraded"] is True
    assert row["phase_seconds"]["Degraded"] > 0
    assert any("unreachable within maxReplicas" in reason for reason in row["degraded_reasons"])
    # A alone cannot meet the SLO; the overload shift sends the excess to B's reserve pod,
    # which may carry it: either the SLO is broken or B was used for it.
    assert row["violation_seconds"] > 0 or row["events"].get("Overload", 0) > 0


BAD = [
    (["--trace", "/nonexistent/trace.csv", "--format", "azure"], "no such file"),
    (["--format", "parquet"], "--format must be one of"),
    (["--incidents", "meltdown:start=1"], "unknown kind 'meltdown'"),
    (["--incidents", "slowdown:start=99999"], "after the trace ends"),
    (["--policies", "hpa,vpa"], "unknown policy vpa"),
    (["--slo-ms", "-5"], "--slo-ms must be > 0"),
    (["--profile", "t4-bert-base"], "cannot serve a llm trace"),
    (["--forecaster", "prophet"], "unknown forecaster 'prophet'"),
    (["--seed", "-1"], "--seed must be >= 0, got -1"),
    (["--compress", "0"], "--compress must be > 0, got 0"),
]


@pytest.mark.parametrize("extra,words", BAD, ids=[b[1] for b in BAD])
def test_bad_input_is_one_clear_line(azure_slice: Path, capsys, extra: list[str], words: str) -> None:
    args = ["--trace", str(azure_slice), "--format", "azure", "--policies", "forescale,hpa", *extra]
    code, out, err = run(capsys, *args)
    assert code == 2
    assert words in err
    assert "Traceback" not in err and out == ""


def test_empty_and_unsorted_traces_through_the_cli(tmp_path: Path, capsys) -> None:
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    code, _, err = run(capsys, "--trace", str(empty), "--format", "azure")
    assert code == 2 and "empty" in err
    unsorted = tmp_path / "unsorted.jsonl"
    unsorted.write_text('{"timestamp": 5000, "input_length": 10, "output_length": 5}\n'
                        '{"timestamp": 1000, "input_length": 10, "output_length": 5}\n')
    code, _, err = run(capsys, "--trace", str(unsorted), "--format", "mooncake")
    assert code == 2 and "not sorted" in err
    single = tmp_path / "single.csv"
    single.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n")
    code, _, err = run(capsys, "--trace", str(single), "--format", "azure")
    assert code == 2 and "spans 0 s" in err


def test_servegen_slice_replays_through_the_fluid_pools(servegen_slice: Path, capsys) -> None:
    code, out, err = run(capsys, "--trace", str(servegen_slice), "--format", "servegen", "--json",
                         "--policies", "hpa,kpa,oracle", "--incidents", "crash:pool=a,pods=1,start=600")
    assert code == 0, err
    data = json.loads(out)
    assert data["slo_ms"] == 200  # not a token trace
    assert data["calibration"]["profile"] == "t4-bert-base"
    assert any("compressed 24x" in note for note in data["notes"])
    assert data["incidents"] == [{"kind": "crash", "pool": "a", "pods": 1, "start": 600}]
    assert all(row["requests"] > 0 for row in data["policies"].values())
    assert data["policies"]["oracle"]["violation_seconds"] <= data["policies"]["hpa"]["violation_seconds"]


SPEC = """
apiVersion: forescale.io/v1alpha1
kind: InferenceDeployment
metadata: {name: chat}
spec:
  slo: {targetLatencyMs: 5}
  pools:
    a: {minReplicas: 3, maxReplicas: 30, template: {spec: {containers: [{name: s, image: i}]}}}
    b: {minReplicas: 2, maxReplicas: 5, template: {spec: {containers: [{name: s, image: i}]}}}
  traffic: {router: gatewayapi, parentRefs: [{name: gw}]}
"""


@pytest.mark.parametrize("content,words", [
    (SPEC, None),
    ("spec:\n  warmReservePercent: 500\n", "spec.warmReservePercent: must be <= 100"),
    ("[1, 2", "not YAML or JSON"),
    ("- a\n- b\n", "expected an InferenceDeployment"),
    ("spec:\n  pools:\n    a: {minReplica: 3}\n",
     "pools.a has no field 'minReplica' (it has minReplicas, maxReplicas, "),
])
def test_spec_file(azure_slice: Path, tmp_path: Path, capsys, content: str, words: str | None) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(content)
    code, out, err = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--json", "--policies", "forescale",
                         "--spec", str(path), "--forecaster", "ewm", "--incidents", "none")
    if words is None:
        assert code == 0, err
        data = json.loads(out)
        assert data["slo_ms"] == 1000  # the spec's slo is replaced by --slo-ms
        # A's minReplicas 3 and B's 2 from the file hold for the whole replay: >= 5 pods for ~425 s
        assert data["policies"]["forescale"]["gpu_hours"] >= 5 * 400 / 3600
    else:
        assert code == 2 and words in err and "Traceback" not in err


@pytest.mark.parametrize("sets,words", [
    (["traffic.overloadMaxPercent=0", "pools.a.minReplicas=5"], None),
    (["traffic.overloadMaxPercent"], "expected PATH=VALUE"),
    (["=3"], "expected PATH=VALUE"),
    (["pools..a=3"], "expected PATH=VALUE"),
    (["pools.a.minReplicas="], "no value after '='"),
    (["slo.targetLatencyMs=5"], "comes from --slo-ms"),
    (["pools.a.template=[1, 2]"], "must be a scalar"),
    (["traffic.router.kind=x"], "traffic.router is 'gatewayapi', not a mapping"),
    (["warmReservePercent=500"], "spec.warmReservePercent: must be <= 100"),
    # a typo replayed the defaults and said nothing: the spec parser ignores what it does not read
    (["traffic.overloadMaxPrcent=0"], "traffic has no field 'overloadMaxPrcent' (it has router, parentRefs, hostnames, "
                                      "gateways, emergencyWeightPercent, overloadMaxPercent, routeRef, cutback); "
                                      "did you mean traffic.overloadMaxPercent?"),
    (["nosuch.field=3"], "the spec has no field 'nosuch' (it has mode, slo, pools, "),
])
def test_set_changes_one_field_and_keeps_the_rest(azure_slice: Path, capsys, sets: list[str], words: str | None) -> None:
    args = [a for one in sets for a in ("--set", one)]
    code, out, err = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--json", "--policies", "forescale",
                         "--forecaster", "ewm", "--incidents", "none", *args)
    if words is None:
        assert code == 0, err  # traffic's router and parentRefs were kept: the spec is valid
        row = json.loads(out)["policies"]["forescale"]
        # A's minReplicas 5 from --set and B's default 1 hold for the whole replay: >= 6 pods for ~425 s
        assert row["gpu_hours"] >= 6 * 420 / 3600
        # no overload shift to B, which the defaults make on this slice (1.6% of its requests)
        _, default, _ = run(capsys, "--trace", str(azure_slice), "--format", "azure", "--json", "--policies",
                            "forescale", "--forecaster", "ewm", "--incidents", "none")
        assert row["requests_on_b_fraction"] == 0 < json.loads(default)["policies"]["forescale"]["requests_on_b_fraction"]
    else:
        assert code == 2 and words in err and "Traceback" not in err, err


def test_same_seed_same_result(mooncake_slice: Path) -> None:
    from forescale_sim.session import ReplayOptions, run_replay

    def once(seed: int) -> dict:
        data = run_replay(ReplayOptions(str(mooncake_slice), "mooncake", policies=["hpa", "kpa", "oracle"], seed=seed,
                                        progress=lambda _: None)).to_json()
        for row in data["policies"].values():
            row.pop("replay_seconds")
        return data

    first = once(0)
    assert first == once(0)
    assert first["incidents"] != once(1)["incidents"]  # the default incident's start is seeded


def test_the_plots_rows_share_their_y_scale(azure_slice: Path) -> None:
    """Policies are compared by eye across a row: every panel of a row has one y scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from forescale_sim.plot import draw_replay
    from forescale_sim.session import ReplayOptions, run_replay

    result = run_replay(ReplayOptions(str(azure_slice), "azure", policies=["hpa", "static", "oracle"], incidents="none",
                                      progress=lambda _: None))
    fig = draw_replay(result)
    try:
        rows = [fig.axes[r * 3:(r + 1) * 3] for r in range(4)]  # the axes come row by row, three columns
        for row in rows:
            assert len({ax.get_ylim() for ax in row}) == 1
    finally:
        plt.close(fig)
