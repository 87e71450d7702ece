"""One training run, killed on one backend and resumed on another.

Run by `cross_backend_resume_test.py`, once per backend, in the same
`WORK` folder (its corpus and vocabulary: `neutral_training_outputs`'s):

    KERAS_BACKEND=tensorflow python cross_backend_resume_outputs.py WORK kill
        trains the tiny biLM with `Trainer` (3 epochs of 6 steps, a
        checkpoint every 4 steps) and SIGKILLs itself right after step
        `KILL_AT` (its checkpoint of step 8 is the newest);
    KERAS_BACKEND=jax python cross_backend_resume_outputs.py WORK resume
        builds `NeutralTrainer` on the same settings and folder: it
        resumes; writes `restored.npz` (the model's and the optimizer's
        variables as restored, before any step), then trains to the end
        and writes `facts.json` (where it resumed, the history, the final
        step).
"""

import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

from tests.backends.neutral_training_outputs import config_of  # noqa: E402
from tests.backends.neutral_training_outputs import write_corpus  # noqa: E402

KILL_AT = 10


def kill(work):
    from keras_elmo.training import step_callbacks
    from keras_elmo.training.trainer import Trainer

    real = step_callbacks.StepCheckpoints.on_train_batch_end

    def on_train_batch_end(self, batch, logs=None):
        real(self, batch, logs)
        if int(logs["step"]) == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)

    step_callbacks.StepCheckpoints.on_train_batch_end = on_train_batch_end
    corpus, vocab = write_corpus(work)
    Trainer(config_of(corpus, vocab, os.path.join(work, "run"))).train()


def resume(work):
    from keras_elmo.training.neutral_trainer import NeutralTrainer

    corpus = os.path.join(work, "corpus.txt")
    vocab = os.path.join(work, "vocab.txt")
    trainer = NeutralTrainer(
        config_of(corpus, vocab, os.path.join(work, "run"))
    )
    arrays = {}
    for name, variables in (
        ("model", trainer.model.variables),
        ("optimizer", trainer.optimizer.variables),
    ):
        for i, variable in enumerate(variables):
            arrays[f"{name}/{i}"] = keras.ops.convert_to_numpy(variable.value)
    np.savez(os.path.join(work, "restored.npz"), **arrays)
    facts = {
        "backend": keras.config.backend(),
        "resumed_from": os.path.basename(trainer.resumed_from or ""),
        "position": {
            k: trainer.position[k] for k in ("step", "epoch", "batch_in_epoch")
        },
        "epoch_sums": trainer.position["epoch_sums"].tolist(),
        "epoch_counts": trainer.position["epoch_counts"].tolist(),
    }
    facts["history"] = trainer.train()
    facts["final_step"] = trainer.position["step"]
    with open(os.path.join(work, "facts.json"), "w", encoding="utf-8") as f:
        json.dump(facts, f, indent=1)


if __name__ == "__main__":
    {"kill": kill, "resume": resume}[sys.argv[2]](sys.argv[1])
