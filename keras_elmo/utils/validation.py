"""Argument checks with messages that name the argument and the value."""

import numbers


def check_positive_int(name, value, allow_none=False):
    """Raises a `ValueError` unless `value` is an int >= 1 (or None if
    `allow_none`); the message names `name`, the expectation and `value`."""
    if value is None and allow_none:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or value < 1
    ):
        expected = "a positive integer" + (" or None" if allow_none else "")
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected "
            f"{expected}, got {value!r}."
        )
