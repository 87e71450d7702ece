"""Converts the TFRecord shards of `keras-elmo embed --runner` to HDF5.

    keras-elmo embed-records out/ vectors.hdf5

Writes the `allennlp elmo` layout `keras-elmo embed` writes (float32
datasets `"0".."N-1"` and `sentence_to_index`), the input files taken in
sorted order as one file; for outputs that fit one HDF5 file. The shards
are read from a local directory; apache-beam is not needed.
"""

import sys

HELP = "Convert `embed --runner` TFRecord shards to the allennlp HDF5 layout."


def add_arguments(parser):
    parser.add_argument("records", help="Output directory of embed --runner.")
    parser.add_argument("output", help="HDF5 file to write.")
    parser.add_argument(
        "--force", action="store_true", help="Overwrite OUTPUT."
    )


def run(args):
    from keras_elmo.embedding.embedding_records import records_to_hdf5

    total = records_to_hdf5(args.records, args.output, force=args.force)
    sys.stderr.write(f"Wrote {total} sentences to {args.output}\n")
    return 0
