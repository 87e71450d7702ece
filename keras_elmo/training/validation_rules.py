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
`TrainingState`, so it is checkpointed with the weights and a resumed run
takes the same decisions as an uninterrupted one.
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
        config = self.config
        best = float(state.best_valid.numpy())
        if not best < NO_BEST_YET:  # none yet (or inf, from older runs)
            gain = 1.0
        else:
            gain = (best - valid_perplexity) / best
        improved = valid_perplexity < best
        if improved:
            state.best_valid.assign(valid_perplexity)
        decayed = (
            config.lr_schedule == "plateau" and gain < config.plateau_threshold
        )
        if decayed:
            state.learning_rate.assign(
                state.learning_rate * config.plateau_factor
            )
        if gain < config.early_stopping_min_delta:
            state.epochs_without_gain.assign_add(1)
        else:
            state.epochs_without_gain.assign(0)
        patience = config.early_stopping_patience
        stop = (
            patience is not None
            and int(state.epochs_without_gain.numpy()) >= patience
        )
        if stop:
            state.stopped.assign(True)
        return {
            "improved": bool(improved),
            "gain": float(gain),
            "decayed": bool(decayed),
            "stop": bool(stop),
        }
