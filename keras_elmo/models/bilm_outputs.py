"""The biLM's output dict and ELMo's `L + 1` layers built from it."""

from keras import ops


def output_dict(strip, x, layers, mask):
    """The biLM's outputs: `x` and each biLSTM layer without `<S>`/`</S>`
    (`strip`, a `RemoveSentenceBoundaries`), and the token `mask`."""
    outputs = {"word_emb": strip(x, mask=mask)}
    for layer, sequence in enumerate(layers, start=1):
        outputs[f"lstm_outputs{layer}"] = strip(sequence, mask=mask)
    outputs["mask"] = mask
    return outputs


def elmo_layers(outputs):
    """ELMo's `L + 1` layers from a biLM output dict, built once here.

    `[h_0, h_1, ..., h_L]`, each `[B, T, 2P]`: layer 0 is the token
    embedding twice, `h_0 = [x; x]` (`"word_emb"`), so it has the width of
    the biLSTM layers `h_k = [h_k_forward; h_k_backward]`
    (`"lstm_outputs{k}"`), as AllenNLP's `_ElmoBiLm` builds it. Takes any
    dict with these keys (a `BiLM`'s, or a SavedModel signature's).
    """
    word_emb = outputs["word_emb"]
    num_lstm = sum(1 for key in outputs if key.startswith("lstm_outputs"))
    layers = [ops.concatenate([word_emb, word_emb], axis=-1)]
    layers += [outputs[f"lstm_outputs{k}"] for k in range(1, num_lstm + 1)]
    return layers
