"""The bound for comparing two routes through the same float32 maths.

Several tests compare two computations of the same arithmetic whose
matmuls have different shapes: the packed and the padded LSTM loops, the
loop and its reference transcription, a sentence alone and in a batch,
the char-CNN on distinct tokens and on every token, Beam's batches and
in-process `embed`'s. TensorFlow's CPU kernels (oneDNN, Eigen) choose
their blocking by shape, so the float32 sums may be ordered differently
(docs/EXACTNESS.md, benchmarks/results/batch_rounding.json):

- on CPUs with AVX-512 (Intel Xeon; AMD EPYC Zen 4, checked 2026-12-04)
  these comparisons hold at the bounds the tests were written with: bit
  for bit, or within 1e-6;
- on AVX2-only CPUs (AMD EPYC Zen 2/3) the same comparisons differ by up
  to about 3e-6 of the largest value, and where a rounding puts a value
  on the other side of an LSTM clip, that step's gradient jumps and the
  jump flows back to earlier steps. The tight bounds failed there before
  the code they check changed, so only those CPUs get the looser bound.

`on_cpu(tight, avx2)` is the bound for this machine: `tight` where the
CPU has AVX-512 (`avx512f` in /proc/cpuinfo), `avx2` elsewhere
(including CPUs this cannot tell).
"""


def _has_avx512():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("flags"):
                    return "avx512f" in line.split()
    except OSError:
        pass
    return False


AVX512 = _has_avx512()


def on_cpu(tight, avx2):
    """`tight` on an AVX-512 CPU, else `avx2` (module docstring)."""
    return tight if AVX512 else avx2
