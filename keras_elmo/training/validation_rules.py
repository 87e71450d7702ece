"""Decisions a run takes from validation perplexity alone, as code.

After every epoch with a validation set, `ValidationRules.after_epoch`
compares the epoch's validation perplexity `v` with the best one so far
`b` through the relative gain (1 for the first epoch, which has no `b`)

    gain = (b - v) / b

and applies three rules, in this order:

1. **Best checkpoint.** `v < b`: this epoch's weights become the model the
   run writes at the end (and that any test set is scored on).
2. **Plateau decay** (`lr_schedule="plateau"`): `gain < plateau_threshold`
   multiplies the learning rate of the following epochs by
   `plateau_factor`.
3. **Early stopping** (`early_stopping_patience` set): `patience` epochs in
   a row with `gain < early_stopping_min_delta` end the run.

The state (learning rate, best perplexity, epochs without gain) lives in
`TrainingState` (TensorFlow) or the checkpointed position (`decide`, the
same rules over a plain dict, for JAX and PyTorch), so it is checkpointed
with the weights and a resumed run takes the same decisions as an
uninterrupted one.
"""

from keras_elmo.training.checkpoints import NO_BEST_YET


class ValidationRules:
    """The plateau / early-stopping / best-checkpoint rules of a config.

    Args:
        config: `keras_elmo.training.TrainingConfig`.
    """

    def __init__(self, config):
        self.config = config

    def learning_rate(self, state, epoch):
        """The learning rate of 0-based `epoch` under the config's schedule.

        `"epoch"`: a function of the epoch alone
        (`TrainingConfig.learning_rate_at`); `"plateau"`: the rate the
        decisions so far have left in `state.learning_rate`.
        """
        if self.config.lr_schedule == "plateau":
            return float(state.learning_rate.numpy())
        return self.config.learning_rate_at(epoch)

    def after_epoch(self, state, valid_perplexity):
        """Applies the rules to one epoch's validation perplexity.

        Args:
            state: `checkpoints.TrainingState` (updated in place).
            valid_perplexity: float, this epoch's validation perplexity.

        Returns:
            A dict: `improved` (new best: save these weights), `gain`,
            `decayed` (the next epochs train at a lower rate), `stop` (end
            the run after this epoch).
        """
        before = {
            "best_valid": float(state.best_valid.numpy()),
            "epochs_without_gain": int(state.epochs_without_gain.numpy()),
            "learning_rate": state.learning_rate,
            "stopped": bool(state.stopped.numpy()),
        }
        decisions, after = self.decide(before, valid_perplexity)
        if decisions["improved"]:
            state.best_valid.assign(after["best_valid"])
        if decisions["decayed"]:
            # `state.learning_rate * factor` in TensorFlow, as always.
            state.learning_rate.assign(after["learning_rate"])
        state.epochs_without_gain.assign(after["epochs_without_gain"])
        if decisions["stop"]:
            state.stopped.assign(True)
        return decisions

    def decide(self, state, valid_perplexity):
        """The rules over a plain state, for any trainer.

        Args:
            state: dict with `best_valid` (float, `NO_BEST_YET` before the
                first), `epochs_without_gain` (int), `learning_rate` and
                `stopped`.
            valid_perplexity: float.

        Returns:
            `(decisions, state)`: `after_epoch`'s dict and the new state
            (a new dict; `state` is left as it was).
        """
        config = self.config
        best = state["best_valid"]
        if not best < NO_BEST_YET:  # none yet (or inf, from older runs)
            gain = 1.0
        else:
            gain = (best - valid_perplexity) / best
        improved = valid_perplexity < best
        after = dict(state)
        if improved:
            after["best_valid"] = valid_perplexity
        decayed = (
            config.lr_schedule == "plateau" and gain < config.plateau_threshold
        )
        if decayed:
            after["learning_rate"] = state["learning_rate"] * (
                config.plateau_factor
            )
        if gain < config.early_stopping_min_delta:
            after["epochs_without_gain"] = state["epochs_without_gain"] + 1
        else:
            after["epochs_without_gain"] = 0
        patience = config.early_stopping_patience
        stop = patience is not None and after["epochs_without_gain"] >= patience
        if stop:
            after["stopped"] = True
        decisions = {
            "improved": bool(improved),
            "gain": float(gain),
            "decayed": bool(decayed),
            "stop": bool(stop),
        }
        return decisions, after
