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
        (["--threads", "-1", "--emulate-gpu", "demo"], "--threads must be >= 0"),
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


# --- a precision this hardware cannot run: exit at start-up, or fall back when asked ---------------

CPU = ("fp32", "bf16", "int8")
CUDA = ("fp32", "fp16", "bf16")


@pytest.mark.parametrize("requested, supported, fallback, effective, fell_back", [
    ("fp16", CUDA, None, "fp16", False),
    ("fp16", CPU, "fp32", "fp32", True),
    ("int8", CUDA, "fp16", "fp16", True),
    ("int8", CPU, "fp32", "int8", False),  # a fallback is only used when needed
])
def test_choose_precision_runs_what_it_can(requested, supported, fallback, effective, fell_back):
    from forescale_server.config import choose_precision

    choice = choose_precision(requested, supported, fallback)
    assert choice.effective == effective and (choice.requested == requested) is fell_back


@pytest.mark.parametrize("fallback, message", [
    (None, "--precision fp16 cannot run on the CPU, which runs fp32, bf16, int8; choose one of those, or add "
           "--precision-fallback fp32"),
    ("fp16", "--precision fp16 cannot run on the CPU, nor can --precision-fallback fp16; it runs fp32, bf16, int8"),
])
def test_choose_precision_refuses_in_one_line(fallback, message):
    from forescale_server.config import choose_precision

    with pytest.raises(ValueError) as err:
        choose_precision("fp16", CPU, fallback, hardware="the CPU")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_serve_exits_at_start_up_on_a_precision_the_cpu_cannot_run():
    # The real encoder on the CPU: fp16 has no CPU kernels here. The server must not stay up unready.
    result = CliRunner().invoke(app, ["--precision", "fp16", "--device", "cpu", "--port", "1"])
    assert result.exit_code == 2, result.output
    assert "forescale serve: --precision fp16 cannot run on the CPU" in result.output
    assert "--precision-fallback fp32" in result.output and "Traceback" not in result.output


def test_the_operators_precision_is_named_when_it_cannot_run():
    result = CliRunner().invoke(app, ["--device", "cpu", "--port", "1"], env={"FORESCALE_PRECISION": "fp16"})
    assert result.exit_code == 2 and "FORESCALE_PRECISION fp16 cannot run on the CPU" in result.output


def test_an_unknown_fallback_is_refused():
    result = CliRunner().invoke(app, ["--emulate-gpu", "demo", "--precision-fallback", "fp64"])
    assert result.exit_code == 2 and "unknown --precision-fallback 'fp64'" in result.output


async def test_a_fallback_is_said_in_metrics(recording):
    from .conftest import serving

    async with serving(recording, precision="fp32", requested_precision="fp16") as (client, _):
        text = await (await client.get("/metrics")).text()
    assert ('forescale_precision_fallback_info{deployment="chat",fallback="fp32",pool="b",precision="fp32",'
            'requested="fp16"} 1.0') in text


async def test_no_fallback_no_fallback_series(recording):
    from .conftest import serving

    async with serving(recording) as (client, _):
        text = await (await client.get("/metrics")).text()
    assert "forescale_precision_fallback_info" not in text


def test_the_emulated_gpu_runs_fp16():
    from forescale_server.backend import make_backend
    from forescale_server.config import choose_precision

    backend = make_backend("minilm", "fp16", "demo")
    assert choose_precision("fp16", backend.supported_precisions(), None).effective == "fp16"
