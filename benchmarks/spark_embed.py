"""`keras-elmo embed --spark-master` on a local cluster vs in-process `embed`.

    python benchmarks/spark_embed.py [--lines 2000] [--warmup LINES]
        [--preset elmo_small_en] [--workers 2]
        [--results benchmarks/results/spark_embed.json]

Input: the first `--lines` lines of en_pd_lm (`valid.txt.gz`, then
`test.txt.gz`; real sentences at natural lengths), one plain file. Each
mode runs the real command in a fresh process (`python -m
keras_elmo.cli.main embed ... --top`, the shipped preset), timed end to
end (Python, TensorFlow and JVM start-up, model loads, the job, the
output):

- `embed`: in-process, HDF5 output, TensorFlow's default threads (one
  per core of the machine);
- `embed-1-core`: the same pinned to one core (`taskset -c 0`: TensorFlow
  sizes its pools to the affinity mask), i.e. per process of one core;
- `embed-W-processes` (W = `--workers`; steady only): W such processes
  side by side, process `i` pinned to core `i` and given every W-th line
  from line `i` (interleaved shares are alike in length; the contiguous
  halves of en_pd_lm's lines are not), timed from a common start (after
  each one's warm-up) to the last one's end: one process per core with every
  core busy, as Spark's workers run;
- `spark`: `--spark-master` on a `keras_elmo.integrations.spark.LocalCluster` of
  `--workers` workers of 1 core each (started once, before; its start-up
  is reported apart, a real cluster is already running), Parquet folder
  output (`float32`), with `PYSPARK_PYTHON` this interpreter.

End to end: each mode's command on the whole file, timed from outside.
Steady: the same engine warmed up first, in a fresh process
(`--steady MODE`): the in-process engine
(`keras_elmo.embedding.hdf5_output.embed_file`, model loaded) or a Spark
driver, each first run once on the `--warmup`-line prefix (default: the
whole file; Spark's JVMs compile their hot paths over the first
thousands of rows, which a long-running cluster has done), then timed
on the whole file: `lines / seconds`. Spark's steady time still
holds its jobs (the line count, the embedding and Parquet write, the
counts check), and the file records how many jobs, stages and tasks
Spark ran for it (`steady_spark_work`, from its status tracker: the
cut of the work, which the load does not change). The Spark rate per
worker is the rate over `--workers`, compared with each in-process
mode's rate (per process for `embed-W-processes`).
The machine's cores are shared with other jobs: the load average before
each run is recorded. The Spark vectors are checked against the
in-process ones (largest difference relative to each line's largest
magnitude).
"""

import argparse
import gzip
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np
from provenance import provenance
from provenance import write_json
from real_text import EN_PD_LM

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)

MODES = ("embed", "embed-1-core", "embed-processes", "spark")
# No split sizes: the command's own
# (`keras_elmo.integrations.spark.input_splits`) spread the file over both
# workers, as a user without tuning flags gets.
SPARK_CONF = ["spark.ui.enabled=false"]


def read_lines(count):
    lines = []
    for name in ("valid.txt.gz", "test.txt.gz", "train.txt.gz"):
        with gzip.open(os.path.join(EN_PD_LM, name), "rb") as f:
            for line in f:
                lines.append(line.rstrip(b"\n"))
                if len(lines) == count:
                    return lines
    raise ValueError(f"en_pd_lm has fewer than {count} lines.")


def command(mode, src, out, preset, master):
    argv = [sys.executable, "-m", "keras_elmo.cli.main", "embed", src, out]
    argv += ["--top", "--force", "--preset", preset]
    if mode == "embed-1-core":
        argv = ["taskset", "-c", "0"] + argv
    if mode == "spark":
        argv += ["--spark-master", master]
        for item in SPARK_CONF:
            argv += ["--spark-conf", item]
    return argv


def run(argv):
    load = os.getloadavg()[0]
    start = time.perf_counter()
    done = subprocess.run(
        argv, capture_output=True, text=True, env=steady_env(), cwd=REPO
    )
    seconds = time.perf_counter() - start
    if done.returncode:
        raise RuntimeError(f"{argv} failed:\n{done.stderr[-3000:]}")
    return seconds, load


def spark_work(context, group):
    """`{"jobs", "stages", "tasks"}` that Spark ran for job group `group`
    (its status tracker): how finely the run was cut, whatever the load."""
    tracker = context.statusTracker()
    jobs = tracker.getJobIdsForGroup(group)
    stages = sorted(
        {stage for job in jobs for stage in tracker.getJobInfo(job).stageIds}
    )
    infos = [tracker.getStageInfo(stage) for stage in stages]
    ran = [info for info in infos if info is not None and info.numTasks]
    return {
        "jobs": len(jobs),
        "stages": len(ran),
        "tasks": sum(info.numCompletedTasks for info in ran),
    }


def wait_together(folder, count, timeout_s=900):
    """Marks this process ready in `folder`, then waits until `count`
    processes are: side-by-side runs start their timed part together."""
    open(os.path.join(folder, str(os.getpid())), "w").close()
    deadline = time.monotonic() + timeout_s
    while len(os.listdir(folder)) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} processes never ready in {folder}")
        time.sleep(0.01)


def steady(mode, small, src, out, preset, master, barrier=None):
    """`{"seconds": ...}` to embed `src` once the engine has embedded
    `small`; for Spark, also the jobs, stages and tasks it ran.
    `barrier`: `(folder, count)` of `wait_together` before the timing."""
    context = None
    if mode.startswith("embed"):
        from keras_elmo.embedding import hdf5_output as hdf5_embedding
        from keras_elmo.embedding.model_spec import load_spec

        runner, _ = load_spec({"preset": preset})

        def embed(path, output):
            hdf5_embedding.embed_file(
                runner, path, output, layers="top", force=True, progress=False
            )

    else:
        from keras_elmo.integrations.spark import embed_text_file
        from keras_elmo.integrations.spark.session import spark_session

        spark = spark_session(
            master, [item.split("=", 1) for item in SPARK_CONF]
        )
        context = spark.sparkContext

        def embed(path, output):
            embed_text_file(
                spark,
                path,
                output,
                model={"preset": preset},
                layers="top",
                force=True,
            )

    embed(small, out + "-warm" + os.path.splitext(out)[1])
    if barrier is not None:
        wait_together(barrier[0], int(barrier[1]))
    if context is not None:
        context.setJobGroup("steady", "the timed run")
    start = time.perf_counter()
    embed(src, out)
    result = {"seconds": time.perf_counter() - start}
    if context is not None:
        result.update(spark_work(context, "steady"))
    return result


def steady_argv(mode, small, src, out, preset, master, core=None):
    argv = [sys.executable, os.path.abspath(__file__), "--steady", mode]
    argv += ["--steady-args", small, src, out, preset, master]
    if core is not None:
        argv = ["taskset", "-c", str(core)] + argv
    return argv


def steady_env():
    env = dict(
        os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYSPARK_PYTHON=sys.executable
    )
    env["PYTHONPATH"] = REPO
    return env


def run_steady(mode, small, src, out, preset, master):
    core = 0 if mode == "embed-1-core" else None
    argv = steady_argv(mode, small, src, out, preset, master, core)
    load = os.getloadavg()[0]
    done = subprocess.run(
        argv, capture_output=True, text=True, env=steady_env()
    )
    if done.returncode:
        raise RuntimeError(f"{argv} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), load


def run_steady_processes(lines, small, tmp, preset, workers):
    """`embed-W-processes`: `workers` pinned in-process engines side by
    side, each on its share of `lines`, started together."""
    barrier = os.path.join(tmp, "barrier")
    os.makedirs(barrier)
    cores = len(os.sched_getaffinity(0))
    processes = []
    load = os.getloadavg()[0]
    for i in range(workers):
        share = lines[i::workers]  # interleaved: alike in length
        src = os.path.join(tmp, f"share{i}.txt")
        with open(src, "wb") as f:
            f.write(b"\n".join(share) + b"\n")
        out = os.path.join(tmp, f"share{i}.hdf5")
        argv = steady_argv("embed", small, src, out, preset, "-", i % cores)
        argv += ["--barrier", barrier, str(workers)]
        processes.append(
            subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=steady_env(),
            )
        )
    seconds = []
    for i, process in enumerate(processes):
        stdout, stderr = process.communicate()
        if process.returncode:
            raise RuntimeError(f"process {i} failed:\n{stderr[-3000:]}")
        seconds.append(json.loads(stdout.strip().splitlines()[-1])["seconds"])
    rate = len(lines) / max(seconds)
    return {
        "seconds_steady": round(max(seconds), 2),
        "seconds_each": [round(t, 2) for t in seconds],
        "sentences_per_s_steady": round(rate, 2),
        "sentences_per_s_steady_per_process": round(rate / workers, 2),
        "load_before_steady": load,
    }


def max_relative_gap(parquet_dir, hdf5_path):
    """Largest |spark - embed| over each line's largest |embed|."""
    import pyarrow.parquet as pq

    table = pq.read_table(parquet_dir, columns=["line", "shape", "vectors"])
    worst = 0.0
    with h5py.File(hdf5_path, "r") as f:
        for row in table.to_pylist():
            want = f[str(row["line"])][()]
            got = np.frombuffer(row["vectors"], "<f4").reshape(row["shape"])
            if want.size:
                gap = np.abs(got - want).max() / np.abs(want).max()
                worst = max(worst, float(gap))
    return worst, table.num_rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument(
        "--warmup", type=int, default=None, help="lines (default: all)"
    )
    parser.add_argument("--preset", default="elmo_small_en")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--results", default=os.path.join(HERE, "results", "spark_embed.json")
    )
    parser.add_argument("--steady", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--steady-args", nargs=5, help=argparse.SUPPRESS)
    parser.add_argument("--barrier", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.steady:
        timed = steady(args.steady, *args.steady_args, barrier=args.barrier)
        print(json.dumps(timed))
        return
    from keras_elmo.integrations.spark import LocalCluster

    lines = read_lines(args.lines)
    results = {
        "provenance": provenance(),
        "pyspark": importlib.metadata.version("pyspark"),
        "input": {
            "source": "en_pd_lm valid.txt.gz (first lines)",
            "lines": len(lines),
            "tokens": sum(len(line.split()) for line in lines),
            "warmup_lines": args.warmup or len(lines),
        },
        "preset": args.preset,
        "spark_workers": args.workers,
        "spark_cores_per_worker": 1,
        "modes": {},
    }
    sizes = sorted({args.warmup or len(lines), len(lines)})
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for size in sizes:
            files[size] = os.path.join(tmp, f"in{size}.txt")
            with open(files[size], "wb") as f:
                f.write(b"\n".join(lines[:size]) + b"\n")
        start = time.perf_counter()
        cluster = LocalCluster(
            workers=args.workers,
            cores=1,
            lifetime_s=3600,
            work_dir=os.path.join(tmp, "cluster"),
            env={"PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"},
        ).start()
        results["spark_cluster_start_seconds"] = round(
            time.perf_counter() - start, 2
        )
        outputs = {}
        full, small = files[len(lines)], files[args.warmup or len(lines)]
        try:
            for mode in MODES:
                if mode == "embed-processes":
                    name = f"embed-{args.workers}-processes"
                    entry = run_steady_processes(
                        lines, small, tmp, args.preset, args.workers
                    )
                    results["modes"][name] = entry
                    print(name, entry, flush=True)
                    continue
                out = os.path.join(tmp, f"{mode}-e2e")
                out += "" if mode == "spark" else ".hdf5"
                t_all, load_all = (None, None)
                if mode != "embed-1-core":
                    argv = command(mode, full, out, args.preset, cluster.url)
                    t_all, load_all = run(argv)
                    outputs[mode] = out
                steady_out = os.path.join(tmp, f"{mode}-steady")
                steady_out += "" if mode == "spark" else ".hdf5"
                timed, load_steady = run_steady(
                    mode, small, full, steady_out, args.preset, cluster.url
                )
                t_steady = timed.pop("seconds")
                rate = len(lines) / t_steady
                entry = {
                    "seconds_steady": round(t_steady, 2),
                    "sentences_per_s_steady": round(rate, 2),
                    "load_before_steady": load_steady,
                }
                if t_all is not None:
                    entry.update(
                        seconds_end_to_end=round(t_all, 2),
                        sentences_per_s_end_to_end=round(len(lines) / t_all, 2),
                        load_before_end_to_end=load_all,
                        command=command(mode, "IN", "OUT", args.preset, "URL"),
                    )
                if mode == "spark":
                    entry["sentences_per_s_steady_per_worker"] = round(
                        rate / args.workers, 2
                    )
                    entry["steady_spark_work"] = timed
                results["modes"][mode] = entry
                print(mode, entry, flush=True)
        finally:
            cluster.stop()
        try:
            gap, rows = max_relative_gap(outputs["spark"], outputs["embed"])
            results["spark_vs_embed"] = {
                "rows": rows,
                "max_relative_gap": gap,
            }
        except OSError as e:  # recorded, not hidden
            results["spark_vs_embed"] = {"error": repr(e)}
            results["spark_vs_embed"]["listing"] = sorted(os.listdir(tmp))
    modes = results["modes"]
    per_worker = modes["spark"]["sentences_per_s_steady_per_worker"]
    for base in ("embed", "embed-1-core"):
        results[f"spark_per_worker_vs_{base}"] = round(
            per_worker / modes[base]["sentences_per_s_steady"], 3
        )
    side_by_side = f"embed-{args.workers}-processes"
    results[f"spark_per_worker_vs_{side_by_side}"] = round(
        per_worker / modes[side_by_side]["sentences_per_s_steady_per_process"],
        3,
    )
    results["target"] = (
        "Spark steady sentences/s per worker >= 0.8x in-process per process"
    )
    results["provenance_end"] = provenance()
    write_json(args.results, results)
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
