"""`Embedder`: sentences in, ELMo vectors out, from any model source.

The one high-level entry point, in the role of AllenNLP's
`ElmoEmbedder`, simple_elmo's `ElmoModel` and ELMoForManyLangs'
`Embedder`. For sentence `b` of `n_b` tokens it returns the `L + 1`
layers `h_{b,0..L}` `[L + 1, n_b, 2P]` (layer 0 is `[x; x]`, the token
embedding twice; layers `1..L` the biLSTM outputs), or one of their
reductions:

    top:     h_L                          [n_b, 2P]
    average: (1 / (L + 1)) sum_j h_j      [n_b, 2P]

and sentence vectors as the mean over the sentence's real tokens,
`(1 / n_b) sum_t v_t` (zeros for an empty sentence, never NaN).

Stateless and deterministic: sentences are sorted by length into batches
of `batch_size` and every batch starts from zero LSTM states, so a
sentence's vectors do not depend on what else is embedded with it.

`warmup=` (opt-in, BiLMs only) reproduces simple_elmo / bilm-tf instead:
a stateful copy of the biLM, the sentences in input order in batches of
`batch_size` (simple_elmo's `max_batch_size`), states carried from batch
to batch after a warm-up batch (`keras_elmo.compat.simple_elmo`), run
with bilm-tf's own sequence of TensorFlow ops (`BilmTfReplay`): the
same float32 values as simple_elmo on the same machine.

What runs a batch: `BiLMEmbedder` (a BiLM) or `SavedModelEmbedder` (an
exported SavedModel) maps a batch of token lists to one float32 array
`[L + 1, n, 2P]` per sentence: layer 0 is `[x; x]` (the token embedding
twice), layers `1..L` the biLSTM outputs, as AllenNLP's `ElmoEmbedder`
returns them.
Tokens are given as bytes, so invalid UTF-8 passes through unchanged.
`runner_for(resolved)` picks the runner of a resolved source: a
`SavedModelEmbedder` for a SavedModel, else a `BiLMEmbedder`.
"""

import logging
from collections.abc import Mapping
from collections.abc import Set

import numpy as np
import tensorflow as tf

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.compat import simple_elmo as bilm_warmup
from keras_elmo.embedding import hdf5_output as hdf5_embedding
from keras_elmo.embedding.batching import check_layers
from keras_elmo.embedding.batching import embed_in_length_order
from keras_elmo.embedding.batching import select_layers
from keras_elmo.embedding.run_identity import bilm_identity
from keras_elmo.embedding.run_identity import saved_model_identity
from keras_elmo.export import signatures as sig
from keras_elmo.export.saved_model import check_saved_model
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm import elmo_layers
from keras_elmo.models.token_embedding_cache import TokenEmbeddingCache
from keras_elmo.presets import sources as model_sources
from keras_elmo.utils import check_positive_int

logger = logging.getLogger(__name__)


def _pad(token_lists):
    steps = max((len(t) for t in token_lists), default=0)
    tokens = np.full((len(token_lists), steps), b"", dtype=object)
    for row, sentence in enumerate(token_lists):
        tokens[row, : len(sentence)] = sentence
    lengths = np.array([len(t) for t in token_lists], np.int32)
    return tf.constant(tokens, tf.string), lengths


def _split(stacked, lengths):
    """`[B, L+1, T, D]` -> list of `[L+1, n_b, D]` float32 arrays."""
    return [
        np.ascontiguousarray(stacked[b, :, :n], dtype=np.float32)
        for b, n in enumerate(lengths)
    ]


class BiLMEmbedder:
    """Runs a stateless `keras_elmo.BiLM` (compiled once, any shape).

    Args:
        bilm: a `keras_elmo.BiLM` (or an `ElmoLayer`, whose biLM is used).
        vocabulary: None, a list of str tokens or the path of a bilm-tf
            vocabulary file: caches the token embeddings of these tokens
            (`keras_elmo.models.TokenEmbeddingCache`), so only the other
            tokens run through the char-CNN. Same vectors up to float
            rounding.
    """

    max_tokens = None  # no truncation, as AllenNLP's `elmo` command

    def __init__(self, bilm, vocabulary=None):
        bilm = getattr(bilm, "bilm", bilm)
        if bilm.stateful:
            raise ValueError(
                "Embedding needs a stateless BiLM (a sentence's vectors must "
                "not depend on its batch), received one with stateful=True."
            )
        self.bilm = bilm
        self.vocabulary = vocabulary
        self._identity = None
        self.num_layers = bilm.num_output_layers
        self.output_dim = bilm.output_dim
        self.token_cache = None
        if vocabulary is not None:
            self.token_cache = TokenEmbeddingCache(vocabulary, bilm)
            self.token_cache.build()
        self._layers = tf.function(
            self._layers_fn,
            input_signature=[tf.TensorSpec([None, None], tf.string)],
        )

    @property
    def identity(self):
        """The digests of the biLM's options, weights and cache vocabulary
        (`keras_elmo.embedding.run_identity.bilm_identity`), computed once."""
        if self._identity is None:
            self._identity = bilm_identity(self.bilm, self.vocabulary)
        return self._identity

    def _layers_fn(self, tokens):
        if self.token_cache is None:
            outputs = self.bilm(self.bilm.encode_tokens(tokens), training=False)
        else:
            outputs = self.bilm.contextualize(
                self.token_cache(tokens), tf.not_equal(tokens, b"")
            )
        layers = elmo_layers(outputs)
        return tf.cast(tf.stack(layers, axis=1), tf.float32)

    def __call__(self, token_lists):
        if not token_lists:
            return []
        tokens, lengths = _pad(token_lists)
        return _split(self._layers(tokens).numpy(), lengths)


class SavedModelEmbedder:
    """Calls the `tokens` signature of an exported SavedModel.

    Sentences longer than the export's `max_tokens` (512 by default) come
    back truncated to it, as the SavedModel documents.

    Its ops are checked before it is loaded
    (`keras_elmo.export.saved_model`): one that `export_saved_model`
    would not write is refused unless `trust_saved_model=True`.

    Args:
        path: str. A SavedModel directory written by `export_saved_model`.
        trust_saved_model: bool. Load a SavedModel with other ops too (it
            runs as the program it is).
    """

    max_tokens = sig.MAX_TOKENS

    def __init__(self, path, trust_saved_model=False):
        self.path = path
        self._identity = None
        self._warned = False
        check_saved_model(path, trust_saved_model)
        self._model = tf.saved_model.load(path)
        if sig.TOKENS_SIGNATURE not in self._model.signatures:
            raise ValueError(
                f"SavedModel {path!r} has no `tokens` signature (found "
                f"{sorted(self._model.signatures)})."
            )
        self._tokens = self._model.signatures[sig.TOKENS_SIGNATURE]
        outputs = self._tokens.structured_outputs
        self.lstm_keys = sorted(
            (k for k in outputs if k.startswith("lstm_outputs")),
            key=lambda k: int(k[len("lstm_outputs") :]),
        )
        if sig.WORD_EMB not in outputs or not self.lstm_keys:
            raise ValueError(
                f"SavedModel {path!r}: the `tokens` signature lacks "
                "`word_emb` / `lstm_outputs*` outputs."
            )
        self.num_layers = len(self.lstm_keys) + 1
        self.output_dim = int(outputs[self.lstm_keys[0]].shape[-1])

    @property
    def identity(self):
        """The SavedModel's fingerprint
        (`keras_elmo.embedding.run_identity.saved_model_identity`)."""
        if self._identity is None:
            self._identity = saved_model_identity(self.path)
        return self._identity

    def __call__(self, token_lists):
        if not token_lists:
            return []
        tokens, lengths = _pad(token_lists)
        out = self._tokens(
            tokens=tokens, sequence_len=tf.constant(lengths, tf.int32)
        )
        layers = [np.asarray(layer) for layer in elmo_layers(out)]
        used = out[sig.SEQUENCE_LEN].numpy()
        if not self._warned and (used < lengths).any():
            self._warned = True
            logger.warning(
                "SavedModel %s keeps %d tokens per sentence; longer lines "
                "are embedded truncated.",
                self.path,
                int(used.max()),
            )
        return _split(np.stack(layers, axis=1), used)


def runner_for(resolved, vocabulary=None, trust_saved_model=False):
    """The runner of a `keras_elmo.presets.sources.ResolvedModel`: a
    `SavedModelEmbedder` for a SavedModel (refused, unless
    `trust_saved_model`, when it holds ops keras_elmo's export never
    writes), else a `BiLMEmbedder` over the model's `BiLM` (or a `.keras`
    file's `ElmoLayer`)."""
    if resolved.format == "saved_model":
        if vocabulary is not None:
            raise ValueError(
                "`vocabulary` caches token embeddings of a BiLM; it does "
                f"not apply to the {resolved.description}."
            )
        return SavedModelEmbedder(resolved.path, trust_saved_model)
    model = BiLM.model_from_resolved(resolved)
    return BiLMEmbedder(model, vocabulary=vocabulary)


@keras_elmo_export("keras_elmo.Embedder")
class Embedder:
    """Embeds tokenised sentences with a biLM or an exported SavedModel.

    Args:
        model: a `keras_elmo.BiLM`, an `ElmoLayer` (its biLM is used), or
            a runner from `keras_elmo.embedding.embedder`.
        batch_size: int. Sentences per batch (default 64).
        vocabulary: None, a list of tokens or a bilm-tf vocabulary file:
            these tokens' char-CNN embeddings are computed once and looked
            up (same vectors up to float rounding, faster). BiLMs only.
        description: str or None. How messages name the model.
        warmup: None (default: stateless), True / `"first_batch"`, or a
            list of token lists: carry LSTM states across batches after
            that warm-up batch, as simple_elmo's `get_elmo_vectors(...,
            warmup=True)` does (`keras_elmo.compat.simple_elmo`); False:
            carry states without a warm-up (its `warmup=False`). Gives
            simple_elmo 0.9.2's vectors (bit for bit on the same machine
            and TensorFlow build, for bilm-tf architectures) when
            `batch_size` is its `max_batch_size` (32 by default); vectors
            then depend on the order, the batch size and the warm-up.
            BiLMs only, without `vocabulary`; not for `embed_file`
            (stateless, sorted by length).

    Example:

    >>> emb = keras_elmo.Embedder.from_preset("elmo_small_en")
    >>> vectors = emb.embed([["The", "bank", "."], ["Hi"]])
    >>> [v.shape for v in vectors]
    [(3, 3, 256), (3, 1, 256)]
    >>> emb.sentence_vectors([["The", "bank", "."], []]).shape
    (2, 256)
    """

    def __init__(
        self,
        model,
        batch_size=64,
        vocabulary=None,
        description=None,
        warmup=None,
    ):
        check_positive_int("batch_size", batch_size)
        if callable(model) and hasattr(model, "num_layers"):
            if vocabulary is not None:
                raise ValueError(
                    "`vocabulary` applies to a BiLM `model`, received a "
                    f"{type(model).__name__} runner."
                )
            self.runner = model
        else:
            self.runner = BiLMEmbedder(model, vocabulary=vocabulary)
        self.batch_size = int(batch_size)
        self.description = description or type(model).__name__
        self.warmup = warmup
        self._stateful = None
        if warmup is not None:
            self._stateful = _stateful_bilm(self.runner, warmup, vocabulary)

    @classmethod
    def from_preset(
        cls,
        source,
        batch_size=64,
        vocabulary=None,
        cache_dir=None,
        warmup=None,
        trust_saved_model=False,
    ):
        """An `Embedder` for any model source.

        Args:
            source: a preset name (`keras-elmo presets`), a folder or
                `.zip` (AllenNLP / bilm-tf, an NLPL or EMBEDDIA archive, an
                ELMoForManyLangs folder: the format is detected from the
                files), an exported SavedModel or TF Serving folder, a
                `.keras` file, an `http(s)://` or `file://` URL,
                `hf://owner/repo`, or a pair `(options, weights)`.
            batch_size: int. Sentences per batch.
            vocabulary: see the class docstring.
            cache_dir: str or None. Overrides the download cache folder.
            warmup: see the class docstring (simple_elmo's vectors).
            trust_saved_model: bool. A SavedModel `source` whose ops are
                not those of keras_elmo's export (it could read or write
                files when called) is refused unless this is True
                (`keras_elmo.export.saved_model`).
        """
        check_positive_int("batch_size", batch_size)
        if warmup is not None:
            bilm_warmup.check_warmup(warmup)
            _check_no_vocabulary(vocabulary)
        return model_sources.load(
            source,
            lambda resolved: cls(
                runner_for(
                    resolved,
                    vocabulary=vocabulary,
                    trust_saved_model=trust_saved_model,
                ),
                batch_size,
                description=resolved.description,
                warmup=warmup,
            ),
            cache_dir=cache_dir,
        )

    @property
    def num_layers(self):
        """`L + 1`, the layers of `embed(..., layers="all")`."""
        return self.runner.num_layers

    @property
    def output_dim(self):
        """`2P`, the width of every vector."""
        return self.runner.output_dim

    @property
    def max_tokens(self):
        """Tokens kept per sentence (None: no truncation)."""
        return self.runner.max_tokens

    @property
    def identity(self):
        """What a resumed `embed_file` compares: the runner's `identity`."""
        return getattr(self.runner, "identity", None)

    def __call__(self, token_lists):
        """The runner protocol: token lists (bytes) -> `[L + 1, n, 2P]`."""
        return self.runner(token_lists)

    def embed(self, sentences, layers="all"):
        """One float32 array per sentence, in input order.

        Args:
            sentences: a list of sentences, each a list of str tokens (or
                a str, split on whitespace).
            layers: `"all"` -> `[L + 1, n, 2P]`, layer 0 first; `"top"` or
                `"average"` -> `[n, 2P]`.
        """
        check_layers(layers)
        token_lists = _token_lists(sentences)
        if self._stateful is not None:
            vectors = bilm_warmup.embed_with_warmup(
                self._stateful,
                [
                    [t.decode("utf-8", "surrogateescape") for t in s]
                    for s in token_lists
                ],
                batch_size=self.batch_size,
                warmup=self.warmup,
            )
            return [select_layers(v, layers) for v in vectors]
        return embed_in_length_order(
            self.runner,
            token_lists,
            self.batch_size,
            each=lambda array: select_layers(array, layers),
        )

    def embed_sentence(self, sentence, layers="all"):
        """`embed([sentence], layers)[0]`."""
        return self.embed([sentence], layers)[0]

    def sentence_vectors(self, sentences, layers="average", normalize=False):
        """Masked means over each sentence's tokens.

        Args:
            sentences: as for `embed`.
            layers: `"average"` (default) or `"top"` -> `[B, 2P]`;
                `"all"` -> `[B, L + 1, 2P]`, one mean per layer.
            normalize: bool. Divide each vector by its L2 norm (a zero
                vector stays zero).

        Returns:
            float32 array; an empty sentence gives zeros.
        """
        vectors = self.embed(sentences, layers)
        shape = (self.num_layers,) if layers == "all" else ()
        shape += (self.output_dim,)
        means = np.zeros((len(vectors),) + shape, np.float32)
        for b, array in enumerate(vectors):
            axis = 1 if layers == "all" else 0
            if array.shape[axis]:
                means[b] = array.mean(axis=axis)
        if normalize:
            norms = np.linalg.norm(means, axis=-1, keepdims=True)
            means = np.divide(
                means, norms, out=np.zeros_like(means), where=norms > 0
            )
        return means

    def embed_file(
        self,
        input_path,
        output_path,
        layers="all",
        resume=False,
        force=False,
        progress=False,
    ):
        """Embeds a text file, one sentence per line, into an HDF5 file in
        the `allennlp elmo` layout (`keras_elmo.embedding.hdf5_output`);
        returns the number of lines."""
        if self._stateful is not None:
            raise ValueError(
                "`embed_file` is stateless (it sorts lines by length); "
                "this Embedder has `warmup` set: use `embed` for "
                "simple_elmo's carried-state vectors, or an Embedder "
                "without `warmup`."
            )
        return hdf5_embedding.embed_file(
            self.runner,
            input_path,
            output_path,
            layers=layers,
            batch_size=self.batch_size,
            resume=resume,
            force=force,
            progress=progress,
        )


def _stateful_bilm(runner, warmup, vocabulary):
    """The stateful copy of a BiLM runner's biLM for `warmup`."""
    bilm_warmup.check_warmup(warmup)
    bilm = getattr(runner, "bilm", None)
    if not isinstance(runner, BiLMEmbedder) or bilm is None:
        raise ValueError(
            "`warmup` needs a BiLM model (its LSTM states are carried), "
            f"received a {type(runner).__name__} runner."
        )
    _check_no_vocabulary(vocabulary)
    return bilm_warmup.stateful_copy(bilm)


def _check_no_vocabulary(vocabulary):
    if vocabulary is not None:
        raise ValueError(
            "`warmup` and `vocabulary` cannot be combined: the token cache "
            "runs the stateless biLM."
        )


def _token_lists(sentences):
    """str tokens -> the UTF-8 bytes the runners take.

    A batch is a list (or tuple, array, generator) of sentences, never a
    str, bytes, dict or set (a dict would give its keys, a set an
    arbitrary order). A sentence is a str (split on whitespace) or a list
    of str (or bytes) tokens. A token is encoded as UTF-8 with
    `surrogateescape`: the surrogates U+DC80..U+DCFF that Python's
    `surrogateescape` decoding makes of bytes that are not UTF-8 stand for
    those bytes, as in `embed_file`; any other lone surrogate (e.g.
    "\\ud800") is not text and is refused, naming the sentence and token.
    """
    if isinstance(sentences, _NOT_A_SEQUENCE) or not hasattr(
        sentences, "__iter__"
    ):
        raise _refused(
            TypeError,
            "Received an invalid value for argument `sentences`, expected a "
            "list of sentences (each a list of str tokens, or a str), got "
            f"{_kind(sentences)}.",
            (),
        )
    token_lists = []
    for index, sentence in enumerate(sentences):
        if isinstance(sentence, str):
            sentence = sentence.split()
        elif isinstance(sentence, _NOT_A_SEQUENCE) or not hasattr(
            sentence, "__iter__"
        ):
            raise _refused(
                TypeError,
                f"Received an invalid value for argument `sentences`: "
                f"sentences[{index}]: expected a list of str tokens or a "
                f"str, got {_kind(sentence)}.",
                (index,),
            )
        tokens = []
        for position, token in enumerate(sentence):
            if isinstance(token, bytes):
                tokens.append(token)
            elif isinstance(token, str):
                tokens.append(_encoded(token, index, position))
            else:
                raise _refused(
                    TypeError,
                    "Received an invalid value for argument `sentences`: "
                    f"sentences[{index}][{position}]: expected str tokens, "
                    f"got a {type(token).__name__} in sentence {index}, "
                    f"token {position}: {_kind(token)}.",
                    (index, position),
                )
        token_lists.append(tokens)
    return token_lists


# Containers that are not a list of sentences (or of tokens).
_NOT_A_SEQUENCE = (str, bytes, bytearray, Mapping, Set)


def _kind(value):
    """A value's type, and the value itself where short (for messages)."""
    name = type(value).__name__
    if value is None or isinstance(value, (int, float, bool)):
        return name
    text = repr(value)
    return f"{name} {text[:60]}{'...' if len(text) > 60 else ''}"


def _encoded(token, index, position):
    try:
        return token.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as e:
        bad = token[e.start]
        raise _refused(
            ValueError,
            "Received an invalid value for argument `sentences`: "
            f"sentences[{index}][{position}] ({token!r}) holds the lone "
            f"surrogate U+{ord(bad):04X} at character {e.start}, which is "
            "not text and has no UTF-8 encoding; expected str tokens of "
            "valid Unicode (decode your input with errors='replace', or "
            "remove the character).",
            (index, position),
        ) from None


def _refused(kind, message, index):
    """An error about `sentences`, with the argument and the index of the
    bad sentence (and token) as data: `error.argument`, `error.index`."""
    error = kind(message)
    error.argument = "sentences"
    error.index = index
    return error
