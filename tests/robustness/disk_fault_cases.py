"""Fault cases of writes that fail for lack of space or permission; they
run in child processes, in the tests each row cites.
"""

from tests.robustness.case_table import ref

DISK = "disk / permissions"
DISK_TEST = "tests/robustness/disk_fault_test.py"
WRITE_TEST = "tests/robustness/write_faults_test.py"


ROWS = [
    ref(
        DISK,
        "checkpoint: file size limit, then a read-only directory, then "
        "space again",
        "exit 2 naming the checkpoint and the intact previous one; "
        "files byte-identical, no temporaries; the rerun resumes",
        f"{DISK_TEST}::"
        "test_checkpoint_faults_keep_the_last_checkpoint_and_resume",
    ),
    ref(
        DISK,
        "vocab `-o`: file size limit, read-only directory",
        "exit 2 naming the file; the old file unchanged; rerun writes it",
        f"{DISK_TEST}::test_vocab_write_faults_keep_the_old_file",
    ),
    ref(
        DISK,
        "embed: file size limit mid-run",
        "exit 2 naming OUTPUT.partial; OUTPUT unchanged; `--resume` "
        "completes, = an uninterrupted run",
        f"{DISK_TEST}::test_embed_faults_keep_the_old_output_and_resume",
    ),
    ref(
        DISK,
        "export `--force`: file size limit",
        "exit 2 naming the directory; the old SavedModel byte-identical",
        f"{DISK_TEST}::test_export_faults_keep_the_old_saved_model",
    ),
    ref(
        DISK,
        "any atomic write (weights, options, softmax, vocab, .keras, "
        "results): ENOSPC, EFBIG, EACCES",
        "WriteFailed naming the destination; the old file unchanged",
        f"{WRITE_TEST}::"
        "test_atomic_write_fault_names_the_path_and_keeps_the_old_file",
    ),
]
