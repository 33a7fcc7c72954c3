"""The task that needs induction heads, and the training run that finds them (Adam).

The task: each sequence repeats a block of distinct random tokens, the block's length (its period)
drawn from min_period..max_period. The first occurrence of the block cannot be predicted; every later
token can, by an induction circuit (Olsson et al. 2022): a layer-0 previous-token head writes "the
token before me" into the residual stream, and a layer-1 induction head matches the current token
against it and copies what followed. The period varies, so position alone does not give the answer.

The model and its gradients are model.py's; the heads' scores are detectors.py's. A run keeps every weight in
one flat array, so each of Adam's operations is one NumPy call. The public functions check their arguments
(@arguments); the run inside trusts them. Shapes: B batch, n seq_len, V vocab, P the number of weights.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .detectors import evaluate
from .fields import Choice, Having, Maybe, Number, Whole, arguments
from .model import CONFIG, SEED, TrainConfig, init_params, loss_and_grads, unflatten
from .rng import Random

ADAM = {"beta1": 0.9, "beta2": 0.999, "eps": 1e-8}
DIVERGED = 10  # a training loss above 10 × log(vocab), ten times a uniform guess's, ends the run


class TrainingDiverged(ValueError):
    """The loss or the weights stopped being finite; the run keeps its last good state."""


# ---------------------------------------------------------------- the task

STEPS = Whole(0, 10**9)


@arguments(config=CONFIG, rng=Having(("integers", "permuted"), "a random generator such as mha_core.rng.Random"))
def sample_batch(config: TrainConfig, rng: Random) -> np.ndarray:
    """[batch, seq_len] int tokens: each row a block of distinct random tokens, repeated to fill it."""
    periods = rng.integers(config.min_period, config.max_period + 1, size=config.batch)  # [B]
    blocks = rng.permuted(np.tile(np.arange(config.vocab), (config.batch, 1)), axis=1)  # [B, V]: distinct
    positions = np.arange(config.seq_len) % periods[:, None]  # [B, n]: t mod period
    return np.take_along_axis(blocks, positions, axis=1)  # [B, n]


def best_first_loss(config: TrainConfig) -> float:
    """The lowest expected loss any predictor can reach on the predictions made from a token seen for the first
    time (evaluate's loss_first), pooled over sequences as evaluate pools them; in nats.

    Having seen k distinct tokens and no repeat, every period from max(k, min_period) to max_period is equally
    likely (each block's first k tokens are equally likely whatever its length), so the block ends now with
    probability q_k = 1 / #{periods ≥ k} (0 below min_period) and the next token is token 0; otherwise it is one
    of the vocab − k unseen tokens, each equally likely. Predicting exactly that costs, on average,
    ℓ_k = −q_k ln q_k − (1 − q_k) ln((1 − q_k) / (vocab − k)). A sequence of period P makes P such
    predictions (k = 1..P), so the pooled mean is Σ_k Pr(P ≥ k) ℓ_k / E[P].
    """
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a TrainConfig, not {type(config).__name__}.")
    periods = np.arange(config.min_period, config.max_period + 1)  # [m]: equally likely
    k = np.arange(1, config.max_period + 1)  # [K]: tokens seen, all distinct
    left = (periods[None, :] >= k[:, None]).sum(axis=1)  # [K]: periods still possible
    q = np.where(k >= config.min_period, 1 / left, 0.0)  # [K]: the block ends after k tokens
    with np.errstate(divide="ignore", invalid="ignore"):  # q = 0 or 1: the term vanishes
        loss = -np.nan_to_num(q * np.log(q)) - np.nan_to_num((1 - q) * np.log((1 - q) / (config.vocab - k)))
    reached = left / len(periods)  # [K]: Pr(P ≥ k), the share of sequences that make prediction k
    return float((reached * loss).sum() / periods.mean())


def eval_batch(config: TrainConfig, seed: int) -> np.ndarray:
    """[batch, seq_len] tokens a run with this seed is measured on (never trained on)."""
    return sample_batch(config, Random([seed, 2]))


# ---------------------------------------------------------------- the optimiser

def adam_update(weights: np.ndarray, grads: np.ndarray, moments: tuple, t: int, lr: float) -> tuple[np.ndarray, tuple]:
    """(weights [P], (m, v)) after Adam's step t (from 1) with gradients grads [P]; new arrays, the inputs unchanged.

    m = β1·m + (1 − β1)·g, v = β2·v + (1 − β2)·g², w −= lr · m̂ / (√v̂ + ε), m̂ and v̂ corrected for their start at 0.
    """
    b1, b2 = ADAM["beta1"], ADAM["beta2"]
    m, v = moments
    m, v = b1 * m + (1 - b1) * grads, b2 * v + (1 - b2) * grads * grads
    step = lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + ADAM["eps"])
    return weights - step, (m, v)


# ---------------------------------------------------------------- the run

class Trainer:
    """A training run that advances in slices: trainer.run(n) takes n more Adam steps.

    Every log_every steps (and at step 0) history gets {"step", "loss", "loss_first", "loss_repeat",
    "scores"}, measured by evaluate on a fixed evaluation batch; every checkpoint_every steps (0: never) a copy
    of the weights goes into checkpoints ({"step", "params"}). The same config and seed give the same
    run, bit for bit, on one machine. A training loss that is not finite or above DIVERGED × log(vocab),
    or weights that stop being finite, raise TrainingDiverged and leave the run at its last finite state.
    dtype is the weights' and every computation's floating type: float64 (exact, for the gradient
    checks) or float32 (the widget's runs: faster in the browser's NumPy).
    """

    @arguments(config=Maybe(CONFIG), seed=SEED, log_every=Whole(1, 10**9), checkpoint_every=STEPS,
               dtype=Choice((np.float32, np.float64), "the weights' floating type"))
    def __init__(self, config: TrainConfig | None = None, seed: int = 0, log_every: int = 10,
                 checkpoint_every: int = 0, dtype=np.float64):
        self.config = TrainConfig() if config is None else config
        self.seed, self.log_every, self.checkpoint_every = seed, log_every, checkpoint_every
        weights = init_params(self.config, seed).values()  # float64, then rounded to dtype
        self.flat = np.concatenate([p.reshape(-1) for p in weights]).astype(dtype)  # [P]
        self.params = unflatten(self.flat, self.config)  # views of flat
        self.moments = (np.zeros_like(self.flat), np.zeros_like(self.flat))  # Adam's m and v, [P] each
        self.batches = Random([seed, 1])
        self.eval_tokens = eval_batch(self.config, seed)
        self.step, self.history, self.checkpoints = 0, [], []
        self._record()

    def _record(self) -> None:
        if self.step % self.log_every == 0:
            self.history.append({"step": self.step, **evaluate(self.params, self.eval_tokens, self.config)})
        if self.checkpoint_every and self.step % self.checkpoint_every == 0:
            self.checkpoints.append({"step": self.step, "params": {k: v.copy() for k, v in self.params.items()}})

    def _check_loss(self, loss: float) -> None:
        """Raise TrainingDiverged if loss is not finite or above DIVERGED × a uniform guess's loss."""
        uniform = math.log(self.config.vocab)
        if not loss <= DIVERGED * uniform:  # NaN fails this test too
            reached = f"reached {loss:.3g}" if math.isfinite(loss) else "stopped being a finite number"
            raise TrainingDiverged(f"training diverged at step {self.step}: the loss {reached} (a uniform guess "
                                   f"scores {uniform:.2f}); try a learning rate smaller than {self.config.lr:g}.")

    @arguments(n_steps=STEPS, budget_s=Maybe(Number(0, 3600)))
    def run(self, n_steps: int, budget_s: float | None = None) -> int:
        """Take up to n_steps steps (fewer if budget_s seconds have passed); return how many were taken."""
        start = time.perf_counter()
        for taken in range(n_steps):
            if budget_s is not None and taken and time.perf_counter() - start >= budget_s:
                return taken
            tokens = sample_batch.fn(self.config, self.batches)  # .fn: the kernel, without the argument checks
            loss, grads = loss_and_grads.fn(self.params, tokens, self.config)
            self._check_loss(loss)
            g = np.concatenate([grads[name].reshape(-1) for name in self.config.param_shapes])  # [P]
            flat, moments = adam_update(self.flat, g, self.moments, self.step + 1, self.config.lr)
            if not np.isfinite(flat).all():
                self._check_loss(math.nan)
            self.flat, self.params, self.moments = flat, unflatten(flat, self.config), moments
            self.step += 1
            self._record()
        return n_steps


@arguments(config=Maybe(CONFIG), steps=STEPS, seed=SEED, log_every=Whole(1, 10**9), checkpoint_every=STEPS)
def train(config: TrainConfig | None = None, steps: int = 600, seed: int = 0, log_every: int = 10,
          checkpoint_every: int = 0) -> dict:
    """{"params", "history", "checkpoints"} after steps Adam steps from init_params(config, seed)."""
    trainer = Trainer(config, seed, log_every, checkpoint_every)
    trainer.run(steps)
    return {"params": trainer.params, "history": trainer.history, "checkpoints": trainer.checkpoints}
