"""The issue's acceptance, on the fixtures the real package wrote:
`keras_elmo.Embedder.from_preset(FOLDER).embed(...)` on an ELMoForManyLangs
folder equals `sents2elmo(output_layer=-2)` (`layers="all"`) and `-1`
(`layers="average"`), also after `keras-elmo convert
--from-elmoformanylangs`, and for any batch size (the package is only
reproducible on its first batch; we are batch-independent)."""

import pytest

import keras_elmo
from keras_elmo.cli.main import main
from tests import efml_reference as ref


@pytest.mark.parametrize("model,layout", [("word", "legacy"), ("char", "zip")])
def test_embedder_on_the_folder_equals_sents2elmo(model, layout):
    sentences, layers, average = ref.reference(model)
    for batch_size in (64, 2):
        emb = keras_elmo.Embedder.from_preset(
            ref.folder(model, layout), batch_size=batch_size
        )
        for a, e in zip(emb.embed(sentences, layers="all"), layers):
            ref.assert_relative(a, e)
    for a, e in zip(emb.embed(sentences, layers="average"), average):
        ref.assert_relative(a, e)
    vectors = emb.sentence_vectors(sentences + [[]], layers="average")
    for i, e in enumerate(average):
        ref.assert_relative(vectors[i], e.mean(axis=0))
    assert not vectors[-1].any()


@pytest.mark.parametrize("model", ref.MODELS)
def test_embedder_after_convert_equals_sents2elmo(model, tmp_path):
    out = str(tmp_path / "converted")
    args = ["convert", "--from-elmoformanylangs", ref.folder(model)]
    assert main(args + ["--out", out]) == 0
    sentences, layers, average = ref.reference(model)
    emb = keras_elmo.Embedder.from_preset(out)
    for a, e in zip(emb.embed(sentences, layers="all"), layers):
        ref.assert_relative(a, e)
    for a, e in zip(emb.embed(sentences, layers="average"), average):
        ref.assert_relative(a, e)
