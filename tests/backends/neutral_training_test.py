"""biLM training on the JAX and PyTorch backends: loss, resume, refusals.

Keras fixes its backend at import, so `NeutralTrainer` and `keras-elmo
train` run under `KERAS_BACKEND=jax` or `torch` in one subprocess each
(`neutral_training_outputs.py`, about 40 s on 2 CPU cores) that saves
what it saw; the tests here check it, once per backend: the `keras.ops`
losses against a NumPy re-derivation, the default recipe's loss falling
over 3 epochs, a run interrupted mid-epoch and rerun ending with
bitwise the weights of an uninterrupted one, the refusal of another
run's checkpoint, and the flags that need TensorFlow refused by name.
The subprocess runs `sys.executable` or `$KERAS_ELMO_JAX_PYTHON` /
`$KERAS_ELMO_TORCH_PYTHON` (`backend_subprocess.py`); without the
backend the tests FAIL with its error: they are not skipped. The torch
runs are marked `torch_backend` (`make test-torch` runs them, `make
test` deselects them), as every PyTorch test.
"""

import json
import math

import numpy as np
import pytest

from keras_elmo.training.training_config import TrainingConfig
from keras_elmo.training.training_config import training_refusals
from tests.backends.backend_subprocess import run_script

# Trains in JAX and PyTorch subprocesses (backend_subprocess.py).
pytestmark = pytest.mark.engine

REFUSED = ("--strategy", "--mixed-precision", "--sampler")
_RUNS = {}
_WORK = {}


def _run(backend, work, *flags, xla_flags=""):
    """Runs `neutral_training_outputs.py` under `backend`; its facts."""
    run_script(
        backend,
        "neutral_training_outputs.py",
        [work, *flags],
        xla_flags=xla_flags,
        what="training ",
    )
    with open(work / "facts.json", encoding="utf-8") as f:
        return json.load(f)


def _training(backend, tmp_path_factory):
    """`(facts, losses, weights)` of `backend`'s subprocess, run once."""
    if backend not in _RUNS:
        work = tmp_path_factory.mktemp(f"{backend}_training")
        facts = _run(backend, work)
        losses = np.load(work / "losses.npz", allow_pickle=False)
        weights = np.load(work / "weights.npz", allow_pickle=False)
        _RUNS[backend] = (facts, losses, weights)
        _WORK[backend] = work
    return _RUNS[backend]


@pytest.fixture(
    scope="module",
    params=["jax", pytest.param("torch", marks=pytest.mark.torch_backend)],
)
def training(request, tmp_path_factory):
    """`(facts, losses, weights)` written by the backend's subprocess."""
    return _training(request.param, tmp_path_factory)


def _real(losses):
    targets = losses["targets"].reshape(-1)
    width = losses["hidden"].shape[-1]
    hidden = losses["hidden"].reshape(-1, width).astype(np.float64)
    keep = targets >= 0
    return hidden[keep], targets[keep]


def _logsumexp(x):
    peak = x.max(axis=-1, keepdims=True)
    return (peak + np.log(np.exp(x - peak).sum(-1, keepdims=True)))[..., 0]


def test_the_subprocess_ran_on_its_backend(training, request):
    assert training[0]["backend"] == request.node.callspec.params["training"]


def test_full_softmax_loss_matches_numpy(training):
    losses = training[1]
    h, y = _real(losses)
    w = losses["embeddings"].astype(np.float64)
    logits = h @ w.T + losses["bias"]
    expected = np.sum(_logsumexp(logits) - logits[np.arange(len(y)), y])
    loss_sum, count = losses["full"]
    assert count == len(y) == 9
    np.testing.assert_allclose(loss_sum, expected, rtol=1e-5)


def test_sampled_softmax_loss_matches_numpy(training):
    """Fixed candidates `[3, 7, y_0, 3, 0, 11]`: `Q(k) = S P(k)` (the
    log-uniform `P`), `-log Q` on every logit, and accidental hits masked
    at the last draw of the label only (TensorFlow's rule)."""
    losses = training[1]
    h, y = _real(losses)
    w = losses["embeddings"].astype(np.float64)
    b = losses["bias"].astype(np.float64)
    s = losses["sampled"]
    vocabulary_size = len(w)

    def log_q(k):
        p = (np.log(k + 2.0) - np.log(k + 1.0)) / math.log(vocabulary_size + 1)
        return np.log(len(s) * p)

    true = np.sum(h * w[y], 1) + b[y] - log_q(y)
    logits = h @ w[s].T + b[s] - log_q(s)
    last = {word: j for j, word in enumerate(s)}
    hits = 0
    for i, label in enumerate(y):
        if label in last:
            logits[i, last[label]] = -np.inf
            hits += 1
    assert hits >= 2  # the test exercises the masking
    expected = np.sum(
        _logsumexp(np.concatenate([true[:, None], logits], 1)) - true
    )
    loss_sum, count = losses["sampled_loss"]
    assert count == len(y)
    np.testing.assert_allclose(loss_sum, expected, rtol=1e-5)


def test_sampler_is_seeded(training):
    draws = training[1]["draws"]
    np.testing.assert_array_equal(draws[0], draws[1])
    assert not np.array_equal(draws[0], draws[2])
    assert draws.min() >= 0 and draws.max() < 1000


def test_default_recipe_loss_falls(training):
    history = training[0]["full_history"]
    assert [h["epoch"] for h in history] == [1, 2, 3]
    assert [h["learning_rate"] for h in history] == [2e-3] * 3  # default
    losses = [h["loss"] for h in history]
    assert all(np.isfinite(losses))
    assert losses[2] < losses[1] < losses[0], losses


def test_jax_step_over_distinct_tokens_keeps_loss_and_gradient(
    tmp_path_factory,
):
    """The JAX step's char CNN over the batch's distinct tokens only
    (`distinct_rows`: `jnp.unique` with a static size) and the slots its
    longest token can fill (`longest_token`) gives the loss and gradient
    of embedding every position over all 50 slots, within float32
    rounding: the same per-window arithmetic on fewer rows and windows
    (the max over windows is exact), the token gradients summed per
    distinct row before the CNN's backward pass instead of after. The
    tiny batch's trainer bound on rows is every position (it is capped at
    `B (T + 2) + 1`); the exact count embeds far fewer; both bounds
    convolve fewer slots. The loss is equal to 1e-6 relative (measured:
    bitwise); each gradient entry within 1e-5 relative plus 1e-5 of the
    tensor's largest entry."""
    _training("jax", tmp_path_factory)
    got = np.load(_WORK["jax"] / "jax_step.npz", allow_pickle=False)
    rows, steps, _ = got["positions"]
    assert got["bound_rows"] == rows * (steps + 2) + 1
    assert got["exact_rows"] < got["bound_rows"] / 3, got["exact_rows"]
    assert got["exact_longest"] < got["bound_longest"] == 16
    assert got["bound_longest"] + got["widest_filter"] < got["slots"]
    grads = sorted(k[len("every/") :] for k in got.files if "every/grad" in k)
    assert len(grads) > 10
    for name in ("bound", "exact"):
        np.testing.assert_allclose(
            got[f"{name}/loss"], got["every/loss"], rtol=1e-6
        )
        for key in grads:
            want = got[f"every/{key}"]
            np.testing.assert_allclose(
                got[f"{name}/{key}"],
                want,
                rtol=1e-5,
                atol=1e-5 * np.abs(want).max(),  # measured: 2.1e-6
                err_msg=f"{name}/{key}",
            )


def test_jax_lstm_hand_written_gradient_equals_autodiff(tmp_path_factory):
    """On JAX the training biLSTM differentiates its recurrence with the
    hand-written gradient (`_padded_backward`, TensorFlow's), not JAX's
    autodiff of the scan: equal within float32 rounding, with padded
    rows held and both clips active."""
    _training("jax", tmp_path_factory)
    got = np.load(_WORK["jax"] / "jax_step.npz", allow_pickle=False)
    for i in range(5):
        want = got[f"lstm_autodiff/grad{i}"]
        assert np.abs(want).max() > 0.1
        np.testing.assert_allclose(
            got[f"lstm_hand/grad{i}"],
            want,
            rtol=1e-5,
            atol=1e-6 * np.abs(want).max(),
            err_msg=f"argument {i}",
        )


def test_data_parallel_over_two_devices(tmp_path, tmp_path_factory):
    """JAX with two host devices: `keras.distribution.DataParallel` splits
    each batch; the losses are the one-device run's within float rounding."""
    work = tmp_path / "data_parallel"
    facts = _run(
        "jax",
        work,
        "--data-parallel",
        xla_flags="--xla_force_host_platform_device_count=2",
    )
    assert facts["distribution"].startswith("<DataParallel")
    one_device = _training("jax", tmp_path_factory)[0]
    assert one_device["distribution"] == "None"
    one = [h["loss"] for h in one_device["full_history"]]
    two = [h["loss"] for h in facts["full_history"]]
    np.testing.assert_allclose(two, one, rtol=1e-6)


def test_resumed_run_ends_bitwise_as_uninterrupted(training):
    facts, _, weights = training
    assert facts["stopped"] == "stopped at step 10"
    # The newest checkpoint before the stop: step 8, mid-epoch 2.
    assert facts["resumed_from"] == "ckpt-8"
    assert facts["resumed_position"] == {
        "step": 8,
        "epoch": 1,
        "batch_in_epoch": 2,
    }
    assert facts["resumed_step"] == facts["full_step"] == 18
    # Every epoch, the interrupted one too, as the uninterrupted run
    # recorded it: no epoch missing or extra, the same step count, and
    # bitwise the same loss and perplexity.
    full, resumed = facts["full_history"], facts["resumed_history"]
    assert [h["epoch"] for h in full] == [1, 2, 3]
    assert [h["epoch"] for h in resumed] == [1, 2, 3]
    assert [h["steps"] for h in full] == [6, 6, 6]
    for key in ("steps", "loss", "perplexity"):
        assert [h[key] for h in resumed] == [h[key] for h in full], key
    names = [k for k in weights.files if k.startswith("full/")]
    assert len(names) > 20
    for name in names:
        np.testing.assert_array_equal(
            weights[name], weights["resumed/" + name.split("/", 1)[1]]
        )


def test_checkpoint_of_another_run_is_refused(training):
    message = training[0]["other_seed"]
    assert message and "`seed` (0 -> 1)" in message


def test_cli_refuses_tensorflow_only_flags_by_name(training):
    backend = training[0]["backend"]
    refused = training[0]["cli_refused"]
    assert refused["code"] == 2
    for flag in REFUSED:
        assert (
            f"`{flag}` needs the TensorFlow backend; "
            f"received KERAS_BACKEND={backend}"
        ) in refused["stderr"], flag
    assert not training[0]["cli_refused_dir"]  # refused before writing


def test_cli_trains(training):
    facts = training[0]
    assert facts["cli_train"]["code"] == 0, facts["cli_train"]["stderr"]
    for name in (
        "options.json",
        "weights.hdf5",
        "softmax.hdf5",
        "vocab.txt",
        "bilm.keras",
        "checkpoints",
    ):
        assert name in facts["cli_files"]


def test_cli_trains_with_validation_early_stopping_and_init_from(training):
    """Every epoch a plateau (threshold 10 > any gain), two in a row stop
    the run: epoch 2 of 4 is the last, at half then a quarter of the rate;
    epoch 1 is the best (its gain is 1 by definition; epoch 2 must beat
    it to replace it), and the model written is the best epoch's."""
    facts = training[0]
    assert facts["cli_valid"]["code"] == 0, facts["cli_valid"]["stderr"]
    history = facts["valid_history"]
    assert [h["epoch"] for h in history] == [1, 2]
    assert [h["stop"] for h in history] == [False, True]
    assert [h["decayed"] for h in history] == [True, True]
    assert [h["learning_rate"] for h in history] == [2e-3, 1e-3]
    assert history[0]["best"] and history[0]["valid_gain"] == 1.0
    first, second = (h["valid_perplexity"] for h in history)
    assert history[1]["best"] == (second < first)
    assert history[1]["valid_gain"] == pytest.approx((first - second) / first)
    for h in history:
        assert (
            math.isfinite(h["valid_perplexity"]) and h["valid_perplexity"] > 1
        )
    assert (
        "best" in facts["valid_files"] and "bilm.keras" in facts["valid_files"]
    )
    assert facts["init_from_backbone_equal"]
    assert not facts["fresh_backbone_equal"]


def _config(tmp_path, **overrides):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b c\n")
    settings = dict(train=str(corpus), vocab="v", out_dir=str(tmp_path))
    settings.update(overrides)
    return TrainingConfig(**settings)


def test_refusals_name_each_setting(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert training_refusals(_config(tmp_path), "jax") == []
    assert (
        training_refusals(_config(tmp_path, strategy="mirrored"), "tensorflow")
        == []
    )
    bilm_tf = _config(tmp_path, recipe="bilm-tf")
    (reason,) = training_refusals(bilm_tf, "jax")
    assert reason.startswith("`sampler` needs the TensorFlow backend")
    replacement = _config(tmp_path, recipe="bilm-tf", sampler="replacement")
    assert training_refusals(replacement, "jax") == []
    monkeypatch.setenv("TF_CONFIG", "{}")
    (reason,) = training_refusals(_config(tmp_path), "jax")
    assert "TF_CONFIG" in reason
    (reason,) = training_refusals(_config(tmp_path), "torch")
    assert "TF_CONFIG" in reason and "KERAS_BACKEND=torch" in reason
    monkeypatch.delenv("TF_CONFIG")
    assert training_refusals(_config(tmp_path), "torch") == []
    (reason,) = training_refusals(_config(tmp_path), "numpy")
    assert reason == (
        "training runs on the tensorflow, jax and torch backends; "
        "received KERAS_BACKEND=numpy"
    )


def test_neutral_trainer_refuses_tensorflow(tmp_path):
    from keras_elmo.training.neutral_trainer import NeutralTrainer

    with pytest.raises(ValueError, match="use keras_elmo.training.trainer"):
        NeutralTrainer(_config(tmp_path))
