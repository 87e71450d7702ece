"""Fixtures for preset tests: a local HTTP server (no network needed)."""

import pytest

from tests.presets.preset_server import Server


@pytest.fixture
def server():
    s = Server()
    yield s
    s.close()
