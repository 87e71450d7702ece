"""`keras-elmo embed --runner` on `s3://` input and output, against a local
S3-compatible server (moto in server mode on 127.0.0.1, stopped by the
fixture and by its own `timeout`).

The S3 settings are pipeline options (`--s3_endpoint_url`, credentials);
Beam's `FileSystems` reads them only once given, and the output directory
is prepared (checked, emptied with `--force`) before any `Pipeline`
exists. Without the options handed over first, this command failed
before the pipeline started ("Must provide one of client or options").
"""

import json
import os
import sys

import boto3
import pytest

from keras_elmo.cli.main import main
from tests.beam.local_server import free_port
from tests.beam.local_server import local_server

pytestmark = pytest.mark.large

BUCKET = "corpus"
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@pytest.fixture
def s3(tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "moto.server"]
    command += ["-H", "127.0.0.1", "-p", str(port)]
    env = dict(os.environ, **{k.upper(): v for k, v in KEYS.items()})
    with local_server(command, url, tmp_path / "moto.log", env):
        client = boto3.client(
            "s3", endpoint_url=url, region_name="us-east-1", **KEYS
        )
        client.create_bucket(Bucket=BUCKET)
        yield url, client


def test_s3_input_and_output_get_past_options_and_output_preparation(
    s3, reference_weights
):
    url, client = s3
    lines = b"the first line\n\nand a third one\n"
    client.put_object(Bucket=BUCKET, Key="in/a.txt", Body=lines)
    options, weights = reference_weights("tiny")
    argv = ["embed", f"s3://{BUCKET}/in/*.txt", f"s3://{BUCKET}/out"]
    argv += ["--options", options, "--weights", weights, "--top"]
    argv += ["--runner", "FnApiRunner", "--direct_num_workers=1"]
    argv += [
        f"--s3_endpoint_url={url}",
        "--s3_access_key_id=testing",
        "--s3_secret_access_key=testing",
        "--s3_region_name=us-east-1",
    ]
    assert main(argv) == 0
    body = client.get_object(Bucket=BUCKET, Key="out/manifest.json")["Body"]
    manifest = json.loads(body.read())
    assert manifest["counts"]["lines"] == 3
    assert manifest["counts"]["blank_lines"] == 1
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix="out/")
    names = sorted(item["Key"] for item in listed["Contents"])
    assert "out/manifest.json" in names
    assert any(n.startswith("out/embeddings-") for n in names), names
    # The output check runs on S3 too: a rerun is refused, then --force.
    assert main(argv) != 0
    assert main(argv + ["--force"]) == 0
