"""docs/predictor.md's "Load a trained model into modelRef", followed literally: `forescale train`, then the
page's `kubectl create configmap`, against the emulated API server; the operator's forecaster loads it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from forescale_cli.main import main
from forescale_operator.children import Owner
from forescale_operator.forecasting.forecaster import PredictorForecastSource
from forescale_operator.spec import parse_spec

ROOT = Path(__file__).resolve().parents[3]
KUBECTL = ROOT / "bin" / "kubectl"

pytestmark = pytest.mark.skipif(not KUBECTL.exists(), reason="bin/kubectl is installed by `make tools`")


def _documented_command() -> str:
    """The kubectl line of docs/predictor.md's "Load a trained model into modelRef" (continuation lines joined)."""
    text = (ROOT / "docs" / "predictor.md").read_text().replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("kubectl -n ml create configmap")]
    assert len(lines) == 1, lines
    return " ".join(lines[0].split())


def _series(path: Path) -> Path:
    rows = "".join(f"{1_700_000_000 + i * 15},{120 + (i % 40)},{20 + (i % 40) / 4}\n" for i in range(400))
    path.write_text("timestamp,latency_ms,rate\n" + rows)
    return path


async def test_a_model_loaded_as_the_docs_say_is_the_one_the_operator_uses(cluster, api, example, tmp_path, capsys):
    model = tmp_path / "chat.pt"
    assert main(["train", "--csv", str(_series(tmp_path / "history.csv")), "--latency-column", "latency_ms",
                 "--rate-column", "rate", "--epochs", "1", "--quiet", "--out", str(model)]) == 0, capsys.readouterr().err
    # the page's command as written there; the emulated API server serves no OpenAPI, so kubectl cannot
    # validate against it (--validate=false), and kubectl is the one `make tools` installs
    command = _documented_command().replace("kubectl apply", "kubectl apply --validate=false")
    env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig_path), PATH=f"{KUBECTL.parent}:{os.environ['PATH']}")
    for _ in range(2):  # once to create, once more as after a retraining: the same command updates it
        done = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
    assert "model.pt" in cluster.get("configmaps", "ml", "chat-forecaster")["binaryData"]

    body = example()
    body["spec"]["forecast"] = {"modelRef": {"configMap": "chat-forecaster", "key": "model.pt"}}
    source = PredictorForecastSource(api)
    owner = Owner("chat", "ml", "uid-1")
    loaded = await source.model_for(owner, parse_spec(body["spec"]))
    assert owner.uid not in source.problems, source.problems
    assert source.sources[owner.uid].startswith("ConfigMap ml/chat-forecaster key model.pt, trained on")
    assert loaded.config.features == ("latency_ms", "rate")
