"""`ElmoLayer`: ELMo representations for any downstream Keras model."""

import keras
import numpy as np
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.layers.scalar_mix import ScalarMix
from keras_elmo.layers.token_ids import numpy_char_ids
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm import elmo_layers
from keras_elmo.models.token_embedding_cache import TokenEmbeddingCache
from keras_elmo.text.token_inputs import dense_tokens
from keras_elmo.text.token_inputs import describe
from keras_elmo.text.token_inputs import is_python_strings
from keras_elmo.text.token_inputs import python_tokens
from keras_elmo.text.token_inputs import token_shape
from keras_elmo.utils import check_positive_int
from keras_elmo.utils import is_tensorflow


@keras_elmo_export(["keras_elmo.ElmoLayer", "keras_elmo.layers.ElmoLayer"])
class ElmoLayer(keras.layers.Layer):
    """Task-specific ELMo: `gamma * sum_j softmax(s)_j h_j` over biLM layers.

    Runs a `keras_elmo.BiLM` (frozen by default) on the input, forms its
    `L + 1` layers `h_0 = [x; x]`, `h_1..h_L` (`[B, T, 2P]` each), and
    mixes them with `num_output_representations` independent `ScalarMix`
    layers (Peters et al. 2018, eq. 1), each followed by dropout. Use
    several representations to feed ELMo at several places of a model
    (e.g. the input and the output of a task RNN, paper section 3.3).

    Args:
        bilm: a stateless `keras_elmo.BiLM`.
        num_output_representations: int. How many mixes to return.
        dropout: float. Dropout rate on each mix (training only).
        do_layer_norm: bool. Normalise each layer before mixing (masked
            statistics over the batch's real tokens; AllenNLP also counts
            its `<S>`/`</S>` positions, so its statistics differ slightly).
        l2_coef: float. L2 penalty `l2_coef * sum(s^2)` pulling each mix
            toward the plain average of the layers.
        trainable_bilm: bool. Fine-tune the biLM jointly with the task.
        scalar_mix_parameters: list of `L + 1` floats or None. Fixed
            un-normalised weights `s` (then `s` and `gamma` are frozen),
            e.g. `[-9e10, 1, -9e10]` to take only the first LSTM layer.
        vocabulary: None, a list of str tokens, or the path of a bilm-tf
            vocabulary file. Caches the biLM's token embeddings (layer 0:
            char-CNN, highway, projection) for these tokens when the layer
            is built (`keras_elmo.models.TokenEmbeddingCache`); string
            inputs then look them up in the graph and run the char-CNN
            only for the other tokens. Same outputs (up to float
            rounding), less work. Needs `trainable_bilm=False`; char-id
            inputs do not use the cache. The cache is saved with the layer.
        **kwargs: standard `keras.layers.Layer` arguments.

    Call arguments:
        inputs: one of
            - int char ids `[B, T, 50]` (`keras_elmo.batch_to_ids`);
            - string tokens `[B, T]` with `""` as padding
              (`keras_elmo.pad_tokens` builds them from Python lists);
            - ragged string tokens `[B, (n_i)]`, e.g.
              `tf.strings.split(sentences)`: padded with `""` in the layer;
            - sentences, strings `[B]`: split in the layer like Python's
              `str.split()` (runs of Unicode whitespace separate tokens),
              the rule of the SavedModel's `default` signature.
            The three string forms of the same tokens give the same
            vectors. Python lists of str (token lists of any lengths, or
            sentences) are taken in a direct call. On JAX and PyTorch:
            Python or NumPy strings only, encoded in NumPy before the
            call, and no `vocabulary`.
        training: bool. Enables dropout.

    Returns:
        float tensor `[B, T, 2P]`, zero at padded positions; a list of
        them when `num_output_representations > 1`.

    Masking: produces the token mask `[B, T]` (real tokens; padding and
    the positions after a ragged row or a sentence end are masked), which
    Keras passes on to mask-aware layers such as `Bidirectional(LSTM)`.

    Example:

    >>> bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture("tiny"))
    >>> tokens = keras.Input(shape=(None,), dtype="string")
    >>> elmo = keras_elmo.layers.ElmoLayer(bilm, dropout=0.0)(tokens)
    >>> lstm = keras.layers.LSTM(8, return_sequences=True)
    >>> hidden = keras.layers.Bidirectional(lstm)(elmo)
    >>> tags = keras.layers.Dense(17)(hidden)
    >>> model = keras.Model(tokens, tags)
    >>> model.predict(keras_elmo.pad_tokens([["a", "fine", "film"], ["dull"]]),
    ...               verbose=0).shape
    (2, 3, 17)

    Sentences (or `ragged=True` tokens) as the model's input:

    >>> text = keras.Input(shape=(), dtype="string")
    >>> vectors = keras_elmo.layers.ElmoLayer(bilm, dropout=0.0)(text)
    >>> keras.Model(text, vectors).predict(
    ...     tf.constant(["a fine film", "dull"]), verbose=0).shape
    (2, 3, 32)

    Reference:
        Peters et al. 2018, "Deep contextualized word representations".
    """

    def __init__(
        self,
        bilm,
        num_output_representations=1,
        dropout=0.5,
        do_layer_norm=False,
        l2_coef=0.0,
        trainable_bilm=False,
        scalar_mix_parameters=None,
        vocabulary=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if isinstance(bilm, dict):
            bilm = keras.saving.deserialize_keras_object(bilm)
        if not hasattr(bilm, "num_output_layers"):
            raise TypeError(
                "`bilm` must be a keras_elmo.BiLM, received "
                f"{type(bilm).__name__}."
            )
        if getattr(bilm, "stateful", False):
            raise ValueError(
                "`bilm` must be stateless inside an ElmoLayer (received a "
                "BiLM with stateful=True); build it with stateful=False."
            )
        check_positive_int(
            "num_output_representations", num_output_representations
        )
        if not 0.0 <= dropout < 1.0:
            raise ValueError(
                "Received an invalid value for argument `dropout`, expected "
                f"a float in [0, 1), got {dropout!r}."
            )
        if vocabulary is not None and trainable_bilm:
            raise ValueError(
                "Received `vocabulary` together with `trainable_bilm=True`: "
                "cached token embeddings would go stale while the biLM "
                "trains; pass vocabulary=None to fine-tune the biLM."
            )
        self.bilm = bilm
        self.bilm.trainable = bool(trainable_bilm)
        self.token_cache = (
            None
            if vocabulary is None
            else TokenEmbeddingCache(vocabulary, bilm, name="token_cache")
        )
        self.vocabulary = (
            None if vocabulary is None else self.token_cache.vocabulary
        )
        self.num_output_representations = num_output_representations
        self.dropout = float(dropout)
        self.do_layer_norm = bool(do_layer_norm)
        self.l2_coef = float(l2_coef)
        self.trainable_bilm = bool(trainable_bilm)
        self.scalar_mix_parameters = (
            None
            if scalar_mix_parameters is None
            else [float(s) for s in scalar_mix_parameters]
        )
        self.scalar_mixes = [
            ScalarMix(
                num_layers=bilm.num_output_layers,
                do_layer_norm=do_layer_norm,
                scalar_mix_parameters=self.scalar_mix_parameters,
                l2_coef=l2_coef,
                dtype=self.dtype_policy,
                name=f"scalar_mix_{k}",
            )
            for k in range(num_output_representations)
        ]
        self.dropout_layers = [
            keras.layers.Dropout(
                dropout, dtype=self.dtype_policy, name=f"dropout_{k}"
            )
            for k in range(num_output_representations)
        ]
        self.supports_masking = True

    @classmethod
    def from_preset(cls, source, cache_dir=None, **kwargs):
        """An `ElmoLayer` over a pretrained biLM (`BiLM.from_preset`).

        Args:
            source: anything `keras_elmo.BiLM.from_preset` accepts: a
                shipped or published preset name, a folder, a `.zip`, a
                URL or `hf://owner/repo`.
            cache_dir: str or None. Overrides the download cache folder.
            **kwargs: `ElmoLayer` arguments (`dropout`, ...).
        """
        return cls(BiLM.from_preset(source, cache_dir=cache_dir), **kwargs)

    @classmethod
    def from_tfhub(cls, module_dir, options=None, **kwargs):
        """An `ElmoLayer` reproducing a TF Hub `elmo/3` module's `elmo`.

        The biLM comes from `BiLM.from_tfhub`; the mix starts from the
        module's learned `aggregation/weights` and `aggregation/scaling`.

        Args:
            module_dir: str. The module folder or its `.tar.gz`.
            options: see `BiLM.from_tfhub`.
            **kwargs: `ElmoLayer` arguments (`dropout`, ...).
        """
        bilm, mix = BiLM.from_tfhub(module_dir, options, return_mix=True)
        layer = cls(bilm, **kwargs)
        layer.build((None, None, 50))
        for scalar_mix in layer.scalar_mixes:
            scalar_mix.scalar_parameters.assign(mix["scalar_parameters"])
            scalar_mix.gamma.assign(mix["gamma"])
        return layer

    def build(self, inputs_shape):
        layer_shape = token_shape(inputs_shape) + (self.bilm.output_dim,)
        for mix in self.scalar_mixes:
            mix.build([layer_shape] * self.bilm.num_output_layers)
        if self.token_cache is not None:
            self.token_cache.build()

    def __call__(self, inputs, *args, **kwargs):
        if is_python_strings(inputs):
            if is_tensorflow():
                import tensorflow as tf

                # A nested list of str is one input, not a list of inputs.
                inputs = tf.constant(python_tokens(inputs), dtype=tf.string)
            elif self.token_cache is not None:
                raise ValueError(
                    "Received string `inputs` for an ElmoLayer with a "
                    f"`vocabulary` on the {keras.config.backend()} backend: "
                    "the token cache needs the TensorFlow backend; build it "
                    "with vocabulary=None, or pass ids from "
                    "keras_elmo.batch_to_ids."
                )
            else:
                # No string tensors off TensorFlow: encode in NumPy first.
                inputs = numpy_char_ids(python_tokens(inputs))
        elif isinstance(inputs, (list, tuple)):
            inputs = _int_array(inputs)
        _check_inputs(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def _bilm_outputs(self, inputs, training):
        if keras.backend.standardize_dtype(inputs.dtype) != "string":
            return self.bilm(inputs, training=training)
        if self.token_cache is None:
            return self.bilm(self.bilm.encode_tokens(inputs), training=training)
        return self.bilm.contextualize(
            self.token_cache(inputs),
            ops.not_equal(inputs, ""),
            training=training,
        )

    def refresh_token_cache(self):
        """Recomputes the cached token embeddings from the biLM's weights.

        Needed only after the biLM's weights change (e.g. loaded) once this
        layer is built; loading a saved `ElmoLayer` restores a matching
        cache by itself.
        """
        if self.token_cache is None:
            raise ValueError(
                "This ElmoLayer has no token cache (built with "
                "vocabulary=None)."
            )
        self.token_cache.refresh()

    def call(self, inputs, training=None):
        if is_tensorflow():
            inputs = dense_tokens(inputs)
        outputs = self._bilm_outputs(inputs, training)
        mask = outputs["mask"]
        layers = elmo_layers(outputs)
        mixes = []
        for mix, dropout in zip(self.scalar_mixes, self.dropout_layers):
            mixed = mix(layers, mask=mask)
            mixed = dropout(mixed, training=training)
            mixes.append(mixed * ops.cast(mask, mixed.dtype)[..., None])
        return mixes[0] if len(mixes) == 1 else mixes

    def compute_mask(self, inputs, mask=None):
        is_string = keras.backend.standardize_dtype(inputs.dtype) == "string"
        if (
            isinstance(inputs, keras.KerasTensor)
            and is_string
            and (inputs.ragged or len(inputs.shape) == 1)
        ):
            # A node of the functional graph that pads (or splits) the
            # tokens again when the model runs: a plain `not_equal` there
            # would get the ragged or 1-D tensor itself.
            token_mask = StringTokenMask()(inputs)
        elif is_string:
            token_mask = ops.not_equal(dense_tokens(inputs), "")
        else:
            token_mask = ops.any(ops.greater(inputs, 0), axis=-1)
        if self.num_output_representations == 1:
            return token_mask
        return [token_mask] * self.num_output_representations

    def compute_output_shape(self, inputs_shape):
        shape = token_shape(inputs_shape) + (self.bilm.output_dim,)
        if self.num_output_representations == 1:
            return shape
        return [shape] * self.num_output_representations

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "bilm": keras.saving.serialize_keras_object(self.bilm),
                "num_output_representations": (self.num_output_representations),
                "dropout": self.dropout,
                "do_layer_norm": self.do_layer_norm,
                "l2_coef": self.l2_coef,
                "trainable_bilm": self.trainable_bilm,
                "scalar_mix_parameters": self.scalar_mix_parameters,
                "vocabulary": self.vocabulary,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_elmo")
class StringTokenMask(keras.layers.Layer):
    """The token mask `[B, T]` of string inputs in any of `ElmoLayer`'s
    three forms (padded, ragged, sentences): `tokens != ""` once padded.

    Built by `ElmoLayer.compute_mask` in a functional model whose input is
    ragged tokens or sentences; the model saves and loads it as one of its
    layers (no weights).
    """

    def call(self, tokens):
        return ops.not_equal(dense_tokens(tokens), "")

    def compute_output_spec(self, tokens):
        return keras.KerasTensor(token_shape(tokens.shape), dtype="bool")


def _int_array(inputs):
    """A nested list of int char ids as an array; anything else as it is
    (then refused by `_check_inputs`)."""
    try:
        array = np.asarray(inputs)
    except ValueError:  # ragged nesting
        return inputs
    return array if array.dtype.kind in "iu" else inputs


_STRINGS = (
    'string tokens of shape [B, T] ("" = padding), ragged string tokens '
    "[B, (n)] (tf.strings.split(sentences)) or sentences, strings of "
    "shape [B]"
)
_IDS = "int char ids of shape [B, T, 50] (keras_elmo.batch_to_ids)"
_PAD_HINT = "keras_elmo.pad_tokens pads Python token lists"


def _check_inputs(inputs):
    """Raises naming `inputs`, the forms taken and what was received."""
    dtype = getattr(inputs, "dtype", None)
    if dtype is None or getattr(inputs, "shape", None) is None:
        raise TypeError(
            f"ElmoLayer `inputs` must be {_IDS}, or {_STRINGS}; received "
            f"{describe(inputs)}. {_PAD_HINT}."
        )
    is_string = keras.backend.standardize_dtype(dtype) == "string"
    ragged = type(inputs).__name__ == "RaggedTensor"
    rank = len(inputs.shape)
    if is_string and (rank == 2 or (rank == 1 and not ragged)):
        return
    if not is_string and rank == 3 and not ragged:
        return  # the BiLM checks the dtype and the ids
    kind = _STRINGS if is_string else _IDS
    raise ValueError(
        f"ElmoLayer `inputs` must be {kind}; received {describe(inputs)}."
        + (f" {_PAD_HINT}." if is_string else "")
    )
