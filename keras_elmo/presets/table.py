"""The Markdown table of models by name (`keras-elmo presets`, README)."""

import os

from keras_elmo.config import BiLMConfig
from keras_elmo.presets import published
from keras_elmo.presets import published_archives


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

    `archives=False` leaves out the published `.zip` models (the 44
    ELMoForManyLangs languages), for the README's short table. Parameter
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
    for archive in (
        published_archives.PUBLISHED_ARCHIVES.values() if archives else ()
    ):
        rows.append(
            f"| `{archive.name}` | {archive.language}, {archive.format} | ? "
            f"| {archive.training_data} | {archive.licence} | "
            f"{_pin(archive.sha256)} | [zip]({archive.urls()[0]}) |"
        )
    return "\n".join(rows) + "\n"
