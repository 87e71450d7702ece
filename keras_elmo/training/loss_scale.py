"""`LossScale`: the float16 loss scale (static 1 for float32 / bfloat16)."""

import logging

import tensorflow as tf

logger = logging.getLogger(__name__)


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
