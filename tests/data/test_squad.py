"""SQuAD JSON reader: answers checked at answer_start, errors name file and question id."""

import json

import pytest

from tfbert.data.squad import read_squad, write_squad

CONTEXT = "Der Kölner Dom 🏰 steht in Köln;  東京 is Tokyo."


def qa(qid="q1", text="Köln", start=None, impossible=False, question="Wo steht der Dom?"):
    answers = [] if text is None else [{"text": text, "answer_start": CONTEXT.index(text)
                                        if start is None else start}]
    return {"id": qid, "question": question, "is_impossible": impossible, "answers": answers}


def write(tmp_path, qas, context=CONTEXT, v2=True):
    if not v2:
        for q in qas:
            q.pop("is_impossible", None)
    return write_squad(str(tmp_path / "s.json"),
                       [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}])


def test_reads_offsets_in_bytes(tmp_path):
    data = read_squad(write(tmp_path, [qa(), qa("q2", "東京"), qa("q3", None, impossible=True)]))
    assert data.version_2 and len(data) == 3
    e = data.examples[1]
    raw = CONTEXT.encode()
    assert raw[e.answer_bytes[0]: e.answer_bytes[1]].decode() == "東京"
    assert data.examples[2].answers == [] and data.examples[2].answer_bytes == (-1, -1)
    assert not read_squad(write(tmp_path, [qa()], v2=False)).version_2


@pytest.mark.parametrize("qas, context, message", [
    ([qa(start=3)], CONTEXT, r"'q1': answer 'Köln' not found at answer_start=3"),
    ([qa(), qa()], CONTEXT, "'q1': duplicate id"),
    ([qa(qid="")], CONTEXT, r"qas\[0\]: question without an `id`"),
    ([qa()], "   ", "'q1': empty context"),
    ([qa(question=" ")], CONTEXT, "'q1': empty question"),
    ([qa(impossible=True)], CONTEXT, "'q1': is_impossible but has answers"),
    ([qa(text=None)], CONTEXT, "'q1': no answers and not is_impossible"),
])
def test_errors_name_file_and_id(tmp_path, qas, context, message):
    path = write(tmp_path, qas, context)
    with pytest.raises(ValueError, match=message) as e:
        read_squad(path)
    assert path in str(e.value)


def test_file_level_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.json"):
        read_squad(str(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"data": [\xff]}')
    with pytest.raises(ValueError, match="bad.json: not UTF-8"):
        read_squad(str(bad))
    bad.write_text('{"data": [', encoding="utf-8")
    with pytest.raises(ValueError, match="bad.json: not JSON"):
        read_squad(str(bad))
    bad.write_text(json.dumps({"version": "1.1"}), encoding="utf-8")
    with pytest.raises(ValueError, match="`data` list"):
        read_squad(str(bad))
