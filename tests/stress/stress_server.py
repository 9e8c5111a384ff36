"""The fake model server (fake_server.py) as a subprocess, for the stress tests. A module of its own
so that tests import it by a name no other test folder uses (not `conftest`)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).parent


@dataclass
class Server:
    """A fake model server process."""

    proc: subprocess.Popen
    port: int
    token: str | None
    token_file: Path | None
    log_file: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def admin_calls(self) -> list:
        if not self.log_file.exists():
            return []
        return [json.loads(line) for line in self.log_file.read_text().splitlines()]

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def start_fake_server(tmp: Path, *, token: str | None = None, faults: bool = False, service_ms: float = 2.0,
                      workers: int = 4, cold_seconds: float = 0.0, cold_factor: float = 1.0) -> Server:
    """Start `fake_server.py` on a free port and wait until it listens (cold for `cold_seconds` after its
    first request: service time x `cold_factor`)."""
    args = [sys.executable, str(HERE / "fake_server.py"), "--port", "0", "--service-ms", str(service_ms),
            "--workers", str(workers), "--log-file", str(tmp / "admin.log"),
            "--cold-seconds", str(cold_seconds), "--cold-factor", str(cold_factor)]
    token_file = None
    if token:
        token_file = tmp / "token"
        token_file.write_text(token)
        args += ["--token-file", str(token_file)]
    if faults:
        args.append("--enable-faults")
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise RuntimeError(f"fake server did not start: {line!r}")
    return Server(proc, int(line.split()[1]), token, token_file, tmp / "admin.log")
