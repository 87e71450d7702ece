"""Rows whose tests live elsewhere: properties, kills, security, training.

Each row cites `path::test_function`; `cases_test.py` checks the function
exists, so a renamed or deleted test breaks the table.
"""

from tests.robustness.case_table import number
from tests.robustness.case_table import ref

PROPS = "tests/robustness/char_properties_test.py"
KILL = "tests/robustness/atomic_kill_test.py"
SEC = "tests/robustness/security_test.py"
FAULT = "tests/training/fault_test.py"
CRASH = "tests/robustness/embed_crash_test.py"
EMBED = "tests/cli/embed_cli_test.py"

CASES = number(
    "REF",
    [
        ref(
            "char ids (property)",
            "arbitrary bytes tokens, invalid UTF-8 included, in graph",
            "row length 50, BOW at 0, EOW after min(n, 48) bytes, PAD "
            "after, ids in [1, 261]; = NumPy",
            f"{PROPS}::test_in_graph_op_on_arbitrary_bytes",
        ),
        ref(
            "char ids (property)",
            "arbitrary bytes tokens through `CharacterIds`",
            "= `tokens_to_char_ids`",
            f"{PROPS}::test_character_ids_layer_equals_the_op",
        ),
        ref(
            "char ids (property)",
            "arbitrary unicode tokens",
            "`CharacterIds` = `batch_to_ids`",
            f"{PROPS}::test_layer_equals_batch_to_ids_on_unicode",
        ),
        ref(
            "char ids (property)",
            "tokens longer than 48 UTF-8 bytes",
            "the first 48 bytes, cut mid-character as AllenNLP",
            f"{PROPS}::test_cut_is_byte_level_as_allennlp",
        ),
        ref(
            "tokenization (property)",
            "unicode text rich in every kind of whitespace",
            "in-graph split = `str.split()`, capped at max_tokens",
            f"{PROPS}::test_in_graph_split_equals_str_split",
        ),
        ref(
            "tokenization (property)",
            "arbitrary bytes lines",
            "in-graph split = `keras-elmo embed`'s surrogateescape split",
            f"{PROPS}::test_in_graph_split_equals_embed_on_raw_bytes",
        ),
        ref(
            "atomic writes",
            "SIGKILL while weights, options, softmax, vocab, .keras, "
            "SavedModel and embed output are each stopped mid-write",
            "every destination byte-identical to the old file; temporaries "
            "only under other names",
            f"{KILL}::test_kill_mid_write_keeps_every_old_file",
        ),
        ref(
            "atomic writes",
            "SIGKILL at a random moment of a rewrite loop (weights, "
            "options, softmax, vocab)",
            "each destination = the complete old or the complete new file",
            f"{KILL}::test_kill_at_a_random_moment_leaves_old_or_new",
        ),
        ref(
            "training",
            "SIGKILL mid-epoch (after step 14 of 24), then rerun",
            "resumes from the last checkpoint; final weights = an "
            "uninterrupted run; history.json: same steps, loss, perplexity",
            f"{FAULT}::test_sigkill_mid_epoch_resumes_and_matches_uninterrupted",
        ),
        ref(
            "training",
            "a NaN injected into a batch",
            "TrainingDiverged naming the step and the last good checkpoint, "
            "which is intact",
            f"{FAULT}::test_nan_stops_training_and_keeps_the_last_good_checkpoint",
        ),
        ref(
            "embed",
            "interrupted run, then `--resume`",
            "committed chunks reused, result = an uninterrupted run",
            f"{EMBED}::test_resume_after_an_interruption",
        ),
        ref(
            "embed (crash injection)",
            "SIGKILL before each of the 84 write points of a run",
            "OUTPUT absent or complete and bit-equal; plain rerun refused; "
            "`resume` finishes bit-equal, at most one chunk recomputed",
            f"{CRASH}::test_a_kill_at_every_write_point_of_embed",
        ),
        ref(
            "embed (crash injection)",
            "SIGKILL before each of the 49 write points of a resumed run",
            "as above",
            f"{CRASH}::test_a_kill_at_every_write_point_of_a_resumed_embed",
        ),
        ref(
            "embed",
            "a second run while a run holds OUTPUT.partial",
            "refused (resume or force); the journal is untouched",
            f"{CRASH}::test_a_journal_in_use_is_neither_resumed_nor_discarded",
        ),
        ref(
            "embed",
            "`--resume` with another model, other layers, or an input "
            "edited in place (same token count)",
            "refused, naming what changed; then resumes with the same ones",
            f"{EMBED}::test_resume_refuses_another_model_input_or_options",
        ),
        ref(
            "security",
            "pickle, marshal, allow_pickle=True, safe_mode=False, eval/exec "
            "in keras_elmo/",
            "none found",
            f"{SEC}::test_no_code_or_object_deserialization_in_the_package",
        ),
        ref(
            "security",
            "every `load_model` call of the package",
            "passes `safe_mode=True`",
            f"{SEC}::test_every_keras_load_passes_safe_mode_true",
        ),
        ref(
            "security",
            "a `.keras` file with a Lambda through `convert`, `export`, "
            "`embed`",
            "refused (exit 2, message names Lambda and safe_mode); the "
            "Lambda never runs; no output",
            f"{SEC}::test_cli_refuses_a_lambda_keras_file",
        ),
        ref(
            "security",
            "BiLM `.keras` round trip",
            "loads with safe_mode=True, same outputs",
            "tests/models/bilm_test.py::test_keras_file_round_trip_safe_mode",
        ),
        ref(
            "security",
            "ElmoLayer tagger `.keras` round trip",
            "loads with safe_mode=True, same outputs",
            "tests/models/elmo_layer_test.py::test_downstream_tagger_trains_saves_and_reloads",
        ),
        ref(
            "security",
            "SavedModel bytes",
            "no absolute host paths",
            "tests/export/serving_contract_test.py::test_no_host_paths_in_the_saved_model",
        ),
        ref(
            "security",
            "SavedModel in a clean process",
            "only tensorflow (+ text) ops, no keras_elmo import",
            "tests/export/serving_contract_test.py::test_fresh_process_imports_no_keras_elmo_and_knows_every_op",
        ),
        ref(
            "export",
            "existing SavedModel, no `--force`",
            "refused; replaced only with `--force`",
            "tests/cli/export_cli_test.py::test_export_writes_a_versioned_model_only_with_force",
        ),
        ref(
            "embed",
            "existing output, no `--force`",
            "refused, output unchanged",
            "tests/cli/embed_cli_test.py::test_refuses_to_overwrite_without_force",
        ),
    ],
)
