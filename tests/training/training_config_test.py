"""`TrainingConfig` validation."""

import pytest

from keras_elmo.training.training_config import TrainingConfig


@pytest.mark.parametrize(
    "name", ["epochs", "batch_size", "max_tokens", "shuffle_buffer"]
)
@pytest.mark.parametrize("value", [0, -3, 2.5])
def test_counts_must_be_positive_ints(name, value):
    with pytest.raises(ValueError, match=name) as error:
        TrainingConfig(train="t", vocab="v", out_dir="o", **{name: value})
    assert repr(value) in str(error.value) or str(value) in str(error.value)
