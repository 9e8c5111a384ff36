"""The SDK table of docs/model-server.md under two releases of the official
`openai` package: the one pinned in the test extras and an older 1.x pin
(installed here into .cache/, apart from the venv), against
`forescale serve --emulate-gpu demo` and an emulated decoder.

    .venv/bin/python -m bench.openai_sdk_versions

Prints each call as met or missed per version, side by side.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from server.conftest import served_process  # noqa: E402

OLDER = "openai==1.109.1"
CALLS = r"""
import json, sys, openai
emb = openai.OpenAI(base_url=sys.argv[1] + "/v1", api_key="unused", max_retries=0)
cmp = openai.OpenAI(base_url=sys.argv[2] + "/v1", api_key="unused", max_retries=0)
def refused(fn, param):
    try:
        fn()
    except openai.BadRequestError as exc:
        return exc.body.get("param") == param
    return False
checks = {
    "embeddings.create (SDK default format)": lambda: len(emb.embeddings.create(model="minilm", input="x").data[0].embedding) == 384,
    "embeddings.create float, 2 inputs": lambda: len(emb.embeddings.create(model="minilm", input=["a", "b"], encoding_format="float").data) == 2,
    "embeddings.create token ids": lambda: len(emb.embeddings.create(model="minilm", input=[101, 7592, 102]).data) == 1,
    "embeddings.create dimensions=128 -> 400": lambda: refused(lambda: emb.embeddings.create(model="minilm", input="x", dimensions=128), "dimensions"),
    "models.list": lambda: [m.id for m in emb.models.list()] == ["minilm"],
    "completions.create n=2 echo": lambda: len(cmp.completions.create(model="minilm", prompt="hi", max_tokens=3, n=2, echo=True).choices) == 2,
    "completions.create stream": lambda: len(list(cmp.completions.create(model="minilm", prompt="hi", max_tokens=3, stream=True))) >= 1,
    "completions.create logprobs -> 400": lambda: refused(lambda: cmp.completions.create(model="minilm", prompt="hi", max_tokens=3, logprobs=1), "logprobs"),
}
out = {}
for name, check in checks.items():
    try:
        out[name] = bool(check())
    except Exception as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"version": openai.__version__, "results": out}))
"""


def _older_sdk() -> Path:
    target = ROOT / ".cache" / OLDER.replace("==", "-")
    if not (target / "openai").is_dir():
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target), OLDER], check=True)
    return target


def main() -> int:
    from forescale_profiles.service_time import PROFILES, DecoderProfile

    decoder = next(name for name, p in PROFILES.items() if isinstance(p, DecoderProfile))
    older = _older_sdk()
    runs = {}
    with served_process(["--emulate-gpu", "demo"]) as emb, served_process(["--emulate-gpu", decoder]) as cmp:
        for label, path in (("pinned", None), ("older", older)):
            env_path = [str(path)] if path else []
            code = f"import sys; sys.path[:0] = {env_path!r}\n" + CALLS
            out = subprocess.run([sys.executable, "-c", code, emb, cmp], capture_output=True, text=True, timeout=300)
            runs[label] = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {"version": "?", "results": {"run": out.stderr[-500:]}}
    names = list(runs["pinned"]["results"])
    print(f"{'SDK call':45s} " + " ".join(f"openai {runs[k]['version']:>9s}" for k in runs))
    missed = 0
    for name in names:
        cells = []
        for k in runs:
            value = runs[k]["results"].get(name)
            cells.append(f"{'met' if value is True else 'MISSED':>16s}")
            if value is not True:
                missed += 1
                print(f"  {k}: {name}: {value}", file=sys.stderr)
        print(f"{name:45s} " + " ".join(cells))
    print(f"goal: every SDK call works or gets a 400 naming the field, under both pins: {'met' if not missed else f'missed ({missed})'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
