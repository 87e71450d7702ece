"""What runs a batch for `keras_elmo.Embedder`: a BiLM or a SavedModel.

Both runners map a batch of token lists to one float32 array `[L + 1, n, 2P]`
per sentence: layer 0 is `[x; x]` (the token embedding twice), layers
`1..L` the biLSTM outputs, as AllenNLP's `ElmoEmbedder` returns them.
Tokens are given as bytes, so invalid UTF-8 passes through unchanged.
"""

import logging

import numpy as np
import tensorflow as tf

from keras_elmo.embedding.run_identity import bilm_identity
from keras_elmo.embedding.run_identity import saved_model_identity
from keras_elmo.export import signatures as sig
from keras_elmo.export.saved_model_check import check_saved_model
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm import elmo_layers
from keras_elmo.models.token_embedding_cache import TokenEmbeddingCache

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
    (`keras_elmo.export.saved_model_check`): one that `export_saved_model`
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
