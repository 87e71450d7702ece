"""`BiLMModelHandler`: Beam RunInference runs `keras-elmo embed`'s embedder.

Why a model handler of ours rather than Beam's
`TFModelHandlerTensor` / `TFModelHandlerNumpy`:

- those stack the batch's examples into one dense tensor and call the
  model once; sentences have different lengths, so they would need padding
  before and per-sentence un-padding after, outside the handler, with the
  lengths carried alongside. Our runners
  (`keras_elmo.embedding.embedder`) take a list of token lists, pad
  in graph and return one `[L + 1, n, 2P]` array per sentence;
- they load a SavedModel or a `tf.keras` model by path; we load every
  source `resolve_model` accepts, through the same spec and resolver as
  in-process `keras-elmo embed` (`keras_elmo.embedding.model_spec.load_spec`),
  so a worker computes the vectors the command computes;
- the model outputs are several (`word_emb`, `lstm_outputs1..L`), reduced
  per sentence to what is stored (`all`, `top`, `average`).

Batching is RunInference's own (`beam.BatchElements`, configured through
`ModelHandler`'s arguments), then the in-process engine's: `run_inference`
sorts each batch by length and cuts model calls of at most `batch_size`
sentences and `batch_tokens` padded positions (`len(call) * longest`; a
longer sentence is a call of its own). Two ways to form Beam's batches
(`batching`):

- `"bundles"` (the default): `GATHER_BATCHES * batch_size` sentences of
  a bundle per batch (`min_batch_size = max_batch_size`; only a bundle's
  last batch is smaller), Beam's plain per-bundle `BatchElements`, sorted
  inside as `keras-elmo embed` sorts each chunk of `CHUNK_BATCHES *
  batch_size` lines (`keras_elmo.embedding.hdf5_output`);
- `"length-keys"`: Beam's length-aware `BatchElements`
  (`batch_length_fn`, `batch_bucket_boundaries=BUCKET_BOUNDARIES`,
  `max_batch_duration_secs=BUFFER_SECONDS`), which keys each sentence by
  (worker, length bucket) and fills batches of exactly `batch_size`
  sentences per key (the last of each key partial). It exists only on
  Beam's stateful path, whose four state calls per sentence are served
  by the runner: on the local runner with worker processes it embedded
  slower than one worker (`benchmarks/beam_embed.py`, docs/BEAM.md), so
  it is an option for runners whose state is cheap.

Beam 2.77's `max_batch_weight` cannot bound the padded tokens (`ModelHandler`
passes it to `BatchElements`, which has no such argument: a `TypeError`
when the pipeline is built). The biLM is stateless: a sentence's vectors
do not depend on the rest of its batch, whichever batching is used.

Models: RunInference loads the model once per worker process (its
`Shared` handle; the threads of a process share it) and never on the
launching machine. `share_model_across_processes` is left off: it would
serve every batch of a machine from one model process over a socket (for
models too big for one copy per process); an ELMo fits one copy per
worker process, and CPU inference then runs in every process.

What the workers loaded reaches the manifest through each prediction's
`model_id`: a JSON object of `num_layers`, `dim`, `max_tokens`, the
model's description and its digest (`model_identity`,
`keras_elmo.embedding.run_identity`). The manifest is written only if every
worker reported the same one.
"""

import json

from apache_beam.metrics import Metrics
from apache_beam.ml.inference.base import ModelHandler
from apache_beam.ml.inference.base import PredictionResult

from keras_elmo.embedding.batching import BATCHINGS
from keras_elmo.embedding.batching import check_layers
from keras_elmo.embedding.batching import length_order_batches
from keras_elmo.embedding.batching import select_layers
from keras_elmo.embedding.embedding_records import DTYPES
from keras_elmo.embedding.hdf5_output import CHUNK_BATCHES
from keras_elmo.embedding.model_spec import check_spec
from keras_elmo.embedding.model_spec import load_spec
from keras_elmo.embedding.model_spec import source_of
from keras_elmo.utils import check_positive_int
from keras_elmo.utils.thread_pools import available_cores
from keras_elmo.utils.thread_pools import size_tensorflow_threads
from keras_elmo.utils.thread_pools import threads_per_worker

# Model calls' worth of sentences per RunInference batch, sorted by length
# together: the in-process engine's chunk (`CHUNK_BATCHES`), so a bundle
# is padded as `keras-elmo embed` pads a file.
GATHER_BATCHES = CHUNK_BATCHES
# `batching="length-keys"`: token-count buckets (lower-inclusive, as
# `BatchElements` cuts them): [0, 8), [8, 16), ..., [512, inf).
BUCKET_BOUNDARIES = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512)
# How long a partial batch may wait for more sentences of its bucket: 0
# sets no processing-time timer, so a key's last, partial batch is flushed
# only by the end of the (global) window, i.e. once its input is complete
# (a positive value: Beam 2.77's BundleBasedDirectRunner can deliver the
# timer after a downstream GroupByKey completed, an AssertionError).
BUFFER_SECONDS = 0


# Beam metrics (namespace `keras_elmo`): sentences per RunInference batch
# and per model call; tokens and padded positions (`len(call) * longest`).
BATCH_SENTENCES = Metrics.distribution("keras_elmo", "batch_sentences")
CALL_SENTENCES = Metrics.distribution("keras_elmo", "model_call_sentences")
TOKENS = Metrics.counter("keras_elmo", "tokens")
PADDED = Metrics.counter("keras_elmo", "padded_positions")


def keyed_length(element):
    """Tokens of a `((file, line), (sentence, tokens))` element."""
    return len(element[1][1])


def batch_elements_arguments(batching, batch_size):
    """`ModelHandler` keyword arguments for `batching` (see the module
    doc): sizes of Beam's batches and, for `"length-keys"`, its keys."""
    if batching == "bundles":
        size = GATHER_BATCHES * batch_size
        return {"min_batch_size": size, "max_batch_size": size}
    return {
        "min_batch_size": batch_size,
        "max_batch_size": batch_size,
        "max_batch_duration_secs": BUFFER_SECONDS,
        "batch_length_fn": keyed_length,
        "batch_bucket_boundaries": list(BUCKET_BOUNDARIES),
    }


def model_calls(batch, batch_size, batch_tokens):
    """Index lists of `batch`, by length (a stable sort), each one model
    call of at most `batch_size` sentences and `batch_tokens` padded
    positions (`len(call) * longest`; a longer sentence alone)."""
    lengths = [len(element[1]) for element in batch]
    return length_order_batches(lengths, batch_size, batch_tokens)


def model_facts(embedder, description):
    """The JSON `model_id` of a loaded embedder (see the module doc)."""
    identity = getattr(embedder, "identity", None)
    return json.dumps(
        {
            "num_layers": int(embedder.num_layers),
            "dim": int(embedder.output_dim),
            "max_tokens": embedder.max_tokens,
            "model": description,
            "model_identity": identity,
        },
        sort_keys=True,
    )


class LoadedModel:
    """A worker's embedder and its `model_facts` JSON (Beam's `Shared`
    handle holds it by weak reference, which a tuple does not allow)."""

    def __init__(self, embedder, facts):
        self.embedder = embedder
        self.facts = facts


class BiLMModelHandler(ModelHandler):
    """Embeds `(sentence, tokens)` examples; one array per example.

    Used keyed (`KeyedModelHandler`, as `EmbedBatches` does): Beam's
    batching sees `((file, line), (sentence, tokens))` elements.

    Args:
        spec: dict. The model, as `keras-elmo embed`'s arguments name it:
            keys among `model`, `options` + `weights`, `preset`, `seed`,
            `vocab`, `random_weights` (`keras_elmo.embedding.model_spec`).
            Paths must be readable on the workers.
        layers: str. What is stored per sentence: `"all"` (`[L + 1, m,
            2P]`), `"top"` or `"average"` (`[m, 2P]`).
        dtype: str. `"float32"` or `"float16"` (rounded from float32).
        batch_size: int. Sentences per model call at most (and per
            Beam batch with `batching="length-keys"`).
        batch_tokens: int. Padded positions per model call at most.
        threads: int or None. TensorFlow threads per pool in each worker
            process, set before the model loads
            (`keras_elmo.utils.thread_pools`): `cores // workers` when
            several worker processes share a machine; None keeps
            TensorFlow's default (one per core), right for one worker
            process per machine. `default_worker_threads` picks it for
            local runs.
        loader: callable `spec -> (embedder, description)`, a module-level
            function (Beam ships it by reference): by default
            `keras_elmo.embedding.model_spec.load_spec`.
        batching: str. How Beam forms batches: `"bundles"` (sorted
            batches of `GATHER_BATCHES * batch_size` sentences of a
            bundle) or `"length-keys"` (Beam's stateful length buckets).

    Call arguments (`run_inference`):
        batch: list of `(sentence, tokens)`: the stripped line (bytes) and
            its tokens (tuple of bytes).

    Returns:
        A `PredictionResult(example, inference, model_id)` per example,
        `inference` the stored array (`m = min(n, max_tokens)` tokens),
        `model_id` the JSON of `model_facts`.
    """

    def __init__(
        self,
        spec,
        layers="all",
        dtype="float32",
        batch_size=64,
        batch_tokens=4096,
        threads=None,
        loader=load_spec,
        batching="bundles",
    ):
        check_spec(spec)
        check_layers(layers)
        if dtype not in DTYPES:
            raise ValueError(
                "Received an invalid value for argument `dtype`, expected "
                f"one of {DTYPES}, got {dtype!r}."
            )
        check_positive_int("batch_size", batch_size)
        check_positive_int("batch_tokens", batch_tokens)
        check_positive_int("threads", threads, allow_none=True)
        if batching not in BATCHINGS:
            raise ValueError(
                "Received an invalid value for argument `batching`, "
                f"expected one of {BATCHINGS}, got {batching!r}."
            )
        super().__init__(**batch_elements_arguments(batching, batch_size))
        self.batching = batching
        self.spec = dict(spec)
        self.layers = layers
        self.dtype = dtype
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.threads = threads
        self.loader = loader

    def load_model(self):
        if self.threads is not None:
            size_tensorflow_threads(self.threads)
        embedder, description = self.loader(self.spec)
        return LoadedModel(embedder, model_facts(embedder, description))

    def run_inference(self, batch, model, inference_args=None):
        vectors = [None] * len(batch)
        BATCH_SENTENCES.update(len(batch))
        for call in model_calls(batch, self.batch_size, self.batch_tokens):
            lengths = [len(batch[i][1]) for i in call]
            CALL_SENTENCES.update(len(call))
            TOKENS.inc(sum(lengths))
            PADDED.inc(len(call) * max(lengths))
            outputs = model.embedder([list(batch[i][1]) for i in call])
            for i, layers in zip(call, outputs):
                vectors[i] = select_layers(layers, self.layers)
        return [
            PredictionResult(example, v.astype(self.dtype), model.facts)
            for example, v in zip(batch, vectors)
        ]

    def get_num_bytes(self, batch):
        return sum(len(t) for _, tokens in batch for t in tokens)

    def get_metrics_namespace(self):
        return "keras_elmo"


def describe_spec(spec):
    """The manifest's `model_source`, from the spec alone (nothing is
    loaded or downloaded here: the workers load the model)."""
    check_spec(spec)
    if spec.get("random_weights"):
        source = f"random_weights={spec['random_weights']}"
    else:
        source = source_of(spec)
    if isinstance(source, tuple):
        source = f"options={source[0]}, weights={source[1]}"
    if spec.get("vocab"):
        source += f", vocab={spec['vocab']}"
    return {"model_source": source}


def default_worker_threads(pipeline_args):
    """The `threads` of `BiLMModelHandler` for these pipeline options.

    Local runs with `--direct_running_mode=multi_processing` start
    `--direct_num_workers` worker processes on this machine (0: one per
    core), so each gets `cores // workers` threads. Other runs keep
    TensorFlow's default (None): local in-memory or multi-threaded
    workers share one process and its pools, and a remote runner's
    machines are not this one (give `threads` for them, e.g. 1 on
    Dataflow, which runs one SDK process per vCPU).
    """
    from apache_beam.options.pipeline_options import DirectOptions
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(list(pipeline_args)).view_as(DirectOptions)
    if options.direct_running_mode != "multi_processing":
        return None
    workers = options.direct_num_workers or available_cores()
    return threads_per_worker(workers)
