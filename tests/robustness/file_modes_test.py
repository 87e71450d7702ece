"""Every file and folder the package writes has the mode `open()` /
`os.mkdir` would give under the process umask (not mkstemp's 0600 or
mkdtemp's 0700): embed's HDF5 file, `export`'s SavedModel, `convert
--out`'s model folder, and the atomic-write helpers under them."""

import os
import stat
import threading

import pytest

import keras_elmo
from keras_elmo.cli.main import main
from keras_elmo.export.saved_model import export_saved_model
from keras_elmo.models.bilm_io import write_model_folder
from keras_elmo.utils import atomic as file_modes
from keras_elmo.utils.atomic import atomic_directory
from keras_elmo.utils.atomic import atomic_write
from tests.conftest import tiny_bilm

UMASKS = {0o022: (0o644, 0o755), 0o027: (0o640, 0o750)}


@pytest.fixture(params=sorted(UMASKS), ids=lambda u: f"umask{u:03o}")
def umask(request):
    """Runs the test under the umask; yields (umask, file, folder mode)."""
    old = os.umask(request.param)
    try:
        yield (request.param, *UMASKS[request.param])
    finally:
        os.umask(old)


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def modes_under(root):
    """{relative path: mode} of `root` and everything in it."""
    found = {".": mode(root)}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            found[os.path.relpath(path, root)] = mode(path)
    return found


def assert_tree_modes(root, file_mode, folder_mode):
    for relative, found in modes_under(root).items():
        path = os.path.join(root, relative)
        want = folder_mode if os.path.isdir(path) else file_mode
        assert found == want, (relative, oct(found), oct(want))


def test_current_umask_is_read_without_changing_it(umask):
    value, _, _ = umask
    assert file_modes.current_umask() == value
    assert os.umask(value) == value  # unchanged by the read


def test_current_umask_is_safe_across_threads(umask):
    """Reading the umask never shows another thread a umask of 0 (the
    os.umask(0) dance would)."""
    value, file_mode, _ = umask
    stop, bad = threading.Event(), []

    def reader():
        while not stop.is_set():
            file_modes.current_umask()

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(300):
            path = f"/tmp/keras_elmo_umask_probe_{os.getpid()}_{i}"
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o666)
            os.close(fd)
            if mode(path) != file_mode:
                bad.append(oct(mode(path)))
            os.remove(path)
    finally:
        stop.set()
        thread.join()
    assert bad == []


def test_atomic_helpers_honour_the_umask(umask, tmp_path):
    _, file_mode, folder_mode = umask
    with atomic_write(tmp_path / "a.json") as f:
        f.write("{}")
    assert mode(tmp_path / "a.json") == file_mode
    with atomic_directory(str(tmp_path / "folder")) as tmp:
        with open(os.path.join(tmp, "x.txt"), "w") as f:
            f.write("x")
    assert_tree_modes(str(tmp_path / "folder"), file_mode, folder_mode)


@pytest.mark.large
def test_embed_output_honours_the_umask(umask, reference_weights, tmp_path):
    _, file_mode, _ = umask
    options, weights = reference_weights("tiny")
    src = tmp_path / "in.txt"
    src.write_text("a b\nc\n", encoding="utf-8")
    dst = str(tmp_path / "out.hdf5")
    argv = ["embed", str(src), dst, "--options", options, "--weights", weights]
    assert main(argv) == 0
    assert mode(dst) == file_mode
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "out.hdf5"]


@pytest.mark.large
def test_embed_journal_honours_the_umask(umask, reference_weights, tmp_path):
    """The OUTPUT.partial folder and its chunks, kept after a Ctrl-C."""
    from keras_elmo.embedding import hdf5_output as hdf5_embedding

    _, file_mode, folder_mode = umask
    options, weights = reference_weights("tiny")
    src = tmp_path / "in.txt"
    src.write_text("a b\nc\n", encoding="utf-8")
    embedder = keras_elmo.Embedder(
        keras_elmo.BiLM.from_allennlp(options, weights)
    )
    real = hdf5_embedding.embed_journal.EmbedJournal.assemble

    def stop(*args):
        raise KeyboardInterrupt

    hdf5_embedding.embed_journal.EmbedJournal.assemble = stop
    try:
        with pytest.raises(KeyboardInterrupt):
            embedder.embed_file(str(src), str(tmp_path / "out.hdf5"))
    finally:
        hdf5_embedding.embed_journal.EmbedJournal.assemble = real
    assert_tree_modes(
        str(tmp_path / "out.hdf5.partial"), file_mode, folder_mode
    )


@pytest.mark.large
def test_saved_model_export_honours_the_umask(umask, tmp_path):
    _, file_mode, folder_mode = umask
    path = str(tmp_path / "base" / "1")
    export_saved_model(tiny_bilm(0), path)
    assert_tree_modes(path, file_mode, folder_mode)


def test_model_folder_honours_the_umask(umask, tmp_path):
    _, file_mode, folder_mode = umask
    out = str(tmp_path / "model")
    write_model_folder(tiny_bilm(0), out)
    assert sorted(os.listdir(out))  # something was written
    assert_tree_modes(out, file_mode, folder_mode)
