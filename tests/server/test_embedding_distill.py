"""The student starts from the teacher's layers and its loss falls."""

from __future__ import annotations

import pytest
import torch

from forescale_server.embedding_distill import make_batches, mean_distance, student_from_teacher, teacher_targets, train_to_teacher

from .variant_fixtures import SENTENCES, tiny_teacher


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory):
    return tiny_teacher(tmp_path_factory.mktemp("teacher"))


def _teacher_and_batches(teacher_dir):
    from tokenizers import Tokenizer
    from transformers import AutoModel

    teacher = AutoModel.from_pretrained(str(teacher_dir), add_pooling_layer=False).eval()
    tok = Tokenizer.from_file(str(teacher_dir / "tokenizer.json"))
    tok.no_padding()
    batches = make_batches(tok, SENTENCES, 4)
    return teacher, batches, teacher_targets(teacher, batches)


@pytest.mark.parametrize("layers", [[0], [1], [0, 1]])
def test_student_layers_are_copies_of_the_chosen_teacher_layers(teacher_dir, layers):
    teacher, _, _ = _teacher_and_batches(teacher_dir)
    student = student_from_teacher(teacher, layers)
    assert len(student.encoder.layer) == len(layers) == student.config.num_hidden_layers
    for new, old in enumerate(layers):
        a, b = student.encoder.layer[new].state_dict(), teacher.encoder.layer[old].state_dict()
        assert all(torch.equal(a[k], b[k]) for k in b)


def _pushed_student(teacher):
    student = student_from_teacher(teacher, [1])
    # a random tiny BERT maps every sentence to nearly the same vector, so a
    # copied layer starts almost at the teacher: push it away first
    torch.manual_seed(1)
    with torch.no_grad():
        for p in student.encoder.parameters():
            p.add_(torch.randn_like(p) * 0.5)
    return student


def test_student_loss_falls(teacher_dir):
    teacher, batches, targets = _teacher_and_batches(teacher_dir)
    student = _pushed_student(teacher)
    before = mean_distance(student, batches, targets)
    history = train_to_teacher(student, batches, targets, epochs=4, lr=1e-3, seed=0)
    after = mean_distance(student, batches, targets)
    assert before > 0
    assert history[-1] < history[0]
    assert after < before


def test_training_runs_without_dropout(teacher_dir):
    teacher, batches, targets = _teacher_and_batches(teacher_dir)
    student = _pushed_student(teacher)
    assert student.config.hidden_dropout_prob > 0
    # at lr 0 nothing moves, so each training loss is the distance the model has: with dropout on it would not be
    history = train_to_teacher(student, batches, targets, epochs=1, lr=0.0, seed=0)
    assert history[0] == pytest.approx(mean_distance(student, batches, targets), rel=1e-6)


def test_a_student_layer_outside_the_teacher_is_refused(teacher_dir):
    teacher, _, _ = _teacher_and_batches(teacher_dir)
    with pytest.raises(ValueError, match="student layers"):
        student_from_teacher(teacher, [0, 5])
