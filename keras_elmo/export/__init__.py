"""SavedModel export with TF Hub `google/elmo/3` signatures."""

from keras_elmo.export.saved_model import export_saved_model
from keras_elmo.export.signatures import MAX_TOKENS

__all__ = ["export_saved_model", "MAX_TOKENS"]
