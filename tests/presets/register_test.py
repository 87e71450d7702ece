"""Registering your own published model or archive: the type is checked
and the message names the argument, the class expected and the type."""

import pytest

from keras_elmo.presets.published import register_archive
from keras_elmo.presets.published import register_preset


@pytest.mark.parametrize(
    "register, expected",
    [
        (register_preset, "`model` must be a keras_elmo.presets.published."),
        (register_archive, "`archive` must be a keras_elmo.presets.publi"),
    ],
)
def test_registering_something_else_names_the_class_and_the_type(
    register, expected
):
    with pytest.raises(TypeError) as raised:
        register({"name": "mine"})
    assert str(raised.value).startswith(expected)
    assert str(raised.value).endswith("received dict.")
