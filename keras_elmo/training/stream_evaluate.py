"""Stream perplexity: each line predicted with all the lines before it."""

import math

import numpy as np
import tensorflow as tf

from keras_elmo.data.corpus import iter_sentences
from keras_elmo.layers.lm_softmax import NextTokenStates
from keras_elmo.layers.token_sequence import AddSentenceBoundaries
from keras_elmo.layers.token_sequence import TokenMask
from keras_elmo.text.char_vocab import batch_to_ids
from keras_elmo.training.fused_loss import direction_loss_sum
from keras_elmo.utils import check_positive_int


def stream_perplexity(model, vocabulary, data, rows=16, max_tokens=100):
    """Full-softmax perplexity with LSTM states carried across lines.

    `evaluate_model` scores every line on its own, from zero states. Here
    the lines of `data` (in file order, lines longer than `max_tokens`
    split into pieces) form one text, as in bilm-tf's test (which runs the
    whole file with carried states) and in the published Penn Treebank
    figures: the forward LM reads the pieces in order and starts each from
    the states the previous one ended with, so every word is predicted
    from all the text before it; the backward LM reads them in reverse
    order, so every word is predicted from all the text after it. Each
    piece is still wrapped in `<S>` ... `</S>` and makes the same
    predictions as in `evaluate_model` (forward `w_1..w_n, </S>`, backward
    `<S>, w_1..w_n`), so the two figures count the same tokens.

    The text is cut into `rows` contiguous parts of about equal length,
    run side by side as the rows of a batch; each part's first piece
    starts from zero states.

    Args:
        model: a `BiLMLanguageModel`.
        vocabulary: its `Vocabulary`.
        data: glob of sentence-per-line files.
        rows: int >= 1, the parts run in parallel.
        max_tokens: int, longer lines are split into pieces this long.

    Returns:
        A dict like `evaluate_model`'s: `forward_perplexity`,
        `backward_perplexity`, `perplexity` (their geometric mean),
        `tokens` (predictions per direction) and `oov_rate`.
    """
    check_positive_int("rows", rows)
    pieces = [
        [t.decode("utf-8") for t in tokens[start : start + max_tokens]]
        for tokens in iter_sentences(data)
        for start in range(0, len(tokens), max_tokens)
    ]
    if not pieces:
        raise ValueError(
            f"`data` {data!r} holds no sentences to evaluate (only blank or "
            "malformed lines?)."
        )
    words = sum(len(p) for p in pieces)
    unknown = sum(
        vocabulary.token_to_id(t) == vocabulary.unk_id
        for p in pieces
        for t in p
    )
    size = math.ceil(len(pieces) / rows)
    parts = [pieces[i : i + size] for i in range(0, len(pieces), size)]
    run = _StreamRunner(model, vocabulary)
    forward, count = run.direction(parts, "forward")
    backward, _ = run.direction([p[::-1] for p in parts], "backward")
    forward, backward = forward / count, backward / count
    return {
        "forward_perplexity": math.exp(forward),
        "backward_perplexity": math.exp(backward),
        "perplexity": math.exp(0.5 * (forward + backward)),
        "tokens": int(count),
        "oov_rate": unknown / max(words, 1),
    }


class _StreamRunner:
    """Runs a `BiLMLanguageModel`'s layers with carried states."""

    def __init__(self, model, vocabulary):
        self.model = model
        self.backbone = model.backbone
        self.vocabulary = vocabulary
        self.add_boundaries = AddSentenceBoundaries()
        self.token_mask = TokenMask()
        self.next_states = NextTokenStates()
        self._step = tf.function(self._losses, reduce_retracing=True)

    def _losses(self, char_ids, targets, initial_h, initial_c, direction):
        with_boundaries = self.add_boundaries(char_ids)
        x = self.backbone.embed_tokens(with_boundaries)
        layers, (final_h, final_c) = self.backbone.bilstm(
            x,
            mask=self.token_mask(with_boundaries),
            initial_state=(initial_h, initial_c),
            return_state=True,
            training=False,
        )
        hidden = self.next_states(layers[-1])[direction]
        loss_sum, count = direction_loss_sum(
            self.model.softmax, hidden, targets
        )
        return loss_sum, count, final_h, final_c

    def direction(self, parts, direction):
        """Summed loss and count of `direction` over `parts` read in order.

        Only `direction`'s states matter between pieces (the other
        direction's final states are carried too, but its predictions are
        not scored in this pass).
        """
        config = self.backbone.config
        layers, batch = config.num_layers, len(parts)
        h = np.zeros((layers, 2, batch, config.projection_dim), np.float32)
        c = np.zeros((layers, 2, batch, config.lstm_units), np.float32)
        total, count = 0.0, 0.0
        for step in range(max(len(p) for p in parts)):
            lines = [p[step] if step < len(p) else [] for p in parts]
            char_ids, targets = self._batch(lines, direction)
            loss_sum, n, h_new, c_new = self._step(
                char_ids, targets, h, c, direction
            )
            total += float(loss_sum.numpy())
            count += float(n.numpy())
            # A part that has ended keeps its (unused) states.
            live = np.array([bool(line) for line in lines])
            h = np.where(live[None, None, :, None], h_new.numpy(), h)
            c = np.where(live[None, None, :, None], c_new.numpy(), c)
        return total, count

    def _batch(self, lines, direction):
        width = max(len(line) for line in lines)
        char_ids = batch_to_ids(lines)
        targets = np.full((len(lines), width + 1), -1, np.int32)
        vocab = self.vocabulary
        for row, line in enumerate(lines):
            if not line:
                continue
            ids = [vocab.token_to_id(t) for t in line]
            if direction == "forward":
                targets[row, : len(ids) + 1] = ids + [vocab.eos_id]
            else:
                targets[row, : len(ids) + 1] = [vocab.bos_id] + ids
        return tf.constant(char_ids), tf.constant(targets)
