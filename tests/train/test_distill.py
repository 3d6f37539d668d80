"""Distillation pieces: student initialisation from teacher layers, the
soft-target loss, and general (masked-LM) distillation on real text."""

import os

import keras
import numpy as np
import pytest

from tfbert import BertConfig, BertEncoder, checkpoint
from tfbert.train.distill import (DistillConfig, MlmDistiller, init_student, keep_every_kth,
                                  mlm_divergence, soft_target_loss)

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "pretraining")


def test_student_takes_every_kth_teacher_layer(tmp_path):
    from tfbert.models.pretrainer import BertPretrainer

    keras.utils.set_random_seed(0)
    teacher = BertPretrainer(BertEncoder(BertConfig.from_preset("tiny", vocab_size=1931,
                                                                num_layers=4)))
    path = teacher.save_checkpoint(str(tmp_path / "teacher"), os.path.join(DATA, "vocab.txt"),
                                   True)
    student = checkpoint.read_checkpoint(init_student(path, str(tmp_path / "student"), every_k=2))
    assert student.config.num_layers == 2
    t = teacher.encoder.get_named_weights()
    s = student.encoder_weights()
    for name, value in s.items():
        want = name.replace("transformer_layer_1/", "transformer_layer_2/")
        np.testing.assert_array_equal(value, t[want])
    assert set(student.prefixed_weights("mlm")) == set(teacher.head_weights()["mlm"])
    BertEncoder.from_pretrained(student.path)  # a complete checkpoint
    assert keep_every_kth(6, 3) == [0, 3]
    with pytest.raises(ValueError, match="k=5 exceeds the teacher's 4 layers"):
        init_student(path, str(tmp_path / "x"), every_k=5)
    with pytest.raises(ValueError, match=r"student layers \[0, 9\] must be distinct"):
        init_student(path, str(tmp_path / "x"), layers=[0, 9])
    assert not (tmp_path / "x").exists()


def test_soft_target_loss_is_kl_times_t_squared():
    rng = np.random.default_rng(0)
    s, t = rng.normal(size=(3, 5)).astype("float32"), rng.normal(size=(3, 5)).astype("float32")
    temp = 2.0
    p = np.exp(t / temp) / np.exp(t / temp).sum(-1, keepdims=True)
    q = np.exp(s / temp) / np.exp(s / temp).sum(-1, keepdims=True)
    want = (p * np.log(p / q)).sum(-1).mean() * temp ** 2
    np.testing.assert_allclose(float(soft_target_loss(s, t, temp)), want, rtol=1e-5)
    with pytest.raises(ValueError, match=r"^DistillConfig.temperature: must be > 0, got 0.0\.$"):
        DistillConfig(temperature=0)
    with pytest.raises(ValueError, match=r"^DistillConfig.hard_weight: must be >= 0.0, got -1.0\.$"):
        DistillConfig(hard_weight=-1)


@pytest.mark.slow
def test_general_distillation_brings_student_mlm_closer_to_teacher(tmp_path):
    """Same randomly initialised 1-layer student, data and steps: trained with
    the teacher (KL + MLM + cosine), its MLM distribution ends closer to the
    teacher's than trained on the MLM loss alone."""
    from tfbert.data.pretraining.writer import pretraining_dataset, write_pretraining_data
    from tfbert.models.pretrainer import BertPretrainer
    from tfbert.text.masking import MaskedLMMasker
    from tfbert.text.tokenizer import BertTokenizer
    from tfbert.train.optimizer import create_optimizer

    vocab = os.path.join(DATA, "vocab.txt")
    write_pretraining_data(os.path.join(DATA, "corpus.txt"), str(tmp_path / "data"),
                           BertTokenizer(vocab_file=vocab, lower_case=True), seq_length=32,
                           next_sentence_task="none", log=lambda *a: None)
    files = str(tmp_path / "data" / "*.tfrecord")
    masker = MaskedLMMasker.from_vocab(vocab, max_predictions=5)

    def data(seed):
        return pretraining_dataset(files, 16, masker=masker, seed=seed, next_sentence_task="none")

    # The teacher: a small BERT pretrained here on the same corpus.
    keras.utils.set_random_seed(0)
    config = BertConfig.from_preset("tiny", vocab_size=1931, num_layers=2,
                                    max_position_embeddings=32)
    teacher = BertPretrainer(BertEncoder(config), next_sentence_task="none")
    teacher.compile(optimizer=create_optimizer(1e-3, 200, 20), jit_compile=False)
    teacher.fit(data(1), epochs=1, steps_per_epoch=200, verbose=0)

    def new_student():
        keras.utils.set_random_seed(1)
        return BertPretrainer(BertEncoder(config.replace(num_layers=1)), next_sentence_task="none")

    def train_student(distill):
        student = new_student()
        model = MlmDistiller(student, teacher, distill)
        model.compile(optimizer=create_optimizer(1e-3, 80, 8), jit_compile=False)
        model.fit(data(2), epochs=1, steps_per_epoch=80, verbose=0)
        return mlm_divergence(student, teacher, data(3), steps=10)

    untrained = mlm_divergence(new_student(), teacher, data(3), steps=10)
    alone = train_student(DistillConfig(soft_weight=0.0, hard_weight=1.0, cosine_weight=0.0))
    distilled = train_student(DistillConfig(temperature=2.0, soft_weight=1.0, hard_weight=0.5,
                                            cosine_weight=1.0))
    print(f"KL(teacher || student) on held-out MLM batches: student init {untrained:.3f}, "
          f"MLM loss alone {alone:.3f}, distilled {distilled:.3f}")
    assert distilled < alone < untrained
