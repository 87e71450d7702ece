#!/usr/bin/env python3
# ---------------------------------------------------------------------------
# The AllenNLP side harness, kept in the repository so every figure measured
# against AllenNLP can be regenerated from a clone and the package registries.
# Copied from the project's shared reference harness (shared/ref), unchanged. See README.md here.
# ---------------------------------------------------------------------------
"""Reference ELMo biLM activations computed by AllenNLP's own PyTorch implementation.

    python allennlp_ref.py --options OPT.json --weights W.hdf5 \
        --sentences sentences.json --out ref.npz [--threads N] [--diagnostics]

Runs a *fresh* `allennlp.modules.elmo._ElmoBiLm` (so the stateful ElmoLstm starts from
zero states) in eval mode under torch.no_grad() on one batch, and a separate fresh
`Elmo(..., num_output_representations=1, dropout=0.0, do_layer_norm=False,
scalar_mix_parameters=FIXED)`.  Everything numeric comes from the installed allennlp
package; this script only feeds inputs and stores outputs.  See README.md for the
meaning and exact shape of every array in the .npz.
"""
import argparse
import json
import logging
import os
import platform
import sys
import time
import warnings

DEFAULT_SCALAR_MIX = [0.3, -0.4, 0.9]  # un-normalised (pre-softmax) ScalarMix weights


def import_allennlp():
    """Import the AllenNLP ELMo pieces quietly (the 2.10.1 import chain is noisy)."""
    warnings.filterwarnings("ignore")
    logging.getLogger().setLevel(logging.ERROR)
    t0 = time.perf_counter()
    import allennlp  # noqa: F401
    from allennlp.modules.elmo import _ElmoBiLm, _ElmoCharacterEncoder, Elmo, batch_to_ids  # noqa
    from allennlp.nn.util import remove_sentence_boundaries
    return {
        "allennlp": allennlp, "_ElmoBiLm": _ElmoBiLm, "Elmo": Elmo,
        "batch_to_ids": batch_to_ids, "remove_sentence_boundaries": remove_sentence_boundaries,
        "import_s": time.perf_counter() - t0,
    }


def load_sentences(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, dict):
        data = data["sentences"]
    if not (isinstance(data, list) and data and all(
            isinstance(s, list) and s and all(isinstance(t, str) for t in s) for s in data)):
        raise SystemExit(f"{path}: expected a non-empty JSON list of non-empty lists of strings")
    return data


def layer_stats(x, mask):
    """x: [B, T, D] float array, mask: [B, T] bool -> stats over valid positions."""
    import numpy as np
    v = x[mask]
    half = v.shape[-1] // 2
    return {
        "mean": float(v.mean()), "std": float(v.std()),
        "min": float(v.min()), "max": float(v.max()),
        "mean_abs": float(np.abs(v).mean()),
        "frac_abs_lt_1e-3": float((np.abs(v) < 1e-3).mean()),
        "std_fwd_half": float(v[:, :half].std()), "std_bwd_half": float(v[:, half:].std()),
        "padded_max_abs": float(np.abs(x[~mask]).max()) if (~mask).any() else 0.0,
    }


class _Recorder:
    """Collects saturation statistics for --diagnostics."""

    def __init__(self):
        self.data = {}

    def add(self, key, **counts):
        d = self.data.setdefault(key, {})
        for k, v in counts.items():
            d[k] = d.get(k, 0) + v

    def report(self):
        out = {}
        for key, d in self.data.items():
            n = d.pop("n")
            out[key] = {k: v / n for k, v in d.items()}
            out[key]["n"] = n
        return out


def run_diagnostics(mods, options_file, weight_file, char_ids):
    """Saturation check on a separate fresh _ElmoBiLm: forward hooks on the char-CNN
    convolutions and highway layers, and a transparent proxy for the `torch` name inside
    allennlp.modules.lstm_cell_with_projection that counts gate saturation and clipping.
    The proxy returns exactly what torch returns, and only this throw-away model sees it."""
    import torch
    import allennlp.modules.lstm_cell_with_projection as lcp

    rec = _Recorder()
    with open(options_file) as f:
        opts = json.load(f)
    cell_clip = opts["lstm"].get("cell_clip")
    proj_clip = opts["lstm"].get("proj_clip")

    bilm = mods["_ElmoBiLm"](options_file, weight_file)
    bilm.eval()
    enc = bilm._token_embedder
    hooks = []
    n_tok_mask = {}

    def conv_hook(mod, inp, out):
        pooled = out.max(dim=-1)[0]                      # [B*T', num]  (pre-activation)
        m = n_tok_mask["m"]
        pooled = pooled[m]
        rec.add("char_cnn_maxpool_preact", n=pooled.numel(),
                frac_le_0=int((pooled <= 0).sum()),      # dead after relu
                frac_abs_gt_3=int((pooled.abs() > 3).sum()))  # tanh-saturated

    def highway_hook(mod, inp, out):
        dim = out.shape[-1] // 2
        gate = torch.sigmoid(out[..., dim:])[n_tok_mask["m"]]  # AllenNLP gate = 1 - tf carry
        nonlin = out[..., :dim][n_tok_mask["m"]]
        rec.add("highway_gate", n=gate.numel(), frac_lt_0_02=int((gate < 0.02).sum()),
                frac_gt_0_98=int((gate > 0.98).sum()), sum=float(gate.sum()))
        rec.add("highway_relu_input", n=nonlin.numel(), frac_le_0=int((nonlin <= 0).sum()))

    for i in range(len(enc._convolutions)):
        hooks.append(getattr(enc, f"char_conv_{i}").register_forward_hook(conv_hook))
    for layer in enc._highways._layers:
        hooks.append(layer.register_forward_hook(highway_hook))

    # valid (non-padding, incl. BOS/EOS) token rows of the flattened char-CNN batch
    mask_tok = (char_ids > 0).sum(-1) > 0
    lens = mask_tok.sum(-1)
    m = torch.zeros(char_ids.shape[0], char_ids.shape[1] + 2, dtype=torch.bool)
    for b, n in enumerate(lens.tolist()):
        m[b, : n + 2] = True
    n_tok_mask["m"] = m.view(-1)

    class TorchProxy:
        def __init__(self, real):
            self._real = real
            self._clamp_calls = 0

        def __getattr__(self, name):
            return getattr(self._real, name)

        def sigmoid(self, x, *a, **k):
            y = self._real.sigmoid(x, *a, **k)
            rec.add("lstm_sigmoid_gates", n=y.numel(), frac_lt_0_02=int((y < 0.02).sum()),
                    frac_gt_0_98=int((y > 0.98).sum()))
            return y

        def tanh(self, x, *a, **k):
            y = self._real.tanh(x, *a, **k)
            rec.add("lstm_tanh", n=y.numel(), frac_abs_gt_0_98=int((y.abs() > 0.98).sum()))
            return y

        def clamp(self, x, lo, hi, *a, **k):
            # LstmCellWithProjection clamps the memory (cell_clip) then the projected
            # output (proj_clip) at every timestep when both clips are set.
            if cell_clip and proj_clip:
                key = "lstm_memory_clip" if self._clamp_calls % 2 == 0 else "lstm_proj_clip"
            else:
                key = "lstm_clamp"
            self._clamp_calls += 1
            rec.add(key, n=x.numel(), frac_clipped=int(((x < lo) | (x > hi)).sum()),
                    sum_abs=float(x.abs().sum()))
            return self._real.clamp(x, lo, hi, *a, **k)

    real_torch = lcp.torch
    lcp.torch = TorchProxy(real_torch)
    try:
        with torch.no_grad():
            bilm(char_ids)
    finally:
        lcp.torch = real_torch
        for h in hooks:
            h.remove()
    rep = rec.report()
    for k in ("highway_gate",):
        if k in rep:
            rep[k]["mean"] = rep[k].pop("sum")
    for k in ("lstm_memory_clip", "lstm_proj_clip", "lstm_clamp"):
        if k in rep:
            rep[k]["mean_abs_preclip"] = rep[k].pop("sum_abs")
    return rep


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--options", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--sentences", required=True)
    ap.add_argument("--out", required=True, help="output .npz")
    ap.add_argument("--scalar-mix", default=",".join(str(v) for v in DEFAULT_SCALAR_MIX),
                    help="comma-separated un-normalised ScalarMix weights (n_layers+1 values)")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--diagnostics", action="store_true",
                    help="also report gate saturation / clipping / dead-unit fractions")
    ap.add_argument("--float64", action="store_true",
                    help="also run a fresh _ElmoBiLm cast to float64 (.double(); same float32 "
                         "weights) and save activations_float64: a rounding-noise floor")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    mods = import_allennlp()
    import h5py
    import numpy as np
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(0)  # nothing random is used in eval mode; pinned anyway

    sentences = load_sentences(args.sentences)
    with open(args.options) as f:
        options = json.load(f)
    scalar_mix = [float(v) for v in args.scalar_mix.split(",")]
    n_repr_layers = options["lstm"]["n_layers"] + 1
    if len(scalar_mix) != n_repr_layers:
        raise SystemExit(f"--scalar-mix needs {n_repr_layers} values")

    # 1. character ids, exactly as AllenNLP builds them
    char_ids = mods["batch_to_ids"](sentences)                  # int64 [B, T, 50]

    # 2. biLM activations from a fresh _ElmoBiLm
    t0 = time.perf_counter()
    bilm = mods["_ElmoBiLm"](args.options, args.weights)
    bilm.eval()
    t_load = time.perf_counter() - t0
    t0 = time.perf_counter()
    with torch.no_grad():
        out = bilm(char_ids)
    t_fwd = time.perf_counter() - t0
    acts_bos = out["activations"]                               # list of [B, T+2, 2P]
    mask_bos = out["mask"]                                      # bool [B, T+2]
    no_bos = [mods["remove_sentence_boundaries"](a, mask_bos) for a in acts_bos]
    acts = torch.stack([a for a, _ in no_bos], dim=1)           # [B, L+1, T, 2P]
    mask = no_bos[0][1]                                         # bool [B, T]

    # 3. one ScalarMix output from a separate fresh Elmo
    t0 = time.perf_counter()
    elmo = mods["Elmo"](args.options, args.weights, num_output_representations=1,
                        dropout=0.0, do_layer_norm=False, scalar_mix_parameters=scalar_mix)
    elmo.eval()
    with torch.no_grad():
        elmo_out = elmo(char_ids)
    t_elmo = time.perf_counter() - t0
    mix = elmo_out["elmo_representations"][0]                   # [B, T, 2P]
    mix_mask = elmo_out["mask"]
    gamma = float(getattr(elmo, "scalar_mix_0").gamma.item())

    acts_np = acts.numpy().astype(np.float32)
    mask_np = mask.numpy().astype(bool)
    mix_np = mix.numpy().astype(np.float32)
    assert np.array_equal(mask_np, mix_mask.numpy().astype(bool))

    # self-consistency: ScalarMix == gamma * sum softmax(s)_k * layer_k (float64 recompute)
    w = np.exp(np.array(scalar_mix, dtype=np.float64))
    w /= w.sum()
    mix_check = gamma * np.einsum("k,bktd->btd", w, acts_np.astype(np.float64))
    mix_err = float(np.abs(mix_check - mix_np).max())

    lengths = np.array([len(s) for s in sentences], dtype=np.int32)
    assert np.array_equal(mask_np.sum(1), lengths)

    acts64 = None
    if args.float64:
        bilm64 = mods["_ElmoBiLm"](args.options, args.weights)
        bilm64.eval()
        bilm64.double()
        with torch.no_grad():
            out64 = bilm64(char_ids)
        acts64 = torch.stack([mods["remove_sentence_boundaries"](a, out64["mask"])[0]
                              for a in out64["activations"]], dim=1).numpy()
        assert acts64.dtype == np.float64

    diag = None
    if args.diagnostics:
        diag = run_diagnostics(mods, args.options, args.weights, char_ids)

    with h5py.File(args.weights, "r") as f:
        w_attrs = {k: (v.item() if hasattr(v, "item") else str(v)) for k, v in f.attrs.items()}
    meta = {
        "allennlp": mods["allennlp"].__version__, "torch": torch.__version__,
        "numpy": np.__version__, "h5py": h5py.__version__,
        "python": platform.python_version(), "torch_threads": torch.get_num_threads(),
        "options_file": os.path.abspath(args.options),
        "weights_file": os.path.abspath(args.weights), "weights_attrs": w_attrs,
        "sentences_file": os.path.abspath(args.sentences),
        "scalar_mix_parameters": scalar_mix, "scalar_mix_gamma": gamma,
        "timing_s": {"allennlp_import": mods["import_s"], "bilm_load": t_load,
                     "bilm_forward": t_fwd, "elmo_load_and_forward": t_elmo},
        "scalar_mix_selfcheck_max_abs_err": mix_err,
    }
    stats = {f"layer{k}": layer_stats(acts_np[:, k], mask_np) for k in range(acts_np.shape[1])}
    stats["elmo_scalar_mix"] = layer_stats(mix_np, mask_np)
    meta["stats"] = stats
    if diag is not None:
        meta["diagnostics"] = diag
    if acts64 is not None:
        meta["float32_vs_float64_max_abs_per_layer"] = [
            float(np.abs(acts_np[:, k].astype(np.float64) - acts64[:, k])[mask_np].max())
            for k in range(acts_np.shape[1])]
    extra = {} if acts64 is None else {"activations_float64": acts64}

    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    np.savez(
        args.out,
        activations=acts_np,                                      # f32 [B, L+1, T, 2P]
        mask=mask_np,                                             # bool [B, T]
        lengths=lengths,                                          # i32 [B]
        char_ids=char_ids.numpy(),                                # i64 [B, T, 50]
        activations_with_bos_eos=torch.stack(acts_bos, 1).numpy().astype(np.float32),
        mask_with_bos_eos=mask_bos.numpy().astype(bool),          # bool [B, T+2]
        elmo_scalar_mix=mix_np,                                   # f32 [B, T, 2P]
        scalar_mix_parameters=np.array(scalar_mix, dtype=np.float32),
        scalar_mix_gamma=np.array(gamma, dtype=np.float32),
        sentences_json=np.array(json.dumps(sentences, ensure_ascii=False)),
        options_json=np.array(json.dumps(options)),
        meta_json=np.array(json.dumps(meta)),
        **extra,                                                  # f64 [B, L+1, T, 2P]
    )

    if not args.quiet:
        print(f"allennlp {meta['allennlp']}  torch {meta['torch']}  numpy {meta['numpy']}  "
              f"threads {meta['torch_threads']}")
        print(f"batch {acts_np.shape[0]} sentences, max_len {acts_np.shape[2]}, "
              f"{int(lengths.sum())} tokens; char_ids {tuple(char_ids.shape)}")
        print(f"activations {acts_np.shape} float32; mask {mask_np.shape}; "
              f"elmo_scalar_mix {mix_np.shape}")
        print(f"timing: import {mods['import_s']:.1f}s  load {t_load:.2f}s  "
              f"forward {t_fwd:.3f}s  elmo(load+fwd) {t_elmo:.2f}s  "
              f"total {time.perf_counter() - t_start:.1f}s")
        print(f"ScalarMix self-check max|err| = {mix_err:.3g}")
        if acts64 is not None:
            print("float32 vs float64 (same AllenNLP module, .double()) max|diff| per layer: "
                  + ", ".join(f"{v:.2g}" for v in meta["float32_vs_float64_max_abs_per_layer"]))
        for k, s in stats.items():
            print(f"  {k:16s} mean {s['mean']:+.4f} std {s['std']:.4f} "
                  f"min {s['min']:+.3f} max {s['max']:+.3f} |x|<1e-3 {s['frac_abs_lt_1e-3']:.3f} "
                  f"std(fwd/bwd half) {s['std_fwd_half']:.3f}/{s['std_bwd_half']:.3f} "
                  f"padded max|x| {s['padded_max_abs']:.1g}")
        if diag:
            print("diagnostics (fractions over valid positions):")
            for k, d in diag.items():
                print(f"  {k:24s} " + "  ".join(
                    f"{kk} {vv:.4g}" if isinstance(vv, float) else f"{kk} {vv}"
                    for kk, vv in d.items()))
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
