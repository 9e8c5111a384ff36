"""Entry point of the `forescale` console script.

Each subcommand lives in the package that owns it and is imported only when
that subcommand runs: `forescale serve --emulate-gpu` must start without
loading torch or kopf, and `forescale replay` without kopf.
"""

from __future__ import annotations

import importlib
import sys

#: subcommand -> (module, attribute, one-line help). The attribute is a Typer
#: app or a click command; it receives the remaining arguments unchanged.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "operator": ("forescale_operator.cli", "app", "Run the kopf operator against the current kubeconfig."),
    "diagnose": ("forescale_operator.diagnose_cli", "app", "Rank the root causes of one InferenceDeployment's trouble now."),
    "serve": ("forescale_server.cli", "app", "Run the model server."),
    "train": ("forescale_predictor.cli_train", "app", "Train the LSTM forecaster from a CSV or Prometheus."),
    "backtest": ("forescale_predictor.cli_backtest", "app", "Rolling-origin backtest of the LSTM against baselines."),
    "replay": ("forescale_sim.cli", "app", "Replay a real trace through the cluster simulator, once per policy."),
    "demo": ("forescale_devcluster.demo_cli", "app", "Run the whole loop on this machine (emulated cluster)."),
    "stress": ("forescale_stress.cli", "app", "Step load test with fault injection against an endpoint."),
    "variants": ("forescale_server.variants_cli", "app", "Build and measure lighter variants of the served encoder (pool B)."),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: forescale COMMAND [ARGS]...", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {text}" for name, (_, _, text) in COMMANDS.items()]
    lines += ["", "Run `forescale COMMAND --help` for a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Dispatch to a subcommand; returns the process exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(_usage())
        return 0
    name, rest = args[0], args[1:]
    if name not in COMMANDS:
        print(f"forescale: unknown command {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, attr, _ = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only a missing subcommand module is reported this way; a missing
        # dependency inside it is a real error and keeps its traceback.
        if exc.name != module_name:
            raise
        print(f"forescale: command {name!r} is not available in this build ({module_name} missing)", file=sys.stderr)
        return 2
    command = getattr(module, attr)
    try:
        command(args=rest, prog_name=f"forescale {name}", standalone_mode=True)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
