"""How fast is mha_core's forward pass next to torch.nn.MultiheadAttention?

Both compute the same thing on the same float32 weights: B=8, n=256, d_model=512, h=8, all per-head
weights returned (need_weights=True, average_attn_weights=False). The two are timed alternately in
one run, so both see the same machine state; the figure is the ratio of the medians.

    python bench/core_speed.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import timeit
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.figures import Figures  # noqa: E402
from mha_core import head_patterns, multi_head_attention, shape_report  # noqa: E402

B, N, D_MODEL, HEADS = 8, 256, 512, 8
TARGET_RATIO = 1.3  # mha_core may be this much slower than torch at most
FIGURES = Figures("core_speed")


def torch_layer(seed: int = 0) -> torch.nn.MultiheadAttention:
    torch.manual_seed(seed)
    layer = torch.nn.MultiheadAttention(D_MODEL, HEADS, batch_first=True, dtype=torch.float32)
    with torch.no_grad():  # non-zero biases, so both sides add them
        layer.in_proj_bias.normal_()
        layer.out_proj.bias.normal_()
    return layer.eval()


def numpy_weights(layer: torch.nn.MultiheadAttention) -> dict[str, np.ndarray]:
    """The same weights in the x @ W convention (torch computes x @ Wᵀ)."""
    W_in = layer.in_proj_weight.detach().numpy()  # [3·d_model, d_model]
    b_in = layer.in_proj_bias.detach().numpy()
    W_Q, W_K, W_V = (np.ascontiguousarray(W.T) for W in np.split(W_in, 3))
    b_Q, b_K, b_V = np.split(b_in, 3)
    W_O = np.ascontiguousarray(layer.out_proj.weight.detach().numpy().T)
    return dict(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O, b_Q=b_Q, b_K=b_K, b_V=b_V, b_O=layer.out_proj.bias.detach().numpy())


def blas_info() -> str:
    try:
        import threadpoolctl
    except ImportError:
        return "threadpoolctl not installed (pip install threadpoolctl to see the BLAS kernel)"
    pools = threadpoolctl.threadpool_info()
    return "; ".join(f"{p['internal_api']} {p.get('version')} {p.get('architecture')} x{p['num_threads']}"
                     f" ({Path(p['filepath']).name})" for p in pools) or "no BLAS pool found"


def best_ms(fn, repeat: int = 5) -> float:
    return min(timeit.repeat(fn, number=1, repeat=repeat)) * 1e3


def print_instant_calls() -> None:
    """The calls the widgets make, at their worst: they must answer in milliseconds."""
    print(f"shape_report at d_model=12288, h=96, n=131072, B=512: "
          f"{best_ms(lambda: shape_report(12288, 96, seq_len=131072, batch=512)):.2f} ms (best of 5)")
    long_text = "the cat, " * 2500  # 22,500 characters, 7,500 tokens, cut to 64
    print(f"head_patterns on 22,500 characters (cut to 64 tokens): {best_ms(lambda: head_patterns(long_text)):.1f} ms")
    too_long = "a" * 1_000_000

    def refuse():
        try:
            head_patterns(too_long)
        except ValueError:
            pass
    print(f"head_patterns refusing 1,000,000 characters: {best_ms(refuse):.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    rounds = parser.parse_args().rounds

    layer = torch_layer()
    W = numpy_weights(layer)
    x_np = np.random.default_rng(0).standard_normal((B, N, D_MODEL)).astype(np.float32)
    x_t = torch.from_numpy(x_np)

    def run_numpy():
        return multi_head_attention(x_np, n_heads=HEADS, **W)

    def run_torch():
        with torch.inference_mode():
            return layer(x_t, x_t, x_t, need_weights=True, average_attn_weights=False)

    (out_np, w_np), (out_t, w_t) = run_numpy(), run_torch()
    assert out_np.dtype == np.float32 and w_np.shape == tuple(w_t.shape)
    diff = max(np.abs(out_np - out_t.numpy()).max(), np.abs(w_np - w_t.numpy()).max())
    for _ in range(3):  # warm up both
        run_numpy(), run_torch()

    times = {"mha_core": [], "torch": []}
    for _ in range(rounds):
        for name, fn in (("mha_core", run_numpy), ("torch", run_torch)):
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)

    med = {name: statistics.median(t) for name, t in times.items()}
    print(f"mha_core forward time / torch.nn.MultiheadAttention forward time "
          f"(need_weights=True, average_attn_weights=False), B={B}, n={N}, d_model={D_MODEL}, h={HEADS}, "
          f"float32, {rounds} rounds timed alternately")
    print(f"  numpy {np.__version__}, torch {torch.__version__} ({torch.get_num_threads()} threads), "
          f"Python {platform.python_version()}, {os.cpu_count()} CPUs")
    print(f"  BLAS: {blas_info()}")
    print(f"  OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print(f"  max |difference| of outputs and weights: {diff:.2e}")
    for name, t in times.items():
        print(f"  {name:9s} median {med[name] * 1e3:7.2f} ms   min {min(t) * 1e3:7.2f} ms")
    best = {name: min(t) for name, t in times.items()}
    print(f"  ratio of the best times (less sensitive to a busy machine): {best['mha_core'] / best['torch']:.2f}")
    ratio = med['mha_core'] / med['torch']
    FIGURES.check(f"mha_core forward / torch.nn.MultiheadAttention forward (B={B}, n={N}, d_model={D_MODEL}, "
                  f"h={HEADS}, float32, per-head weights returned)",
                  f"ratio of medians {ratio:.2f} ({med['mha_core'] * 1e3:.1f} / {med['torch'] * 1e3:.1f} ms)",
                  f"≤ {TARGET_RATIO}", ratio <= TARGET_RATIO)
    print_instant_calls()
    return 0


if __name__ == "__main__":
    sys.exit(FIGURES.run(main))
