"""Every built variant on a GPU at fp32, fp16 and int8, batch 1 and 32 (prepared
for a session with a lent GPU; without CUDA it says so and exits 0).

    .venv/bin/python -m bench.variants_gpu --dir DIR [--rounds 5]

DIR is a `forescale variants build` output, copied to the GPU machine. Each
torch variant is loaded through the server's own backend (`--device cuda`),
and timed in process (model + pooling, synchronised) after a warm-up, on the
held-out sentences. fp16 is the server's cast. The server's int8 uses CPU
kernels (fbgemm), so on the GPU "int8" is weight-only int8
(`quantization.weight_only`: int8 weights dequantized per call), the only int8
that runs on CUDA here; it is labelled so. The fused (ONNX) variant runs on
onnxruntime's CPU provider and is skipped. Quality: mean cosine against the
fp32 teacher on the GPU.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="a variants directory")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device here: the GPU variant figures were not measured (see docs/model-server.md)")
        return 0
    if args.dir is None:
        print("--dir is required on a GPU machine", file=sys.stderr)
        return 2
    from forescale_server.encoder_backend import EncoderBackend
    from forescale_server.model_files import minilm_dir
    from forescale_server.quantization import mean_cosine, weight_only
    from forescale_server.variant_manifest import read_manifest
    from forescale_server.variant_text import eval_sentences

    texts = eval_sentences()
    teacher = EncoderBackend(minilm_dir(), "minilm", device="cuda", max_batch=32)
    teacher.load_sync()
    reference = teacher.embed_texts(texts)
    backends = [("teacher", teacher)]
    for sub in sorted(p for p in args.dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        manifest = read_manifest(sub, teacher="minilm")
        if manifest.architecture == "onnx":
            print(f"{manifest.name}: ONNX on onnxruntime's CPU provider, skipped on the GPU")
            continue
        backend = EncoderBackend(sub, "minilm", device="cuda", max_batch=32, variant=manifest)
        backend.load_sync()
        backends.append((manifest.name, backend))
    print(f"{torch.cuda.get_device_name()}; {len(texts)} held-out sentences; best of {args.rounds} rounds, ms per item")
    print(f"{'variant':<16}{'precision':<22}{'b1 ms':>9}{'b32 ms/item':>13}{'cos vs teacher':>16}")
    for name, backend in backends:
        base = backend._variants["fp32"]
        models = {"fp32": base, "fp16": backend.build_variant("fp16"), "int8 (weight-only)": weight_only(base)}
        for precision, model in models.items():
            emb = backend.embed_with(model, texts)
            timings = {}
            for batch in (1, 32):
                best = float("inf")
                for _ in range(args.rounds):
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for start in range(0, 64, batch):
                        backend.embed_with(model, texts[start:start + batch])
                    torch.cuda.synchronize()
                    best = min(best, (time.perf_counter() - t0) / 64)
                timings[batch] = best * 1000
            print(f"{name:<16}{precision:<22}{timings[1] * 1:>9.3f}{timings[32]:>13.3f}{mean_cosine(emb, reference):>16.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
