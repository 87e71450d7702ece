"""Resolves what `BiLM.from_preset` accepts to an options + weights pair.

Accepted, in the order tried:

- a shipped preset (`elmo_small_en`), offline;
- a published name (`keras-elmo presets`), an AllenNLP spelling of one, or
  a deprecated name (warns): downloaded once into the cache;
- `hf://owner/repo[/folder]`: `options.json` + `weights.hdf5` through
  `huggingface_hub` (the optional extra `keras-elmo[hf]`);
- an `http(s)://` or `file://` URL of a folder holding `options.json` +
  `weights.hdf5`, or a pair `(options_url, weights_url)`: downloaded once
  into the cache under `url-<digest>`;
- a local folder holding `options.json` + `weights.hdf5`, or a pair of
  local paths.

The architecture names of `BiLMConfig.from_preset` ("tiny", "small",
"medium", "original") are not weights; they get an error that says so.
"""

import hashlib
import os

from keras_elmo.presets import download
from keras_elmo.presets import published

URL_SCHEMES = ("http://", "https://", "file://")


def resolve_preset(source, cache_dir=None, force=False):
    """`(options_path, weights_path, description)` for a model source.

    Args:
        source: str or a pair of str (see the module docstring).
        cache_dir: str or None. Overrides the download cache folder.
        force: bool. Download again even when cached.

    Raises:
        ValueError: an unknown name (the message lists the choices).
        FileNotFoundError: a local folder without the two files.
        ImportError: `hf://` without `huggingface_hub`.
        keras_elmo.presets.download.PresetDownloadError: a failed download.
    """
    from keras_elmo.presets import available_presets
    from keras_elmo.presets import preset_dir

    if isinstance(source, (list, tuple)):
        return _pair(source, cache_dir, force)
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            "Received an invalid value for argument `name`, expected a "
            "preset name, a folder, a URL or hf://owner/repo, got "
            f"{type(source).__name__}."
        )
    source = os.fspath(source)
    if source in available_presets():
        path = preset_dir(source)
        return _in(path) + (f"shipped preset {source}",)
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
        return _in(folder) + (f"published preset {model.name}",)
    if source.startswith("hf://"):
        return _from_hugging_face(source)
    if source.startswith(URL_SCHEMES):
        base = source.rstrip("/") + "/"
        return _pair(
            (base + download.OPTIONS, base + download.WEIGHTS),
            cache_dir,
            force,
            description=f"model at {source}",
        )
    if os.path.isdir(source):
        options, weights = _in(source)
        for path in (options, weights):
            if not os.path.exists(path):
                raise FileNotFoundError(
                    f"Model folder {source!r} has no {os.path.basename(path)}"
                    " (expected options.json + weights.hdf5)."
                )
        return options, weights, f"model folder {source}"
    _unknown(source, available_presets())


def _in(folder):
    return (
        os.path.join(folder, download.OPTIONS),
        os.path.join(folder, download.WEIGHTS),
    )


def _pair(pair, cache_dir, force, description=None):
    if len(pair) != 2 or not all(isinstance(p, str) for p in pair):
        raise ValueError(
            "Received an invalid value for argument `name`, expected a pair "
            f"(options, weights) of paths or URLs, got {pair!r:.200}."
        )
    options, weights = pair
    if not options.startswith(URL_SCHEMES):
        return options, weights, description or f"weights {weights}"
    key = "url-" + hashlib.sha256(f"{options}\n{weights}".encode()).hexdigest()
    folder = download.fetch_model_files(
        key[:20],
        (options,),
        (weights,),
        label=f"model at {options} + {weights}",
        cache_dir=cache_dir,
        force=force,
    )
    return _in(folder) + (description or f"model at {weights}",)


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
            "Received an invalid value for argument `name`, expected "
            f"hf://owner/repo[/folder], got {source!r}."
        )
    repo_id, folder = "/".join(parts[:2]), "/".join(parts[2:]) or None
    paths = [
        huggingface_hub.hf_hub_download(
            repo_id=repo_id, filename=name, subfolder=folder
        )
        for name in (download.OPTIONS, download.WEIGHTS)
    ]
    return paths[0], paths[1], f"Hugging Face {source}"


def _unknown(source, shipped):
    from keras_elmo.config import PRESETS as ARCHITECTURES

    if source in ARCHITECTURES:
        raise ValueError(
            f"{source!r} is an architecture, not a trained model: "
            f"`keras_elmo.BiLM(keras_elmo.BiLMConfig.from_preset({source!r}))`"
            " builds it with random weights. Trained models by name: "
            f"{sorted(shipped) + sorted(published.PUBLISHED_PRESETS)} "
            "(`keras-elmo presets`)."
        )
    raise ValueError(
        "Received an invalid value for argument `name`, expected a shipped "
        f"preset {sorted(shipped)}, a published preset "
        f"{sorted(published.PUBLISHED_PRESETS)}, a folder holding "
        "options.json + weights.hdf5, an http(s):// or file:// URL, or "
        f"hf://owner/repo; got {source!r} (no such preset or folder)."
    )
