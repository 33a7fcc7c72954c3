"""mha_core.llama's exports: the example its docstring gives, run on the real model."""
from __future__ import annotations

import numpy as np

import mha_core.llama as llama
from sitebuild.assets import fetch_model


def test_the_exports_are_the_modules_functions():
    from mha_core.llama import gguf, lab, model, scores, tokenizer

    for name in llama.__all__:
        assert any(getattr(module, name, None) is getattr(llama, name) for module in (gguf, model, scores, tokenizer,
                                                                                       lab))


def test_the_docstring_s_example_runs_on_the_real_model():
    model = llama.read_gguf(fetch_model())
    ids = llama.tokenizer_from_gguf(model).encode("red green blue yellow purple orange " * 2)
    logits, patterns = llama.forward(model, ids)
    assert logits.shape == (len(ids), 49152) and patterns.shape == (30, 9, len(ids), len(ids))
    induction = llama.head_scores(patterns, ids)["induction"]
    assert induction.shape == (30, 9) and induction[18, 6] > 0.7  # L18 H6 copies what followed before
