"""circuits.py: each circuit against its definition written afresh in torch (per head, one product at a time;
K-composition by TransformerLens's factored route, each side's SVD collapsed), on random weights and on the last
checkpoint of the run the page ships; the random baseline against ARENA's; then what that run shows: its
induction heads copy, its previous-token head's positional stripe, K-composition above chance, and the loss at
each position of one sequence."""

import json
import math

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from mha_core import circuits
from mha_page import bridge
from mha_page.views.training import decode_params, display_tokens, recorded_run
from mha_core.model import TrainConfig, init_params
from tests.core.test_model import torch_logits
from widgets.training.run import SEED

SMALL = TrainConfig(vocab=8, d_model=8, n_layers=3, n_heads=2, d_head=4, seq_len=10, batch=3,
                    min_period=2, max_period=4)


@pytest.fixture(params=["random 0", "random 1", "shipped"])
def weights(request):
    """(weights as float64 numpy, as torch tensors, their config): random ones, larger than at the start of
    training, or the last checkpoint of the run the page ships."""
    if request.param == "shipped":
        run, _ = request.getfixturevalue("shipped")
        config = TrainConfig(**run["config"])
        params = decode_params(run["checkpoints"][-1]["params"], config)
    else:
        config = SMALL
        params = {k: 3 * v for k, v in init_params(SMALL, int(request.param[-1])).items()}
    return params, {k: torch.tensor(v) for k, v in params.items()}, config


def attn(t: dict, layer: int, w: str, head: int) -> torch.Tensor:
    return t[f"blocks.{layer}.attn.{w}"][head]


# ---------------------------------------------------------------- each circuit against its definition

def test_full_ov_circuits_are_embed_value_output_unembed(weights):
    params, t, config = weights
    for layer in range(config.n_layers):
        got = circuits.full_ov_circuits(params, config, layer)
        assert got.shape == (config.n_heads, config.vocab, config.vocab)
        for head in range(config.n_heads):
            want = t["W_E"] @ attn(t, layer, "W_V", head) @ attn(t, layer, "W_O", head) @ t["W_U"]
            np.testing.assert_allclose(got[head], want.numpy(), rtol=1e-12, atol=1e-12)


def test_copying_counts_the_rows_whose_largest_entry_is_on_the_diagonal(weights):
    params, _, config = weights
    full_ov = circuits.full_ov_circuits(params, config, 1)  # [h, V, V]
    for head, matrix in enumerate(full_ov):
        rows = matrix.tolist()
        want = sum(max(range(len(row)), key=row.__getitem__) == t for t, row in enumerate(rows)) / len(rows)
        assert circuits.copying_scores(full_ov)[head] == want
    eye, shifted = np.eye(5) + 0.1, np.roll(np.eye(5), 1, axis=1)
    assert circuits.copying_scores(eye) == 1.0 and circuits.copying_scores(shifted) == 0.0
    shifted[0, 0] = 2.0  # token 0 now copies; the others do not
    assert circuits.copying_scores(shifted) == pytest.approx(1 / 5)
    rows_copy = np.array([[2.0, 1.5], [0.0, 1.0]])  # each row's largest on the diagonal; column 1's is not
    assert circuits.copying_scores(rows_copy) == 1.0 and circuits.copying_scores(rows_copy.T) == 0.5


def test_positional_qk_circuits_are_positions_through_query_and_key(weights):
    params, t, config = weights
    for layer in range(config.n_layers):
        got = circuits.positional_qk_circuits(params, config, layer)
        for head in range(config.n_heads):
            q, k = t["W_pos"] @ attn(t, layer, "W_Q", head), t["W_pos"] @ attn(t, layer, "W_K", head)  # [n, d_k]
            np.testing.assert_allclose(got[head], (q @ k.T).numpy(), rtol=1e-12, atol=1e-12)


def factored_svd(A: torch.Tensor, B: torch.Tensor):
    """(U, S, Vh) of A @ B from the factors, as TransformerLens's FactoredMatrix.svd finds it."""
    Ua, Sa, Vha = torch.linalg.svd(A, full_matrices=False)
    Ub, Sb, Vhb = torch.linalg.svd(B, full_matrices=False)
    Um, Sm, Vhm = torch.linalg.svd(Sa[:, None] * (Vha @ Ub) * Sb[None, :], full_matrices=False)
    return Ua @ Um, Sm, Vhm @ Vhb


def transformer_lens_composition(left: tuple, right: tuple) -> float:
    """utils.composition_scores: the left product collapsed on its left (S Vh), the right on its right (U S)."""
    _, S, Vh = factored_svd(*left)
    U, S_r, _ = factored_svd(*right)
    collapsed_l, collapsed_r = S[:, None] * Vh, U * S_r[None, :]  # [m, d_model], [d_model, m]
    return ((collapsed_l @ collapsed_r).norm() / collapsed_l.norm() / collapsed_r.norm()).item()


def test_k_composition_is_transformer_lens_score_of_ov_into_qk_transposed(weights):
    params, t, config = weights
    got = circuits.k_composition(params, config)
    L, h = config.n_layers, config.n_heads
    assert got.shape == (L, h, L, h)
    for l, a, m, b in np.ndindex(got.shape):
        if l >= m:  # a head reads only what earlier layers wrote: TransformerLens masks these to 0
            assert got[l, a, m, b] == 0
            continue
        ov = (attn(t, l, "W_V", a), attn(t, l, "W_O", a))  # OV = W_V W_O
        qk_T = (attn(t, m, "W_K", b), attn(t, m, "W_Q", b).T)  # QK.T = W_K W_Qᵀ
        assert got[l, a, m, b] == pytest.approx(transformer_lens_composition(ov, qk_T), rel=1e-9)
        assert 0 < got[l, a, m, b] < 1


def test_the_random_baseline_is_seeded_and_agrees_with_arenas():
    config = TrainConfig()
    scores = circuits.random_k_composition(config)
    assert scores.shape == (circuits.BASELINE_SAMPLES,) and ((0 < scores) & (scores < 1)).all()
    np.testing.assert_array_equal(scores, circuits.random_k_composition(config))
    assert not np.array_equal(scores, circuits.random_k_composition(config, seed=1))
    # ARENA's: four [d_model, d_head] factors with uniform entries (kaiming_uniform_, whose scale the score ignores),
    # W_A = A_l A_rᵀ, W_B = B_l B_rᵀ, the score of W_A W_B; 2,000 of them
    uniform = torch.rand(4, 2000, config.d_model, config.d_head, generator=torch.Generator().manual_seed(0))
    A_l, A_r, B_l, B_r = 2 * uniform - 1  # on [-1, 1), centred as kaiming_uniform_'s
    W_A, W_B = A_l @ A_r.mT, B_l @ B_r.mT  # [2000, d_model, d_model] each
    arena = torch.linalg.matrix_norm(W_A @ W_B) / torch.linalg.matrix_norm(W_A) / torch.linalg.matrix_norm(W_B)
    assert scores.mean() == pytest.approx(arena.mean().item(), abs=0.005)  # the means' standard errors: under 0.001


def test_position_losses_are_each_predictions_cross_entropy(weights):
    params, t, config = weights
    tokens = np.array([3, 1, 4, 1, 5, 2, 6, 5, 3])
    logits = torch_logits(t, tokens[None], config)[0]  # [n, V]
    want = torch.nn.functional.cross_entropy(logits[:-1], torch.as_tensor(tokens[1:]), reduction="none")
    np.testing.assert_allclose(circuits.position_losses(params, tokens, config), want.numpy(), rtol=1e-12)


def test_logit_attribution_splits_the_logit_into_the_direct_path_and_each_head(weights):
    """The parts sum to torch's logit; the direct path is the embeddings through W_U; a last-layer head's term is
    what removing it takes from the logit (nothing reads it after), computed in torch with that head's W_O zeroed."""
    params, t, config = weights
    tokens = np.array([3, 1, 4, 1, 5, 2, 6, 5, 3])
    last = config.n_layers - 1
    for position in (0, 4, len(tokens) - 2):
        a = circuits.logit_attribution(params, tokens, config, position)
        target = int(tokens[position + 1])
        logit = torch_logits(t, tokens[None], config)[0, position, target].item()
        assert a["target"] == target and a["logit"] == pytest.approx(logit, rel=1e-12, abs=1e-12)
        assert a["direct"] + a["heads"].sum() == pytest.approx(logit, rel=1e-12, abs=1e-12)
        direct = (t["W_E"][tokens[position]] + t["W_pos"][position]) @ t["W_U"][:, target]
        assert a["direct"] == pytest.approx(direct.item(), rel=1e-12, abs=1e-12)
        assert a["heads"].shape == (config.n_layers, config.n_heads)
        for head in range(config.n_heads):
            W_O = t[f"blocks.{last}.attn.W_O"].clone()
            W_O[head] = 0
            without = torch_logits({**t, f"blocks.{last}.attn.W_O": W_O}, tokens[None], config)[0, position, target]
            assert a["heads"][last, head] == pytest.approx(logit - without.item(), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("call, message", [
    (lambda p: circuits.full_ov_circuits(p, SMALL, 3), "layer must be a whole number from 0 to 2"),
    (lambda p: circuits.positional_qk_circuits(p, SMALL, -1), "layer must be"),
    (lambda p: circuits.k_composition({**p, "W_U": p["W_U"][:2]}, SMALL), r"params\['W_U'\] has shape \(2, 8\)"),
    (lambda p: circuits.k_composition({k: v for k, v in p.items() if k != "W_E"}, SMALL), "params has no 'W_E'"),
    (lambda p: circuits.position_losses(p, [1], SMALL), "tokens must be a sequence of 2 to 10 whole numbers from 0"),
    (lambda p: circuits.position_losses(p, [1, 8], SMALL), "tokens must be"),
    (lambda p: circuits.over_training([{"step": 0, "params": p}], SMALL, [1, 2], [[1, 2.5]]), "eval_tokens must be"),
    (lambda p: circuits.over_training([{"params": p}], SMALL, [1, 2], [[1, 2]]), "checkpoints must be a list of"),
    (lambda p: circuits.copying_scores(np.ones((2, 3))), r"full_ov must be \[..., V, V\]"),
    (lambda p: circuits.logit_attribution(p, [1, 2, 3], SMALL, 2), "position must be a whole number from 0 to 1"),
    (lambda p: circuits.logit_attribution(p, [1, 2, 3], SMALL, True), "position must be"),
    (lambda p: circuits.logit_attribution(p, [1, 9], SMALL, 0), "tokens must be"),
    (lambda p: circuits.random_k_composition(SMALL, samples=0), "samples must be a whole number of at least 1"),
])
def test_nonsense_is_refused_naming_the_argument(call, message):
    with pytest.raises(ValueError, match=message):
        call(init_params(SMALL, 0))


# ---------------------------------------------------------------- the shipped run

@pytest.fixture(scope="module")
def shipped():
    """The run the page ships, as the browser reads it, and circuits_over_training's answer on its checkpoints."""
    with threadpool_limits(1):  # matrices this small train fastest on one thread
        run = recorded_run(TrainConfig(), SEED)
    args = {"config": run["config"], "seed": run["seed"], "steps": [c["step"] for c in run["checkpoints"]],
            "params": [c["params"] for c in run["checkpoints"]]}
    answer = json.loads(bridge.call("circuits_over_training", json.dumps(args)))
    assert answer["ok"], answer
    return run, answer["result"]


def heads_named(run: dict, layer: int, role: str) -> list[int]:
    """The heads of layer the detectors name role at the last checkpoint."""
    return [head for head, r in enumerate(run["checkpoints"][-1]["roles"][layer]) if r == role]


def test_over_training_is_each_checkpoints_circuits_and_loss(shipped):
    run, result = shipped
    config = TrainConfig(**run["config"])
    assert [c["step"] for c in result["checkpoints"]] == [c["step"] for c in run["checkpoints"]]
    assert result["tokens"] == display_tokens(config)
    for checkpoint, entry in zip(run["checkpoints"][::10], result["checkpoints"][::10]):
        args = {"config": run["config"], "params": checkpoint["params"]}
        at = json.loads(bridge.call("circuits_at", json.dumps(args)))
        assert at["ok"], at
        assert at["result"]["k_composition"] == entry["k_composition"] and at["result"]["copying"] == entry["copying"]
        assert at["result"]["position_losses"] == entry["position_losses"]
        recorded = next(h for h in run["history"] if h["step"] == checkpoint["step"])  # float32 weights, not float16
        assert entry["loss_repeat"] == pytest.approx(recorded["loss_repeat"], abs=5e-3)
    assert at["result"]["k_baseline"] == result["k_baseline"]
    weights = decode_params(run["checkpoints"][-1]["params"], config)
    np.testing.assert_allclose(at["result"]["full_ov"], circuits.circuits(weights, config)["full_ov"])


def test_the_induction_heads_copy_at_the_end_and_did_not_at_the_start(shipped):
    run, result = shipped
    induction = heads_named(run, 1, "induction")
    assert induction
    for head in induction:
        assert result["checkpoints"][-1]["copying"][1][head] >= 0.9
        assert result["checkpoints"][0]["copying"][1][head] <= 0.2


def test_the_previous_token_heads_positional_qk_circuit_is_a_stripe_below_the_diagonal(shipped):
    run, _ = shipped
    config = TrainConfig(**run["config"])
    (prev,) = heads_named(run, 0, "previous_token")
    qk = circuits.positional_qk_circuits(decode_params(run["checkpoints"][-1]["params"], config), config, 0)[prev]
    n = config.seq_len
    scores = np.where(np.tri(n, dtype=bool), qk / math.sqrt(config.d_head), -np.inf)  # the keys a query may see
    pattern = np.exp(scores - scores.max(-1, keepdims=True))
    pattern /= pattern.sum(-1, keepdims=True)  # [n_q, n_k]: the attention positions alone would give
    by_offset = [np.diagonal(pattern, -k)[k == 0:].mean() for k in range(n - 1)]  # query i on key i − k, i ≥ 1
    assert max(range(n - 1), key=by_offset.__getitem__) == 1
    assert np.mean(scores[1:].argmax(-1) == np.arange(n - 1)) > 0.5  # most queries' best key is the one before


def test_the_previous_token_head_k_composes_into_the_induction_heads_above_chance(shipped):
    run, result = shipped
    (prev,) = heads_named(run, 0, "previous_token")
    baseline = result["k_baseline"]
    last = result["checkpoints"][-1]["k_composition"]
    for head in heads_named(run, 1, "induction"):
        assert last[0][prev][1][head] > baseline["mean"] + 3 * baseline["std"]
        assert all(last[0][prev][1][head] > last[0][other][1][head] for other in range(len(last[0])) if other != prev)


def test_the_loss_at_each_position_drops_on_the_repeat_at_the_phase_change(shipped):
    run, result = shipped
    config = TrainConfig(**run["config"])
    tokens = result["tokens"]
    period = tokens[1:].index(tokens[0]) + 1
    first, second = slice(0, period - 1), slice(period, 2 * period - 1)  # predicting copy 1; copy 2 but its first
    uniform = math.log(config.vocab)
    start, end = (np.array(result["checkpoints"][i]["position_losses"]) for i in (0, -1))
    assert abs(start.mean() - uniform) < 0.3
    assert end[first].mean() > uniform - 1 and end[second].mean() < 0.5
    assert end[period - 1] > 1  # the second copy's first token: nothing marks where a block ends
    learnt = next(c["step"] for c in result["checkpoints"] if np.mean(c["position_losses"][second]) < 1)
    phase_change = next(h["step"] for h in run["history"] if h["loss_repeat"] < 1)
    assert abs(learnt - phase_change) <= run["checkpoint_every"]
