"""Word-sense items from WordNet's own example sentences (Debian's
`wordnet-base`: `apt-get install wordnet-base`, WordNet 3.0 under
`/usr/share/wordnet`), for `tools/probe.py --task=senses`.

A synset's gloss quotes example sentences; an example that contains one of
the synset's single-word lemmas (whole word, any case) is an item whose gold
sense is that synset: `{"text", "start", "end", "word", "lemma", "pos",
"sense"}`, `sense` = `<pos>.<synset offset>`. Only lemmas (with their part
of speech) having at least two senses with at least `min_examples` such
examples each are kept; each sense's first example goes to dev, the others
to train. The data files are parsed directly (the package has no `lexnames`
file, which NLTK's reader needs).

    python -m tfbert.datasets.wordnet_senses out_dir [--lemmas=20]

writes `out_dir/senses_train.jsonl` and `senses_dev.jsonl`.
"""

import collections
import json
import os
import re
import sys

WORDNET = "/usr/share/wordnet"
POS_FILES = {"n": "data.noun", "v": "data.verb", "a": "data.adj", "r": "data.adv"}
QUOTED = re.compile(r'"([^"]+)"')


def synsets(wordnet_dir=WORDNET):
    """Yields `(pos, offset, lemmas, examples)` for every synset."""
    for pos, name in POS_FILES.items():
        path = os.path.join(wordnet_dir, name)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"No WordNet data file: {path} (apt-get install wordnet-base).")
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(" "):
                    continue  # the license header
                fields, _, gloss = line.partition(" | ")
                cells = fields.split()
                count = int(cells[3], 16)
                lemmas = [re.sub(r"\(.*\)$", "", cells[4 + 2 * i]) for i in range(count)]
                yield pos, cells[0], lemmas, QUOTED.findall(gloss)


def sense_items(wordnet_dir=WORDNET, min_examples=2):
    """`{(lemma, pos): {sense: [items]}}` of the lemmas with >= 2 senses having
    >= `min_examples` examples each (module docstring)."""
    found = collections.defaultdict(lambda: collections.defaultdict(list))
    for pos, offset, lemmas, examples in synsets(wordnet_dir):
        for lemma in {l.lower() for l in lemmas if l.isalpha()}:
            pattern = re.compile(rf"(?<![\w-]){re.escape(lemma)}(?![\w-])", re.IGNORECASE)
            for example in examples:
                match = pattern.search(example)
                if match:
                    found[(lemma, pos)][f"{pos}.{offset}"].append({
                        "text": example, "start": match.start(), "end": match.end(),
                        "word": match.group(0), "lemma": lemma, "pos": pos,
                        "sense": f"{pos}.{offset}"})
    kept = {}
    for key, senses in found.items():
        enough = {s: items for s, items in senses.items() if len(items) >= min_examples}
        if len(enough) >= 2:
            kept[key] = enough
    return kept


def split_items(kept, lemmas=None):
    """`(train, dev)` item lists: each sense's first example to dev. `lemmas`:
    keep every k-th lemma (sorted) so about that many remain."""
    keys = sorted(kept)
    if lemmas:
        keys = keys[::max(1, len(keys) // lemmas)][:lemmas]
    train, dev = [], []
    for key in keys:
        for sense in sorted(kept[key]):
            first, *rest = kept[key][sense]
            dev.append(first)
            train.extend(rest)
    return train, dev


def main(argv):
    out_dir = argv[1] if len(argv) > 1 else "."
    lemmas = None
    for arg in argv[2:]:
        if arg.startswith("--lemmas="):
            lemmas = int(arg.split("=", 1)[1])
    kept = sense_items()
    train, dev = split_items(kept, lemmas)
    os.makedirs(out_dir, exist_ok=True)
    for name, items in (("senses_train.jsonl", train), ("senses_dev.jsonl", dev)):
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(item) + "\n" for item in items)
    print(f"{len(kept)} lemmas available; wrote {len(train)} train and {len(dev)} dev items "
          f"of {len({(i['lemma'], i['pos']) for i in dev})} lemmas to {out_dir}")


if __name__ == "__main__":
    main(sys.argv)
