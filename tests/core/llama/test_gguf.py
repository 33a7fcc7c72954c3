"""gguf.py against PyPI gguf (llama.cpp's own Python reader, writer and quantizer): the real model's metadata,
tensor infos and every tensor bit for bit; a small file written by gguf's writer; blocks decoded by hand."""
from __future__ import annotations

import struct

import gguf as reference
import numpy as np
import pytest
from gguf.quants import dequantize as reference_dequantize
from gguf.quants import quantize

from mha_core.llama.gguf import (F32, GGML_TYPES, Q4_1, Q8_0, GGUFFile, dequantize, gguf_bytes, raw_tensor, read_gguf,
                                 tensor, tensor_rows)


@pytest.fixture(scope="module")
def reader(gguf_path):
    return reference.GGUFReader(gguf_path)


def test_the_metadata_is_gguf_s(gguf, reader):
    fields = {k: f.contents() for k, f in reader.fields.items() if not k.startswith("GGUF.")}
    assert gguf.metadata == fields
    assert gguf.version == reader.fields["GGUF.version"].contents() == 3
    assert gguf.metadata["tokenizer.ggml.add_bos_token"] is False
    assert gguf.metadata["general.license"] == "apache-2.0"


def test_the_tensor_infos_are_gguf_s(gguf, reader):
    assert list(gguf.tensors) == [t.name for t in reader.tensors]
    for t in reader.tensors:
        info = gguf.tensors[t.name]
        assert info.shape == tuple(reversed(t.shape.tolist())), t.name  # gguf lists dims innermost first
        assert (info.ggml_type, info.n_bytes) == (int(t.tensor_type), t.n_bytes), t.name
        stored = gguf.data[info.offset:info.offset + info.n_bytes]
        assert np.array_equal(stored, t.data.reshape(-1).view(np.uint8)), t.name
    kinds = {}
    for info in gguf.tensors.values():
        kinds[info.ggml_type] = kinds.get(info.ggml_type, 0) + 1
    assert kinds == {Q8_0: 1, Q4_1: 210, F32: 61}


def test_every_tensor_dequantizes_bit_for_bit_as_gguf_does(gguf, reader):
    for t in reader.tensors:
        expected = reference_dequantize(t.data, t.tensor_type)
        ours = tensor(gguf, t.name)
        assert ours.dtype == np.float32 and ours.shape == expected.shape, t.name
        assert np.array_equal(ours.view(np.uint32), expected.astype(np.float32).view(np.uint32)), t.name


def test_rows_are_the_rows_of_the_whole_tensor(gguf):
    rows = np.array([49151, 0, 17, 17, 1000])
    whole = tensor(gguf, "token_embd.weight")  # [49152, 576]
    np.testing.assert_array_equal(tensor_rows(gguf, "token_embd.weight", rows), whole[rows])
    ffn = tensor(gguf, "blk.3.ffn_down.weight")  # Q4_1 [576, 1536]
    np.testing.assert_array_equal(tensor_rows(gguf, "blk.3.ffn_down.weight", [575, 2]), ffn[[575, 2]])


def test_blocks_decoded_by_hand():
    """One block of each type, its bytes written here and its values from ggml's definitions."""
    q = np.arange(32)  # Q4_1: value v holds nibble v % 16, in byte v % 16, low for v < 16 and high after
    nibbles = bytes(int(q[i]) % 16 | (int(q[i + 16]) % 16) << 4 for i in range(16))
    q4_1 = struct.pack("<ee", 0.5, -3.0) + nibbles
    np.testing.assert_array_equal(dequantize(q4_1, Q4_1, (32,)), 0.5 * (q % 16) - 3.0)
    ints = np.arange(-16, 16, dtype=np.int8)
    q8_0 = struct.pack("<e", 0.25) + ints.tobytes()
    np.testing.assert_array_equal(dequantize(q8_0, Q8_0, (1, 32)), 0.25 * ints[None].astype(np.float32))
    values = np.array([1.5, -2.0, np.pi], np.float32)
    assert np.array_equal(dequantize(values.tobytes(), F32, (3,)), values)


def write_small_file(path):
    """A file gguf's writer makes: metadata of several types, an F32, a Q8_0 and a Q4_1 tensor."""
    writer = reference.GGUFWriter(path, "llama")
    writer.add_uint32("small.count", 7)
    writer.add_float32("small.eps", 1e-5)
    writer.add_bool("small.flag", True)
    writer.add_string("small.name", "naïve 🙂")
    writer.add_array("small.list", ["a", "bb", ""])
    writer.add_array("small.numbers", [3, 1, 4])
    rng = np.random.default_rng(0)
    weights = {"f32": rng.standard_normal((3, 5)).astype(np.float32),
               "q8_0": rng.standard_normal((4, 64)).astype(np.float32),
               "q4_1": rng.standard_normal((2, 96)).astype(np.float32)}
    kinds = {"f32": reference.GGMLQuantizationType.F32, "q8_0": reference.GGMLQuantizationType.Q8_0,
             "q4_1": reference.GGMLQuantizationType.Q4_1}
    stored = {}
    for name, w in weights.items():
        stored[name] = w if name == "f32" else quantize(w, kinds[name])
        writer.add_tensor(name, stored[name], raw_dtype=kinds[name])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {name: reference_dequantize(stored[name], kinds[name]) for name in weights}


def test_a_file_written_by_gguf_reads_back_from_its_bytes(tmp_path):
    path = tmp_path / "small.gguf"
    expected = write_small_file(path)
    small = read_gguf(path.read_bytes())
    assert {k: v for k, v in small.metadata.items() if k.startswith("small.")} == {
        "small.count": 7, "small.eps": np.float32(1e-5).item(), "small.flag": True, "small.name": "naïve 🙂",
        "small.list": ["a", "bb", ""], "small.numbers": [3, 1, 4]}
    assert small.metadata["general.architecture"] == "llama"
    for name, values in expected.items():
        assert small.tensors[name].shape == values.shape
        np.testing.assert_array_equal(tensor(small, name), values)
    assert read_gguf(bytearray(path.read_bytes())).tensors == small.tensors  # any bytes-like, or the path
    assert read_gguf(str(path)).tensors == small.tensors


def test_nonsense_is_refused_with_the_argument_named(tmp_path):
    path = tmp_path / "small.gguf"
    write_small_file(path)
    data = path.read_bytes()
    for bad, said in [(b"GGML" + data[4:], "not a GGUF file"), (data[:40], "data ends inside"),
                      (data[:-100], "data ends inside tensor 'q4_1'"),
                      (data[:4] + struct.pack("<I", 9) + data[8:], "version 9"),
                      (12, "data must be a path or bytes-like")]:
        with pytest.raises(ValueError, match=said):
            read_gguf(bad)
    small = read_gguf(data)
    for call, said in [(lambda: tensor(small, "nope"), "name 'nope'"), (lambda: tensor({}, "f32"), "gguf must be"),
                       (lambda: tensor_rows(small, "f32", [3]), r"rows must .* \[0, 3\)"),
                       (lambda: tensor_rows(small, "f32", [0.5]), "rows must"),
                       (lambda: dequantize(b"\0" * 20, 2, (32,)), "ggml_type must be"),
                       (lambda: dequantize(b"\0" * 19, Q4_1, (32,)), "raw must be 20 bytes"),
                       (lambda: dequantize(b"\0" * 20, Q4_1, (16,)), "not whole blocks"),
                       (lambda: dequantize(b"\0" * 20, Q4_1, "x"), "shape must"),
                       (lambda: dequantize([1, 2], F32, (2,)), "raw must be bytes-like")]:
        with pytest.raises(ValueError, match=said):
            call()
    assert set(GGML_TYPES) == {F32, Q4_1, Q8_0}
    assert isinstance(small, GGUFFile)


def test_a_file_written_here_reads_back_here_and_in_gguf(gguf, tmp_path):
    """The model's whole metadata and one block's tensors, copied: the same values and bytes read back here; gguf
    reads the same values from a copy whose arrays are cut to their first 1,000 entries (its reader makes NumPy
    arrays of each of the model's 98,000 strings: some 5 CPU-s for a whole copy, which holds no other kind of
    value)."""
    names = [name for name in gguf.tensors if name.startswith("blk.7.")] + ["output_norm.weight"]
    tensors = {name: raw_tensor(gguf, name) for name in names}
    extra = {"test.negative": -5, "test.big": 2**40, "test.float64": 0.1, "test.floats": [0.5, 2.0], "test.empty": []}
    copy = read_gguf(gguf_bytes(gguf.metadata | extra, tensors))
    assert copy.metadata == gguf.metadata | extra
    assert list(copy.tensors) == names
    for name in names:
        assert copy.tensors[name].shape == gguf.tensors[name].shape
        assert np.array_equal(raw_tensor(copy, name)[2], raw_tensor(gguf, name)[2]), name
    cut = {key: value[:1000] if isinstance(value, list) else value for key, value in copy.metadata.items()}
    assert {len(value) for value in cut.values() if isinstance(value, list)} == {0, 1, 2, 1000}
    path = tmp_path / "copy.gguf"
    path.write_bytes(gguf_bytes(cut, tensors))
    cut_copy = read_gguf(path.read_bytes())
    assert cut_copy.metadata == cut
    theirs = reference.GGUFReader(path)
    assert {k: f.contents() for k, f in theirs.fields.items() if not k.startswith("GGUF.")} == cut_copy.metadata
    for t in theirs.tensors:
        np.testing.assert_array_equal(reference_dequantize(t.data, t.tensor_type), tensor(cut_copy, t.name))


def test_what_gguf_cannot_hold_is_refused():
    for metadata, said in [({"a": {"b": 1}}, r"metadata\['a'\] holds \['dict'\]"), ({"a": [1, "x"]}, "metadata"),
                           ({"a": 2**64}, "metadata"), ({1: 2}, "metadata must be a dict with str keys")]:
        with pytest.raises(ValueError, match=said):
            gguf_bytes(metadata, {})
    with pytest.raises(ValueError, match=r"tensors\['w'\] holds 3 bytes"):
        gguf_bytes({}, {"w": (F32, (2,), b"abc")})
