"""`forescale serve --emulate-gpu demo` as a process on a free port, with a known admin token (no torch)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from forescale_devcluster.procs import free_port


class ServedModel:
    def __init__(self, workdir: Path, token: str, *extra: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = token
        self.log_path = workdir / "serve.log"
        env = {**os.environ, "FORESCALE_ADMIN_TOKEN": token}
        env.pop("FORESCALE_ADMIN_TOKEN_FILE", None)
        self._log = self.log_path.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "forescale_cli.main", "serve", "--emulate-gpu", "demo", "--port", str(self.port), *extra],
            stdout=self._log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 30
        while True:
            try:
                if self.request("GET", "/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"forescale serve did not become ready: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.2)

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
                timeout: float = 10.0) -> tuple[int, bytes, dict[str, str]]:
        req = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - loopback only
                return resp.status, resp.read(), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read(), dict(exc.headers)

    def embed(self, text: str = "hello") -> int:
        return self.request("POST", "/v1/embeddings", json.dumps({"input": [text], "model": "minilm"}).encode(),
                            {"Content-Type": "application/json"})[0]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()
