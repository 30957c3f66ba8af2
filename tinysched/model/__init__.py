"""The model: a `.tflite` file read, checked and turned into the operator graph every later stage uses.

Takes: a TFLite flatbuffer (bytes or a path). Gives: a `Graph` (tensors, operators, inputs, outputs;
frozen) with shapes inferred and checked the way TFLite's Prepare computes them, constant sub-graphs
folded, graph rewrites (explicit padding, fused PADs, dilated convolutions), legacy uint8 models as
int8 and the int8 interface (`--io int8`). It also writes models back (`rewrite_model`) and builds
them (`ModelBuilder`, the test and demo models). Nothing here knows memory, orders or arenas.

    tflite_verify.py  the flatbuffer's structure, before anything reads it
    reader.py         .tflite -> Graph (TFLite's own schema module)
    graph.py          Graph, Tensor, Operator: the pipeline's one graph record
    shapes.py         output shapes as TFLite's Prepare infers them; TFLite's window padding
    fold.py           compile-time evaluation of shape and constant sub-graphs
    rewrite.py        graph rewrites, each a match -> replacement, composed
    interface.py      the model's own float edges or int8 in their place
    uint8.py          legacy uint8-quantised models computed as int8, exactly (in `choose_interface`)
    writer.py         a model rewritten (reordered operators, offline plan metadata)
    modelgen.py       int8 (and legacy uint8) models built from scratch, for tests and the demo
"""

from tinysched.exports import lazy_api

_API = {
    "IO_MODES": "interface",
    "FoldResult": "fold",
    "Graph": "graph",
    "Interface": "interface",
    "IoEdge": "interface",
    "ModelBuilder": "modelgen",
    "Operator": "graph",
    "Quantization": "graph",
    "RewriteResult": "rewrite",
    "Tensor": "graph",
    "Uint8Retyping": "uint8",
    "check_flatbuffer": "tflite_verify",
    "check_graph": "shapes",
    "choose_interface": "interface",
    "fold_constants": "fold",
    "infer_output_shapes": "shapes",
    "int8_arithmetic": "uint8",
    "make_graph": "graph",
    "parse_model": "reader",
    "read_model": "reader",
    "read_model_bytes": "reader",
    "rewrite_graph": "rewrite",
    "rewrite_model": "writer",
}
__all__ = sorted(_API)
__getattr__ = lazy_api(__name__, _API)
