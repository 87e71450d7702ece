"""The registry of published ELMo models, one declarative entry each: pairs
of files (`PUBLISHED_PRESETS`) and archives (`PUBLISHED_ARCHIVES`).

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

Published models distributed as `.zip` / `.tar.gz` archives, by name.

Three families, each entry with the evidence it was registered from (the
page or public code where its ID, URL and description were seen; see also
docs/PRESETS.md, "Where each archive entry comes from"). Nothing here was
downloaded when it was registered (no network then), so every `sha256` is
None and prints as "unpinned": the first download records its digest and
every later use is checked against it
(`keras_elmo.presets.archives`).

**ELMoForManyLangs** (`efml_<code>`): the HIT-SCIR ELMoForManyLangs
models (Che et al. 2018, the CoNLL 2018 shared task): 44 languages, each
trained on 20 million words sampled from the shared task's raw text
(Wikipedia dump + Common Crawl), in the ELMoForManyLangs format (its own
Unicode character lexicon and word vocabulary, `torch.save` state dicts),
hosted by the NLPL vector repository under IDs 136-179 of its repository
11. The list, IDs and
hosting are those of the ELMoForManyLangs README; the code is MIT
licensed and the README asks users to cite the authors and the NLPL
repository; the archives carry no licence file of their own
(`licence` says so).

Names are `efml_<ISO 639-1 code>` (`efml_zh` is the traditional-Chinese
Wikipedia model; ISO 639-3 where no 639-1 code exists: `efml_cu` Old
Church Slavonic, `efml_grc` Ancient Greek). The URLs are tried under
`$KERAS_ELMO_PRESET_MIRROR` alone when it is set (a mirror laid out like
the repository), else under `NLPL_HOST`.

**NLPL vector repository ELMo** (`nlpl_<code>_<corpus>_<ID>`): bilm-tf
models (`options.json` + `model.hdf5`, often `vocab.txt`, at the ZIP's
root, as simple_elmo's README describes them) under repository 20 (release
2.0, "which added BERT and ELMo models", wiki.nlpl.eu/index.php/
Vectors/home): NorELMo for Norwegian and the RusVectores models for
Russian. No licence is stated on the pages they were found on: `licence`
says so; check the repository's entry before redistributing.

**EMBEDDIA ELMo** (`embeddia_<code>`): Ulčar & Robnik-Šikonja 2020
(arXiv:1911.10049), seven languages on CLARIN.SI
(hdl.handle.net/11356/1277). Only the Slovenian file's URL was seen in
public material: a `.tar.gz` holding one folder, `slovenian/options.json`
+ `slovenian/slovenian-elmo-weights.hdf5`. The other six are not
registered (their file names were not confirmed): download them from the
record and pass the folder or archive by path.
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


NLPL_HOST = "http://vectors.nlpl.eu/"
CLARIN_SI_HOST = "https://www.clarin.si/repository/xmlui/bitstream/handle/"
EFML_LICENCE = (
    "none stated in the archive (code MIT; cite Che et al. 2018 and the "
    "NLPL repository)"
)
EFML_DATA = (
    "20M words of CoNLL 2018 shared-task raw text (Wikipedia + Common Crawl)"
)


@dataclasses.dataclass(frozen=True)
class PublishedArchive:
    """One published model shipped as a `.zip`.

    Args:
        name: str. The preset name (`BiLM.from_preset(name)`).
        path: str. The archive's path under the host.
        language: str. The language, in English.
        format: str. What the archive holds (`"elmoformanylangs"`,
            `"allennlp"`), as `keras_elmo.presets.sources` names it.
            The archive type (ZIP or tar) follows from `path`'s ending.
        source: str. Who trained and published it.
        training_data: str. The corpus, as its publisher describes it.
        licence: str. The licence the publisher states.
        sha256: str or None. The archive's digest, when recorded.
        hosts: tuple of base URLs tried in order.
    """

    name: str
    path: str
    language: str
    format: str
    source: str
    training_data: str
    licence: str
    sha256: str = None
    hosts: tuple = (NLPL_HOST,)

    def urls(self):
        """The archive's URLs, in the order tried."""
        mirror = os.environ.get(MIRROR_ENV)
        hosts = (mirror,) if mirror else self.hosts
        return tuple(host.rstrip("/") + "/" + self.path for host in hosts)

    @property
    def suffix(self):
        """`.tar.gz`, `.tgz` or `.zip`: how the cached copy is named."""
        for suffix in (".tar.gz", ".tgz"):
            if self.path.lower().endswith(suffix):
                return suffix
        return ".zip"


# (ISO code, language, NLPL ID): the ELMoForManyLangs README's table.
_EFML = (
    ("ar", "Arabic", 136),
    ("bg", "Bulgarian", 137),
    ("ca", "Catalan", 138),
    ("cs", "Czech", 139),
    ("cu", "Old Church Slavonic", 140),
    ("da", "Danish", 141),
    ("de", "German", 142),
    ("el", "Greek", 143),
    ("en", "English", 144),
    ("es", "Spanish", 145),
    ("et", "Estonian", 146),
    ("eu", "Basque", 147),
    ("fa", "Persian", 148),
    ("fi", "Finnish", 149),
    ("fr", "French", 150),
    ("ga", "Irish", 151),
    ("gl", "Galician", 152),
    ("grc", "Ancient Greek", 153),
    ("he", "Hebrew", 154),
    ("hi", "Hindi", 155),
    ("hr", "Croatian", 156),
    ("hu", "Hungarian", 157),
    ("id", "Indonesian", 158),
    ("it", "Italian", 159),
    ("ja", "Japanese", 160),
    ("ko", "Korean", 161),
    ("la", "Latin", 162),
    ("lv", "Latvian", 163),
    ("nl", "Dutch", 164),
    ("nb", "Norwegian Bokmål", 165),
    ("nn", "Norwegian Nynorsk", 166),
    ("pl", "Polish", 167),
    ("pt", "Portuguese", 168),
    ("ro", "Romanian", 169),
    ("ru", "Russian", 170),
    ("sk", "Slovak", 171),
    ("sl", "Slovene", 172),
    ("sv", "Swedish", 173),
    ("tr", "Turkish", 174),
    ("ug", "Uyghur", 175),
    ("uk", "Ukrainian", 176),
    ("ur", "Urdu", 177),
    ("vi", "Vietnamese", 178),
    ("zh", "Chinese (traditional, Wikipedia)", 179),
)

PUBLISHED_ARCHIVES = {
    f"efml_{code}": PublishedArchive(
        name=f"efml_{code}",
        path=f"repository/11/{nlpl_id}.zip",
        language=language,
        format="elmoformanylangs",
        source=f"HIT-SCIR ELMoForManyLangs (NLPL ID {nlpl_id})",
        training_data=EFML_DATA,
        licence=EFML_LICENCE,
    )
    for code, language, nlpl_id in _EFML
}

NLPL_LICENCE = "not stated where found (see the NLPL repository entry)"
NORELMO_PAGE = "https://wiki.nlpl.eu/Vectors/norlm/elmo"
RU_README = "https://github.com/vlarine/transformers-ru (README, ELMo)"

# (name, NLPL ID, language, training data, evidence). Repository 20 URLs
# were seen in public code for IDs 195, 196, 199, 212 (each beside the
# model's name or description); 210, 211, 217, 218 are listed with these
# descriptions on NORELMO_PAGE, and 218.zip is loaded by simple_elmo in
# public code (`get_nor_elmo(path="Vectors/218.zip")`).
_NLPL_ELMO = (
    (
        "nlpl_no_wiki_lemmas_210",
        210,
        "Norwegian",
        "NorELMo: lemmatized Norwegian Wikipedia, September 2020 dump, "
        "~160M words (UDPipe)",
        NORELMO_PAGE,
    ),
    (
        "nlpl_no_wiki_211",
        211,
        "Norwegian",
        "NorELMo: tokenized Norwegian Wikipedia, September 2020 dump, "
        "~160M words (UDPipe)",
        NORELMO_PAGE,
    ),
    (
        "nlpl_no_norelmo30_217",
        217,
        "Norwegian",
        "NorELMo30: the NorBERT corpus (Wikipedia + Norsk Aviskorpus), "
        "30k-word LM vocabulary",
        NORELMO_PAGE,
    ),
    (
        "nlpl_no_norelmo100_218",
        218,
        "Norwegian",
        "NorELMo100: the NorBERT corpus (Wikipedia + Norsk Aviskorpus), "
        "100k-word LM vocabulary",
        NORELMO_PAGE,
    ),
    (
        "nlpl_ru_wiki_rnc_195",
        195,
        "Russian",
        "RusVectores: Russian National Corpus + Russian Wikipedia, "
        "December 2018, tokens (ruwikiruscorpora_tokens_elmo_1024_2019)",
        RU_README,
    ),
    (
        "nlpl_ru_wiki_rnc_lemmas_196",
        196,
        "Russian",
        "RusVectores: Russian National Corpus + Russian Wikipedia, "
        "December 2018, lemmas (ruwikiruscorpora_lemmas_elmo_1024_2019)",
        RU_README,
    ),
    (
        "nlpl_ru_taiga_lemmas_199",
        199,
        "Russian",
        "RusVectores: Taiga corpus, December 2019, lemmas "
        "(taiga_lemmas_elmo_2048_2019)",
        RU_README,
    ),
    (
        "nlpl_ru_araneum_lemmas_212",
        212,
        "Russian",
        "RusVectores: Araneum corpus, lemmas (araneum_lemmas_elmo_2048_2020)",
        "public code that downloads repository/20/212.zip as "
        "araneum_lemmas_elmo_2048_2020",
    ),
)

EVIDENCE = {name: evidence for name, _, _, _, evidence in _NLPL_ELMO}

PUBLISHED_ARCHIVES.update(
    (
        name,
        PublishedArchive(
            name=name,
            path=f"repository/20/{nlpl_id}.zip",
            language=language,
            format="allennlp",
            source=f"NLPL vector repository (ID {nlpl_id})",
            training_data=data,
            licence=NLPL_LICENCE,
        ),
    )
    for name, nlpl_id, language, data, _ in _NLPL_ELMO
)

# EMBEDDIA: the URL is in public code ("need to download https://www.
# clarin.si/repository/xmlui/bitstream/handle/11356/1277/slovenian-elmo.
# tar.gz", beside `slovenian/slovenian-elmo-weights.hdf5`) and READMEs
# (`tar -xvzf slovenian-elmo.tar.gz; mv slovenian slovenian-elmo`).
PUBLISHED_ARCHIVES["embeddia_sl"] = PublishedArchive(
    name="embeddia_sl",
    path="11356/1277/slovenian-elmo.tar.gz",
    language="Slovenian",
    format="allennlp",
    source="EMBEDDIA (Ulčar & Robnik-Šikonja 2020), CLARIN.SI 11356/1277",
    training_data="Slovenian corpora of arXiv:1911.10049 (see the paper)",
    licence="not stated where found (see hdl.handle.net/11356/1277)",
    hosts=(CLARIN_SI_HOST,),
)
EVIDENCE["embeddia_sl"] = "https://hdl.handle.net/11356/1277 (public code)"


def find_archive(name):
    """The `PublishedArchive` called `name`, or None."""
    return PUBLISHED_ARCHIVES.get(name) if isinstance(name, str) else None


def register_archive(archive):
    """Adds (or replaces) a `PublishedArchive`, e.g. your own mirror's."""
    expected = "keras_elmo.presets.published.PublishedArchive"
    check_instance("archive", archive, PublishedArchive, expected)
    PUBLISHED_ARCHIVES[archive.name] = archive
