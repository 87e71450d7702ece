"""CoVe's MT-LSTM (McCann et al. 2017) at our scale, from Keras layers.

Encoder (what CoVe keeps): frozen GloVe vectors, then two stacked
bidirectional LSTMs,

    e_k = GloVe(w_k)                              [B, S, 50]
    h1 = BiLSTM_1(e)   h2 = BiLSTM_2(h1)          [B, S, 2H] each

and `CoVe(w) = h2` (the top layer, as McCann et al. feed `[GloVe(w);
CoVe(w)]` to task models; `h1` is exported too, for the layer probe).

Decoder (trained with the encoder, then thrown away): an LSTM over the
previous Spanish words with dot-product attention over the encoder's
top layer (Luong et al. 2015, "general" score `z_t^T W h2_k`):

    z_t = LSTM(emb(y_{t-1}))                      [B, T, D]
    a_t = softmax_k(z_t^T W h2_k)   c_t = sum_k a_tk h2_k
    p(y_t) = softmax(V [z_t; c_t] + b)            [B, T, |vocab|]

The output reads `[z_t; c_t]` directly, not through Luong's `tanh(U
[z_t; c_t])` layer: with that layer (and dropout before `V`), the first
Bible run's training loss stayed on the unigram plateau for all its
1,500 Adam steps; without it, the loss leaves the plateau within the
first few hundred steps on the same batches.
"""

import keras


def build_encoder(glove_dim=50, hidden=128, name="cove_encoder"):
    """`{"vectors" [B, S, 50], "mask" [B, S] bool}` -> `[h1, h2]`, each
    `[B, S, 2H]`.

    The encoder reads GloVe vectors, not word ids, so a task model can
    feed it the vectors of any GloVe word (GloVe is frozen anyway). Only
    standard Keras layers: the saved `.keras` file loads with
    `safe_mode=True` and no custom objects.
    """
    vectors = keras.Input((None, glove_dim), name="vectors")
    mask = keras.Input((None,), dtype="bool", name="mask")
    h1 = keras.layers.Bidirectional(
        keras.layers.LSTM(hidden, return_sequences=True), name="bilstm_1"
    )(vectors, mask=mask)
    h2 = keras.layers.Bidirectional(
        keras.layers.LSTM(hidden, return_sequences=True), name="bilstm_2"
    )(h1, mask=mask)
    return keras.Model({"vectors": vectors, "mask": mask}, [h1, h2], name=name)


def build_translator(glove, encoder, target_vocab_size, dim=128, dropout=0.2):
    """The training model and the decoder that shares its layers.

    Returns:
        `(translator, decoder)`. `translator`: `{"words" [B, S] (ids into
        the frozen `glove` rows, 0 = padding), "previous" [B, T]}` ->
        logits `[B, T, V]`, where `previous` holds the Spanish ids
        shifted right (`<s>` first, 0 = padding). `decoder`: `{"top"
        [B, S, 2H], "previous"}` -> logits, for greedy decoding with the
        encoder run once (its batches must have no source padding).
    """
    words = keras.Input((None,), dtype="int32", name="words")
    previous = keras.Input((None,), dtype="int32", name="previous")
    glove_layer = keras.layers.Embedding(
        glove.shape[0],
        glove.shape[1],
        embeddings_initializer=keras.initializers.Constant(glove),
        trainable=False,
        name="glove",
    )
    target_embedding = keras.layers.Embedding(
        target_vocab_size, dim, mask_zero=True, name="target_embedding"
    )
    decoder_lstm = keras.layers.LSTM(dim, return_sequences=True, name="lstm")
    # Luong's "general" score: project h2 to the decoder width, then dot.
    keys_layer = keras.layers.Dense(dim, use_bias=False, name="attention_w")
    attention = keras.layers.Attention(name="attention")
    output = keras.layers.Dense(target_vocab_size, name="logits")
    drop = keras.layers.Dropout(dropout)

    def decode(top, source_mask):
        states = decoder_lstm(drop(target_embedding(previous)))
        keys = keys_layer(top)
        masks = None if source_mask is None else [None, source_mask]
        context = attention([states, top, keys], mask=masks)
        return output(keras.layers.Concatenate()([states, context]))

    source_mask = keras.layers.Identity()(words) > 0
    _, top = encoder({"vectors": glove_layer(words), "mask": source_mask})
    translator = keras.Model(
        {"words": words, "previous": previous},
        decode(drop(top), source_mask),
        name="translator",
    )
    top_input = keras.Input((None, top.shape[-1]), name="top")
    decoder = keras.Model(
        {"top": top_input, "previous": previous},
        decode(top_input, None),
        name="decoder",
    )
    return translator, decoder
