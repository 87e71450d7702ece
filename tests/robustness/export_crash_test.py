"""Crash injection for `export`: a SIGKILL at the write points of an
export, into a fresh path and over an existing SavedModel.

The export (`export_saved_model`, the tiny reference weights, 8 tokens)
passes 24 write points, 32 over an existing SavedModel
(`tests.robustness.crash_points`, TensorFlow's included: the temporary
folder, the variables' shards and merge, `saved_model.pb`, its rewrite
with the frozen flags, the fingerprint, the swap into place). A child
forked from a zygote (`crash_points.Zygote`) is SIGKILLed just before
point k. Then:

- the destination is, file for file and byte for byte, either what was
  there before (absent, or the previous SavedModel) or the complete
  export of an uninterrupted run: never part of one, never a mix;
- the same export, rerun (`overwrite=True` where a SavedModel was
  there), finishes and equals the uninterrupted run, and nothing is left
  beside the destination (the temporary folder a kill leaves is removed
  by the next write of that destination, `atomic.atomic_directory`).

By default the representative subset of `crash_sweeps.points_to_try`
runs: 7 of the 24 points, and 10 of the 32 over a SavedModel (counts
printed and checked below); `KERAS_ELMO_CRASH_SWEEP=full` for every
point.
"""

import os
import shutil

import pytest

from tests.robustness import crash_sweeps
from tests.robustness.crash_points import Zygote

pytestmark = [
    pytest.mark.large,
    pytest.mark.crash_sweep,
    pytest.mark.skipif(
        not hasattr(os, "fork"), reason="crash injection forks (POSIX only)"
    ),
]


def export_work(out, options, weights, seed=None):
    """The export (in a zygote child); `seed`: random weights instead."""
    import keras

    import keras_elmo
    from keras_elmo.export.saved_model import export_saved_model

    if seed is None:
        bilm = keras_elmo.BiLM.from_allennlp(options, weights)
    else:
        keras.utils.set_random_seed(seed)
        bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_options_json(options))
    export_saved_model(bilm, out, max_tokens=8, overwrite=True)


def _contents(folder):
    """`{relative path: bytes}` of every file under `folder` (folders:
    None); `fingerprint.pb` without its `uuid`, which TensorFlow draws
    at random for each save."""
    from tensorflow.core.protobuf import fingerprint_pb2

    found = {}
    for name in crash_sweeps.tree(folder):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                found[name] = f.read()
        else:
            found[name] = None
    if found.get("fingerprint.pb"):
        fingerprint = fingerprint_pb2.FingerprintDef()
        fingerprint.ParseFromString(found["fingerprint.pb"])
        fingerprint.ClearField("uuid")
        found["fingerprint.pb"] = fingerprint.SerializeToString()
    return found


@pytest.fixture(scope="module")
def setup(reference_weights, tmp_path_factory):
    options, weights = reference_weights("tiny")
    folder = tmp_path_factory.mktemp("export_crash")
    files = dict(options=options, weights=weights)
    with Zygote(["keras_elmo.export.saved_model", __name__]) as zygote:
        target = f"{__name__}:export_work"
        outputs = {}
        for name, seed in (("reference", None), ("again", None), ("old", 7)):
            out = str(folder / name / "elmo")
            killed, points = zygote.run(target, dict(files, out=out, seed=seed))
            assert not killed
            outputs[name] = (_contents(out), points)
        over = str(folder / "over" / "elmo")
        shutil.copytree(str(folder / "old" / "elmo"), over)
        killed, points = zygote.run(target, dict(files, out=over))
        assert not killed and _contents(over) == outputs["reference"][0]
        outputs["over"] = (None, points)
        # An export is the same, byte for byte (but the fingerprint's
        # random uuid), each time it is run.
        assert outputs["again"][0] == outputs["reference"][0]
        yield zygote, files, folder, outputs


def _sweep(setup, over_old):
    zygote, files, folder, outputs = setup
    reference, points = outputs["reference"]
    old = outputs["old"][0] if over_old else None
    if over_old:
        points = outputs["over"][1]
    tried = crash_sweeps.points_to_try(points)
    target = f"{__name__}:export_work"
    for k in tried:
        parent = str(folder / f"{'over' if over_old else 'fresh'}{k}")
        out = os.path.join(parent, "elmo")
        if over_old:
            shutil.copytree(str(folder / "old" / "elmo"), out)
        killed, _ = zygote.run(target, dict(files, out=out), k=k)
        where = f"point {k} of {len(points)} ({points[k - 1]})"
        assert killed, where
        if os.path.exists(out):
            assert _contents(out) in (reference, old), where
        else:
            assert not over_old, where  # the old one is never gone
        killed, _ = zygote.run(target, dict(files, out=out))
        assert not killed
        assert _contents(out) == reference, where
        assert os.listdir(parent) == ["elmo"], (where, os.listdir(parent))
        shutil.rmtree(parent)
    return points, tried


def test_a_kill_at_each_write_point_of_export(setup):
    points, tried = _sweep(setup, over_old=False)
    print(f"export: {len(tried)} of {len(points)} kill points")
    assert len(points) >= 20, points
    assert "io_ops.save_v2" in points and "os.rename" in points
    assert len(tried) == len(points) or len(tried) >= 6


def test_a_kill_at_each_write_point_of_an_export_over_a_savedmodel(setup):
    points, tried = _sweep(setup, over_old=True)
    print(f"export over a SavedModel: {len(tried)} of {len(points)} points")
    assert "atomic.exchange_paths" in points, points
    assert len(tried) == len(points) or len(tried) >= 8
