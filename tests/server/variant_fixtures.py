"""A tiny randomly initialised 2-layer BERT (same family and tokenizer as
all-MiniLM-L6-v2) saved as a teacher directory, and a small build context."""

from __future__ import annotations

import shutil
from pathlib import Path

import torch

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, max_position_embeddings=128)

SENTENCES = [
    "The fire service says the blaze has been contained.", "Rain is expected across the south later this week.",
    "The minister announced a review of the budget.", "Police have closed the highway after the crash.",
    "Shares rose sharply on the stock exchange today.", "The team won the final after extra time.",
    "Residents were told to leave their homes overnight.", "The council will vote on the plan next month.",
    "Scientists found water ice near the lunar pole.", "The hospital opened a new emergency ward.",
    "Farmers are worried about the long dry spell.", "The airline cancelled dozens of flights.",
]
EVAL = ["Return the number of items in a container.", "Errors should never pass silently.",
        "Open the file and return a stream.", "Beautiful is better than ugly.", "Raise an exception if the key is missing.",
        "Simple is better than complex."]


def tiny_teacher(path: Path, seed: int = 0) -> Path:
    """A randomly initialised BertModel with MiniLM's tokenizer files, saved to `path`."""
    from transformers import BertConfig, BertModel

    from forescale_server.model_files import minilm_dir

    torch.manual_seed(seed)
    source = minilm_dir()
    config = BertConfig(vocab_size=30522, **TINY)
    model = BertModel(config, add_pooling_layer=False).eval()
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(path), safe_serialization=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy2(source / name, path / name)
    (path / "sentence_bert_config.json").write_text('{"max_seq_length": 64, "do_lower_case": false}')
    return path


def tiny_context(teacher_dir: Path, **settings):
    from forescale_server.variant_build import BuildContext, BuildSettings

    defaults = dict(sensitivity_batches=2, prune_epochs=1, distill_epochs=1, batch_size=4, student_layers=(1,))
    return BuildContext(teacher_dir=teacher_dir, teacher_name="tiny", settings=BuildSettings(**{**defaults, **settings}),
                        train_texts=list(SENTENCES), eval_texts=list(EVAL), train_source="test sentences", eval_source="test eval",
                        commit="test")
