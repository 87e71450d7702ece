"""`write_model_folder`: a biLM as our native model folder.

The folder `BiLM.from_preset(folder)` and `BiLM.from_allennlp` read:
`options.json` + `weights.hdf5` (the bilm-tf / AllenNLP layout), plus,
for a model with its own lexicons (converted from ELMoForManyLangs), the
`char_lexicon.json` / `word_lexicon.json` that `options.json` names in
its `token_encoder` section (`keras_elmo.config.options_lexicons`; see
docs/ELMOFORMANYLANGS.md). Written into a temporary folder beside `out`
and renamed into place, so `out` is never half-written.
"""

import os

from keras_elmo.utils.atomic import atomic_directory
from keras_elmo.weights import hdf5 as model_files


def write_model_folder(bilm, out, overwrite=False):
    """Writes `bilm` to the folder `out`; returns `out`.

    Args:
        bilm: a `keras_elmo.BiLM`.
        out: str, the folder to write.
        overwrite: bool. Replace an existing non-empty `out`.

    Raises:
        FileExistsError: `out` exists, is not empty, and `overwrite` is
            False (or it is a file).
    """
    out = os.fspath(out)
    if os.path.isfile(out):
        raise FileExistsError(f"Output {out!r} is a file, not a folder.")
    if os.path.isdir(out) and os.listdir(out) and not overwrite:
        raise FileExistsError(
            f"Output folder {out!r} exists and is not empty; pass "
            "`overwrite=True` to replace it."
        )
    with atomic_directory(out) as tmp:
        bilm.save_allennlp(
            os.path.join(tmp, model_files.OPTIONS),
            os.path.join(tmp, model_files.WEIGHTS),
        )
    return out
