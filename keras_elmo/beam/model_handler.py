"""`BiLMModelHandler`: Beam RunInference runs `keras-elmo embed`'s embedder.

Why a model handler of ours rather than Beam's
`TFModelHandlerTensor` / `TFModelHandlerNumpy`:

- those stack the batch's examples into one dense tensor and call the
  model once; sentences have different lengths, so they would need padding
  before and per-sentence un-padding after, outside the handler, with the
  lengths carried alongside. Our embedders (`keras_elmo.export.embedder`)
  take a list of token lists, pad in graph and return one `[L + 1, n, 2P]`
  array per sentence;
- they load a SavedModel or a `tf.keras` model by path; we load every
  source `BiLM.from_preset` accepts (the shipped `elmo_small_en`, a
  published model by name, a folder, a URL, `hf://`), a SavedModel from
  `keras-elmo export` (local or `gs://`-style), a `keras-elmo train`
  output or a `.keras` file, with the token-embedding cache (`vocab`);
  `keras-elmo embed --runner` passes the in-process command's own loader
  (`loader=`), so a worker computes the vectors the command computes;
- the model outputs are several (`word_emb`, `lstm_outputs1..L`), reduced
  per sentence to what is stored (`all`, `top`, `average`).

Each worker process loads the model once (`load_model`, shared by its
threads through RunInference's `Shared` handle). The handler itself holds
only strings and numbers, so Beam ships it to workers by value; the model
files must be readable where the workers run (see docs/BEAM.md).
"""

import os

from apache_beam.ml.inference.base import ModelHandler
from apache_beam.ml.inference.base import PredictionResult

from keras_elmo.export.embed_lines import LAYER_MODES
from keras_elmo.export.embed_lines import select_layers
from keras_elmo.export.embedding_records import DTYPES

# The `keras-elmo embed` arguments that name the model.
MODEL_ARGUMENTS = ("model", "options", "weights", "preset", "seed", "vocab")
DEFAULT_PRESET = "elmo_small_en"


def is_remote(path):
    """Whether `path` is a URI that TensorFlow's file systems read."""
    return "://" in path and not path.startswith("file://")


def load_spec(spec):
    """`(embedder, description)` for a model spec (a dict of
    `MODEL_ARGUMENTS`; `seed` is unused: trained models only).

    `model`: a SavedModel directory, a TF Serving base directory (its
    highest version), a `gs://`-style SavedModel URI, a `keras-elmo
    train` output or a `.keras` file. Else `options` + `weights`, else
    `preset` (default `elmo_small_en`), through `BiLM.from_preset`.
    """
    from keras_elmo.export.embedder import BiLMEmbedder
    from keras_elmo.export.embedder import SavedModelEmbedder
    from keras_elmo.export.serving_layout import is_saved_model
    from keras_elmo.export.serving_layout import latest_version
    from keras_elmo.models.bilm import BiLM
    from keras_elmo.models.loading import load_bilm_or_elmo_layer

    model, vocab = spec.get("model"), spec.get("vocab")
    if model and (is_remote(model) or os.path.isdir(model)):
        saved = model if is_remote(model) or is_saved_model(model) else None
        saved = saved or latest_version(model)
        if saved:
            if vocab:
                raise ValueError(
                    "`vocab` caches token embeddings of a BiLM; it does not "
                    f"apply to the SavedModel {saved!r}."
                )
            return SavedModelEmbedder(saved), f"SavedModel {saved}"
    if model:
        bilm, description = load_bilm_or_elmo_layer(model), f"model {model}"
    elif spec.get("options") or spec.get("weights"):
        pair = (spec.get("options"), spec.get("weights"))
        bilm, description = BiLM.from_preset(pair), f"weights {pair[1]}"
    else:
        name = spec.get("preset") or DEFAULT_PRESET
        bilm, description = BiLM.from_preset(name), f"preset {name}"
    return BiLMEmbedder(bilm, vocabulary=vocab), description


class BiLMModelHandler(ModelHandler):
    """Embeds `(sentence, tokens)` examples; one array per example.

    Args:
        spec: dict. The model, as `keras-elmo embed`'s arguments name it:
            keys among `model` (SavedModel dir, TF Serving base dir,
            `keras-elmo train` output, `.keras` file, or a `gs://`-style
            SavedModel URI), `options` + `weights`, `preset` (anything
            `BiLM.from_preset` accepts), `seed`, `vocab`. Paths must be
            readable on the workers.
        layers: str. What is stored per sentence: `"all"` (`[L + 1, m,
            2P]`), `"top"` or `"average"` (`[m, 2P]`).
        dtype: str. `"float32"` or `"float16"` (rounded from float32).
        loader: callable `spec -> (embedder, description)`, a module-level
            function (Beam ships it by reference): `load_spec` by default;
            `keras-elmo embed --runner` passes the command's own loader.

    Call arguments (`run_inference`):
        batch: list of `(sentence, tokens)`: the stripped line (bytes) and
            its tokens (tuple of bytes).

    Returns:
        A `PredictionResult(example, inference)` per example, `inference`
        the stored array (`m = min(n, max_tokens)` tokens).
    """

    def __init__(self, spec, layers="all", dtype="float32", loader=load_spec):
        unknown = sorted(set(spec) - set(MODEL_ARGUMENTS))
        if unknown:
            raise ValueError(
                f"Received an invalid `spec`, expected keys among "
                f"{MODEL_ARGUMENTS}, got unknown keys {unknown}."
            )
        if layers not in LAYER_MODES:
            raise ValueError(
                "Received an invalid value for argument `layers`, expected "
                f"one of {LAYER_MODES}, got {layers!r}."
            )
        if dtype not in DTYPES:
            raise ValueError(
                "Received an invalid value for argument `dtype`, expected "
                f"one of {DTYPES}, got {dtype!r}."
            )
        super().__init__()
        self.spec = dict(spec)
        self.layers = layers
        self.dtype = dtype
        self.loader = loader

    def load_model(self):
        embedder, _ = self.loader(self.spec)
        return embedder

    def run_inference(self, batch, model, inference_args=None):
        vectors = model([list(tokens) for _, tokens in batch])
        return [
            PredictionResult(
                example,
                select_layers(layers, self.layers).astype(self.dtype),
            )
            for example, layers in zip(batch, vectors)
        ]

    def get_num_bytes(self, batch):
        return sum(len(t) for _, tokens in batch for t in tokens)

    def get_metrics_namespace(self):
        return "keras_elmo"


def describe_output(spec, loader=load_spec):
    """`{num_layers, dim, max_tokens, model}` of a spec's model, loaded
    once here (for the manifest)."""
    embedder, description = loader(spec)
    return {
        "num_layers": int(embedder.num_layers),
        "dim": int(embedder.output_dim),
        "max_tokens": embedder.max_tokens,
        "model": description,
    }
