"""Weight files: the bilm-tf / AllenNLP HDF5 layout."""
