"""GGUF, llama.cpp's file of a model, read with NumPy and the standard library alone: its metadata, its tensors'
names, shapes and places, and their blocks dequantized exactly (never re-quantized).

A GGUF file (versions 2 and 3, little-endian):

    "GGUF", version u32, n_tensors u64, n_metadata u64
    n_metadata × (key: string, value type u32, value)        a string is its length u64, then UTF-8 bytes
    n_tensors × (name: string, n_dims u32, dims u64 × n_dims, ggml type u32, offset u64)
    padding to general.alignment (32 unless said), then the tensors' data, each at its offset from there

dims go innermost first (ggml's ne[0]): a tensor with dims (576, 49152) is the NumPy array [49152, 576].
"""

from __future__ import annotations

import dataclasses
import os
import struct

import numpy as np

MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# Metadata value types: the scalars by their struct format; 8 is a string, 9 an array (item type u32, count u64).
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9

# ggml tensor types read here: (name, values per block, bytes per block).
F32, Q4_1, Q8_0 = 0, 3, 8
GGML_TYPES = {F32: ("F32", 1, 4), Q4_1: ("Q4_1", 32, 20), Q8_0: ("Q8_0", 32, 34)}


@dataclasses.dataclass(frozen=True)
class TensorInfo:
    """Where one tensor is: its NumPy shape (outermost first), ggml type and bytes in the data section."""
    name: str
    shape: tuple[int, ...]
    ggml_type: int
    offset: int  # from the start of the data section
    n_bytes: int


@dataclasses.dataclass(frozen=True)
class GGUFFile:
    """A read GGUF: metadata {key: value} (arrays as lists), tensors {name: TensorInfo}, data the raw bytes
    [n_bytes] uint8 the tensors' offsets count from."""
    version: int
    metadata: dict
    tensors: dict[str, TensorInfo]
    data: np.ndarray = dataclasses.field(repr=False)


class _Cursor:
    """Reads little-endian values one after another from a buffer; a short buffer is a ValueError."""

    def __init__(self, buffer: memoryview):
        self.buffer, self.pos = buffer, 0

    def unpack(self, fmt: str):
        try:
            (value,) = struct.unpack_from(fmt, self.buffer, self.pos)
        except struct.error:
            raise ValueError(f"data ends inside the GGUF header (at byte {self.pos})") from None
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.unpack("<Q")
        if self.pos + n > len(self.buffer):
            raise ValueError(f"data ends inside a string of the GGUF header (at byte {self.pos})")
        text = str(self.buffer[self.pos:self.pos + n], "utf-8", "surrogateescape")
        self.pos += n
        return text

    def value(self, value_type: int):
        if value_type in SCALARS:
            return self.unpack(SCALARS[value_type])
        if value_type == STRING:
            return self.string()
        if value_type == ARRAY:
            item_type, count = self.unpack("<I"), self.unpack("<Q")
            if item_type in SCALARS and item_type != 7:  # numbers in one go: the vocabulary's arrays are long
                dtype = np.dtype(SCALARS[item_type])
                end = self.pos + count * dtype.itemsize
                if end > len(self.buffer):
                    raise ValueError(f"data ends inside an array of the GGUF header (at byte {self.pos})")
                items = np.frombuffer(self.buffer[self.pos:end], dtype).tolist()
                self.pos = end
                return items
            return [self.value(item_type) for _ in range(count)]
        raise ValueError(f"data holds an unknown GGUF value type {value_type} at byte {self.pos}")


def _byte_array(name: str, data, expected: str = "bytes-like") -> np.ndarray:
    """data (bytes-like) as a flat uint8 array, not copied."""
    try:
        return np.frombuffer(data, dtype=np.uint8)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be {expected}, got {type(data).__name__}") from None


def read_gguf(data) -> GGUFFile:
    """A GGUF file's header read: data is its path, or its bytes (bytes, bytearray, memoryview, uint8 array).

    Reads the header only; tensor() dequantizes one tensor when asked, so a model can be unpacked layer by
    layer. The same function reads a whole model or a file holding a few of its tensors.
    """
    if isinstance(data, (str, os.PathLike)):
        raw = np.memmap(data, dtype=np.uint8, mode="r")  # mapped: only the pages read are loaded
    else:
        raw = _byte_array("data", data, "a path or bytes-like")
    cursor = _Cursor(memoryview(raw))
    if bytes(raw[:4]) != MAGIC:
        raise ValueError(f"data is not a GGUF file: it starts with {bytes(raw[:4])!r}, not {MAGIC!r}")
    cursor.pos = 4
    version = cursor.unpack("<I")
    if version not in (2, 3):
        raise ValueError(f"data is GGUF version {version}; versions 2 and 3 are read")
    n_tensors, n_metadata = cursor.unpack("<Q"), cursor.unpack("<Q")
    metadata = {}
    for _ in range(n_metadata):
        key = cursor.string()
        metadata[key] = cursor.value(cursor.unpack("<I"))
    infos = [_tensor_info(cursor) for _ in range(n_tensors)]
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    start = -(-cursor.pos // alignment) * alignment
    body = raw[start:]
    tensors = {}
    for name, shape, ggml_type, offset in infos:
        info = TensorInfo(name, shape, ggml_type, offset, _n_bytes(name, shape, ggml_type))
        if offset + info.n_bytes > len(body):
            raise ValueError(f"data ends inside tensor {name!r} (needs {start + offset + info.n_bytes} bytes, "
                             f"has {len(raw)})")
        tensors[name] = info
    return GGUFFile(version, metadata, tensors, body)


def _tensor_info(cursor: _Cursor) -> tuple[str, tuple[int, ...], int, int]:
    name = cursor.string()
    dims = [cursor.unpack("<Q") for _ in range(cursor.unpack("<I"))]
    ggml_type, offset = cursor.unpack("<I"), cursor.unpack("<Q")
    return name, tuple(reversed(dims)), ggml_type, offset  # ggml's innermost-first -> NumPy's outermost-first


def _n_bytes(name: str, shape: tuple[int, ...], ggml_type: int) -> int:
    if ggml_type not in GGML_TYPES:
        known = ", ".join(f"{kind} ({number})" for number, (kind, _, _) in GGML_TYPES.items())
        raise ValueError(f"tensor {name!r} has ggml type {ggml_type}; the types read are {known}")
    _, per_block, block_bytes = GGML_TYPES[ggml_type]
    size = int(np.prod(shape, dtype=np.int64))
    if shape and shape[-1] % per_block:
        raise ValueError(f"tensor {name!r}: its rows of {shape[-1]} values are not whole blocks of {per_block}")
    return size // per_block * block_bytes


def _halves(blocks: np.ndarray, at: int) -> np.ndarray:
    """[n_blocks, block_bytes] uint8 -> [n_blocks, 1] float32: the float16 at byte `at` of each block."""
    return np.ascontiguousarray(blocks[:, at:at + 2]).view("<f2").astype(np.float32)


def dequantize(raw, ggml_type: int, shape) -> np.ndarray:
    """A tensor's bytes -> its values, float32 of shape shape, exactly as ggml defines them.

    F32: the values as stored. Q8_0: blocks of 32 values, a float16 scale d then 32 int8 q: x = d·q.
    Q4_1: blocks of 32 values, a float16 scale d and minimum m, then 16 bytes holding values 0..15 in their
    low nibbles and 16..31 in their high: x = d·q + m. d·q is exact in float32 (11 + 8 bits at most), so
    each value is rounded once, by the addition of m, as ggml and gguf-py round it.
    """
    if ggml_type not in GGML_TYPES:
        raise ValueError(f"ggml_type must be one of {sorted(GGML_TYPES)} (F32, Q4_1, Q8_0), got {ggml_type!r}")
    try:
        shape = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise ValueError(f"shape must be a tuple of sizes, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ValueError(f"shape must hold sizes >= 0, got {shape}")
    raw = raw.reshape(-1) if isinstance(raw, np.ndarray) else _byte_array("raw", raw)
    expected = _n_bytes("raw", shape, ggml_type)
    if raw.dtype != np.uint8 or raw.size != expected:
        raise ValueError(f"raw must be {expected} bytes for a {GGML_TYPES[ggml_type][0]} tensor {shape}, "
                         f"got {raw.size} of dtype {raw.dtype}")
    return _DEQUANTIZE[ggml_type](raw).reshape(shape)


def _f32(raw: np.ndarray) -> np.ndarray:
    return raw.view("<f4").astype(np.float32)  # a copy, writable even when raw is a read-only map


def _q8_0(raw: np.ndarray) -> np.ndarray:
    blocks = raw.reshape(-1, 34)  # [n_blocks, 2 + 32]
    x = blocks[:, 2:].view(np.int8).astype(np.float32)  # [n_blocks, 32]
    x *= _halves(blocks, 0)  # d·q
    return x


def _q4_1(raw: np.ndarray) -> np.ndarray:
    blocks = raw.reshape(-1, 20)  # [n_blocks, 2 + 2 + 16]
    nibbles = blocks[:, 4:]  # [n_blocks, 16]
    x = np.empty((len(blocks), 32), np.float32)  # [n_blocks, 32]
    x[:, :16] = nibbles & 0x0F
    x[:, 16:] = nibbles >> 4
    x *= _halves(blocks, 0)  # d·q, exact
    x += _halves(blocks, 2)  # + m, rounded once
    return x


_DEQUANTIZE = {F32: _f32, Q4_1: _q4_1, Q8_0: _q8_0}


def _info(gguf: GGUFFile, name: str) -> TensorInfo:
    if not isinstance(gguf, GGUFFile):
        raise ValueError(f"gguf must be a GGUFFile (read_gguf's result), got {type(gguf).__name__}")
    if name not in gguf.tensors:
        raise ValueError(f"name {name!r} is not a tensor of this file")
    return gguf.tensors[name]


def tensor(gguf: GGUFFile, name: str) -> np.ndarray:
    """The tensor called name in gguf, dequantized to float32 in its NumPy shape."""
    info = _info(gguf, name)
    return _DEQUANTIZE[info.ggml_type](gguf.data[info.offset:info.offset + info.n_bytes]).reshape(info.shape)


def tensor_rows(gguf: GGUFFile, name: str, rows) -> np.ndarray:
    """Rows of the 2-D tensor called name, [len(rows), shape[1]] float32, only those dequantized: each row is
    whole blocks (an embedding's row of 576 values in Q8_0 is 18 blocks, 612 bytes)."""
    info = _info(gguf, name)
    if len(info.shape) != 2:
        raise ValueError(f"name {name!r} is a tensor of shape {info.shape}, not a matrix")
    rows = np.asarray(rows)
    in_range = rows.size == 0 or 0 <= rows.min() <= rows.max() < info.shape[0]
    if rows.ndim != 1 or rows.dtype.kind not in "iu" or not in_range:
        raise ValueError(f"rows must be a sequence of row indices in [0, {info.shape[0]}), got {rows!r:.80}")
    stored = gguf.data[info.offset:info.offset + info.n_bytes].reshape(info.shape[0], -1)  # [rows, row_bytes]
    return _DEQUANTIZE[info.ggml_type](stored[rows].reshape(-1)).reshape(len(rows), info.shape[1])


# ---------------------------------------------------------------- writing (at build time: a model cut into files)

def _value_type(values: list) -> int | None:
    """The one GGUF type all of values are written with, read back as themselves (None: there is none)."""
    kinds = {type(v) for v in values}
    if kinds == {str}:
        return STRING
    if kinds == {bool}:
        return 7
    if kinds == {int}:
        low, high = min(values), max(values)
        return next((t for t, fits in ((4, low >= 0 and high < 2**32), (5, low >= -2**31 and high < 2**31),
                                       (10, low >= 0 and high < 2**64), (11, low >= -2**63 and high < 2**63)) if fits),
                    None)
    if kinds == {float}:
        return 6 if all(float(np.float32(v)) == v or v != v for v in values) else 12
    return None


def _pack_string(text: str) -> bytes:
    data = text.encode("utf-8", "surrogateescape")
    return struct.pack("<Q", len(data)) + data


def _pack_value(key: str, value) -> bytes:
    """A metadata value's type, then its bytes; a list's items all take one type."""
    items = value if isinstance(value, list) else [value]
    value_type = _value_type(items) if items else STRING
    if value_type is None:
        raise ValueError(f"metadata[{key!r}] holds {sorted({type(v).__name__ for v in items})}, which GGUF cannot "
                         "write as one value or one array")
    if value_type == STRING:
        data = b"".join(map(_pack_string, items))
    else:
        data = np.asarray(items, np.dtype(SCALARS[value_type])).tobytes()
    if isinstance(value, list):
        return struct.pack("<IIQ", ARRAY, value_type, len(value)) + data
    return struct.pack("<I", value_type) + data


def gguf_bytes(metadata: dict, tensors: dict) -> bytes:
    """A GGUF file (version 3) holding metadata {key: value} and tensors {name: (ggml_type, shape, raw bytes)},
    the raw blocks copied as they are: read_gguf reads back the same values and the same bytes."""
    if not isinstance(metadata, dict) or not all(isinstance(k, str) for k in metadata):
        raise ValueError("metadata must be a dict with str keys")
    if not isinstance(tensors, dict):
        raise ValueError("tensors must be a dict {name: (ggml_type, shape, raw bytes)}")
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    header = [MAGIC, struct.pack("<IQQ", 3, len(tensors), len(metadata))]
    header += [_pack_string(key) + _pack_value(key, value) for key, value in metadata.items()]
    body, offset = [], 0
    for name, (ggml_type, shape, raw) in tensors.items():
        raw = bytes(raw)
        if len(raw) != _n_bytes(name, tuple(shape), ggml_type):
            raise ValueError(f"tensors[{name!r}] holds {len(raw)} bytes, not those of a "
                             f"{GGML_TYPES[ggml_type][0]} tensor {tuple(shape)}")
        dims = tuple(reversed(shape))  # NumPy's outermost-first -> ggml's innermost-first
        header.append(_pack_string(name) + struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims, ggml_type, offset))
        padding = -len(raw) % alignment
        body += [raw, bytes(padding)]
        offset += len(raw) + padding
    head = b"".join(header)
    return head + bytes(-len(head) % alignment) + b"".join(body)


def raw_tensor(gguf: GGUFFile, name: str) -> tuple[int, tuple[int, ...], np.ndarray]:
    """(ggml_type, shape, raw bytes) of the tensor called name, as stored: what gguf_bytes takes."""
    info = _info(gguf, name)
    return info.ggml_type, info.shape, gguf.data[info.offset:info.offset + info.n_bytes]
