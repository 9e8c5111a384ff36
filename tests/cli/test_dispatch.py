"""The `forescale` dispatcher: usage, unknown commands, lazy imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from forescale_cli.main import COMMANDS, main


@pytest.mark.parametrize("argv", [[], ["--help"], ["-h"], ["help"]])
def test_usage_lists_every_command(argv, capsys):
    assert main(argv) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert f"  {name}" in out


def test_unknown_command_is_named(capsys):
    assert main(["frobnicate"]) == 2
    err = capsys.readouterr().err
    assert "unknown command 'frobnicate'" in err


def test_dispatcher_imports_no_subcommand_package():
    # Importing the dispatcher must not drag in kopf, torch or any subcommand package.
    code = (
        "import sys, forescale_cli.main as m; "
        "heavy = [n for n in ('kopf', 'torch', 'forescale_operator', 'forescale_server', 'forescale_predictor') if n in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""
