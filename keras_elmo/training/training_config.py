"""`TrainingConfig`: everything `keras-elmo train` needs, in one place."""

import dataclasses

# The settings a recipe fills in when they are left at None.
#
# "default": what works without tuning from ~1e5 to ~1e7 tokens (measured:
# benchmarks/train_defaults.py -> benchmarks/results/train_defaults.json):
# Adam at 2e-3, dropout 0.1, full softmax, and with a validation set the
# plateau rule (halve the rate when an epoch gains < 1%) and the
# best-validation epoch as the output.
# "bilm-tf": bilm-tf's recipe for the 1B Word Benchmark (Adagrad 0.2 with
# accumulator 1.0, dropout 0.1, 8,192 sampled negatives, a constant rate;
# batch 128, which bilm-tf used per GPU), for billion-word runs.
RECIPES = {
    "default": dict(
        optimizer="adam",
        learning_rate=2e-3,
        dropout=0.1,
        num_sampled=0,
        batch_size=64,
        lr_schedule="auto",
    ),
    "bilm-tf": dict(
        optimizer="adagrad",
        learning_rate=0.2,
        dropout=0.1,
        num_sampled=8192,
        batch_size=128,
        lr_schedule="epoch",
    ),
}


@dataclasses.dataclass
class TrainingConfig:
    """Options of a biLM training run (the `keras-elmo train` flags).

    Args:
        train: glob of sentence-per-line, whitespace-tokenized files.
        vocab: path of the bilm-tf vocabulary file.
        out_dir: output directory (checkpoints, logs, final model).
        model: a preset name (`tiny`, `small`, ...) or an options.json path.
        valid: optional glob of validation files (perplexity per epoch).
        epochs: passes over the training data.
        batch_size: global batch size in sentences (split over replicas).
        max_tokens: longer lines are split into pieces of this many tokens.
        steps_per_epoch: cap on the steps of an epoch (None: the data).
        recipe: `"default"` or `"bilm-tf"` (see `RECIPES`): fills in
            `optimizer`, `learning_rate`, `dropout`, `num_sampled`,
            `batch_size` and `lr_schedule` where they are None.
        optimizer: `adagrad` (bilm-tf: lr 0.2, accumulator 1.0) or any
            Keras optimizer name.
        learning_rate: float, the learning rate of the first epochs.
        lr_decay: float in (0, 1]. Epoch `e` (1-based) trains at
            `learning_rate * lr_decay ** max(0, e - lr_decay_start + 1)`
            (1.0: constant). A function of the epoch alone, so a resumed
            run uses the rate an uninterrupted one would.
        lr_decay_start: int >= 1, the first decayed epoch.
        lr_schedule: `"epoch"` (`lr_decay` from `lr_decay_start` on),
            `"auto"` (`"plateau"` with a `valid` set, else `"epoch"`) or
            `"plateau"`: multiply the rate by `plateau_factor` after every
            epoch whose validation perplexity gains less than
            `plateau_threshold` (relative) over the best so far; needs
            `valid` (see `validation_rules`).
        plateau_factor: float in (0, 1), the plateau decay factor.
        plateau_threshold: float >= 0, the relative validation gain below
            which an epoch counts as a plateau.
        early_stopping_patience: None (off) or int >= 1: stop after this
            many epochs in a row whose relative validation gain is below
            `early_stopping_min_delta`. Needs `valid`.
        early_stopping_min_delta: float >= 0.
        clip_norm: global gradient norm clip, applied to the gradient
            summed over all replicas (bilm-tf: 10).
        dropout: dropout inside the biLSTM and before the softmax.
        num_sampled: sampled-softmax negatives; 0 = full softmax.
        seed: seed for initialisation, data order, dropout, sampling.
        checkpoint_every: steps between checkpoints (and at epoch ends).
        keep_checkpoints: how many recent checkpoints to keep.
        strategy: `auto`, `one_device`, `mirrored` or `multi_worker`.
        mixed_precision: None, `bfloat16` or `float16` compute.
        init_from: `(options, weights[, softmax])` to fine-tune from.
        deterministic: enable TensorFlow op determinism.
        bucket_boundaries: sentence-length bucket edges (None: no bucketing).
        shuffle_buffer: sentences in the shuffle buffer. Files are read in
            a shuffled order and sentences shuffled within this buffer, so
            a corpus whose files are ordered by source (all of one book,
            then the next) needs a buffer close to its size or shuffled
            shards, or the model drifts toward the latest source.
        log_every: steps between TensorBoard summaries.
        verbose: show a progress bar.
    """

    train: str
    vocab: str
    out_dir: str
    model: str = "small"
    valid: str = None
    epochs: int = 1
    recipe: str = "default"
    batch_size: int = None
    max_tokens: int = 100
    steps_per_epoch: int = None
    optimizer: str = None
    learning_rate: float = None
    lr_decay: float = 1.0
    lr_decay_start: int = 2
    lr_schedule: str = None
    plateau_factor: float = 0.5
    plateau_threshold: float = 0.01
    early_stopping_patience: int = None
    early_stopping_min_delta: float = 0.001
    clip_norm: float = 10.0
    dropout: float = None
    num_sampled: int = None
    seed: int = 0
    checkpoint_every: int = 500
    keep_checkpoints: int = 3
    strategy: str = "auto"
    mixed_precision: str = None
    init_from: tuple = None
    deterministic: bool = False
    bucket_boundaries: tuple = None
    shuffle_buffer: int = 100_000
    log_every: int = 50
    verbose: bool = True

    def learning_rate_at(self, epoch):
        """The learning rate of 0-based `epoch` (see `lr_decay`)."""
        decays = max(0, epoch + 2 - self.lr_decay_start)
        return self.learning_rate * self.lr_decay**decays

    def __post_init__(self):
        if self.recipe not in RECIPES:
            raise ValueError(
                "Received an invalid value for `recipe`, expected one of "
                f"{sorted(RECIPES)}, got {self.recipe!r}."
            )
        for name, value in RECIPES[self.recipe].items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        if self.lr_schedule == "auto":
            self.lr_schedule = "plateau" if self.valid else "epoch"
        for name in (
            "epochs",
            "batch_size",
            "max_tokens",
            "checkpoint_every",
            "shuffle_buffer",
            "lr_decay_start",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(
                    f"Received an invalid value for `{name}`, expected a "
                    f"positive integer, got {value!r}."
                )
        if self.mixed_precision not in (None, "bfloat16", "float16"):
            raise ValueError(
                "Received an invalid value for `mixed_precision`, expected "
                f"None, 'bfloat16' or 'float16', got {self.mixed_precision!r}."
            )
        if not 0.0 < self.lr_decay <= 1.0:
            raise ValueError(
                "Received an invalid value for `lr_decay`, expected a "
                f"factor in (0, 1], got {self.lr_decay!r}."
            )
        if self.lr_schedule not in ("epoch", "plateau"):
            raise ValueError(
                "Received an invalid value for `lr_schedule`, expected "
                f"'epoch' or 'plateau', got {self.lr_schedule!r}."
            )
        if not 0.0 < self.plateau_factor < 1.0:
            raise ValueError(
                "Received an invalid value for `plateau_factor`, expected a "
                f"factor in (0, 1), got {self.plateau_factor!r}."
            )
        for name in ("plateau_threshold", "early_stopping_min_delta"):
            value = getattr(self, name)
            if not value >= 0.0:
                raise ValueError(
                    f"Received an invalid value for `{name}`, expected a "
                    f"relative gain >= 0, got {value!r}."
                )
        patience = self.early_stopping_patience
        if patience is not None and (
            not isinstance(patience, int) or patience < 1
        ):
            raise ValueError(
                "Received an invalid value for `early_stopping_patience`, "
                f"expected None or a positive integer, got {patience!r}."
            )
        uses_valid = self.lr_schedule == "plateau" or patience is not None
        if uses_valid and not self.valid:
            raise ValueError(
                "`lr_schedule='plateau'` and `early_stopping_patience` decide "
                "from validation perplexity: pass `valid` (--valid), got "
                f"{self.valid!r}."
            )
        if self.num_sampled < 0:
            raise ValueError(
                f"`num_sampled` must be >= 0, got {self.num_sampled}."
            )
        if self.init_from is not None and len(self.init_from) not in (2, 3):
            raise ValueError(
                "`init_from` must be (options, weights) or (options, "
                f"weights, softmax), got {self.init_from!r}."
            )
