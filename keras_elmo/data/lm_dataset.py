"""`make_lm_dataset`: sentence-per-line files -> biLM training batches.

The pipeline, all in graph (`tf.data`):

    files (sorted; shuffled per epoch when `shuffle`)
      -> lines (TextLineDataset, GZIP for `.gz`; deterministic interleave)
      -> drop a leading UTF-8 byte-order mark; strip (a `\\r\\n` line end
         is a line end); skip blank lines and lines that are not UTF-8
      -> whitespace tokens; split sentences longer than `max_tokens`
      -> shuffle sentences (seeded, reshuffled each epoch) -> repeat
      -> global batches (padded, or bucketed by length)
      -> this replica's rows -> char ids + next/previous word targets
"""

import logging

import tensorflow as tf

from keras_elmo.data import corpus
from keras_elmo.text.char_vocab import tokens_to_char_ids
from keras_elmo.utils import check_positive_int

logger = logging.getLogger(__name__)

# Lines are cleaned and split in vectorised chunks of this many.
_LINE_CHUNK = 256
# At most this many files are read at once when shuffling.
_MAX_INTERLEAVE = 8
# Target id of padding positions (ignored by the loss).
PAD_TARGET = -1


def _clean_and_split(lines, max_tokens):
    """`[n]` raw lines -> ragged `[m, None]` token pieces (m may be 0)."""
    stripped = tf.strings.strip(_drop_bom(lines))
    # Invalid UTF-8 changes under a "replace" transcode; valid text does not
    # (a genuine U+FFFD is valid and maps to itself).
    repaired = tf.strings.unicode_transcode(
        stripped, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    keep = tf.logical_and(
        tf.equal(repaired, stripped), tf.strings.length(stripped) > 0
    )
    tokens = tf.strings.split(tf.boolean_mask(stripped, keep))
    if max_tokens is None:
        return tokens
    lengths = tokens.row_lengths()
    piece_index = tf.ragged.range((lengths + max_tokens - 1) // max_tokens)
    row_of_piece = piece_index.value_rowids()
    piece_lengths = tf.minimum(
        tf.constant(max_tokens, tf.int64),
        tf.gather(lengths, row_of_piece) - piece_index.flat_values * max_tokens,
    )
    return tf.RaggedTensor.from_row_lengths(tokens.flat_values, piece_lengths)


def _drop_bom(lines):
    """Drops a UTF-8 byte-order mark at the start of each line (as
    `corpus.iter_sentences`); other lines are returned unchanged."""
    has_bom = tf.equal(tf.strings.substr(lines, 0, 3), corpus.UTF8_BOM)
    # Three spaces make every line long enough for `substr` at 3; they
    # are stripped with the line's own whitespace.
    rest = tf.strings.substr(tf.strings.join([lines, "   "]), 3, -1)
    return tf.where(has_bom, rest, lines)


def _sentences(files, max_tokens, shuffle, seed):
    """Dataset of 1-D string token vectors, one per sentence (piece)."""
    compression = ["GZIP" if f.endswith(".gz") else "" for f in files]
    paths = tf.data.Dataset.from_tensor_slices((files, compression))
    cycle_length = 1
    if shuffle and len(files) > 1:
        paths = paths.shuffle(
            len(files), seed=seed, reshuffle_each_iteration=True
        )
        cycle_length = min(len(files), _MAX_INTERLEAVE)
    parallel = {}
    if cycle_length > 1:
        parallel = {
            "num_parallel_calls": tf.data.AUTOTUNE,
            "deterministic": True,
        }
    lines = paths.interleave(
        lambda path, kind: tf.data.TextLineDataset(path, compression_type=kind),
        cycle_length=cycle_length,
        block_length=1,
        **parallel,
    )
    pieces = lines.batch(_LINE_CHUNK).map(
        lambda chunk: _clean_and_split(chunk, max_tokens),
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    )
    # Unbatching ragged rows gives a `RaggedTensorSpec` of ragged rank 0;
    # an identity map turns it into the plain `[None]` string tensor that
    # `padded_batch` needs.
    return pieces.unbatch().map(lambda tokens: tokens)


def _replica_rows(tokens, replica_index, num_replicas):
    """Rows `[ceil(r * m / R), ceil((r + 1) * m / R))` of an `m`-row batch.

    For a full batch (`m` = global batch size, divisible by `R`) that is
    `[r * b, (r + 1) * b)`; a smaller batch is split as evenly as possible,
    earlier replicas taking the extra rows (as `tf.distribute` rebatching).
    """
    rows = tf.shape(tokens, out_type=tf.int64)[0]
    start = -(-replica_index * rows // num_replicas)
    end = -(-(replica_index + 1) * rows // num_replicas)
    return tokens[start:end]


def _encode(tokens, table, bos_id, eos_id):
    """`[b, T]` string tokens ("" = pad) -> `(features, targets)`."""
    is_token = tf.not_equal(tokens, "")
    lengths = tf.reduce_sum(tf.cast(is_token, tf.int32), axis=1)
    rows = tf.shape(tokens)[0]
    word_ids = tf.where(is_token, table.lookup(tokens), PAD_TARGET)
    pad_column = tf.fill([rows, 1], PAD_TARGET)
    positions = tf.range(tf.shape(tokens)[1] + 1)[tf.newaxis, :]
    forward = tf.concat([word_ids, pad_column], axis=1)
    forward = tf.where(positions == lengths[:, tf.newaxis], eos_id, forward)
    backward = tf.concat([tf.fill([rows, 1], bos_id), word_ids], axis=1)
    features = {"char_ids": tokens_to_char_ids(tokens)}
    targets = {"forward": forward, "backward": backward}
    return features, targets


def make_lm_dataset(
    file_pattern,
    vocabulary,
    global_batch_size,
    max_tokens=100,
    shuffle=True,
    shuffle_buffer=10000,
    seed=0,
    repeat=False,
    bucket_boundaries=None,
    replica_index=0,
    num_replicas=1,
    drop_remainder=False,
):
    """Builds the biLM training (or evaluation) `tf.data.Dataset`.

    Reads sentence-per-line files with the rules of
    `keras_elmo.data.corpus` (blank and non-UTF-8 lines skipped, ASCII
    whitespace tokens, long sentences split into consecutive pieces of at
    most `max_tokens`). Every worker builds the same global batches from
    the same `seed` and keeps its own rows, so the union of the replicas'
    batches at each step is exactly the single-process batch.

    For a sentence of `n` tokens with word ids `w_1..w_n` (out-of-vocabulary
    tokens -> `<UNK>`), let `ids = [<S>, w_1, ..., w_n, </S>]` (the
    with-boundary positions 0..n+1). Then:

        forward  = ids[1:]  = [w_1, ..., w_n, </S>]   (length n + 1)
        backward = ids[:-1] = [<S>, w_1, ..., w_n]    (length n + 1)

    so the forward target at index `k` is the word at with-boundary position
    `k + 1` (predicted from the forward LSTM output at position `k`), and the
    backward target at index `k` is the word at with-boundary position `k`
    (predicted from the backward LSTM output at position `k + 1`). Both are
    padded with -1 after index `n`.

    Args:
        file_pattern: str or list of str. Glob pattern(s) of the corpus
            files, read in sorted order; `.gz` files are gzip-decompressed.
        vocabulary: `keras_elmo.data.Vocabulary`. The softmax vocabulary.
        global_batch_size: int. Sentences per step over all replicas.
        max_tokens: int or None. Longer sentences are split into pieces of
            at most this many tokens (None: never split).
        shuffle: bool. Shuffle the file order and the sentences (use False
            for evaluation: every sentence once, in file order).
        shuffle_buffer: int. Sentences in the shuffle buffer.
        seed: int. Shuffle seed. Each new iteration (epoch) of the returned
            dataset reshuffles, deterministically. The effective seed also
            depends on TensorFlow's global seed (`tf.random.set_seed`,
            `keras.utils.set_random_seed`): every worker must set the same
            one, or none.
        repeat: bool. Repeat the corpus forever (epochs reshuffled), so
            every batch is full.
        bucket_boundaries: list of int or None. Group sentences by token
            count (`tf.data.Dataset.bucket_by_sequence_length`, buckets
            `[0, b_0), [b_0, b_1), ..., [b_last, inf)`), each batch holding
            `global_batch_size` sentences of one bucket. None: plain
            padded batches in shuffle order.
        replica_index: int in `[0, num_replicas)`. Which rows to keep.
        num_replicas: int. Replicas sharing each global batch; must divide
            `global_batch_size`.
        drop_remainder: bool. Drop a final global batch (per bucket) that
            is smaller than `global_batch_size`. When False, such a batch
            of `m` rows is split as evenly as possible: replica `r` gets
            rows `[ceil(r * m / R), ceil((r + 1) * m / R))`, possibly none
            (a batch of shape `[0, T, 50]`), so every replica still runs
            the same number of steps.

    Returns:
        A `tf.data.Dataset` of `(features, targets)` per-replica batches:
        `features = {"char_ids": int32 [b, T, 50]}` (all-zero rows for
        padding tokens) and `targets = {"forward": int32 [b, T + 1],
        "backward": int32 [b, T + 1]}`, with `b = global_batch_size //
        num_replicas` (fewer in a final partial batch) and `T` the longest
        sentence of the *global* batch, the same on every replica. The
        batch dimension is static when `drop_remainder` or `repeat`.
        Options: deterministic, auto-sharding OFF (sharding is done here).

    Raises:
        FileNotFoundError: `file_pattern` matches no file.
        ValueError: an argument is invalid, e.g. `num_replicas` does not
            divide `global_batch_size`.

    Example:

    >>> vocab = keras_elmo.data.Vocabulary.load("vocab.txt")
    >>> ds = keras_elmo.data.make_lm_dataset("train/*.txt.gz", vocab, 128)
    >>> features, targets = next(iter(ds))
    """
    check_positive_int("global_batch_size", global_batch_size)
    check_positive_int("max_tokens", max_tokens, allow_none=True)
    check_positive_int("shuffle_buffer", shuffle_buffer)
    check_positive_int("num_replicas", num_replicas)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(
            "Received an invalid value for argument `seed`, expected an "
            f"integer (every replica must shuffle alike), got {seed!r}."
        )
    if global_batch_size % num_replicas:
        raise ValueError(
            f"`global_batch_size` ({global_batch_size}) must be divisible by "
            f"`num_replicas` ({num_replicas}): every replica gets "
            "global_batch_size // num_replicas rows."
        )
    if (
        isinstance(replica_index, bool)
        or not isinstance(replica_index, int)
        or not 0 <= replica_index < num_replicas
    ):
        raise ValueError(
            "Received an invalid value for argument `replica_index`, "
            f"expected an integer in [0, {num_replicas}), got "
            f"{replica_index!r}."
        )
    if bucket_boundaries is not None:
        bucket_boundaries = list(bucket_boundaries)
        if (
            not bucket_boundaries
            or not all(
                isinstance(b, int) and not isinstance(b, bool) and b > 0
                for b in bucket_boundaries
            )
            or bucket_boundaries != sorted(set(bucket_boundaries))
        ):
            raise ValueError(
                "Received an invalid value for argument `bucket_boundaries`, "
                "expected a non-empty, strictly increasing list of positive "
                f"integers, got {bucket_boundaries!r}."
            )
    files = corpus.list_files(file_pattern)
    logger.info(
        "LM dataset: %d files, global batch %d, replica %d of %d",
        len(files),
        global_batch_size,
        replica_index,
        num_replicas,
    )
    table = vocabulary.lookup_table()

    sentences = _sentences(files, max_tokens, shuffle, seed)
    if shuffle:
        sentences = sentences.shuffle(
            shuffle_buffer, seed=seed, reshuffle_each_iteration=True
        )
    if repeat:
        sentences = sentences.repeat()
    if bucket_boundaries is None:
        batches = sentences.padded_batch(
            global_batch_size,
            padded_shapes=[None],
            padding_values="",
            drop_remainder=drop_remainder,
        )
    else:
        batches = sentences.bucket_by_sequence_length(
            element_length_func=tf.size,
            bucket_boundaries=bucket_boundaries,
            bucket_batch_sizes=[global_batch_size]
            * (len(bucket_boundaries) + 1),
            padded_shapes=[None],
            padding_values="",
            drop_remainder=drop_remainder,
        )
    rows_per_replica = global_batch_size // num_replicas
    always_full = drop_remainder or repeat

    def to_replica_batch(tokens):
        if num_replicas > 1:
            tokens = _replica_rows(tokens, replica_index, num_replicas)
        if always_full:
            tokens = tf.ensure_shape(tokens, [rows_per_replica, None])
        return _encode(tokens, table, vocabulary.bos_id, vocabulary.eos_id)

    dataset = batches.map(
        to_replica_batch,
        num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=True,
    ).prefetch(tf.data.AUTOTUNE)
    options = tf.data.Options()
    options.deterministic = True
    options.experimental_distribute.auto_shard_policy = (
        tf.data.experimental.AutoShardPolicy.OFF
    )
    return dataset.with_options(options)
