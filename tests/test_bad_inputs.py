"""Bad input across the public API: every case gets an error that tfbert
itself raises (the frame that raised is in tfbert/, not in TensorFlow, Keras
or PyYAML), of a type a user catches (ValueError, TypeError, FileNotFoundError),
with a one-line message naming the problem. The tools' surface (exit code 1,
one line on stderr, no traceback) is in tests/tools/test_bad_tool_inputs.py.

Each case is `(name, function of the fixtures, pattern the message matches)`.
"""

import json

import numpy as np
import pytest
import tensorflow as tf

import tfbert
import tfbert.convert
from tfbert import BertConfig, BertEncoder, BertPreprocessor, checkpoint, config_loader
from tfbert.retrieval import search
from tfbert.data import pairs, readers
from tfbert.data import squad as squad_data



@pytest.fixture(scope="module")
def world(tmp_path_factory, uncased_vocab_file):
    """What the cases act on: a vocab, a tiny encoder and a scratch dir."""
    tmp = tmp_path_factory.mktemp("bad")
    config = BertConfig.from_preset("tiny", vocab_size=30522)
    return {
        "tmp": tmp,
        "vocab": uncased_vocab_file,
        "pre": BertPreprocessor(uncased_vocab_file, seq_length=16, max_segments=2),
        "encoder": BertEncoder(config),
        "config": config,
    }


def write(w, name, text, mode="w"):
    path = w["tmp"] / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


def ids(batch=2, seq=8, word=5, mask=1, types=0, dtype="int32"):
    shape = (batch, seq)
    return {"input_word_ids": np.full(shape, word, dtype),
            "input_mask": np.full(shape, mask, dtype),
            "input_type_ids": np.full(shape, types, dtype)}


def load_train_config(w, text):
    from tfbert.train.train_config import TrainConfig

    return config_loader.load(TrainConfig, write(w, "train.yaml", text))


def squad(w, name, qas, context="The Nile flows north into the Mediterranean Sea."):
    body = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [
        {"context": context, "qas": qas}]}]}
    return squad_data.read_squad(write(w, name, json.dumps(body)))


def qa(qid="q1", text="north", start=15, question="Which way does the Nile flow?"):
    return {"id": qid, "question": question, "answers": [{"text": text, "answer_start": start}]}


CASES = [
    # --- Preprocessor: what users pass in ---
    ("preprocessor: None item", lambda w: w["pre"](["fine", None]), r"text 1 is None"),
    ("preprocessor: int item", lambda w: w["pre"](["fine", 3]), r"text 1 is int"),
    ("preprocessor: float tensor", lambda w: w["pre"](tf.constant([1.0, 2.0])), r"float32"),
    ("preprocessor: ragged strings", lambda w: w["pre"](tf.ragged.constant([["a", "b"], ["c"]])),
     r"1-D batch of strings"),
    ("preprocessor: batch sizes differ", lambda w: w["pre"]([["one", "two"], ["three"]]),
     r"different batch sizes"),
    ("preprocessor: 3 segments, 2 types", lambda w: w["pre"]([["a"], ["b"], ["c"]]),
     r"3 segments.*type_vocab_size=2"),
    ("preprocessor: seq_length too long",
     lambda w: BertPreprocessor(w["vocab"], seq_length=513), r"max_position_embeddings"),
    ("preprocessor: missing vocab", lambda w: BertPreprocessor(str(w["tmp"] / "none.txt")),
     r"none\.txt"),
    ("preprocessor: vocab without [CLS]",
     lambda w: BertPreprocessor(write(w, "novocab.txt", "[PAD]\n[UNK]\nhello\n")), r"\[CLS\]"),
    ("preprocessor: not a checkpoint dir",
     lambda w: BertPreprocessor.from_pretrained(str(w["tmp"] / "nowhere")), r"nowhere"),
    # --- Encoder inputs ---
    ("encoder: missing input_mask",
     lambda w: w["encoder"]({k: v for k, v in ids().items() if k != "input_mask"}),
     r"input_mask"),
    ("encoder: float ids", lambda w: w["encoder"](ids(dtype="float32")), r"int"),
    ("encoder: longer than max_position_embeddings", lambda w: w["encoder"](ids(seq=600)),
     r"max_position_embeddings"),
    # --- Configs ---
    ("config: unknown key",
     lambda w: BertConfig.from_yaml(write(w, "c1.yaml", "num_layer: 2\n")), r"c1\.yaml.*num_layer"),
    ("config: heads do not divide hidden",
     lambda w: BertConfig.from_preset("tiny", num_heads=3), r"hidden_size.*num_heads|num_heads.*hidden_size"),
    ("config: dropout 1.5", lambda w: BertConfig.from_preset("tiny", dropout_rate=1.5),
     r"dropout_rate"),
    ("config: negative hidden size", lambda w: BertConfig.from_preset("tiny", hidden_size=-8),
     r"hidden_size"),
    ("config: unknown preset", lambda w: BertConfig.from_preset("huge"), r"huge"),
    ("train: batch_size lots", lambda w: load_train_config(w, "batch_size: lots\n"),
     r"batch_size.*integer"),
    ("train: learning_rate fast", lambda w: load_train_config(w, "learning_rate: fast\n"),
     r"learning_rate"),
    ("train: learning_rate -1", lambda w: load_train_config(w, "learning_rate: -1\n"),
     r"learning_rate"),
    ("train: epochs 0", lambda w: load_train_config(w, "epochs: 0\n"), r"epochs"),
    ("train: warmup 1.5", lambda w: load_train_config(w, "warmup_ratio: 1.5\n"),
     r"train\.yaml: warmup_ratio: must be in \[0\.0, 1\.0\], got 1\.5"),
    ("train: YAML syntax", lambda w: load_train_config(w, "batch_size: [1, 2\n"),
     r"train\.yaml:2:1: YAML syntax"),
    ("train: --set without =", lambda w: config_loader.parse_overrides(["epochs"]), r"key=value"),
    # --- Readers ---
    ("tsv: missing column", lambda w: readers.read_labeled_text(write(w, "d.tsv", "sentence\tlabel\nok\t1\n"), "text", "label"),
     r"d\.tsv, line 1.*'text'"),
    ("tsv: not UTF-8", lambda w: readers.read_labeled_text(write(w, "l1.tsv", b"text\tlabel\ncaf\xe9\t1\n", "wb"), "text", "label"),
     r"l1\.tsv, line 2.*UTF-8"),
    ("csv: unterminated quote", lambda w: readers.read_labeled_text(write(w, "q.csv", 'text,label\n"open,1\nnext,0\n'), "text", "label"),
     r"q\.csv, line 2.*quote"),
    ("conll: one column", lambda w: readers.read_conll(write(w, "m.conll", "EU B-ORG\nrejects\n")), r"m\.conll, line 2"),
    ("squad: answer not at answer_start", lambda w: squad(w, "s1.json", [qa(start=3)]),
     r"q1"),
    ("squad: duplicate id", lambda w: squad(w, "s2.json", [qa(), qa()]), r"q1"),
    ("squad: missing id", lambda w: squad(w, "s3.json", [{k: v for k, v in qa().items()
                                                          if k != "id"}]), r"id"),
    ("squad: empty context", lambda w: squad(w, "s4.json", [qa()], context=""), r"context"),
    ("squad: not JSON", lambda w: squad_data.read_squad(write(w, "s5.json", '{"data": [')), r"s5\.json: not JSON"),
    ("pairs: missing column", lambda w: pairs.read_pairs(write(w, "p.tsv", "q\tx\nhi\tthere\n"), "q", "p"), r"p\.tsv.*'p'"),
    ("scored pairs: score not a number", lambda w: pairs.read_scored_pairs(write(w, "sp.tsv", "a\tb\ts\nx\ty\thigh\n"), "a", "b", "s",
                        max_score=5), r"sp\.tsv, line 2"),
    # --- Checkpoints and converters ---
    ("checkpoint: missing dir",
     lambda w: checkpoint.read_checkpoint(str(w["tmp"] / "gone")), r"gone"),
    ("convert: no config.json", lambda w: tfbert.convert.from_huggingface(
        str(w["tmp"]), str(w["tmp"] / "out_hf")), r"config\.json"),
    ("convert: truncated safetensors", lambda w: truncated_safetensors(w), r"safetensors"),
    # --- Sentence embeddings and search ---
    ("encode: one str", lambda w: sentence_encoder(w).encode("a sentence"), r"texts is one string"),
    ("encode: None item", lambda w: sentence_encoder(w).encode(["ok", None]),
     r"texts\[1\] is NoneType"),
    ("encode: empty list", lambda w: sentence_encoder(w).encode([]), r"empty"),
    ("search: dims differ", lambda w: search.semantic_search(
        np.ones((2, 4), "float32"), np.ones((3, 5), "float32")), r"dim"),
    # --- Fine-tuning options: multi-label, gradient accumulation, LoRA ---
    ("multi-label: duplicate labels", lambda w: multi_label_task(
        w, label_list=["sport", "food", "sport"]), r"label_list: \['sport'\] appear"),
    ("multi-label: unknown dev label", lambda w: multi_label_task(
        w, label_list=["food", "sport"]).read(write(
            w, "ml_dev.jsonl", '{"t": "x", "l": ["food"]}\n{"t": "y", "l": ["golf"]}\n')),
     r"ml_dev\.jsonl, line 2: label 'golf' is not in the label list"),
    ("multi-label: threshold 1.5", lambda w: multi_label_task(w, threshold=1.5),
     r"threshold: must be in \(0, 1\), got 1\.5"),
    ("multi-label: threshold 0 from YAML", lambda w: config_loader.load(
        __import__("tfbert.tasks.classification", fromlist=["x"]).ClassificationConfig,
        write(w, "ml.yaml", "multi_label: true\nthreshold: 0\n")),
     r"ml\.yaml: threshold: must be in \(0, 1\)"),
    ("train: gradient_accumulation_steps 0",
     lambda w: load_train_config(w, "gradient_accumulation_steps: 0\n"),
     r"gradient_accumulation_steps: must be >= 1, got 0"),
    ("train: gradient_accumulation_steps not dividing",
     lambda w: load_train_config(w, "batch_size: 16\ngradient_accumulation_steps: 3\n"),
     r"gradient_accumulation_steps: 3 does not divide batch_size 16"),
    ("train: lora_rank 0", lambda w: load_train_config(w, "lora_rank: 0\n"),
     r"lora_rank: must be >= 1, got 0"),
    ("train: lora_rank above the layer", lambda w: lora_on_tiny(w, 1000),
     r"train\.lora_rank: 1000 is not in \[1, 64\]"),
    # --- Issue 52: multi-label files, LoRA and accumulation settings ---
    ("multi-label: labels not strings", lambda w: multi_label_task(
        w, label_list=["food", "sport"]).read(write(
            w, "ml_int.jsonl", '{"t": "x", "l": ["food"]}\n{"t": "y", "l": [1, 2]}\n')),
     r"ml_int\.jsonl, line 2: the 'l' labels must be strings"),
    ("multi-label: a row without the label column", lambda w: multi_label_task(
        w, label_list=["food"]).read(write(
            w, "ml_missing.jsonl", '{"t": "x", "l": ["food"]}\n{"t": "y"}\n')),
     r"ml_missing\.jsonl, line 2: no key 'l'"),
    ("multi-label: no row has a label", lambda w: multi_label_task(
        w, train_file=write(w, "ml_none.jsonl", '{"t": "x", "l": []}\n{"t": "y", "l": []}\n')
    ).prepare(w["pre"]), r"ml_none\.jsonl: no labels in the label column 'l'"),
    ("multi-label: a TSV with commas", lambda w: multi_label_task(
        w, label_list=["food"]).read(write(w, "ml_commas.tsv", "t,l\nx,food\n")),
     r"ml_commas\.tsv, line 1: no column named 't'.*\['t,l'\]"),
    ("train: lora_rank fractional", lambda w: load_train_config(w, "lora_rank: 2.5\n"),
     r"lora_rank: expected an integer, got 2\.5"),
    ("train: lora_rank a string", lambda w: load_train_config(w, "lora_rank: eight\n"),
     r"lora_rank: expected an integer, got 'eight'"),
    ("train: lora_targets twice the same", lambda w: load_train_config(
        w, "lora_targets: [query, query]\n"), r"lora_targets: must be a non-empty list of distinct"),
    ("train: lora_targets one string", lambda w: load_train_config(w, "lora_targets: query\n"),
     r"lora_targets: expected a list, got 'query'"),
    ("train: lora_targets unknown", lambda w: load_train_config(w, "lora_targets: [q]\n"),
     r"lora_targets: must be a non-empty list"),
    ("train: gradient_accumulation_steps fractional",
     lambda w: load_train_config(w, "gradient_accumulation_steps: 1.5\n"),
     r"gradient_accumulation_steps: expected an integer, got 1\.5"),
    ("train: gradient_accumulation_steps above the batch",
     lambda w: load_train_config(w, "batch_size: 8\ngradient_accumulation_steps: 16\n"),
     r"gradient_accumulation_steps: 16 does not divide batch_size 8"),
    ("train: learning_rate .inf", lambda w: load_train_config(w, "learning_rate: .inf\n"),
     r"learning_rate: expected a finite number, got inf"),
    # --- Issue 66: the task API (`task.predict`, `task.eval_data`, `task.evaluate`) ---
    # A bare string was read as one text per character; None items, a zero
    # batch size and a path given for `dev` failed inside TensorFlow or Python.
    ("tagging task: predict one str", lambda w: task(w, "tagging").predict(
        task_model(w, "tagging"), "Paris is big"), r"^text is one string; pass a list"),
    ("tagging task: predict None item", lambda w: task(w, "tagging").predict(
        task_model(w, "tagging"), ["Paris", None]), r"^text\[1\] is NoneType \(None\), not str"),
    ("tagging task: predict batch_size 0", lambda w: task(w, "tagging").predict(
        task_model(w, "tagging"), ["Paris"], batch_size=0), r"^batch_size must be >= 1"),
    ("QA task: predict two strings", lambda w: task(w, "qa").predict(
        task_model(w, "qa"), "Who?", "Bob went home."), r"^questions is one string"),
    ("QA task: predict None context", lambda w: task(w, "qa").predict(
        task_model(w, "qa"), ["Who?"], [None]), r"^contexts\[0\] is NoneType"),
    ("QA task: predict batch_size -1", lambda w: task(w, "qa").predict(
        task_model(w, "qa"), ["Who?"], ["Bob."], batch_size=-1),
     r"^batch_size must be >= 1 \(an integer\), got -1\.$"),  # once an empty answer list
    ("cross-encoder task: predict a str query", lambda w: task(w, "cross").predict(
        task_model(w, "cross"), "q", ["p"]), r"^query is one string"),
    ("classification task: predict batch_size 0", lambda w: task(w, "classification").predict(
        task_model(w, "classification"), ["ok"], batch_size=0), r"^batch_size must be >= 1"),
    ("classification task: eval_data batch_size 0", lambda w: task(w, "classification")
     .eval_data(write(w, "cls_dev.tsv", "sentence\tlabel\nFine .\tpos\n"), 0),
     r"^batch_size must be >= 1"),
    ("classification task: evaluate a path", lambda w: task(w, "classification").evaluate(
        task_model(w, "classification"), "dev.tsv"),
     r"^ClassificationTask\.evaluate takes dev = task\.eval_data\(path, batch_size\), not "
     r"'dev\.tsv'"),  # once "too many values to unpack (expected 2)"
    ("features task: one str", lambda w: task(w, "features").features(
        task_model(w, "features"), "one text"), r"^text is one string"),
    ("tsv: a directory", lambda w: readers.read_labeled_text(str(w["tmp"]), "text", "label"),
     r"is a directory, not a data file"),  # once "Data file not found"
    # --- Issue 66: vocabulary files, read by one reader ---
    ("vocab: not UTF-8", lambda w: BertPreprocessor(write(
        w, "latin1_vocab.txt", b"[PAD]\n[UNK]\ncaf\xe9\n", "wb")),
     r"latin1_vocab\.txt, line 3: not UTF-8 text"),
    ("convert: vocab.txt not UTF-8", lambda w: tfbert.convert.common.check_vocab(write(
        w, "latin1_hf_vocab.txt", b"[PAD]\ncaf\xe9\n", "wb"), 2),
     r"latin1_hf_vocab\.txt, line 2: not UTF-8 text"),  # once a bare UnicodeDecodeError
    ("vocab: a directory", lambda w: BertPreprocessor(str(w["tmp"])),
     r"^Vocabulary file .* is a directory, not a file\.$"),  # once "not found"
]


TASKS = {
    "classification": lambda: __import__("tfbert.tasks.classification", fromlist=["x"])
    .ClassificationTask({"label_list": ["neg", "pos"], "text_column": "sentence",
                         "seq_length": 16}),
    "tagging": lambda: __import__("tfbert.tasks.tagging", fromlist=["x"]).TaggingTask(
        {"label_list": ["O", "B-LOC"], "seq_length": 16}),
    "qa": lambda: __import__("tfbert.tasks.question_answering", fromlist=["x"])
    .QuestionAnsweringTask({"seq_length": 16, "max_query_length": 4, "doc_stride": 4,
                            "version_2": False}),
    "cross": lambda: __import__("tfbert.tasks.cross_encoder", fromlist=["x"]).CrossEncoderTask(
        {"seq_length": 16}),
    "features": lambda: __import__("tfbert.tasks.feature_extraction", fromlist=["x"])
    .FeatureExtractionTask({"layers": [-1], "seq_length": 16}),
}


def task(w, name):
    """A task of `TASKS` on the world's preprocessor, made once per module."""
    key = f"task {name}"
    if key not in w:
        w[key] = TASKS[name]().prepare(w["pre"])
    return w[key]


def task_model(w, name):
    """The task's model on the world's tiny encoder (random weights: nothing runs)."""
    key = f"model {name}"
    if key not in w:
        w[key] = task(w, name).build_model(w["encoder"])
    return w[key]


def multi_label_task(w, **config):
    from tfbert.tasks.classification import ClassificationTask

    return ClassificationTask.from_config({"text_column": "t", "label_column": "l",
                                           "multi_label": True, **config})


def lora_on_tiny(w, rank):
    from tfbert.models.classifier import BertClassifier
    from tfbert.train.lora import enable_lora

    return enable_lora(BertClassifier(w["encoder"], num_classes=2), rank)


def truncated_safetensors(w):
    src = w["tmp"] / "hf_truncated"
    src.mkdir(exist_ok=True)
    (src / "config.json").write_text(json.dumps({
        "model_type": "bert", "vocab_size": 30522, "hidden_size": 128, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 512}))
    (src / "vocab.txt").write_bytes(open(w["vocab"], "rb").read())
    (src / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":")
    return tfbert.convert.from_huggingface(str(src), str(w["tmp"] / "out_trunc"))


def sentence_encoder(w):
    from tfbert.models.sentence_encoder import SentenceEncoder

    return SentenceEncoder(w["encoder"], preprocessor=w["pre"])


@pytest.mark.parametrize("name,action,pattern", CASES, ids=[c[0] for c in CASES])
def test_bad_input_gets_a_clear_error_from_tfbert(world, raises_one_line_from_tfbert, name,
                                                  action, pattern):
    raises_one_line_from_tfbert(name, lambda: action(world), pattern)


def test_at_least_40_cases():
    assert len(CASES) >= 40
    assert len({c[0] for c in CASES}) == len(CASES)
