"""mha_core.rng: SplitMix64 over a counter, against an independent pure-Python SplitMix64, and the distributions
its methods promise."""
from __future__ import annotations

import math

import numpy as np
import pytest

from mha_core.rng import GAMMA, Random, mixed

MASK = 2**64 - 1


def splitmix64(state: int, n: int) -> list[int]:
    """The reference generator (Vigna's splitmix64.c) in Python integers: n outputs from state."""
    out = []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        out.append(z ^ (z >> 31))
    return out


def key_of(words: list[int]) -> int:
    """The documented key: each word mixed in turn, starting from 0."""
    key = 0
    for word in words:
        key = splitmix64((key + word) & MASK, 1)[0]
    return key


def test_the_finaliser_gives_splitmix64s_published_first_output():
    assert int(mixed(np.array([GAMMA], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF  # seed 0's first


@pytest.mark.parametrize("seed", [0, 7, 2**64 - 1, [3, 1], [2**32 - 1, 0, 5]])
def test_the_stream_is_splitmix64_from_the_seeds_key_and_draws_continue(seed):
    words = seed if isinstance(seed, list) else [seed]
    expected = splitmix64(key_of(words), 10)
    rng = Random(seed)
    assert [int(b) for b in rng.bits(4)] + [int(b) for b in rng.bits(6)] == expected


def test_the_same_seed_draws_the_same_numbers_and_streams_differ():
    assert np.array_equal(Random([5, 1]).standard_normal((3, 4)), Random([5, 1]).standard_normal((3, 4)))
    draws = [Random(s).random(8) for s in (5, [5, 0], [5, 1], 6)]
    assert all(not np.array_equal(a, b) for i, a in enumerate(draws) for b in draws[i + 1:])


def test_uniform_and_normal_draws_have_their_distributions():
    u = Random(1).random(200_000)
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.005
    z = np.sort(Random(2).standard_normal((400, 500)).ravel())  # [200000]
    assert abs(z.mean()) < 0.01 and abs(z.std() - 1) < 0.01
    cdf = 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in z]))  # [200000]
    ranks = np.arange(1, z.size + 1) / z.size
    assert np.max(np.abs(cdf - ranks)) < 0.005  # Kolmogorov–Smirnov; 1 % critical value 0.0036
    scaled = Random(2).normal(3.0, 0.5, 100_000)
    assert abs(scaled.mean() - 3) < 0.01 and abs(scaled.std() - 0.5) < 0.01


def test_integers_cover_their_range_evenly():
    drawn = Random(3).integers(2, 9, 70_000)  # [70000] in 2..8
    counts = np.bincount(drawn, minlength=9)
    assert drawn.dtype == np.int64 and counts[:2].sum() == 0
    assert np.all(np.abs(counts[2:] - 10_000) < 400)


def test_permutations_are_permutations_each_row_its_own():
    assert sorted(Random(4).permutation(50)) == list(range(50))
    rows = Random(4).permuted(np.tile(np.arange(20), (6, 1)), axis=1)  # [6, 20]
    assert all(sorted(row) == list(range(20)) for row in rows)
    assert len({tuple(row) for row in rows}) == 6


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, True, "3", [1, -2]])
def test_a_bad_seed_is_refused_with_what_a_seed_is(seed):
    with pytest.raises(ValueError, match="whole numbers from 0 to 2\\*\\*64 - 1"):
        Random(seed)
