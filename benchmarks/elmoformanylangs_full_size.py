"""keras_elmo against ELMoForManyLangs on full-size random-weight models.

    bash tools/elmoformanylangs_ref/setup_efml.sh        # the side venv
    bash tools/elmoformanylangs_ref/fetch_debian_text.sh # zh, de text
    ~/.cache/keras_elmo_side/efml/bin/python \\
        tools/elmoformanylangs_ref/full_size_reference.py
    python benchmarks/elmoformanylangs_full_size.py \\
        [--models ~/.cache/keras_elmo_side/efml_full] \\
        [--out benchmarks/results/elmoformanylangs_full_size.json]

`full_size_reference.py` (side venv, torch) writes, for both of the
package's architecture configs (4096 cells, 512 projections) and seeds
1234 and 99, a published-layout folder of random weights and the
package's own `sents2elmo` outputs on 13 sentences (the fixtures' 9:
specials, over-long tokens, emoji, out-of-lexicon characters; a 30-token
and a 150-token line of real English, a Tang poem in Chinese and a German
proverb, from `fetch_debian_text.sh`). This script (main venv, no torch)
loads each folder and measures, per sentence, the relative gap
`max |ours - theirs| / max |theirs|` over the sentence's whole array:

- `all_vs_minus_2`: `keras_elmo.Embedder.from_preset(folder).embed(...,
  layers="all")` against `sents2elmo(..., output_layer=-2)`;
- `average_vs_minus_1`: `layers="average"` against `output_layer=-1`;
- `bilm_all_vs_minus_2`: `keras_elmo.BiLM.from_elmoformanylangs(folder)`
  on the padded batch of all 13 sentences, against `-2`;
- float64, against the package's `-2` run in float64 (`model.double()`):
  `package_float32_vs_float64` (its own float32 output),
  `ours_float32_vs_float64` (the Embedder's `"all"`) and
  `ours_float64_vs_float64` (`BiLM.from_elmoformanylangs(folder,
  dtype="float64")`): what float32 rounding alone accounts for;
  `ours_float64_vs_float64_layer_0`: the float64 BiLM's layer 0 alone
  (char CNN, highways, projection). A float64 BiLM is float64 throughout:
  its LSTM gates and cell states (`keras_elmo.ops.lstm_cell.state_dtype`)
  and its weights, the LSTM biases' `b - 1` (the forget bias taken out)
  computed in float64 by the loader.

Under `models/NAME`: the 150-token sentence's figures (`long_sentence`),
the worst over the 12 others (`other_sentences_worst`), the real-text
lines' figures by language (`real_text`: `en_test_line_4`,
`en_test_150_tokens`, `zh_tang300_poem_1`, `de_sprichworte`), and one
list of 13 per figure (`per_sentence`, input order). `worst`,
`other_sentences_worst` and `real_text_worst` at the top are over all
four models. TensorFlow
runs with its default kernels (oneDNN on x86 unless
`TF_ENABLE_ONEDNN_OPTS=0`; recorded as `tf_enable_onednn_opts`).
"""

import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from provenance import provenance  # noqa: E402
from provenance import write_json  # noqa: E402

FIGURES = (
    "all_vs_minus_2",
    "average_vs_minus_1",
    "bilm_all_vs_minus_2",
    "package_float32_vs_float64",
    "ours_float32_vs_float64",
    "ours_float64_vs_float64",
    "ours_float64_vs_float64_layer_0",
)
LONG_TOKENS = 150


def relative(ours, theirs):
    """`max |ours - theirs| / max |theirs|` over the whole array."""
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    if ours.shape != theirs.shape:
        raise ValueError(f"shapes differ: {ours.shape} vs {theirs.shape}")
    gap = np.abs(ours.astype(np.float64) - theirs.astype(np.float64)).max()
    return float(gap / np.abs(theirs).max())


def load_reference(path):
    """`(sentences, arrays, record)` of one `*_reference.npz`."""
    ref = np.load(path, allow_pickle=False)
    sentences = json.loads(str(ref["sentences_json"]))
    arrays = {
        key: [ref[f"{key}_{i}"] for i in range(len(sentences))]
        for key in ("layers", "average", "layers64")
    }
    return sentences, arrays, json.loads(str(ref["versions_json"]))


def bilm_layers(bilm, sentences):
    """`[L + 1, n_i, 2P]` per sentence from one padded batch of string
    tokens (`""` pads)."""
    import tensorflow as tf

    from keras_elmo.models.bilm import elmo_layers

    steps = max(len(s) for s in sentences)
    tokens = tf.constant([s + [""] * (steps - len(s)) for s in sentences])
    out = bilm(bilm.encode_tokens(tokens))
    stacked = np.stack([np.asarray(x) for x in elmo_layers(out)], axis=1)
    return [stacked[i, :, : len(s)] for i, s in enumerate(sentences)]


def compare(folder, reference_path):
    """The per-sentence figures (`FIGURES`) of one model folder."""
    import keras_elmo

    sentences, theirs, record = load_reference(reference_path)
    embedder = keras_elmo.Embedder.from_preset(folder)
    all_layers = embedder.embed(sentences, layers="all")
    average = embedder.embed(sentences, layers="average")
    del embedder
    bilm32 = bilm_layers(
        keras_elmo.BiLM.from_elmoformanylangs(folder), sentences
    )
    bilm = keras_elmo.BiLM.from_elmoformanylangs(folder, dtype="float64")
    bilm64 = bilm_layers(bilm, sentences)
    del bilm
    pairs = {
        "all_vs_minus_2": (all_layers, theirs["layers"]),
        "average_vs_minus_1": (average, theirs["average"]),
        "bilm_all_vs_minus_2": (bilm32, theirs["layers"]),
        "package_float32_vs_float64": (theirs["layers"], theirs["layers64"]),
        "ours_float32_vs_float64": (all_layers, theirs["layers64"]),
        "ours_float64_vs_float64": (bilm64, theirs["layers64"]),
        "ours_float64_vs_float64_layer_0": (
            [a[0] for a in bilm64],
            [a[0] for a in theirs["layers64"]],
        ),
    }
    per_sentence = {
        name: [relative(a, b) for a, b in zip(*pair)]
        for name, pair in pairs.items()
    }
    lengths = [len(s) for s in sentences]
    (long,) = [i for i, n in enumerate(lengths) if n == LONG_TOKENS]
    others = [i for i in range(len(sentences)) if i != long]
    return {
        "config": record["config"],
        "seed": record["seed"],
        "layout": record["layout"],
        "lexicon_sizes": {"chars": record["chars"], "words": record["words"]},
        "package_clipped_share": record["clipped_share"],
        "tokens": lengths,
        "long_sentence": {k: v[long] for k, v in per_sentence.items()},
        "real_text": {
            label: {k: v[int(i)] for k, v in per_sentence.items()}
            for i, label in record["real_text_labels"].items()
        },
        "other_sentences_worst": {
            k: max(v[i] for i in others) for k, v in per_sentence.items()
        },
        "per_sentence": per_sentence,
        "reference_versions": record,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--models",
        default=os.path.expanduser("~/.cache/keras_elmo_side/efml_full"),
        help="Folder of full_size_reference.py's output.",
    )
    parser.add_argument(
        "--out",
        default=os.path.join(
            HERE, "results", "elmoformanylangs_full_size.json"
        ),
    )
    args = parser.parse_args(argv)
    names = sorted(
        f[: -len("_reference.npz")]
        for f in os.listdir(args.models)
        if f.endswith("_reference.npz")
    )
    if len(names) != 4:
        raise SystemExit(f"{args.models}: expected 4 models, found {names}")
    models = {}
    for name in names:
        models[name] = compare(
            os.path.join(args.models, name),
            os.path.join(args.models, f"{name}_reference.npz"),
        )
        print(name, json.dumps(models[name]["long_sentence"]), flush=True)
    payload = {
        "provenance": provenance(written=[args.out]),
        "what": "max |keras_elmo - elmoformanylangs| / max "
        "|elmoformanylangs| per sentence, full-size random-weight models "
        "written and run by elmoformanylangs 0.0.4.post2 (torch 2.13.0+cpu)",
        "tf_enable_onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS"),
        # Where the side venv's references came from (each file's record).
        "reference_commits": sorted(
            {
                str(m["reference_versions"].get("commit"))
                for m in models.values()
            }
        ),
        "references_uncommitted_changes": any(
            m["reference_versions"].get("uncommitted_changes") is not False
            for m in models.values()
        ),
        "worst": {
            k: max(max(m["per_sentence"][k]) for m in models.values())
            for k in FIGURES
        },
        "other_sentences_worst": {
            k: max(m["other_sentences_worst"][k] for m in models.values())
            for k in FIGURES
        },
        "real_text_worst": {
            label: {
                k: max(m["real_text"][label][k] for m in models.values())
                for k in FIGURES
            }
            for label in next(iter(models.values()))["real_text"]
        },
        "models": models,
    }
    write_json(args.out, payload)
    print(json.dumps(payload["worst"], indent=1))


if __name__ == "__main__":
    main()
