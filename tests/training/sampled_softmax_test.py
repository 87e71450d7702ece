"""The fused sampled softmax against NumPy and `tf.nn.sampled_softmax_loss`."""

import numpy as np
import tensorflow as tf

from keras_elmo.training.fused_loss import sampled_softmax_losses


def _case(seed=0, rows=6):
    """Labels 1 and 4 are also candidates (accidental hits); candidate 4 is
    drawn twice (sampling is with replacement)."""
    rng = np.random.default_rng(seed)
    vocabulary, dim = 11, 4
    weights = rng.normal(size=(vocabulary, dim)).astype("float32")
    biases = rng.normal(size=(vocabulary,)).astype("float32")
    inputs = rng.normal(size=(rows, dim)).astype("float32")
    labels = np.array([1, 4, 7, 1, 9, 0][:rows], np.int64)
    sampled = np.array([4, 2, 1, 4, 8], np.int64)
    true_expected = rng.uniform(0.1, 2.0, size=rows).astype("float32")
    sampled_expected = rng.uniform(0.1, 2.0, size=5).astype("float32")
    return (
        weights,
        biases,
        labels,
        inputs,
        sampled,
        true_expected,
        sampled_expected,
    )


def test_losses_match_a_numpy_rederivation_with_accidental_hits_removed():
    w, b, labels, h, sampled, q_true, q_sampled = _case()
    losses = sampled_softmax_losses(
        w, b, labels, h, sampled, q_true, q_sampled
    ).numpy()
    expected = []
    for i in range(len(labels)):
        true = h[i] @ w[labels[i]] + b[labels[i]] - np.log(q_true[i])
        # TensorFlow's rule: the last draw equal to the label leaves the
        # sum (an earlier duplicate of it stays).
        last_hit = max(
            (j for j, s in enumerate(sampled) if s == labels[i]), default=-1
        )
        logits = [
            h[i] @ w[s] + b[s] - np.log(q)
            for j, (s, q) in enumerate(zip(sampled, q_sampled))
            if j != last_hit
        ]
        everything = np.array([true, *logits], np.float64)
        log_z = np.log(np.exp(everything - everything.max()).sum())
        expected.append(everything.max() + log_z - true)
    np.testing.assert_allclose(losses, expected, rtol=1e-5, atol=1e-6)


def _loss_and_gradients(loss_fn):
    w, b, labels, h, sampled, q_true, q_sampled = (
        tf.constant(x) for x in _case(seed=3)
    )
    upstream = tf.constant(np.linspace(0.5, 2.0, 6).astype("float32"))
    with tf.GradientTape() as tape:
        tape.watch([w, b, h])
        losses = loss_fn(w, b, labels, h, sampled, q_true, q_sampled)
        total = tf.reduce_sum(losses * upstream)
    grads = tape.gradient(total, [h, w, b])
    return losses, grads


def test_losses_and_gradients_equal_tensorflow_sampled_softmax():
    def reference(w, b, labels, h, sampled, q_true, q_sampled):
        return tf.nn.sampled_softmax_loss(
            weights=w,
            biases=b,
            labels=labels[:, None],
            inputs=h,
            num_sampled=5,
            num_classes=11,
            sampled_values=(sampled, q_true[:, None], q_sampled),
            remove_accidental_hits=True,
        )

    ours, our_grads = _loss_and_gradients(sampled_softmax_losses)
    theirs, their_grads = _loss_and_gradients(reference)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)
    for name, a, b in zip(
        ("inputs", "weights", "biases"), our_grads, their_grads
    ):
        np.testing.assert_allclose(
            tf.convert_to_tensor(a),
            tf.convert_to_tensor(b),
            rtol=1e-5,
            atol=1e-6,
            err_msg=name,
        )


def test_embedding_gradients_touch_only_label_and_candidate_rows():
    _, (_, d_weights, d_biases) = _loss_and_gradients(sampled_softmax_losses)
    assert isinstance(d_weights, tf.IndexedSlices)
    assert isinstance(d_biases, tf.IndexedSlices)
    touched = {1, 4, 7, 9, 0, 2, 8}
    assert set(d_weights.indices.numpy()) == touched
    dense = tf.convert_to_tensor(d_weights).numpy()
    untouched = sorted(set(range(11)) - touched)
    assert not dense[untouched].any()


def test_no_rows_gives_no_losses_and_zero_gradients():
    w, b, labels, h, sampled, q_true, q_sampled = _case(rows=0)
    h = tf.constant(h)
    with tf.GradientTape() as tape:
        tape.watch(h)
        losses = sampled_softmax_losses(
            w, b, labels, h, sampled, q_true, q_sampled
        )
        total = tf.reduce_sum(losses)
    assert losses.shape == (0,)
    assert tape.gradient(total, h).shape == (0, 4)
