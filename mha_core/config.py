"""The attention layer's configuration and the check that its numbers fit together.

Vocabulary (TransformerLens): d_model is the width of the residual stream, n_heads (h) the number of
query heads, n_kv_heads (h_kv) the number of key/value heads (h for plain multi-head attention, 1 for
multi-query attention, in between for grouped-query attention) and d_head (d_k) the width of one head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .fields import Flag, Maybe, Whole, arguments

# Upper bounds: far above any published model, low enough that every count stays a readable number. Each size is
# declared a whole number from 1 to its limit (SIZES); the config checks how the sizes fit together.
LIMITS = {
    "d_model": 1_048_576,  # 2**20
    "n_heads": 65_536,
    "n_kv_heads": 65_536,
    "d_head": 65_536,
    "seq_len": 16_777_216,  # 2**24 tokens
    "batch": 65_536,
    "n_layers": 4_096,
}
SIZES = {name: Whole(1, limit) for name, limit in LIMITS.items()}
LAYER = dict(d_model=SIZES["d_model"], n_heads=SIZES["n_heads"], n_kv_heads=Maybe(SIZES["n_kv_heads"]),
             d_head=Maybe(SIZES["d_head"]))  # one layer's sizes, as every function of them declares them
BIAS = Flag()


class ConfigError(ValueError):
    """An attention configuration whose numbers do not fit together (the message says why).

    .check holds check_config's answer for it, suggestions included.
    """

    def __init__(self, check: dict):
        super().__init__(check["message"])
        self.check = check


def divisors(n: int) -> list[int]:
    """All divisors of n, ascending (trial division up to sqrt(n): at most 1,024 steps here)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _nearest(target: int, candidates) -> list[int]:
    """The closest candidate below target and the closest above, closest first (ties: smaller first)."""
    below = [c for c in candidates if c < target]
    above = [c for c in candidates if c > target]
    picks = ([max(below)] if below else []) + ([min(above)] if above else [])
    return sorted(picks, key=lambda c: (abs(c - target), c))


def _multiples_near(target: int, step: int, limit: int) -> list[int]:
    """The multiples of step just below and just above target, within 1..limit."""
    low = (target // step) * step
    return _nearest(target, [m for m in (low, low + step) if 1 <= m <= limit and m != target])


def check_result(ok: bool, message: str, **suggestions) -> dict:
    """check_config's answer: {"ok", "message", "suggestions" for each field (the nearest values that work)}."""
    empty = {"n_heads": [], "d_model": [], "n_kv_heads": [], "d_head": []}
    return {"ok": ok, "message": message, "suggestions": {**empty, **suggestions}}


def _good_heads(values: dict) -> list[int]:
    """The nearest n_heads that would work; an explicit n_kv_heads must divide them."""
    h, step = values["n_heads"], values.get("n_kv_heads", 1)
    if "d_head" in values:  # d_model need not divide: any multiple of step works
        return _multiples_near(h, step, LIMITS["n_heads"])
    return _nearest(h, [c for c in divisors(values["d_model"]) if c % step == 0])  # a divisor of d_model


def _resolve(d_model, n_heads, n_kv_heads=None, d_head=None) -> tuple[dict, dict | None]:
    """(check, resolved ints {d_model, n_heads, n_kv_heads, d_head} or None)."""
    values = {name: int(value) for name, value in
              (("d_model", d_model), ("n_heads", n_heads), ("n_kv_heads", n_kv_heads), ("d_head", d_head))
              if value is not None}
    d, h = values["d_model"], values["n_heads"]
    h_kv = values.get("n_kv_heads", h)
    if h % h_kv:
        return check_result(
            False,
            f"n_heads={h} is not divisible by n_kv_heads={h_kv}: each key/value head must serve "
            "the same number of query heads.",
            n_kv_heads=_nearest(h_kv, divisors(h)),
            n_heads=_good_heads(values),
        ), None
    if "d_head" not in values and d % h:
        return check_result(
            False,
            f"d_model={d} is not divisible by n_heads={h}: {d} / {h} = {d / h:.2f} is not a whole number, "
            "so the heads cannot split the width into equal slices. Change h or d_model, or give the heads "
            "an explicit width d_head (then h·d_head need not equal d_model).",
            n_heads=_good_heads(values),
            d_model=_multiples_near(d, h, LIMITS["d_model"]),
            d_head=_nearest(d / h, [w for w in (d // h, d // h + 1) if 1 <= w <= LIMITS["d_head"]]),
        ), None
    d_k = values.get("d_head", d // h)
    message = f"OK: {h} head{'s' if h > 1 else ''} of width d_head={d_k}"
    if h_kv != h:
        message += f", sharing {h_kv} key/value head{'s' if h_kv > 1 else ''}."
    else:
        message += "."
    return check_result(True, message), {"d_model": d, "n_heads": h, "n_kv_heads": h_kv, "d_head": d_k}


@arguments(**LAYER)
def check_config(d_model, n_heads, n_kv_heads=None, d_head=None) -> dict:
    """Check how an attention configuration's sizes fit together.

    Returns {"ok": bool, "message": str, "suggestions": {"n_heads": [...], "d_model": [...],
    "n_kv_heads": [...], "d_head": [...]}}: when ok is False, the message says why and the suggestions
    are the nearest values that would work, closest first (d_model=512, n_heads=6 -> n_heads [4, 8],
    d_model [510, 516], or an explicit d_head [85, 86]). Each value is a whole number from 1 up to LIMITS[name]
    (else a ValueError naming it). With an explicit d_head (Gemma-7B: 3072 wide, 16 heads of 256) d_model need not divide by n_heads; with
    n_kv_heads, n_heads must divide by it.
    """
    return configure(d_model, n_heads, n_kv_heads, d_head)[1]


def configure(d_model, n_heads, n_kv_heads=None, d_head=None, bias=True) -> tuple[AttentionConfig | None, dict]:
    """(the AttentionConfig, or None when the sizes do not fit together; check_config's answer)."""
    try:
        cfg = AttentionConfig(d_model, n_heads, n_kv_heads, d_head, bias)
    except ConfigError as error:
        return None, error.check
    return cfg, cfg.check


@dataclass(frozen=True)
class AttentionConfig:
    """One attention layer's sizes; raises a ValueError naming a size out of its range (LAYER), ConfigError when
    they do not fit together.

    n_kv_heads and d_head default to n_heads and d_model // n_heads; after construction both hold ints.
    """

    d_model: int
    n_heads: int
    n_kv_heads: int | None = None
    d_head: int | None = None
    bias: bool = True

    def __post_init__(self):
        for name, field in {**LAYER, "bias": BIAS}.items():
            field.check(name, getattr(self, name))
        check, resolved = _resolve(self.d_model, self.n_heads, self.n_kv_heads, self.d_head)
        if resolved is None:
            raise ConfigError(check)
        for name, value in {**resolved, "bias": bool(self.bias)}.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_check", check)

    @property
    def check(self) -> dict:
        """check_config's answer for these sizes (ok, with its message)."""
        return self._check

    @property
    def d_q(self) -> int:
        """Width of all query heads together: h·d_k (= d_model unless d_head is explicit)."""
        return self.n_heads * self.d_head

    @property
    def d_kv(self) -> int:
        """Width of all key (or value) heads together: h_kv·d_k."""
        return self.n_kv_heads * self.d_head

    @property
    def group_size(self) -> int:
        """Query heads per key/value head: 1 for multi-head, n_heads for multi-query attention."""
        return self.n_heads // self.n_kv_heads

    @property
    def weight_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shape of every learned array, x @ W convention; biases only when bias is True."""
        shapes = {
            "W_Q": (self.d_model, self.d_q),
            "W_K": (self.d_model, self.d_kv),
            "W_V": (self.d_model, self.d_kv),
            "W_O": (self.d_q, self.d_model),
        }
        if self.bias:
            shapes.update(b_Q=(self.d_q,), b_K=(self.d_kv,), b_V=(self.d_kv,), b_O=(self.d_model,))
        return shapes

    @property
    def param_count(self) -> int:
        """Learned numbers in the layer: the sizes of weight_shapes added up (see shapes.param_count)."""
        return sum(math.prod(shape) for shape in self.weight_shapes.values())
