"""The training steps the trainers' loop plugs in, one per backend family.

Every step computes, over a batch's real tokens,

    loss = 0.5 * (sum CE_fwd / max(N_fwd, 1) + sum CE_bwd / max(N_bwd, 1))

times `config.loss_multiplier` (bilm-tf's recipe: 20, its
`unroll_steps`), clips the gradient by its global norm in
`tf.clip_by_global_norm`'s form, `g <- g * clip_norm * min(1 / ||g||,
1 / clip_norm)`, and applies it with the Keras optimizer.

- **TensorFlow** (`make_tf_step`): one `tf.function` over a
  `tf.distribute` strategy (one device, Mirrored or MultiWorkerMirrored).
  Each replica runs the fast path of the loss (`fused_loss`: the fused
  sampled-softmax gradient, the unique sampler), with `N` the token
  counts of the *global* batch (all-reduced), so the summed gradient is
  the gradient of the global mean; row gradients stay `IndexedSlices` for
  `SparseAdagrad`; the float16 loss scale (`loss_scale`) multiplies the
  loss and is undone before the clip. Candidates are drawn from the seed
  `[seed, 1024 * step + 2 * replica + direction]`.
- **Stateless** (`make_stateless_step`: `make_jax_step`, one `jax.jit`
  function; `make_torch_step`, eager `torch.autograd`): the loss of the
  `losses` definition over explicit variable values
  (`model.stateless_call`, dropout's seed-generator states in and out with
  the non-trainable values) and the optimizer's `stateless_apply`.
  Candidates are drawn from the seed `[seed, 2 * step + direction]`.

On PyTorch, Keras drops out with torch's global generator for a layer
whose seed generator has no initial seed (the biLM's), so each step first
seeds it with the step's seed `(a, b)` as `a * 2**32 + b`: the masks follow
from the run's seed and the step number, and a resumed run draws the
same ones.

Float16 loss scaling for the TensorFlow step: `LossScale`, and
`dtype_policy`, the Keras policy of `TrainingConfig.mixed_precision`.

The global-norm clip of the TensorFlow step (`clipped_gradients`), over
dense and row (`IndexedSlices`) gradients alike (`summed_rows`).
"""

import logging

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_elmo.training import losses

logger = logging.getLogger(__name__)


def make_tf_step(
    config,
    model,
    optimizer,
    strategy,
    loss_scale,
    direction_loss_sum,
    sparse_rows,
):
    """The TensorFlow step: a `tf.function` `(iterator, step int64) ->
    (sums [2], counts [2], gradient_norm, applied)`, over `strategy`'s
    replicas (module docstring). `applied` is 1.0, or 0.0 where the
    gradient was not finite and a zero one was applied instead.

    Args:
        direction_loss_sum: the loss of one direction,
            `fused_loss.direction_loss_sum` (a parameter, so a test can
            poison it).
        sparse_rows: bool. The optimizer updates rows (`SparseAdagrad`):
            row gradients stay `IndexedSlices`.
    """
    variables = model.trainable_variables
    replicas = strategy.num_replicas_in_sync

    def replica_step(features, targets, step):
        context = tf.distribute.get_replica_context()
        replica = context.replica_id_in_sync_group
        replica = tf.cast(replica, tf.int64)
        seed = tf.stack(
            [tf.cast(config.seed, tf.int64), step * 1024 + 2 * replica]
        )
        with tf.GradientTape() as tape:
            hidden = model(features["char_ids"], training=True)
            sums, counts = [], []
            for k, direction in enumerate(("forward", "backward")):
                loss_sum, count = direction_loss_sum(
                    model.softmax,
                    hidden[direction],
                    targets[direction],
                    num_sampled=config.num_sampled,
                    seed=seed + k,
                    training=True,
                    unique=config.sampler == "unique",
                )
                sums.append(loss_sum)
                counts.append(count)
            total = context.all_reduce("sum", tf.stack(counts))
            total = tf.maximum(total, 1.0)
            loss = 0.5 * (sums[0] / total[0] + sums[1] / total[1])
            # bilm-tf's gradient is that of `loss * unroll_steps`; the
            # float16 loss scale is undone before the clip, this is not.
            scaled = loss * config.loss_multiplier * loss_scale.value
        grads = tape.gradient(scaled, variables)
        # Row gradients (the softmax's) stay `IndexedSlices` through the
        # all-reduce and the clip when the optimizer updates rows.
        grads = [
            tf.zeros_like(v)
            if g is None
            else (g if sparse_rows else tf.convert_to_tensor(g))
            for g, v in zip(grads, variables)
        ]
        grads = context.all_reduce("sum", grads)
        # The optimizer sums over replicas again: `replicas` divides.
        # A non-finite step is applied as a zero gradient (a
        # conditional update cannot hold the optimizer's cross-replica
        # sync); the host loop then stops before anything is saved.
        grads, norm, finite = clipped_gradients(
            grads, config.clip_norm, loss_scale.value, replicas
        )
        optimizer.apply_gradients(zip(grads, variables))
        applied = tf.cast(finite, tf.float32)
        return tf.stack(sums), tf.stack(counts), norm, applied

    @tf.function
    def train_step(iterator, step):
        features, targets = next(iterator)
        sums, counts, norm, applied = strategy.run(
            replica_step, args=(features, targets, step)
        )
        reduce = strategy.reduce
        return (
            reduce("sum", sums, axis=None),
            reduce("sum", counts, axis=None),
            # Equal on every replica (computed after the all-reduce).
            reduce("mean", norm, axis=None),
            reduce("mean", applied, axis=None),
        )

    return train_step


def make_loss_fn(config, model):
    """`loss_fn(trainable, non_trainable, char_ids, forward, backward,
    seed, distinct_rows=None, longest_token=None) -> (scaled_loss, (sums
    [2], counts [2], non_trainable))` of `model`, a built
    `BiLMLanguageModel` (values in `model.trainable_variables` /
    `non_trainable_variables` order). The two bounds (ints, static under
    `jax.jit`; `neutral_trainer.static_bounds`) cut the char CNN's work
    to what TensorFlow's step computes, for the same loss within float
    rounding: `distinct_rows` bounds the distinct char-id rows of the
    batch with its boundaries, and only those rows are embedded
    (`UniqueTokens.distinct_rows`); `longest_token` bounds the characters
    of its longest token, and only the slots that can hold one are
    convolved (`CharCNNEmbedding.longest_token`)."""
    index = {id(v): i for i, v in enumerate(model.trainable_variables)}
    w_at = index[id(model.softmax.embeddings)]
    b_at = index[id(model.softmax.bias)]
    unique_tokens = model.get_layer("lm_unique_tokens")
    char_cnn = model.backbone.char_cnn

    def loss_fn(
        trainable,
        non_trainable,
        char_ids,
        forward,
        backward,
        seed,
        distinct_rows=None,
        longest_token=None,
    ):
        unique_tokens.distinct_rows = distinct_rows
        char_cnn.longest_token = longest_token
        try:
            hidden, non_trainable = model.stateless_call(
                trainable, non_trainable, char_ids, training=True
            )
        finally:
            unique_tokens.distinct_rows = None
            char_cnn.longest_token = None
        sums, counts = [], []
        for k, (name, targets) in enumerate(
            (("forward", forward), ("backward", backward))
        ):
            loss_sum, count = losses.direction_loss_sum(
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
        seed [2] uint32, distinct_rows=None, longest_token=None) ->
        (trainable,
        non_trainable, optimizer_values, sums [2], counts [2],
        gradient_norm)`: the updated variable values (lists in
        `model.trainable_variables`, `model.non_trainable_variables` and
        `optimizer.variables` order), the summed cross entropies and
        token counts of the forward and backward directions, and the
        global norm before the clip. `distinct_rows` and `longest_token`
        are static (one compiled step per pair): the bounds of
        `make_loss_fn` (`neutral_trainer.static_bounds`), so the char CNN
        embeds each distinct token once over the slots that can hold
        characters, as TensorFlow's step does; None embeds every position
        over all slots.
    """
    import jax

    grad_fn = jax.value_and_grad(make_loss_fn(config, model), has_aux=True)

    def step(
        trainable,
        non_trainable,
        optimizer_values,
        *batch,
        distinct_rows=None,
        longest_token=None,
    ):
        (_, (sums, counts, non_trainable)), grads = grad_fn(
            trainable, non_trainable, *batch, distinct_rows, longest_token
        )
        trainable, optimizer_values, norm = clip_and_apply(
            config, optimizer, grads, trainable, optimizer_values
        )
        return trainable, non_trainable, optimizer_values, sums, counts, norm

    return jax.jit(step, static_argnames=("distinct_rows", "longest_token"))


def make_torch_step(config, model, optimizer):
    """The training step of `model` (a `BiLMLanguageModel`) on torch.

    Same arguments, and a function of the same signature and results,
    as `make_jax_step` (values are torch tensors); `distinct_rows` and
    `longest_token` are accepted and ignored (every position is embedded
    over all slots).
    """
    import torch

    loss_fn = make_loss_fn(config, model)

    def step(
        trainable,
        non_trainable,
        optimizer_values,
        *batch,
        distinct_rows=None,
        longest_token=None,
    ):
        high, low = (int(w) for w in np.asarray(batch[-1]))
        torch.manual_seed((high << 32) | low)
        trainable = [
            ops.convert_to_tensor(v).detach().requires_grad_(True)
            for v in trainable
        ]
        batch = [ops.convert_to_tensor(x) for x in batch]
        loss, (sums, counts, non_trainable) = loss_fn(
            trainable, non_trainable, *batch
        )
        grads = torch.autograd.grad(loss, trainable, allow_unused=True)
        with torch.no_grad():
            grads = [
                torch.zeros_like(v) if g is None else g
                for v, g in zip(trainable, grads)
            ]
            trainable = [v.detach() for v in trainable]
            non_trainable = [
                ops.convert_to_tensor(v).detach() for v in non_trainable
            ]
            trainable, optimizer_values, norm = clip_and_apply(
                config, optimizer, grads, trainable, optimizer_values
            )
        return (
            trainable, non_trainable, optimizer_values, sums.detach(),
            counts.detach(), norm,
        )  # fmt: skip

    return step


def make_stateless_step(backend):
    """The step maker of `backend` (`make_jax_step` or `make_torch_step`)."""
    return make_torch_step if backend == "torch" else make_jax_step


class LossScale(tf.Module):
    """Dynamic loss scaling for float16 training; a constant 1 otherwise.

    The loss is multiplied by `value` before the gradient and the gradient
    divided by it after, so small float16 gradients do not flush to zero.
    When the gradients overflow while the loss is finite, the scale halves
    and the batch is skipped; after `period` good steps it doubles (up to
    2^24). Saved in checkpoints.

    Args:
        dynamic: bool. True for float16.
        period: int. Good steps between doublings.
    """

    def __init__(self, dynamic, period=2000):
        super().__init__(name="loss_scale")
        self.dynamic = bool(dynamic)
        self.period = int(period)
        self.value = tf.Variable(
            2.0**15 if dynamic else 1.0, trainable=False, dtype=tf.float32
        )
        self._good_steps = 0

    def lower(self, loss_is_finite):
        """After an overflow: halve the scale; True if the batch is skipped."""
        scale = float(self.value.numpy())
        if not self.dynamic or scale <= 1.0 or not loss_is_finite:
            return False
        self.value.assign(scale / 2)
        self._good_steps = 0
        logger.warning(
            "float16 gradients overflowed; loss scale %g -> %g, batch skipped",
            scale,
            scale / 2,
        )
        return True

    def good_step(self):
        """After an applied step: doubles the scale every `period` steps."""
        if not self.dynamic:
            return
        self._good_steps += 1
        if self._good_steps >= self.period and self.value.numpy() < 2.0**24:
            self.value.assign(self.value * 2)
            self._good_steps = 0


def dtype_policy(mixed_precision):
    """The Keras dtype policy of `TrainingConfig.mixed_precision` (None,
    "bfloat16" or "float16"): None (float32), "mixed_bfloat16" or
    "mixed_float16"; float16 also needs the `LossScale` above."""
    return {
        None: None,
        "bfloat16": "mixed_bfloat16",
        "float16": "mixed_float16",
    }[mixed_precision]


def clipped_gradients(grads, clip_norm, loss_scale=1.0, replicas=1):
    """The gradients a training step applies, from the all-reduced ones.

    With `g` the summed (all-reduced) gradients of `loss * loss_scale`:

        norm   = ||g||_2 / loss_scale                   (the true norm)
        factor = min(1, clip_norm / norm) / (loss_scale * replicas)
        apply  = g * factor     if norm is finite,  0 otherwise

    which is `tf.clip_by_global_norm(g / loss_scale, clip_norm)` divided
    by `replicas` (the optimizer sums over replicas again), computed as one
    multiply per tensor instead of three element-wise passes and a select
    (the gradients are ~20M floats, rewritten each time). A non-finite
    norm gives zero gradients (a `tf.cond`, not a multiply, so `inf * 0`
    cannot make a NaN); the caller reports the step as not applied.
    `tf.IndexedSlices` stay sparse, with repeated rows summed first
    (`summed_rows`), so that `||g||` is the dense gradient's norm (a norm
    over the raw values would count `a^2 + b^2` where the row holds
    `(a + b)^2`); bilm-tf deduplicates the same way before its clip.

    Args:
        grads: list of float32 tensors or `tf.IndexedSlices`.
        clip_norm: float, the largest global norm applied.
        loss_scale: float scalar (tensor or variable), the loss scale.
        replicas: int, the replicas whose updates the optimizer sums.

    Returns:
        `(grads, norm, finite)`: the gradients to apply, the global norm of
        the unscaled gradients (float32 scalar) and whether it is finite.
    """
    grads = [summed_rows(g) for g in grads]
    norm = tf.linalg.global_norm(grads) / loss_scale
    finite = tf.math.is_finite(norm)
    # tf.clip_by_global_norm's own form of min(1, clip_norm / norm).
    clip = clip_norm * tf.minimum(1.0 / norm, 1.0 / clip_norm)
    factor = clip / (loss_scale * replicas)

    def scaled():
        return [_map_values(g, lambda v: v * factor) for g in grads]

    def zeros():
        return [_map_values(g, tf.zeros_like) for g in grads]

    return tf.cond(finite, scaled, zeros), norm, finite


def _map_values(grad, fn):
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(fn(grad.values), grad.indices, grad.dense_shape)
    return fn(grad)


def summed_rows(grad):
    """`grad` with the values of repeated `IndexedSlices` rows summed.

    `IndexedSlices(values [N, ...], indices [N])` ->
    `IndexedSlices(values [U, ...], unique indices [U])`, the same dense
    tensor; a dense `grad` is returned as is.
    """
    if not isinstance(grad, tf.IndexedSlices):
        return grad
    rows, position = tf.unique(grad.indices)
    values = tf.math.unsorted_segment_sum(
        grad.values, position, tf.shape(rows)[0]
    )
    return tf.IndexedSlices(values, rows, grad.dense_shape)
