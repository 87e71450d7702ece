"""`OUT/history.json`: every epoch of a run, across interruptions."""

import json
import os

from keras_elmo.utils.atomic import atomic_write


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
