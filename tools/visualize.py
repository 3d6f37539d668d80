r"""Pictures of a model and a run, as PNG files (matplotlib).

    # attention maps: a layer x head grid of heatmaps, wordpieces on the axes
    python tools/visualize.py --kind=attention --checkpoint_dir=checkpoints/minilm \
        --text="The cat sat on the mat." --output=attention.png
    # training curves: loss per epoch and the dev metric, from a run's log.csv
    python tools/visualize.py --kind=curves --model_dir=runs/sentiment --output=curves.png
    # confusion matrix of the dev predictions that tools/finetune.py wrote
    python tools/visualize.py --kind=confusion --model_dir=runs/sentiment --output=confusion.png
    # a layer analysis of tools/probe.py: scores by layer with controls, mix weights, heads
    python tools/visualize.py --kind=probe --results=out/upos/results.json --output=upos.png

Each command prints the path it wrote. The work is `tfbert.visualize`
(`draw_attention`, `draw_curves`, `draw_confusion`, `draw_probe`).
"""

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from absl import app, flags

KINDS = ("attention", "curves", "confusion", "probe")
FLAGS = flags.FLAGS
flags.DEFINE_enum("kind", None, KINDS, "What to draw.")
flags.DEFINE_string("output", None, "PNG file to write.")
flags.DEFINE_string("checkpoint_dir", None, "attention: a tfbert checkpoint directory.")
flags.DEFINE_string("text", None, "attention: the sentence (a second one with --text_b).")
flags.DEFINE_string("text_b", None, "attention: optional second segment.")
flags.DEFINE_list("layers", None, "attention: layer indices to draw (default: all).")
flags.DEFINE_string("model_dir", None, "curves/confusion: a tools/finetune.py or pretrain.py run.")
flags.DEFINE_string("results", None, "probe: the results.json of tools/probe.py.")
flags.mark_flags_as_required(["kind", "output"])


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    try:
        if FLAGS.kind == "attention":
            if not FLAGS.checkpoint_dir or FLAGS.text is None:
                raise ValueError("--kind=attention needs --checkpoint_dir and --text.")
        elif FLAGS.kind == "probe":
            if not FLAGS.results:
                raise ValueError("--kind=probe needs --results (a tools/probe.py results.json).")
        elif not FLAGS.model_dir:
            raise ValueError(f"--kind={FLAGS.kind} needs --model_dir.")
        # Imported after the flag checks: a usage error does not wait for TensorFlow.
        from tfbert import visualize

        if FLAGS.kind == "attention":
            out = visualize.draw_attention(FLAGS.checkpoint_dir, FLAGS.text, FLAGS.output,
                                           FLAGS.text_b, FLAGS.layers)
        elif FLAGS.kind == "probe":
            out = visualize.draw_probe(FLAGS.results, FLAGS.output)
        else:
            draw = visualize.draw_curves if FLAGS.kind == "curves" else visualize.draw_confusion
            out = draw(FLAGS.model_dir, FLAGS.output)
    except (ValueError, FileNotFoundError, OSError) as e:
        print(f"visualize: error: {e}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    app.run(main)
