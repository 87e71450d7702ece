"""Paper Table 6 for CoVe: a linear UPOS probe per layer of its encoder,
next to the same probe on the biLM's layers (`layer_probe.py`).

    python examples/cove_layer_probe.py --encoder RUN/cove_encoder.keras \\
        --out examples/results/table6_cove.json

Layers of CoVe (`train_cove.py`): `0` = the frozen GloVe vector (zero
for words GloVe lacks; zero-padded to the encoder's width, which leaves
a linear probe unchanged), `1`, `2` = the two biLSTM layers (`2` is what
McCann et al. call CoVe). With `--model` the biLM's layers are probed in
the same run, with the same probe (`layer_probe.probe_layer`: softmax
regression, Adam, early stopping on dev accuracy). Each layer is probed
with `--seeds` seeds (3; initialisation and batch order), and the file
holds the mean dev and test accuracy per layer, their standard
deviations and every run.
"""

import argparse
import os
import time

import keras
import numpy as np
import paper_data
import pos_data
from fetch_paper_data import DEFAULT_OUT
from layer_probe import add_probe_arguments
from layer_probe import probe_layer
from layer_probe import token_arrays
from pos_tagging import FILES

from keras_elmo.utils.provenance import provenance
from keras_elmo.utils.provenance import write_json


def cove_layers(encoder, glove, sentences):
    """`[N, 3, 2H]` float16: GloVe (zero-padded), h1, h2 of every token."""
    words, vectors = glove
    rows = {w: i for i, w in enumerate(words)}
    per_sentence = []
    for start in range(0, len(sentences), 64):
        batch = sentences[start : start + 64]
        steps = max(len(s) for s in batch)
        inputs = np.zeros((len(batch), steps, vectors.shape[1]), np.float32)
        mask = np.zeros((len(batch), steps), bool)
        for row, tokens in enumerate(batch):
            for k, token in enumerate(tokens):
                if token.lower() in rows:
                    inputs[row, k] = vectors[rows[token.lower()]]
            mask[row, : len(tokens)] = True
        h1, h2 = (
            np.asarray(h) for h in encoder({"vectors": inputs, "mask": mask})
        )
        if h1.shape[-1] < inputs.shape[-1]:
            raise ValueError(
                f"The encoder's layers ({h1.shape[-1]}-d) are narrower than "
                f"GloVe ({inputs.shape[-1]}-d): cannot pad GloVe to them."
            )
        padded = np.zeros(h1.shape, np.float32)
        padded[..., : inputs.shape[-1]] = inputs
        stacked = np.stack([padded, h1, h2], axis=2)  # [B, T, 3, 2H]
        for row, tokens in enumerate(batch):
            per_sentence.append(stacked[row, : len(tokens)].astype(np.float16))
    return np.concatenate(per_sentence, axis=0)


def summarize(runs):
    """`{dev, test}` means, their sample standard deviations (0 for one
    run) and the runs, from `[{seed, dev, test}]`."""
    out = {}
    for key in ("dev", "test"):
        values = np.array([run[key] for run in runs], np.float64)
        out[key] = float(values.mean())
        out[f"{key}_std"] = float(values.std(ddof=1)) if len(runs) > 1 else 0.0
    out["runs"] = runs
    return out


def main(argv=None):
    start = time.time()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--encoder", required=True)
    parser.add_argument(
        "--glove-dir", default=os.path.join(DEFAULT_OUT, "glove")
    )
    parser.add_argument("--model", default=None, help="also probe this biLM")
    parser.add_argument(
        "--seeds",
        type=int,
        default=3,
        help="probe each layer with seeds --seed, --seed + 1, ...",
    )
    add_probe_arguments(parser)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)

    encoder = keras.saving.load_model(args.encoder, safe_mode=True)
    splits = {}
    tags = pos_data.Vocabulary(dict.fromkeys(pos_data.UPOS_TAGS, 1), unk=False)
    sentences = {
        split: pos_data.read_conllu(
            os.path.join(args.data_dir, FILES[split]), args.max_sentences
        )
        for split in FILES
    }
    keep = {w.lower() for s in sentences.values() for ws, _ in s for w in ws}
    glove = paper_data.read_glove(args.glove_dir, keep=keep)
    for split, tagged in sentences.items():
        features = cove_layers(encoder, glove, [ws for ws, _ in tagged])
        ids = np.array([tags.id(t) for _, ts in tagged for t in ts], np.int32)
        splits[split] = (features, ids)
    results = {"encoder": args.encoder, "cove": {}, "bilm": {}}
    names = {"cove": ["GloVe", "biLSTM 1", "biLSTM 2 (CoVe)"]}
    probes = {"cove": splits}
    if args.model:
        import bilm_cache

        bilm = bilm_cache.load_bilm(args.model)
        probes["bilm"] = {s: token_arrays(s, bilm, args)[:2] for s in FILES}
        names["bilm"] = ["token layer", "biLSTM 1", "biLSTM 2"]
        results["model"] = args.model
    seeds = [args.seed + k for k in range(args.seeds)]
    results["seeds"] = seeds
    for kind, data in probes.items():
        for layer, name in enumerate(names[kind]):
            runs = []
            for seed in seeds:
                dev, test = probe_layer(
                    data["train"],
                    data["dev"],
                    data["test"],
                    layer,
                    len(tags),
                    argparse.Namespace(**dict(vars(args), seed=seed)),
                )
                runs.append({"seed": seed, "dev": dev, "test": test})
            results[kind][name] = summarize(runs)
            print(
                f"{kind} {name:<18} dev {results[kind][name]['dev']:.4f} "
                f"test {results[kind][name]['test']:.4f}"
            )
    results["seconds"] = round(time.time() - start, 1)
    results["provenance"] = provenance()
    if args.out:
        write_json(args.out, results)
    return results


if __name__ == "__main__":
    main()
