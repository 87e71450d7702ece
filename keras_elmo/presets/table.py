"""The tables of models by name: Markdown for docs/PRESETS.md
(`keras-elmo presets --markdown`) and aligned columns for a terminal
(`keras-elmo presets`)."""

import os
import textwrap

from keras_elmo.config import BiLMConfig
from keras_elmo.presets import published


def _millions(count):
    return "?" if count is None else f"{count / 1e6:.1f}M"


def _lstm(config):
    return f"{config.num_layers}x{config.lstm_units}, P={config.projection_dim}"


def _architecture(config, short=False):
    """`2x1024, P=128, 1 highway, 2048 char filters`; `short` (the
    terminal's): `2x1024, P=128, 2048cnn, 1hw`."""
    if config is None:
        return "? (options not recorded)"
    if short:
        return (
            f"{_lstm(config)}, {config.num_filters}cnn, "
            f"{config.num_highway_layers}hw"
        )
    return (
        f"{_lstm(config)}, {config.num_highway_layers} highway, "
        f"{config.num_filters} char filters"
    )


def _configs():
    """`(name, BiLMConfig)` of every shipped and published model whose
    options are known, in the tables' order."""
    from keras_elmo.presets import available_presets
    from keras_elmo.presets import preset_dir

    found = [
        (
            name,
            BiLMConfig.from_options_json(
                os.path.join(preset_dir(name), "options.json")
            ),
        )
        for name in available_presets()
    ]
    found += [
        (model.name, model.config)
        for model in published.PUBLISHED_PRESETS.values()
        if model.config is not None
    ]
    return found


def _highway(config):
    width = config.num_filters
    return config.num_highway_layers * 2 * (width * width + width)


def same_lstm_notes():
    """Why two models of the same biLSTM shape differ in size: one line
    per pair whose character CNN differs. With `F` filters in total, the
    CNN and its highway layers hold `sum_k w_k * d * n_k + n_k` and
    `2 * (F^2 + F)` weights per highway layer (`published.
    parameter_count`), so the filters alone can change the count by
    millions; the note says how much of it the highway layers hold."""
    notes, seen = [], set()
    configs = _configs()
    for i, (name, config) in enumerate(configs):
        for other, other_config in configs[i + 1 :]:
            if (_lstm(config), config.num_highway_layers) != (
                _lstm(other_config),
                other_config.num_highway_layers,
            ):
                continue
            if config.filters == other_config.filters or other in seen:
                continue
            seen.add(other)
            widths = [w for w, _ in config.filters]
            other_widths = [w for w, _ in other_config.filters]
            count = published.parameter_count(config)
            other_count = published.parameter_count(other_config)
            highway = abs(_highway(config) - _highway(other_config))
            notes.append(
                f"`{name}` and `{other}` share the biLSTM ({_lstm(config)}); "
                f"their character CNNs differ: {config.num_filters} filters "
                f"of widths {min(widths)}-{max(widths)} against "
                f"{other_config.num_filters} of widths "
                f"{min(other_widths)}-{max(other_widths)}, hence "
                f"{_millions(count)} against {_millions(other_count)} "
                f"weights ({_millions(highway)} of the "
                f"{_millions(abs(count - other_count))} difference in the "
                "highway layers, 2 * (F^2 + F) weights each for F filters)."
            )
    return notes


def _pin(sha):
    return "unpinned" if sha is None else f"`{sha[:12]}...`"


def presets_table(archives=True):
    """The table, one row per shipped and published preset, as Markdown.

    `archives=False` leaves out the published archives (the 44
    ELMoForManyLangs languages, NLPL and EMBEDDIA ELMo), for the README's
    short table. Parameter
    counts are computed from each model's recorded options
    (`published.parameter_count`); the URLs are the first host tried
    (`published.ALLENNLP_HOSTS` lists the mirrors).
    """
    from keras_elmo.presets import available_presets
    from keras_elmo.presets import preset_dir

    rows = [
        "| Name | Architecture | Parameters | Training data | Licence "
        "| sha256 (options / weights) | Options, weights |",
        "|---|---|---|---|---|---|---|",
    ]
    for name in available_presets():
        config = BiLMConfig.from_options_json(
            os.path.join(preset_dir(name), "options.json")
        )
        rows.append(
            f"| `{name}` | {_architecture(config)} | "
            f"{_millions(published.parameter_count(config))} | "
            "8.5M tokens of English (see its MODEL_CARD.md) | "
            "shipped in the package, offline | in the package | "
            f"`keras_elmo/presets/{name}/` |"
        )
    for model in published.PUBLISHED_PRESETS.values():
        config = model.config
        options_url, weights_url = (
            model.urls("options")[0],
            model.urls("weights")[0],
        )
        rows.append(
            f"| `{model.name}` | {_architecture(config)} | "
            f"{_millions(model.parameter_count)} | {model.training_data} | "
            f"{model.licence} | {_pin(model.options_sha256)} / "
            f"{_pin(model.weights_sha256)} | [options]({options_url}), "
            f"[weights]({weights_url}) |"
        )
    for archive in published.PUBLISHED_ARCHIVES.values() if archives else ():
        rows.append(
            f"| `{archive.name}` | {archive.language}, {archive.format} | ? "
            f"| {archive.training_data} | {archive.licence} | "
            f"{_pin(archive.sha256)} | "
            f"[{archive.suffix.lstrip('.')}]({archive.urls()[0]}) |"
        )
    notes = "".join(f"\n{note}\n" for note in same_lstm_notes())
    return "\n".join(rows) + "\n" + notes


def _cached(name, archive_suffix=None):
    """ "yes" when a verified copy of `name` is in the download cache (for
    an archive: `CACHE/<name><archive_suffix>`)."""
    from keras_elmo.presets import download

    root = download.cache_root()
    if archive_suffix:
        path = os.path.join(root, name + archive_suffix)
        return "yes" if os.path.isfile(path) else "no"
    folder = os.path.join(root, name)
    return "yes" if download.read_stamp(folder) is not None else "no"


def presets_rows():
    """`(name, architecture, parameters, cached, training data)` per
    preset, for the terminal table."""
    from keras_elmo.presets import available_presets
    from keras_elmo.presets import preset_dir

    rows = []
    for name in available_presets():
        config = BiLMConfig.from_options_json(
            os.path.join(preset_dir(name), "options.json")
        )
        rows.append(
            (
                name,
                _architecture(config, short=True),
                _millions(published.parameter_count(config)),
                "shipped",
                "8.5M tokens of English",
            )
        )
    for model in published.PUBLISHED_PRESETS.values():
        rows.append(
            (
                model.name,
                _architecture(model.config, short=True),
                _millions(model.parameter_count),
                _cached(model.name),
                model.training_data,
            )
        )
    for archive in published.PUBLISHED_ARCHIVES.values():
        rows.append(
            (
                archive.name,
                archive.format,
                "?",
                _cached(archive.name, archive.suffix),
                f"{archive.language}: {archive.training_data}",
            )
        )
    return rows


def terminal_table(width=100):
    """The presets as aligned columns that fit `width` characters (the
    training-data column is cut with "..." when needed)."""
    header = ("Name", "Architecture", "Params", "Cached", "Training data")
    rows = [header] + presets_rows()
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    used = sum(widths) + 2 * 4
    last = max(width - used, 24)
    lines = []
    for row in rows:
        data = row[4] if len(row[4]) <= last else row[4][: last - 3] + "..."
        cells = [c.ljust(w) for c, w in zip(row[:4], widths)] + [data]
        lines.append("  ".join(cells).rstrip())
    for note in same_lstm_notes():
        lines.append("")
        lines.extend(textwrap.wrap(note.replace("`", ""), width=width))
    return "\n".join(lines) + "\n"
