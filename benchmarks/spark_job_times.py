"""Where a Spark embedding run spends its time: jobs, from Spark's event log.

    python benchmarks/spark_job_times.py [--lines 2000] [--repeats 3]
        [--results benchmarks/results/spark_job_times.json]

Starts a `keras_elmo.integrations.spark.LocalCluster` of 2 workers of 1 core,
and in ONE Spark application (so executors, their JVMs and Python workers stay
up) runs `keras_elmo.integrations.spark.embed_text_file` on the first `--lines`
lines of en_pd_lm (`valid.txt.gz` first; `elmo_small_en`, `--top`, Parquet
output, no split flags) `--repeats` times, with `spark.eventLog.enabled`
(uncompressed). Per repeat it writes the wall seconds and each Spark job of that
repeat from the event log: what it did (the call site of its first stage, e.g.
`parquet` for the embedding and write, `collect` for the line count and the
counts check), its seconds, and its tasks. The first repeats show the JVMs
warming up; the last is the warm run. Then it times the same lines in-process on
two processes side by side (each pinned to a core, every other line, warmed up
first), the pair a Spark run of 2 workers is compared with
(`benchmarks/spark_embed.py`'s `embed-2-processes`).
"""

import argparse
import glob
import json
import os
import sys
import tempfile
import time

from provenance import provenance
from provenance import write_json

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
sys.path.insert(0, HERE)

import spark_embed  # noqa: E402


def read_jobs(event_dir):
    """`[{job, start, end, seconds, stage, tasks}]` from the event log."""
    (path,) = glob.glob(os.path.join(event_dir, "*"))
    jobs, names, tasks = {}, {}, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            kind = event["Event"]
            if kind == "SparkListenerJobStart":
                jobs[event["Job ID"]] = {
                    "start": event["Submission Time"] / 1000,
                    "stages": event["Stage IDs"],
                }
            elif kind == "SparkListenerJobEnd":
                jobs[event["Job ID"]]["end"] = event["Completion Time"] / 1000
            elif kind == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                names[info["Stage ID"]] = info["Stage Name"].split(" at ")[0]
                tasks[info["Stage ID"]] = info["Number of Tasks"]
    out = []
    for job, info in sorted(jobs.items()):
        ran = [s for s in info["stages"] if s in names]
        out.append(
            {
                "job": job,
                "start": info["start"],
                "end": info["end"],
                "seconds": round(info["end"] - info["start"], 3),
                "does": names[ran[-1]] if ran else "skipped",
                "tasks": sum(tasks[s] for s in ran),
            }
        )
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--results",
        default=os.path.join(HERE, "results", "spark_job_times.json"),
    )
    args = parser.parse_args(argv)
    from keras_elmo.integrations.spark import LocalCluster
    from keras_elmo.integrations.spark import embed_text_file
    from keras_elmo.integrations.spark.session import spark_session

    os.environ.update(spark_embed.steady_env())
    lines = spark_embed.read_lines(args.lines)
    record = {"provenance": provenance(), "lines": len(lines), "repeats": []}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "in.txt")
        with open(src, "wb") as f:
            f.write(b"\n".join(lines) + b"\n")
        events = os.path.join(tmp, "events")
        os.makedirs(events)
        conf = [item.split("=", 1) for item in spark_embed.SPARK_CONF] + [
            ("spark.eventLog.enabled", "true"),
            ("spark.eventLog.dir", "file://" + events),
            ("spark.eventLog.compress", "false"),
            ("spark.eventLog.rolling.enabled", "false"),
        ]
        with LocalCluster(
            workers=2,
            cores=1,
            lifetime_s=1800,
            work_dir=os.path.join(tmp, "cluster"),
            env={"PYTHONPATH": REPO, "TF_CPP_MIN_LOG_LEVEL": "3"},
        ) as cluster:
            spark = spark_session(cluster.url, conf)
            spans = []
            for _ in range(args.repeats):
                start = time.time()
                embed_text_file(
                    spark,
                    src,
                    os.path.join(tmp, "out"),
                    model={"preset": "elmo_small_en"},
                    layers="top",
                    force=True,
                )
                spans.append((start, time.time()))
            spark.stop()
            jobs = read_jobs(events)
        for start, end in spans:
            mine = [j for j in jobs if start <= j["start"] <= end]
            record["repeats"].append(
                {
                    "seconds": round(end - start, 3),
                    "jobs": [
                        {k: j[k] for k in ("does", "seconds", "tasks")}
                        for j in mine
                    ],
                    "seconds_in_jobs": round(
                        sum(j["seconds"] for j in mine), 3
                    ),
                }
            )
            print(json.dumps(record["repeats"][-1]), flush=True)
        pair = spark_embed.run_steady_processes(
            lines, src, tmp, "elmo_small_en", 2
        )
    record["embed-2-processes"] = pair
    record["provenance_end"] = provenance()
    write_json(args.results, record)
    print(json.dumps(pair))
    print(f"wrote {args.results}")


if __name__ == "__main__":
    main()
