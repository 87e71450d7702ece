"""The PyTorch training step of the biLM language model.

The step of `jax_train_step` on `KERAS_BACKEND=torch`: the loss of
`neutral_step.make_loss_fn` on trainable values that require a
gradient, its gradient by `torch.autograd.grad` (a variable the loss
does not reach gets a zero gradient), then `neutral_step.clip_and_apply`
(global-norm clip, the optimizer's `stateless_apply`) with autograd off.
It runs eagerly, as Keras' own torch `fit` does.

Dropout: Keras' torch backend drops out with torch's global generator
for a layer whose seed generator has no initial seed (the biLM's), so
each step first seeds that generator with the step's seed `(a, b)` as
`a * 2**32 + b`: the masks follow from the run's seed and the step
number, and a resumed run draws the same ones.
"""

import numpy as np

from keras_elmo.training.neutral_step import clip_and_apply
from keras_elmo.training.neutral_step import make_loss_fn


def make_torch_step(config, model, optimizer):
    """The training step of `model` (a `BiLMLanguageModel`) on torch.

    Same arguments, and a function of the same signature and results,
    as `jax_train_step.make_jax_step` (values are torch tensors).
    """
    import torch
    from keras import ops

    loss_fn = make_loss_fn(config, model)

    def step(trainable, non_trainable, optimizer_values, *batch):
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
