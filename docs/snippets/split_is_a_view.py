"""What the split and the merge do to memory, checked by NumPy (shown on the mechanism page; run by the tests)."""
# --8<-- [start:view]
import numpy as np

from mha_core import merge_heads, scaled_dot_product_attention, split_heads

B, n, d_model, h = 2, 10, 512, 8                   # d_k = 512 / 8 = 64
rng = np.random.default_rng(0)
x = rng.standard_normal((B, n, d_model))           # float64: 8 bytes an element
W_Q, W_K, W_V = rng.standard_normal((3, d_model, d_model)) / np.sqrt(d_model)

q = x @ W_Q                                        # [B, n, d_model] @ [d_model, d_model]
q_heads = split_heads(q, h)                        # [B, n, d_model] -> [B, h, n, d_k]
assert q_heads.shape == (2, 8, 10, 64)
assert np.shares_memory(q_heads, q)                # a view: the same buffer, nothing copied
assert q.strides == (40960, 4096, 8)               # bytes per step along B, n, d_model
assert q_heads.strides == (40960, 512, 4096, 8)    # along B, h, n, d_k: the same bytes, new steps
assert not q_heads.flags.c_contiguous              # contiguous would be (40960, 5120, 512, 8)
# --8<-- [end:view]

# --8<-- [start:blocks]
d_k = d_model // h
for i in range(h):
    W_Q_i = W_Q[:, i * d_k:(i + 1) * d_k]          # head i's own [d_model, d_k] matrix
    assert np.allclose(q_heads[:, i], x @ W_Q_i)   # equals head i's slice of the big projection
# --8<-- [end:blocks]

# --8<-- [start:merge]
k_heads, v_heads = split_heads(x @ W_K, h), split_heads(x @ W_V, h)
z, weights = scaled_dot_product_attention(q_heads, k_heads, v_heads, causal=True)
assert z.shape == (2, 8, 10, 64) and z.flags.c_contiguous   # a new array, heads outermost
merged = merge_heads(z)                            # [B, h, n, d_k] -> [B, n, d_model]
assert merged.shape == (2, 10, 512)
assert not np.shares_memory(merged, z)             # the merge had to copy
assert np.shares_memory(merge_heads(q_heads), q)   # merging the untouched split view copies nothing
# --8<-- [end:merge]
