#!/usr/bin/env python3
"""Tiny ELMoForManyLangs models and the real package's outputs on them.

    ~/.cache/keras_elmo_side/efml/bin/python \
        tools/elmoformanylangs_ref/make_fixtures.py \
        --out tests/fixtures/elmoformanylangs

Runs in the side venv made by `setup_efml.sh` (torch 2.13.0+cpu,
elmoformanylangs 0.0.4.post2). For each of two models, `word` (word_dim >
0: the word-embedding branch) and `char` (word_dim = 0), it:

1. builds the model with the package's own classes
   (`elmoformanylangs.frontend.Model`, `modules.embedding_layer.
   EmbeddingLayer`) from a tiny architecture JSON, and fills every
   parameter with seeded random values (`torch.manual_seed`);
2. writes the published folder layout: `config.json` (a training-options
   file whose `config_path` is an absolute path on "the authors' machine",
   as published folders have), the architecture JSON beside it (found by
   the package's basename fallback), `char.dic`, `word.dic` (`token\\tid`
   lines, lexicons in the order the package's trainer makes them: tokens
   first, then the specials), `token_embedder.pkl` and `encoder.pkl`, in
   two copies: `NAME_zip/` (torch's zip layout) and `NAME_legacy/`
   (`torch.save(..., _use_new_zipfile_serialization=False)`, the stream
   the 2018 published files use);
3. loads each folder with `elmoformanylangs.Embedder(folder)` and runs
   `sents2elmo(SENTENCES, output_layer=-2)` (all layers) and, on another
   fresh Embedder, `output_layer=-1` (their average). All sentences fit in
   one batch, so each call is a fresh Embedder's first batch: the package's
   encoder is stateful and `sents2elmo` shuffles batches with an unseeded
   `random`, so only that batch is reproducible. Both layouts must give
   identical outputs (checked); `NAME_reference.npz` holds them.

The char.dic holds a line for U+3000: the package's
`line.strip().split('\\t')` strips the character itself, leaving a bare id,
which it maps back to U+3000 (any other whitespace character's line would
map there too, collapsing two entries; the package then fails to load the
embedding, so no fixture has one). U+00A0 is out of the lexicon.
"""

import argparse
import json
import logging
import os
import random
import shutil
import sys

import elmoformanylangs
import numpy as np
import torch
from elmoformanylangs import Embedder
from elmoformanylangs.frontend import Model
from elmoformanylangs.modules.embedding_layer import EmbeddingLayer

AUTHORS_DIR = "/users4/conll18/elmo/configs"

ARCHITECTURE = {
    "encoder": {
        "name": "elmo",
        "projection_dim": 8,
        "cell_clip": 3,
        "proj_clip": 3,
        "dim": 8,
        "n_layers": 2,
    },
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": [[1, 4], [2, 4], [3, 8]],
        "n_highway": 2,
        "word_dim": 6,
        "char_dim": 4,
        "max_characters_per_token": 50,
    },
    "classifier": {"name": "sampled_softmax", "n_samples": 8},
    "dropout": 0.1,
}

# Characters seen "in training", in order of first appearance; then the
# specials, as biLM.py appends them.
CHARS = (
    list("的一是在不了有和人这中大为上个国我以要他")
    + list("abcdefghijklmnopqrstuvwxyzTHE.,!?0123456789")
    + ["\u3000", "é", "😀"]
)
CHAR_SPECIALS = ["<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>"]
WORD_SPECIALS = ["<oov>", "<bos>", "<eos>", "<pad>"]
WORDS = [
    "的",
    "是",
    "中国",
    "我们",
    "the",
    "cat",
    "is",
    "on",
    "mat",
    ".",
    "，",
    "。",
    "hello",
    "world",
    "a" * 48,
]

LONG_ZH = "中国人" * 20  # 60 code points: cut to 48
SENTENCES = [
    ["我们", "是", "中国", "人", "。"],
    ["the", "cat", "is", "on", "the", "mat", "."],
    ["Hello", "世界", "!"],
    ["龘", "𠀋", "xyzzy", "Ω≈ç√"],  # out-of-lexicon chars, unknown words
    [LONG_ZH, "a" * 48, "a" * 49, "b" * 70],  # over-long tokens
    ["中\u3000国", "x\u00a0y", "😀", "café", "cafe\u0301"],
    ["<bos>", "的", "<eos>", "<oov>", "<pad>"],  # literal specials
    ["单"],
    [
        "the",
        "cat",
        "，",
        "我们",
        "hello",
        "world",
        "是",
        "一",
        "个",
        "人",
        ".",
        "the",
        "mat",
    ],
]


def lexicon_lines(tokens):
    return [f"{token}\t{i}\n" for i, token in enumerate(tokens)]


def read_lexicon(path):
    """The package's reading of a .dic file (`Embedder.get_model`)."""
    import codecs

    lexicon = {}
    with codecs.open(path, "r", encoding="utf-8") as fpi:
        for line in fpi:
            tokens = line.strip().split("\t")
            if len(tokens) == 1:
                tokens.insert(0, "\u3000")
            token, i = tokens
            lexicon[token] = int(i)
    return lexicon


def tiny_scale(name, parameter):
    """The fixtures' standard deviations: N(0, 0.4^2), LSTM projections
    0.5, embeddings 0.8 (so that both clips are reached)."""
    if "embedding" in name:
        return 0.8
    if "state_projection" in name:
        return 0.5
    return 0.4


def randomize(module, seed, scale_of=tiny_scale):
    """Every parameter N(0, scale_of(name, parameter)^2), drawn in order of
    name from one fixed generator."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(module.named_parameters()):
            scale = scale_of(name, p)
            p.copy_(torch.randn(p.shape, generator=generator) * scale)


def write_folder(
    folder, arch, legacy, model, chars=CHARS, words=WORDS, arch_name=None
):
    """The published layout. `arch_name` None: a `tiny_cnn_*.json` written
    into the folder; else only named by `config_path` (the package then
    finds it among its own `configs/`, as for the published English
    model)."""
    os.makedirs(folder, exist_ok=True)
    if arch_name is None:
        arch_name = "tiny_cnn_%d_%d.json" % (
            arch["token_embedder"]["char_dim"],
            arch["token_embedder"]["word_dim"],
        )
        with open(os.path.join(folder, arch_name), "w") as f:
            json.dump(arch, f, indent=1)
    options = {
        "seed": 1,
        "gpu": 0,
        "train_path": "/users4/conll18/data/train.txt",
        "config_path": os.path.join(AUTHORS_DIR, arch_name),
        "word_embedding": None,
        "optimizer": "adam",
        "lr": 0.001,
        "batch_size": 32,
        "max_epoch": 10,
        "model": "/users4/conll18/elmo/model",
    }
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(options, f, indent=1)
    with open(os.path.join(folder, "char.dic"), "w", encoding="utf-8") as f:
        f.writelines(lexicon_lines(chars + CHAR_SPECIALS))
    if arch["token_embedder"]["word_dim"] > 0:
        with open(os.path.join(folder, "word.dic"), "w", encoding="utf-8") as f:
            f.writelines(lexicon_lines(WORD_SPECIALS + words))
    kwargs = {"_use_new_zipfile_serialization": False} if legacy else {}
    torch.save(
        model.token_embedder.state_dict(),
        os.path.join(folder, "token_embedder.pkl"),
        **kwargs,
    )
    torch.save(
        model.encoder.state_dict(),
        os.path.join(folder, "encoder.pkl"),
        **kwargs,
    )


def build_model(arch, seed, chars=CHARS, words=WORDS, scale_of=tiny_scale):
    """The package's `frontend.Model` for `arch` and these lexicons, every
    parameter then drawn by `randomize(model, seed, scale_of)`."""
    torch.manual_seed(seed)
    char_ids = read_lexicon_from_list(chars + CHAR_SPECIALS)
    char_layer = EmbeddingLayer(
        arch["token_embedder"]["char_dim"], char_ids, fix_emb=False
    )
    word_layer = None
    if arch["token_embedder"]["word_dim"] > 0:
        word_ids = {w: i for i, w in enumerate(WORD_SPECIALS + words)}
        word_layer = EmbeddingLayer(
            arch["token_embedder"]["word_dim"], word_ids, fix_emb=False
        )
    model = Model(arch, word_layer, char_layer, use_cuda=False)
    randomize(model, seed, scale_of)
    return model


def read_lexicon_from_list(tokens):
    """The lexicon the package will read back from char.dic (the U+3000
    quirk collapses two lines), so the embedding has its row count."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "char.dic")
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(lexicon_lines(tokens))
        return read_lexicon(path)


def run_package(folder, output_layer, sentences=SENTENCES, embedder=None):
    """A fresh `Embedder(folder)`'s (or `embedder`'s, which must be unused)
    first `sents2elmo(sentences, output_layer)`: one batch."""
    assert len(sentences) <= 64, "more than one batch is not reproducible"
    random.seed(0)  # irrelevant with one batch; set for the record
    if embedder is None:
        embedder = Embedder(folder, batch_size=64)
    return embedder.sents2elmo(sentences, output_layer=output_layer)


def write_torch_layouts(out):
    """Tensors that exercise the reader: views, offsets, dtypes."""
    folder = os.path.join(out, "torch_layouts")
    os.makedirs(folder, exist_ok=True)
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 7
    state = {
        "transposed": base.t(),
        "offset_slice": base[1:, 2:5],
        "half": torch.linspace(-2, 2, 5).half(),
        "long": torch.arange(-3, 3, dtype=torch.int64).reshape(2, 3),
        "scalar": torch.tensor(1.5),
    }
    for layout, zipped in (("zip", True), ("legacy", False)):
        torch.save(
            state,
            os.path.join(folder, f"tensors_{layout}.pkl"),
            _use_new_zipfile_serialization=zipped,
        )
    np.savez(
        os.path.join(folder, "expected.npz"),
        **{k: v.numpy() for k, v in state.items()},
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    logging.getLogger("elmoformanylangs").setLevel(logging.ERROR)
    os.makedirs(args.out, exist_ok=True)
    write_torch_layouts(args.out)
    for name, word_dim in (("word", 6), ("char", 0)):
        arch = json.loads(json.dumps(ARCHITECTURE))
        arch["token_embedder"]["word_dim"] = word_dim
        model = build_model(arch, args.seed + word_dim)
        outputs = {}
        for layout in ("zip", "legacy"):
            folder = os.path.join(args.out, f"{name}_{layout}")
            shutil.rmtree(folder, ignore_errors=True)
            write_folder(folder, arch, layout == "legacy", model)
            outputs[layout] = (run_package(folder, -2), run_package(folder, -1))
        for a, b in zip(
            outputs["zip"][0] + outputs["zip"][1],
            outputs["legacy"][0] + outputs["legacy"][1],
        ):
            assert np.array_equal(a, b), "zip and legacy layouts differ"
        layers, average = outputs["zip"]
        arrays = {
            "sentences_json": np.array(json.dumps(SENTENCES)),
            "versions_json": np.array(
                json.dumps(
                    {
                        "torch": torch.__version__,
                        "elmoformanylangs": "0.0.4.post2",
                        "package_file": elmoformanylangs.__file__,
                        "python": sys.version.split()[0],
                        "seed": args.seed + word_dim,
                    }
                )
            ),
        }
        for i, (all_layers, avg) in enumerate(zip(layers, average)):
            arrays[f"layers_{i}"] = np.asarray(all_layers, np.float32)
            arrays[f"average_{i}"] = np.asarray(avg, np.float32)
        np.savez_compressed(
            os.path.join(args.out, f"{name}_reference.npz"), **arrays
        )
        stats = np.concatenate([a.reshape(-1) for a in layers])
        print(
            f"{name}: {len(layers)} sentences, layers {layers[0].shape}, "
            f"mean {stats.mean():+.3f} std {stats.std():.3f}, "
            f"|x|>=3 (clipped): {(np.abs(stats) >= 2.9999).mean():.1%}"
        )


if __name__ == "__main__":
    main()
