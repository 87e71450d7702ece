"""`sentence_to_index_json` equals AllenNLP's dict-built JSON, bytes for
bytes."""

import json
import random

from keras_elmo.embedding.hdf5_output import sentence_to_index_json


def dict_json(path):
    """What `allennlp elmo` writes: a dict filled in line order."""
    mapping = {}
    with open(path, encoding="utf-8", newline="\n") as f:
        for index, line in enumerate(f):
            mapping[line.strip()] = str(index)
    return json.dumps(mapping).encode()


def test_equals_the_dict_json_on_random_files(tmp_path):
    rng = random.Random(0)
    pieces = ["a", "b", "café", "\u3000", "  ", '"q"', "x\\y", "\t", "é"]
    path = tmp_path / "in.txt"
    for _ in range(200):
        lines = [
            "".join(rng.choice(pieces) for _ in range(rng.randint(0, 3)))
            for _ in range(rng.randint(0, 30))
        ]
        end = "\n" if rng.random() < 0.5 else ""
        path.write_text("\n".join(lines) + end, encoding="utf-8")
        assert sentence_to_index_json(str(path)) == dict_json(path), lines


def test_invalid_utf8_is_escaped_not_fatal(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"ok \xff\n\xff\nok \xff \n")
    mapping = json.loads(sentence_to_index_json(str(path)))
    assert mapping == {"ok \udcff": "2", "\udcff": "1"}
    (tmp_path / "empty.txt").write_bytes(b"")
    assert sentence_to_index_json(str(tmp_path / "empty.txt")) == b"{}"
