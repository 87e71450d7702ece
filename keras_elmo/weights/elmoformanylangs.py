"""The ELMoForManyLangs model folder: detection, config and weights.

The one owner of the format (HIT-SCIR, PyPI `elmoformanylangs` 0.0.4):

    config.json          training options; `config_path` names the
                         architecture JSON (often an absolute path on the
                         authors' machine)
    <architecture>.json  {"encoder": {projection_dim, dim, n_layers,
                         cell_clip, proj_clip}, "token_embedder": {filters,
                         n_highway, char_dim, word_dim, activation,
                         max_characters_per_token}}
    char.dic, word.dic   `token\\tid` lines (word.dic when word_dim > 0)
    token_embedder.pkl   torch.save state dicts (`torch_pickle`)
    encoder.pkl

`read_folder` finds the architecture as the package does (the path, then
its basename in the folder, then the package's own two configs, which
`KNOWN_ARCHITECTURES` holds), reads the lexicons with the package's
parsing quirks and translates everything into `BiLMConfig` fields;
`elmoformanylangs_weights.load_weights` ports every tensor through one
declarative table with the layout hooks below. Maths: docs/ELMOFORMANYLANGS.md.

Package tensor -> ours (hook):

- `char_emb_layer.embedding.weight` [n, c] -> `char_cnn.char_embeddings`
  (ids shifted by +1; the padding row is an ordinary learned row);
- `word_emb_layer.embedding.weight` [V, w] -> `word_embedding.embeddings`;
- `convolutions.{i}.weight` [n, c, width] -> `char_cnn.kernels[i]`
  [width, c, n] (transpose); `.bias` -> `char_cnn.biases[i]`;
- `highways._layers.{k}.weight` [2D, D], `.bias` [2D]: rows `:D` the
  transform (transposed), rows `D:` the input gate `g`, whose negation is
  our carry gate (AllenNLP's `g x + (1 - g) f` = bilm-tf's `c f + (1 - c)
  x` with `c = 1 - g`);
- `projection.weight` [P, w + F] -> `token_projection.kernel` (transpose;
  input `[word; char]`), `.bias`;
- `{forward,backward}_layer_{l}.input_linearity.weight`,
  `.state_linearity.weight` [4H, P] -> `bilstm.kernels[l][d]`,
  `recurrent_kernels[l][d]` (transpose; gate blocks i f g o -> i g f o);
  `.state_linearity.bias` -> `bilstm.biases[l][d]` (same reorder, minus
  the forget bias 1.0 that our cell adds at run time);
  `.state_projection.weight` [P, H] -> `projection_kernels[l][d]`.
"""

import dataclasses
import json
import os

from keras_elmo.text import char_vocab
from keras_elmo.text import unicode_lexicon
from keras_elmo.weights import elmoformanylangs_configs
from keras_elmo.weights.torch_pickle import read_state_dict

CONFIG = "config.json"
CHAR_DIC = "char.dic"
WORD_DIC = "word.dic"
TOKEN_EMBEDDER = "token_embedder.pkl"
ENCODER = "encoder.pkl"
KNOWN_ARCHITECTURES = elmoformanylangs_configs.KNOWN_ARCHITECTURES

# The package's specials. Its batching code reads `bow_id, eow_id =
# char2id['<eow>'], char2id['<bow>']`: the begin-of-word slot holds the
# `<eow>` character and the end-of-word slot `<bow>`. Trained that way,
# the models need it, so our `bow` is their `<eow>` and vice versa.
CHAR_SPECIAL_ENTRIES = {
    "bow": "<eow>",
    "eow": "<bow>",
    "oov": "<oov>",
    "pad": "<pad>",
    "bos": "<bos>",
    "eos": "<eos>",
}
WORD_SPECIAL_ENTRIES = {"oov": "<oov>", "pad": "<pad>"}


def is_elmoformanylangs_folder(path):
    """True for a folder with `config.json` (naming a `config_path`),
    `char.dic`, `token_embedder.pkl` and `encoder.pkl`."""
    path = os.fspath(path)
    names = (CONFIG, CHAR_DIC, TOKEN_EMBEDDER, ENCODER)
    if not os.path.isdir(path) or not all(
        os.path.isfile(os.path.join(path, n)) for n in names
    ):
        return False
    try:
        with open(os.path.join(path, CONFIG), encoding="utf-8") as f:
            options = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(options, dict) and "config_path" in options


@dataclasses.dataclass
class FolderModel:
    """What `read_folder` found: config fields, weights, provenance."""

    folder: str
    architecture: dict
    architecture_source: str
    config_fields: dict
    token_embedder: dict
    encoder: dict


def read_folder(folder):
    """Reads an ELMoForManyLangs folder into a `FolderModel`.

    Raises:
        FileNotFoundError: the folder or one of its files is missing.
        ValueError: a file is malformed or describes a model this
            converter does not reproduce (the message says which).
    """
    folder = os.fspath(folder)
    if not os.path.isdir(folder):
        raise FileNotFoundError(
            f"ELMoForManyLangs folder {folder!r} does not exist."
        )
    for name in (CONFIG, CHAR_DIC, TOKEN_EMBEDDER, ENCODER):
        if not os.path.isfile(os.path.join(folder, name)):
            found = sorted(os.listdir(folder))
            raise FileNotFoundError(
                f"{folder!r} is not an ELMoForManyLangs model folder: "
                f"{name} is missing (expected config.json, char.dic, "
                f"[word.dic,] token_embedder.pkl, encoder.pkl; found "
                f"{found})."
            )
    architecture, source = find_architecture(folder)
    token_embedder = read_state_dict(os.path.join(folder, TOKEN_EMBEDDER))
    encoder = read_state_dict(os.path.join(folder, ENCODER))
    fields = config_fields(folder, architecture, source, token_embedder)
    return FolderModel(
        folder, architecture, source, fields, token_embedder, encoder
    )


def find_architecture(folder):
    """`(architecture dict, where it came from)`, found as the package's
    `Embedder.get_model` finds it: `config_path` (relative to the folder
    or absolute), then its basename in the folder, then the package's
    shipped configs by basename (`KNOWN_ARCHITECTURES`)."""
    options = _read_json(os.path.join(folder, CONFIG))
    config_path = options.get("config_path")
    if not isinstance(config_path, str) or not config_path:
        raise ValueError(
            f"{os.path.join(folder, CONFIG)!r}: expected a `config_path` "
            f"string naming the architecture JSON, found {config_path!r}."
        )
    name = _basename(config_path)
    for candidate in (
        os.path.join(folder, config_path),
        os.path.join(folder, name),
    ):
        if os.path.isfile(candidate):
            return _read_json(candidate), candidate
    if name in KNOWN_ARCHITECTURES:
        return KNOWN_ARCHITECTURES[name], f"elmoformanylangs/configs/{name}"
    raise FileNotFoundError(
        f"ELMoForManyLangs folder {folder!r}: its config.json names "
        f"config_path {config_path!r}, which is neither in the folder nor "
        f"one of the package's configs ({sorted(KNOWN_ARCHITECTURES)}). "
        "Put that architecture JSON in the folder."
    )


def _basename(path):
    # Published paths may be Windows-style or POSIX; take the last part.
    return path.replace("\\", "/").rstrip("/").split("/")[-1]


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            value = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path!r} is not UTF-8 JSON: {e}") from e
    if not isinstance(value, dict):
        raise ValueError(f"{path!r}: expected a JSON object.")
    return value


def read_lexicon(path):
    """`{token: id}` exactly as the package reads a `.dic` file.

    `codecs.open(path, encoding="utf-8")` lines (split as
    `str.splitlines` splits), each `line.strip().split("\\t")`; a line
    left with one field (its token was whitespace, which `strip()` ate)
    is the token U+3000, the ideographic space. Later lines win.
    """
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"Lexicon {path!r} is not UTF-8: {e}") from None
    lexicon = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, "\u3000")
        if len(fields) != 2 or not fields[1].strip().lstrip("-").isdigit():
            raise ValueError(
                f"Lexicon {path!r}, line {number}: expected `token<TAB>id`, "
                f"found {line!r:.80}."
            )
        lexicon[fields[0]] = int(fields[1])
    return lexicon


def _specials(path, lexicon, entries, optional=()):
    ids = {}
    for name, entry in entries.items():
        if entry not in lexicon:
            raise ValueError(
                f"Lexicon {path!r} has no {entry!r} entry, which the "
                "package requires."
            )
        ids[name] = lexicon[entry]
    for name in optional:
        ids[name] = lexicon.get(f"<{name}>", ids["oov"])
    return ids


def config_fields(folder, architecture, source, token_embedder):
    """`BiLMConfig` keyword arguments for an ELMoForManyLangs model."""
    try:
        encoder = architecture["encoder"]
        embedder = architecture["token_embedder"]
        if encoder.get("name", "elmo").lower() != "elmo":
            raise ValueError("encoder.name must be 'elmo'")
        if embedder.get("name", "cnn").lower() != "cnn":
            raise ValueError("token_embedder.name must be 'cnn'")
        if int(embedder["char_dim"]) <= 0:
            raise ValueError("token_embedder.char_dim must be > 0")
        word_dim = int(embedder.get("word_dim", 0))
        fields = {
            "filters": tuple(tuple(f) for f in embedder["filters"]),
            "char_embedding_dim": int(embedder["char_dim"]),
            "num_highway_layers": int(embedder["n_highway"]),
            "activation": embedder.get("activation", "relu"),
            "projection_dim": int(encoder["projection_dim"]),
            "lstm_units": int(encoder["dim"]),
            "num_layers": int(encoder["n_layers"]),
            # The package clips only when the value is truthy.
            "cell_clip": float(encoder["cell_clip"] or 0) or None,
            "projection_clip": float(encoder["proj_clip"] or 0) or None,
            "use_skip_connections": True,
            "max_characters_per_token": int(
                embedder["max_characters_per_token"]
            ),
        }
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(
            f"ELMoForManyLangs architecture {source!r}: not a model this "
            f"converter reproduces (expected the 'elmo' encoder and 'cnn' "
            f"token embedder with char_dim > 0): {e!r}"
        ) from e
    _check_token_width(source, fields["max_characters_per_token"])
    chars_path = os.path.join(folder, CHAR_DIC)
    chars, table = _lexicon_and_rows(
        folder, chars_path, token_embedder, "char_emb_layer", ""
    )
    fields["char_lexicon"] = tuple(chars.items())
    fields["char_specials"] = _specials(chars_path, chars, CHAR_SPECIAL_ENTRIES)
    fields["n_characters"] = int(table.shape[0]) + 1
    if word_dim > 0:
        words_path = os.path.join(folder, WORD_DIC)
        if not os.path.isfile(words_path):
            raise FileNotFoundError(
                f"{folder!r}: word_dim is {word_dim} but word.dic is missing."
            )
        words, rows = _lexicon_and_rows(
            folder,
            words_path,
            token_embedder,
            "word_emb_layer",
            " (word_dim > 0)",
        )
        fields["word_lexicon"] = tuple(words.items())
        fields["word_specials"] = _specials(
            words_path, words, WORD_SPECIAL_ENTRIES, optional=("bos", "eos")
        )
        fields["word_embedding_dim"] = int(rows.shape[1])
        fields["word_vocab_size"] = int(rows.shape[0])
    for key in ("char_specials", "word_specials"):
        if key in fields:
            names = (
                unicode_lexicon.CHAR_SPECIALS
                if key == "char_specials"
                else unicode_lexicon.WORD_SPECIALS
            )
            fields[key] = tuple(fields[key][n] for n in names)
    return fields


def _check_token_width(source, width):
    """Refuses `max_characters_per_token` other than 50, naming why.

    The package takes any width `W` (tokens cut to `W - 2` code points);
    our character ids are 50 slots wide everywhere (inputs, SavedModel
    signatures), which both of the package's configs and every published
    model use.
    """
    if width != char_vocab.MAX_CHARS_PER_TOKEN:
        raise ValueError(
            f"ELMoForManyLangs architecture {source!r}: "
            f"max_characters_per_token is {width}; keras_elmo reproduces "
            f"only {char_vocab.MAX_CHARS_PER_TOKEN} (its character ids are "
            f"{char_vocab.MAX_CHARS_PER_TOKEN} slots wide; both of the "
            "package's configs and every published model use "
            f"{char_vocab.MAX_CHARS_PER_TOKEN})."
        )


def _lexicon_and_rows(folder, path, token_embedder, layer, why):
    """`(lexicon, embedding table)`: `path`'s lexicon and the rows of
    `token_embedder`'s `<layer>.embedding.weight`; a missing table names
    the file and the key (`why` says when it is needed)."""
    lexicon = read_lexicon(path)
    rows = token_embedder.get(f"{layer}.embedding.weight")
    if rows is None:
        raise ValueError(
            f"{os.path.join(folder, TOKEN_EMBEDDER)!r} has no "
            f"'{layer}.embedding.weight'{why}."
        )
    return lexicon, rows
