"""A minimal safetensors writer and reader (Debian packages no safetensors for Python).

File layout: an 8-byte little-endian header length N, N bytes of JSON mapping each tensor
name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data that
follows, which here are laid out in name order with no gaps) plus
"__metadata__": {"format": "pt"}, then the raw little-endian tensor bytes.
"""

import json
import struct

import numpy as np

_DTYPES = {np.dtype(np.float16): "F16", np.dtype(np.float32): "F32"}
_NUMPY = {name: dtype for dtype, name in _DTYPES.items()}


def save(tensors, path):
    """tensors: {name: numpy array of float16 or float32}."""
    header = {"__metadata__": {"format": "pt"}}
    offset = 0
    blobs = []
    for name in sorted(tensors):
        array = np.ascontiguousarray(tensors[name])
        data = array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes()
        header[name] = {"dtype": _DTYPES[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # pad so the data starts 8-byte aligned, as the spec suggests
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for data in blobs:
            f.write(data)


def load(path):
    """{name: numpy array} from a file save() wrote (F16/F32 only)."""
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(length))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = _NUMPY[entry["dtype"]].newbyteorder("<")
        out[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(entry["shape"])
    return out
