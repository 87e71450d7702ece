"""Child of `fault_test.py`: `keras-elmo ARGS...` that SIGKILLs itself
right after global step `STEP` is applied (and its step callbacks ran).

    python kill_at_step_child.py STEP ARGS...

Deterministic where polling the checkpoint folder from outside races a
fast run: the kill lands at exactly that step, between checkpoints or
just after one.
"""

import os
import signal
import sys


def main():
    step = int(sys.argv[1])
    from keras_elmo.cli.main import main as cli_main
    from keras_elmo.training import step_callbacks

    real = step_callbacks.StepCheckpoints.on_train_batch_end

    def on_train_batch_end(self, batch, logs=None):
        real(self, batch, logs)
        if int(logs["step"]) == step:
            os.kill(os.getpid(), signal.SIGKILL)

    step_callbacks.StepCheckpoints.on_train_batch_end = on_train_batch_end
    return cli_main(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
