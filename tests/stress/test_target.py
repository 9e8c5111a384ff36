"""URL handling, the kill guard and the admin token (target, chaos, admin)."""

from __future__ import annotations

import os

import pytest

from forescale_stress.admin import load_token
from forescale_stress.chaos import check_kill_allowed, kill
from forescale_stress.errors import StressError
from forescale_stress.faults import parse_fault
from forescale_stress.target import parse_target, request_body


@pytest.mark.parametrize(
    "url, target_url, origin, kind",
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1/embeddings", "http://127.0.0.1:8000", "embeddings"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1/embeddings", "http://127.0.0.1:8000", "embeddings"),
        ("http://localhost:8000/v1", "http://localhost:8000/v1/embeddings", "http://localhost:8000", "embeddings"),
        ("https://api.example.com/openai/v1/completions", "https://api.example.com/openai/v1/completions",
         "https://api.example.com", "completions"),
        ("http://[::1]:9/v1/embeddings/", "http://[::1]:9/v1/embeddings", "http://[::1]:9", "embeddings"),
    ],
)
def test_parse_target(url, target_url, origin, kind):
    target = parse_target(url)
    assert (target.url, target.origin, target.kind) == (target_url, origin, kind)
    # admin URLs are derived from the origin only
    assert target.admin_url("/admin/faults") == origin + "/admin/faults"


@pytest.mark.parametrize(
    "url, message",
    [
        ("127.0.0.1:8000", "must be an http:// or https:// URL"),
        ("ftp://host/v1/embeddings", "must be an http:// or https:// URL"),
        ("http://host:99999/", "is not a valid URL"),
        ("http:///v1/embeddings", "must be an http:// or https:// URL with a host"),
        ("http://host/healthz", "is not an OpenAI endpoint"),
        ("http://host/v1/chat", "is not an OpenAI endpoint"),
        ("http://host/v1/embeddings?x=1", "must not carry a query"),
        ("http://user:pw@host/v1/embeddings", "must not carry a query, fragment or credentials"),
    ],
)
def test_bad_urls(url, message):
    with pytest.raises(StressError, match=message):
        parse_target(url)


@pytest.mark.parametrize(
    "url, loopback",
    [("http://127.0.0.1:1", True), ("http://127.8.9.1:1", True), ("http://localhost:1", True),
     ("http://[::1]:1", True), ("http://10.0.0.5:1", False), ("http://example.com", False),
     ("http://localhost.evil.com", False), ("http://0.0.0.0:1", False)],
)
def test_loopback(url, loopback):
    assert parse_target(url).is_loopback is loopback


def _alive(pid: int, sig: int) -> None:
    return None


@pytest.mark.parametrize("url", ["http://10.0.0.5:8000", "http://example.com/v1/embeddings", "http://0.0.0.0:80"])
def test_kill_is_refused_for_a_non_loopback_target(url):
    with pytest.raises(StressError, match="refusing to kill PID 4242: the target host .* is not a loopback address"):
        check_kill_allowed(parse_target(url), parse_fault("at=1s,kill,pid=4242"), probe=_alive)


def test_kill_guard_for_local_targets():
    target = parse_target("http://127.0.0.1:8000")
    check_kill_allowed(target, parse_fault("at=1s,kill,pid=4242"), probe=_alive)  # allowed

    def gone(pid, sig):
        raise ProcessLookupError

    with pytest.raises(StressError, match="no such process"):
        check_kill_allowed(target, parse_fault("at=1s,kill,pid=4242"), probe=gone)
    with pytest.raises(StressError, match="not a target process"):
        check_kill_allowed(target, parse_fault(f"at=1s,kill,pid={os.getpid()}"), probe=_alive)


def test_kill_sends_the_chosen_signal():
    sent = []
    assert kill(parse_fault("at=1s,kill,pid=99,signal=term"), send=lambda p, s: sent.append((p, s))) is None
    import signal

    assert sent == [(99, signal.SIGTERM)]


@pytest.mark.parametrize(
    "file_text, env, expected",
    [
        (None, {}, None),
        (None, {"FORESCALE_ADMIN_TOKEN": " s3cret \n"}, "s3cret"),
        ("from-file\n", {"FORESCALE_ADMIN_TOKEN": "env"}, "from-file"),
    ],
)
def test_load_token(tmp_path, file_text, env, expected):
    path = None
    if file_text is not None:
        path = tmp_path / "token"
        path.write_text(file_text)
    assert load_token(str(path) if path else None, env=env) == expected


def test_load_token_from_the_env_file_and_bad_files(tmp_path):
    path = tmp_path / "t"
    path.write_text("abc")
    assert load_token(None, env={"FORESCALE_ADMIN_TOKEN_FILE": str(path)}) == "abc"
    with pytest.raises(StressError, match="cannot read the admin token file"):
        load_token(str(tmp_path / "missing"), env={})
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(StressError, match="is empty"):
        load_token(str(tmp_path / "empty"), env={})


@pytest.mark.parametrize(
    "kind, expected",
    [("embeddings", b'{"input":["hi"],"model":"m"}'), ("completions", b'{"prompt":"hi","model":"m","max_tokens":16}')],
)
def test_request_bodies(kind, expected):
    assert request_body(kind, "m", "hi") == expected
