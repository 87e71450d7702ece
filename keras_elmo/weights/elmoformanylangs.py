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

Every file of a folder is untrusted, so it is checked before anything is
sized from it, and a refusal (`ELMoForManyLangsFileError`) names the file,
the key as the file spells it (`encoder.dim`) or the line, what was found
and what was expected:

- architecture values: integers within `ARCHITECTURE_LIMITS`, a wide
  margin past the largest published ELMo (`elmoformanylangs_configs`
  says which); names, activation and clips as the package takes them;
- lexicons: `token<TAB>id` lines, ids ASCII digits, each id below its
  embedding table's rows, the padding id no character's;
- weights: the parameter count the architecture and lexicons imply
  (`expected_parameters`) bounds each `.pkl` file's storages before they are
  read (twice that, plus 4096: torch may save a storage larger than the
  tensor viewing it), and the `.pkl` files must hold at least half of it, so a
  tiny file next to an absurd architecture is refused before a model is
  built.

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

The weight table (`weight_table`, `load_weights(bilm, model)`) names
every tensor of a `FolderModel`, the hook that converts it and the
variable it is assigned to.
"""

import dataclasses
import json
import os

import numpy as np

from keras_elmo.text import char_vocab
from keras_elmo.text import char_vocab as unicode_lexicon
from keras_elmo.weights import elmoformanylangs_configs
from keras_elmo.weights.torch_pickle import read_state_dict

CONFIG = "config.json"
CHAR_DIC = "char.dic"
WORD_DIC = "word.dic"
TOKEN_EMBEDDER = "token_embedder.pkl"
ENCODER = "encoder.pkl"
KNOWN_ARCHITECTURES = elmoformanylangs_configs.KNOWN_ARCHITECTURES
ARCHITECTURE_LIMITS = elmoformanylangs_configs.ARCHITECTURE_LIMITS
ELMoForManyLangsFileError = elmoformanylangs_configs.ELMoForManyLangsFileError
architecture_dims = elmoformanylangs_configs.architecture_dims
expected_parameters = elmoformanylangs_configs.expected_parameters

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
    dims = architecture_dims(architecture, source)
    lexicons = _read_lexicons(folder, dims)
    expected = expected_parameters(
        dims, *(len(lexicon) for lexicon, _ in lexicons)
    )
    token_embedder, encoder = (
        read_state_dict(os.path.join(folder, name), 2 * count + 4096)
        for name, count in zip((TOKEN_EMBEDDER, ENCODER), expected)
    )
    held = sum(a.size for d in (token_embedder, encoder) for a in d.values())
    if 2 * held + 4096 < sum(expected):
        raise ELMoForManyLangsFileError(
            f"ELMoForManyLangs architecture {source!r} implies "
            f"{sum(expected)} parameters (with the lexicons' sizes); "
            f"{TOKEN_EMBEDDER} and {ENCODER} in {folder!r} hold {held}. "
            "The architecture does not belong to these weights; no model "
            "was built.",
            source,
        )
    fields = config_fields(
        folder, architecture, source, token_embedder, lexicons=lexicons
    )
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
    is the token U+3000, the ideographic space. Later lines win. An id is
    ASCII digits (the package takes `int()` of anything; a negative id
    then fails in torch's embedding lookup, only when its token comes).

    Raises:
        ELMoForManyLangsFileError: naming the file and line.
    """
    return _read_lexicon_lines(path)[0]


def _read_lexicon_lines(path):
    """`({token: id}, {token: line number})` of a `.dic` file."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise ELMoForManyLangsFileError(
            f"Lexicon {path!r}, line {line}: not UTF-8 ({e.reason} at "
            f"byte {e.start}); expected UTF-8 `token<TAB>id` lines.",
            path,
            line=line,
        ) from None
    lexicon, lines = {}, {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, "\u3000")
        if len(fields) != 2:
            raise ELMoForManyLangsFileError(
                f"Lexicon {path!r}, line {number}: expected `token<TAB>id`, "
                f"found {line!r:.80}.",
                path,
                line=number,
            )
        text_id = fields[1].strip()
        if not (text_id.isascii() and text_id.isdigit()):
            raise ELMoForManyLangsFileError(
                f"Lexicon {path!r}, line {number}: expected `token<TAB>id`, "
                f"the id an integer >= 0 in ASCII digits, found "
                f"{line!r:.80}.",
                path,
                line=number,
            )
        lexicon[fields[0]] = int(text_id)
        lines[fields[0]] = number
    return lexicon, lines


def _read_lexicons(folder, dims):
    """`[(chars, lines), (words, lines) or ({}, {})]` of a folder."""
    lexicons = [_read_lexicon_lines(os.path.join(folder, CHAR_DIC))]
    if dims["word_dim"] > 0:
        words_path = os.path.join(folder, WORD_DIC)
        if not os.path.isfile(words_path):
            raise FileNotFoundError(
                f"{folder!r}: word_dim is {dims['word_dim']} but word.dic "
                "is missing."
            )
        lexicons.append(_read_lexicon_lines(words_path))
    else:
        lexicons.append(({}, {}))
    return lexicons


def _check_ids(path, lexicon, lines, rows, table):
    """Every id of `path` a row of its embedding `table` (`rows` rows)."""
    for token, i in lexicon.items():
        if i >= rows:
            raise ELMoForManyLangsFileError(
                f"Lexicon {path!r}, line {lines[token]}: token {token!r:.40} "
                f"has id {i}; expected an id below {rows}, the rows of "
                f"{table}.",
                path,
                line=lines[token],
            )


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


def config_fields(folder, architecture, source, token_embedder, lexicons=None):
    """`BiLMConfig` keyword arguments for an ELMoForManyLangs model.

    `lexicons`: what `read_folder` already read (else the folder's `.dic`
    files are read here). Raises `ELMoForManyLangsFileError` (a
    `ValueError`) naming the file and the key or line at fault.
    """
    dims = architecture_dims(architecture, source)
    encoder = architecture["encoder"]
    embedder = architecture["token_embedder"]

    def refuse(key, found, expected):
        raise ELMoForManyLangsFileError(
            f"ELMoForManyLangs architecture {source!r}: `{key}` is "
            f"{found!r:.80}; expected {expected}. keras_elmo reproduces "
            "the package's 'elmo' encoder over its 'cnn' token embedder.",
            source,
            key,
        )

    for section, key, name in (
        (encoder, "encoder.name", "elmo"),
        (embedder, "token_embedder.name", "cnn"),
    ):
        value = section.get(key.split(".")[1], name)
        if not isinstance(value, str) or value.lower() != name:
            refuse(key, value, repr(name))
    activation = embedder.get("activation", "relu")
    if activation not in ("relu", "tanh"):
        refuse("token_embedder.activation", activation, "'relu' or 'tanh'")
    clips = {}
    for key in ("cell_clip", "proj_clip"):
        value = encoder.get(key)
        # The package clips only when the value is truthy.
        if value is None or value is False or value == 0:
            clips[key] = None
        elif (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and 0 < value < float("inf")
        ):
            clips[key] = float(value)
        else:
            refuse(f"encoder.{key}", value, "a number > 0, 0 or null")
    width = embedder.get("max_characters_per_token")
    if not isinstance(width, int) or isinstance(width, bool):
        refuse(
            "token_embedder.max_characters_per_token",
            width,
            str(char_vocab.MAX_CHARS_PER_TOKEN),
        )
    _check_token_width(source, width)
    fields = {
        "filters": dims["filters"],
        "char_embedding_dim": dims["char_dim"],
        "num_highway_layers": dims["n_highway"],
        "activation": activation,
        "projection_dim": dims["projection_dim"],
        "lstm_units": dims["dim"],
        "num_layers": dims["n_layers"],
        "cell_clip": clips["cell_clip"],
        "projection_clip": clips["proj_clip"],
        "use_skip_connections": True,
        "max_characters_per_token": width,
    }
    if lexicons is None:
        lexicons = _read_lexicons(folder, dims)
    (chars, char_lines), (words, word_lines) = lexicons
    chars_path = os.path.join(folder, CHAR_DIC)
    table = _table(folder, token_embedder, "char_emb_layer", "")
    _check_ids(
        chars_path,
        chars,
        char_lines,
        table.shape[0],
        f"{TOKEN_EMBEDDER}'s char_emb_layer.embedding.weight",
    )
    fields["char_lexicon"] = tuple(chars.items())
    fields["char_specials"] = _specials(chars_path, chars, CHAR_SPECIAL_ENTRIES)
    pad = fields["char_specials"]["pad"]
    for token, i in chars.items():
        if i == pad and len(token) == 1:
            raise ELMoForManyLangsFileError(
                f"Lexicon {chars_path!r}, line {char_lines[token]}: "
                f"character {token!r} has id {i}, the id of "
                f"{CHAR_SPECIAL_ENTRIES['pad']!r}; expected the padding id "
                "to be no character's (the char-CNN counts a token's "
                "characters as its non-padding slots).",
                chars_path,
                line=char_lines[token],
            )
    fields["n_characters"] = int(table.shape[0]) + 1
    if dims["word_dim"] > 0:
        words_path = os.path.join(folder, WORD_DIC)
        rows = _table(
            folder, token_embedder, "word_emb_layer", " (word_dim > 0)"
        )
        _check_ids(
            words_path,
            words,
            word_lines,
            rows.shape[0],
            f"{TOKEN_EMBEDDER}'s word_emb_layer.embedding.weight",
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


def _table(folder, token_embedder, layer, why):
    """`token_embedder`'s 2-D `<layer>.embedding.weight`; a missing or
    misshapen table names the file and the key (`why` says when it is
    needed)."""
    key = f"{layer}.embedding.weight"
    rows = token_embedder.get(key)
    path = os.path.join(folder, TOKEN_EMBEDDER)
    if rows is None:
        raise ELMoForManyLangsFileError(
            f"{path!r} has no {key!r}{why}.", path, key
        )
    if rows.ndim != 2 or rows.shape[0] == 0:
        raise ELMoForManyLangsFileError(
            f"{path!r}: {key!r} has shape {rows.shape}; expected a table "
            "[rows, dim] with rows > 0.",
            path,
            key,
        )
    return rows


# The package's LSTM gate blocks i, f, g, o; ours (TensorFlow's) i, j, f, o.
_GATES_TO_OURS = (0, 2, 1, 3)


def _transpose(a):
    return np.ascontiguousarray(a.T)


def _conv(a):
    # torch Conv1d [out, in, width] -> ours [width, in, out]
    return np.ascontiguousarray(np.transpose(a, (2, 1, 0)))


def _gate_columns(a):
    """[..., 4H] in the package's gate order -> ours (i, j=g, f, o)."""
    blocks = np.split(a, 4, axis=-1)
    return np.concatenate([blocks[k] for k in _GATES_TO_OURS], axis=-1)


def _lstm_kernel(a):
    return _gate_columns(a.T)


def _lstm_bias(a):
    # The package's bias includes the forget bias; ours adds 1.0 at run
    # time (TensorFlow's LSTMCell, and the bilm-tf HDF5 we also write).
    bias = _gate_columns(a).copy()
    units = bias.shape[-1] // 4
    bias[2 * units : 3 * units] -= 1.0
    return bias


def _half(a, part, negate=False):
    """Rows (or entries) `part` of a `[2D, ...]` highway tensor: 0 the
    transform, 1 the gate `g` on the input, whose carry is ours with the
    sign flipped (`g x + (1 - g) f = c f + (1 - c) x`, `c = 1 - g =
    sigmoid(-(x W_g + b_g))`)."""
    value = np.split(a, 2, axis=0)[part]
    value = value.T if value.ndim == 2 else value
    return np.ascontiguousarray(-value if negate else value)


@dataclasses.dataclass(frozen=True)
class TorchPort:
    """One table row: a Keras variable (or a direction slice) <- a tensor."""

    keras_variable: object
    file: str
    key: str
    hook: object = None
    direction: int = None


def weight_table(bilm):
    """`[TorchPort]` for every weight of an ELMoForManyLangs `BiLM`."""
    cnn, te = bilm.char_cnn, TOKEN_EMBEDDER
    table = [
        TorchPort(cnn.char_embeddings, te, "char_emb_layer.embedding.weight")
    ]
    if bilm.word_embedding is not None:
        table.append(
            TorchPort(
                bilm.word_embedding.embeddings,
                te,
                "word_emb_layer.embedding.weight",
            )
        )
    for i, (kernel, bias) in enumerate(zip(cnn.kernels, cnn.biases)):
        table.append(TorchPort(kernel, te, f"convolutions.{i}.weight", _conv))
        table.append(TorchPort(bias, te, f"convolutions.{i}.bias"))
    for k, block in enumerate(bilm.highway.blocks):
        key = f"highways._layers.{k}"
        for suffix, name in (("weight", "kernel"), ("bias", "bias")):
            table.append(
                TorchPort(
                    block[f"transform_{name}"],
                    te,
                    f"{key}.{suffix}",
                    lambda a: _half(a, 0),
                )
            )
            table.append(
                TorchPort(
                    block[f"carry_{name}"],
                    te,
                    f"{key}.{suffix}",
                    lambda a: _half(a, 1, negate=True),
                )
            )
    dense = bilm.token_projection
    table.append(TorchPort(dense.kernel, te, "projection.weight", _transpose))
    table.append(TorchPort(dense.bias, te, "projection.bias"))
    lstm = bilm.bilstm
    for layer in range(bilm.config.num_layers):
        for d, side in enumerate(("forward", "backward")):
            cell = f"{side}_layer_{layer}"
            for variable, key, hook in (
                (lstm.kernels, "input_linearity.weight", _lstm_kernel),
                (
                    lstm.recurrent_kernels,
                    "state_linearity.weight",
                    _lstm_kernel,
                ),
                (lstm.biases, "state_linearity.bias", _lstm_bias),
                (
                    lstm.projection_kernels,
                    "state_projection.weight",
                    _transpose,
                ),
            ):
                table.append(
                    TorchPort(
                        variable[layer], ENCODER, f"{cell}.{key}", hook, d
                    )
                )
    return table


def load_weights(bilm, model):
    """Assigns a `FolderModel`'s tensors to `bilm` (built from its
    `config_fields`). Every tensor is checked first (present, the shape
    the model expects after its hook, finite); nothing is assigned until
    all are, and every tensor of the two files must be used."""
    files = {TOKEN_EMBEDDER: model.token_embedder, ENCODER: model.encoder}
    used = {name: set() for name in files}
    values = []
    for port in weight_table(bilm):
        label = f"{os.path.join(model.folder, port.file)!r}, {port.key!r}"
        if port.key not in files[port.file]:
            raise ValueError(f"ELMoForManyLangs tensor {label} is missing.")
        used[port.file].add(port.key)
        # In the variable's precision: a float64 model's `b - 1` (the LSTM
        # bias hook) is then exact, not rounded to float32 first.
        precision = np.dtype(port.keras_variable.dtype)
        if precision not in (np.float32, np.float64):
            precision = np.float32
        array = np.asarray(files[port.file][port.key], precision)
        if port.hook is not None:
            array = port.hook(array)
        expected = tuple(port.keras_variable.shape)
        if port.direction is not None:
            expected = expected[1:]
        if tuple(array.shape) != expected:
            raise ValueError(
                f"ELMoForManyLangs tensor {label}: expected shape "
                f"{expected} (from the architecture), found "
                f"{tuple(array.shape)} after its layout change."
            )
        if not np.all(np.isfinite(array)):
            raise ValueError(f"ELMoForManyLangs tensor {label} is not finite.")
        values.append((port, array))
    for name, state in files.items():
        extra = sorted(set(state) - used[name])
        if extra:
            raise ValueError(
                f"{os.path.join(model.folder, name)!r} holds tensors this "
                f"converter does not map: {extra[:5]}."
            )
    for port, array in values:
        variable = port.keras_variable
        if port.direction is None:
            variable.assign(array)
        else:
            value = np.array(variable.numpy())
            value[port.direction] = array
            variable.assign(value)
