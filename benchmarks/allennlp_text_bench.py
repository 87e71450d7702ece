"""AllenNLP's `_ElmoBiLm` on the real-text workloads (reference venv).

    /tmp/elmo_ref/venv/bin/python benchmarks/allennlp_text_bench.py \\
        --text FILE [--workloads file,sorted,uniform] [--lines 256]
        [--runs 3] [--threads 2] [--variants plain,cache]
        [--options O.json --weights W.hdf5]

Runs in the AllenNLP reference venv (`tools/allennlp_ref/setup_ref.sh`); imports
nothing from keras_elmo but `benchmarks/real_text.py` (pure Python). Times
what `tools/allennlp_ref/bench_allennlp.py` times, `_ElmoBiLm.forward` on
precomputed character ids under `torch.no_grad()` with the LSTM state
reset before each batch, over every batch of a workload (one pass),
after a warm-up on the first batch. Variants: `plain` (`_ElmoBiLm(
options, weights)`) and `cache` (`vocab_to_cache=` every distinct token
of the workload, so the char-CNN is never run; `forward(char_ids,
word_ids)`). Prints one `RESULT {json}` line per workload and variant
with the seconds of each pass; `benchmarks/allennlp_side_by_side.py` drives it.
"""

import argparse
import logging
import os
import sys
import time
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import real_text  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    real_text.add_arguments(parser, variants="plain,cache")
    args = parser.parse_args(argv)

    warnings.filterwarnings("ignore")
    logging.getLogger().setLevel(logging.ERROR)
    import torch

    torch.set_num_threads(args.threads)
    import allennlp
    from allennlp.modules.elmo import _ElmoBiLm
    from allennlp.modules.elmo import batch_to_ids

    for workload in args.workloads.split(","):
        groups = real_text.batches(workload, args.text, args.lines)
        vocab = ["@@PADDING@@"] + sorted(
            {t for g in groups for s in g for t in s}
        )
        index = {t: i for i, t in enumerate(vocab)}
        char_ids = [batch_to_ids(g) for g in groups]
        word_ids = []
        for ids, g in zip(char_ids, groups):
            words = torch.zeros(ids.shape[:2], dtype=torch.long)
            for b, sentence in enumerate(g):
                for t, token in enumerate(sentence):
                    words[b, t] = index[token]
            word_ids.append(words)
        for variant in args.variants.split(","):
            cache = vocab if variant == "cache" else None
            bilm = _ElmoBiLm(args.options, args.weights, vocab_to_cache=cache)
            bilm.eval()

            def one_pass(bilm=bilm, cached=cache is not None, first=None):
                start = time.perf_counter()
                for ids, words in list(zip(char_ids, word_ids))[:first]:
                    bilm._elmo_lstm.reset_states()
                    with torch.no_grad():
                        bilm(ids, words if cached else None)
                return time.perf_counter() - start

            one_pass(first=1)  # warm-up: the first batch
            seconds = [one_pass() for _ in range(args.runs)]
            print(
                real_text.dumps(
                    {
                        "side": "allennlp",
                        "workload": workload,
                        "variant": variant,
                        "seconds": seconds,
                        **real_text.describe(groups),
                        "versions": {
                            "allennlp": allennlp.__version__,
                            "torch": torch.__version__,
                        },
                        "threads": torch.get_num_threads(),
                    }
                ),
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
