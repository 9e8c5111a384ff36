"""`forescale serve`: run the model server.

Imports neither torch nor transformers unless a real model is served:
`--emulate-gpu` starts in about a second.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Optional

import typer

from forescale_profiles.precision import PRECISIONS
from forescale_profiles.service_time import PROFILES

from .config import (BatchingConfig, CacheConfig, ConnectionLimits, Labels, Limits, ServerConfig, choose_precision,
                     default_precision)
from .openmp_env import intra_op_threads, prefer_passive_wait
from .result_cache import POLICIES

app = typer.Typer(add_completion=False, rich_markup_mode=None, help="Run the Forescale model server.")
log = logging.getLogger("forescale.server")


def _fail(message: str) -> None:
    typer.echo(f"forescale serve: {message}", err=True)
    raise typer.Exit(2)


def _hardware(backend) -> str:
    """What the backend runs on, for a message: the torch device (cpu, cuda), or the emulated GPU."""
    if backend.emulated:
        return "the emulated GPU"
    device = getattr(backend, "device", None)
    kind = getattr(device, "type", None) or "this hardware"
    return {"cpu": "the CPU (no CUDA device, or --device cpu)", "cuda": "this CUDA device"}.get(kind, kind)


@app.command()
def serve(
    model: str = typer.Option("minilm", help="'minilm' (all-MiniLM-L6-v2, bundled) or a local Hugging Face model directory."),
    model_path: Optional[str] = typer.Option(None, "--model-path", metavar="DIR", help="Serve a variant built by `forescale variants build` (its manifest must name --model as its teacher)."),
    precision: Optional[str] = typer.Option(None, help=f"Initial precision: {', '.join(PRECISIONS)}. Default: $FORESCALE_PRECISION or fp32. "
                                                        "One this hardware cannot run exits at start-up."),
    precision_fallback: Optional[str] = typer.Option(None, "--precision-fallback", metavar="PRECISION",
                                                     help="Start at this precision when --precision cannot run on this "
                                                          "hardware, instead of exiting (said in the log and in "
                                                          "forescale_precision_fallback_info)."),
    host: str = typer.Option("127.0.0.1", help="Address to listen on."),
    port: int = typer.Option(8000, help="Port to listen on."),
    enable_faults: bool = typer.Option(False, "--enable-faults", help="Expose POST /admin/faults (chaos tests, demo)."),
    emulate_gpu: Optional[str] = typer.Option(None, "--emulate-gpu", metavar="PROFILE", help=f"Replace compute with a service-time profile ({', '.join(PROFILES)}); does not load torch."),
    device: str = typer.Option("auto", help="auto, cpu or cuda."),
    threads: int = typer.Option(0, help="torch CPU threads (0: usable CPUs less one, at least 1)."),
    max_batch: int = typer.Option(32, help="Largest batch sent to the model."),
    max_wait_ms: float = typer.Option(5.0, help="Longest a request waits for its batch to fill."),
    min_batch: int = typer.Option(4, help="Below this expected batch size a batch goes at once."),
    max_queue: int = typer.Option(1024, help="Queued items beyond which requests get 429."),
    cache_policy: str = typer.Option("lru", help=f"Result cache: {', '.join(POLICIES)}."),
    cache_size: int = typer.Option(10_000, help="Result-cache entries."),
    cache_window_s: float = typer.Option(300.0, help="Entry lifetime for --cache-policy window."),
    cache_keep_turns: int = typer.Option(2, help="Turns kept per conversation for --cache-policy turn."),
    max_body_bytes: int = typer.Option(1 << 20, help="Largest request body."),
    max_items: int = typer.Option(256, help="Most inputs in one request."),
    max_input_chars: int = typer.Option(8192, help="Longest input, in characters."),
    max_leak_mb: int = typer.Option(512, help="Bound on memory the leak fault may hold."),
    header_timeout_s: float = typer.Option(30.0, help="Seconds a client has to send a request's line and headers."),
    body_timeout_s: float = typer.Option(30.0, help="Seconds a client has to send a request's body after its headers."),
    max_connections: int = typer.Option(0, help="Open connections beyond which new ones are closed at accept "
                                                "(0: the file-descriptor limit less 128, 16 to 4096)."),
    log_level: str = typer.Option("INFO", help="DEBUG, INFO, WARNING or ERROR."),
) -> None:
    """Serve /v1/embeddings or /v1/completions, /metrics, /healthz, /readyz and the admin API."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        _fail(f"unknown --log-level {log_level!r}")
    logging.getLogger("forescale").setLevel(log_level.upper())
    # Before anything can import torch: OpenMP workers that spin while they wait
    # stall every batch on a shared node (openmp_env.py says why and what it measured).
    wait = prefer_passive_wait()
    log.debug("OMP_WAIT_POLICY: %s (%s)", wait.value, wait.action)
    if threads < 0:
        _fail(f"--threads must be >= 0 (0: usable CPUs less one), got {threads}")
    threads = intra_op_threads(threads)
    variant = None
    if model_path is not None:
        if emulate_gpu is not None:
            _fail("--model-path serves a real variant; it cannot be combined with --emulate-gpu")
        from .variant_manifest import VariantError, read_manifest

        try:
            variant = read_manifest(Path(model_path), teacher=model)
        except VariantError as exc:
            _fail(f"--model-path: {exc}")
    # Name where the precision came from in an error: the flag, the operator's FORESCALE_PRECISION, or the variant.
    source = ("--precision" if precision is not None
              else "FORESCALE_PRECISION" if os.environ.get("FORESCALE_PRECISION")
              else "the variant's precision" if variant is not None else "the default precision")
    try:
        if precision is None and variant is not None and not os.environ.get("FORESCALE_PRECISION"):
            precision = variant.precision  # the variant's own, e.g. int8 for distilled-int8
        precision = (precision or default_precision()).lower()
    except ValueError as exc:
        _fail(str(exc))
    if precision not in PRECISIONS:
        _fail(f"unknown --precision {precision!r}; expected one of {', '.join(PRECISIONS)}")
    fallback = precision_fallback.lower() if precision_fallback is not None else None
    if fallback is not None and fallback not in PRECISIONS:
        _fail(f"unknown --precision-fallback {precision_fallback!r}; expected one of {', '.join(PRECISIONS)}")
    if emulate_gpu is not None and emulate_gpu not in PROFILES:
        _fail(f"unknown --emulate-gpu profile {emulate_gpu!r}; known: {', '.join(sorted(PROFILES))}")
    if cache_policy not in POLICIES:
        _fail(f"unknown --cache-policy {cache_policy!r}; expected one of {', '.join(POLICIES)}")
    if not 0 < port < 65536:
        _fail(f"--port must be 1..65535, got {port}")
    if device not in ("auto", "cpu", "cuda"):
        _fail(f"unknown --device {device!r}; expected auto, cpu or cuda")
    for name, value in (("--max-batch", max_batch), ("--min-batch", min_batch), ("--max-queue", max_queue), ("--cache-size", cache_size),
                        ("--max-body-bytes", max_body_bytes), ("--max-items", max_items), ("--max-input-chars", max_input_chars)):
        if value < 1:
            _fail(f"{name} must be >= 1, got {value}")
    if max_wait_ms < 0:
        _fail(f"--max-wait-ms must be >= 0, got {max_wait_ms}")
    for name, seconds in (("--header-timeout-s", header_timeout_s), ("--body-timeout-s", body_timeout_s)):
        if not 0 < seconds <= 3600:
            _fail(f"{name} must be over 0 and at most 3600, got {seconds}")
    if max_connections < 0:
        _fail(f"--max-connections must be >= 0 (0: from the file-descriptor limit), got {max_connections}")

    from .admin_token import AdminToken
    from .backend import make_backend

    try:
        token = AdminToken.from_env()
        backend = make_backend(model, precision, emulate_gpu, device=device, threads=threads, max_batch=max_batch, variant=variant, variant_dir=model_path)
        choice = choose_precision(precision, backend.supported_precisions(), fallback, source=source,
                                  hardware=_hardware(backend))
    except ValueError as exc:
        _fail(str(exc))
    if choice.requested is not None:
        log.warning("%s %s cannot run on %s: starting at %s (--precision-fallback); "
                    "forescale_precision_fallback_info says so", source, choice.requested, _hardware(backend), choice.effective)
    config = ServerConfig(
        model=model, precision=choice.effective, requested_precision=choice.requested, host=host, port=port,
        enable_faults=enable_faults, emulate_gpu=emulate_gpu,
        device=device, threads=threads,
        limits=Limits(max_body_bytes, max_items, max_input_chars),
        batching=BatchingConfig(max_batch, max_wait_ms / 1000.0, min_batch, max_queue),
        cache=CacheConfig(cache_policy, cache_size, cache_window_s, cache_keep_turns),
        connections=ConnectionLimits(header_timeout_s, body_timeout_s, max_connections or None),
        labels=Labels.from_env(), max_leak_mb=max_leak_mb,
    )
    if emulate_gpu:
        log.warning("EMULATED GPU mode: profile %s; metrics carry forescale_emulated 1", emulate_gpu)
    if not token.enabled:
        log.info("admin API off (no FORESCALE_ADMIN_TOKEN_FILE or FORESCALE_ADMIN_TOKEN)")
    asyncio.run(_main(backend, config, token))


async def _main(backend, config: ServerConfig, token) -> None:
    from .http_app import run
    from .server import ModelServer

    server = ModelServer(backend, config, token)
    task = asyncio.current_task()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await run(server, config.host, config.port)
    except asyncio.CancelledError:
        log.info("shutting down")
    except OSError as exc:
        log.error("cannot listen on %s:%d: %s", config.host, config.port, exc.strerror)
        raise typer.Exit(1)
