"""Rewriting a `.tflite` file: a new operator order and extra metadata, nothing else changed.

Used for `schedule -o` (the reordered model, which stock TFLite runs unchanged) and for `plan --tflm`
(the same plus an `OfflineMemoryAllocation` entry for TFLM's planner). The file goes through TFLite's
own generated object API, so every table the reader does not model (signatures, sparsity, custom
options) is carried over untouched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import flatbuffers
from ai_edge_litert import schema_py_generated as schema

from tinysched.errors import TinyschedError
from tinysched.model.reader import FILE_IDENTIFIER, parse_model


def rewrite_model(
    model_bytes: bytes,
    order: Sequence[int] | None = None,
    metadata: Mapping[str, bytes] | None = None,
) -> bytes:
    """Model bytes with subgraph 0's operators in `order` and `metadata` entries added or replaced."""
    graph = parse_model(model_bytes)  # validates the file and the order against the same graph
    if order is not None:
        graph.check_order(list(order))
    model = schema.ModelT.InitFromPackedBuf(bytearray(model_bytes), 0)
    if order is not None:
        operators = model.subgraphs[0].operators or []
        model.subgraphs[0].operators = [operators[v] for v in order]
    for name, payload in (metadata or {}).items():
        buffer = schema.BufferT()
        buffer.data = list(payload)
        model.buffers = (model.buffers or []) + [buffer]
        entries = [m for m in (model.metadata or []) if _name(m.name) != name]
        entry = schema.MetadataT()
        entry.name = name
        entry.buffer = len(model.buffers) - 1
        model.metadata = entries + [entry]
    builder = flatbuffers.Builder(max(1024, 2 * len(model_bytes)))
    builder.Finish(model.Pack(builder), file_identifier=FILE_IDENTIFIER)
    result = bytes(builder.Output())
    if len(result) > 2**31 - 1:
        raise TinyschedError("rewritten model exceeds the 2 GiB flatbuffer limit")
    return result


def _name(raw: str | bytes | None) -> str:
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    return raw or ""
