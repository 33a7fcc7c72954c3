"""The real model's GGUF, fetched once (sitebuild.assets.fetch_model: pinned by sha256) and read once per session;
the references the tests compare with load from the same file."""
from __future__ import annotations

from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

from mha_core.llama.gguf import read_gguf
from mha_core.llama.tokenizer import tokenizer_from_gguf
from sitebuild.assets import fetch_model


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    """One BLAS thread (and one for PyTorch, where it is loaded): a few dozen tokens' matrices gain little from a
    second thread, and the threads of two libraries waiting on each other on two shared cores cost much more."""
    with threadpool_limits(1):
        yield


@pytest.fixture(scope="session")
def gguf_path() -> Path:
    return fetch_model()


@pytest.fixture(scope="session")
def gguf(gguf_path):
    return read_gguf(gguf_path)


@pytest.fixture(scope="session")
def tokenizer(gguf):
    return tokenizer_from_gguf(gguf)


@pytest.fixture(scope="session")
def transformers_model(gguf_path):
    """transformers' LlamaForCausalLM loaded from the same GGUF: eager attention (its weights can be read and an
    additive mask passed), float32."""
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)  # see one_thread
    model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                 attn_implementation="eager")
    return model.eval()
