"""The embedding engine: tokens in, ELMo vectors out.

`Embedder` (`keras_elmo.Embedder`) is the front door; `runners` turn a
BiLM, an `ElmoLayer` or a SavedModel into one batch call; `batching`
cuts sentences into length-ordered batches; `hdf5_output` writes the
`allennlp elmo` HDF5 layout through its crash-safe `journal`; the run
record (`run_identity`, `model_spec.model_files_identity`) says what
produced a file.
"""
