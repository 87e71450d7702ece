"""Embedding on Apache Spark (`pip install 'keras-elmo[spark]'`).

`embed_dataframe` adds ELMo vectors to a DataFrame's text column (Spark's
`mapInArrow`, one model per Python worker); `embed_text_file` embeds a
sentence-per-line corpus into a Parquet dataset or the `allennlp elmo`
HDF5 layout, as `keras-elmo embed INPUT OUTPUT --spark-master URL` does.
See docs/SPARK.md.
"""

try:
    import pyspark  # noqa: F401
except ImportError as e:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "Embedding on Apache Spark needs the `spark` extra: "
        "pip install 'keras-elmo[spark]' (pyspark is not installed)."
    ) from e

from keras_elmo.integrations.spark.dataframe import embed_dataframe  # noqa: E402
from keras_elmo.integrations.spark.embed_file import MANIFEST  # noqa: E402
from keras_elmo.integrations.spark.embed_file import embed_text_file  # noqa: E402
from keras_elmo.integrations.spark.embed_file import read_manifest  # noqa: E402
from keras_elmo.integrations.spark.local_cluster import LocalCluster  # noqa: E402
from keras_elmo.integrations.spark.output_counts import CountsMismatch  # noqa: E402

__all__ = [
    "embed_dataframe",
    "embed_text_file",
    "read_manifest",
    "MANIFEST",
    "CountsMismatch",
    "LocalCluster",
]
