"""`from_tfhub` on a module that is not on disk says what it reads and
where a module comes from, naming what it received."""

import pytest

import keras_elmo

WHAT = [
    "variables/variables.index",
    ".tar.gz",
    "tensorflow_hub is not needed",
    "$TFHUB_CACHE_DIR",
    "https://tfhub.dev/google/elmo/3?tf-hub-format=compressed",
]


def test_a_missing_folder_is_named(tmp_path):
    missing = str(tmp_path / "elmo_3")
    with pytest.raises(FileNotFoundError) as info:
        keras_elmo.BiLM.from_tfhub(missing)
    message = str(info.value)
    assert f"{missing!r} does not exist" in message
    for part in WHAT:
        assert part in message


@pytest.mark.parametrize(
    "handle", ["https://tfhub.dev/google/elmo/3", "google/elmo/3"]
)
def test_a_handle_is_not_fetched_and_says_so(handle, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `google/elmo/3` is no folder here
    with pytest.raises(FileNotFoundError) as info:
        keras_elmo.ElmoLayer.from_tfhub(handle)
    message = str(info.value)
    assert f"received the TF Hub handle {handle!r}" in message
    for part in WHAT:
        assert part in message
