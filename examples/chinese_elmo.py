"""Chinese ELMo vectors from an ELMoForManyLangs model, with keras_elmo.

    # a folder from ELMoForManyLangs (e.g. the simplified-Chinese model,
    # unzipped: config.json, char.dic, word.dic, *.pkl), or the folder
    # `keras-elmo convert --from-elmoformanylangs DIR --out OUT` wrote:
    python examples/chinese_elmo.py --model zhs.model \\
        --sentence "我们 是 中国 人 。" --sentence "他 在 中国 。"

    # raw text, segmented with jieba (optional: `pip install jieba`):
    python examples/chinese_elmo.py --model zhs.model --text "我们是中国人。"

ELMoForManyLangs models take pre-segmented text: one token per word, as
the treebank they were trained on segments it. Each sentence gives
`[3, n_tokens, 1024]`: layer 0 (word + character CNN), then the two
biLSTM layers, the package's `sents2elmo(output_layer=-2)`; their mean is
its default `output_layer=-1`. No torch is needed: the `.pkl` files are
read without it (docs/ELMOFORMANYLANGS.md).
"""

import argparse

import numpy as np

import keras_elmo


def segment(text):
    """Raw Chinese text -> tokens, with jieba (an optional extra)."""
    try:
        import jieba
    except ImportError:
        raise SystemExit(
            "--text needs a segmenter: `pip install jieba` (or pass "
            "pre-segmented --sentence lines)."
        ) from None
    return [t for t in jieba.lcut(text) if t.strip()]


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-12))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument(
        "--sentence",
        action="append",
        default=[],
        help="A pre-segmented sentence, tokens separated by spaces.",
    )
    parser.add_argument(
        "--text", action="append", default=[], help="Raw text (jieba)."
    )
    args = parser.parse_args(argv)
    sentences = [s.split() for s in args.sentence]
    sentences += [segment(t) for t in args.text]
    if not sentences:
        sentences = [
            ["我们", "是", "中国", "人", "。"],
            ["他", "在", "中国", "。"],
        ]
    # An ELMoForManyLangs folder, its converted folder, a preset name ...
    embedder = keras_elmo.Embedder.from_preset(args.model)
    layers = embedder.embed(sentences, layers="all")  # [3, n, D] each
    vectors = [x.mean(axis=0) for x in layers]  # sents2elmo's default
    for sentence, rows in zip(sentences, vectors):
        print(" ".join(sentence))
        for token, row in zip(sentence, rows):
            print(f"  {token}\t{np.array2string(row[:4], precision=3)} ...")
    # The same word in two sentences: similar, not identical (context).
    first = {t: i for i, t in enumerate(sentences[0])}
    for j, sentence in enumerate(sentences[1:], start=1):
        for k, token in enumerate(sentence):
            if token in first:
                similarity = cosine(vectors[0][first[token]], vectors[j][k])
                print(
                    f"cos({token!r} in 1, {token!r} in {j + 1}) = "
                    f"{similarity:.3f}"
                )
    return layers


if __name__ == "__main__":
    main()
