"""Batches of token lists in length order, results back in input order.

Every in-process embedding path (`Embedder.embed`, the HDF5 engine's
chunks, the Spark executors' Arrow chunks) batches the same way: the
lists' indices are sorted by token count (a stable sort: equal lengths
keep their input order), cut into consecutive batches of `batch_size`,
and each batch padded only to its own longest list. For `N` lists of
lengths `n_i` the model sees `sum_b |b| * max_{i in b} n_i` token slots
instead of `N * max_i n_i`. The biLM is stateless, so a list's vectors do
not depend on its batch: the order changes the speed, not the numbers.
"""


def embed_in_length_order(embed, token_lists, batch_size, each=None, sort=True):
    """`[each(vectors of token_lists[i])]`, in input order.

    Args:
        embed: `batch of token lists -> sequence of arrays`, one per list
            (an embedding runner).
        token_lists: list of token lists.
        batch_size: int, lists per `embed` call.
        each: optional `array -> stored value`, applied as each batch
            comes back (so only what is kept stays in memory).
        sort: bool. False keeps the input order (for comparisons only).

    Returns:
        A list as long as `token_lists`.
    """
    order = list(range(len(token_lists)))
    if sort:
        order.sort(key=lambda i: len(token_lists[i]))
    out = [None] * len(token_lists)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        vectors = embed([token_lists[i] for i in rows])
        for i, array in zip(rows, vectors):
            out[i] = array if each is None else each(array)
    return out
