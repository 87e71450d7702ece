"""`OUT/history.json`: every epoch of a run, across interruptions."""

import json
import os

import numpy as np

from keras_elmo.utils.atomic import atomic_write


def epoch_result(epoch, sums, counts, steps, learning_rate, tokens, seconds):
    """The history entry of one finished epoch (either trainer's).

    `sums` and `counts` are the epoch's `[2]` cross-entropy sums and real
    token counts (forward, backward), so

        loss = (sums[0] / counts[0] + sums[1] / counts[1]) / 2,
        perplexity = exp(loss);

    `tokens` are the forward tokens seen in `seconds` by this run.
    """
    mean = 0.5 * (sums[0] / max(counts[0], 1) + sums[1] / max(counts[1], 1))
    return {
        "epoch": epoch + 1,
        "loss": float(mean),
        "perplexity": float(np.exp(mean)),
        "steps": steps,
        "learning_rate": learning_rate,
        "tokens_per_second": tokens / max(seconds, 1e-9),
        "seconds": seconds,
    }


class EpochHistory:
    """The list of per-epoch results of a run, kept in `out_dir`.

    Each entry is the dict `Trainer` builds at an epoch's end (rate,
    training and validation perplexity, the validation rules'
    decisions). An epoch interrupted and resumed is one entry whose step
    count, loss and perplexity cover all of its steps (the running totals
    are checkpointed, `checkpoints.TrainingState`); only its timing
    (`seconds`, `tokens_per_second`) covers the last run alone. Only
    the chief writes; the file is replaced atomically after every epoch,
    before the epoch-end checkpoint, so on resume the entries past the
    restored epoch (written by an epoch whose checkpoint never landed)
    are dropped.

    Args:
        out_dir: the run's output directory.
        completed_epochs: int, epochs the restored checkpoint completed.
        chief: bool, whether this worker writes.
    """

    def __init__(self, out_dir, completed_epochs, chief=True):
        self.path = os.path.join(out_dir, "history.json")
        self.chief = chief
        self.entries = []
        if os.path.exists(self.path):
            with open(self.path, encoding="utf-8") as f:
                self.entries = [
                    h for h in json.load(f) if h["epoch"] <= completed_epochs
                ]

    def append(self, result):
        self.entries.append(result)
        if not self.chief:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        with atomic_write(self.path) as f:
            json.dump(self.entries, f, indent=1)
