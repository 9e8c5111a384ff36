"""`forescale demo`: what the user gave is checked before the stack starts, and the incident fits the load."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from forescale_devcluster import demo_cli
from forescale_devcluster.demo_scenario import DemoSettings


@pytest.mark.parametrize("flag, value, message", [
    ("--plot", "{tmp}/no-such-folder/x.png", "--plot {tmp}/no-such-folder/x.png: no folder {tmp}/no-such-folder"),
    ("--plot", "{tmp}", "--plot {tmp} is a folder; give a file path such as {tmp}/forescale-demo.png"),
    ("--trace", "{tmp}/nope.csv", "--trace {tmp}/nope.csv: trace file '{tmp}/nope.csv' not found"),
    ("--trace", "{tmp}/empty.csv", "is empty"),
    ("--trace", "{tmp}/bad.csv", "no timestamp or time column"),
    ("--workdir", "{tmp}/a-file", "--workdir {tmp}/a-file exists and is not a folder"),
])
def test_bad_input_is_refused_before_anything_starts(tmp_path, flag, value, message):
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "bad.csv").write_text("garbage\n1,2\n")
    (tmp_path / "a-file").write_text("")
    value, message = value.format(tmp=tmp_path), message.format(tmp=tmp_path)
    problem, pattern = demo_cli._read_input(DemoSettings(trace=value if flag == "--trace" else None),
                                            value if flag == "--plot" else "", value if flag == "--workdir" else None)
    assert problem is not None and message in problem and pattern is None


def test_good_input_is_read_once_for_the_run(tmp_path):
    problem, pattern = demo_cli._read_input(DemoSettings(), str(tmp_path / "x.png"), str(tmp_path / "work"))
    assert problem is None and pattern.duration > 0


@pytest.mark.parametrize("duration, seconds", [
    (360.0, 90.0),  # the default run: 90 s of slowdown
    (90.0, 22.5),   # a short run: the incident ends inside the load
    (1200.0, 300.0),
])
def test_the_incident_lasts_a_quarter_of_the_load_and_ends_inside_it(duration, seconds):
    s = DemoSettings(duration_seconds=duration)
    assert s.incident_length() == seconds
    assert duration / 3 <= s.incident_start() and s.incident_start() + s.incident_length() < duration


def test_the_cli_exits_2_naming_the_flag(tmp_path):
    if not demo_cli_prometheus():
        pytest.skip("the demo refuses to start without Prometheus first")
    result = CliRunner().invoke(demo_cli.app, ["--plot", str(tmp_path / "nope" / "x.png")])
    assert result.exit_code == 2 and "forescale demo: --plot" in result.output


def demo_cli_prometheus() -> bool:
    from forescale_devcluster.demo_stack import prometheus_available

    return prometheus_available()
