"""Weight files: every format's arrays (HDF5, TF1 checkpoints, pickles)."""
