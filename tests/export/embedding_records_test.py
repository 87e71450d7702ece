"""`embedding_records`: one line's record, written and read back."""

import numpy as np
import pytest
import tensorflow as tf

from keras_elmo.embedding.embedding_records import decode_record
from keras_elmo.embedding.embedding_records import encode_record


def _vectors(shape, seed=0):
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape).astype(np.float32)
    # Values a float64 detour could round: subnormal, huge, negative zero.
    values.flat[:3] = [1e-45, 3.4e38, -0.0]
    return values


def test_float32_round_trip_is_bit_exact():
    vectors = _vectors((3, 5, 8))
    record = encode_record("a.txt", 7, b"x y", [b"x", b"y"], vectors)
    decoded = decode_record(record)
    assert decoded["file"] == "a.txt"
    assert decoded["line"] == 7
    assert decoded["sentence"] == b"x y"
    assert decoded["tokens"] == [b"x", b"y"]
    assert decoded["vectors"].dtype == np.float32
    assert decoded["vectors"].shape == (3, 5, 8)
    assert decoded["vectors"].tobytes() == vectors.tobytes()


def test_float32_record_is_the_protobuf_of_the_array():
    """The list path writes the same message as filling `FloatList` from
    the array (format version 1 unchanged)."""
    vectors = _vectors((5, 8), seed=1)
    record = encode_record("f", 0, b"s", [b"s"] * 5, vectors)
    expected = tf.train.FloatList(value=vectors.ravel())
    example = tf.train.Example.FromString(record)
    stored = example.features.feature["vectors"].float_list
    assert stored.SerializeToString() == expected.SerializeToString()


def test_float16_round_trip_and_float64_input():
    vectors = _vectors((2, 4, 6)).astype(np.float64)
    vectors.flat[1] = 65504.0  # float16's largest; 3.4e38 would overflow
    record = encode_record("f", 1, b"s", [b"s"] * 4, vectors, "float16")
    decoded = decode_record(record)["vectors"]
    assert decoded.dtype == np.float16
    np.testing.assert_array_equal(decoded, vectors.astype(np.float16))
    as32 = decode_record(encode_record("f", 1, b"s", [b"s"] * 4, vectors))
    np.testing.assert_array_equal(as32["vectors"], vectors.astype(np.float32))


def test_unknown_dtype_is_refused_by_name():
    with pytest.raises(ValueError, match="argument `dtype`.*'int8'"):
        encode_record("f", 0, b"s", [b"s"], np.zeros((1, 2)), "int8")
