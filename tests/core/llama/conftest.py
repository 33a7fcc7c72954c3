"""The real model's GGUF, fetched once (sitebuild.assets.fetch_model: pinned by sha256) and read once per session;
the references the tests compare with load from the same file."""
from __future__ import annotations

import fcntl
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
def transformers_model(gguf_path, run_folder):
    """transformers' LlamaForCausalLM loaded from the same GGUF: eager attention (its weights can be read and an
    additive mask passed), float32. Loaded from the GGUF once per test run (some 15 CPU-s: transformers parses the
    file's metadata twice and dequantizes every tensor): the first process to need it keeps its config and weights
    in run_folder, and the others (workers running other files) build the same model from them, bit for bit."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.set_num_threads(1)  # see one_thread
    kept, weights = run_folder / "transformers-model", "weights.pt"
    with open(run_folder / "transformers-model.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if kept.exists():
            model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(kept), attn_implementation="eager")
            model.load_state_dict(torch.load(kept / weights), strict=True)
            return model.eval()
        model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                     attn_implementation="eager")
        part = run_folder / "transformers-model.part"  # (transformers will not save a model it read from a GGUF)
        model.config.save_pretrained(part)
        torch.save(model.state_dict(), part / weights)
        part.rename(kept)
    return model.eval()
