"""Seeded random numbers from NumPy's integer arithmetic alone: SplitMix64 (Steele, Lea and Flood, 2014) over a
counter, every draw one vectorised pass.

mha_core draws its weights, batches and examples here rather than from numpy.random, so the browser installs
NumPy without numpy.random's nine extension modules (2 MB of WebAssembly that every start would compile). The
same seed draws the same numbers on every machine. The methods mirror numpy.random.Generator's, so a function
that takes one takes the other.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

GAMMA = np.uint64(0x9E3779B97F4A7C15)  # SplitMix64's increment: 2**64 over the golden ratio, made odd
MIX = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)  # its finaliser's multipliers
SHIFTS = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)


def mixed(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, elementwise on a uint64 array (its products wrap at 2**64); z is not changed."""
    z = z ^ (z >> SHIFTS[0])
    z *= MIX[0]
    z ^= z >> SHIFTS[1]
    z *= MIX[1]
    z ^= z >> SHIFTS[2]
    return z


def _shape(size) -> tuple[int, ...]:
    return (int(size),) if isinstance(size, numbers.Integral) else tuple(int(s) for s in size)


class Random:
    """A stream of random numbers from seed: a whole number from 0 to 2**64 − 1, or a sequence of them (a run's
    seed and a stream within it). Each word is mixed into the stream's key in turn; the k-th 64 bits drawn
    (k = 1, 2, …) are SplitMix64's k-th output from that key."""

    def __init__(self, seed):
        words = list(seed) if isinstance(seed, (list, tuple)) else [seed]
        key = np.zeros(1, dtype=np.uint64)  # [1]: arrays wrap silently where NumPy scalars would warn
        for word in words:
            if isinstance(word, bool) or not isinstance(word, numbers.Integral) or not 0 <= word < 2**64:
                raise ValueError(f"a seed is made of whole numbers from 0 to 2**64 - 1, got {word!r:.40}.")
            key = mixed(key + GAMMA + np.uint64(word))
        self.key = key
        self.drawn = 0  # 64-bit words drawn so far

    def bits(self, n: int) -> np.ndarray:
        """[n] uint64: the next n outputs."""
        counter = np.arange(self.drawn + 1, self.drawn + n + 1, dtype=np.uint64)  # [n]
        self.drawn += n
        return mixed(self.key + counter * GAMMA)

    def random(self, size) -> np.ndarray:
        """[*size] float64, uniform on [0, 1): the top 53 bits of each output."""
        shape = _shape(size)
        return (self.bits(math.prod(shape)) >> SHIFTS[3]).astype(np.float64).reshape(shape) * 2.0**-53

    def standard_normal(self, size) -> np.ndarray:
        """[*size] float64, normal(0, 1) by the Box–Muller transform."""
        shape = _shape(size)
        n = math.prod(shape)
        u = self.random(2 * n)  # [2n]
        radius = np.sqrt(-2.0 * np.log1p(-u[:n]))  # [n]; 1 − u is in (0, 1]
        return (radius * np.cos(2 * math.pi * u[n:])).reshape(shape)

    def normal(self, loc: float = 0.0, scale: float = 1.0, size=1) -> np.ndarray:
        return loc + scale * self.standard_normal(size)

    def integers(self, low: int, high: int, size) -> np.ndarray:
        """[*size] int64, uniform on low, …, high − 1."""
        return low + np.floor(self.random(size) * (high - low)).astype(np.int64)

    # A shuffle sorts random 64-bit keys: two keys alike (odds about n² / 2**65) keep their order.
    def permutation(self, n: int) -> np.ndarray:
        """[n] int64: 0, …, n − 1 in random order."""
        return np.argsort(self.bits(n), kind="stable")

    def permuted(self, x: np.ndarray, axis: int) -> np.ndarray:
        """x with the entries along axis shuffled, each line on its own."""
        x = np.asarray(x)
        order = np.argsort(self.bits(x.size).reshape(x.shape), axis=axis, kind="stable")  # [*x.shape]
        return np.take_along_axis(x, order, axis=axis)
