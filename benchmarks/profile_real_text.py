"""Where the time goes on real text: the biLM forward, stage by stage.

    python benchmarks/profile_real_text.py --text FILE [--preset original]
        [--workload file] [--lines 256] [--runs 5]
        [--results benchmarks/results/profile_real_text.json]

The batches are `real_text.py`'s (the side-by-side's: natural lengths,
batches of 64, file order by default). Each stage of `BiLM` runs as its
own `tf.function` (unknown batch and length, traced once, warmed up) on
the previous stage's outputs, computed once beforehand:

- `char_ids`: string tokens `[B, T]` -> `[B, T, 50]` (`CharacterIds`).
- `boundaries_unique`: `<S>`/`</S>` added, then the distinct tokens
  `[U, 1, 50]` and the inverse index `[B, T + 2]`.
- `char_cnn`: `[U, 1, 50]` -> `[U, 1, F]` (each token's windows only).
- `highway`: `[U, 1, F]` -> `[U, 1, F]`.
- `projection_gather`: `[U, 1, F]` -> `[U, 1, P]` -> `[B, T + 2, P]`.
- `bilstm`: `[B, T + 2, P]` -> `L x [B, T + 2, 2P]` (packed: real rows).
- `outputs`: boundaries removed, the output dict (`[B, T, 2P]` each).

Within one pass the stages and the whole `bilm(char_ids)` take turns,
batch by batch; the figure per stage is the median over `--runs` passes
of its seconds summed over the workload. Each stage's share is of the
stages' sum; `whole / sum` shows what running them apart costs or saves.
FLOPs count multiply-adds x 2 of what each stage executes (distinct
tokens, each token's own char-CNN windows, real tokens only in the
biLSTM); GFLOP/s are set against the same process's matmul rate at
the LSTM's input shape (`[64, 2P] x [2P, 4H]`), measured between passes.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import real_text  # noqa: E402
from inference import char_cnn_flops  # noqa: E402
from inference import lstm_flops  # noqa: E402
from inference import matmul_gflops  # noqa: E402
from inference import occupied_slots  # noqa: E402
from provenance import provenance  # noqa: E402
from provenance import write_json  # noqa: E402

STAGES = (
    "char_ids",
    "boundaries_unique",
    "char_cnn",
    "highway",
    "projection_gather",
    "bilstm",
    "outputs",
)


def stage_functions(bilm):
    """`{stage: tf.function}` over the BiLM's own layers, and `whole`."""
    import tensorflow as tf

    from keras_elmo.layers.character_ids import CharacterIds
    from keras_elmo.models.bilm_outputs import output_dict

    character_ids = CharacterIds()
    add_boundaries = bilm.get_layer("add_sentence_boundaries")
    token_mask = bilm.get_layer("token_mask")
    unique_tokens = bilm.get_layer("unique_tokens")
    gather = bilm.get_layer("gather_unique_tokens")
    ids = tf.TensorSpec((None, None, 50), tf.int32)
    floats = tf.TensorSpec((None, None, None), tf.float32)

    @tf.function(input_signature=[tf.TensorSpec((None, None), tf.string)])
    def char_ids(tokens):
        return character_ids(tokens)

    @tf.function(input_signature=[ids])
    def boundaries_unique(ids):
        with_boundaries = add_boundaries(ids)
        unique, inverse = unique_tokens(with_boundaries)
        return unique, inverse, token_mask(with_boundaries), token_mask(ids)

    @tf.function(input_signature=[tf.TensorSpec((None, 1, 50), tf.int32)])
    def char_cnn(unique):
        return bilm.char_cnn(unique)

    @tf.function(input_signature=[floats])
    def highway(x):
        return bilm.highway(x)

    @tf.function(
        input_signature=[floats, tf.TensorSpec((None, None), tf.int32)]
    )
    def projection_gather(x, inverse):
        return gather(bilm.token_projection(x), inverse)

    @tf.function(
        input_signature=[
            tf.TensorSpec((None, None, None), tf.float32),
            tf.TensorSpec((None, None), tf.bool),
        ]
    )
    def bilstm(x, mask):
        return bilm.bilstm(x, mask=mask)

    @tf.function(
        input_signature=[
            tf.TensorSpec((None, None, None), tf.float32),
            [tf.TensorSpec((None, None, None), tf.float32)]
            * bilm.config.num_layers,
            tf.TensorSpec((None, None), tf.bool),
        ]
    )
    def outputs(x, layers, mask):
        return output_dict(bilm.remove_boundaries, x, layers, mask)

    @tf.function(input_signature=[ids])
    def whole(ids):
        return bilm(ids)

    return {
        "char_ids": char_ids,
        "boundaries_unique": boundaries_unique,
        "char_cnn": char_cnn,
        "highway": highway,
        "projection_gather": projection_gather,
        "bilstm": bilstm,
        "outputs": outputs,
        "whole": whole,
    }


def stage_inputs(functions, tokens):
    """`({stage: args}, distinct tokens, max |staged - whole|)` for one
    batch, each stage's args from the previous stage."""
    import tensorflow as tf

    ids = functions["char_ids"](tokens)
    unique, inverse, mask_b, mask = functions["boundaries_unique"](ids)
    cnn = functions["char_cnn"](unique)
    high = functions["highway"](cnn)
    x = functions["projection_gather"](high, inverse)
    layers = list(functions["bilstm"](x, mask_b))
    # Traced and warmed up here, as every other stage is above; the
    # stages must compose to exactly what the whole biLM computes.
    staged = functions["outputs"](x, layers, mask)
    whole = functions["whole"](ids)
    deviation = max(
        float(
            tf.reduce_max(
                tf.abs(
                    tf.cast(staged[key], tf.float32)
                    - tf.cast(whole[key], tf.float32)
                )
            )
        )
        for key in whole
    )
    return (
        {
            "char_ids": (tokens,),
            "boundaries_unique": (ids,),
            "char_cnn": (unique,),
            "highway": (cnn,),
            "projection_gather": (high, inverse),
            "bilstm": (x, mask_b),
            "outputs": (x, layers, mask),
            "whole": (ids,),
        },
        int(unique.shape[0]),
        deviation,
    )


def stage_flops(cfg, batch, distinct):
    """Executed FLOPs per stage of one batch (see the module docstring)."""
    tokens = sum(len(s) for s in batch) + 2 * len(batch)  # with <S>, </S>
    f = cfg.num_filters
    cnn = sum(
        char_cnn_flops(cfg, occupied_slots(cfg, t))
        for t in {t for s in batch for t in s} | {"<S>", "</S>"}
    )
    return {
        "char_cnn": cnn,
        "highway": distinct * cfg.num_highway_layers * 2 * 2 * f * f,
        "projection_gather": distinct * 2 * f * cfg.projection_dim,
        "bilstm": tokens * lstm_flops(cfg),
    }


def profile(bilm, groups, runs):
    import numpy as np
    import tensorflow as tf

    cfg = bilm.config
    functions = stage_functions(bilm)
    max_deviation = 0.0
    prepared, flops = (
        [],
        dict.fromkeys(
            ("char_cnn", "highway", "projection_gather", "bilstm"), 0
        ),
    )
    for batch in groups:
        width = max(len(s) for s in batch)
        padded = np.array([s + [""] * (width - len(s)) for s in batch])
        args, distinct, deviation = stage_inputs(functions, tf.constant(padded))
        max_deviation = max(max_deviation, deviation)
        for name, value in stage_flops(cfg, batch, distinct).items():
            flops[name] += value
        prepared.append(args)
    names = STAGES + ("whole",)
    seconds = {name: [] for name in names}
    matmul = []
    h, p = cfg.lstm_units, cfg.projection_dim
    for _ in range(runs):
        totals = dict.fromkeys(names, 0.0)
        for args in prepared:
            for name in names:
                start = time.perf_counter()
                tf.nest.map_structure(
                    lambda t: t.numpy(), functions[name](*args[name])
                )
                totals[name] += time.perf_counter() - start
        for name in names:
            seconds[name].append(totals[name])
        matmul.append(matmul_gflops(tf, 64, 2 * p, 4 * h, tf.float32, 20))
    median = {name: statistics.median(seconds[name]) for name in names}
    stage_sum = sum(median[name] for name in STAGES)
    matmul_rate = statistics.median(matmul)
    stages = {}
    for name in STAGES:
        record = {
            "seconds_median": round(median[name], 5),
            "seconds_per_pass": [round(s, 5) for s in seconds[name]],
            "share": round(median[name] / stage_sum, 4),
        }
        if name in flops:
            gflops = flops[name] / median[name] / 1e9
            record["gflop"] = round(flops[name] / 1e9, 3)
            record["gflop_per_s"] = round(gflops, 2)
            record["fraction_of_matmul"] = round(gflops / matmul_rate, 3)
        stages[name] = record
    tokens = sum(len(s) for g in groups for s in g)
    total_flops = sum(flops.values())
    return {
        "stages": stages,
        "max_abs_staged_minus_whole": max_deviation,
        "stage_sum_seconds": round(stage_sum, 5),
        "whole_seconds_median": round(median["whole"], 5),
        "whole_over_stage_sum": round(median["whole"] / stage_sum, 3),
        "whole_tokens_per_s": round(tokens / median["whole"], 1),
        "whole_gflop_per_s": round(total_flops / median["whole"] / 1e9, 2),
        "matmul_gflop_per_s": round(matmul_rate, 2),
        "whole_fraction_of_matmul": round(
            total_flops / median["whole"] / 1e9 / matmul_rate, 3
        ),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--text", required=True)
    parser.add_argument("--preset", default="original")
    parser.add_argument(
        "--workload", default="file", choices=real_text.WORKLOADS
    )
    parser.add_argument("--lines", type=int, default=256)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--results",
        default=os.path.join(HERE, "results", "profile_real_text.json"),
    )
    args = parser.parse_args(argv)

    import tensorflow as tf

    try:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
        threads = args.threads
    except RuntimeError:
        # TensorFlow already started in this process (called from Python
        # after other TF work): its thread pools stay as they are.
        threads = "unchanged (TensorFlow already initialised)"
    import keras_elmo

    bilm = keras_elmo.BiLM(keras_elmo.BiLMConfig.from_architecture(args.preset))
    groups = real_text.batches(args.workload, args.text, args.lines)
    result = {
        "what": "seconds per stage of the biLM forward on real-text "
        "batches; random weights of the preset (time does not depend on "
        "their values)",
        "preset": args.preset,
        "text": args.text,
        "workload": real_text.describe(groups),
        "workload_name": args.workload,
        "runs": args.runs,
        "threads": threads,
    }
    result.update(profile(bilm, groups, args.runs))
    result["provenance"] = provenance()
    write_json(args.results, result)
    for name in STAGES:
        stage = result["stages"][name]
        extra = (
            f"  {stage['gflop_per_s']:7.2f} GFLOP/s "
            f"({stage['fraction_of_matmul']:.0%} of matmul)"
            if "gflop_per_s" in stage
            else ""
        )
        print(
            f"{name:<18} {stage['seconds_median']:8.4f} s "
            f"{stage['share']:6.1%}{extra}"
        )
    print(
        f"whole bilm(char_ids): {result['whole_seconds_median']:.4f} s "
        f"({result['whole_over_stage_sum']:.2f} x the stages' sum), "
        f"{result['whole_tokens_per_s']} tokens/s, "
        f"{result['whole_fraction_of_matmul']:.0%} of the matmul rate "
        f"({result['matmul_gflop_per_s']} GFLOP/s); -> {args.results}"
    )


if __name__ == "__main__":
    main()
