"""Every entry point that makes a model from a source reaches the one
loader, `keras_elmo.presets.sources.load`.

The spy records what each call asks for and stops it there (a
`ValueError`, so a command reports it and exits 2): what is asserted is
that the call reached the loader with the source it was given, before
anything was built. What each build step then makes is the business of
the entry points' own tests.
"""

import os
import zipfile

import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.embedding.model_spec import load_spec
from keras_elmo.models.language_model import load_bilm_or_elmo_layer
from keras_elmo.models.language_model import load_language_model
from keras_elmo.presets import PRESETS_DIR
from keras_elmo.presets import sources
from keras_elmo.presets.sources import ResolvedModel

EFML = os.path.join(
    os.path.dirname(os.path.dirname(__file__)),
    "fixtures",
    "elmoformanylangs",
    "char_zip",
)


class Reached(ValueError):
    """Raised by the spy: the call got to the loader."""


@pytest.fixture
def spy(monkeypatch):
    calls = []

    def load(source, build, *args, **kwargs):
        assert callable(build)
        calls.append(source)
        raise Reached(f"reached the loader with {source!r}")

    monkeypatch.setattr(sources, "load", load)
    return calls


def _reaches(spy, call):
    with pytest.raises(Reached):
        call()
    return spy.pop()


def test_library_entry_points_reach_the_loader(spy, folder):
    options = os.path.join(folder, "options.json")
    weights = os.path.join(folder, "weights.hdf5")
    calls = {
        "BiLM.from_preset": lambda: keras_elmo.BiLM.from_preset(folder),
        "ElmoLayer.from_preset": (
            lambda: keras_elmo.ElmoLayer.from_preset(folder)
        ),
        "Embedder.from_preset": lambda: keras_elmo.Embedder.from_preset(folder),
        # simple_elmo's vectors (`keras_elmo.compat.simple_elmo`).
        "Embedder.from_preset(warmup=True)": (
            lambda: keras_elmo.Embedder.from_preset(folder, warmup=True)
        ),
        "load_bilm_or_elmo_layer": lambda: load_bilm_or_elmo_layer(folder),
        "load_language_model": lambda: load_language_model(folder),
        "load_spec": lambda: load_spec({"model": folder}),
    }
    for name, call in calls.items():
        assert _reaches(spy, call) == folder, name
    assert _reaches(spy, lambda: load_spec({})) == "elmo_small_en"
    shipped = os.path.join(PRESETS_DIR, "elmo_small_en")
    lm = keras_elmo.models.LMSubstitutes.from_preset
    assert _reaches(spy, lambda: lm("elmo_small_en")) == shipped
    pair = _reaches(
        spy, lambda: keras_elmo.BiLM.from_allennlp(options, weights)
    )
    assert isinstance(pair, ResolvedModel)
    assert (pair.format, pair.options, pair.weights) == (
        "allennlp",
        options,
        weights,
    )
    efml = _reaches(spy, lambda: keras_elmo.BiLM.from_elmoformanylangs(EFML))
    assert (efml.format, efml.path) == ("elmoformanylangs", EFML)
    assert spy == []


def test_beam_and_spark_workers_reach_the_loader(spy, folder):
    pytest.importorskip("apache_beam")  # the `beam` extra
    pytest.importorskip("pyspark")  # the `spark` extra
    from keras_elmo.integrations.beam import BiLMModelHandler
    from keras_elmo.integrations.spark.worker_model import cached_embedder

    handler = BiLMModelHandler({"model": folder})
    assert _reaches(spy, handler.load_model) == folder
    spec = {"model": folder}
    assert _reaches(spy, lambda: cached_embedder(load_spec, spec)) == folder


def test_commands_reach_the_loader(spy, folder, tmp_path, capsys):
    text = tmp_path / "in.txt"
    text.write_text("a b c\n", encoding="utf-8")
    out = str(tmp_path / "out")
    options = os.path.join(folder, "options.json")
    weights = os.path.join(folder, "weights.hdf5")
    keras_file = str(tmp_path / "bilm.keras")
    # What `_check_keras_file` asks of it before the loader: a zip file.
    with zipfile.ZipFile(keras_file, "w") as archive:
        archive.writestr("config.json", "{}")
    commands = [
        ["embed", str(text), out + ".hdf5", "--model", folder],
        ["export", "--model", folder, "--out", out],
        ["convert", "--options", options, "--weights", weights, "--out", out],
        ["convert", "--from-elmoformanylangs", EFML, "--out", out],
        ["convert", "--from-keras", keras_file, "--out", out],
    ]
    for argv in commands:
        assert main(argv) == 2, argv
        assert "reached the loader" in capsys.readouterr().err, argv
        source = spy.pop()
        if isinstance(source, ResolvedModel):
            source = source.weights or source.path
        assert source in (folder, weights, EFML, keras_file), argv
    assert spy == []


def test_describe_model_names_the_model_as_load_spec_does(folder, tmp_path):
    # The manifests' `model` (Beam's workers, Spark's driver): the words
    # load_spec uses, from the spec alone (nothing loaded or downloaded).
    from keras_elmo.embedding.model_spec import describe_model

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("<S>\n</S>\n<UNK>\nthe\n", encoding="utf-8")
    options = os.path.join(folder, "options.json")
    weights = os.path.join(folder, "weights.hdf5")
    local = {
        "shipped preset elmo_small_en": {},
        "shipped preset elmo_small_en, token cache of " + str(vocab): {
            "preset": "elmo_small_en",
            "vocab": str(vocab),
        },
        f"model folder {folder}": {"model": folder},
        f"weights {weights}": {"options": options, "weights": weights},
        "RANDOMLY INITIALISED 'tiny' architecture (seed 3): shapes and "
        "plumbing only, the vectors carry no meaning": {
            "random_weights": "tiny",
            "seed": 3,
        },
    }
    for expected, spec in local.items():
        assert describe_model(spec) == expected
        assert load_spec(spec)[1] == expected
    # Published names are named as their download names them, and are
    # not downloaded here.
    assert describe_model({"model": "elmo_2x1024_en"}) == (
        "published preset elmo_2x1024_en"
    )
    assert describe_model({"preset": "efml_de"}) == "published archive efml_de"
