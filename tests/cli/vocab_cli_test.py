"""`keras-elmo vocab`: corpus glob -> bilm-tf vocabulary file."""

import gzip

import pytest

from keras_elmo.cli.main import main
from keras_elmo.data import Vocabulary


@pytest.fixture
def corpus(tmp_path):
    with open(tmp_path / "part-1.txt", "wb") as f:
        f.write(b"b a c\na b\n\n\xff\xfe bad\n")
    with gzip.open(tmp_path / "part-2.txt.gz", "wb") as f:
        f.write(b"d c a\n")
    return str(tmp_path / "part-*")


def test_round_trip(corpus, tmp_path, capsys):
    out = str(tmp_path / "vocab.txt")
    assert main(["vocab", corpus, "-o", out, "--min-count", "1"]) == 0
    assert Vocabulary.load(out) == Vocabulary.build(corpus)
    with open(out, encoding="utf-8") as f:
        assert f.read() == "<S>\n</S>\n<UNK>\na\nb\nc\nd\n"
    stdout = capsys.readouterr().out
    assert stdout.count("\n") == 1
    assert stdout.startswith(f"Wrote 7 tokens to {out} (4 distinct in 8 ")
    assert "0.00% of tokens OOV; 1 blank and 1 non-UTF-8" in stdout


def test_min_count_defaults_to_2_and_max_size(corpus, tmp_path, capsys):
    """Words seen once stay out by default, so that `<UNK>` is trained."""
    out = str(tmp_path / "vocab.txt")
    assert main(["vocab", corpus, "-o", out]) == 0
    assert Vocabulary.load(out).tokens[3:] == ("a", "b", "c")
    assert "12.50% of tokens OOV" in capsys.readouterr().out
    args = ["vocab", corpus, "-o", out, "--max-size", "4", "--force"]
    assert main(args) == 0
    assert Vocabulary.load(out).tokens[3:] == ("a",)


def test_no_silent_overwrite(corpus, tmp_path, capsys):
    out = tmp_path / "vocab.txt"
    out.write_text("precious\n")
    assert main(["vocab", corpus, "-o", str(out)]) == 2
    assert "exists; pass --force to overwrite it" in capsys.readouterr().err
    assert out.read_text() == "precious\n"
    assert main(["vocab", corpus, "-o", str(out), "--force"]) == 0
    assert Vocabulary.load(out).size == 6  # "d", seen once, left out


def test_errors_are_clear(tmp_path, capsys):
    out = str(tmp_path / "vocab.txt")
    missing = str(tmp_path / "missing-*.txt")
    assert main(["vocab", missing, "-o", out]) == 2
    err = capsys.readouterr().err
    assert "keras-elmo vocab: error:" in err and "matches no file" in err
    (tmp_path / "c.txt").write_text("a\n")
    args = ["vocab", str(tmp_path / "c.txt"), "-o", out, "--max-size", "2"]
    assert main(args) == 2
    assert "`--max-size`, expected None or an integer >= 3" in (
        capsys.readouterr().err
    )


def test_help(capsys):
    with pytest.raises(SystemExit) as done:
        main(["vocab", "--help"])
    assert done.value.code == 0
    assert "usage: keras-elmo vocab" in capsys.readouterr().out
