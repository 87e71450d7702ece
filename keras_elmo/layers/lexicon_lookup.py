"""`LexiconLookup`: the lexicon, its specials and hash table of an id layer.

Shared by `UnicodeCharacterIds` (a character lexicon) and `WordIds` (a
word lexicon): both check `(entry, id)` pairs and the ids of their
special entries (`SPECIAL_NAMES`) with
`keras_elmo.text.unicode_lexicon.check_lexicon`, look tokens up in one
`tf.lookup.StaticHashTable` (`lexicon_table`) that a SavedModel tracks
(`lookup_tables`), and serialize the same three settings.
"""

from keras_elmo.text import char_vocab
from keras_elmo.text import unicode_lexicon
from keras_elmo.text.lexicon_ops import lexicon_table


class LexiconLookup:
    """Mixin for a Keras layer that looks tokens up in a lexicon.

    Subclasses set `SPECIAL_NAMES` (e.g.
    `unicode_lexicon.CHAR_SPECIALS`); `get_config` adds
    `_lexicon_config()`. The constructor's arguments are the layers'
    (`lexicon`, `specials`, `max_characters_per_token`, and the standard
    `keras.layers.Layer` ones).
    """

    SPECIAL_NAMES = ()

    def __init__(
        self,
        lexicon,
        specials,
        max_characters_per_token=char_vocab.MAX_CHARS_PER_TOKEN,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.lexicon, self.specials = unicode_lexicon.check_lexicon(
            "lexicon", lexicon, specials, self.SPECIAL_NAMES
        )
        self.max_characters_per_token = int(max_characters_per_token)
        self.table = lexicon_table(self.lexicon)

    @property
    def lookup_tables(self):
        """The hash tables a SavedModel must track."""
        return [self.table]

    def _lexicon_config(self):
        return {
            "lexicon": [list(pair) for pair in self.lexicon],
            "specials": unicode_lexicon.specials_dict(
                self.specials, self.SPECIAL_NAMES
            ),
            "max_characters_per_token": self.max_characters_per_token,
        }
