"""The tables of models by name: Markdown for docs/PRESETS.md
(`keras-elmo presets --markdown`) and aligned columns for a terminal
(`keras-elmo presets`)."""

import os

from keras_elmo.config import BiLMConfig
from keras_elmo.presets import published


def _millions(count):
    return "?" if count is None else f"{count / 1e6:.1f}M"


def _architecture(config):
    if config is None:
        return "? (options not recorded)"
    return (
        f"{config.num_layers}x{config.lstm_units}, P={config.projection_dim}"
        f", {config.num_highway_layers} highway"
    )


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
    return "\n".join(rows) + "\n"


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
                _architecture(config),
                _millions(published.parameter_count(config)),
                "shipped",
                "8.5M tokens of English",
            )
        )
    for model in published.PUBLISHED_PRESETS.values():
        rows.append(
            (
                model.name,
                _architecture(model.config),
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
    return "\n".join(lines) + "\n"
