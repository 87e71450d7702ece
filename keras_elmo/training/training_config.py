"""`TrainingConfig`: every training setting, declared, defaulted and
checked once.

Each field carries its help text and its argparse options in its
metadata (`setting(...)`); `keras_elmo.cli.train` builds its argument
parser from these fields (the flag is the field's name, or the CLI's own
alias), so a setting exists in one place. Help texts and errors name
other settings by their field names in backticks, which the command line
shows as its flags.

Which settings each Keras backend trains (`training_refusals`, one table):
TensorFlow runs all; `NeutralTrainer` (JAX, PyTorch) refuses, by name and
before anything is built or written, those that need `tf.distribute`,
TensorFlow's loss scaling or its without-replacement sampler.

`init_from`, a new training run that starts from another model's weights:
`TrainingConfig.init_from` is one model source (a preset name, folder,
`.zip`, URL or `hf://` name: whatever `Embedder.from_preset` takes, resolved
by the one loader, `presets.sources.load`) or the files `(options.json,
weights.hdf5[, softmax.hdf5])`. The run trains the architecture of that
options.json (`resolve_model_config`), and `load_init_from` copies the
weights into the freshly built `BiLMLanguageModel` before any checkpoint is
restored (a resumed run's checkpoint then overwrites them). The softmax,
`W: [V, D]` and `b: [V]` for the run's `V`-word vocabulary, is loaded from
a softmax file named as the third file, or found beside a source's weights
when the source's vocabulary file is the run's; otherwise it keeps its
random initial values.
"""

import dataclasses
import logging
import os

logger = logging.getLogger(__name__)

# The settings a recipe fills in when they are left at None.
#
# "default": what works without tuning on corpora of ~1e5-1e6 tokens
# (measured: benchmarks/train_defaults.py ->
# benchmarks/results/train_defaults.json): Adam at 2e-3, dropout 0.1,
# full softmax, and with a validation set the plateau rule (halve the
# rate when an epoch gains < 1%) and the best-validation epoch as output.
# "bilm-tf": bilm-tf's recipe for the 1B Word Benchmark (Adagrad 0.2 with
# accumulator 1.0, dropout 0.1, 8,192 negatives sampled without
# replacement, the mean token loss times 20 (its `unroll_steps`) before
# the gradient and the clip, a constant rate; batch 128, which bilm-tf
# used per GPU), for billion-word runs (docs/TRAINING.md: what each
# difference does to learning per step, measured side by side).
RECIPES = {
    "default": dict(
        optimizer="adam",
        learning_rate=2e-3,
        dropout=0.1,
        num_sampled=0,
        sampler="unique",
        loss_multiplier=1.0,
        batch_size=64,
        lr_schedule="auto",
    ),
    "bilm-tf": dict(
        optimizer="adagrad",
        learning_rate=0.2,
        dropout=0.1,
        num_sampled=8192,
        sampler="unique",
        loss_multiplier=20.0,
        batch_size=128,
        lr_schedule="epoch",
    ),
}
FROM_RECIPE = "default: from `recipe`"


def setting(default=dataclasses.MISSING, help="", **argparse):
    """A dataclass field with its help text and argparse options
    (`choices`, `nargs`, `action`, `type`, `metavar`)."""
    metadata = {"help": help, "argparse": argparse}
    return dataclasses.field(default=default, metadata=metadata)


def comma_separated_ints(text):
    """`"10,20,40"` -> `(10, 20, 40)` (argparse type of list settings)."""
    return tuple(int(v) for v in text.split(",") if v.strip())


@dataclasses.dataclass
class TrainingConfig:
    """Options of a biLM training run (the `keras-elmo train` flags).

    Learning rate of 0-based epoch `e` under `lr_schedule="epoch"`:
    `learning_rate * lr_decay ** max(0, e + 2 - lr_decay_start)`, a
    function of the epoch alone, so a resumed run uses the rate an
    uninterrupted one would. Under `"plateau"` the rate is decided from
    validation perplexity by `evaluate.ValidationRules` and
    checkpointed. Every field's meaning is its `help` metadata, which is
    also the command line's help text.
    """

    train: str = setting(help="Training files glob (sentence per line).")
    vocab: str = setting(help="bilm-tf vocabulary file.")
    out_dir: str = setting(help="Output directory.")
    model: str = setting(
        "2x1024_128_2048cnn_1xhighway",
        "The architecture: an options.json, or a name that says its shape "
        "(AllenNLP's, LxH_P_Fcnn_kxhighway: L biLSTM layers of H units "
        "projected to P, F character filters, k highway layers): "
        "2x1024_128_2048cnn_1xhighway (elmo_2x1024_en's), "
        "2x1024_128_512cnn_1xhighway (the shipped elmo_small_en's: the "
        "same biLSTM, fewer filters), 2x2048_256_2048cnn_1xhighway, "
        "2x4096_512_2048cnn_2xhighway (the original ELMo's); or tiny "
        "(tests), and small, medium, original (the older names of the "
        "2048-filter three).",
        metavar="ARCHITECTURE",
    )
    valid: str = setting(None, "Validation files glob (perplexity per epoch).")
    epochs: int = setting(1, "Passes over the training data.")
    recipe: str = setting(
        "default",
        "Defaults for the optimizer, learning rate, dropout, sampled "
        "softmax, batch size and schedule. default: Adam 2e-3, dropout "
        "0.1, full softmax, batch 64, plateau decay with `valid`; bilm-tf: "
        "Adagrad 0.2, dropout 0.1, 8192 sampled negatives, batch 128, "
        "constant rate (billion-word runs). Explicit settings override it.",
        choices=sorted(RECIPES),
    )
    batch_size: int = setting(None, f"Global, in sentences ({FROM_RECIPE}).")
    max_tokens: int = setting(100, "Longer lines are split into pieces.")
    steps_per_epoch: int = setting(None, "Cap on the steps of an epoch.")
    optimizer: str = setting(
        None, f"adagrad (bilm-tf's) or a Keras optimizer ({FROM_RECIPE})."
    )
    learning_rate: float = setting(None, f"First rate ({FROM_RECIPE}).")
    lr_schedule: str = setting(
        None,
        "epoch: `lr_decay` from `lr_decay_start` on; plateau: multiply by "
        "`plateau_factor` after an epoch whose validation perplexity gains "
        "less than `plateau_threshold` over the best; auto: plateau with "
        "`valid` and no `lr_decay`, else epoch "
        f"({FROM_RECIPE}).",
        choices=["auto", "epoch", "plateau"],
    )
    lr_decay: float = setting(
        1.0,
        "Multiply the rate by this once per epoch from `lr_decay_start` on "
        "(1.0: constant).",
    )
    lr_decay_start: int = setting(
        2, "First epoch (1-based) trained at a decayed rate."
    )
    plateau_factor: float = setting(0.5, "Plateau decay factor, in (0, 1).")
    plateau_threshold: float = setting(
        0.01, "Relative validation gain below which an epoch is a plateau."
    )
    early_stopping_patience: int = setting(
        None,
        "Stop after this many epochs in a row that gain less than "
        "`early_stopping_min_delta` (relative) in validation perplexity.",
    )
    early_stopping_min_delta: float = setting(
        0.001, "See `early_stopping_patience`."
    )
    clip_norm: float = setting(10.0, "Global gradient-norm clip (bilm-tf: 10).")
    dropout: float = setting(
        None, f"In the biLSTM and before the softmax ({FROM_RECIPE})."
    )
    num_sampled: int = setting(
        None, f"Sampled-softmax negatives, 0: full softmax ({FROM_RECIPE})."
    )
    sampler: str = setting(
        None,
        "How sampled-softmax negatives are drawn: unique (without "
        "replacement, bilm-tf's and TensorFlow's default) or replacement "
        f"({FROM_RECIPE}).",
        choices=["unique", "replacement"],
    )
    loss_multiplier: float = setting(
        None,
        "The mean token loss is multiplied by this before the gradient, "
        "so the clip and the optimizer see the scaled gradient; bilm-tf: "
        "20, its unroll_steps, i.e. the loss summed over a 20-token row "
        f"({FROM_RECIPE}). The reported loss is never scaled.",
    )
    seed: int = setting(0, "Seed of initialisation, data order and dropout.")
    checkpoint_every: int = setting(500, "Steps between checkpoints.")
    keep_checkpoints: int = setting(3, "Recent checkpoints kept.")
    keep_optimizer_state: bool = setting(
        False,
        "Keep the optimizer's state (its slots, as large as the model "
        "again, twice for Adam) in the last checkpoint when the run ends, "
        "so that a larger `epochs` continues it exactly; by default a "
        "finished run keeps its weights and position only.",
        action="store_true",
    )
    strategy: str = setting(
        "auto",
        "tf.distribute strategy.",
        choices=["auto", "one_device", "mirrored", "multi_worker"],
    )
    mixed_precision: str = setting(
        None, "Compute dtype.", choices=["bfloat16", "float16"]
    )
    init_from: tuple = setting(
        None,
        "The model to fine-tune from: a preset name, folder, .zip or URL "
        "(as Embedder.from_preset takes), or the files options.json "
        "weights.hdf5 [softmax.hdf5].",
        nargs="+",
        metavar="SOURCE",
        type=str,
    )
    deterministic: bool = setting(
        False,
        "Enable TensorFlow op determinism (bit-reproducible runs).",
        action="store_true",
    )
    bucket_boundaries: tuple = setting(
        None,
        "Comma-separated sentence-length bucket edges, e.g. 10,20,40.",
        type=comma_separated_ints,
    )
    shuffle_buffer: int = setting(
        100_000,
        "Sentences shuffled together. Files are read in a shuffled order "
        "and sentences shuffled within this buffer, so a corpus ordered by "
        "source needs a buffer near its size or the model drifts toward "
        "the latest source.",
    )
    log_every: int = setting(50, "Steps between TensorBoard summaries.")
    verbose: bool = setting(True, "No progress bar.", action="store_false")

    def learning_rate_at(self, epoch):
        """The learning rate of 0-based `epoch` under the epoch schedule."""
        decays = max(0, epoch + 2 - self.lr_decay_start)
        return self.learning_rate * self.lr_decay**decays

    def __post_init__(self):
        if self.recipe not in RECIPES:
            self._invalid("recipe", f"one of {sorted(RECIPES)}")
        for name, value in RECIPES[self.recipe].items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        if self.lr_schedule == "auto":
            # An explicit per-epoch decay asks for the epoch schedule.
            plateau = self.valid and self.lr_decay == 1.0
            self.lr_schedule = "plateau" if plateau else "epoch"
        if isinstance(self.init_from, list):
            self.init_from = tuple(self.init_from)
        self._check()

    def _invalid(self, name, expected):
        raise ValueError(
            f"Received an invalid value for `{name}`, expected "
            f"{expected}, got {getattr(self, name)!r}."
        )

    def _check(self):
        for name in (
            "epochs",
            "batch_size",
            "max_tokens",
            "checkpoint_every",
            "keep_checkpoints",
            "shuffle_buffer",
            "lr_decay_start",
            "log_every",
            "steps_per_epoch",
            "early_stopping_patience",
        ):
            value = getattr(self, name)
            optional = name in ("steps_per_epoch", "early_stopping_patience")
            if value is None and optional:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or value < 1
            ):
                self._invalid(name, "a positive integer")
        if not isinstance(self.num_sampled, int) or self.num_sampled < 0:
            self._invalid("num_sampled", "an integer >= 0 (0: full softmax)")
        if self.mixed_precision not in (None, "bfloat16", "float16"):
            self._invalid("mixed_precision", "None, 'bfloat16' or 'float16'")
        if self.lr_schedule not in ("epoch", "plateau"):
            self._invalid("lr_schedule", "'auto', 'epoch' or 'plateau'")
        if not 0.0 < self.lr_decay <= 1.0:
            self._invalid("lr_decay", "a factor in (0, 1]")
        if not 0.0 < self.plateau_factor < 1.0:
            self._invalid("plateau_factor", "a factor in (0, 1)")
        for name in ("plateau_threshold", "early_stopping_min_delta"):
            if not getattr(self, name) >= 0.0:
                self._invalid(name, "a relative gain >= 0")
        if not self.learning_rate > 0.0:
            self._invalid("learning_rate", "a rate > 0")
        if not 0.0 <= self.dropout < 1.0:
            self._invalid("dropout", "a probability in [0, 1)")
        if not self.clip_norm > 0.0:
            self._invalid("clip_norm", "a norm > 0")
        if self.sampler not in ("unique", "replacement"):
            self._invalid("sampler", "'unique' or 'replacement'")
        if not self.loss_multiplier > 0.0:
            self._invalid("loss_multiplier", "a factor > 0")
        if self.init_from is not None and len(self.init_from) not in (1, 2, 3):
            self._invalid(
                "init_from",
                "one model source, or options.json weights.hdf5 [softmax.hdf5]",
            )
        decides = self.lr_schedule == "plateau" or self.early_stopping_patience
        if decides and not self.valid:
            raise ValueError(
                "`lr_schedule='plateau'` and `early_stopping_patience` decide "
                "from validation perplexity: pass `valid`, got "
                f"{self.valid!r}."
            )


# Backends `NeutralTrainer` trains on (`jax.value_and_grad` / torch autograd).
NEUTRAL_TRAINING_BACKENDS = ("jax", "torch")


def training_refusals(config, backend):
    """The reasons `config` cannot train on `backend` ([]: it can).

    Args:
        config: `TrainingConfig`.
        backend: str, the Keras backend (`keras.config.backend()`).
    """
    if backend == "tensorflow":
        return []
    needs = f"needs the TensorFlow backend; received KERAS_BACKEND={backend}"
    if backend not in NEUTRAL_TRAINING_BACKENDS:
        return [
            "training runs on the tensorflow, jax and torch backends; "
            f"received KERAS_BACKEND={backend}"
        ]
    found = []
    if config.strategy in ("mirrored", "multi_worker"):
        found.append(
            f"`strategy` {needs} (`strategy={config.strategy}` is a "
            "tf.distribute strategy; on JAX one process uses "
            "keras.distribution.DataParallel over its local devices; on "
            "torch, one device)"
        )
    elif config.strategy == "auto" and os.environ.get("TF_CONFIG"):
        found.append(
            f"multi-worker training (TF_CONFIG is set) {needs}; unset "
            "TF_CONFIG to train in this process alone"
        )
    if config.mixed_precision:
        found.append(
            f"`mixed_precision` {needs} (`mixed_precision="
            f"{config.mixed_precision}`: float16 loss scaling and the "
            "mixed policies are tested there only)"
        )
    if config.num_sampled and config.sampler == "unique":
        found.append(
            f"`sampler` {needs} (`sampler=unique` draws negatives without "
            "replacement, a dynamic-shape loop); pass `sampler=replacement` "
            "for the sampled softmax with replacement"
        )
    return found


def check_training_backend(config, backend):
    """Raises `ValueError` listing every refusal of `training_refusals`."""
    found = training_refusals(config, backend)
    if found:
        raise ValueError("; ".join(found) + ".")


# --- init_from ------------------------------------------------------------
def resolve_init_from(init_from):
    """The `ResolvedModel` that `init_from` names, through the one loader.

    Args:
        init_from: `(source,)`, any model source `presets.sources.
            resolve_model` takes, or `(options.json, weights.hdf5[,
            softmax.hdf5])`.

    Raises:
        ValueError: the source is not a bilm-tf / AllenNLP-format model
            (options.json + weights.hdf5), the only kind that seeds a
            training run's `BiLMLanguageModel`.
    """
    from keras_elmo.presets import sources

    if len(init_from) == 1:
        source = init_from[0]
    else:
        options, weights, *rest = init_from
        source = dataclasses.replace(
            sources.allennlp_files(
                options, weights, f"init_from files {options!r}, {weights!r}"
            ),
            softmax=rest[0] if rest else None,
            vocabulary=None,
        )
    return sources.load(source, _trainable)


def _trainable(resolved):
    if resolved.format != "allennlp":
        raise ValueError(
            f"Received an invalid value for argument `init_from`: "
            f"{resolved.description} is a {resolved.format} model; a "
            "training run starts from a bilm-tf / AllenNLP-format model "
            "(options.json + weights.hdf5, optionally softmax.hdf5 and "
            "vocab.txt beside them)."
        )
    return resolved


def init_from_files(init_from):
    """The files a run's record digests for `init_from`: options,
    weights and, when one is named or found, the softmax (in that
    order)."""
    resolved = resolve_init_from(init_from)
    return [p for p in (resolved.options, resolved.weights) if p] + (
        [resolved.softmax] if resolved.softmax else []
    )


def resolve_model_config(config):
    """The `BiLMConfig` a `TrainingConfig` trains: that of `init_from`'s
    options.json, else `model`'s (an options.json path or an
    architecture name)."""
    from keras_elmo.config import BiLMConfig

    if config.init_from:
        resolved = resolve_init_from(config.init_from)
        return BiLMConfig.from_options_json(resolved.options)
    if os.path.exists(config.model):
        return BiLMConfig.from_options_json(config.model)
    return BiLMConfig.from_architecture(config.model)


def load_init_from(model, vocabulary_size, init_from, vocabulary=None):
    """Loads `init_from`'s weights into a built `BiLMLanguageModel`.

    Args:
        model: `BiLMLanguageModel` built from `resolve_model_config`.
        vocabulary_size: int. `V`, the run's vocabulary size (named in
            the warning when the softmax starts random).
        init_from: as `TrainingConfig.init_from` (`resolve_init_from`).
        vocabulary: str or None. The run's vocabulary file. A softmax
            found beside a source's weights is loaded only when the
            source's own vocabulary file has the same content: its rows
            are that vocabulary's words.

    The weights go into `model.backbone`, the softmax (named, or found
    and matching) into `model.softmax`; otherwise the softmax stays
    random, with a warning saying why.
    """
    from keras_elmo.utils.digests import sha256_file
    from keras_elmo.weights import hdf5 as model_files
    from keras_elmo.weights.hdf5 import load_bilm_hdf5

    resolved = resolve_init_from(init_from)
    load_bilm_hdf5(model.backbone, resolved.weights)
    softmax, why = resolved.softmax, "no softmax file was given or found"
    if softmax and len(init_from) == 1:
        same = (
            resolved.vocabulary is not None
            and vocabulary is not None
            and sha256_file(resolved.vocabulary) == sha256_file(vocabulary)
        )
        if not same:
            softmax = None
            why = (
                f"the softmax of {resolved.description} is for its own "
                "vocabulary, not this run's"
            )
    if softmax:
        model_files.load_softmax_hdf5(model.softmax, softmax)
    else:
        logger.warning(
            "Fine-tuning from %s: %s, so the softmax for the %d-word "
            "vocabulary starts from random weights and the first steps "
            "train it from scratch.",
            resolved.description,
            why,
            vocabulary_size,
        )
