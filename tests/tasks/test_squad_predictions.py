"""SQuAD results and prediction files from the answer function's outputs
(no model: the outputs are written by hand). The files of a trained model are
checked in tests/tasks/test_question_answering.py."""

import json

import numpy as np
import pytest

from tfbert.tasks.squad_predictions import (nbest_entries, question_result,
                                            write_prediction_files)


def answer_outputs():
    """Two questions' outputs, as `QuestionAnsweringTask.answer` gives them (v2.0,
    n_best_size 3): the second has one candidate only."""
    return {
        "answer": np.array([b"Paris", b""]), "score": np.array([3.0, 0.5]),
        "start_char": np.array([10, -1]), "end_char": np.array([15, -1]),
        "num_windows": np.array([2, 1]),
        "no_answer_score": np.array([-1.0, 0.7]), "null_score": np.array([2.0, 1.2]),
        "nbest_answers": np.array([[b"Paris", b"in Paris", b"Paris"], [b"Rome", b"", b""]]),
        "nbest_scores": np.array([[3.0, 2.0, 1.0], [0.5, 0.0, 0.0]]),
        "nbest_start_logits": np.array([[1.5, 1.0, 0.5], [0.2, 0.0, 0.0]]),
        "nbest_end_logits": np.array([[1.5, 1.0, 0.5], [0.3, 0.0, 0.0]]),
        "nbest_start_char": np.array([[10, 7, 30], [4, -1, -1]]),
        "nbest_end_char": np.array([[15, 15, 35], [8, -1, -1]]),
    }


def test_question_result_reads_one_row_and_stops_at_missing_candidates():
    out = answer_outputs()
    first, second = question_result(out, 0), question_result(out, 1)
    assert (first["answer"], first["start_char"], first["end_char"]) == ("Paris", 10, 15)
    assert first["no_answer_score"] == -1.0 and first["null_score"] == 2.0
    assert [e["text"] for e in first["nbest"]] == ["Paris", "in Paris", "Paris"]
    assert second["answer"] == "" and [e["text"] for e in second["nbest"]] == ["Rome"]
    del out["no_answer_score"], out["null_score"]  # v1.1
    assert "no_answer_score" not in question_result(out, 0)


def test_nbest_entries_are_distinct_texts_with_the_null_answer_in_v2():
    result = question_result(answer_outputs(), 0)
    entries = nbest_entries(result, version_2=True)
    assert [e["text"] for e in entries] == ["Paris", "in Paris", ""]  # ties keep their order
    assert sum(e["probability"] for e in entries) == pytest.approx(1.0)
    assert entries[0]["probability"] == pytest.approx(1 / (1 + np.exp(-1) + np.exp(-1)))
    assert [e["text"] for e in nbest_entries(result, version_2=False)] == ["Paris", "in Paris"]


def test_prediction_files(tmp_path):
    out = answer_outputs()
    results = [question_result(out, 0), question_result(out, 1)]
    paths = write_prediction_files(["q1", "q2"], results, True, str(tmp_path / "out"))
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == [
        "nbest_predictions.json", "null_odds.json", "predictions.json"]
    read = lambda name: json.loads((tmp_path / "out" / name).read_text(encoding="utf-8"))
    assert read("predictions.json") == {"q1": "Paris", "q2": ""}
    assert read("null_odds.json") == {"q1": -1.0, "q2": 0.7}
    assert [e["text"] for e in read("nbest_predictions.json")["q2"]] == ["", "Rome"]
    paths = write_prediction_files(["q1"], results[:1], False, str(tmp_path / "v1"))
    assert sorted(p.rsplit("/", 1)[1] for p in paths) == ["nbest_predictions.json",
                                                          "predictions.json"]
