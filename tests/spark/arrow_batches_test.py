"""The executor-side functions of keras_elmo.integrations.spark, without a
cluster:
Arrow batches in, the rows and batches the model sees, vectors out."""

import numpy as np
import pyarrow as pa
import pytest

from keras_elmo.embedding.batching import sentence_tokens
from keras_elmo.integrations.spark import arrow_batches
from keras_elmo.integrations.spark.text_lines import first_lines
from keras_elmo.integrations.spark.text_lines import number_lines


class FakeEmbedder:
    """`[L + 1, n, D]` with value `100 * row_of_call + layer` at token
    `t`, dim `d`: `+ t + d / 10`, and records each call's token lists."""

    num_layers, output_dim = 3, 2

    def __init__(self):
        self.calls = []

    def __call__(self, token_lists):
        self.calls.append([list(t) for t in token_lists])
        out = []
        for tokens in token_lists:
            n = len(tokens)
            layer = np.arange(3)[:, None, None]
            t = np.arange(n)[None, :, None]
            d = np.arange(2)[None, None, :] / 10
            out.append((layer + t + d + len(tokens[0]) if n else 0) * 1.0)
            out[-1] = np.broadcast_to(out[-1], (3, n, 2)).astype(np.float32)
        return out


def _batches(texts, ids, size):
    for start in range(0, len(texts), size):
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(ids[start : start + size], pa.int64()),
                pa.array(texts[start : start + size], pa.string()),
            ],
            names=["id", "text"],
        )


def test_chunks_recut_batches_in_order():
    batches = [
        pa.RecordBatch.from_arrays([pa.array(range(a, b))], names=["x"])
        for a, b in ((0, 3), (3, 3), (3, 10), (10, 11))
    ]
    got = [t.column("x").to_pylist() for t in arrow_batches.chunks(batches, 4)]
    assert got == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10]]


def test_rows_are_batched_by_length_and_come_back_in_order():
    words = ["w%d" % i for i in range(40)]
    lengths = [7, 1, 0, 5, 3, 9, 2, 2, 8, 4, 6, 1, 3]
    texts = [" ".join(words[:n]) for n in lengths]
    texts[3] = "\ufeff  " + texts[3] + " \r"  # a BOM, spaces, a CR
    ids = list(range(100, 100 + len(texts)))
    fake = FakeEmbedder()
    out = pa.Table.from_batches(
        list(
            arrow_batches.embed_record_batches(
                _batches(texts, ids, 5),  # Arrow batches of 5 rows
                "text",
                lambda: fake,
                layers="all",
                batch_size=3,
                dtype="float32",
            )
        )
    )
    # One chunk (16 * 3 >= 13 rows), sorted by length, cut into 3s.
    assert [[len(t) for t in call] for call in fake.calls] == [
        [0, 1, 1],
        [2, 2, 3],
        [3, 4, 5],
        [6, 7, 8],
        [9],
    ]
    assert out.column_names == ["id", "text", "tokens", "shape", "vectors"]
    assert out.column("id").to_pylist() == ids
    assert out.column("text").to_pylist() == texts
    for row, text in enumerate(texts):
        tokens = [t.decode() for t in sentence_tokens(text)]
        assert out.column("tokens")[row].as_py() == tokens
        n = len(tokens)
        assert out.column("shape")[row].as_py() == [3, n, 2]
        got = np.frombuffer(out.column("vectors")[row].as_py(), "<f4")
        expected = FakeEmbedder()([[t.encode() for t in tokens]])[0]
        np.testing.assert_array_equal(got.reshape(3, n, 2), expected)


def test_top_average_and_float16():
    fake = FakeEmbedder()
    texts = ["a bb ccc", "dddd"]
    for layers, pick in (
        ("top", lambda a: a[-1]),
        ("average", lambda a: a.mean(axis=0)),
    ):
        out = list(
            arrow_batches.embed_record_batches(
                _batches(texts, [1, 2], 8),
                "text",
                lambda: fake,
                layers=layers,
                batch_size=64,
                dtype="float16",
            )
        )[0]
        for row, text in enumerate(texts):
            tokens = [t.encode() for t in text.split()]
            expected = pick(FakeEmbedder()([tokens])[0]).astype(np.float16)
            got = np.frombuffer(out.column("vectors")[row].as_py(), "<f2")
            assert out.column("shape")[row].as_py() == [len(tokens), 2]
            np.testing.assert_array_equal(got.reshape(expected.shape), expected)


def test_bytes_that_are_not_utf8_reach_the_model_unchanged():
    raw = b"caf\xe9 ok"
    batch = pa.RecordBatch.from_arrays(
        [pa.array([raw], pa.binary())], names=["text"]
    )
    fake = FakeEmbedder()
    out = list(
        arrow_batches.embed_record_batches(
            iter([batch]), "text", lambda: fake, "top", 8, "float32"
        )
    )[0]
    assert fake.calls == [[[b"caf\xe9", b"ok"]]]
    assert out.column("tokens")[0].as_py() == ["caf\ufffd", "ok"]


def test_a_null_sentence_is_an_error_naming_the_column():
    batch = pa.RecordBatch.from_arrays(
        [pa.array(["a", None], pa.string())], names=["body"]
    )
    with pytest.raises(ValueError, match="Column 'body' holds a null"):
        list(
            arrow_batches.embed_record_batches(
                iter([batch]), "body", FakeEmbedder, "all", 8, "float32"
            )
        )


def test_lines_are_numbered_across_blocks_and_files():
    # Blocks in any order; a block's first line follows its file's
    # earlier blocks.
    first, totals = first_lines(
        [("f2", 0, 2), ("f1", 100, 3), ("f1", 0, 4), ("f1", 250, 1)]
    )
    assert first == {("f1", 0): 0, ("f1", 100): 4, ("f1", 250): 7, ("f2", 0): 0}
    assert totals == {"f1": 8, "f2": 2}
    # One task reads block f1@100 then f2@0, across two Arrow batches.
    rows = [("f1", 100, b" x y "), ("f1", 100, b"\xef\xbb\xbfz")]
    rows += [("f1", 100, b"\xffq"), ("f2", 0, b""), ("f2", 0, b"w")]
    batches = [
        pa.RecordBatch.from_arrays(
            [
                pa.array([r[2] for r in part], pa.binary()),
                pa.array([r[0] for r in part]),
                pa.array([r[1] for r in part], pa.int64()),
            ],
            names=["text", "file", "block"],
        )
        for part in (rows[:2], rows[2:])
    ]
    out = pa.Table.from_batches(list(number_lines(batches, first)))
    assert out.column_names == ["file", "line", "sentence", "text"]
    assert out.column("line").to_pylist() == [4, 5, 6, 0, 1]
    assert out.column("sentence").to_pylist() == [
        "x y",
        "z",
        "\ufffdq",
        "",
        "w",
    ]
    assert out.column("text").to_pylist() == [r[2] for r in rows]
