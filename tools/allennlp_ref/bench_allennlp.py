#!/usr/bin/env python3
# ---------------------------------------------------------------------------
# The AllenNLP side harness, kept in the repository so every figure measured
# against AllenNLP can be regenerated from a clone and the package registries.
# Copied from the project's shared reference harness (shared/ref) with one
# change: the seeded weights come from tests/fixtures/make_weights.py (the
# committed copy the parity fixtures were made with). See README.md here.
# ---------------------------------------------------------------------------
"""CPU inference throughput of AllenNLP's ELMo biLM (`_ElmoBiLm`).

    python bench_allennlp.py [--options O.json --weights W.hdf5] [--batch 64] [--tokens 20]
                             [--threads 2] [--repeats 5] [--json out.json]

Defaults: the `original` (2x4096_512_2048cnn_2xhighway) config from make_weights.py in
/tmp/elmo_ref/w (generated there if missing), 64 sentences x 20 tokens,
torch.set_num_threads(2), 1 warm-up batch, then --repeats timed batches.

What is timed: `_ElmoBiLm.forward` on precomputed character ids, in eval mode under
torch.no_grad() (char CNN + highway + projection + 2-layer biLSTM; BOS/EOS added inside).
The LSTM's carried state is reset before every batch, so each timed batch computes what a
fresh model would.  Not timed: allennlp import, model/weight load, the warm-up batch.
`batch_to_ids` (character-id conversion) is timed separately and reported on its own line.
tokens/s = batch * tokens / median seconds per batch (BOS/EOS not counted as tokens).
"""
import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import warnings
import logging

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_WEIGHTS = os.path.join(
    HERE, "..", "..", "tests", "fixtures", "make_weights.py"
)
DEFAULT_DIR = "/tmp/elmo_ref/w"

WORDS = ("the of and to in a is that for it as was with be by on not he I this are or his "
         "from at which but have an they you were her she there one all we their can has "
         "been if more when will would who so no government president international "
         "nevertheless approximately characteristics Zürich café naïve 2023 3.14 , . ; ! ? "
         "understanding representation bidirectional language model character convolution "
         "highway projection memory").split()


def make_batch(n_sent, n_tok, seed):
    rng = random.Random(seed)
    return [[rng.choice(WORDS) for _ in range(n_tok)] for _ in range(n_sent)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--options", default=os.path.join(DEFAULT_DIR, "original_options.json"))
    ap.add_argument("--weights", default=os.path.join(DEFAULT_DIR, "original_weights.hdf5"))
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default=None, help="also write the result here")
    args = ap.parse_args(argv)

    if not (os.path.exists(args.options) and os.path.exists(args.weights)):
        if args.options != ap.get_default("options") or args.weights != ap.get_default("weights"):
            raise SystemExit("options/weights not found")
        print(f"generating the 'original' config into {DEFAULT_DIR} ...", flush=True)
        subprocess.run([sys.executable, MAKE_WEIGHTS, "original",
                        "--out-dir", DEFAULT_DIR], check=True)

    warnings.filterwarnings("ignore")
    logging.getLogger().setLevel(logging.ERROR)
    import torch
    torch.set_num_threads(args.threads)
    import allennlp
    from allennlp.modules.elmo import _ElmoBiLm, batch_to_ids

    sentences = make_batch(args.batch, args.tokens, args.seed)
    t0 = time.perf_counter()
    bilm = _ElmoBiLm(args.options, args.weights)
    bilm.eval()
    t_load = time.perf_counter() - t0

    t0 = time.perf_counter()
    char_ids = batch_to_ids(sentences)
    t_ids = time.perf_counter() - t0

    def one_batch():
        bilm._elmo_lstm.reset_states()
        t = time.perf_counter()
        with torch.no_grad():
            out = bilm(char_ids)
        dt = time.perf_counter() - t
        return dt, out

    for _ in range(args.warmup):
        one_batch()
    times = []
    for i in range(args.repeats):
        dt, out = one_batch()
        times.append(dt)
        print(f"  batch {i}: {dt:.3f} s  ({args.batch * args.tokens / dt:.1f} tokens/s)",
              flush=True)
    assert out["activations"][2].shape == (args.batch, args.tokens + 2,
                                           2 * bilm._token_embedder.get_output_dim())

    n_tok = args.batch * args.tokens
    med = statistics.median(times)
    res = {
        "allennlp": allennlp.__version__, "torch": torch.__version__,
        "python": platform.python_version(), "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "options": os.path.abspath(args.options),
        "batch": args.batch, "tokens_per_sentence": args.tokens, "tokens_per_batch": n_tok,
        "warmup_batches": args.warmup, "timed_batches": args.repeats,
        "seconds_per_batch": times, "median_s": med, "min_s": min(times),
        "tokens_per_s_median": n_tok / med, "tokens_per_s_best": n_tok / min(times),
        "sentences_per_s_median": args.batch / med,
        "model_load_s": t_load, "batch_to_ids_s": t_ids,
    }
    print(f"allennlp {res['allennlp']} torch {res['torch']} threads {res['torch_threads']} "
          f"(cpus {res['cpu_count']}); model load {t_load:.1f} s (not timed)")
    print(f"batch_to_ids for {args.batch}x{args.tokens}: {t_ids * 1e3:.1f} ms (not in figure)")
    print(f"_ElmoBiLm forward, {args.batch} x {args.tokens} tokens: median {med:.3f} s/batch "
          f"-> {res['tokens_per_s_median']:.1f} tokens/s (best {res['tokens_per_s_best']:.1f})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
