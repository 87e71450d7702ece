"""Repeats a 2-worker local Beam embedding and counts runs that lose lines.

    python benchmarks/beam_exactly_once.py [--runs 20] [--lines 1000]
        [--runners ours,beam] [--preset elmo_small_en]
        [--results benchmarks/results/beam_exactly_once.json]

Input: the first `--lines` lines of en_pd_lm (as `beam_embed.py`). Each
run is `keras-elmo embed IN OUT --top --force --preset PRESET --runner
FnApiRunner --direct_num_workers=2 --direct_running_mode=multi_threading`
called in this process (`keras_elmo.cli.main.main`), on:

- `ours`: the command as shipped, which runs that mode on
  `SizeFlushedFnApiRunner` (`keras_elmo/integrations/beam/local_runner.py`);
- `beam`: the control, Beam choosing its own `FnApiRunner` (the
  command's `runner_for` is replaced by one returning None).

A run is lost-free when the manifest is written and the shards hold one
record per input line, each line once; the command's count checks turn a
loss into an error, which is recorded with the run. Runs of the two
runners alternate, so load affects both alike.
"""

import argparse
import collections
import logging
import os
import tempfile
import time
from unittest import mock

from beam_embed import read_lines
from provenance import provenance
from provenance import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNERS = ("ours", "beam")
THREADS = [
    "--runner",
    "FnApiRunner",
    "--direct_num_workers=2",
    "--direct_running_mode=multi_threading",
]
logger = logging.getLogger("beam_exactly_once")


def run_once(runner, src, out, preset, expected):
    """One run; returns its record (ok, lines in the shards, error)."""
    from keras_elmo.cli.main import main
    from keras_elmo.embedding.embedding_records import iter_records
    from keras_elmo.integrations.beam import pipeline

    argv = ["embed", src, out, "--top", "--force", "--preset", preset]
    replace = mock.patch.object(pipeline, "runner_for", lambda options: None)
    start = time.perf_counter()
    error = lines = None
    try:
        if runner == "beam":
            with replace:
                code = main(argv + THREADS)
        else:
            code = main(argv + THREADS)
        if code:
            raise RuntimeError(f"the command exited with {code}")
        seen = collections.Counter(r["line"] for r in iter_records(out))
        lines = len(seen)
        if lines != expected or max(seen.values()) != 1:
            error = f"shards hold {sum(seen.values())} records, {lines} lines"
    except Exception as e:  # noqa: BLE001 - the run's outcome is recorded
        error = f"{type(e).__name__}: {str(e)[-300:]}"
    seconds = time.perf_counter() - start
    return {
        "ok": error is None,
        "lines": lines,
        "error": error,
        "seconds": round(seconds, 1),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--runners", default=",".join(RUNNERS))
    parser.add_argument("--preset", default="elmo_small_en")
    parser.add_argument(
        "--results",
        default=os.path.join(HERE, "results", "beam_exactly_once.json"),
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", force=True)
    runners = args.runners.split(",")
    unknown = sorted(set(runners) - set(RUNNERS))
    if unknown or args.runs < 1:
        raise ValueError(
            f"Expected `--runners` among {list(RUNNERS)} and `--runs` >= 1, "
            f"got {args.runners!r} and {args.runs}."
        )
    import apache_beam

    lines = read_lines(args.lines)
    results = {
        "provenance": provenance(),
        "apache_beam": apache_beam.__version__,
        "input": {
            "source": "en_pd_lm valid.txt.gz (first lines)",
            "lines": len(lines),
        },
        "options": THREADS,
        "runs": {name: [] for name in runners},
    }
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.txt")
        with open(src, "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
        for i in range(args.runs):
            for name in runners:
                out = os.path.join(tmp, f"out-{name}")
                entry = run_once(name, src, out, args.preset, len(lines))
                results["runs"][name].append(entry)
                logger.info("run %d %s %s", i, name, entry)
    results["summary"] = {
        name: {
            "runs": len(entries),
            "runs_losing_lines": sum(not e["ok"] for e in entries),
        }
        for name, entries in results["runs"].items()
    }
    results["provenance_end"] = provenance()
    write_json(args.results, results)
    logger.info("%s; wrote %s", results["summary"], args.results)


if __name__ == "__main__":
    main()
