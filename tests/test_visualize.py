"""tfbert.visualize: attention maps of a checkpoint, training curves from a
run's log.csv, a confusion matrix from its dev_predictions.tsv, as PNGs."""

import pytest

from tfbert import BertEncoder, checkpoint
from tfbert.visualize import draw_attention, draw_confusion, draw_curves, read_log


@pytest.fixture()
def run_dir(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "log.csv").write_text("epoch,loss,accuracy,dev_accuracy,val_loss\n"
                                 "0,1.2,0.5,0.55,NA\n1,0.9,0.6,0.62,1.0\n")
    rows = [f"{i}\t{'pos' if i % 3 else 'neg'}\t{'pos' if i % 4 else 'neg'}" for i in range(30)]
    (run / "dev_predictions.tsv").write_text("\n".join(["index\tgold\tpredicted"] + rows) + "\n")
    return run


def test_curves_and_confusion(run_dir, tmp_path, assert_png):
    path, rows = read_log(str(run_dir))
    assert path == str(run_dir / "log.csv") and [r["val_loss"] for r in rows] == ["NA", "1.0"]
    for draw, name in [(draw_curves, "curves.png"), (draw_confusion, "confusion.png")]:
        out = str(tmp_path / name)
        assert draw(str(run_dir), out) == out
        assert_png(out)


def test_missing_or_empty_inputs(run_dir, tmp_path):
    with pytest.raises(FileNotFoundError, match="No training log: .*tools/finetune.py"):
        read_log(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="No dev predictions"):
        draw_confusion(str(tmp_path), str(tmp_path / "x.png"))
    (run_dir / "log.csv").write_text("epoch,loss\n")
    with pytest.raises(ValueError, match="no finished epoch yet"):
        draw_curves(str(run_dir), str(tmp_path / "x.png"))


def test_attention_grid(tmp_path, uncased_vocab_file, tiny_config, assert_png):
    encoder = BertEncoder(tiny_config)
    ckpt = checkpoint.save_checkpoint(str(tmp_path / "ckpt"), tiny_config,
                                      encoder.get_named_weights(), uncased_vocab_file, True)
    out = str(tmp_path / "attention.png")
    assert draw_attention(ckpt, "The cat sat on the mat.", out, text_b="It purred.",
                          layers=["0"]) == out
    assert_png(out)
