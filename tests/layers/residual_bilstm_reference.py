"""The `ResidualBiLSTM` tests' reference: tiny dimensions, seeded inputs
and weights, and `numpy_bilstm`, bilm-tf's biLM LSTM stacks re-derived
row by row in float64.
"""

import numpy as np

from keras_elmo.layers.residual_bilstm import ResidualBiLSTM

B, T, P, H, L = 4, 6, 4, 8, 2
LENGTHS = [6, 3, 1, 4]
CELL_CLIP, PROJ_CLIP = 3.0, 1.5


def length_mask(lengths=LENGTHS, steps=T):
    return np.arange(steps)[None, :] < np.asarray(lengths)[:, None]


def random_inputs(seed=0, lengths=LENGTHS):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(len(lengths), T, P)).astype("float32")
    return x * length_mask(lengths)[..., None]


def seeded_weights(seed=1, num_layers=L, scale=1.0):
    """Per layer `(W, U, b, W_proj)`, each stacked over [fwd, bwd]."""
    rng = np.random.default_rng(seed)
    weights = []
    for _ in range(num_layers):
        weights.append(
            tuple(
                (scale * rng.normal(size=(2,) + shape)).astype("float32")
                for shape in ((P, 4 * H), (P, 4 * H), (4 * H,), (H, P))
            )
        )
    return weights


def assign(layer, weights):
    for k, (w, u, b, wp) in enumerate(weights):
        layer.kernels[k].assign(w)
        layer.recurrent_kernels[k].assign(u)
        layer.biases[k].assign(b)
        layer.projection_kernels[k].assign(wp)


def make_layer(weights, **kwargs):
    kwargs.setdefault("cell_clip", CELL_CLIP)
    kwargs.setdefault("projection_clip", PROJ_CLIP)
    layer = ResidualBiLSTM(H, P, num_layers=len(weights), **kwargs)
    layer.build((None, None, P))
    assign(layer, weights)
    return layer


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def numpy_bilstm(
    x,
    lengths,
    weights,
    cell_clip=CELL_CLIP,
    proj_clip=PROJ_CLIP,
    skip=True,
    forget_bias=1.0,
    initial_state=None,
    stats=None,
):
    """Re-derives bilm-tf's biLM LSTM stacks row by row in float64.

    Returns `(outputs, (h, c))`: `L` arrays `[B, T, 2P]` and the final
    states `[L, 2, B, P]`, `[L, 2, B, H]`. `stats` counts clipped values.
    """
    x = np.asarray(x, "float64")
    batch, steps = x.shape[:2]
    num_layers = len(weights)
    outputs = np.zeros((num_layers, batch, steps, 2 * P))
    final_h = np.zeros((num_layers, 2, batch, P))
    final_c = np.zeros((num_layers, 2, batch, H))
    for b in range(batch):
        n = lengths[b]
        for d in range(2):
            seq = x[b, :n] if d == 0 else x[b, :n][::-1]
            for k, (w, u, bias, wp) in enumerate(weights):
                w, u, bias, wp = (
                    np.asarray(a[d], "float64") for a in (w, u, bias, wp)
                )
                if initial_state is None:
                    h, c = np.zeros(P), np.zeros(H)
                else:
                    h = np.asarray(initial_state[0][k, d, b], "float64")
                    c = np.asarray(initial_state[1][k, d, b], "float64")
                out = []
                for t in range(n):
                    z = seq[t] @ w + h @ u + bias
                    i, j, f, o = np.split(z, 4)
                    c = sigmoid(i) * np.tanh(j) + sigmoid(f + forget_bias) * c
                    if cell_clip is not None:
                        if stats is not None:
                            stats["cell"] += int((np.abs(c) > cell_clip).sum())
                        c = np.clip(c, -cell_clip, cell_clip)
                    h = (sigmoid(o) * np.tanh(c)) @ wp
                    if proj_clip is not None:
                        if stats is not None:
                            stats["proj"] += int((np.abs(h) > proj_clip).sum())
                        h = np.clip(h, -proj_clip, proj_clip)
                    out.append(h)
                out = np.array(out).reshape(n, P)
                if k > 0 and skip:
                    out = out + seq
                final_h[k, d, b], final_c[k, d, b] = h, c
                restored = out if d == 0 else out[::-1]
                outputs[k, b, :n, d * P : (d + 1) * P] = restored
                seq = out
    return list(outputs), (final_h, final_c)
