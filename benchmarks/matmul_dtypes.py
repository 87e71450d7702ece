"""float32 against bfloat16 matmuls at the biLM's shapes, on this CPU.

    python benchmarks/matmul_dtypes.py [--preset original] [--runs 20]
        [--threads 2] [--results benchmarks/results/matmul_dtypes.json]

Whether `dtype="mixed_bfloat16"` can be faster than float32 depends on
the CPU: bfloat16 matmuls outrun float32 ones only where the hardware
multiplies bfloat16 faster (AMX tiles, or AVX512-BF16 dot products that
oneDNN uses). For each matmul of the preset's forward pass (the LSTM's
input product over a 64 x 20 batch, its recurrent and projection
products for 64 rows, the highway layer over 1,000 distinct tokens),
`tf.matmul` in float32 and in bfloat16 are timed alternately, one call
each per round, median of `--runs` rounds after a warm-up; GFLOP/s =
2 m k n / seconds. Also records whether /proc/cpuinfo lists `amx_bf16`
and `avx512_bf16`, and which oneDNN kernel TensorFlow runs for each
dtype at the first shape: one child process per dtype with
`ONEDNN_VERBOSE=1`, whose `exec` lines name the primitive and its ISA
(e.g. `brg_matmul:avx512_core_bf16`, or `..._amx` where AMX tiles run),
and whose `info` line names the best ISA oneDNN found on this CPU. That
tells a slow bfloat16 matmul on bfloat16-capable hardware apart from a
bfloat16 matmul that never reached oneDNN. Written to `--results` with
provenance.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def shapes(cfg):
    """`{name: (m, k, n)}` of the preset's main matmuls."""
    p, h, f = cfg.projection_dim, cfg.lstm_units, cfg.num_filters
    return {
        "lstm_input_64x20": (64 * 20, 2 * p, 4 * h),
        "lstm_recurrent_64": (64, p, 4 * h),
        "lstm_projection_64": (64, h, p),
        "highway_1000_tokens": (1000, f, 2 * f),
    }


def cpu_flags():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


_CHILD = """
import tensorflow as tf
tf.config.threading.set_intra_op_parallelism_threads({threads})
a = tf.cast(tf.ones(({m}, {k})), tf.{dtype})
b = tf.cast(tf.ones(({k}, {n})), tf.{dtype})
tf.function(tf.matmul)(a, b).numpy()
"""


def parse_onednn_verbose(text):
    """`{"isa": ..., "kernels": [...]}` from `ONEDNN_VERBOSE=1` output.

    An exec line reads `onednn_verbose,v1,primitive,exec,cpu,KIND,IMPL,...`
    (IMPL empty for the `gemm_api` kind); the kernel is `KIND:IMPL`, or
    KIND alone. The ISA line reads `onednn_verbose,v1,info,cpu,isa:...`.
    """
    isa, kernels = None, []
    for line in text.splitlines():
        fields = line.split(",")
        if len(fields) < 5 or fields[0] != "onednn_verbose":
            continue
        if fields[3] == "exec" and len(fields) > 6:
            kernel = fields[5] + (":" + fields[6] if fields[6] else "")
            if kernel not in kernels:
                kernels.append(kernel)
        elif fields[2:4] == ["info", "cpu"] and fields[4].startswith("isa:"):
            isa = ",".join(fields[4:])[len("isa:") :].strip()
    return {"isa": isa, "kernels": kernels}


def onednn_kernels(m, k, n, threads):
    """`{dtype: parse_onednn_verbose(...)}`, one child process per dtype.

    A dtype whose matmul leaves no exec line ran outside oneDNN (Eigen).
    """
    found = {}
    for dtype in ("float32", "bfloat16"):
        env = dict(os.environ, ONEDNN_VERBOSE="1", TF_CPP_MIN_LOG_LEVEL="2")
        code = _CHILD.format(threads=threads, m=m, k=k, n=n, dtype=dtype)
        child = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        found[dtype] = parse_onednn_verbose(child.stdout)
    return found


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preset", default="original")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--results", help="write the figures here too")
    args = parser.parse_args(argv)

    import tensorflow as tf
    from tf_threads import set_threads

    set_threads(tf, args.threads)
    import provenance

    import keras_elmo

    cfg = keras_elmo.BiLMConfig.from_architecture(args.preset)
    matmul = tf.function(tf.matmul)
    figures = {}
    for name, (m, k, n) in shapes(cfg).items():
        operands = {}
        for dtype in (tf.float32, tf.bfloat16):
            a = tf.cast(tf.random.stateless_normal((m, k), (0, 1)), dtype)
            b = tf.cast(tf.random.stateless_normal((k, n), (0, 2)), dtype)
            matmul(a, b).numpy()  # trace, warm up
            operands[dtype.name] = (a, b)
        seconds = {dtype: [] for dtype in operands}
        for _ in range(args.runs):
            for dtype, (a, b) in operands.items():
                start = time.perf_counter()
                matmul(a, b).numpy()
                seconds[dtype].append(time.perf_counter() - start)
        rate = {
            dtype: round(2 * m * k * n / statistics.median(s) / 1e9, 3)
            for dtype, s in seconds.items()
        }
        figures[name] = {
            "shape_mkn": [m, k, n],
            "gflop_per_s": rate,
            "bfloat16_over_float32": round(
                rate["bfloat16"] / rate["float32"], 3
            ),
        }
        print(
            f"{name:>22} {m}x{k}x{n}: float32 {rate['float32']:7.1f}, "
            f"bfloat16 {rate['bfloat16']:7.1f} GFLOP/s "
            f"({figures[name]['bfloat16_over_float32']:.2f}x)",
            flush=True,
        )
    flags = cpu_flags()
    m, k, n = next(iter(shapes(cfg).values()))
    kernels = onednn_kernels(m, k, n, args.threads)
    for dtype, found in kernels.items():
        print(
            f"oneDNN {dtype}: {', '.join(found['kernels']) or 'none (Eigen)'}"
            f"; ISA: {found['isa']}",
            flush=True,
        )
    if args.results:
        provenance.write_json(
            args.results,
            {
                "provenance": provenance.provenance(),
                "preset": args.preset,
                "threads": args.threads,
                "cpu_flags": {
                    flag: flag in flags for flag in ("amx_bf16", "avx512_bf16")
                },
                "matmuls": figures,
                "onednn_kernels": kernels,
            },
        )


if __name__ == "__main__":
    main()
