"""keras_elmo on the real-text workloads of `benchmarks/real_text.py`.

    python benchmarks/text_inference.py --text FILE
        [--workloads file,sorted,uniform] [--lines 256] [--runs 3]
        [--threads 2] [--variants fp32,fp32-padded,bf16,cache,bf16+cache]
        [--options O.json --weights W.hdf5]

The keras_elmo side of `benchmarks/allennlp_side_by_side.py --text`: the
same batches as `benchmarks/allennlp_text_bench.py`, each variant a
`tf.function` traced once (unknown batch and length) and warmed up on
the first batch (its outputs compared with `fp32`'s), then `--runs`
passes over every batch of a workload, the variants taking turns pass by
pass. Variants:

- `fp32`: `bilm(char_ids)`, the biLSTM over real tokens only (packed).
- `fp32-padded`: the same with `ResidualBiLSTM.packed = False`, the loop
  over every padded step (what every release before issue 16 ran).
- `bf16`: the weights under `dtype="mixed_bfloat16"`.
- `cache`, `bf16+cache`: string tokens through `TokenEmbeddingCache` with
  every distinct token of the workload in its vocabulary (as AllenNLP's
  `vocab_to_cache` variant), then `BiLM.contextualize`.

Prints one `RESULT {json}` line per workload and variant (the seconds of
each pass, the max abs difference of its outputs from `fp32`'s on the
first batch).
"""

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import real_text  # noqa: E402

KEYS = ("word_emb", "lstm_outputs1", "lstm_outputs2")


def make_variants(names, bilm, vocabulary):
    """`{name: (tf.function, takes_tokens)}`."""
    import tensorflow as tf

    import keras_elmo
    from keras_elmo.layers.residual_bilstm import ResidualBiLSTM
    from keras_elmo.models.token_embedding_cache import TokenEmbeddingCache

    def copy(**kwargs):
        model = keras_elmo.BiLM(bilm.config, **kwargs)
        model.set_weights(bilm.get_weights())
        return model

    ids_spec = [tf.TensorSpec((None, None, 50), tf.int32)]
    tokens_spec = [tf.TensorSpec((None, None), tf.string)]
    variants = {}
    for name in names:
        if name == "fp32":
            model = bilm
        elif name == "fp32-padded":
            model = copy()
            padded = [
                layer
                for layer in model._flatten_layers()
                if isinstance(layer, ResidualBiLSTM)
            ]
            if not padded:
                raise RuntimeError("The BiLM has no ResidualBiLSTM.")
            for layer in padded:
                layer.packed = False
        elif name.startswith("bf16"):
            model = copy(dtype="mixed_bfloat16")
        else:
            model = bilm
        if name.endswith("cache"):
            cache = TokenEmbeddingCache(vocabulary, model)
            cache.build()

            def run(tokens, model=model, cache=cache):
                out = model.contextualize(cache(tokens), tokens != "")
                return [tf.cast(out[k], tf.float32) for k in KEYS]

            variants[name] = (tf.function(run, input_signature=tokens_spec), 1)
        else:

            def run(ids, model=model):
                out = model(ids)
                return [tf.cast(out[k], tf.float32) for k in KEYS]

            variants[name] = (tf.function(run, input_signature=ids_spec), 0)
    return variants


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    real_text.add_arguments(
        parser, variants="fp32,fp32-padded,bf16,cache,bf16+cache"
    )
    args = parser.parse_args(argv)

    import time

    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    import keras

    import keras_elmo

    bilm = keras_elmo.BiLM.from_allennlp(args.options, args.weights)
    names = args.variants.split(",")
    if "fp32" not in names:
        names = ["fp32"] + names
    for workload in args.workloads.split(","):
        groups = real_text.batches(workload, args.text, args.lines)
        vocabulary = sorted({t for g in groups for s in g for t in s})
        variants = make_variants(names, bilm, vocabulary)
        inputs = [
            (
                tf.constant(keras_elmo.batch_to_ids(g), tf.int32),
                tf.constant(
                    [s + [""] * (max(map(len, g)) - len(s)) for s in g]
                ),
            )
            for g in groups
        ]

        def one_pass(name, keep=False):
            fn, takes_tokens = variants[name]
            outputs = []
            start = time.perf_counter()
            for pair in inputs if keep else timed:
                out = fn(pair[takes_tokens])
                out[-1].numpy()
                if keep:
                    outputs.append([np.asarray(x) for x in out])
            return time.perf_counter() - start, outputs

        timed = inputs
        inputs = inputs[:1]  # the trace, warm-up and outputs: first batch
        reference = None
        deviation = {}
        for name in names:
            _, outputs = one_pass(name, keep=True)
            if reference is None:
                reference = outputs
            deviation[name] = max(
                float(np.abs(a - b).max())
                for got, ref in zip(outputs, reference)
                for a, b in zip(got, ref)
            )
        seconds = {name: [] for name in names}
        for _ in range(args.runs):
            for name in names:
                seconds[name].append(one_pass(name)[0])
        for name in names:
            print(
                real_text.dumps(
                    {
                        "side": "keras_elmo",
                        "workload": workload,
                        "variant": name,
                        "seconds": seconds[name],
                        "max_abs_diff_vs_fp32": deviation[name],
                        **real_text.describe(groups),
                        "versions": {
                            "tensorflow": tf.__version__,
                            "keras": keras.__version__,
                        },
                        "threads": args.threads,
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
