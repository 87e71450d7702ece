"""Renders the results files into the RESULTS documents; nobody types them.

    python tools/render_results.py           # rewrite the documents
    python tools/render_results.py --check   # exit 1 if one is out of date

Two kinds of output (benchmarks/README.md, "Results discipline"):

- `benchmarks/RESULTS.md` is generated whole: one section per JSON file
  of `benchmarks/results/` and `examples/results/`, with the command that
  wrote it, its provenance (commit, date, CPU, cores, load) and every
  scalar figure it holds (per-epoch histories and per-round timings stay
  in the JSON).
- Hand-written documents hold generated blocks,

      <!-- generated: NAME -->
      ... (rewritten from the results files) ...
      <!-- end generated -->

  where NAME is one of `BLOCKS` (tools/results_blocks.py: the tables of
  examples/RESULTS.md).

`tests/results_files_test.py` runs `--check`, so a results file rerun
without re-rendering fails the suite, and so does an edited table.
"""

import argparse
import glob
import importlib.util
import os
import re
import sys

from keras_elmo.utils.atomic import atomic_write

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIRS = ("benchmarks/results", "examples/results")
BENCHMARKS_RESULTS = "benchmarks/RESULTS.md"
DOCUMENTS_WITH_BLOCKS = ("examples/RESULTS.md",)
# Documents that quote figures as `NUM<!-- fig FILE KEY {FMT} -->`.
QUOTING_DOCUMENTS = (
    "README.md",
    "keras_elmo/presets/elmo_small_en/MODEL_CARD.md",
    "examples/RESULTS.md",
) + tuple(
    sorted(
        os.path.relpath(path, REPO)
        for path in glob.glob(os.path.join(REPO, "docs", "*.md"))
    )
)
# Bulky records that the JSON keeps and the summary leaves out.
SKIPPED_KEYS = ("provenance", "history", "rounds", "versions", "runs")
# What a reader must know before using a file's figures (no figures
# here); benchmarks/RESULTS.md prints each under its file's section.
CAVEATS = {
    "benchmarks/results/bilm_tf_training_mini.json": (
        "Not rerun since e3a8aae (docs/TRAINING.md names what changed "
        "since, as tools/results_freshness.py computes it). A reduced "
        "architecture, not the `small` setting; tokens/s taken on a "
        "loaded, shared machine."
    ),
    "benchmarks/results/bilm_tf_training.json": (
        "Not rerun since d3a082e (docs/TRAINING.md names what changed "
        "since). Two rounds, the order reversed in the second; a helper's "
        "tests "
        "ran at low priority beside both (the load before each run is "
        "in the file), so the seconds are noisier than the perplexities, which "
        "were the same in both rounds."
    ),
    "benchmarks/results/train_defaults.json": (
        "Run 0 (pd100k) was rerun from a clean clone at 93a1b2f "
        "(2026-12-03; test perplexity 137.0 against 135.6 in the earlier "
        "dirty-tree run: training is not bit-reproducible across "
        "machines). Run 1 (ewt) was rerun from a clean clone at d5173cc "
        "(2026-12-03; test perplexity 140.1 against 139.3 in the earlier "
        "dirty-tree run at 49053b2) and put back in its place. Run 2 "
        "(ptb) was measured at 3f1f917; benchmarks/train_defaults.py "
        "changed since (its provenance no longer counts its own results "
        "file as a change)."
    ),
    "benchmarks/results/saved_model_latency_packed_20_3_7_12_5_9_16_2.json": (
        "Measured while a test run shared the 2 cores (load about 6); "
        "not quoted anywhere."
    ),
    "examples/results/table2.json": (
        "Rerun from a clean clone at 4d806ad (2026-12-05, AMD EPYC); "
        "the earlier run (5839cc2, uncommitted changes, an Intel Xeon) "
        "gave the same POS row and sentiment within a standard deviation "
        "(last layer 75.60 there, 75.00 here): taggers train on the CPU, "
        "which does not round alike across machines. Table 3 and the "
        "tagger runs beside it shared the 2 cores (load in the file)."
    ),
    "examples/results/table3.json": (
        "Rerun from a clean clone at 4d806ad (2026-12-05, AMD EPYC) "
        "while other jobs shared the 2 cores (load in the file); the "
        "earlier run (5839cc2, uncommitted changes) gave every mean "
        "within one standard deviation of this one."
    ),
    "examples/results/word_sense_wordnet.json": (
        "Rerun from a clean clone at 4d806ad (2026-12-05) with the "
        "committed CoVe encoder: every accuracy equal to the earlier run "
        "at aeb13d1; only the timings differ."
    ),
    "benchmarks/results/profile_real_text.json": (
        "Measured while other jobs shared the 2 cores (the load is in "
        "the provenance); its FLOP counts are cited in "
        "docs/SIMPLE_ELMO.md's derivation."
    ),
    "benchmarks/results/spark_embed.json": (
        "Rerun from a clean clone at 92a98be (2026-12-05) with nothing "
        "else running; the modes ran one after another, so their ratios "
        "move with the load before each (in the file). Quoted in "
        "docs/SPARK.md."
    ),
    "benchmarks/results/spark_embed_10000.json": (
        "The same command on 10,000 lines (a clean clone at 92a98be, "
        "2026-12-05, nothing else running): the run's fixed Spark jobs "
        "amortized. Quoted in docs/SPARK.md."
    ),
    "benchmarks/results/backend_throughput.json": (
        "Measured while a helper's tests shared the 2 cores at low "
        "priority (the load before each pass is in the file); the "
        "backends took turns, so the ratios are side by side."
    ),
}
BLOCK = re.compile(
    r"(<!-- generated: (?P<name>[a-z_]+) -->\n)(?P<body>.*?)"
    r"(<!-- end generated -->)",
    re.S,
)


FIGURE = re.compile(
    # A sign belongs to the number only after a space or "(": in
    # "44.1%<!-- ... -->-47.8%" the dash is a range.
    # An exponent ("6.2e-07", from a `{:.1e}` format) belongs to it too.
    r"(?P<quoted>(?:(?<![^\s(])[-+])?[0-9][0-9,]*(?:\.[0-9]+)?"
    r"(?:[eE][-+]?[0-9]+)?%?)"
    r"<!-- fig (?P<file>\S+) (?P<key>.+?) (?P<format>\{\S*\}) -->"
)


def lookup(payload, key):
    """`payload[k1][k2]...` for `key` = "k1/k2/..."; a JSON key that
    itself holds "/" (e.g. "keras_elmo/fp32") is matched whole, the
    longest first."""
    value, parts = payload, key.split("/")
    while parts:
        if isinstance(value, list):
            value, parts = value[int(parts[0])], parts[1:]
            continue
        for end in range(len(parts), 0, -1):
            name = "/".join(parts[:end])
            if name in value:
                value, parts = value[name], parts[end:]
                break
        else:
            raise KeyError(f"{key!r}: no key {parts[0]!r}")
    return value


def update_quotes(text):
    """`text` with every quoted figure (`NUM<!-- fig FILE KEY {FMT} -->`)
    re-printed from its file: after a rerun, the quotes follow the files
    (the prose around them still needs a reader)."""

    def replace(match):
        value = lookup(load(match.group("file")), match.group("key"))
        quoted = match.group("format").format(value)
        return quoted + match.group(0)[len(match.group("quoted")) :]

    return FIGURE.sub(replace, text)


OLDER_HEADING = "Figures measured at an older commit:"


def mark_stale(text):
    """`text` with every stale quote marked as tools/results_freshness.py
    asks: an existing measured-at marker gets the visible text that is
    true of it today, and a stale record with no marker gets one, listed
    under `OLDER_HEADING` at the end of the page. For figures that cannot
    be rerun now; a rerun is better (the check then asks for the marker's
    removal)."""
    freshness = _sibling("results_freshness")
    text = _drop_obsolete_bullets(text, freshness)
    pieces, last = [], 0
    for match in freshness.MARKER.finditer(text):
        relative, commit = match.group("file"), match.group("commit")
        rest = text[match.end() :]
        payload = load(relative)
        if not freshness.text_problems(relative, payload, commit, rest):
            continue
        old = freshness.VISIBLE.match(rest)
        pieces.append(text[last : match.end()])
        pieces.append(freshness.visible_text(relative, payload, commit))
        last = match.end() + (old.end() if old else 0)
    text = "".join(pieces) + text[last:]

    missing = []
    quoted = sorted({m.group("file") for m in FIGURE.finditer(text)})
    marked = freshness.markers(text)
    for relative in quoted:
        payload = load(relative)
        for commit in sorted(freshness.stale_commits(relative, payload)):
            if any(commit.startswith(m) for m in marked.get(relative, [])):
                continue
            short = commit[:7]
            missing.append(
                f"- `{relative}`: <!-- measured-at {relative} {short} -->"
                + freshness.visible_text(relative, payload, short)
                + "."
            )
    if not missing:
        return text
    if OLDER_HEADING not in text:
        text = text.rstrip("\n") + f"\n\n{OLDER_HEADING}\n\n"
    else:
        text = text.rstrip("\n") + "\n"
    return text + "\n".join(missing) + "\n"


_SIBLINGS = {}


def _drop_obsolete_bullets(text, freshness):
    """`text` without the bullets of its `OLDER_HEADING` list whose marker
    names a commit the results file no longer holds (it was rerun), or
    repeats a marker found earlier on the page."""
    if OLDER_HEADING not in text:
        return text
    head, _, tail = text.partition(OLDER_HEADING)
    seen = set(
        (m.group("file"), m.group("commit"))
        for m in freshness.MARKER.finditer(head)
    )
    kept = []
    for line in tail.split("\n"):
        match = freshness.MARKER.search(line) if line.startswith("- ") else None
        if match:
            key = (match.group("file"), match.group("commit"))
            own = freshness.commits(load(key[0]))
            if key in seen or not any(c.startswith(key[1]) for c in own):
                continue
            seen.add(key)
        kept.append(line)
    tail = "\n".join(kept)
    if not freshness.MARKER.search(tail):
        return head.rstrip("\n") + "\n"
    return head + OLDER_HEADING + tail


def _sibling(name):
    """Imports `tools/NAME.py` once (this script is run by path, not as
    a package)."""
    if name in _SIBLINGS:
        return _SIBLINGS[name]
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(REPO, "tools", f"{name}.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _SIBLINGS[name] = module
    return module


results_blocks = _sibling("results_blocks")
load = results_blocks.load
BLOCKS = results_blocks.BLOCKS


def number(value):
    """A figure as text: ints whole, floats to 4 significant digits."""
    if isinstance(value, bool) or value is None:
        return str(value).lower() if isinstance(value, bool) else "null"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}"
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 120 else text[:117] + "..."


def scalar_rows(payload, prefix=""):
    """`(key/path, value)` for every scalar under `payload`, skipping the
    bulky records; a short list of scalars is one row."""
    rows = []
    items = (
        payload.items()
        if isinstance(payload, dict)
        else ((str(i), v) for i, v in enumerate(payload))
    )
    for key, value in items:
        if key in SKIPPED_KEYS and isinstance(value, (dict, list)):
            continue
        path = f"{prefix}{key}"
        if isinstance(value, (dict, list)):
            if isinstance(value, list) and all(
                not isinstance(v, (dict, list)) for v in value
            ):
                if len(value) <= 8:
                    shown = ", ".join(number(v) for v in value)
                    rows.append((path, f"[{shown}]"))
                continue
            rows += scalar_rows(value, path + "/")
        else:
            rows.append((path, number(value)))
    return rows


def provenance_line(record):
    load_average = record.get("load_average") or []
    commit = (record.get("commit") or "unknown")[:10]
    dirty = (
        " (+ uncommitted changes)" if record.get("uncommitted_changes") else ""
    )
    return (
        f"{record.get('date_utc', '?')} UTC, commit `{commit}`{dirty}, "
        f"{record.get('cpu_model', '?')} x {record.get('cpu_cores', '?')}, "
        f"load {' / '.join(str(x) for x in load_average)}"
    )


def command_of(relative, record):
    """The command as a user types it, from the recorded argv."""
    command = record.get("command") or "?"
    first = command.split(" ", 1)[0]
    folder = os.path.dirname(os.path.dirname(relative))
    if first.endswith(".py") and "/" not in first:
        return f"python {folder}/{command}"
    return command


def _run_list(payload):
    """The runs of a file that accumulates them (a list of dicts), or []."""
    runs = payload.get("runs")
    if isinstance(runs, list) and all(isinstance(r, dict) for r in runs):
        return runs
    return []


def file_section(relative):
    payload = load(relative)
    lines = [f"## `{relative}`", ""]
    records = (
        [("", payload["provenance"])]
        if "provenance" in payload
        else [
            (f"run {i} ({run.get('corpus', '')}): ", run["provenance"])
            for i, run in enumerate(_run_list(payload))
            if "provenance" in run
        ]
    )
    for label, record in records:
        lines.append(f"- {label}`{command_of(relative, record)}`")
        lines.append(f"  - {provenance_line(record)}")
    if relative in CAVEATS:
        lines += ["", f"> {CAVEATS[relative]}"]
    lines += ["", "| figure | value |", "| --- | --- |"]
    if _run_list(payload):
        for i, run in enumerate(_run_list(payload)):
            lines += [f"| `runs/{i}/{k}` | {v} |" for k, v in scalar_rows(run)]
    lines += [f"| `{k}` | {v} |" for k, v in scalar_rows(payload)]
    return "\n".join(lines) + "\n"


def results_files():
    found = []
    for folder in RESULTS_DIRS:
        found += sorted(glob.glob(os.path.join(REPO, folder, "*.json")))
    return [os.path.relpath(p, REPO) for p in found]


def render_benchmarks_results():
    sections = [
        "# Results\n\n"
        "<!-- Generated by `python tools/render_results.py` from the "
        "results files; do not edit. -->\n\n"
        "Every figure the project publishes, as its results file holds "
        "it: the command that wrote the file, the commit, machine, load "
        "and date it ran on, and the scalar figures (per-epoch histories "
        "and per-round timings are in the JSON). Figures from before the "
        "results discipline (sessions 1-5) had no results file and are "
        "no longer published; their log is in git history "
        "(`git show 4e27aba:benchmarks/RESULTS.md`).\n"
    ]
    sections += [file_section(relative) for relative in results_files()]
    return "\n".join(sections)


def render_blocks(text):
    def replace(match):
        name = match.group("name")
        if name not in BLOCKS:
            raise KeyError(
                f"unknown generated block {name!r}: {sorted(BLOCKS)}"
            )
        body = "\n".join(BLOCKS[name]()) + "\n"
        return match.group(1) + body + match.group(4)

    return BLOCK.sub(replace, text)


def render_word_sense(text):
    """The word-sense section, drawn by examples/word_sense_report.py."""
    spec = importlib.util.spec_from_file_location(
        "word_sense_report",
        os.path.join(REPO, "examples", "word_sense_report.py"),
    )
    report = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(report)
    if report.BEGIN not in text:
        return text
    head, rest = text.split(report.BEGIN, 1)
    section = report.render_markdown(
        load("examples/results/word_sense_wordnet.json")
    )
    return head + section.rstrip("\n") + rest.split(report.END, 1)[1]


def rendered_documents():
    """`{path: text}` of every document as the results files make it."""
    documents = {BENCHMARKS_RESULTS: render_benchmarks_results()}
    for relative in DOCUMENTS_WITH_BLOCKS:
        with open(os.path.join(REPO, relative), encoding="utf-8") as f:
            documents[relative] = render_word_sense(render_blocks(f.read()))
    return documents


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--update-quotes",
        action="store_true",
        help="Also re-print every quoted figure of QUOTING_DOCUMENTS from "
        "its results file.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="Write nothing; exit 1 and name each out-of-date document.",
    )
    parser.add_argument(
        "--mark-stale",
        action="store_true",
        help="Also mark each stale quote of QUOTING_DOCUMENTS as measured "
        "at its older commit, with the visible text the check holds true.",
    )
    args = parser.parse_args(argv)
    stale = []
    documents = rendered_documents()
    if args.update_quotes or args.mark_stale:
        for relative in QUOTING_DOCUMENTS:
            if relative not in documents:
                with open(os.path.join(REPO, relative), encoding="utf-8") as f:
                    documents[relative] = f.read()
            if args.update_quotes:
                documents[relative] = update_quotes(documents[relative])
            if args.mark_stale:
                documents[relative] = mark_stale(documents[relative])
    for relative, text in documents.items():
        path = os.path.join(REPO, relative)
        with open(path, encoding="utf-8") as f:
            current = f.read()
        if current == text:
            continue
        stale.append(relative)
        if not args.check:
            with atomic_write(path) as f:
                f.write(text)
    if args.check and stale:
        sys.stderr.write(
            "out of date (run python tools/render_results.py): "
            + ", ".join(stale)
            + "\n"
        )
        return 1
    for relative in stale:
        sys.stdout.write(f"rewrote {relative}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
