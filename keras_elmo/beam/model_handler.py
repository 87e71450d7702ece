"""`BiLMModelHandler`: Beam RunInference runs `keras-elmo embed`'s embedder.

Why a model handler of ours rather than Beam's
`TFModelHandlerTensor` / `TFModelHandlerNumpy`:

- those stack the batch's examples into one dense tensor and call the
  model once; sentences have different lengths, so they would need padding
  before and per-sentence un-padding after, outside the handler, with the
  lengths carried alongside. Our runners
  (`keras_elmo.export.embedding_runners`) take a list of token lists, pad
  in graph and return one `[L + 1, n, 2P]` array per sentence;
- they load a SavedModel or a `tf.keras` model by path; we load every
  source `BiLM.from_preset` accepts (the shipped `elmo_small_en`, a
  published model by name, a folder, a URL, `hf://`), a SavedModel from
  `keras-elmo export` (local or `gs://`-style), a `keras-elmo train`
  output or a `.keras` file, with the token-embedding cache (`vocab`),
  through the same spec and resolver as in-process `keras-elmo embed`
  (`keras_elmo.export.model_spec.load_spec`), so a worker computes the
  vectors the command computes;
- the model outputs are several (`word_emb`, `lstm_outputs1..L`), reduced
  per sentence to what is stored (`all`, `top`, `average`).

Each worker process loads the model once (`load_model`, shared by its
threads through RunInference's `Shared` handle). The handler itself holds
only strings and numbers, so Beam ships it to workers by value; the model
files must be readable where the workers run (see docs/BEAM.md).
"""

from apache_beam.ml.inference.base import ModelHandler
from apache_beam.ml.inference.base import PredictionResult

from keras_elmo.export.embed_lines import LAYER_MODES
from keras_elmo.export.embed_lines import select_layers
from keras_elmo.export.embedding_records import DTYPES
from keras_elmo.export.model_spec import check_spec
from keras_elmo.export.model_spec import load_spec


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
            function (Beam ships it by reference): by default
            `keras_elmo.export.model_spec.load_spec`.

    Call arguments (`run_inference`):
        batch: list of `(sentence, tokens)`: the stripped line (bytes) and
            its tokens (tuple of bytes).

    Returns:
        A `PredictionResult(example, inference)` per example, `inference`
        the stored array (`m = min(n, max_tokens)` tokens).
    """

    def __init__(self, spec, layers="all", dtype="float32", loader=load_spec):
        check_spec(spec)
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
