"""Bounds on what one client can hold: open connections and the time to send a request.

Without them, 3,000 half-sent requests (a slowloris) were held for 100 s and,
at 256 file descriptors, a normal request timed out. aiohttp has neither a
header read timeout nor a connection cap, so each connection is wrapped here:

- beyond `max_connections` open ones, a new connection is closed as it is
  accepted (the client sees a reset and may retry; the ones already open are
  served);
- a connection must deliver a complete request head (request line and
  headers) within `header_timeout_s` of its first byte, or of opening, or it is
  closed. The clock stops while a handler runs (`request_started`) and starts
  again for bytes of the next request. The body has its own bound, applied
  where it is read (`http_app._body`).

An idle keep-alive connection between requests is aiohttp's keep-alive timeout's.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Callable

log = logging.getLogger("forescale.server")

#: connections the cap leaves for everything else the process opens (model files, logs, sockets it dials)
FD_HEADROOM = 128


def default_max_connections(soft_fd_limit: int | None = None) -> int:
    """A cap under the process's file-descriptor limit: the limit less `FD_HEADROOM`, 16 to 4,096."""
    if soft_fd_limit is None:
        soft_fd_limit, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft_fd_limit == resource.RLIM_INFINITY:
            soft_fd_limit = 1 << 20
    return max(16, min(4096, soft_fd_limit - FD_HEADROOM))


class ConnectionGuard:
    """A protocol factory around aiohttp's: counts connections and times request heads."""

    def __init__(self, factory: Callable[[], asyncio.Protocol], *, max_connections: int, header_timeout_s: float) -> None:
        if max_connections < 1 or header_timeout_s <= 0:
            raise ValueError("max_connections must be >= 1 and header_timeout_s > 0")
        self._factory = factory
        self.max_connections = max_connections
        self.header_timeout_s = header_timeout_s
        self._open: dict[asyncio.BaseTransport, _Guarded] = {}
        #: connections closed at accept because the cap was reached
        self.refused = 0
        #: connections closed because a request head did not arrive in time
        self.timed_out = 0

    @property
    def open(self) -> int:
        return len(self._open)

    def __call__(self) -> asyncio.Protocol:
        return _Guarded(self)

    def request_started(self, transport: asyncio.BaseTransport | None) -> None:
        """A handler runs on this connection: its head arrived; stop the clock."""
        conn = self._open.get(transport) if transport is not None else None
        if conn is not None:
            conn.handling = True
            conn.disarm()

    def request_finished(self, transport: asyncio.BaseTransport | None) -> None:
        """The handler returned; bytes already received for the next request start the clock again."""
        conn = self._open.get(transport) if transport is not None else None
        if conn is not None:
            conn.handling = False
            if conn.received_while_handling:
                conn.received_while_handling = False
                conn.arm()


class _Guarded(asyncio.Protocol):
    """One connection: aiohttp's handler inside, the cap and the head deadline around it."""

    def __init__(self, guard: ConnectionGuard) -> None:
        self._guard = guard
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self.handling = False
        self.received_while_handling = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        guard = self._guard
        if guard.open >= guard.max_connections:
            guard.refused += 1
            if guard.refused in (1, 10, 100) or guard.refused % 1000 == 0:
                log.warning("refused a connection: %d open, the limit is %d (%d refused so far)",
                            guard.open, guard.max_connections, guard.refused)
            transport.abort()  # type: ignore[attr-defined]
            return
        self._transport = transport  # type: ignore[assignment]
        guard._open[transport] = self
        self._inner = guard._factory()
        self._inner.connection_made(transport)
        self.arm()  # a connection that never sends a byte is held no longer than one that sends half a head

    def arm(self) -> None:
        if self._deadline is None and self._transport is not None:
            self._deadline = asyncio.get_running_loop().call_later(self._guard.header_timeout_s, self._expire)

    def disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expire(self) -> None:
        self._deadline = None
        if self._transport is not None and not self.handling:
            self._guard.timed_out += 1
            self._transport.close()

    def data_received(self, data: bytes) -> None:
        if self._inner is None:
            return
        if self.handling:
            self.received_while_handling = True
        else:
            self.arm()
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self.disarm()
        if self._inner is None:
            return
        self._guard._open.pop(self._transport, None)
        self._inner.connection_lost(exc)
        self._inner = None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()
