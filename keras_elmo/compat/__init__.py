"""Compatibility shims: paths kept only to reproduce another library.

`simple_elmo` reproduces simple_elmo 0.9.2's (bilm-tf's) vectors bit
for bit: its stateful warm-up and bilm-tf's op order.
"""

from keras_elmo.compat import simple_elmo

__all__ = ["simple_elmo"]
