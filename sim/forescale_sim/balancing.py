"""Envoy's least-request balancing inside a pool: power of two choices.

With equal host weights Envoy's `LEAST_REQUEST` policy draws `choice_count`
(default 2) distinct random healthy hosts and sends the request to the one with
fewer active requests (envoyproxy/envoy, source/extensions/load_balancing_policies/
least_request/least_request_lb.h). Istio and Envoy Gateway default to it.

Why two choices and not an exact scan of every pod: a pod that has just become
ready has no outstanding requests, and an exact scan sends it every request
until it has as many as the others, a burst of prefills queued on one pod.
Two random choices pick the new pod only when it is drawn, about 2/n of the
requests, so it fills over seconds, as it does behind a real gateway.
"""

from __future__ import annotations

from typing import Protocol, Sequence


class Server(Protocol):
    def outstanding(self, now: float) -> int: ...


def pick(servers: Sequence[Server], u1: float, u2: float, now: float) -> Server:
    """The less busy of two distinct pods drawn by the uniform numbers `u1`, `u2`
    in [0, 1); the first drawn wins a tie. `servers` must not be empty."""
    n = len(servers)
    if n == 1:
        return servers[0]
    x = int(u1 * n)
    y = int(u2 * (n - 1))
    y += y >= x  # the second choice is drawn from the other n - 1 pods
    first, second = servers[x], servers[y]
    return second if second.outstanding(now) < first.outstanding(now) else first
