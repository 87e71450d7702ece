"""`TrainingConfig`: everything `keras-elmo train` needs, in one place."""

import dataclasses


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
        optimizer: `adagrad` (bilm-tf: lr 0.2, accumulator 1.0) or any
            Keras optimizer name.
        learning_rate: float, the learning rate of the first epochs.
        lr_decay: float in (0, 1]. Epoch `e` (1-based) trains at
            `learning_rate * lr_decay ** max(0, e - lr_decay_start + 1)`
            (1.0: constant). A function of the epoch alone, so a resumed
            run uses the rate an uninterrupted one would.
        lr_decay_start: int >= 1, the first decayed epoch.
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
    batch_size: int = 64
    max_tokens: int = 100
    steps_per_epoch: int = None
    optimizer: str = "adagrad"
    learning_rate: float = 0.2
    lr_decay: float = 1.0
    lr_decay_start: int = 2
    clip_norm: float = 10.0
    dropout: float = 0.1
    num_sampled: int = 0
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
        if self.num_sampled < 0:
            raise ValueError(
                f"`num_sampled` must be >= 0, got {self.num_sampled}."
            )
        if self.init_from is not None and len(self.init_from) not in (2, 3):
            raise ValueError(
                "`init_from` must be (options, weights) or (options, "
                f"weights, softmax), got {self.init_from!r}."
            )
