"""The two architecture configs elmoformanylangs 0.0.4.post2 ships.

Published model folders name their architecture by `config_path`, an
absolute path on the authors' machine (e.g. `/users4/.../configs/
cnn_50_100_512_4096_sample.json`) that is not in the folder; the package
then falls back to its own `elmoformanylangs/configs/` by basename. These
are those files' contents, verbatim in meaning (both files are identical
in 0.0.4.post2), so a folder converts without the package installed.
"""

_FILTERS = [[1, 32], [2, 32], [3, 64], [4, 128], [5, 256], [6, 512], [7, 1024]]

_CNN_50_100_512_4096 = {
    "encoder": {
        "name": "elmo",
        "projection_dim": 512,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 4096,
        "n_layers": 2,
    },
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": _FILTERS,
        "n_highway": 2,
        "word_dim": 100,
        "char_dim": 50,
        "max_characters_per_token": 50,
    },
    "classifier": {"name": "sampled_softmax", "n_samples": 8192},
    "dropout": 0.1,
}

KNOWN_ARCHITECTURES = {
    "cnn_50_100_512_4096_sample.json": _CNN_50_100_512_4096,
    "cnn_0_100_512_4096_sample.json": _CNN_50_100_512_4096,
}
