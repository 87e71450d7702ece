"""`provenance`: the tree's state, less the files the command writes."""

import subprocess

from keras_elmo.utils import provenance


def _repo(tmp_path):
    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "run.json").write_text("{}\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("commit", "-q", "-m", "start")
    return tmp_path


def test_the_commands_own_results_file_is_not_a_change(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    monkeypatch.setattr(provenance, "REPO", str(repo))
    monkeypatch.chdir(repo)
    clean = provenance.provenance()
    assert clean["uncommitted_changes"] is False
    assert len(clean["commit"]) == 40
    (repo / "results" / "run.json").write_text('{"round": 1}\n')
    assert provenance.provenance()["uncommitted_changes"] is True
    written = provenance.provenance(written=["results/run.json"])
    assert written["uncommitted_changes"] is False
    # Any other change still counts.
    (repo / "code.py").write_text("x = 2\n")
    written = provenance.provenance(written=["results/run.json"])
    assert written["uncommitted_changes"] is True


def test_modules_are_recorded_only_when_named():
    from keras_elmo.utils.provenance import provenance

    assert "modules" not in provenance(command="x")
    named = provenance(
        command="x", modules=["keras_elmo/layers/char_cnn_embedding.py"]
    )
    assert named["modules"] == ["keras_elmo/layers/char_cnn_embedding.py"]
