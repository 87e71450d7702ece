"""`CarriedStates`: the opt-in state a stateful `BiLM` carries across calls."""

import numpy as np
from keras import ops


class CarriedStates:
    """Final LSTM states of the last call, per row, as AllenNLP keeps them.

    States are `h` `[L, 2, S, P]` and `c` `[L, 2, S, H]` (layer, direction,
    row). For a batch of `B` rows, `initial` returns the first `B` stored
    rows, with zero rows appended when `B > S`; `update` stores the new
    final states in rows `0..B-1` and keeps rows `B..S-1` from before, so
    the store holds the largest batch seen. A row whose new layer-0 state
    sums to exactly zero (a row that never ran) keeps its old state,
    AllenNLP's "used rows" rule, applied to `h` and `c` separately. Held
    as NumPy arrays, outside any graph.
    """

    def __init__(self, config):
        self.config = config
        self.reset()

    def reset(self):
        self.h = None
        self.c = None

    def initial(self, char_ids):
        batch = int(ops.shape(char_ids)[0])
        cfg = self.config
        h = np.zeros((cfg.num_layers, 2, batch, cfg.projection_dim), np.float32)
        c = np.zeros((cfg.num_layers, 2, batch, cfg.lstm_units), np.float32)
        if self.h is not None:
            rows = min(batch, self.h.shape[2])
            h[:, :, :rows] = self.h[:, :, :rows]
            c[:, :, :rows] = self.c[:, :, :rows]
        return h, c

    def load(self, h, c):
        """Replaces the stored states with copies of `h`, `c`."""
        cfg = self.config
        h = np.array(h, np.float32)
        c = np.array(c, np.float32)
        want = (cfg.num_layers, 2)
        if (
            h.shape[:2] != want
            or c.shape[:3] != h.shape[:3]
            or h.shape[3] != cfg.projection_dim
            or c.shape[3] != cfg.lstm_units
        ):
            raise ValueError(
                "Received states of shapes h "
                f"{h.shape} and c {c.shape}, expected [{cfg.num_layers}, 2, "
                f"rows, {cfg.projection_dim}] and [{cfg.num_layers}, 2, "
                f"rows, {cfg.lstm_units}]."
            )
        self.h, self.c = h, c

    def update(self, final_h, final_c):
        try:
            final_h = ops.convert_to_numpy(final_h)
            final_c = ops.convert_to_numpy(final_c)
        except Exception as e:  # symbolic tensors inside a traced graph
            raise RuntimeError(
                "A stateful BiLM carries its states in Python between "
                "calls and must be called eagerly, `bilm(char_ids)`, not "
                "inside `predict`/`fit` or a `tf.function`."
            ) from e
        final_h = final_h.astype(np.float32)
        final_c = final_c.astype(np.float32)
        if self.h is None:
            self.h, self.c = final_h, final_c
            return
        self.h = _merge(self.h, final_h)
        self.c = _merge(self.c, final_c)


def _merge(old, new):
    """Rows `0..B-1` from `new` where used, all other rows from `old`."""
    batch = new.shape[2]
    used = new[0].sum(axis=(0, 2)) != 0.0  # [B], over directions and units
    rows = max(batch, old.shape[2])
    merged = np.zeros(new.shape[:2] + (rows, new.shape[3]), np.float32)
    merged[:, :, : old.shape[2]] = old
    merged[:, :, :batch][:, :, used] = new[:, :, used]
    return merged
