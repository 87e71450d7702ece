"""`keras_elmo.beam` and `keras_elmo.spark` moved to
`keras_elmo.integrations`; the old names still work and say so."""

import importlib
import sys
import warnings

import pytest


@pytest.mark.parametrize(
    "engine, extra, names",
    [
        ("spark", "pyspark", ["embed_dataframe", "embed_text_file"]),
        ("beam", "apache_beam", ["BiLMModelHandler", "embed_corpus"]),
    ],
)
def test_old_import_path_warns_and_is_the_same_api(engine, extra, names):
    pytest.importorskip(extra)
    new = importlib.import_module(f"keras_elmo.integrations.{engine}")
    sys.modules.pop(f"keras_elmo.{engine}", None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = importlib.import_module(f"keras_elmo.{engine}")
    messages = [
        str(w.message) for w in caught if w.category is DeprecationWarning
    ]
    assert messages == [
        f"keras_elmo.{engine} is deprecated: "
        f"import keras_elmo.integrations.{engine}."
    ]
    assert old.__all__ == new.__all__
    for name in names:
        assert getattr(old, name) is getattr(new, name)
