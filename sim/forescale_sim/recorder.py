"""What a replay measured, tick by tick and request by request, and the
read-only view of it that policies decide from (only the past is visible)."""

from __future__ import annotations

import numpy as np

from .metrics import WINDOW_SECONDS

POOL_INDEX = {"a": 0, "b": 1}


class Recorder:
    """Per-tick counts per pool, plus per-request TTFTs for request traces.

    A request's latency becomes visible to policies when it completes (its
    first token, or its rejection at the timeout), as a Prometheus histogram
    sees it, never at its arrival."""

    def __init__(self, ticks: int, n_requests: int, quantile: float, slo_ms: float, timeout_s: float) -> None:
        self.ticks = ticks
        self.quantile = quantile
        self.slo_s = slo_ms / 1000.0
        self.timeout_s = timeout_s
        self.arrivals = np.zeros((2, ticks))
        self.over = np.zeros((2, ticks))  # fluid pools only; request pools derive it
        self.rejected = np.zeros((2, ticks))
        self.latency_ms = np.full((2, ticks), np.nan)  # fluid pools: the tick's quantile
        self.tail_base = np.zeros((2, ticks))  # fluid pools: each tick's latency distribution
        self.tail_scale = np.zeros((2, ticks))
        self.backlog = np.zeros((2, ticks))
        # the device's work per tick (the pods' clock): ms spent, units (batches or prefills), their total size
        self.device_ms = np.zeros((2, ticks))
        self.units = np.zeros((2, ticks))
        self.unit_size = np.zeros((2, ticks))
        self.req_arrival = np.full(n_requests, np.nan)
        self.req_pool = np.full(n_requests, -1, dtype=np.int8)
        self.req_latency = np.full(n_requests, np.nan)  # seconds; inf = rejected or failed
        self.req_done = np.full(n_requests, np.inf)
        # per-tick state for plots
        self.replicas = np.zeros((2, ticks))
        self.ready = np.zeros((2, ticks))
        self.weight_b = np.zeros(ticks)

    # --- writing ---------------------------------------------------------
    def request(self, index: int, pool: str, arrival: float, latency_s: float | None) -> None:
        p = POOL_INDEX[pool]
        self.req_arrival[index] = arrival
        self.req_pool[index] = p
        self.arrivals[p, int(arrival)] += 1
        if latency_s is None:
            self.req_latency[index] = np.inf
            self.req_done[index] = arrival + self.timeout_s
            self.rejected[p, int(arrival)] += 1
        else:
            self.req_latency[index] = latency_s
            self.req_done[index] = arrival + latency_s

    def fail(self, indices: list[int], now: float) -> None:
        """Requests that were running on a crashed pod."""
        for i in indices:
            if np.isfinite(self.req_latency[i]):
                self.rejected[self.req_pool[i], int(self.req_arrival[i])] += 1
            self.req_latency[i] = np.inf
            self.req_done[i] = min(self.req_done[i], now) if self.req_done[i] > now else now

    def tick(self, t: int, pool: str, arrivals: float, over: float, rejected: float, latency_ms: float, backlog: float,
             tail_base_ms: float | None = None, tail_scale_ms: float = 0.0) -> None:
        p = POOL_INDEX[pool]
        self.tail_base[p, t] = latency_ms if tail_base_ms is None else tail_base_ms
        self.tail_scale[p, t] = tail_scale_ms
        self.arrivals[p, t] += arrivals
        self.over[p, t] += over
        self.rejected[p, t] += rejected
        self.latency_ms[p, t] = latency_ms
        self.backlog[p, t] = backlog

    def work(self, t: int, pool: str, device_ms: float, units: float, size: float) -> None:
        """`units` of device work (batches of an encoder, prefills of a decoder) of total `size`
        (items, prompt tokens) took `device_ms` in tick `t`."""
        p = POOL_INDEX[pool]
        self.device_ms[p, t] += device_ms
        self.units[p, t] += units
        self.unit_size[p, t] += size

    # --- reading (policies) ------------------------------------------------
    def rate(self, pool: str | None, now: float, seconds: float) -> float:
        """Arrivals per second over the last `seconds` before `now`."""
        hi = int(now)
        lo = max(0, hi - int(round(seconds)))
        if hi <= lo:
            return 0.0
        rows = self.arrivals if pool is None else self.arrivals[POOL_INDEX[pool]]
        return float(np.sum(rows[..., lo:hi])) / (hi - lo)

    def _done_mask(self, pool: str | None, now: float, seconds: float) -> np.ndarray:
        mask = (self.req_done >= now - seconds) & (self.req_done < now)
        if pool is not None:
            mask &= self.req_pool == POOL_INDEX[pool]
        return mask

    def latency_q(self, pool: str | None, now: float, seconds: float) -> float | None:
        """The SLO quantile of latency (ms) of requests completed in the last `seconds`; None without any."""
        if self.req_arrival.size:
            values = self.req_latency[self._done_mask(pool, now, seconds)]
            if values.size == 0:
                return None
            values = np.where(np.isfinite(values), values, self.timeout_s)
            return float(np.quantile(values, self.quantile, method="higher")) * 1000.0
        lo, hi = max(0, int(now - seconds)), int(now)
        rows = [POOL_INDEX[pool]] if pool is not None else [0, 1]
        w = self.arrivals[rows, lo:hi].ravel()
        if w.sum() <= 0:
            return None
        return mixture_quantile_ms(
            w, self.rejected[rows, lo:hi].ravel(), self.latency_ms[rows, lo:hi].ravel(),
            self.tail_base[rows, lo:hi].ravel(), self.tail_scale[rows, lo:hi].ravel(),
            self.quantile, 1000.0 * self.timeout_s,
        )

    def error_rate(self, pool: str | None, now: float, seconds: float) -> float | None:
        """Share of requests rejected or failed among those completed in the last `seconds`
        (a rejection is seen when its timeout expires, a crash failure at the crash)."""
        if self.req_arrival.size:
            mask = self._done_mask(pool, now, seconds)
            n = int(np.count_nonzero(mask))
            return float(np.count_nonzero(np.isinf(self.req_latency[mask]))) / n if n else None
        lo, hi = max(0, int(now - seconds)), int(now)
        rows = [POOL_INDEX[pool]] if pool is not None else [0, 1]
        n = self.arrivals[rows, lo:hi].sum()
        return float(self.rejected[rows, lo:hi].sum() / n) if n > 0 else None

    def over_slo_fraction(self, pool: str | None, now: float, seconds: float) -> float | None:
        """Share of requests completed in the last `seconds` that were over the SLO, rejected or
        failed included (what a Prometheus histogram's bucket at the SLO gives); None without any."""
        if self.req_arrival.size:
            mask = self._done_mask(pool, now, seconds)
            n = int(np.count_nonzero(mask))
            return float(np.count_nonzero(self.req_latency[mask] > self.slo_s)) / n if n else None
        lo, hi = max(0, int(now - seconds)), int(now)
        rows = [POOL_INDEX[pool]] if pool is not None else [0, 1]
        n = self.arrivals[rows, lo:hi].sum()
        return float(self.over[rows, lo:hi].sum() / n) if n > 0 else None

    def service(self, pool: str, now: float, seconds: float) -> tuple[float | None, float | None]:
        """(mean device ms per unit, mean unit size) over the last `seconds`; (None, None) without work."""
        p = POOL_INDEX[pool]
        lo, hi = max(0, int(now - seconds)), int(now)
        units = float(self.units[p, lo:hi].sum())
        if units <= 0:
            return None, None
        return float(self.device_ms[p, lo:hi].sum()) / units, float(self.unit_size[p, lo:hi].sum()) / units

    def queue_depth(self, pool: str, now: float) -> float:
        """Requests arrived and still waiting for their first token (or the fluid backlog)."""
        p = POOL_INDEX[pool]
        if self.req_arrival.size:
            return float(np.count_nonzero((self.req_pool == p) & (self.req_arrival <= now) & (self.req_done > now)))
        return float(self.backlog[p, max(0, int(now) - 1)])

    # --- the report ---------------------------------------------------------
    def window_counts(self, window_seconds: float = WINDOW_SECONDS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per 10 s window (by arrival): requests, requests over the SLO (rejected included), quantile latency ms."""
        n_w = int(np.ceil(self.ticks / window_seconds))
        if self.req_arrival.size:
            seen = np.isfinite(self.req_arrival)
            w = (self.req_arrival[seen] // window_seconds).astype(np.int64)
            lat = self.req_latency[seen]
            requests = np.bincount(w, minlength=n_w)[:n_w].astype(float)
            over = np.bincount(w, weights=(lat > self.slo_s).astype(float), minlength=n_w)[:n_w]
            q = np.full(n_w, np.nan)
            order = np.argsort(w, kind="stable")
            ws, ls = w[order], np.where(np.isfinite(lat[order]), lat[order], self.timeout_s)
            bounds = np.searchsorted(ws, np.arange(n_w + 1))
            for i in range(n_w):
                if bounds[i + 1] > bounds[i]:
                    q[i] = np.quantile(ls[bounds[i]:bounds[i + 1]], self.quantile, method="higher") * 1000.0
            return requests, over, q
        pad = n_w * int(window_seconds) - self.ticks
        arr = np.pad(self.arrivals.sum(0), (0, pad)).reshape(n_w, -1)
        over = np.pad(self.over.sum(0), (0, pad)).reshape(n_w, -1)
        lat = np.pad(np.nan_to_num(np.where(np.isfinite(self.latency_ms), self.latency_ms, 1000.0 * self.timeout_s), nan=0.0) * self.arrivals, ((0, 0), (0, pad))).sum(0).reshape(n_w, -1)
        with np.errstate(invalid="ignore", divide="ignore"):
            q = lat.sum(1) / arr.sum(1)
        return arr.sum(1), over.sum(1), q


def mixture_quantile_ms(arrivals: np.ndarray, rejected: np.ndarray, latency_ms: np.ndarray, base_ms: np.ndarray,
                        scale_ms: np.ndarray, quantile: float, timeout_ms: float) -> float:
    """The `quantile` of the latency of all requests of several fluid ticks (ms).

    Each tick's served requests take at least `base_ms`, plus an exponential
    tail of mean `scale_ms` (none when 0: all at `base_ms`); its rejected ones
    count at the timeout. The quantile of the mixture is what a histogram over
    the whole step reports; averaging the ticks' own quantiles would hide a
    bad second among good ones.
    """
    served = np.maximum(arrivals - rejected, 0.0)
    served = np.where(np.isfinite(latency_ms), served, 0.0)
    total = float(arrivals.sum())
    tail = 1.0 - quantile

    def survival(x: float) -> float:
        # np.where computes every branch: the exponent is clipped at 0 where x < base_ms (that branch is not
        # taken there), so that a far-off base cannot overflow exp (a RuntimeWarning in the unseen-traffic bench)
        wait = np.maximum(x - base_ms, 0.0) / np.where(scale_ms > 0, scale_ms, 1.0)
        over = np.where(x < base_ms, 1.0, np.where(scale_ms > 0, np.exp(-wait), 0.0))
        return (float((served * over).sum()) + (float(rejected.sum()) if x < timeout_ms else 0.0)) / total

    finite = np.isfinite(latency_ms) & (served > 0)
    hi = max(float(latency_ms[finite].max()) if finite.any() else 0.0, timeout_ms if rejected.sum() > 0 else 0.0)
    if survival(hi) > tail:
        return hi
    lo = 0.0
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        if survival(mid) > tail:
            lo = mid
        else:
            hi = mid
    return hi
