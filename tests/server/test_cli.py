"""`forescale serve` flag validation: clear errors, exit code 2, no traceback."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from forescale_server.cli import app


@pytest.mark.parametrize(
    "args,message",
    [
        (["--emulate-gpu", "h100-imaginary"], "unknown --emulate-gpu profile"),
        (["--precision", "fp64", "--emulate-gpu", "demo"], "unknown --precision"),
        (["--cache-policy", "fifo", "--emulate-gpu", "demo"], "unknown --cache-policy"),
        (["--port", "0", "--emulate-gpu", "demo"], "--port must be"),
        (["--max-batch", "0", "--emulate-gpu", "demo"], "--max-batch must be >= 1"),
        (["--model", "/no/such/model"], "unknown model"),
    ],
)
def test_bad_flags_exit_2_with_a_message(args, message):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_bad_precision_environment_is_reported():
    result = CliRunner().invoke(app, ["--emulate-gpu", "demo"], env={"FORESCALE_PRECISION": "fp8"})
    assert result.exit_code == 2 and "FORESCALE_PRECISION='fp8'" in result.output
