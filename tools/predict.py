"""Runs an exported SavedModel (or its OpenVINO IR) on raw strings, as TF
Serving would answer.

    python tools/predict.py --saved_model_dir=saved_models/sentiment/1 \
        --text="A wonderful film." --text="Dull and far too long."
    python tools/predict.py --saved_model_dir=saved_models/squad/1 \
        --question="Who wrote it?" --context="The module was written by Bob Ippolito."
    python tools/predict.py --saved_model_dir=... --request=body.json

Prints the REST `:predict` response (JSON). `--request` takes a TF Serving
REST body (`{"instances": [...]}` or `{"inputs": {...}}`); `--text` (and
`--text_b` for pairs), or `--question` with `--context` (question answering),
build a row-format body. A directory written by `tools/export.py
--format=openvino` (`model.xml` inside) runs with OpenVINO
(`tfbert.export.openvino_model.OpenVINOModel`): the same JSON in and out.
"""

import json
import os
import sys

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("saved_model_dir", None,
                    "An exported SavedModel directory, or an OpenVINO IR version directory.")
flags.DEFINE_multi_string("text", [], "Input text (repeat for a batch).")
flags.DEFINE_multi_string("text_b", [], "Second segment of each pair (repeat).")
flags.DEFINE_multi_string("question", [], "Question (repeat; question answering models).")
flags.DEFINE_multi_string("context", [], "Context of each --question (repeat).")
flags.DEFINE_string("request", None, "A JSON file with a TF Serving REST predict body.")
flags.DEFINE_string("signature_name", "serving_default", "Signature to call.")
flags.mark_flag_as_required("saved_model_dir")


def load(path):
    """The model at `path`: an OpenVINO IR directory or a SavedModel."""
    if os.path.isfile(os.path.join(path, "model.xml")):
        from tfbert.export.openvino_model import OpenVINOModel

        return OpenVINOModel(path)
    from tfbert.export.task_model import load_task_model

    return load_task_model(path)


def main(argv):
    del argv
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if FLAGS.request:
        with open(FLAGS.request, encoding="utf-8") as f:
            body = f.read()
    elif FLAGS.text:
        if FLAGS.text_b and len(FLAGS.text_b) != len(FLAGS.text):
            sys.exit("predict: error: give one --text_b per --text.")
        rows = [{"text": t} for t in FLAGS.text]
        for row, b in zip(rows, FLAGS.text_b):
            row["text_b"] = b
        body = {"signature_name": FLAGS.signature_name, "instances": rows}
    elif FLAGS.question or FLAGS.context:
        if len(FLAGS.question) != len(FLAGS.context):
            sys.exit("predict: error: give one --context per --question.")
        rows = [{"question": q, "context": c} for q, c in zip(FLAGS.question, FLAGS.context)]
        body = {"signature_name": FLAGS.signature_name, "instances": rows}
    else:
        sys.exit("predict: error: give --text, --question/--context (repeatable) or --request=FILE.")
    from tfbert.export.serving import RequestError, predict

    try:
        response = predict(load(FLAGS.saved_model_dir), body)
    except (RequestError, OSError, ValueError, ImportError) as e:
        sys.exit(f"predict: error: {e}")
    print(json.dumps(response, indent=1))


if __name__ == "__main__":
    app.run(main)
