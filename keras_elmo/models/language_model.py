"""The biLM as a language model: the model, loading it, its substitutes.

`BiLMLanguageModel`: a `BiLM` backbone plus the shared LM softmax over the
vocabulary, `p(w_{k+1} | forward state)` and `p(w_{k-1} | backward
state)`. `load_language_model(source)` builds it with its `Vocabulary`
through the one loader (`keras_elmo.presets.sources.load`), from a model
that keeps its softmax (`softmax.hdf5` + `vocab.txt`: a `keras-elmo
train` output, the shipped preset). `LMSubstitutes`: the words the two
directions predict per token, simple_elmo's `get_elmo_substitutes`, for
such a model, a folder converted from a bilm-tf checkpoint with
`--to-softmax`, or the bilm-tf checkpoint itself.
"""

import os

import keras
import numpy as np
from keras import ops

from keras_elmo.api_export import keras_elmo_export
from keras_elmo.data.vocabulary import Vocabulary
from keras_elmo.layers.lm_softmax import LMSoftmax
from keras_elmo.layers.lm_softmax import NextTokenStates
from keras_elmo.layers.token_sequence import AddSentenceBoundaries
from keras_elmo.layers.token_sequence import GatherUniqueTokens
from keras_elmo.layers.token_sequence import TokenMask
from keras_elmo.layers.token_sequence import UniqueTokens
from keras_elmo.models.bilm import BiLM
from keras_elmo.models.bilm import load_bilm_or_elmo_layer  # noqa: F401
from keras_elmo.models.bilm_io import bilm_from_bilm_tf_checkpoint
from keras_elmo.presets import available_presets
from keras_elmo.presets import preset_dir
from keras_elmo.presets import sources as model_sources
from keras_elmo.text import char_vocab
from keras_elmo.text.char_vocab import batch_to_ids
from keras_elmo.utils import check_instance
from keras_elmo.utils import check_path_like
from keras_elmo.weights import hdf5 as model_files
from keras_elmo.weights.hdf5 import load_softmax_hdf5


@keras_elmo_export("keras_elmo.BiLMLanguageModel")
class BiLMLanguageModel(keras.Model):
    """The biLM language-modelling task: next word forward, previous backward.

    Reuses the backbone's layers on the sentences with `<S>`/`</S>` kept,
    takes the top biLSTM layer's states that predict each word
    (`NextTokenStates`), applies dropout, and owns the softmax `W` `[V, P]`
    shared by both directions (Peters et al. 2018, eq. 1 of section 3.1).
    The model outputs the hidden states; `keras_elmo.training.losses`
    turns them into the loss with a full or sampled softmax:

        loss = (CE_forward + CE_backward) / 2,   each averaged over tokens.

    Args:
        backbone: `keras_elmo.BiLM` (stateless).
        vocabulary_size: int. Size of the word vocabulary `V`.
        dropout: float. Dropout on the states fed to the softmax while
            training (bilm-tf: 0.1, the same rate as inside the biLSTM).
        **kwargs: standard `keras.Model` arguments.

    Call arguments:
        char_ids: int32 `[B, T, 50]`, sentences without boundaries.

    Returns:
        `{"forward": [B, T + 1, P], "backward": [B, T + 1, P]}`.
    """

    def __init__(self, backbone, vocabulary_size, dropout=0.1, **kwargs):
        check_instance("backbone", backbone, BiLM, "keras_elmo.BiLM")
        # === Layers ===
        add_boundaries = AddSentenceBoundaries(name="lm_add_boundaries")
        token_mask = TokenMask(name="lm_token_mask")
        states = NextTokenStates(name="next_token_states")
        forward_dropout = keras.layers.Dropout(dropout, name="forward_dropout")
        backward_dropout = keras.layers.Dropout(
            dropout, name="backward_dropout"
        )
        softmax = LMSoftmax(vocabulary_size, dtype="float32", name="softmax")

        # === Functional Model ===
        char_ids = keras.Input(
            shape=(None, char_vocab.MAX_CHARS_PER_TOKEN),
            dtype="int32",
            name="char_ids",
        )
        with_boundaries = add_boundaries(char_ids)
        unique, inverse = UniqueTokens(name="lm_unique_tokens")(with_boundaries)
        x = GatherUniqueTokens(
            dtype=backbone.dtype_policy, name="lm_gather_unique_tokens"
        )(backbone.embed_tokens(unique), inverse)
        layers = backbone.bilstm(x, mask=token_mask(with_boundaries))
        hidden = states(layers[-1])
        outputs = {
            "forward": forward_dropout(hidden["forward"]),
            "backward": backward_dropout(hidden["backward"]),
        }
        super().__init__(inputs=char_ids, outputs=outputs, **kwargs)

        # === Config ===
        self.backbone = backbone
        self.vocabulary_size = vocabulary_size
        self.dropout = float(dropout)
        softmax.build((None, backbone.config.projection_dim))
        self.softmax = softmax

    def get_config(self):
        return {
            "backbone": keras.saving.serialize_keras_object(self.backbone),
            "vocabulary_size": self.vocabulary_size,
            "dropout": self.dropout,
            "name": self.name,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(
            config["backbone"]
        )
        return cls(**config)


def load_language_model(source, dtype=None):
    """`(BiLMLanguageModel, Vocabulary)` of a model that has its softmax
    (a `keras-elmo train` output, the shipped preset).

    Raises:
        ValueError: the model has no `softmax.hdf5` or no `vocab.txt`
            (weight-only models cannot predict words); the message names
            what is missing.
    """
    return model_sources.load(source, _language_model, dtype=dtype)


def _language_model(resolved, dtype=None):
    missing = [
        name
        for name, path in (
            ("softmax.hdf5", resolved.softmax),
            ("vocab.txt", resolved.vocabulary),
        )
        if path is None
    ]
    if resolved.format != "allennlp" or missing:
        what = ", ".join(missing) or f"a {resolved.format} model"
        raise ValueError(
            f"{resolved.description} has no language-model softmax "
            f"(missing: {what}); predicting words needs options.json, "
            "weights.hdf5, softmax.hdf5 and vocab.txt (a keras-elmo train "
            "output)."
        )
    vocabulary = Vocabulary.load(resolved.vocabulary)
    backbone = BiLM.from_allennlp(
        resolved.options, resolved.weights, dtype=dtype
    )
    model = BiLMLanguageModel(backbone, len(vocabulary), dropout=0.0)
    load_softmax_hdf5(model.softmax, resolved.softmax)
    return model, vocabulary


LM_FILES = ("options", "weights", "softmax", "vocabulary")


class LMSubstitutes:
    """Top-k predictions of the forward and backward LM at every token.

    For a sentence `w_1..w_n` (run as `<S> w_1..w_n </S>`), at token `i`
    the forward LM reads the left context and the backward LM the right
    one; with `h` the top biLSTM layer (its residual included) and the
    softmax `W` `[V, P]`, `b` `[V]` shared by both directions:

        forward:  log p(w | <S>, w_1..w_{i-1}) = log_softmax(W h_fwd(i-1) + b)
        backward: log p(w | w_{i+1}..w_n, </S>) = log_softmax(W h_bwd(i+1) + b)

    where `h_fwd(0)` is the forward state at `<S>` and `h_bwd(n+1)` the
    backward state at `</S>`. Stateless: each sentence is read on its own
    from zero states. Log-probabilities are normalised over the whole
    vocabulary; with `exclude_boundaries`, `<S>` and `</S>` are not offered
    as candidates (simple_elmo's `nodelimiters=True`).

    Differences from simple_elmo 0.9.2's `get_elmo_substitutes` (checked
    against its output in `tests/models/lm_substitutes_test.py`): it feeds
    its initial (zero) LSTM states at every step, so each prediction sees
    only the previous word (forward) or the next one (backward), not the
    sentence; its `logp` are the raw logits `W h + b` rounded to 4
    decimals, in `argpartition` order; it needs at least
    `max_batch_size` sentences and returns only those that end on the
    same step as the shortest. Here every sentence comes back, candidates
    are sorted by log-probability, and the `word` is the token as given
    (simple_elmo writes `<UNK>` for words not in the vocabulary).

    Args:
        language_model: `keras_elmo.BiLMLanguageModel` with its softmax.
        vocabulary: `keras_elmo.data.Vocabulary`, one word per softmax row.

    Example:

    >>> lm = keras_elmo.models.LMSubstitutes.from_preset("elmo_small_en")
    >>> out = lm.substitutes([["The", "cat", "sat", "."]], top_k=2)
    >>> sorted(out[0][1])
    ['backward', 'forward', 'word']
    """

    def __init__(self, language_model, vocabulary):
        if not isinstance(language_model, BiLMLanguageModel):
            raise TypeError(
                "Received an invalid value for argument `language_model`, "
                "expected a keras_elmo.BiLMLanguageModel, got "
                f"{type(language_model).__name__}."
            )
        if not isinstance(vocabulary, Vocabulary):
            raise TypeError(
                "Received an invalid value for argument `vocabulary`, "
                "expected a keras_elmo.data.Vocabulary, got "
                f"{type(vocabulary).__name__}."
            )
        if len(vocabulary) != language_model.vocabulary_size:
            raise ValueError(
                f"The vocabulary has {len(vocabulary)} words but the "
                f"softmax {language_model.vocabulary_size} rows; they must "
                "come from the same model."
            )
        self.language_model = language_model
        self.vocabulary = vocabulary

    @classmethod
    def from_preset(cls, source, dtype=None):
        """From a shipped preset name or a folder with the LM's four files.

        The folder must hold `options.json`, `weights.hdf5`,
        `softmax.hdf5` and `vocab.txt` (what `keras-elmo train` writes).
        A model with weights only (AllenNLP's published files, an NLPL
        archive without its checkpoint) raises a `ValueError` or
        `FileNotFoundError` naming the missing files.
        """
        folder = _folder(source)
        paths = model_files.model_paths(folder)
        missing = [
            os.path.basename(paths[k])
            for k in LM_FILES
            if not os.path.exists(paths[k])
        ]
        if missing:
            raise FileNotFoundError(
                f"Lexical substitutes need the language model's softmax and "
                f"vocabulary: {source!r} ({folder}) lacks "
                f"{' and '.join(missing)} (expected options.json, "
                "weights.hdf5, softmax.hdf5 and vocab.txt, as `keras-elmo "
                "train` writes them). A weights-only model cannot predict "
                "words; converting a bilm-tf checkpoint with its softmax "
                "(docs/MIGRATION.md) keeps one."
            )
        model, vocabulary = load_language_model(folder, dtype=dtype)
        return cls(model, vocabulary)

    @classmethod
    def from_bilm_tf_checkpoint(cls, path, vocabulary, options=None):
        """From a bilm-tf training checkpoint (`model.ckpt-*`) and its
        `vocab.txt` (path or `Vocabulary`); `options` as in
        `keras_elmo.weights.tf_checkpoints.read_bilm_tf_checkpoint`."""
        if not isinstance(vocabulary, Vocabulary):
            vocabulary = Vocabulary.load(os.fspath(vocabulary))
        bilm, softmax = bilm_from_bilm_tf_checkpoint(BiLM, path, options)
        if softmax is None:
            raise ValueError(
                f"bilm-tf checkpoint {path!r} has no `lm/softmax/W` and "
                "`lm/softmax/b`: lexical substitutes need the softmax."
            )
        model = BiLMLanguageModel(bilm, len(vocabulary), dropout=0.0)
        weight, bias = softmax["softmax/W"], softmax["softmax/b"]
        if weight.shape[0] != len(vocabulary):
            raise ValueError(
                f"bilm-tf checkpoint {path!r}: the softmax has "
                f"{weight.shape[0]} rows, the vocabulary {len(vocabulary)} "
                "words."
            )
        model.softmax.embeddings.assign(weight)
        model.softmax.bias.assign(bias)
        return cls(model, vocabulary)

    def log_probabilities(self, sentences, batch_size=16):
        """Full log-distributions: per sentence a dict of float32
        `"forward"` `[n, V]` and `"backward"` `[n, V]` (see the class
        docstring for what row `i` conditions on)."""
        sentences = _check_sentences(sentences)
        out = []
        for start in range(0, len(sentences), _check_batch(batch_size)):
            batch = sentences[start : start + batch_size]
            forward, backward = self._batch_log_probabilities(batch)
            for row, sentence in enumerate(batch):
                n = len(sentence)
                out.append(
                    {
                        "forward": forward[row, :n],
                        "backward": backward[row, :n],
                    }
                )
        return out

    def substitutes(
        self, sentences, top_k=3, batch_size=16, exclude_boundaries=True
    ):
        """simple_elmo's `get_elmo_substitutes`, one entry per token.

        Args:
            sentences: list of token lists (simple_elmo takes
                space-joined strings: `[s.split() for s in raw]`).
            top_k: int. Candidates per direction (simple_elmo's `topn`).
            batch_size: int. Sentences per call of the model.
            exclude_boundaries: bool. Never offer `<S>` / `</S>`.

        Returns:
            Per sentence, per token: `{"word": token, "forward": {...},
            "backward": {...}}`, each direction `{"candidates": [ids],
            "candidate_words": [str], "logp": [float]}`, best first.
        """
        if not isinstance(top_k, int) or not 1 <= top_k <= len(self.vocabulary):
            raise ValueError(
                "Received an invalid value for argument `top_k`, expected "
                f"an integer in [1, {len(self.vocabulary)}], got {top_k!r}."
            )
        results = []
        for sentence, logp in zip(
            _check_sentences(sentences),
            self.log_probabilities(sentences, batch_size),
        ):
            directions = {
                d: _top_k(logp[d], top_k, exclude_boundaries, self.vocabulary)
                for d in ("forward", "backward")
            }
            results.append(
                [
                    {
                        "word": token,
                        "forward": directions["forward"][i],
                        "backward": directions["backward"][i],
                    }
                    for i, token in enumerate(sentence)
                ]
            )
        return results

    def _batch_log_probabilities(self, batch):
        hidden = self.language_model(batch_to_ids(batch), training=False)
        softmax = self.language_model.softmax
        # forward[k] predicts ids[k + 1]; backward[k] predicts ids[k], with
        # ids = <S> w_1..w_n </S>: token i (0-based) is ids[i + 1].
        forward = softmax(hidden["forward"][:, :-1])
        backward = softmax(hidden["backward"][:, 1:])
        # `convert_to_numpy`, not `np.asarray`: under PyTorch the softmax
        # output is a tensor that requires grad, which NumPy cannot read.
        return (
            ops.convert_to_numpy(ops.log_softmax(forward, axis=-1)).astype(
                np.float32
            ),
            ops.convert_to_numpy(ops.log_softmax(backward, axis=-1)).astype(
                np.float32
            ),
        )


def _top_k(logp, k, exclude_boundaries, vocabulary):
    """`[n, V]` log-probabilities -> per row the `k` best, best first
    (ties: lower id first)."""
    logp = np.array(logp, np.float32)
    if exclude_boundaries:
        logp[:, [vocabulary.bos_id, vocabulary.eos_id]] = -np.inf
    order = np.argsort(-logp, axis=-1, kind="stable")[:, :k]
    return [
        {
            "candidates": [int(i) for i in ids],
            "candidate_words": [vocabulary.id_to_token(int(i)) for i in ids],
            "logp": [float(v) for v in row[ids]],
        }
        for ids, row in zip(order, logp)
    ]


def _folder(source):
    source = check_path_like(
        "source", source, "a shipped preset name or a folder"
    )
    if source in available_presets():
        return preset_dir(source)
    if os.path.isdir(source):
        return source
    raise ValueError(
        "Received an invalid value for argument `source`, expected a "
        f"shipped preset {available_presets()} or a folder holding "
        "options.json, weights.hdf5, softmax.hdf5 and vocab.txt, got "
        f"{source!r}. Published presets are weights only (no softmax): "
        "they cannot give substitutes."
    )


def _check_sentences(sentences):
    if not isinstance(sentences, (list, tuple)) or not all(
        isinstance(s, (list, tuple))
        and s
        and all(isinstance(t, str) for t in s)
        for s in sentences
    ):
        raise ValueError(
            "Received an invalid value for argument `sentences`, expected a "
            "list of non-empty lists of str tokens, got "
            f"{sentences!r:.200}."
        )
    return [list(s) for s in sentences]


def _check_batch(batch_size):
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(
            "Received an invalid value for argument `batch_size`, expected "
            f"a positive integer, got {batch_size!r}."
        )
    return batch_size
