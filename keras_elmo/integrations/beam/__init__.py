"""Embedding a corpus on Apache Beam (`pip install keras-elmo[beam]`).

See `keras_elmo.integrations.beam.pipeline` for the pipeline, docs/BEAM.md for
runners.
"""

try:
    import apache_beam  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "Embedding on Apache Beam needs the `beam` extra: "
        "pip install 'keras-elmo[beam]' (apache-beam is not installed)."
    ) from e

from keras_elmo.integrations.beam.local_runner import SizeFlushedFnApiRunner  # noqa: E402
from keras_elmo.integrations.beam.model_handler import BiLMModelHandler  # noqa: E402
from keras_elmo.integrations.beam.output_dir import prepare_output_dir  # noqa: E402
from keras_elmo.integrations.beam.pipeline import EmbedBatches  # noqa: E402
from keras_elmo.integrations.beam.pipeline import ReadSentences  # noqa: E402
from keras_elmo.integrations.beam.pipeline import embed_corpus  # noqa: E402
from keras_elmo.integrations.beam.pipeline import run_embed_corpus  # noqa: E402
from keras_elmo.integrations.beam.write_embeddings import WriteEmbeddings  # noqa: E402

__all__ = [
    "BiLMModelHandler",
    "SizeFlushedFnApiRunner",
    "ReadSentences",
    "EmbedBatches",
    "WriteEmbeddings",
    "embed_corpus",
    "run_embed_corpus",
    "prepare_output_dir",
]
