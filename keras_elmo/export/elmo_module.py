"""`ElmoModule`: a biLM and its mix as a `tf.Module` with TF Hub signatures.

What `export_saved_model` saves (`saved_model.py`): `build_module` wraps
a `BiLM` (with a fresh mix) or an `ElmoLayer` (with its first mix) in an
`ElmoModule`, whose `default` signature splits sentences in graph
(`split_sentences`) and whose `tokens` signature takes padded tokens;
both run the biLM and the mix with core TensorFlow ops only.
"""

import logging

import tensorflow as tf

from keras_elmo.export import signatures as sig
from keras_elmo.layers.scalar_mix import ScalarMix
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm import elmo_layers
from keras_elmo.models.elmo_layer import ElmoLayer
from keras_elmo.models.token_embedding_cache import TokenEmbeddingCache
from keras_elmo.models.token_encoder import lookup_tables
from keras_elmo.text.token_inputs import split_words
from keras_elmo.utils import check_positive_int

logger = logging.getLogger(__name__)


class ElmoModule(tf.Module):
    """The exported object: string tokens in, ELMo layers and mix out.

    Everything runs in the TensorFlow graph with core TensorFlow ops only
    (tokenization, character ids, biLM, mix), so the SavedModel loads in a
    process that imports nothing but `tensorflow`, and TF Serving serves
    it. It follows TF Hub's Reusable SavedModel interface: `obj(text)` is
    the `default` signature's function (also `obj.default(text)`),
    `obj.tokens({"tokens": ..., "sequence_len": ...})` the `tokens` one,
    and `obj.variables`, `obj.trainable_variables` (the
    mix weights `s` and `gamma`) and `obj.regularization_losses` are saved
    attributes, which `hub.KerasLayer` reads.

    Input rules, identical for both signatures:

    - A token is a non-empty string; `""` is padding wherever it appears
      (tokens after a gap move up: a sentence is its real tokens in
      order), and outputs are zero at padding positions.
    - `tokens` positions at or beyond `sequence_len[b]` are padding;
      `sequence_len[b] > T` is clamped to `T`; a negative `sequence_len`
      or one whose length is not `B` raises `InvalidArgumentError`.
    - At most `max_tokens` positions per row are read (later ones are
      dropped) and at most 48 bytes per token (the character format).
    - Bytes are bytes: invalid UTF-8 and NUL bytes are ordinary
      characters of the byte-level character vocabulary.

    The output `sequence_len` counts the real tokens of each row after
    these rules, and `default` is the mean of `elmo` over them (zeros for
    an empty row).

    Args:
        bilm: a stateless `keras_elmo.BiLM`.
        scalar_mix: a `keras_elmo.layers.ScalarMix` over the biLM's
            `L + 1` layers.
        max_tokens: int. Tokens kept per sentence.
    """

    # tf.Module computes these as properties, which a SavedModel does not
    # keep; the Reusable SavedModel interface wants saved attributes, so
    # here they are plain lists, set in __init__.
    variables = None
    trainable_variables = None
    non_trainable_variables = None

    def __init__(
        self, bilm, scalar_mix, max_tokens=sig.MAX_TOKENS, token_cache=None
    ):
        super().__init__(name="elmo")
        # Not tracked: the SavedModel keeps variables and functions, not
        # the Keras objects (which a plain-TensorFlow loader cannot use).
        self._keras = _Untracked(bilm=bilm, mix=scalar_mix, cache=token_cache)
        self.max_tokens = int(max_tokens)
        self.num_layers = int(bilm.config.num_layers)
        self.projection_dim = int(bilm.config.projection_dim)
        weights = list(bilm.weights) + list(scalar_mix.weights)
        if token_cache is not None:
            weights += list(token_cache.weights)
            # The vocabulary's hash table, saved with the module.
            self._token_table = token_cache.lookup.lookup_table
        # The token encoder's lexicon hash tables (none for bilm-tf).
        self._encoder_tables = lookup_tables(bilm.token_encoder)
        variables = _unique(weights)
        trainable = _unique([w for w in scalar_mix.weights if w.trainable])
        trainable_ids = {id(w) for w in trainable}
        self.variables = variables
        self.trainable_variables = trainable
        self.non_trainable_variables = [
            w for w in variables if id(w) not in trainable_ids
        ]
        # One graph of the biLM, called by both signatures.
        self._layers = tf.function(
            self._run_bilm,
            input_signature=[tf.TensorSpec([None, None], tf.string)],
        )
        self.regularization_losses = []
        if scalar_mix.l2_coef and trainable:
            self.regularization_losses.append(
                tf.function(self._mix_penalty, input_signature=[])
            )

    def _mix_penalty(self):
        mix = self._keras.mix
        weights = tf.convert_to_tensor(mix.scalar_parameters)
        return mix.l2_coef * tf.reduce_sum(tf.square(weights))

    @tf.function(input_signature=[sig.text_spec()])
    def __call__(self, text):
        """The `default` signature: sentences `[B]` -> outputs."""
        text = _checked_rank(text, [None])
        tokens, sequence_len = split_sentences(text, self.max_tokens)
        return self._embed(tokens, sequence_len)

    # `obj.default(text)`: the same function under its signature's name
    # (`keras.layers.TFSMLayer(path, call_endpoint="default")`).
    default = __call__

    @tf.function(input_signature=[sig.tokens_input_spec()])
    def tokens(self, inputs):
        """`{"tokens": [B, T], "sequence_len": [B]}` -> outputs.

        One dict argument, as hub.KerasLayer and TFSMLayer pass inputs;
        the `tokens` signature takes the same two tensors as keywords.
        """
        return self._embed(
            _checked_rank(inputs[sig.TOKENS], [None, None]),
            _checked_rank(inputs[sig.SEQUENCE_LEN], [None]),
        )

    def _embed(self, tokens, sequence_len):
        with tf.name_scope("check_inputs"):
            batch = tf.shape(tokens)[0]
            tf.debugging.assert_equal(
                tf.shape(sequence_len)[0],
                batch,
                message="`sequence_len` must have one entry per row of "
                "`tokens` (shape [B]).",
            )
            tf.debugging.assert_non_negative(
                sequence_len,
                message="`sequence_len` must be >= 0 (the number of real "
                "tokens of each row of `tokens`).",
            )
        tokens = tokens[:, : self.max_tokens]
        steps = tf.shape(tokens)[1]
        positions = tf.range(steps)[tf.newaxis, :]
        limits = tf.minimum(sequence_len, steps)[:, tf.newaxis]
        real = tf.logical_and(positions < limits, tf.not_equal(tokens, ""))
        lengths = tf.reduce_sum(tf.cast(real, tf.int32), axis=1)
        # The biLM wants each sentence contiguous and right-padded: move
        # the real tokens to the front, run, then put them back in place.
        packed = tf.ragged.boolean_mask(tokens, real).to_tensor("")
        layers = self._layers(packed)
        index = tf.maximum(tf.cumsum(tf.cast(real, tf.int32), axis=1) - 1, 0)
        real_f = tf.cast(real, tf.float32)[..., tf.newaxis]

        def unpack(x):
            x = tf.pad(x, [[0, 0], [0, 1], [0, 0]])  # gather-safe if empty
            return tf.gather(x, index, batch_dims=1) * real_f

        outputs = {key: unpack(value) for key, value in layers.items()}
        total = tf.reduce_sum(outputs[sig.ELMO], axis=1)
        count = tf.maximum(tf.cast(lengths, tf.float32), 1.0)
        outputs[sig.MEAN] = total / count[:, tf.newaxis]
        outputs[sig.SEQUENCE_LEN] = lengths
        return outputs

    def _run_bilm(self, tokens):
        """`{word_emb, lstm_outputs1..L, elmo}`, float32 `[B, T, .]`, from
        right-padded tokens; known tokens' embeddings come from the token
        cache when there is one."""
        bilm, cache = self._keras.bilm, self._keras.cache
        if cache is None:
            outputs = bilm(bilm.encode_tokens(tokens), training=False)
        else:
            mask = tf.not_equal(tokens, "")
            outputs = bilm.contextualize(cache(tokens), mask, training=False)
        # The biLM is frozen in the SavedModel, as in TF Hub's elmo/3: only
        # the mix is trainable, and gradients stop here (cheap fine-tuning).
        outputs = {k: tf.stop_gradient(v) for k, v in outputs.items()}
        elmo = self._keras.mix(elmo_layers(outputs), mask=outputs["mask"])
        result = {sig.WORD_EMB: outputs[sig.WORD_EMB]}
        for key in sig.lstm_output_keys(self.num_layers):
            result[key] = outputs[key]
        result[sig.ELMO] = elmo
        return {k: tf.cast(v, tf.float32) for k, v in result.items()}

    def signatures(self):
        """`{name: ConcreteFunction}` for `tf.saved_model.save`."""
        default = self.__call__.get_concrete_function()

        def tokens(tokens, sequence_len):
            return self.tokens(
                {sig.TOKENS: tokens, sig.SEQUENCE_LEN: sequence_len}
            )

        tokens = tf.function(tokens, input_signature=sig.tokens_specs())
        return {
            sig.DEFAULT_SIGNATURE: default,
            sig.TOKENS_SIGNATURE: tokens.get_concrete_function(),
            sig.SERVING_DEFAULT: default,
        }


class _Untracked:
    """A plain holder: `tf.Module` does not track what it holds."""

    def __init__(self, **objects):
        self.__dict__.update(objects)


def _checked_rank(x, shape):
    """`x`, with a run-time check of its rank: a server does not check
    inputs against the signature, and an `EnsureShape` error names the
    input, the expected and the received shape (`Shape of tensor text
    [2,1] is not compatible with expected shape [?]`)."""
    return tf.ensure_shape(x, shape, name=f"check_{x.name.split(':')[0]}")


def split_sentences(text, max_tokens=sig.MAX_TOKENS):
    """Whitespace tokenization in graph: `[B]` -> (`[B, T]`, lengths `[B]`).

    Splits like Python's `str.split()` (runs of Unicode whitespace, no
    empty tokens) on valid UTF-8, keeps invalid bytes inside tokens, and
    keeps the first `max_tokens` tokens of each sentence. Core TensorFlow
    ops only (`StaticRegexReplace`, `StringSplitV2`).
    """
    with tf.name_scope("split_sentences"):
        words = split_words(text)[:, :max_tokens]
        return words.to_tensor(""), tf.cast(words.row_lengths(), tf.int32)


def build_module(
    bilm_or_elmo_layer, max_tokens=sig.MAX_TOKENS, vocabulary=None
):
    """The `ElmoModule` for a `BiLM` or an `ElmoLayer` (not saved)."""
    check_positive_int("max_tokens", max_tokens)
    bilm, mix = bilm_and_mix(bilm_or_elmo_layer)
    cache = getattr(bilm_or_elmo_layer, "token_cache", None)
    if vocabulary is not None:
        cache = TokenEmbeddingCache(vocabulary, bilm, name="token_cache")
    if cache is not None and not cache.built:
        cache.build()
    return ElmoModule(bilm, mix, max_tokens=max_tokens, token_cache=cache)


def bilm_and_mix(bilm_or_elmo_layer):
    """`(bilm, mix)` of an export: an `ElmoLayer`'s biLM and first
    `ScalarMix`, or a `BiLM` and a fresh built mix (`s = 0`, `gamma = 1`).

    Raises:
        TypeError: neither a `BiLM` nor an `ElmoLayer`.
        ValueError: a stateful biLM.
    """
    if isinstance(bilm_or_elmo_layer, ElmoLayer):
        bilm = bilm_or_elmo_layer.bilm
        mix = bilm_or_elmo_layer.scalar_mixes[0]
        if bilm_or_elmo_layer.num_output_representations > 1:
            logger.warning(
                "The ElmoLayer has %d output representations; the "
                "exported `elmo` output uses the first one.",
                bilm_or_elmo_layer.num_output_representations,
            )
        if mix.do_layer_norm:
            logger.warning(
                "The ElmoLayer normalises layers with batch statistics "
                "(do_layer_norm=True): the exported `elmo` output depends "
                "on the other sentences of a request."
            )
    elif isinstance(bilm_or_elmo_layer, BiLM):
        bilm = bilm_or_elmo_layer
        mix = ScalarMix(num_layers=bilm.num_output_layers, name="elmo_mix")
    else:
        raise TypeError(
            "`bilm_or_elmo_layer` must be a keras_elmo.BiLM or a "
            "keras_elmo.layers.ElmoLayer, received "
            f"{type(bilm_or_elmo_layer).__name__}."
        )
    if bilm.stateful:
        raise ValueError(
            "Cannot export a stateful BiLM: a served model must give the "
            "same vectors whatever came before. Rebuild it with "
            "stateful=False and copy the weights."
        )
    if not mix.built:
        shape = (None, None, bilm.output_dim)
        mix.build([shape] * bilm.num_output_layers)
    return bilm, mix


def _unique(variables):
    seen, result = set(), []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            result.append(v)
    return result
