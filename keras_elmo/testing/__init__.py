"""Test helpers: `TestCase` with keras-hub-style `run_*_test` harnesses."""
