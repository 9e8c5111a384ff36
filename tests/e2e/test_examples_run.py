"""Every file in crds/examples/ runs: applied to the emulated cluster with the real operator and the pod
runner, each of its pods becomes Ready without a restart, and the admin API answers the token the
operator wired into both pools (the playbook's precision switch, warm-up and debug logging need it).

Light on purpose (about half a minute): no Prometheus, the cheap emulated-GPU profile, a 1 s model load.
The examples are applied as written; the pod runner runs the emulated server instead of their images and
arguments, but honours their environment and secret volumes, so a token file without a volume, or a pool
without the token, fails here as it would on a cluster.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from forescale_devcluster.demo_stack import DemoStack, StackSettings, wait_until
from forescale_operator.admin_client import pod_endpoint, pod_is_ready

DOCKERFILE = Path(__file__).resolve().parents[2] / "docker" / "server.Dockerfile"

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "crds" / "examples").glob("*.yaml"))


def _documents() -> list[dict]:
    return [doc for path in EXAMPLES for doc in yaml.safe_load_all(path.read_text()) if doc]


def _resources() -> list[dict]:
    """The InferenceDeployments whose pools Forescale creates from templates. The adoption examples
    (a user's existing Deployments under a targetRef) are walked through, applied as written, by
    tests/operator/test_adopt_e2e.py and docs/migrate.md."""
    return [d for d in _documents() if d.get("kind") == "InferenceDeployment"
            and all("template" in pool for pool in d["spec"]["pools"].values())]


def _containers() -> list[tuple[str, dict]]:
    """Every model-server container the examples define: each pool template's and each Deployment's."""
    out = []
    for doc in _documents():
        name = doc["metadata"]["name"]
        if doc.get("kind") == "InferenceDeployment":
            out += [(f"{name}-{pool}", spec["template"]["spec"]["containers"][0])
                    for pool, spec in doc["spec"]["pools"].items() if "template" in spec]
        elif doc.get("kind") == "Deployment":
            out += [(f"deployment {name}", c) for c in doc["spec"]["template"]["spec"]["containers"]]
    return out


def _expected_pods(resources: list[dict]) -> dict[str, int]:
    """Deployment name -> pods it must run: each pool's minReplicas (the CRD's defaults: 1 when unset)."""
    return {f"{r['metadata']['name']}-{pool}": int(spec.get("minReplicas", 1))
            for r in resources for pool, spec in r["spec"]["pools"].items()}


def _pods_by_deployment(stack: DemoStack) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for pod in stack.list("v1", "pods"):
        labels = pod["metadata"].get("labels") or {}
        out.setdefault(f"{labels.get('forescale.io/deployment')}-{labels.get('forescale.io/pool')}", []).append(pod)
    return out


def _post(url: str, body: dict, token: str | None) -> int:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST", headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=5) as resp:  # noqa: S310 - loopback only
            return resp.status
    except urllib.error.HTTPError as exc:
        return exc.code


def _entrypoint_serve_args() -> list[str]:
    """What the server image's ENTRYPOINT passes to `forescale serve`, before the container's args."""
    line = next(line for line in DOCKERFILE.read_text().splitlines() if line.startswith("ENTRYPOINT"))
    argv = json.loads(line[len("ENTRYPOINT"):])
    return argv[argv.index("serve") + 1:]


@pytest.mark.parametrize("label, container", _containers(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_example_container_parses_as_forescale_serve(label, container):
    # The pod runner runs its own command, so the examples' args are checked here against the image's
    # entry point: `args: [serve, ...]` (serve twice) or an unknown flag would crash-loop on a cluster.
    import typer

    from forescale_server.cli import app

    command = typer.main.get_command(app)
    args = _entrypoint_serve_args() + [str(a) for a in container.get("args") or []]
    command.make_context("forescale serve", args)  # raises a usage error on a bad flag or a stray word
    ports = {p.get("name") for p in container.get("ports") or []}
    probe = (container.get("readinessProbe") or {}).get("httpGet") or {}
    assert "http" in ports and probe.get("path") == "/readyz", f"{label}: the pod must not be Ready before its model"


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_every_example_runs_and_answers_the_admin_token(tmp_path):
    resources = _resources()
    assert {r["metadata"]["name"] for r in resources} >= {"chat", "chat-full"}
    expected = _expected_pods(resources)
    settings = StackSettings(namespace="default", startup_seconds=1.0, prometheus=False, profile="demo",
                             workdir=str(tmp_path), max_pods=sum(expected.values()) + 4)
    with DemoStack(settings) as stack:
        for resource in resources:
            stack.apply(resource)

        def all_ready():
            pods = _pods_by_deployment(stack)
            return all(sum(pod_is_ready(p) for p in pods.get(name, [])) >= n for name, n in expected.items())

        try:
            wait_until(all_ready, 90, 0.5, f"every example's pods Ready ({expected})")
        except Exception as exc:
            pods = {k: [(p["metadata"]["name"], (p.get("status") or {}).get("containerStatuses")) for p in v]
                    for k, v in _pods_by_deployment(stack).items()}
            raise AssertionError(f"{exc}\npods: {pods}\npod runner log:\n"
                                 f"{stack.log('podrunner').read_text(errors='replace')[-3000:]}") from None

        pods = [p for name in expected for p in _pods_by_deployment(stack)[name] if pod_is_ready(p)]
        assert all(s["restartCount"] == 0 for p in pods for s in p["status"]["containerStatuses"]), \
            "a pod crashed on its way to Ready"
        for pod in pods:
            url = pod_endpoint(pod)
            name = pod["metadata"]["name"]
            assert _post(url + "/admin/model", {}, None) == 401, f"{name}: the admin API must ask for the token"
            for path, body in (("/admin/model", {}), ("/admin/log-level", {"level": "DEBUG", "seconds": 1}),
                               ("/admin/warmup", {"top": 1})):
                assert _post(url + path, body, stack.settings.admin_token) == 200, f"{name}: {path}"
        for resource in resources:
            status = (stack.infd(resource["metadata"]["name"]) or {}).get("status") or {}
            assert status.get("phase") not in (None, "Invalid"), (resource["metadata"]["name"], status)
            # The operator's own check agrees: both pools' pods hold its token.
            admin = next((c for c in status.get("conditions") or [] if c.get("type") == "AdminReady"), {})
            assert (admin.get("status"), admin.get("reason")) == ("True", "TokenWired"), (resource["metadata"]["name"],
                                                                                       admin)
