"""The one resolver and the one loader: any model source -> a model.

`load(source, build, **options)` is the one loader: every entry point that
makes a model from a source (`BiLM.from_preset`, `BiLM.from_allennlp`,
`BiLM.from_elmoformanylangs`, `ElmoLayer.from_preset`,
`keras_elmo.Embedder.from_preset`, `LMSubstitutes.from_preset`, the
`keras-elmo` commands, the Beam and Spark workers through
`keras_elmo.embedding.model_spec.load_spec`) calls it. It resolves the
source once with `resolve_model` and hands the `ResolvedModel` to `build`,
the caller's step that turns files into its kind of model (a `BiLM`'s
`from_resolved`, the embedding runner, the language model): one place
answers "which model?", each kind says how it is built.

`resolve_model(source)` answers "which model?". Accepted, in the order
tried:

- a pair `(options, weights)` of local paths or URLs;
- a shipped preset (`elmo_small_en`), offline;
- a published name (`keras-elmo presets`), an AllenNLP spelling of one, or
  a deprecated name (warns): downloaded once into the cache;
- a published archive's name (`efml_zh`, `nlpl_no_norelmo100_218`,
  `embeddia_sl`, ...: `keras_elmo.presets.published`): downloaded
  once as `CACHE/<name>.zip` (or `.tar.gz`), its sha256 checked against
  the pin or the first download's record
  (`keras_elmo.presets.archives`), unpacked;
- `hf://owner/repo[/folder]`: `options.json` + `weights.hdf5` through
  `huggingface_hub` (the optional extra `keras-elmo[hf]`);
- an `http(s)://` or `file://` URL of a `.zip` or `.tar.gz` archive
  (NLPL, EMBEDDIA),
  downloaded once into the cache (`archive-<digest of the URL>`) and
  unpacked (`keras_elmo.presets.archives`); or of a folder holding
  `options.json` + `weights.hdf5` (cached under `url-<digest>`). URL
  caches are keyed by the URL and treated as immutable: pass `force=True`
  to fetch again;
- a remote SavedModel URI that TensorFlow reads (`gs://`, `s3://`,
  `hdfs://`);
- a local `.zip` / `.tar.gz` archive (unpacked into the cache, keyed by
  its content);
- a local folder or `.keras` file, whose format
  `detect_model` tells from the files (below).

The architecture names of `BiLMConfig.from_architecture` ("tiny", "small",
"medium", "original") are not weights; they get an error that says how to
build one with random weights. A mistyped name gets a "did you mean".

A local folder or file: `detect_model(path)` looks at the files (never
at their contents beyond what telling formats apart needs) and returns a
`ResolvedModel`:

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
machine). A TF Serving base folder holds numbered versions `N/saved_model.pb`
(`latest_version`, `version_dir`).
"""

import dataclasses
import difflib
import hashlib
import os
import shutil
import tempfile

from keras_elmo.presets import archives
from keras_elmo.presets import download
from keras_elmo.presets import published
from keras_elmo.utils import check_path_like
from keras_elmo.utils import check_positive_int

SAVED_MODEL_FILE = "saved_model.pb"


def is_saved_model(path):
    """Whether `path` is a SavedModel directory."""
    return os.path.isfile(os.path.join(path, SAVED_MODEL_FILE))


def latest_version(base_dir):
    """The highest numeric `base_dir/N` that holds a SavedModel, or None."""
    versions = [
        int(name)
        for name in os.listdir(base_dir)
        if name.isdigit() and is_saved_model(os.path.join(base_dir, name))
    ]
    return os.path.join(base_dir, str(max(versions))) if versions else None


def version_dir(base_dir, version):
    """`base_dir/version` (the layout TF Serving polls), or `base_dir`
    itself when `version` is None."""
    if version is None:
        return base_dir
    check_positive_int("version", version)
    return os.path.join(base_dir, str(version))


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


URL_SCHEMES = ("http://", "https://", "file://")

PRESETS_DIR = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PRESET = "elmo_small_en"  # what every entry point loads by default


def available_presets():
    """Names of the shipped presets (folders with options and weights)."""
    return sorted(
        name
        for name in os.listdir(PRESETS_DIR)
        if os.path.exists(os.path.join(PRESETS_DIR, name, "weights.hdf5"))
    )


def preset_dir(name):
    """The folder of preset `name`; a clear error naming the choices."""
    path = os.path.join(PRESETS_DIR, str(name))
    if not os.path.exists(os.path.join(path, "weights.hdf5")):
        raise ValueError(
            "Received an invalid value for argument `name`, expected one of "
            f"the shipped presets {available_presets()}, got {name!r}. "
            "(Architectures alone: keras_elmo.BiLMConfig.from_architecture.)"
        )
    return path


def resolve_model(source, cache_dir=None, force=False):
    """The `ResolvedModel` (format, local files, description) of `source`.

    Args:
        source: str, `os.PathLike` or a pair of str (see the module
            docstring); a `ResolvedModel` is returned as it is.
        cache_dir: str or None. Overrides the download cache folder.
        force: bool. Download again even when cached.

    Raises:
        TypeError: `source` is not a str, a path or a pair.
        ValueError: an unknown name (the message lists the choices and the
            closest names), or a folder of no known format (the message
            says what each format needs, never the folder's files).
        FileNotFoundError: a local path that does not exist.
        ImportError: `hf://` without `huggingface_hub`.
        keras_elmo.presets.download.PresetDownloadError: a failed download.
        keras_elmo.presets.archives.UnsafeArchiveError: a refused `.zip`.
    """
    if isinstance(source, ResolvedModel):
        return source
    if isinstance(source, (list, tuple)):
        return _pair(source, cache_dir, force)
    source = check_path_like(
        "source",
        source,
        "a preset name, a folder, a .zip, a URL or hf://owner/repo",
    )
    if source in available_presets():
        return detect_model(preset_dir(source), f"shipped preset {source}")
    model = published.find_published(source)
    if model is not None:
        folder = download.fetch_model_files(
            model.name,
            model.urls("options"),
            model.urls("weights"),
            label=f"preset {model.name!r}",
            expected_options=model.options,
            options_sha256=model.options_sha256,
            weights_sha256=model.weights_sha256,
            cache_dir=cache_dir,
            force=force,
        )
        return detect_model(folder, f"published preset {model.name}")
    archive = published.find_archive(source)
    if archive is not None:
        urls = archive.urls()
        path = _fetch_archive(
            urls, cache_dir, force, archive.name, archive.sha256, archive.suffix
        )
        label = f"published archive {archive.name}"
        folder = archives.unpack_archive(
            path,
            cache_dir,
            label,
            pinned=archive.sha256,
            url=urls[0],
            force=force,
        )
        return detect_model(folder, label)
    if source.startswith("hf://"):
        return _from_hugging_face(source)
    if source.startswith(URL_SCHEMES):
        if archives.is_archive_name(source):
            key = "archive-" + hashlib.sha256(source.encode()).hexdigest()[:20]
            suffix = ".zip" if _is_zip_name(source) else ".tar.gz"
            path = _fetch_archive(
                (source,), cache_dir, force, key, None, suffix
            )
            folder = archives.unpack_archive(
                path,
                cache_dir,
                f"archive {source}",
                url=source,
                accept_change=force,
                force=force,
            )
            return detect_model(folder, f"archive {source}")
        base = source.rstrip("/") + "/"
        return _pair(
            (base + download.OPTIONS, base + download.WEIGHTS),
            cache_dir,
            force,
            description=f"model at {source}",
        )
    if "://" in source:  # gs://, s3://, hdfs://: TensorFlow reads these
        return ResolvedModel("saved_model", source, f"SavedModel {source}")
    if os.path.isfile(source) and archives.is_archive_name(source):
        folder = archives.unpack_archive(source, cache_dir, force=force)
        return detect_model(folder, f"archive {source}")
    if os.path.exists(source):
        return detect_model(source, f"model folder {source}")
    if os.sep in source or "/" in source or source.endswith((".zip", ".keras")):
        raise FileNotFoundError(
            f"Model path {source!r} does not exist (expected a model "
            "folder, a .zip archive or a .keras file)."
        )
    _unknown(source, available_presets())


def load(source, build, cache_dir=None, force=False, **options):
    """The one loader: `build(resolve_model(source), **options)`.

    Args:
        source: anything `resolve_model` accepts (a `ResolvedModel` is
            used as it is).
        build: callable `(ResolvedModel, **options) -> model`, the kind
            of model wanted (e.g. `keras_elmo.BiLM.from_resolved`).
        cache_dir: str or None. Overrides the download cache folder.
        force: bool. Download again even when cached.
        **options: passed to `build`.

    Returns:
        What `build` returns.
    """
    resolved = resolve_model(source, cache_dir=cache_dir, force=force)
    return build(resolved, **options)


def resolve_preset(source, cache_dir=None, force=False):
    """`(options_path, weights_path, description)` of an AllenNLP-format
    source (see `resolve_model`); other formats raise a `ValueError`."""
    resolved = resolve_model(source, cache_dir=cache_dir, force=force)
    if resolved.format != "allennlp":
        raise ValueError(
            f"{resolved.description} is a {resolved.format} model, not an "
            "options.json + weights.hdf5 pair."
        )
    return resolved.options, resolved.weights, resolved.description


def _is_zip_name(source):
    return source.split("?", 1)[0].lower().endswith(".zip")


def _fetch_archive(urls, cache_dir, force, key, sha256=None, suffix=".zip"):
    """The cached copy `CACHE/<key><suffix>` of the archive at the first of
    `urls` that answers, downloaded through `keras.utils.get_file` (its
    progress bar, its sha256 check when `sha256` is pinned) into a private
    folder and renamed into place (`download.fetch_first`)."""
    root = download.cache_root(cache_dir)
    target = os.path.join(root, key + suffix)
    if os.path.isfile(target) and not force:
        return target
    os.makedirs(root, exist_ok=True)
    staging = tempfile.mkdtemp(prefix=download.PARTIAL_PREFIX, dir=root)
    try:
        path, _ = download.fetch_first(
            urls,
            "archive.zip",
            staging,
            what="the archive",
            by_hand=f"download it elsewhere and place it as {target} (or "
            "pass its local path).",
            sha256=sha256,
        )
        os.replace(path, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _in(folder):
    return (
        os.path.join(folder, download.OPTIONS),
        os.path.join(folder, download.WEIGHTS),
    )


def _pair(pair, cache_dir, force, description=None):
    if len(pair) != 2 or not all(isinstance(p, str) for p in pair):
        raise ValueError(
            "Received an invalid value for argument `source`, expected a pair "
            f"(options, weights) of paths or URLs, got {pair!r:.200}."
        )
    options, weights = pair
    if not options.startswith(URL_SCHEMES):
        return allennlp_files(
            options, weights, description or f"weights {weights}"
        )
    key = "url-" + hashlib.sha256(f"{options}\n{weights}".encode()).hexdigest()
    folder = download.fetch_model_files(
        key[:20],
        (options,),
        (weights,),
        label=f"model at {options} + {weights}",
        cache_dir=cache_dir,
        force=force,
    )
    description = description or f"model at {weights}"
    return allennlp_files(*_in(folder), description)


def _from_hugging_face(source):
    try:
        import huggingface_hub
    except ImportError as e:
        raise ImportError(
            f"Loading {source!r} needs the optional extra for Hugging Face: "
            "`pip install 'keras-elmo[hf]'` (installs huggingface_hub)."
        ) from e
    parts = source[len("hf://") :].strip("/").split("/")
    if len(parts) < 2 or not all(parts):
        raise ValueError(
            "Received an invalid value for argument `source`, expected "
            f"hf://owner/repo[/folder], got {source!r}."
        )
    repo_id, folder = "/".join(parts[:2]), "/".join(parts[2:]) or None
    paths = [
        huggingface_hub.hf_hub_download(
            repo_id=repo_id, filename=name, subfolder=folder
        )
        for name in (download.OPTIONS, download.WEIGHTS)
    ]
    return allennlp_files(paths[0], paths[1], f"Hugging Face {source}")


# Words of a preset name that say which trained model is meant: the
# architecture names and their everyday synonyms -> `ARCHITECTURE_TWINS`.
_MEANING_WORDS = {
    "small": "small",
    "medium": "medium",
    "original": "original",
    "large": "original",
    "big": "original",
    "full": "original",
}


def _meant(source):
    """The trained presets a mistyped name means by its words
    (`elmo_original_en` -> `elmo_2x4096_en`: the 93.6M model, not the
    closest spelling), or []."""
    import re

    meant = []
    for word in re.split(r"[^a-z]+", str(source).lower()):
        architecture = _MEANING_WORDS.get(word)
        twin = published.ARCHITECTURE_TWINS.get(architecture)
        if twin and twin not in meant:
            meant.append(twin)
    return meant


def _unknown(source, shipped):
    from keras_elmo.config import ARCHITECTURES

    names = sorted(shipped) + sorted(published.PUBLISHED_PRESETS)
    names += sorted(published.PUBLISHED_ARCHIVES)
    if source in ARCHITECTURES:
        twin = published.ARCHITECTURE_TWINS.get(source)
        hint = f" AllenNLP's trained {source!r} is {twin!r}." if twin else ""
        raise ValueError(
            f"{source!r} is an architecture, not a trained model: "
            f"`keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture({source!r}))`"
            f" builds it with random weights.{hint} Trained models by name: "
            f"{names} (`keras-elmo presets`)."
        )
    close = _meant(source) or difflib.get_close_matches(
        source, names + sorted(published.ALIASES), n=3, cutoff=0.6
    )
    suggestion = (
        f" Did you mean {' or '.join(map(repr, close))}?" if close else ""
    )
    raise ValueError(
        "Received an invalid value for argument `source`, expected a "
        f"shipped preset {sorted(shipped)}, a published preset "
        f"{sorted(published.PUBLISHED_PRESETS)} or archive (efml_*, nlpl_*, "
        "embeddia_*: `keras-elmo presets`), a model folder, a .zip "
        "archive, an http(s):// or file:// URL, or hf://owner/repo; got "
        f"{source!r} (no such preset or path).{suggestion}"
    )
