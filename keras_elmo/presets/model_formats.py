"""What a local model folder or file holds: its format, detected once.

`detect_model(path)` looks at the files (never at their contents beyond
what telling formats apart needs) and returns a `ResolvedModel`:

| format              | recognised by                                      |
|---------------------|----------------------------------------------------|
| `"allennlp"`        | `options.json` + `weights.hdf5` (AllenNLP, our     |
|                     | `keras-elmo train` output, shipped presets), or    |
|                     | `options.json` + `model.hdf5` (NLPL / EMBEDDIA /   |
|                     | simple_elmo folders), or `options.json` + one      |
|                     | other `*.hdf5` (EMBEDDIA's                         |
|                     | `slovenian-elmo-weights.hdf5`); `vocab.txt` and    |
|                     | `softmax.hdf5` are noted when present              |
| `"elmoformanylangs"`| `config.json` + `char.dic` + `encoder.pkl` +       |
|                     | `token_embedder.pkl` (HIT-SCIR ELMoForManyLangs)   |
| `"saved_model"`     | `saved_model.pb` (`keras-elmo export`), or a TF    |
|                     | Serving base folder `N/saved_model.pb` (highest N) |
| `"keras"`           | a `.keras` file (a `BiLM`, or a model holding one  |
|                     | `ElmoLayer`)                                       |

Anything else raises a `ValueError` that says what each format needs; it
never lists the folder's files (the path may name any folder on the
machine). Downloads, archives and names are resolved before this,
in `keras_elmo.presets.sources.resolve_model`.
"""

import dataclasses
import os

from keras_elmo.utils.serving_layout import is_saved_model
from keras_elmo.utils.serving_layout import latest_version

FORMATS = ("allennlp", "elmoformanylangs", "saved_model", "keras")

OPTIONS = "options.json"
WEIGHTS_NAMES = ("weights.hdf5", "model.hdf5")  # ours / AllenNLP, NLPL
VOCABULARY = "vocab.txt"
SOFTMAX = "softmax.hdf5"
EFML_FILES = ("config.json", "char.dic", "encoder.pkl", "token_embedder.pkl")


@dataclasses.dataclass(frozen=True)
class ResolvedModel:
    """A model source resolved to local files.

    Args:
        format: str. One of `FORMATS`.
        path: str. The local folder (or `.keras` file, or remote
            SavedModel URI) holding the model.
        description: str. How messages name the model (e.g. "shipped
            preset elmo_small_en").
        options: str or None. The options JSON (`"allennlp"`).
        weights: str or None. The weights HDF5 (`"allennlp"`).
        vocabulary: str or None. A bilm-tf vocabulary file beside them.
        softmax: str or None. The LM softmax (`keras-elmo train` output).
    """

    format: str
    path: str
    description: str
    options: str = None
    weights: str = None
    vocabulary: str = None
    softmax: str = None


def allennlp_files(options, weights, description):
    """The `ResolvedModel` of an options + weights pair (any folders)."""
    folder = os.path.dirname(os.path.abspath(weights))
    return ResolvedModel(
        format="allennlp",
        path=folder,
        description=description,
        options=options,
        weights=weights,
        **_extras(folder),
    )


def detect_model(path, description=None):
    """The `ResolvedModel` of a local folder or `.keras` file.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: no format fits; the message lists the files found.
    """
    path = os.fspath(path)
    description = description or f"model {path}"
    if not os.path.exists(path):
        raise FileNotFoundError(f"Model path {path!r} does not exist.")
    if os.path.isfile(path):
        if path.endswith(".keras"):
            return ResolvedModel("keras", path, description)
        raise ValueError(
            f"Model file {path!r} is not a .keras file (expected a folder, "
            "a .zip archive or a .keras file)."
        )
    names = set(os.listdir(path))
    if is_saved_model(path):
        return ResolvedModel("saved_model", path, f"SavedModel {path}")
    saved = latest_version(path)
    if saved:
        return ResolvedModel("saved_model", saved, f"SavedModel {saved}")
    weights = [n for n in WEIGHTS_NAMES if n in names] or _other_hdf5(names)
    if OPTIONS in names and weights:
        return ResolvedModel(
            format="allennlp",
            path=path,
            description=description,
            options=os.path.join(path, OPTIONS),
            weights=os.path.join(path, weights[0]),
            **_extras(path),
        )
    if OPTIONS in names:
        raise FileNotFoundError(
            f"Model folder {path!r} has no weights.hdf5 (expected "
            "options.json + weights.hdf5, or options.json + model.hdf5, or "
            "options.json + exactly one other .hdf5 file)."
        )
    if all(name in names for name in EFML_FILES):
        return ResolvedModel("elmoformanylangs", path, description)
    raise ValueError(_no_format_message(path))


def _other_hdf5(names):
    """`[name]` of the folder's only `*.hdf5` besides `softmax.hdf5` (as
    simple_elmo falls back to), or `[]` when there are none or several."""
    found = sorted(
        n for n in names if n.lower().endswith(".hdf5") and n != SOFTMAX
    )
    return found if len(found) == 1 else []


def _extras(folder):
    found = {}
    for key, name in (("vocabulary", VOCABULARY), ("softmax", SOFTMAX)):
        candidate = os.path.join(folder, name)
        found[key] = candidate if os.path.isfile(candidate) else None
    return found


def _no_format_message(path):
    return (
        f"Model folder {path!r} matches no known format: it is a folder "
        "holding no known model. "
        "Expected one of: options.json + weights.hdf5 (AllenNLP, bilm-tf, "
        "keras-elmo train), options.json + model.hdf5 or one other .hdf5 "
        f"(NLPL / EMBEDDIA / simple_elmo), {' + '.join(EFML_FILES)} "
        "(ELMoForManyLangs), saved_model.pb (keras-elmo export) or "
        "N/saved_model.pb (TF Serving)."
    )
