"""One simulated LLM pod, request by request, priced by the shared
DistServe-fit `DecoderProfile` (profiles/forescale_profiles/service_time.py).

The model, and why it is shaped so:
- **Concurrency limit.** At most `profile.max_batch` sequences run at once
  (vLLM's `max_num_seqs`); a request beyond it waits, first come first
  served, for the earliest running one to finish.
- **Prefill first.** vLLM's default scheduler runs a waiting prefill before
  the next decode iteration, so a prompt's time to first token (TTFT) is its
  wait for earlier prefills plus its own prefill: the prefill server is FCFS
  over prefill work only.
- **Decode as a fluid backlog.** Decode iterations run whenever no prefill
  does; each request adds `output_tokens x iteration / batch` of GPU time
  (one token per running sequence per iteration, the batch size being the
  sequences running when it is admitted), and every prefill delays the
  backlog by its own length. Finishing times are FCFS over that backlog:
  throughput is right; the order in which equal requests finish is simplified.
- **Context.** Prompts are truncated to the profile's context window
  (`max_context_tokens`, 2048 for OPT-13B): a server of that model would
  reject or truncate longer ones. Mooncake's long prompts are cut so.
- **Timeout.** A request whose first token would come after `timeout_s`
  (Envoy's default route timeout, 15 s) is rejected instead of queued, and
  costs the pod nothing; it counts as over the SLO.
"""

from __future__ import annotations

import heapq

from forescale_profiles.service_time import DecoderProfile

DEFAULT_TIMEOUT_S = 15.0


class LlmPod:
    """State of one pod's GPU. Times are seconds on the replay clock."""

    __slots__ = ("profile", "timeout_s", "prefill_free", "decode_end", "running", "last_admit", "inflight",
                 "last_prefill_ms", "last_prompt_tokens")

    def __init__(self, profile: DecoderProfile, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.profile = profile
        self.timeout_s = timeout_s
        self.prefill_free = 0.0
        self.decode_end = 0.0
        self.running: list[float] = []  # heap of finish times of admitted sequences
        self.last_admit = 0.0
        #: (finish time, request index) of every request this pod admitted, for crashes
        self.inflight: list[tuple[float, int]] = []
        #: the last admitted request's prefill (the device's work the pods' clock reads)
        self.last_prefill_ms = 0.0
        self.last_prompt_tokens = 0.0

    def outstanding(self, now: float) -> int:
        """Sequences admitted and not finished at `now` (least-request routing reads this)."""
        running = self.running
        while running and running[0] <= now:
            heapq.heappop(running)
        return len(running)

    def serve(self, index: int, now: float, input_tokens: float, output_tokens: float,
              precision: str, slowdown: float) -> float | None:
        """Admit request `index` arriving at `now`; its TTFT in seconds, or None when rejected."""
        profile = self.profile
        busy = self.outstanding(now)
        admit = max(now, self.last_admit)
        full = busy >= profile.max_batch
        if full:
            admit = max(admit, self.running[0])
        prompt = min(input_tokens, profile.max_context_tokens)
        prefill = profile.prefill_ms(precision, prompt, slowdown) / 1000.0
        start = max(admit, self.prefill_free)
        first_token = start + prefill
        if first_token - now > self.timeout_s:
            return None
        if full:
            heapq.heappop(self.running)
        self.last_admit = admit
        self.prefill_free = first_token
        self.last_prefill_ms, self.last_prompt_tokens = prefill * 1000.0, prompt
        if self.decode_end > start:
            self.decode_end += prefill  # the GPU was prefilling, not decoding
        batch = min(busy + 1, profile.max_batch)
        tokens = min(output_tokens, max(1.0, profile.max_context_tokens - prompt))
        context = prompt + tokens / 2.0
        per_token = profile.decode_iter_ms(precision, batch, batch * context, slowdown) / batch / 1000.0
        self.decode_end = max(self.decode_end, first_token) + tokens * per_token
        heapq.heappush(self.running, self.decode_end)
        self.inflight.append((self.decode_end, index))
        return first_token - now

    def unfinished(self, now: float) -> list[int]:
        """Indices of requests still running at `now` (they fail if the pod crashes)."""
        return [i for finish, i in self.inflight if finish > now]
