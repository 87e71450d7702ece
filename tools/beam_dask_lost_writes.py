"""Shows Beam's `DaskRunner` finishing pipelines without their writes.

    pip install 'apache-beam[dask]==2.77.*'
    python tools/beam_dask_lost_writes.py [--workers 2] [--out DIR]

Starts a `dask.distributed` cluster of `--workers` worker processes on
127.0.0.1 (closed at the end), then runs two tiny pipelines on it with
`apache_beam.runners.dask.dask_runner.DaskRunner` (the name
`--runner DaskRunner` does not resolve in Beam 2.77; the class does):

- `group`: `Create(["a", "b", "a"]) -> Map(x -> (x, 1)) -> GroupByKey ->
  Map(format) -> WriteToText(DIR/group)`: expected 2 lines;
- `side_input`: `Create(["x"]) -> Map(x, AsList(Create([1, 2, 3]))) ->
  WriteToText(DIR/side_input)`: expected 1 line.

Each pipeline's `run().wait_until_finish()` returns without an error; the
script then counts the lines in the files the writes left, prints
expected against found and exits 1 if any write lost lines (the bug
reproduced), 0 if both are complete. The same pipelines give the
expected lines on Beam's `BundleBasedDirectRunner` (`--check-direct`).

Likely cause (apache_beam/runners/dask/dask_runner.py, `run_pipeline`):
the runner computes only the last Dask bag of its translation ("we can get
away with computing just the last value, which should be connected to the
full Bag Task Graph"); a `WriteToText` is several branches joined by side
inputs (init, per-bundle writes, finalize), which that graph does not
connect, so the bundle writes are never computed.
"""

import argparse
import glob
import logging
import os
import tempfile

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

logger = logging.getLogger("beam_dask_lost_writes")

EXPECTED = {"group": 2, "side_input": 1}


def build(pipeline, case, prefix):
    """Adds pipeline `case` writing to `prefix`."""
    if case == "group":
        lines = (
            pipeline
            | beam.Create(["a", "b", "a"])
            | beam.Map(lambda x: (x, 1))
            | beam.GroupByKey()
            | beam.Map(lambda kv: f"{kv[0]} {sum(kv[1])}")
        )
    elif case == "side_input":
        side = pipeline | "Side" >> beam.Create([1, 2, 3])
        lines = (
            pipeline
            | "Main" >> beam.Create(["x"])
            | beam.Map(lambda x, s: f"{x} {sum(s)}", beam.pvalue.AsList(side))
        )
    else:
        raise ValueError(
            f"Received an invalid value for `case`, expected one of "
            f"{sorted(EXPECTED)}, got {case!r}."
        )
    _ = lines | beam.io.WriteToText(prefix)


def lines_written(prefix):
    """Lines in every file `WriteToText(prefix)` left (0 if none)."""
    count = 0
    for path in glob.glob(prefix + "*"):
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                count += sum(1 for _ in f)
    return count


def run_case(case, out_dir, runner, options):
    prefix = os.path.join(out_dir, case)
    pipeline = beam.Pipeline(runner=runner, options=options)
    build(pipeline, case, prefix)
    result = pipeline.run()
    result.wait_until_finish()
    client = getattr(result, "client", None)  # DaskRunner's own Client
    if client is not None:
        client.close()
    return lines_written(prefix)


def run_on_dask(out_dir, workers=2):
    """`{case: lines found}` of both cases on a local Dask cluster."""
    from apache_beam.runners.dask.dask_runner import DaskRunner
    from distributed import LocalCluster

    found = {}
    with LocalCluster(
        n_workers=workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster:
        options = PipelineOptions(
            [f"--dask_client_address={cluster.scheduler_address}"]
        )
        for case in EXPECTED:
            found[case] = run_case(case, out_dir, DaskRunner(), options)
    return found


def run_direct(out_dir):
    """`{case: lines found}` on Beam's BundleBasedDirectRunner."""
    options = PipelineOptions([])
    return {
        case: run_case(case, out_dir, "BundleBasedDirectRunner", options)
        for case in EXPECTED
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=None)
    parser.add_argument("--check-direct", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", force=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or tmp
        found = run_on_dask(os.path.join(out, "dask"), args.workers)
        if args.check_direct:
            direct = run_direct(os.path.join(out, "direct"))
            logger.info("BundleBasedDirectRunner: %s lines", direct)
    for case, expected in EXPECTED.items():
        logger.info(
            "%-10s expected %d lines, DaskRunner wrote %d",
            case,
            expected,
            found[case],
        )
    return 1 if found != EXPECTED else 0


if __name__ == "__main__":
    raise SystemExit(main())
