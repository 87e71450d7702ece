"""The manifest step of Beam `embed`: shard record counts, their TFRecord
framing, one model across workers, and the shard list read from the
file system.
"""

import pytest

pytestmark = pytest.mark.large


def test_a_record_missing_from_the_shards_fails_the_manifest():
    from keras_elmo.integrations.beam.write_embeddings import check_shard_counts

    counts = (306, 5000, 5000, 2, 1, 0)
    names = [f"embeddings-0000{i}-of-00002.tfrecord" for i in range(2)]
    check_shard_counts(counts, [(names[0], 100), (names[1], 206)])
    with pytest.raises(RuntimeError, match="305 records in 2 files"):
        check_shard_counts(counts, [(names[0], 100), (names[1], 205)])
    with pytest.raises(RuntimeError, match="reported twice"):
        check_shard_counts(counts, [(names[0], 100), (names[0], 206)])
    with pytest.raises(RuntimeError, match="306 records in 1 files"):
        check_shard_counts(counts, [(names[1], 306)])  # 1 of 2 shards
    check_shard_counts(counts, list(zip(names, (100, 206))), lines_read=306)
    with pytest.raises(RuntimeError, match="307 lines were read but 306"):
        check_shard_counts(counts, list(zip(names, (100, 206))), 307)


def test_shard_records_are_counted_from_their_frames(tmp_path):
    """`count_frames` reads the TFRecord framing `tf.io.TFRecordWriter`
    writes, and refuses a file cut inside a record."""
    import tensorflow as tf

    from keras_elmo.integrations.beam.write_embeddings import count_frames

    path = str(tmp_path / "shard.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for size in (0, 1, 300, 70_000):
            writer.write(b"x" * size)
    assert count_frames(path) == 4
    data = open(path, "rb").read()
    assert len(data) == 4 * 16 + 70_301
    open(path, "wb").write(data[:-1])
    with pytest.raises(RuntimeError, match="ends inside a record"):
        count_frames(path)
    open(path, "wb").write(b"")
    assert count_frames(path) == 0


def test_workers_with_different_models_fail_the_manifest():
    from keras_elmo.integrations.beam.write_embeddings import check_one_model

    one = '{"dim": 32, "model": "a"}'
    assert check_one_model([one, one]) == {"dim": 32, "model": "a"}
    with pytest.raises(RuntimeError, match="2 different models"):
        check_one_model([one, '{"dim": 32, "model": "b"}'])
    assert check_one_model([])["model_identity"] is None


def test_shards_are_listed_from_the_file_system_not_the_sinks_output(
    tmp_path,
):
    """The manifest's shard list comes from the finalized files (Beam's
    sink emits their names past the end of the global window, and the
    BundleBasedDirectRunner let a side input read them as empty): only
    `embeddings-*-of-*.tfrecord` directly under the output, sorted."""
    from keras_elmo.integrations.beam.write_embeddings import list_shards

    names = ["embeddings-00001-of-00002.tfrecord"]
    names.append("embeddings-00000-of-00002.tfrecord")
    for name in names + ["embeddings.manifest.json", "other.tfrecord"]:
        (tmp_path / name).write_bytes(b"")
    temp = tmp_path / "beam-temp-embeddings-1234"
    temp.mkdir()
    (temp / "embeddings-00002-of-00003.tfrecord").write_bytes(b"")
    prefix = str(tmp_path / "embeddings")
    assert list_shards(None, prefix, []) == [
        str(tmp_path / n) for n in sorted(names)
    ]
    assert list_shards(None, str(tmp_path / "none" / "embeddings"), []) == []
