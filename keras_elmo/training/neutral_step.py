"""The parts of the biLM training step every non-TensorFlow backend shares.

`make_loss_fn` is the forward pass and loss of one step, written in
`keras.ops` over explicit variable values (`model.stateless_call`, with
dropout's seed-generator states in and out with the non-trainable
values), for both directions of `losses` (the keras.ops definition):

    loss = 0.5 * (sum CE_fwd / max(N_fwd, 1) + sum CE_bwd / max(N_bwd, 1)),

scaled by `loss_multiplier`; the sampled softmax draws its candidates
from `seed + [0, direction]`. `clip_and_apply` clips the gradient by
its global norm in `tf.clip_by_global_norm`'s form,

    g <- g * clip_norm * min(1 / ||g||, 1 / clip_norm),

and applies it with the optimizer's `stateless_apply`. Each backend's
step (`jax_train_step`, `torch_train_step`) only differentiates
`make_loss_fn`'s function its own way and compiles (or not) the whole.
"""

import keras
import numpy as np

from keras_elmo.training.losses import direction_loss_sum


def make_loss_fn(config, model):
    """`loss_fn(trainable, non_trainable, char_ids, forward, backward,
    seed) -> (scaled_loss, (sums [2], counts [2], non_trainable))` of
    `model`, a built `BiLMLanguageModel` (values in
    `model.trainable_variables` / `non_trainable_variables` order)."""
    index = {id(v): i for i, v in enumerate(model.trainable_variables)}
    w_at = index[id(model.softmax.embeddings)]
    b_at = index[id(model.softmax.bias)]

    def loss_fn(trainable, non_trainable, char_ids, forward, backward, seed):
        hidden, non_trainable = model.stateless_call(
            trainable, non_trainable, char_ids, training=True
        )
        sums, counts = [], []
        for k, (name, targets) in enumerate(
            (("forward", forward), ("backward", backward))
        ):
            loss_sum, count = direction_loss_sum(
                trainable[w_at],
                trainable[b_at],
                hidden[name],
                targets,
                num_sampled=config.num_sampled,
                seed=seed + np.array([0, k], np.uint32),
            )
            sums.append(loss_sum)
            counts.append(count)
        sums, counts = keras.ops.stack(sums), keras.ops.stack(counts)
        loss = 0.5 * keras.ops.sum(sums / keras.ops.maximum(counts, 1.0))
        return loss * config.loss_multiplier, (sums, counts, non_trainable)

    return loss_fn


def clip_and_apply(config, optimizer, grads, trainable, optimizer_values):
    """`(trainable, optimizer_values, norm)`: the gradient clipped by its
    global norm (module docstring), applied by `optimizer`; `norm` is the
    norm before the clip."""
    norm = keras.ops.sqrt(sum(keras.ops.sum(g * g) for g in grads))
    clip = config.clip_norm * keras.ops.minimum(
        1.0 / norm, 1.0 / config.clip_norm
    )
    grads = [g * clip for g in grads]
    trainable, optimizer_values = optimizer.stateless_apply(
        optimizer_values, grads, trainable
    )
    return trainable, optimizer_values, norm
