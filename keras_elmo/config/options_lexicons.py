"""Our `options.json` extension for models with their own lexicons.

A bilm-tf options file has no lexicon (characters are UTF-8 bytes). A
model with a Unicode character table and an optional word embedding
(converted from ELMoForManyLangs) adds one top-level section, which
bilm-tf and AllenNLP do not read (they cannot run such a model):

    "token_encoder": {
      "characters": "unicode_lexicon",
      "char_lexicon": "char_lexicon.json",       # beside options.json
      "char_specials": {"bow": 71, "eow": 70, "oov": 68, "pad": 69,
                        "bos": 66, "eos": 67},
      "word_lexicon": "word_lexicon.json",       # optional
      "word_specials": {"oov": 0, "pad": 3, "bos": 1, "eos": 2},
      "word_embedding_dim": 100,
      "word_vocab_size": 71000
    }

`char_cnn.n_characters` is then the character table's rows + 1. A
lexicon file is a UTF-8 JSON list of `[token, id]` pairs; an options
dict may also hold the lists inline. See docs/ELMOFORMANYLANGS.md.
"""

import json
import os

from keras_elmo.text import unicode_lexicon
from keras_elmo.utils.atomic import atomic_write

SECTION = "token_encoder"
CHAR_LEXICON_FILE = "char_lexicon.json"
WORD_LEXICON_FILE = "word_lexicon.json"


def read_section(options, base_dir, source):
    """`BiLMConfig` lexicon fields from `options["token_encoder"]`, or {}.

    Args:
        options: the options dict.
        base_dir: str or None, the folder of the options file (lexicon
            file names are relative to it).
        source: how messages name the file.
    """
    section = options.get(SECTION)
    if section is None:
        return {}
    if not isinstance(section, dict):
        raise ValueError(
            f"{source}: `{SECTION}` must be a JSON object, found "
            f"{section!r:.80}."
        )
    if section.get("characters") != "unicode_lexicon":
        raise ValueError(
            f"{source}: `{SECTION}.characters` is "
            f"{section.get('characters')!r}; expected 'unicode_lexicon'."
        )
    fields = {
        "char_lexicon": _lexicon(section, "char_lexicon", base_dir, source),
        "char_specials": _specials(
            section, "char_specials", unicode_lexicon.CHAR_SPECIALS, source
        ),
    }
    if section.get("word_lexicon") is not None:
        fields["word_lexicon"] = _lexicon(
            section, "word_lexicon", base_dir, source
        )
        fields["word_specials"] = _specials(
            section, "word_specials", unicode_lexicon.WORD_SPECIALS, source
        )
        fields["word_embedding_dim"] = section.get("word_embedding_dim", 0)
        fields["word_vocab_size"] = section.get("word_vocab_size", 0)
    return fields


def _lexicon(section, key, base_dir, source):
    value = section.get(key)
    if isinstance(value, list):
        return tuple(tuple(pair) for pair in value)
    if not isinstance(value, str):
        raise ValueError(
            f"{source}: `{SECTION}.{key}` must be a file name or a list of "
            f"[token, id] pairs, found {value!r:.80}."
        )
    if not os.path.isabs(value):
        if base_dir is None:
            raise ValueError(
                f"{source}: `{SECTION}.{key}` names the file {value!r}, "
                "relative to an options file; pass the options file's "
                "path, not its dict."
            )
        value = os.path.join(base_dir, value)
    if not os.path.isfile(value):
        raise FileNotFoundError(
            f"{source}: lexicon file {value!r} (`{SECTION}.{key}`) not found."
        )
    try:
        with open(value, encoding="utf-8") as f:
            pairs = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(
            f"Lexicon file {value!r} is not UTF-8 JSON: {e}"
        ) from e
    if not isinstance(pairs, list):
        raise ValueError(
            f"Lexicon file {value!r}: expected a JSON list of [token, id] "
            f"pairs, found {type(pairs).__name__}."
        )
    return tuple(
        tuple(pair) if isinstance(pair, list) else pair for pair in pairs
    )


def _specials(section, key, names, source):
    value = section.get(key)
    if not isinstance(value, dict):
        raise ValueError(
            f"{source}: `{SECTION}.{key}` must be an object with ids for "
            f"{list(names)}, found {value!r:.80}."
        )
    return value


def section_of(config, inline=True):
    """The `token_encoder` section of a `BiLMConfig`, or None (bytes).

    `inline=True` holds the lexicons as lists (a self-contained dict);
    `inline=False` names the files `write_lexicons` writes.
    """
    if not config.has_char_lexicon:
        return None
    section = {
        "characters": "unicode_lexicon",
        "char_lexicon": (
            [list(p) for p in config.char_lexicon]
            if inline
            else CHAR_LEXICON_FILE
        ),
        "char_specials": unicode_lexicon.specials_dict(
            config.char_specials, unicode_lexicon.CHAR_SPECIALS
        ),
    }
    if config.has_word_branch:
        section["word_lexicon"] = (
            [list(p) for p in config.word_lexicon]
            if inline
            else WORD_LEXICON_FILE
        )
        section["word_specials"] = unicode_lexicon.specials_dict(
            config.word_specials, unicode_lexicon.WORD_SPECIALS
        )
        section["word_embedding_dim"] = config.word_embedding_dim
        section["word_vocab_size"] = config.word_vocab_size
    return section


def write_lexicons(config, folder):
    """Writes the lexicon files of `config` into `folder` (atomically)."""
    files = [(CHAR_LEXICON_FILE, config.char_lexicon)]
    if config.has_word_branch:
        files.append((WORD_LEXICON_FILE, config.word_lexicon))
    for name, pairs in files:
        text = json.dumps([list(p) for p in pairs], ensure_ascii=False)
        with atomic_write(os.path.join(folder, name), "w") as f:
            f.write(text + "\n")
