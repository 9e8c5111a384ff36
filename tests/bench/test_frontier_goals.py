"""The goals bench/frontier.py checks per case: which apply, and met or missed, on hand-made numbers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bench import frontier
from bench.frontier import evaluate
from forescale_sim.frontier import PeerPoint

POINTS = [PeerPoint("hpa", 0.4, 6.0, 0.0), PeerPoint("hpa", 0.7, 4.0, 40.0), PeerPoint("kpa", 0.9, 3.0, 200.0)]


def _fs(gpu: float, viol: float, mttr: float = 0.0, peak_a: int = 4, emergencies: int = 0) -> dict:
    return {"gpu_hours": gpu, "violation_seconds": viol, "mttr_seconds": mttr, "peak_replicas": {"a": peak_a, "b": 1},
            "events": {"EmergencyStarted": emergencies} if emergencies else {}}


@pytest.mark.parametrize("incident, scale, fs, expected", [
    # with the incident: V(4.0) = 40, so 10 s is met and 11 s missed; MTTR under 60 s
    (True, 1, _fs(4.0, 10, mttr=30), {"violation": True, "mttr": True, "peak": True}),
    (True, 1, _fs(4.0, 11, mttr=60), {"violation": False, "mttr": False, "peak": True}),
    (True, 10, _fs(3.5, 50, peak_a=7), {"violation": True, "mttr": True, "peak": False}),  # V(3.5) = 200; 7 > 1.5 x 4
    # no incident, scale 10: G(40) = 4.0, no allowance
    (False, 10, _fs(4.0, 40), {"gpu@10": True, "no-emergency": True, "peak": True}),
    (False, 10, _fs(4.01, 40), {"gpu@10": False, "no-emergency": True, "peak": True}),
    # no incident, scale 1: G(0) = 6.0, plus one B pod for the hour (1.0 GPU-h)
    (False, 1, _fs(7.0, 0), {"gpu@1": True, "no-emergency": True, "peak": True}),
    (False, 1, _fs(7.01, 0, emergencies=2), {"gpu@1": False, "no-emergency": False, "peak": True}),
    (False, 1, _fs(3.0, 0, peak_a=6), {"gpu@1": True, "no-emergency": True, "peak": True}),  # 6 <= 1.5 x 4
])
def test_goals(incident: bool, scale: float, fs: dict, expected: dict) -> None:
    case = {"incident": incident, "scale": scale, "duration_seconds": 3600.0}
    ev = evaluate(case, fs, {"peak_replicas": {"a": 4, "b": 0}}, POINTS)
    assert {goal: res["met"] for goal, res in ev["goals"].items()} == expected
    assert ev["emergencies"] == fs["events"].get("EmergencyStarted", 0)


def _explained(goal: str, fs: dict, incident: bool) -> str:
    from bench.frontier import explain

    fs = {**fs, "episode_spans": [[100.0, 130.0, 30.0, False]], "gpu_hours_a": fs["gpu_hours"] - 1.0, "gpu_hours_b": 1.0}
    case = {"incident": incident, "scale": 1, "duration_seconds": 3600.0,
            "incidents": [{"kind": "slowdown", "start": 90.0, "seconds": 300.0}] if incident else []}
    oracle = {"peak_replicas": {"a": 4, "b": 0}, "gpu_hours": 2.0}
    return explain(goal, case, fs, oracle, POINTS, evaluate(case, fs, oracle, POINTS))


@pytest.mark.parametrize("goal, fs, incident, words", [
    ("violation", _fs(4.5, 50), True, "V(g) from hpa@U0.7 (4.000 GPU-h, 40 s)"),
    ("violation", _fs(2.0, 50), True, "no peer point that cheap, so the cheapest: kpa@U0.9"),
    ("violation", _fs(4.5, 50), True, "1 began inside the incident"),
    ("gpu@1", _fs(8.0, 40), False, "G(v) from hpa@U0.7"),
    ("gpu@1", _fs(8.0, 0), False, "G(v) from hpa@U0.4"),
])
def test_a_miss_names_the_peer_point_behind_it(goal: str, fs: dict, incident: bool, words: str) -> None:
    assert words in _explained(goal, fs, incident)


def _row(trace: str, forecaster: str, gpu: float, viol: float, reserve: str = "reserve default",
         V: float | None = None, G: float | None = None) -> dict:
    """One case's row; V and G (the peers' curve at its cost and at its violations) where the test places it."""
    row = {"trace": trace, "variant": f"{forecaster}/{reserve}", "forescale": {"gpu_hours": gpu, "violation_seconds": viol}}
    return row if V is None else {**row, "V": V, "G": G}


@pytest.mark.parametrize("lstm, ewm, last, better, met", [
    ((10.0, 80.0), (10.0, 100.0), (10.0, 120.0), "ewm", True),    # 0.8x the violations at equal GPU-h
    ((10.05, 80.0), (10.0, 100.0), (9.0, 200.0), "ewm", True),    # within 1% of the GPU-h is equal
    ((10.5, 80.0), (10.0, 100.0), (9.0, 200.0), "ewm", False),    # fewer violations, bought with 5% more GPU
    ((9.4, 100.0), (10.0, 100.0), (10.0, 150.0), "ewm", True),    # 0.94x the GPU-h at equal violations
    ((9.6, 100.0), (10.0, 100.0), (10.0, 150.0), "ewm", False),   # 0.96x: not enough
    ((9.0, 100.0), (12.0, 120.0), (10.0, 90.0), "last", False),   # the better baseline has fewer violations
    ((10.0, 0.0), (10.0, 0.0), (11.0, 0.0), "ewm", False),        # no violations anywhere: only GPU can win
])
def test_the_forecaster_ablation_compares_with_the_better_baseline(lstm, ewm, last, better, met):
    from bench.frontier import forecaster_gain

    rows = [_row("mooncake", "lstm", *lstm), _row("mooncake", "ewm", *ewm), _row("mooncake", "last", *last),
            _row("synth-bursty", "lstm", 1.0, 0.0), _row("synth-bursty", "ewm", 9.0, 900.0)]  # not a dev trace
    (gain,) = forecaster_gain(rows)
    assert (gain["trace"], gain["better_baseline"], gain["direct_met"]) == ("mooncake", better, met)


def test_the_ablation_sums_a_traces_cases_and_needs_a_baseline():
    from bench.frontier import forecaster_gain

    rows = [_row("azure-conv", "lstm", 4.0, 20.0), _row("azure-conv", "lstm", 26.0, 100.0),
            _row("azure-conv", "ewm", 4.0, 30.0), _row("azure-conv", "ewm", 26.0, 150.0),
            _row("mooncake", "lstm", 4.0, 20.0)]  # no baseline run: no row
    (gain,) = forecaster_gain(rows)
    assert (gain["gpu_hours"], gain["violation_seconds"]) == (30.0, 120.0)
    assert gain["violation_ratio"] == pytest.approx(120 / 180) and gain["direct_met"]


# Each forecaster placed against the peers' curve: (gpu, violations, V(g), G(v)) per forecaster.
@pytest.mark.parametrize("lstm, ewm, last, v_ratio, g_ratio, met", [
    # the same cost: placement is the plain ratio, 80 / 100
    ((10.0, 80.0, 100.0, 11.0), (10.0, 100.0, 100.0, 10.0), (10.0, 120.0, 100.0, 9.5), 0.8, (10 / 11) / 1.0, True),
    # fewer violations bought with 20% more GPU, where the peers get half as many for it: not a gain
    ((12.0, 60.0, 30.0, 11.0), (10.0, 100.0, 100.0, 10.0), (10.0, 110.0, 100.0, 9.8), 2.0, (12 / 11) / 1.0, False),
    # fewer violations for 20% more GPU, where the peers get more for it: a gain at equal GPU-h
    ((12.0, 60.0, 90.0, 14.0), (10.0, 100.0, 100.0, 10.0), (10.0, 110.0, 100.0, 9.8), (60 / 90) / 1.0, (12 / 14) / 1.0, True),
    # cheaper at the same violations: only the GPU-h placement wins
    ((9.0, 100.0, 110.0, 10.0), (10.0, 100.0, 100.0, 10.0), (10.0, 100.0, 100.0, 10.0), (100 / 110) / 1.0, 0.9, True),
])
def test_the_ablation_places_each_forecaster_against_the_peers_curve(lstm, ewm, last, v_ratio, g_ratio, met):
    from bench.frontier import forecaster_gain

    rows = [_row("mooncake", f, g, v, V=V, G=G) for f, (g, v, V, G) in (("lstm", lstm), ("ewm", ewm), ("last", last))]
    (gain,) = forecaster_gain(rows)
    assert gain["placed_violation_ratio"] == pytest.approx(v_ratio)
    assert gain["placed_gpu_ratio"] == pytest.approx(g_ratio)
    assert gain["met"] is met


@pytest.mark.parametrize("clair, v_ratio, g_ratio, reach", [
    (None, None, None, None),                         # not run: no ceiling
    ((10.0, 50.0, 100.0, 12.0), 0.5, 10 / 12, True),  # half the violations at the same cost: the goal is within reach
    ((10.0, 100.0, 100.0, 10.0), 1.0, 1.0, False),    # the same point as the better baseline
    ((10.0, 100.0, 100.0, 10.6), 1.0, 10 / 10.6, True),  # the same violations for 0.943x the curve's GPU-h
])
def test_the_clairvoyant_forecaster_is_placed_as_the_ceiling(clair, v_ratio, g_ratio, reach):
    from bench.frontier import forecaster_gain

    runs = {"lstm": (10.0, 90.0, 100.0, 10.0), "ewm": (10.0, 100.0, 100.0, 10.0), "last": (10.0, 120.0, 100.0, 9.5)}
    if clair:
        runs["clairvoyant"] = clair
    (gain,) = forecaster_gain([_row("mooncake", f, g, v, V=V, G=G) for f, (g, v, V, G) in runs.items()])
    ceiling = gain["ceiling"]
    if clair is None:
        assert ceiling is None and "clairvoyant" not in gain["placed"]
    else:
        assert (ceiling["placed_violation_ratio"], ceiling["placed_gpu_ratio"]) == pytest.approx((v_ratio, g_ratio))
        assert ceiling["within_reach"] is reach
        assert gain["better_baseline"] == "ewm"  # the ceiling is no baseline


def test_the_ceiling_is_held_to_the_baseline_each_ratio_names():
    """`ewm` is placed best on violations, `last` on GPU-hours: each of the ceiling's ratios is over its own."""
    from bench.frontier import forecaster_gain

    runs = {"lstm": (10.0, 90.0, 100.0, 10.0), "ewm": (10.0, 80.0, 100.0, 10.0), "last": (10.0, 120.0, 100.0, 12.0),
            "clairvoyant": (10.0, 60.0, 100.0, 13.0)}
    (gain,) = forecaster_gain([_row("mooncake", f, g, v, V=V, G=G) for f, (g, v, V, G) in runs.items()])
    assert (gain["placed_violation_baseline"], gain["placed_gpu_baseline"]) == ("ewm", "last")
    ceiling = gain["ceiling"]
    assert ceiling["placed_violation_ratio"] == pytest.approx(0.6 / 0.8)   # its v/V(g) over ewm's
    assert ceiling["placed_gpu_ratio"] == pytest.approx((10 / 13) / (10 / 12))  # its g/G(v) over last's
    assert ceiling["within_reach"]


@pytest.mark.parametrize("a, b, ratio", [(0.0, 0.0, 1.0), (5.0, 0.0, math.inf), (3.0, 6.0, 0.5), (math.nan, 1.0, math.nan)])
def test_a_placement_ratio_at_the_curves_floor(a: float, b: float, ratio: float) -> None:
    from bench.frontier import _ratio

    assert _ratio(a, b) == pytest.approx(ratio, nan_ok=True)


# -- --peers-from: the peers' curves of an earlier run, Forescale replayed alone ---------------------

def _earlier_run(tmp_path, cases):
    path = tmp_path / "earlier.json"
    path.write_text(json.dumps({"cases": cases}))
    return str(path)


EARLIER_CASE = {"trace": "azure-conv", "scale": 1.0, "seed": 0, "incident": False, "duration_seconds": 3600.0,
                "incidents": [], "oracle": {"gpu_hours": 3.0, "violation_seconds": 0.0, "peak_replicas": {"a": 4, "b": 0}},
                "peer_points": [{"policy": "hpa", "utilization": 0.7, "gpu_hours": 3.4, "violation_seconds": 10.0}]}


class _Recorder:
    """The replay recorder's per-second rows that `episode_fleet` reads: A's ready pods go 3 -> 5 at
    200 s, asked for at 110 s; B holds 1 pod and takes 30% from 105 s."""

    def __init__(self) -> None:
        n = 400
        self.ready = np.array([[3] * 200 + [5] * (n - 200), [1] * n], dtype=float)
        self.replicas = np.array([[3] * 110 + [5] * (n - 110), [1] * n], dtype=float)
        self.weight_b = np.array([0] * 105 + [30] * (n - 105), dtype=float)


@pytest.mark.parametrize("start, recovered, expected", [
    # recovery waited for A's new pods: asked at 110 s, ready 90 s later
    (100.0, 230.0, {"a_ready": 3, "a_asked_at": 110.0, "a_asked": 5, "a_new_ready_at": 200.0, "b_ready": 1,
                    "b_weight_peak": 30}),
    # over before the new pods were ready: asked, none ready by 150 s
    (100.0, 150.0, {"a_asked_at": 110.0, "a_new_ready_at": None}),
    # an episode that ended before anything was asked: no scale-up in its span
    (10.0, 60.0, {"a_asked_at": None, "a_asked": 3, "a_new_ready_at": None, "b_weight_peak": 0}),
])
def test_an_episodes_fleet_is_read_from_the_replay(start, recovered, expected):
    fleet = frontier.episode_fleet(_Recorder(), start, recovered)
    assert {k: fleet[k] for k in expected} == expected


@pytest.mark.parametrize("fleet, words", [
    (frontier.episode_fleet(_Recorder(), 100.0, 230.0),
     "100-230 s (in the incident): A had 3 ready pods, B 1 (B's weight up to 30%); A asked for 5 at 110 s, "
     "the first ready at 200 s (90 s later); under the SLO again 30 s after it"),
    (frontier.episode_fleet(_Recorder(), 100.0, 150.0), "under the SLO again before any was ready"),
    (frontier.episode_fleet(_Recorder(), 10.0, 60.0), "10-60 s (before the incident)"),
])
def test_a_recovery_miss_says_whether_it_waited_for_as_new_pods(fleet, words):
    fs = {**_fs(4.0, 10, mttr=130), "episode_fleets": [fleet]}
    assert words in _explained("mttr", fs, incident=True)


def test_known_cases_replay_forescale_alone_and_keep_the_earlier_curves(tmp_path):
    known = frontier.load_peers(_earlier_run(tmp_path, [EARLIER_CASE]))
    variants = [frontier.Variant("lstm", None), frontier.Variant("ewm", None)]
    jobs = frontier.plan_jobs(["azure-conv"], [1.0], [0], variants, {}, known=known)
    alone = [j for j in jobs if not j["incident"]]
    assert [(j["policies"], j["forecaster"]) for j in alone] == [(["forescale"], "lstm"), (["forescale"], "ewm")]
    assert len([j for j in jobs if j["incident"]]) == 1 + 5 + 1  # the unknown case runs in full
    fs = {"gpu_hours": 3.3, "violation_seconds": 0.0, "mttr_seconds": 0.0, "peak_replicas": {"a": 4, "b": 1},
          "events": {}, "gpu_hours_a": 2.3, "gpu_hours_b": 1.0, "episode_spans": []}
    results = [{"job": j, "seconds": 1.0, "duration_seconds": 3600.0, "incidents": [], "forecaster_label": j["forecaster"],
                "policies": {"forescale": fs}} for j in alone]
    rows = frontier.assemble(results, variants, known)
    assert [r["variant"] for r in rows] == ["lstm/reserve default", "ewm/reserve default"]
    assert rows[0]["G"] == pytest.approx(3.4) and rows[0]["oracle"]["peak_replicas"]["a"] == 4
    assert rows[0]["goals"]["gpu@1"]["met"]


@pytest.mark.parametrize("content, words", [
    (None, "cannot read"),
    ("{not json", "is not JSON"),
    (json.dumps({"cases": []}), "holds no cases"),
    (json.dumps({"cases": [{"trace": "azure-conv"}]}), "case 0 lacks a usable"),
    (json.dumps({"cases": [{**EARLIER_CASE, "peer_points": []}]}), "has no peer points"),
])
def test_a_bad_earlier_run_is_refused_naming_the_flag(tmp_path, capsys, content, words):
    path = tmp_path / "earlier.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as exc:
        frontier.parse_args(["--peers-from", str(path)])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--peers-from" in err and words in err


# -- --b-variant and --min-agreement: pool B's model as a configuration -----------------------------

def test_pool_bs_model_is_a_configuration_of_its_own():
    args = frontier.parse_args(["--forecaster", "lstm", "--b-variant", "int8,distilled-int8", "--min-agreement", "0.9",
                                "--traces", "azure-conv", "--seeds", "0", "--scales", "1"])
    assert [v.label for v in args.variants] == ["lstm/reserve default", "lstm/reserve default/b distilled-int8"]
    jobs = frontier.plan_jobs(args.traces, args.scales, args.seeds, args.variants, {}, min_agreement=args.min_agreement)
    full = [j for j in jobs if "oracle" in j["policies"]]
    alone = [j for j in jobs if j["policies"] == ["forescale"]]
    assert {j["b_variant"] for j in full} == {"int8"} and {j["b_variant"] for j in alone} == {"distilled-int8"}
    assert {j["min_agreement"] for j in jobs} == {0.9}


@pytest.mark.parametrize("argv, words", [
    (["--b-variant", "distilled"], "--b-variant: unknown distilled; choose from int8, distilled-int8"),
    (["--min-agreement", "0"], "--min-agreement must be in (0, 1], got 0.0"),
    (["--min-agreement", "1.5"], "--min-agreement must be in (0, 1], got 1.5"),
])
def test_bad_pool_b_options_are_named(argv, words):
    with pytest.raises(SystemExit) as exc:
        frontier.parse_args(argv)
    assert words in str(exc.value)


# -- the violation goal beside the same seed without the incident -------------------------------------

def _case_row(incident: bool, gpu: float, viol: float, V: float, met: bool, peers: list[tuple[float, float]]) -> dict:
    return {"trace": "mooncake", "scale": 10.0, "seed": 0, "incident": incident, "variant": "lstm/reserve default",
            "forescale": {"gpu_hours": gpu, "violation_seconds": viol}, "V": V,
            "goals": {"violation": {"met": met}} if incident else {"gpu@10": {"met": True}},
            "misses": {} if met or not incident else {"violation": "2 episode(s)"},
            "peer_points": [{"policy": "hpa", "utilization": u, "gpu_hours": g, "violation_seconds": v}
                            for u, (g, v) in zip((0.6, 0.7, 0.8), peers)]}


QUIET_PEERS = [(23.6, 30.0), (20.7, 130.0), (17.7, 320.0)]


@pytest.mark.parametrize("quiet_viol, peers, words, counts", [
    # Forescale's own incident-free seconds (290) already over the goal's 0.25 x 460 = 115, and the best
    # peer without the incident at 22.5 GPU-h (HPA at U 0.7: 130 s) over it too
    (290.0, QUIET_PEERS, "the same seed spent 290 s (already over the goal's 115.0), and the peers' fewest without it "
     "at 22.500 GPU-h 130 s", {"misses": 1, "over_without_incident": 1, "peers_over_without_incident": 1}),
    # the peers' curve without the incident cheaper in violations: 30 s at 23.6 is out of reach at 22.5,
    # but a curve whose U 0.7 point holds 100 s is within 115
    (290.0, [(23.6, 30.0), (20.7, 100.0), (17.7, 320.0)], "and the peers' fewest without it at 22.500 GPU-h 100 s",
     {"misses": 1, "over_without_incident": 1, "peers_over_without_incident": 0}),
    # within the share without the incident: the miss is the incident's own
    (80.0, QUIET_PEERS, "spent 80 s (within the goal's 115.0)",
     {"misses": 1, "over_without_incident": 0, "peers_over_without_incident": 0}),
])
def test_a_violation_miss_is_set_beside_the_same_seed_without_the_incident(quiet_viol, peers, words, counts):
    rows = [_case_row(True, 22.5, 300.0, 460.0, False, QUIET_PEERS), _case_row(False, 20.4, quiet_viol, 0.0, True, peers)]
    frontier.set_incident_free(rows)
    assert words in rows[0]["misses"]["violation"]
    assert rows[0]["incident_free"]["violation_seconds"] == quiet_viol
    assert frontier.violation_floor(rows) == {"lstm/reserve default": counts}


def test_a_met_violation_goal_or_a_missing_twin_is_not_counted():
    met = [_case_row(True, 22.5, 100.0, 460.0, True, QUIET_PEERS), _case_row(False, 20.4, 290.0, 0.0, True, QUIET_PEERS)]
    frontier.set_incident_free(met)
    assert "incident_free" in met[0] and frontier.violation_floor(met) == {}
    alone = [_case_row(True, 22.5, 300.0, 460.0, False, QUIET_PEERS)]  # --peers-from ran the incident case only
    frontier.set_incident_free(alone)
    assert alone[0]["misses"]["violation"] == "2 episode(s)" and frontier.violation_floor(alone) == {}
