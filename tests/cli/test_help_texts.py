"""Every `forescale` subcommand's --help: one style, 80 columns, every option explained.

Rendered through the dispatcher as a user runs it, at the default width and
on a wide terminal (click caps its wrapping at 80 columns; a `\\b` block or a
long word is not wrapped, so it is checked too).
"""

from __future__ import annotations

import importlib
import re

import pytest
import typer

from forescale_cli.main import COMMANDS, main

WIDTH = 80


def _click_command(name: str):
    module, attr, _ = COMMANDS[name]
    return typer.main.get_command(getattr(importlib.import_module(module), attr))


def _options(command) -> list:
    # Typer carries its own copy of click: tell options by their kind, not by click's classes
    return [p for p in command.params if p.param_type_name == "option"]


def _every_command(name: str) -> list[tuple[list[str], object]]:
    """The command and, for a group, each subcommand, with the argv that reaches it."""
    top = _click_command(name)
    found = [([name], top)]
    if hasattr(top, "commands"):
        found += [([name, sub], command) for sub, command in sorted(top.commands.items())]
    return found


EVERY = [pair for name in COMMANDS for pair in _every_command(name)]
IDS = [" ".join(argv) for argv, _ in EVERY]


def _help(argv: list[str], capsys) -> str:
    assert main([*argv, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("argv, command", EVERY, ids=IDS)
def test_help_fits_80_columns(argv, command, columns, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", columns)
    text = _help(argv, capsys)
    long = [line for line in text.splitlines() if len(line) > WIDTH]
    assert not long, f"`forescale {' '.join(argv)} --help` has lines over {WIDTH} columns:\n" + "\n".join(long)


@pytest.mark.parametrize("argv, command", EVERY, ids=IDS)
def test_every_option_has_help(argv, command):
    missing = [p.opts[0] for p in _options(command) if not (p.help or "").strip()]
    assert not missing, f"`forescale {' '.join(argv)}`: options without help: {', '.join(missing)}"


@pytest.mark.parametrize("argv, command", EVERY, ids=IDS)
def test_one_style_and_no_bool_metavar(argv, command, capsys):
    text = _help(argv, capsys)
    # one style: click's plain help (no boxes), as `forescale stress --help` always had
    assert text.startswith("Usage: forescale ") and "╭" not in text and "│" not in text
    assert "<bool>" not in text
    flags = [p for p in _options(command) if p.is_flag]
    for flag in flags:
        # the flag's own line: its option names, then two spaces and its help; no metavar between
        # (an on/off pair, `--confirm-slo / --no-confirm-slo`, names both on the line)
        line = next(line for line in text.splitlines()
                    if line.strip().split("  ")[0].split(", ")[-1].split(" / ")[0] in flag.opts)
        assert "<" not in line.strip().split("  ")[0], line


def test_the_dispatchers_own_usage_fits(capsys):
    assert main(["--help"]) == 0
    assert all(len(line) <= WIDTH for line in capsys.readouterr().out.splitlines())


@pytest.mark.parametrize("argv, command", EVERY, ids=IDS)
def test_help_cites_nothing_users_do_not_have(argv, command, capsys):
    # A design or peers file, its sections, issue or session numbers: none of them ship.
    text = _help(argv, capsys)
    hits = [line for line in text.splitlines()
            if re.search(r"DESIGN\.md|PEERS\.md|STYLE\.md|§|\b[Ii]ssue \d+|\b[Ss]ession \d+", line)]
    assert not hits, f"`forescale {' '.join(argv)} --help`:\n" + "\n".join(hits)
