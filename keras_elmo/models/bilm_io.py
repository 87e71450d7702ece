"""`BiLMLoaders`: every way to build a `BiLM` from files, and to write one.

The classmethods `BiLM` inherits: `from_preset`, `from_allennlp` and
`from_elmoformanylangs` go through `keras_elmo.presets.sources.load` (the
one loader over the one resolver) to `from_resolved`, which builds from
the resolved format: options.json + weights HDF5
(`keras_elmo.weights.hdf5`), an ELMoForManyLangs folder, or a `.keras`
file (`model_in_keras_file`); `model_from_resolved` keeps a `.keras`
file's `ElmoLayer` (its learned mix). `from_tfhub` and
`bilm_from_bilm_tf_checkpoint` read TF1 checkpoints into HDF5-layout
arrays and load them through the same HDF5 loader (a temporary file), so
every shape check and port hook applies to them too. `save_allennlp`
writes the files `from_allennlp` reads; `write_model_folder` writes them
as a model folder (plus the lexicons `options.json` names), into a
temporary folder renamed into place. The model itself (layers, call,
state) is `bilm.py`'s.
"""

import functools
import os
import tempfile

import h5py
import keras
import numpy as np

from keras_elmo.config import BiLMConfig
from keras_elmo.presets import sources as model_sources
from keras_elmo.presets.sources import ResolvedModel
from keras_elmo.utils.atomic import atomic_directory
from keras_elmo.weights import hdf5 as model_files
from keras_elmo.weights.hdf5 import check_keras_archive
from keras_elmo.weights.hdf5 import check_weights_fit
from keras_elmo.weights.hdf5 import expected_weight_shapes
from keras_elmo.weights.hdf5 import load_bilm_hdf5
from keras_elmo.weights.hdf5 import save_bilm_hdf5
from keras_elmo.weights.tf_checkpoints import MIX_WEIGHTS
from keras_elmo.weights.tf_checkpoints import read_bilm_tf_checkpoint
from keras_elmo.weights.tf_checkpoints import read_tfhub_module


def bilm_from_arrays(cls, arrays, config, **kwargs):
    """Builds `cls(config)` and loads HDF5-layout `arrays` through the
    HDF5 loader (a temporary file), so the same checks and hooks apply."""
    with tempfile.TemporaryDirectory(prefix="keras_elmo_convert_") as tmp:
        path = os.path.join(tmp, "weights.hdf5")
        with h5py.File(path, "w") as f:
            for name in expected_weight_shapes(config):
                f.create_dataset(name, data=arrays[name].astype(np.float32))
        return cls.from_allennlp(config.to_options_dict(), path, **kwargs)


def bilm_from_tfhub(cls, path, options=None, return_mix=False, **kwargs):
    """`BiLM.from_tfhub`: the module's biLM, and with `return_mix` its
    learned mix `{"scalar_parameters", "gamma"}` (`aggregation/weights`,
    `aggregation/scaling`), which `ElmoLayer.from_tfhub` starts every
    `ScalarMix` from (trainable, as with `hub.Module(...,
    trainable=True)`), so that with `dropout=0` the layer's output is the
    module's `elmo` output."""
    _check_module_on_disk(path)
    config, arrays, mix = read_tfhub_module(path, options)
    bilm = bilm_from_arrays(cls, arrays, config, **kwargs)
    if not return_mix:
        return bilm
    if mix is None:
        raise ValueError(
            f"TF Hub module {os.fspath(path)!r} has no {MIX_WEIGHTS!r}; use "
            "BiLM.from_tfhub and a fresh ElmoLayer."
        )
    return bilm, mix


def _check_module_on_disk(path):
    """Raises `FileNotFoundError` for a module that is not on disk (a
    missing path, or a TF Hub handle or URL), saying what is read and
    where a module comes from: nothing is downloaded here."""
    path = os.fspath(path)
    if os.path.exists(path):
        return
    is_handle = "://" in path or path.startswith(("tfhub.dev", "google/"))
    received = (
        f"received the TF Hub handle {path!r}, which is not read over "
        "the network"
        if is_handle
        else f"{path!r} does not exist"
    )
    raise FileNotFoundError(
        f"TF Hub module not found: {received}. `module_dir` is a module "
        "already on disk: the folder holding variables/variables.index "
        "(beside saved_model.pb or tfhub_module.pb), or its .tar.gz; "
        "tensorflow_hub is not needed. Use the folder hub.Module "
        "downloaded under $TFHUB_CACHE_DIR, or download and unpack "
        "https://tfhub.dev/google/elmo/3?tf-hub-format=compressed."
    )


def bilm_from_bilm_tf_checkpoint(cls, path, options=None, **kwargs):
    """`(BiLM, softmax arrays or None)` from a bilm-tf checkpoint."""
    config, arrays, softmax = read_bilm_tf_checkpoint(path, options)
    return bilm_from_arrays(cls, arrays, config, **kwargs), softmax


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


def model_in_keras_file(path, bilm_cls):
    """The model of a `.keras` file: its `BiLM` (an instance of
    `bilm_cls`), or the one layer in it that holds a `BiLM` as `.bilm`
    (an `ElmoLayer`, so a learned mix is kept). Loads with
    `safe_mode=True`, after its HDF5 weights member is checked as every
    weights file is (`hdf5_reader.check_keras_archive`).

    Raises:
        ValueError: the file holds neither a BiLM nor exactly one such
            layer; the message names the file and what it holds.
        UnsafeHDF5Error: (a `ValueError`) its weights would be read from
            outside the archive.
    """
    check_keras_archive(path)
    model = keras.saving.load_model(path, safe_mode=True)
    if isinstance(model, bilm_cls):
        return model
    found = [
        layer
        for layer in getattr(model, "layers", [])
        if isinstance(getattr(layer, "bilm", None), bilm_cls)
    ]
    if len(found) == 1:
        return found[0]
    raise ValueError(
        f"{path!r} holds a {type(model).__name__} with {len(found)} "
        "ElmoLayers; expected a BiLM or exactly one ElmoLayer."
    )


class BiLMLoaders:
    """Mixin of `keras_elmo.BiLM`: its `from_*` constructors and
    `save_allennlp` (see the module docstring)."""

    @classmethod
    def from_elmoformanylangs(cls, folder, **kwargs):
        """A biLM from an ELMoForManyLangs model folder, exactly.

        Reads its files without torch and without running pickled code
        (`keras_elmo.weights.elmoformanylangs`); the result gives the
        package's `sents2elmo(output_layer=-2)` layers, statelessly. See
        docs/ELMOFORMANYLANGS.md. `**kwargs` go to the constructor.
        """
        resolved = ResolvedModel(
            "elmoformanylangs", folder, f"ELMoForManyLangs folder {folder}"
        )
        return model_sources.load(resolved, cls.from_resolved, **kwargs)

    @classmethod
    def from_allennlp(cls, options_file, weight_file, stateful=False, **kwargs):
        """Builds a biLM from a bilm-tf / AllenNLP `options.json` + HDF5.

        Args:
            options_file: path to the options JSON (or its dict).
            weight_file: path to the weights HDF5 (`dump_weights` layout).
            stateful: bool. See the class docstring.
            **kwargs: passed to the constructor (e.g. `dtype`).
        """
        resolved = ResolvedModel(
            "allennlp",
            weight_file,
            f"weights {weight_file}",
            options=options_file,
            weights=weight_file,
        )
        return model_sources.load(
            resolved, cls.from_resolved, stateful=stateful, **kwargs
        )

    @classmethod
    def from_preset(
        cls,
        source,
        stateful=False,
        load_weights=True,
        cache_dir=None,
        dtype=None,
        dropout=0.0,
        name=None,
    ):
        """Loads a pretrained biLM from any model source.

        The source is resolved by `keras_elmo.presets.sources.resolve_model`
        (the one resolver every entry point uses).

        Args:
            source: a shipped preset (`"elmo_small_en"`, offline), a
                published one (`keras-elmo presets`; downloaded once into
                `$KERAS_HOME/keras_elmo/presets`, verified), a folder
                (`options.json` + `weights.hdf5`, or NLPL's `model.hdf5`;
                an ELMoForManyLangs folder), a `.zip` archive of one, an
                `http(s)://` or `file://` URL of a folder or `.zip`, a
                pair `(options, weights)` of paths or URLs,
                `hf://owner/repo`, or a `.keras` file.
            stateful: bool. See the class docstring.
            load_weights: bool. False builds the source's architecture with
                freshly initialised weights (keras-hub's convention).
            cache_dir: str or None. Overrides the download cache folder
                (default `$KERAS_ELMO_CACHE`, else under `$KERAS_HOME`).
            dtype: dtype or `keras.DTypePolicy` for every layer.
            dropout: float. See the constructor.
            name: str or None. The model's name.
        """
        build = functools.partial(
            cls.from_resolved,
            stateful=stateful,
            load_weights=load_weights,
            dtype=dtype,
            dropout=dropout,
            name=name,
        )
        return model_sources.load(source, build, cache_dir=cache_dir)

    @classmethod
    def from_resolved(cls, resolved, load_weights=True, **kwargs):
        """Builds the biLM of a resolved source.

        Args:
            resolved: a `keras_elmo.presets.sources.ResolvedModel`,
                what `resolve_model` returned.
            load_weights: bool. See `from_preset`.
            **kwargs: constructor arguments (`stateful`, `dtype`,
                `dropout`, `name`).
        """
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        if resolved.format == "allennlp":
            config = BiLMConfig.from_options_json(resolved.options)
            if not load_weights:
                return cls(config, **kwargs)
            # Before the model is allocated: the file must be safe and able
            # to hold what the options claim.
            check_weights_fit(resolved.weights, config)
            bilm = cls(config, **kwargs)
            load_bilm_hdf5(bilm, resolved.weights)
            return bilm
        if not load_weights:
            raise ValueError(
                "`load_weights=False` needs an options.json model, received "
                f"the {resolved.format} model {resolved.description}."
            )
        if resolved.format == "elmoformanylangs":
            from keras_elmo.weights import elmoformanylangs

            model = elmoformanylangs.read_folder(resolved.path)
            bilm = cls(BiLMConfig(**model.config_fields), **kwargs)
            elmoformanylangs.load_weights(bilm, model)
            return bilm
        if resolved.format == "keras":
            if kwargs.get("stateful"):
                raise ValueError(
                    "`stateful=True` needs an options.json model, received "
                    f"the .keras file {resolved.path!r} (its BiLM is loaded "
                    "as saved)."
                )
            found = model_in_keras_file(resolved.path, cls)
            return found if isinstance(found, cls) else found.bilm
        raise ValueError(
            f"{resolved.description} is a SavedModel: it serves vectors "
            "(`keras_elmo.Embedder.from_preset`) but holds no trainable "
            "BiLM; load the model it was exported from instead."
        )

    @classmethod
    def model_from_resolved(cls, resolved):
        """The model a resolved source holds, for exports and embedding:
        the `ElmoLayer` of a `.keras` file holding exactly one (so its
        learned mix is kept), else `cls.from_resolved(resolved)`."""
        if resolved.format == "keras":
            return model_in_keras_file(resolved.path, cls)
        return cls.from_resolved(resolved)

    @classmethod
    def from_tfhub(cls, module_dir, options=None, return_mix=False, **kwargs):
        """Builds a biLM from a TF Hub `elmo/3` module (TF1 Hub format).

        Reads the module's `variables/` checkpoint with TensorFlow 2 (no
        `hub.Module`); `module_dir` may also be a `.tar.gz` of the module.
        See `keras_elmo.weights.tf_checkpoints` for the variables read.
        `ElmoLayer.from_tfhub` also restores the module's learned mix.

        Args:
            module_dir: str. The module folder or its `.tar.gz`.
            options: dict or path or None. Overrides the options inferred
                from the variable shapes (clips, skip connections,
                activation are not stored in the checkpoint).
            return_mix: bool. Also return the module's learned mix (see
                `keras_elmo.models.bilm_io.bilm_from_tfhub`).
            **kwargs: passed to the constructor (e.g. `dtype`).
        """
        return bilm_from_tfhub(
            cls, module_dir, options=options, return_mix=return_mix, **kwargs
        )

    def save_allennlp(self, options_file, weight_file):
        """Writes `options.json` + weights HDF5 that AllenNLP reads.

        Both files are written atomically. Loading them back with
        `from_allennlp` gives bit-identical weights.
        """
        save_bilm_hdf5(self, weight_file)
        self.config.to_options_json(options_file)
