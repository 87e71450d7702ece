"""Trains tiny biLMs under the active Keras backend (JAX or PyTorch) and
saves the facts.

Run by `neutral_training_test.py` in a subprocess with `KERAS_BACKEND=jax`
or `torch` (the backend is fixed when keras is imported). In `WORK` it writes a
corpus of 48 sentences and its vocabulary, then:

- `losses.npz`: the `keras.ops` losses (`losses`) on seeded
  inputs, full softmax and sampled over fixed candidates (with a
  repeated candidate and accidental hits), with their inputs, for a
  NumPy re-derivation; two draws of `log_uniform_candidates` from one
  seed and one from another;
- `full/`: `NeutralTrainer`, the default recipe, 3 epochs;
- `resumed/`: the same run stopped by an exception at step 10 (after the
  checkpoint of step 8, mid-epoch 2), then rerun: it resumes and
  finishes;
- `facts.json`: the histories, steps, where the rerun resumed, the
  message of a resume with another seed, and `keras-elmo train`'s exit
  code and stderr with flags that need TensorFlow and on a plain run
  (`cli/`), and a run from `cli/`'s model (`--init-from`) with `--valid`,
  plateau decay and early stopping (`valid/`; its `history.json`);
- `weights.npz`: the final variables of `full/` and `resumed/`;
- `jax_step.npz` (JAX only): the step's loss and gradient with the char
  CNN over every position and over the distinct tokens only, and the
  biLSTM recurrence's hand-written and autodiff gradients
  (`jax_step_outputs`).

With `--data-parallel` (run with two host devices,
`XLA_FLAGS=--xla_force_host_platform_device_count=2`) only `full/` and a
`facts.json` naming the distribution.

Usage (BACKEND: jax or torch):
    KERAS_BACKEND=BACKEND python tests/backends/neutral_training_outputs.py \
        WORK [--data-parallel]
"""

import contextlib
import io
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_elmo.cli.main import main as cli_main  # noqa: E402
from keras_elmo.data.vocabulary import Vocabulary  # noqa: E402
from keras_elmo.training import losses as neutral_lm_loss  # noqa: E402
from keras_elmo.training.checkpoints import RunMismatch  # noqa: E402
from keras_elmo.training.neutral_trainer import NeutralTrainer  # noqa: E402
from keras_elmo.training.training_config import TrainingConfig  # noqa: E402

WORDS = (
    "the cat dog sat on a mat and ran to big small red house tree park "
    "we they saw"
).split()
STOP_AT = 10


class Stop(RuntimeError):
    """The injected interruption."""


class StopAt(keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        if logs["step"] == STOP_AT:
            raise Stop(f"stopped at step {STOP_AT}")


def write_corpus(work):
    rng = random.Random(0)
    path = os.path.join(work, "corpus.txt")
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(48):
            n = rng.randint(3, 9)
            f.write(" ".join(rng.choice(WORDS) for _ in range(n)) + "\n")
    vocab = os.path.join(work, "vocab.txt")
    Vocabulary.build(path, min_count=1).save(vocab)
    return path, vocab


def loss_outputs(path):
    rng = np.random.default_rng(0)
    vocabulary_size, width = 12, 6
    embeddings = rng.standard_normal((vocabulary_size, width)).astype("f4")
    bias = rng.standard_normal(vocabulary_size).astype("f4")
    hidden = rng.standard_normal((3, 5, width)).astype("f4")
    targets = rng.integers(0, vocabulary_size, (3, 5)).astype("int32")
    targets[0, 3:] = -1
    targets[2, 1:] = -1
    # Word 3 twice (only its last draw is a hit), words of targets hit.
    sampled = np.array([3, 7, int(targets[0, 0]), 3, 0, 11], "int32")
    targets[1, 0] = 3
    full = neutral_lm_loss.full_softmax_loss_sum(
        embeddings, bias, hidden, targets
    )
    drawn = neutral_lm_loss.sampled_softmax_loss_sum(
        embeddings, bias, hidden, targets, sampled
    )
    seed = np.array([5, 7], "uint32")
    draws = [
        neutral_lm_loss.log_uniform_candidates(64, 1000, seed),
        neutral_lm_loss.log_uniform_candidates(64, 1000, seed),
        neutral_lm_loss.log_uniform_candidates(64, 1000, seed + 1),
    ]
    np.savez(
        path,
        embeddings=embeddings,
        bias=bias,
        hidden=hidden,
        targets=targets,
        sampled=sampled,
        full=np.array([float(v) for v in full]),
        sampled_loss=np.array([float(v) for v in drawn]),
        draws=np.stack([keras.ops.convert_to_numpy(d) for d in draws]),
    )


def jax_step_outputs(trainer, path):
    """JAX only (`jax_step.npz`): the loss and gradient of `steps.
    make_loss_fn` on `trainer`'s first batch, embedding every position
    over all 50 slots (no bounds), and the distinct rows only over the
    slots the longest token can fill (the bounds the trainer passes, and
    the exact ones: rounded to 1); and the gradient of the
    biLSTM's recurrence, hand-written (`save_for_backward=True`) and by
    JAX's autodiff of the scan, on seeded inputs with padded rows."""
    import jax

    from keras_elmo.ops.recurrences import neutral_lstm_recurrence
    from keras_elmo.training.neutral_trainer import static_bounds
    from keras_elmo.training.steps import make_loss_fn

    (char_ids, forward, backward), bounds = next(trainer._batches(0, 0))
    exact = static_bounds(char_ids, rows_to=1, chars_to=1)
    grad_fn = jax.jit(
        jax.value_and_grad(
            make_loss_fn(trainer.config, trainer.model), has_aux=True
        ),
        static_argnums=(6, 7),
    )
    seed = np.array([0, 0], "uint32")
    out = {"positions": char_ids.shape, "slots": char_ids.shape[-1]}
    for name, bound in (("bound", bounds), ("exact", exact)):
        out[f"{name}_rows"] = bound["distinct_rows"]
        out[f"{name}_longest"] = bound["longest_token"]
    out["widest_filter"] = max(w for w, _ in trainer.model_config.filters)
    for name, bound in (("every", {}), ("bound", bounds), ("exact", exact)):
        (loss, _), grads = grad_fn(
            trainer.trainable,
            trainer.non_trainable,
            char_ids,
            forward,
            backward,
            seed,
            bound.get("distinct_rows"),
            bound.get("longest_token"),
        )
        out[f"{name}/loss"] = np.asarray(loss)
        for i, g in enumerate(grads):
            out[f"{name}/grad{i}"] = np.asarray(g)
    rng = np.random.default_rng(0)
    steps, rows, units, width = 7, 3, 8, 4
    real = np.arange(steps)[:, None] < np.array([7, 4, 1])[None, :]
    inputs = (
        rng.standard_normal((steps, 2, rows, 4 * units)).astype("f4"),
        real,
        rng.standard_normal((2, rows, width)).astype("f4") * 0.5,
        rng.standard_normal((2, rows, units)).astype("f4") * 0.5,
        rng.standard_normal((2, width, 4 * units)).astype("f4") * 0.5,
        rng.standard_normal((2, units, width)).astype("f4") * 0.5,
    )
    weights = [
        rng.standard_normal(s).astype("f4")
        for s in ((steps, 2, rows, width), (2, rows, width), (2, rows, units))
    ]
    for name, save in (("lstm_hand", True), ("lstm_autodiff", False)):

        def total(gates_in, h0, c0, recurrent, projection, save=save):
            results = neutral_lstm_recurrence(
                gates_in, real, h0, c0, recurrent, projection,
                cell_clip=1.5, projection_clip=0.8, save_for_backward=save,
            )  # fmt: skip
            return sum(jax.numpy.sum(r * w) for r, w in zip(results, weights))

        grads = jax.jit(jax.grad(total, argnums=(0, 1, 2, 3, 4)))(
            inputs[0], *inputs[2:]
        )
        for i, g in enumerate(grads):
            out[f"{name}/grad{i}"] = np.asarray(g)
    np.savez(path, **out)


def config_of(corpus, vocab, out, **overrides):
    settings = dict(
        train=corpus,
        vocab=vocab,
        out_dir=out,
        model="tiny",
        epochs=3,
        batch_size=8,
        checkpoint_every=4,
        verbose=False,
    )
    settings.update(overrides)
    return TrainingConfig(**settings)


def run_cli(argv):
    stderr = io.StringIO()
    with (
        contextlib.redirect_stderr(stderr),
        contextlib.redirect_stdout(io.StringIO()),
    ):
        code = cli_main(argv)
    return {"code": code, "stderr": stderr.getvalue()}


def _numpy(variable):
    return keras.ops.convert_to_numpy(variable.value)


def write_facts(work, facts):
    with open(os.path.join(work, "facts.json"), "w", encoding="utf-8") as f:
        json.dump(facts, f, indent=1)


def main(work, data_parallel=False):
    os.makedirs(work, exist_ok=True)
    corpus, vocab = write_corpus(work)
    facts = {"backend": keras.config.backend()}
    full = NeutralTrainer(config_of(corpus, vocab, f"{work}/full"))
    facts["distribution"] = repr(full.distribution)
    facts["full_history"] = full.train()
    facts["full_step"] = full.position["step"]
    if data_parallel:
        return write_facts(work, facts)
    loss_outputs(os.path.join(work, "losses.npz"))
    if keras.config.backend() == "jax":
        jax_step_outputs(full, os.path.join(work, "jax_step.npz"))

    resumed_config = config_of(corpus, vocab, f"{work}/resumed")
    first = NeutralTrainer(resumed_config, callbacks=[StopAt()])
    try:
        first.train()
    except Stop as e:
        facts["stopped"] = str(e)
    rerun = NeutralTrainer(resumed_config)
    facts["resumed_from"] = os.path.basename(rerun.resumed_from or "")
    facts["resumed_position"] = {
        k: rerun.position[k] for k in ("step", "epoch", "batch_in_epoch")
    }
    facts["resumed_history"] = rerun.train()
    facts["resumed_step"] = rerun.position["step"]
    np.savez(
        os.path.join(work, "weights.npz"),
        **{f"full/{i}": _numpy(v) for i, v in enumerate(full.model.variables)},
        **{
            f"resumed/{i}": _numpy(v)
            for i, v in enumerate(rerun.model.variables)
        },
    )
    try:
        NeutralTrainer(config_of(corpus, vocab, f"{work}/resumed", seed=1))
        facts["other_seed"] = None
    except RunMismatch as e:
        facts["other_seed"] = str(e)

    base = [
        "train",
        "--train",
        corpus,
        "--vocab",
        vocab,
        "--architecture",
        "tiny",
    ]
    facts["cli_refused"] = run_cli(
        base
        + ["--out", f"{work}/refused", "--strategy", "mirrored"]
        + ["--mixed-precision", "float16", "--num-sampled", "5"]
    )
    facts["cli_refused_dir"] = os.path.exists(f"{work}/refused")
    facts["cli_train"] = run_cli(
        base
        + ["--out", f"{work}/cli", "--epochs", "1", "--quiet"]
        + ["--batch-size", "16", "--num-sampled", "8"]
        + ["--sampler", "replacement"]
    )
    facts["cli_files"] = sorted(os.listdir(f"{work}/cli"))
    validation_runs(work, corpus, vocab, base, facts)
    write_facts(work, facts)


def validation_runs(work, corpus, vocab, base, facts):
    """`keras-elmo train` from `cli/`'s model (`--init-from`) with
    `--valid`, the plateau schedule and early stopping, set so that every
    epoch is a plateau and two in a row stop the run (after epoch 2 of 4);
    and whether `init_from` put `cli/`'s weights into a new trainer."""
    from keras_elmo.models.bilm import BiLM

    model = [f"{work}/cli/{name}" for name in ("options.json", "weights.hdf5")]
    softmax = f"{work}/cli/softmax.hdf5"
    facts["cli_valid"] = run_cli(
        base
        + ["--out", f"{work}/valid", "--epochs", "4", "--quiet"]
        + ["--batch-size", "16", "--valid", corpus]
        + ["--lr-schedule", "plateau", "--plateau-threshold", "10"]
        + ["--early-stopping-patience", "2"]
        + ["--early-stopping-min-delta", "10"]
        + ["--init-from", *model, softmax]
    )
    with open(f"{work}/valid/history.json", encoding="utf-8") as f:
        facts["valid_history"] = json.load(f)
    facts["valid_files"] = sorted(os.listdir(f"{work}/valid"))
    started = NeutralTrainer(
        config_of(corpus, vocab, f"{work}/init", init_from=(*model, softmax))
    )
    fresh = NeutralTrainer(config_of(corpus, vocab, f"{work}/fresh"))
    loaded = BiLM.from_allennlp(*model)
    facts["init_from_backbone_equal"] = all(
        np.array_equal(_numpy(a), _numpy(b))
        for a, b in zip(started.model.backbone.weights, loaded.weights)
    )
    facts["fresh_backbone_equal"] = all(
        np.array_equal(_numpy(a), _numpy(b))
        for a, b in zip(fresh.model.backbone.weights, loaded.weights)
    )


if __name__ == "__main__":
    main(sys.argv[1], data_parallel="--data-parallel" in sys.argv[2:])
