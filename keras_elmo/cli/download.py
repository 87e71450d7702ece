"""Fetches a model ahead of time into the cache, verified, and says where.

    keras-elmo download elmo_2x4096_en
    keras-elmo download https://example.org/my-elmo/ --cache-dir /data/elmo

NAME is anything `--preset` accepts (`keras-elmo presets` lists the names;
published archives such as `efml_zh` are unpacked). Prints the folder, its
format and the sha256 of the files, so they can be pinned.
"""

import os
import sys

HELP = "Download a published model into the cache ahead of time."


def add_arguments(parser):
    parser.add_argument("name", help="A preset name, URL or hf://owner/repo.")
    parser.add_argument(
        "--cache-dir",
        default=None,
        help="Cache folder (default: $KERAS_ELMO_CACHE, else "
        "$KERAS_HOME/keras_elmo/presets).",
    )
    parser.add_argument(
        "--force", action="store_true", help="Download again even if cached."
    )


def run(args):
    from keras_elmo.presets.download import read_stamp
    from keras_elmo.presets.download import sha256_of
    from keras_elmo.presets.sources import resolve_model

    resolved = resolve_model(
        args.name, cache_dir=args.cache_dir, force=args.force
    )
    sys.stdout.write(
        f"{resolved.description} ({resolved.format}): {resolved.path}\n"
    )
    if resolved.format != "allennlp":
        for name in sorted(os.listdir(resolved.path)):
            path = os.path.join(resolved.path, name)
            if os.path.isfile(path):
                sys.stdout.write(f"  {path}  sha256 {sha256_of(path)}\n")
        return 0
    stamp = read_stamp(os.path.dirname(resolved.weights)) or {}
    for path in (resolved.options, resolved.weights):
        sha = (stamp.get(os.path.basename(path)) or {}).get("sha256")
        suffix = f"  sha256 {sha}" if sha else ""
        sys.stdout.write(f"  {path}{suffix}\n")
    return 0
