"""`keras-elmo embed --runner` on `gs://` input and output, against a
local Cloud Storage emulator (gcp-storage-emulator, in memory, on
127.0.0.1, stopped by the fixture and by its own `timeout`).

Beam's GCS file system (`apache-beam[gcp]`) talks to Cloud Storage
through `google-cloud-storage`, which sends every request to
`STORAGE_EMULATOR_HOST` when it is set. This machine has no Google
credentials: Beam would look for them for about 30 s (4 retries with
backoff) and then connect anonymously, which the emulator accepts; the
test skips that wait by starting anonymous.
"""

import json
import sys

import pytest

from keras_elmo.cli.main import main
from tests.beam.local_server import free_port
from tests.beam.local_server import local_server

pytest.importorskip("google.cloud.storage", reason="apache-beam[gcp]")
pytestmark = pytest.mark.large

BUCKET = "corpus"


@pytest.fixture
def gcs(tmp_path, monkeypatch):
    from apache_beam.internal.gcp import auth
    from google.cloud import storage

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "gcp_storage_emulator", "start"]
    command += ["-H", "127.0.0.1", "--port", str(port), "--in-memory"]
    command += ["--default-bucket", BUCKET]
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", url)
    # Anonymous from the start (Beam's own fallback, without its retries).
    monkeypatch.setattr(
        auth._Credentials, "_get_service_credentials", lambda options: None
    )
    monkeypatch.setattr(auth._Credentials, "_credentials_init", False)
    with local_server(command, url, tmp_path / "emulator.log"):
        yield storage.Client.create_anonymous_client().bucket(BUCKET)


def test_gcs_input_and_output_get_past_options_and_output_preparation(
    gcs, reference_weights
):
    lines = b"the first line\n\nand a third one\n"
    gcs.blob("in/a.txt").upload_from_string(lines)
    options, weights = reference_weights("tiny")
    argv = ["embed", f"gs://{BUCKET}/in/*.txt", f"gs://{BUCKET}/out"]
    argv += ["--options", options, "--weights", weights, "--top"]
    argv += ["--runner", "FnApiRunner", "--direct_num_workers=1"]
    argv += ["--project=test"]
    assert main(argv) == 0
    manifest = json.loads(gcs.blob("out/manifest.json").download_as_bytes())
    assert manifest["counts"]["lines"] == 3
    assert manifest["counts"]["blank_lines"] == 1
    names = sorted(b.name for b in gcs.client.list_blobs(BUCKET, prefix="out/"))
    assert names == [
        "out/embeddings-00000-of-00001.tfrecord",
        "out/manifest.json",
    ]
    # The output check runs on GCS too: a rerun is refused, then --force.
    assert main(argv) != 0
    assert main(argv + ["--force"]) == 0
