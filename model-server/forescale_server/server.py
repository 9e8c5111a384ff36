"""The model server's logic, apart from HTTP: batching, caches, precision
switches, warm-up, profiling, faults and metrics around one backend."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from .admin_bodies import FaultRequest, WarmupRequest
from .admin_token import AdminToken
from .backend import COMPLETIONS, EMBEDDINGS, Backend
from .batcher import DynamicBatcher, Pending, QueueFull
from .completion_text import cut_at_stop
from .config import ServerConfig
from .embedding_encoding import dimensions_of, wire_form
from .errors import APIError, bad_request
from .faults import FaultState
from .hot_inputs import HotInputs
from .kv_cache import KVCacheFull
from .metrics import ServerMetrics
from .request_parsing import CompletionRequest, EmbeddingRequest, Item
from .result_cache import cache_key, make_cache
from .stage_profile import StageProfile

log = logging.getLogger("forescale.server")


class ModelServer:
    """One model, one batch worker, one result cache."""

    def __init__(self, backend: Backend, config: ServerConfig, token: AdminToken | None = None):
        self.backend = backend
        self.config = config
        self.limits = config.limits
        self.token = token or AdminToken(None)
        c = config.cache
        self.cache = make_cache(c.policy, c.capacity, c.window_s, c.keep_turns)
        self.hot = HotInputs()
        self.faults = FaultState(config.max_leak_mb)
        #: precision -> agreement with fp32, as measured at the last switch to it
        self.agreement: dict[str, float] = {}
        self.metrics = ServerMetrics(config.labels, self._state)
        b = config.batching
        self.batcher = DynamicBatcher(
            self._run_batch, b.max_batch, b.max_wait_s, b.min_batch, b.max_queue,
            on_dispatch=lambda n: self.metrics.observe_batch(self.backend.precision, n),
        )
        self.ready = False
        self.load_error: str | None = None
        self._swap_lock = asyncio.Lock()  # held by a running batch; a switch swaps between batches
        self._switch_lock = asyncio.Lock()  # one switch or warm-up plan at a time
        self._profile: StageProfile | None = None
        self._log_reset: asyncio.TimerHandle | None = None
        self._load_task: asyncio.Task | None = None
        self._created = int(time.time())

    # --- life cycle -------------------------------------------------------

    async def start(self) -> None:
        """Start the batch worker and load the model in the background."""
        self.batcher.start()
        self._load_task = asyncio.get_running_loop().create_task(self._load())

    async def wait_ready(self) -> None:
        """Wait for the load to finish (raises if it failed)."""
        if self._load_task is not None:
            await self._load_task
        if self.load_error:
            raise RuntimeError(self.load_error)

    async def _load(self) -> None:
        started = time.perf_counter()
        try:
            await self.backend.load()
            target = self.config.precision
            if target not in self.backend.supported_precisions():
                raise ValueError(f"precision {target!r} is not available here; supported: {', '.join(self.backend.supported_precisions())}")
            self.agreement[target] = await self.backend.prepare_precision(target)
            self.backend.activate_precision(target)
        except Exception as exc:  # noqa: BLE001 - reported through /readyz and the log
            self.load_error = f"model failed to load: {exc}"
            log.error("%s", self.load_error)
            return
        self.ready = True
        log.info(
            "ready: model %s (%s) at %s in %.2f s%s", self.backend.model_name, self.backend.task, self.backend.precision,
            time.perf_counter() - started, " [EMULATED GPU]" if self.backend.emulated else "",
        )

    async def stop(self) -> None:
        self.ready = False
        if self._load_task is not None and not self._load_task.done():
            self._load_task.cancel()
        await self.batcher.stop()

    # --- serving ----------------------------------------------------------

    def check_model(self, requested: str | None, task: str) -> None:
        """404 for a model this server does not serve; 400 for the wrong endpoint."""
        if requested is not None and requested not in self.backend.aliases:
            raise APIError(404, f"unknown model {requested!r}; this server serves {self.backend.model_name!r}",
                           "invalid_request_error", param="model", code="model_not_found")
        if task != self.backend.task:
            raise APIError(400, f"model {self.backend.model_name!r} serves /v1/{self.backend.task}, not /v1/{task}",
                           "invalid_request_error", param="model", code="unsupported_endpoint")
        if not self.ready:
            raise APIError(503, self.load_error or "model is still loading; poll /readyz", "server_error", code="server_not_ready")

    def check_tokens(self, items: list[Item], field: str) -> None:
        """400 for a token id outside the model's vocabulary, before it reaches
        a batch (where an out-of-range index would fail the whole batch)."""
        vocab = getattr(self.backend, "vocab_size", None)
        if vocab is None:
            return
        for i, item in enumerate(items):
            if isinstance(item, tuple):
                bad = next((t for t in item if t >= vocab), None)
                if bad is not None:
                    raise bad_request(f"'{field}[{i}]' holds token id {bad}; the vocabulary of {self.backend.model_name!r} has {vocab}", field)

    def models(self) -> dict:
        """`GET /v1/models`: the one model this server serves."""
        return {"object": "list", "data": [self.model_card(self.backend.model_name)]}

    def model_card(self, name: str) -> dict:
        """`GET /v1/models/{name}`; the server's aliases of its model are accepted."""
        if name not in self.backend.aliases:
            raise APIError(404, f"unknown model {name!r}; this server serves {self.backend.model_name!r}",
                           "invalid_request_error", param="model", code="model_not_found")
        return {"id": self.backend.model_name, "object": "model", "created": self._created, "owned_by": "forescale"}

    async def _run_batch(self, batch: list[Pending]) -> list[Any]:
        async with self._swap_lock:
            precision = self.backend.precision
            self._check_memory(precision, len(batch))
            try:
                result = await self.backend.run_batch([p.item for p in batch])
            except KVCacheFull as exc:
                raise APIError(503, f"KV cache full: {exc}", "server_error", {"Retry-After": "1"}, code="kv_cache_full") from None
            # A slowed or stalled device keeps the worker busy for longer.
            extra = self.faults.latency_s() + (self.faults.slowdown() - 1.0) * result.compute_s
            if extra > 0:
                await asyncio.sleep(extra)
                result.compute_s += extra
            self.metrics.observe_busy(precision, result.compute_s)
        stages = {"preprocess": result.preprocess_s, "compute": result.compute_s, "postprocess": result.postprocess_s}
        for p in batch:
            p.meta["precision"] = precision
            p.meta["stages"] = stages
        return result.outputs

    def _check_memory(self, precision: str, size: int) -> None:
        """Refuse a batch the memory-pressure fault leaves no room for, as a device allocator
        would: an out-of-memory warning, counted. The batcher then runs the batch's halves apart,
        so what fits still runs; a lone item that does not fit fails its request with a 503."""
        room = self.faults.batch_room(self.batcher.max_batch)
        if size <= room:
            return
        self.metrics.observe_oom(precision)
        log.warning("out of memory: the device refused the allocation for a batch of %d item(s); room for %d "
                    "(memory_pressure fault holds %.0f%% of the device's room)", size, room, 100 * self.faults.memory_pressure())
        raise APIError(503, f"out of memory: the device refused the allocation for this request's batch ({size} item(s), room for {room}); "
                            "retry later", "server_error", {"Retry-After": "1"}, code="out_of_memory")

    async def _compute(self, items: list, conversation: str | None, turn: int | None) -> tuple[list, dict[str, float], int]:
        """Results for `items` from the cache or the batcher; stage times; hits."""
        precision = self.backend.precision
        model = self.backend.model_name
        results: list[Any] = [None] * len(items)
        missing: list[int] = []
        # A cache that stopped working (the timed cache_flush fault) answers nothing and keeps nothing.
        cache_on = not self.faults.cache_off()
        for i, item in enumerate(items):
            value = self.cache.get(cache_key(model, precision, item)) if cache_on else None
            if value is None:
                missing.append(i)
            else:
                results[i] = value
        self.metrics.observe_cache(precision, len(items) - len(missing), len(missing))
        stages = {"queue": 0.0, "preprocess": 0.0, "compute": 0.0, "postprocess": 0.0}
        if missing:
            pendings = []
            try:
                for i in missing:
                    pendings.append(self.batcher.submit_nowait(items[i]))
            except QueueFull as exc:
                for p in pendings:  # already queued items of this request are not needed any more
                    p.future.cancel()
                raise APIError(429, str(exc), "rate_limit_error", {"Retry-After": str(exc.retry_after_s)}, code="rate_limit_exceeded") from None
            outputs = await asyncio.gather(*(p.future for p in pendings))
            now_precision = self.backend.precision
            for i, p, out in zip(missing, pendings, outputs):
                results[i] = out
                if p.meta["precision"] == now_precision and cache_on:  # a switch emptied the cache meanwhile
                    self.cache.put(cache_key(model, p.meta["precision"], items[i]), out, conversation, turn)
                stages["queue"] = max(stages["queue"], p.queue_s)
                for k, v in p.meta["stages"].items():
                    stages[k] = max(stages[k], v)
        # Only after they were served: an input that failed is never replayed by a warm-up.
        for item in items:
            self.hot.record(item)
        return results, stages, len(items) - len(missing)

    def _observe(self, stages: dict[str, float], total_s: float) -> None:
        precision = self.backend.precision
        for stage, seconds in stages.items():
            self.metrics.observe_stage(precision, stage, seconds)
        self.metrics.observe_stage(precision, "total", total_s)
        if self._profile is not None:
            self._profile.record({**stages, "total": total_s})

    async def embeddings(self, req: EmbeddingRequest) -> str:
        """The JSON text of an OpenAI embeddings response."""
        started = time.perf_counter()
        self.check_model(req.model, EMBEDDINGS)
        self.check_tokens(req.inputs, "input")
        results, stages, _ = await self._compute(req.inputs, req.conversation, req.turn)
        native = dimensions_of(results[0][0])
        if req.dimensions is not None and req.dimensions != native:
            # MiniLM is not trained for shortened (Matryoshka) vectors: cutting one would change its meaning.
            raise bad_request(f"'dimensions' must be {native} for {self.backend.model_name!r}, which has no shorter embeddings; "
                              f"got {req.dimensions}", "dimensions")
        tokens = sum(r[1] for r in results)
        self.metrics.observe_tokens(self.backend.precision, [r[1] for r in results])
        data = ",".join(f'{{"object":"embedding","index":{i},"embedding":{wire_form(r[0], req.encoding_format)}}}'
                        for i, r in enumerate(results))
        body = (
            f'{{"object":"list","data":[{data}],"model":{json.dumps(self.backend.model_name)},'
            f'"usage":{{"prompt_tokens":{tokens},"total_tokens":{tokens}}}}}'
        )
        self._observe(stages, time.perf_counter() - started)
        return body

    async def completions(self, req: CompletionRequest) -> dict:
        """An OpenAI completions response (greedy decoding, so the `n` choices
        of one prompt are equal)."""
        started = time.perf_counter()
        self.check_model(req.model, COMPLETIONS)
        self.check_tokens(req.prompts, "prompt")
        items = [(p, req.max_tokens) for p in req.prompts]
        results, stages, _ = await self._compute(items, req.conversation, req.turn)
        prompt_tokens = sum(r[1] for r in results)
        completion_tokens = sum(r[2] for r in results) * req.n
        self.metrics.observe_tokens(self.backend.precision, [r[1] for r in results], [r[2] for r in results])
        choices = []
        for prompt, (text, _, _) in zip(req.prompts, results):
            text, finish = cut_at_stop(text, req.stop)
            if req.echo:
                text = prompt + text
            for _ in range(req.n):
                choices.append({"index": len(choices), "text": text, "finish_reason": finish, "logprobs": None})
        self._observe(stages, time.perf_counter() - started)
        return {
            "id": f"cmpl-{time.time_ns():x}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": self.backend.model_name,
            "choices": choices,
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
        }

    # --- admin ------------------------------------------------------------

    async def switch_precision(self, precision: str) -> dict:
        """Prepare the variant while serving goes on, then swap between batches.
        Queued requests are served at the new precision; none is dropped."""
        supported = self.backend.supported_precisions()
        if precision not in supported:
            raise bad_request(f"precision {precision!r} is not available on this server; supported: {', '.join(supported)}")
        if not self.ready:
            raise APIError(503, "model is still loading; poll /readyz", "server_not_ready")
        async with self._switch_lock:
            previous = self.backend.precision
            started = time.perf_counter()
            agreement = await self.backend.prepare_precision(precision)
            async with self._swap_lock:
                self.backend.activate_precision(precision)
                self.cache.clear()
            self.agreement[precision] = agreement
            self.metrics.observe_switch(precision)
            seconds = time.perf_counter() - started
        log.warning("precision switched %s -> %s in %.2f s; agreement with fp32 %.5f%s", previous, precision, seconds, agreement,
                    " (emulated table)" if self.backend.emulated else "")
        return {"precision": precision, "previous": previous, "agreement": agreement, "seconds": round(seconds, 3), "emulated": self.backend.emulated,
                "variant": self.variant_name()}

    def variant_name(self) -> str | None:
        """The built variant served (`--model-path`), None for the model itself."""
        info = self.variant_info()
        return info["variant"] if info else None

    def variant_info(self) -> dict | None:
        info = getattr(self.backend, "variant_info", None)
        return info() if info else None

    def model_info(self) -> dict:
        """`POST /admin/model`: what is served, at which precision, from which variant."""
        return {"model": self.backend.model_name, "task": self.backend.task, "precision": self.backend.precision,
                "supported_precisions": list(self.backend.supported_precisions()), "emulated": self.backend.emulated,
                "variant": self.variant_info(), "served_bytes": self._served_bytes()}

    def _served_bytes(self) -> int | None:
        size = getattr(self.backend, "served_bytes", None)
        return size() if size else None

    async def warmup(self, req: WarmupRequest) -> dict:
        """Compute and cache the given inputs, or the `top` most frequent recent
        ones, through the normal queue (waiting for room rather than failing)."""
        if not self.ready:
            raise APIError(503, "model is still loading; poll /readyz", "server_not_ready")
        if req.inputs is not None:
            items: list = req.inputs if self.backend.task == EMBEDDINGS else [(p, 16) for p in req.inputs]
        else:
            items = self.hot.top(req.top or 0)
        started = time.perf_counter()
        chunk = self.batcher.max_batch
        warmed = 0
        for start in range(0, len(items), chunk):
            part = items[start:start + chunk]
            while True:
                try:
                    await self._compute(part, None, None)
                    break
                except APIError as exc:
                    if exc.status != 429:
                        raise
                    await asyncio.sleep(0.05)  # the queue is full of real traffic: let it pass first
            warmed += len(part)
        return {"warmed": warmed, "cache_entries": len(self.cache), "seconds": round(time.perf_counter() - started, 3)}

    def set_log_level(self, level: str, seconds: float) -> dict:
        """Raise (or lower) the server's log level for `seconds`, then restore it."""
        logger = logging.getLogger("forescale")
        previous = logging.getLevelName(logger.getEffectiveLevel())
        if self._log_reset is not None:
            self._log_reset.cancel()
            previous = self._log_restore_to
        else:
            self._log_restore_to = previous
        logger.setLevel(level)
        self._log_reset = asyncio.get_running_loop().call_later(seconds, self._restore_log_level)
        log.warning("log level %s for %.0f s (then %s)", level, seconds, previous)
        return {"level": level, "seconds": seconds, "restore_to": previous}

    def _restore_log_level(self) -> None:
        logging.getLogger("forescale").setLevel(self._log_restore_to)
        self._log_reset = None
        log.warning("log level restored to %s", self._log_restore_to)

    async def profile(self, requests: int, timeout_s: float) -> dict:
        """Profile the next `requests` requests (or until the timeout)."""
        if self._profile is not None:
            raise APIError(409, "a profile is already being captured", "conflict")
        session = StageProfile(requests)
        self._profile = session
        torch_on = await self.backend.profile_begin()
        try:
            try:
                await asyncio.wait_for(session.done.wait(), timeout_s)
            except asyncio.TimeoutError:
                pass
        finally:
            self._profile = None
            torch_table = await self.backend.profile_end() if torch_on else ""
        return {
            "requests": len(session.rows),
            "requested": requests,
            "complete": len(session.rows) >= requests,
            "emulated": self.backend.emulated,
            "stages": session.summary(),
            "table": torch_table or session.table(),
        }

    async def fault(self, req: FaultRequest) -> dict:
        """Apply one fault (the admin route checks --enable-faults)."""
        kv: dict = {}
        if req.latency_ms is not None:
            self.faults.add_latency(req.latency_ms, req.seconds or 0)
        elif req.slowdown is not None:
            self.faults.add_slowdown(req.slowdown, req.seconds or 0)
        elif req.memory_pressure is not None:
            self.faults.add_memory_pressure(req.memory_pressure, req.seconds or 0)
        elif req.cache_flush:
            self.cache.clear()
            if req.seconds:
                self.faults.add_cache_off(req.seconds)
        elif req.leak_mb is not None:
            try:
                self.faults.leak(req.leak_mb)
            except ValueError as exc:
                raise bad_request(str(exc), "leak_mb") from None
        elif req.kv_fragmentation is not None:
            leak_kv = getattr(self.backend, "leak_kv", None)
            if leak_kv is None:
                raise bad_request(f"'kv_fragmentation': model {self.backend.model_name!r} ({self.backend.task}) has no KV cache; "
                                  "the fault needs a decoder", "kv_fragmentation")
            if not self.ready:
                raise APIError(503, "model is still loading; poll /readyz", "server_error", code="server_not_ready")
            kv = await leak_kv(req.kv_fragmentation)
        elif req.clear:
            self.faults.clear()
            leak_kv = getattr(self.backend, "leak_kv", None)
            if leak_kv is not None and self.ready:
                kv = await leak_kv(0)
        log.warning("fault injected: %s", {k: v for k, v in vars(req).items() if v not in (None, False)})
        return {"faults": {**self.faults.describe(), **kv}, "cache_entries": len(self.cache)}

    # --- metrics ----------------------------------------------------------

    def _state(self) -> dict:
        state = {
            "precision": self.backend.precision,
            "queue_depth": self.batcher.depth,
            "emulated": 1 if self.backend.emulated else 0,
            "agreement": dict(self.agreement),
            "cache_entries": len(self.cache),
            "leaked_bytes": self.faults.leaked_mb << 20,
            "variant": self.variant_info(),
        }
        if self.config.requested_precision is not None:
            state["precision_fallback"] = {"requested": self.config.requested_precision, "fallback": self.config.precision}
        state.update(self.backend.stats())
        memory = getattr(self.backend, "device_memory", None)
        if memory is not None:
            # Emulation: what the faults hold counts as device memory (emulated_memory.py).
            state["gpu_memory_bytes"] = memory.used_bytes(self.backend.precision, self.faults.leaked_mb << 20,
                                                          self.faults.memory_pressure())
        return state
