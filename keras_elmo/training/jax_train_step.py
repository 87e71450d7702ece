"""The compiled JAX training step of the biLM language model.

One `jax.jit` function: the forward pass by `model.stateless_call`
(dropout's seed-generator states in and out with the non-trainable
values), the loss of `neutral_lm_loss` for both directions,

    loss = 0.5 * (sum CE_fwd / max(N_fwd, 1) + sum CE_bwd / max(N_bwd, 1)),

the gradient of `loss * loss_multiplier` by `jax.value_and_grad`, the
global-norm clip in `tf.clip_by_global_norm`'s form,

    g <- g * clip_norm * min(1 / ||g||, 1 / clip_norm),

and the optimizer's `stateless_apply`. The sampled softmax draws its
candidates from `seed + [0, direction]`.
"""

import keras
import numpy as np

from keras_elmo.training.neutral_lm_loss import direction_loss_sum


def make_jax_step(config, model, optimizer):
    """The compiled training step of `model` (a `BiLMLanguageModel`).

    Args:
        config: `TrainingConfig` (`num_sampled`, `loss_multiplier`,
            `clip_norm`).
        model: the built `BiLMLanguageModel`.
        optimizer: a Keras optimizer built on `model.trainable_variables`.

    Returns:
        A `jax.jit` function `(trainable, non_trainable, optimizer_values,
        char_ids [B, T, 50], forward [B, T + 1], backward [B, T + 1],
        seed [2] uint32) -> (trainable, non_trainable, optimizer_values,
        sums [2], counts [2], gradient_norm)`: the updated variable values
        (lists in `model.trainable_variables`,
        `model.non_trainable_variables` and `optimizer.variables` order),
        the summed cross entropies and token counts of the forward and
        backward directions, and the global norm before the clip.
    """
    import jax

    variables = model.trainable_variables
    index = {id(v): i for i, v in enumerate(variables)}
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

    grad_fn = jax.value_and_grad(loss_fn, has_aux=True)

    def step(trainable, non_trainable, optimizer_values, *batch):
        (_, (sums, counts, non_trainable)), grads = grad_fn(
            trainable, non_trainable, *batch
        )
        norm = keras.ops.sqrt(sum(keras.ops.sum(g * g) for g in grads))
        clip = config.clip_norm * keras.ops.minimum(
            1.0 / norm, 1.0 / config.clip_norm
        )
        grads = [g * clip for g in grads]
        trainable, optimizer_values = optimizer.stateless_apply(
            optimizer_values, grads, trainable
        )
        return trainable, non_trainable, optimizer_values, sums, counts, norm

    return jax.jit(step)
