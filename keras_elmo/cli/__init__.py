"""The `keras-elmo` command line."""
