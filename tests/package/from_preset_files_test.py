"""How many package files a reader follows through
`Embedder.from_preset(source)`: at most 12.

Every Python function the call runs is recorded (`sys.setprofile`); the
figure is the number of distinct `keras_elmo` files those functions live
in, after the package is imported. It is printed with the files (run with
`-s` to see them), so a change that spreads the path shows where.
"""

import os
import sys

import keras_elmo

PACKAGE_DIR = os.path.dirname(os.path.abspath(keras_elmo.__file__))
MOST_FILES = 12


def _files_run_by(call):
    """`(distinct files, returns to a file already left)` of `call()`."""
    visits = []

    def profile(frame, event, arg):
        if event == "call":
            path = frame.f_code.co_filename
            if path.startswith(PACKAGE_DIR + os.sep):
                rel = os.path.relpath(path, PACKAGE_DIR)
                if not visits or visits[-1] != rel:
                    visits.append(rel)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    distinct = sorted(set(visits))
    return distinct, len(visits) - len(distinct)


def test_embedder_from_preset_runs_in_at_most_twelve_files():
    files, returns = _files_run_by(
        lambda: keras_elmo.Embedder.from_preset("elmo_small_en")
    )
    print(
        f"Embedder.from_preset('elmo_small_en') runs code in {len(files)} "
        f"package files (returning to one already left {returns} times): "
        + ", ".join(files)
    )
    assert "presets/sources.py" in files  # the one loader and resolver
    assert len(files) <= MOST_FILES, files
