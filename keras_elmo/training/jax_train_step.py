"""The compiled JAX training step of the biLM language model.

One `jax.jit` function: the loss of `neutral_step.make_loss_fn`, its
gradient by `jax.value_and_grad`, then `neutral_step.clip_and_apply`
(global-norm clip, the optimizer's `stateless_apply`).
"""

from keras_elmo.training.neutral_step import clip_and_apply
from keras_elmo.training.neutral_step import make_loss_fn


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

    grad_fn = jax.value_and_grad(make_loss_fn(config, model), has_aux=True)

    def step(trainable, non_trainable, optimizer_values, *batch):
        (_, (sums, counts, non_trainable)), grads = grad_fn(
            trainable, non_trainable, *batch
        )
        trainable, optimizer_values, norm = clip_and_apply(
            config, optimizer, grads, trainable, optimizer_values
        )
        return trainable, non_trainable, optimizer_values, sums, counts, norm

    return jax.jit(step)
