"""Published models distributed as `.zip` archives, by name.

The HIT-SCIR ELMoForManyLangs models (Che et al. 2018, the CoNLL 2018
shared task): 44 languages, each trained on 20 million words sampled from
the shared task's raw text (Wikipedia dump + Common Crawl), in the
ELMoForManyLangs format (its own Unicode character lexicon and word
vocabulary, `torch.save` state dicts), hosted by the NLPL vector
repository under IDs 136-179 of its repository 11. The list, IDs and
hosting are those of the ELMoForManyLangs README; the code is MIT
licensed and the README asks users to cite the authors and the NLPL
repository; the archives carry no licence file of their own
(`licence` says so). No sha256 was recorded (no network when they were
registered): `sha256=None` prints as "unpinned".

Names are `efml_<ISO 639-1 code>` (`efml_zh` is the traditional-Chinese
Wikipedia model; ISO 639-3 where no 639-1 code exists: `efml_cu` Old
Church Slavonic, `efml_grc` Ancient Greek). The URLs are tried under
`$KERAS_ELMO_PRESET_MIRROR` alone when it is set (a mirror laid out like
the repository), else under `NLPL_HOST`.
"""

import dataclasses
import os

from keras_elmo.presets.published import MIRROR_ENV

NLPL_HOST = "http://vectors.nlpl.eu/"
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
            `"allennlp"`), as `keras_elmo.presets.model_formats` names it.
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


def find_archive(name):
    """The `PublishedArchive` called `name`, or None."""
    return PUBLISHED_ARCHIVES.get(name) if isinstance(name, str) else None


def register_archive(archive):
    """Adds (or replaces) a `PublishedArchive`, e.g. your own mirror's."""
    if not isinstance(archive, PublishedArchive):
        raise TypeError(
            "`archive` must be a keras_elmo.presets.published_archives."
            f"PublishedArchive, received {type(archive).__name__}."
        )
    PUBLISHED_ARCHIVES[archive.name] = archive
