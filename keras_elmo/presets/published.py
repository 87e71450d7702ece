"""The registry of published ELMo models, one declarative entry each.

Every entry names a pair of AllenNLP-format files (`options.json` +
`weights.hdf5`) by their path under AllenNLP's `models/elmo/` bucket; the
URLs tried are that path under each host of `ALLENNLP_HOSTS` (two spellings
of the same S3 bucket, tried in order), or under
`$KERAS_ELMO_PRESET_MIRROR` alone when it is set (a local or corporate
mirror laid out like the bucket).

The options of each model are recorded here, so the parameter count is
computed from them (`parameter_count`), the download can be checked against
them, and the table prints without a network. A model whose options could
not be checked offline records `options=None` (its count prints as "?").

Names never collide with the architecture-only names of
`keras_elmo.BiLMConfig.from_architecture` ("tiny", "small", "medium",
"original"): published weights are `elmo_<layers>x<cell>_..._<language>`.
"""

import dataclasses
import os

from keras_elmo.config import BiLMConfig
from keras_elmo.text import char_vocab
from keras_elmo.utils import check_instance

ALLENNLP_HOSTS = (
    "https://allennlp.s3.amazonaws.com/models/elmo/",
    "https://s3-us-west-2.amazonaws.com/allennlp/models/elmo/",
)
MIRROR_ENV = "KERAS_ELMO_PRESET_MIRROR"
UNPINNED = None  # sha256 not verified here (no network when registered)


@dataclasses.dataclass(frozen=True)
class PublishedModel:
    """One published biLM: where its two files live and what they hold.

    Args:
        name: str. The preset name (`BiLM.from_preset(name)`).
        options_path: str. Path of the options JSON under the bucket.
        weights_path: str. Path of the weights HDF5 under the bucket.
        description: str. One line for the table.
        training_data: str. The corpus, as its publisher describes it.
        licence: str. The licence the publisher states.
        options: dict or None. The options JSON's content, when known; the
            downloaded file must describe the same architecture.
        options_sha256, weights_sha256: str or None (`UNPINNED`).
        weights_size: int or None. Bytes, when known.
        hosts: tuple of base URLs tried in order (mirrors).
    """

    name: str
    options_path: str
    weights_path: str
    description: str
    training_data: str
    licence: str
    options: dict = None
    options_sha256: str = UNPINNED
    weights_sha256: str = UNPINNED
    weights_size: int = None
    hosts: tuple = ALLENNLP_HOSTS

    def urls(self, which):
        """The URLs of `"options"` or `"weights"`, in the order tried."""
        path = self.options_path if which == "options" else self.weights_path
        mirror = os.environ.get(MIRROR_ENV)
        hosts = (mirror,) if mirror else self.hosts
        return tuple(host.rstrip("/") + "/" + path for host in hosts)

    @property
    def config(self):
        """The `BiLMConfig` of the recorded options, or None."""
        if self.options is None:
            return None
        return BiLMConfig.from_options_json(self.options)

    @property
    def parameter_count(self):
        """Weights in the HDF5 (computed from the options), or None."""
        config = self.config
        return None if config is None else parameter_count(config)


def parameter_count(config):
    """Number of weights a biLM with `config` has (what the HDF5 holds).

    `261 * d` character rows (the padding row is implicit), one
    `w * d * n + n` per convolution, `2 * (F^2 + F)` per highway layer
    (`F = sum(n)`), `F * P + P` for the projection, and per direction and
    LSTM layer `2P * 4H + 4H + H * P` (input+recurrent kernel, bias,
    projection). No softmax.
    """
    d = config.char_embedding_dim
    width = config.num_filters
    proj, units = config.projection_dim, config.lstm_units
    total = (char_vocab.NUM_CHARACTERS - 1) * d
    total += sum(w * d * n + n for w, n in config.filters)
    total += config.num_highway_layers * 2 * (width * width + width)
    total += width * proj + proj
    lstm = 2 * proj * 4 * units + 4 * units + units * proj
    total += 2 * config.num_layers * lstm
    return total


def _allennlp_options(units, proj, highway):
    return {
        "lstm": {
            "use_skip_connections": True,
            "projection_dim": proj,
            "cell_clip": 3,
            "proj_clip": 3,
            "dim": units,
            "n_layers": 2,
        },
        "char_cnn": {
            "activation": "relu",
            "filters": [
                [1, 32],
                [2, 32],
                [3, 64],
                [4, 128],
                [5, 256],
                [6, 512],
                [7, 1024],
            ],
            "n_highway": highway,
            "embedding": {"dim": 16},
            "n_characters": 262,
            "max_characters_per_token": 50,
        },
    }


_ONE_BILLION = (
    "1 Billion Word Benchmark (~800M tokens of news, Chelba et al. 2013)"
)
_ALLENNLP_LICENCE = "Apache-2.0 (AllenNLP)"
_CONTRIBUTED_LICENCE = "not stated (contributed to AllenNLP's page)"


def _english(name, stem, units, proj, highway, description, data):
    return PublishedModel(
        name=name,
        options_path=f"{stem}/elmo_{stem}_options.json",
        weights_path=f"{stem}/elmo_{stem}_weights.hdf5",
        description=description,
        training_data=data,
        licence=_ALLENNLP_LICENCE,
        options=_allennlp_options(units, proj, highway),
    )


PUBLISHED_PRESETS = {
    model.name: model
    for model in (
        _english(
            "elmo_2x1024_en",
            "2x1024_128_2048cnn_1xhighway",
            1024,
            128,
            1,
            "AllenNLP small English ELMo (2x1024_128_2048cnn_1xhighway)",
            _ONE_BILLION,
        ),
        _english(
            "elmo_2x2048_en",
            "2x2048_256_2048cnn_1xhighway",
            2048,
            256,
            1,
            "AllenNLP medium English ELMo (2x2048_256_2048cnn_1xhighway)",
            _ONE_BILLION,
        ),
        _english(
            "elmo_2x4096_en",
            "2x4096_512_2048cnn_2xhighway",
            4096,
            512,
            2,
            "AllenNLP original English ELMo (2x4096_512_2048cnn_2xhighway)",
            _ONE_BILLION,
        ),
        _english(
            "elmo_2x4096_5.5b_en",
            "2x4096_512_2048cnn_2xhighway_5.5B",
            4096,
            512,
            2,
            "AllenNLP original English ELMo, 5.5B tokens",
            "Wikipedia (1.9B tokens) + WMT 2008-2012 monolingual news crawl "
            "(3.6B tokens)",
        ),
        PublishedModel(
            name="elmo_2x4096_pubmed_en",
            options_path="contributed/pubmed/"
            "elmo_2x4096_512_2048cnn_2xhighway_options.json",
            weights_path="contributed/pubmed/"
            "elmo_2x4096_512_2048cnn_2xhighway_weights_PubMed_only.hdf5",
            description="Contributed biomedical English ELMo (original "
            "architecture)",
            training_data="PubMed abstracts",
            licence=_CONTRIBUTED_LICENCE,
            options=_allennlp_options(4096, 512, 2),
        ),
        PublishedModel(
            name="elmo_pt_wikipedia",
            options_path="contributed/pt/wikipedia/options.json",
            weights_path="contributed/pt/wikipedia/elmo_pt_weights.hdf5",
            description="Contributed Portuguese ELMo (Wikipedia)",
            training_data="Portuguese Wikipedia",
            licence=_CONTRIBUTED_LICENCE,
        ),
        PublishedModel(
            name="elmo_pt_brwac",
            options_path="contributed/pt/brwac/options.json",
            weights_path="contributed/pt/brwac/elmo_pt_weights_dgx1.hdf5",
            description="Contributed Brazilian Portuguese ELMo (brWaC)",
            training_data="brWaC, the Brazilian Portuguese Web as Corpus",
            licence=_CONTRIBUTED_LICENCE,
        ),
    )
}

# AllenNLP's own spellings resolve silently: they name weights unambiguously.
ALIASES = {
    "elmo_2x1024_128_2048cnn_1xhighway": "elmo_2x1024_en",
    "elmo_2x2048_256_2048cnn_1xhighway": "elmo_2x2048_en",
    "elmo_2x4096_512_2048cnn_2xhighway": "elmo_2x4096_en",
    "elmo_2x4096_512_2048cnn_2xhighway_5.5B": "elmo_2x4096_5.5b_en",
}

# Architecture names of BiLMConfig.from_architecture that users also call
# AllenNLP's trained models by: the published name to suggest instead.
ARCHITECTURE_TWINS = {
    "small": "elmo_2x1024_en",
    "medium": "elmo_2x2048_en",
    "original": "elmo_2x4096_en",
}


def register_preset(model):
    """Adds (or replaces) a `PublishedModel`, e.g. your own hosted model."""
    expected = "keras_elmo.presets.published.PublishedModel"
    check_instance("model", model, PublishedModel, expected)
    PUBLISHED_PRESETS[model.name] = model


def unregister_preset(name):
    PUBLISHED_PRESETS.pop(name, None)


def find_published(name):
    """The `PublishedModel` for a name or an AllenNLP spelling; or None."""
    if not isinstance(name, str):
        return None
    return PUBLISHED_PRESETS.get(ALIASES.get(name, name))
