"""int8 matrix products for the exported embedder, with activations quantized per token.

ONNX Runtime's own dynamic quantization (`quantize_dynamic`) quantizes each activation with one scale
for the whole batch: on all-MiniLM-L6-v2 its vectors sat at cosine 0.979 to torch on the runbook
chunks (under the 0.99 gate), and a text's vector changed with the texts batched beside it, so a
query embedded alone and the same text embedded in an ingest batch differed. Here every row (one
token of one text) gets its own scale, so:

- a text's vector depends on nothing but the text (batch mates and padding change no bit of it);
- outlier tokens no longer flatten the resolution of every other token in the batch
  (cosine ≥ 0.99 to torch on the runbook chunks, scripts/bench_embedder.py).

Each MatMul with a constant 2-D weight W[K, N] becomes:

    s    = max(|x|, over K) / 127                     one scale per row of x
    q    = uint8(round(x / s) + 128)                  symmetric, shifted into MLAS's u8 x s8 kernel
    y    = MatMulIntegerToFloat(q, Wq, 1, w, 128) * s  Wq = round(W / w), w = max(|W|, over K) / 127

MatMulIntegerToFloat (ONNX Runtime's com.microsoft domain) folds the int32 → float conversion and the
per-column weight scale into the product. Inputs shared by several products (query, key and value
read the same layer-norm output) are quantized once. The attention products (no constant weight)
stay float32. Deterministic: numpy float32 arithmetic on the weights, so the same export gives the
same bytes, which `packages.py` pins.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

INT8_MAX = 127
ZERO_POINT = 128  # int8 values shifted into uint8: MLAS's fast AVX2/VNNI kernels take u8 activations
MS_DOMAIN = "com.microsoft"


def quantize_per_token(source: Path, destination: Path) -> int:
    """Write the int8 model of the float32 ONNX file `source`; the number of products quantized."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    weights = {tensor.name: tensor for tensor in graph.initializer}
    constants: list[Any] = []

    def constant(name: str, value: np.ndarray) -> str:
        constants.append(numpy_helper.from_array(value, name))
        return name

    eps = constant("q/eps", np.array(1e-8, np.float32))
    int8_max = constant("q/int8_max", np.array(float(INT8_MAX), np.float32))
    shift = constant("q/shift", np.array(float(ZERO_POINT), np.float32))
    zero_point = constant("q/zero_point", np.array(ZERO_POINT, np.uint8))
    one = constant("q/one", np.array(1.0, np.float32))

    quantized_inputs: dict[str, tuple[str, str]] = {}  # float input -> (its uint8 rows, their scales)
    replaced: set[str] = set()
    products = 0
    nodes: list[Any] = []
    for node in graph.node:
        weight = weights.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight is None or len(weight.dims) != 2:
            nodes.append(node)
            continue
        x = node.input[0]
        if x not in quantized_inputs:
            q = f"q/{len(quantized_inputs)}"
            nodes += [
                helper.make_node("Abs", [x], [f"{q}/abs"]),
                helper.make_node("ReduceMax", [f"{q}/abs"], [f"{q}/max"], axes=[-1], keepdims=1),
                helper.make_node("Max", [f"{q}/max", eps], [f"{q}/range"]),
                helper.make_node("Div", [f"{q}/range", int8_max], [f"{q}/scale"]),
                helper.make_node("Div", [int8_max, f"{q}/range"], [f"{q}/inverse"]),
                helper.make_node("Mul", [x, f"{q}/inverse"], [f"{q}/scaled"]),
                helper.make_node("Add", [f"{q}/scaled", shift], [f"{q}/shifted"]),
                helper.make_node("Round", [f"{q}/shifted"], [f"{q}/rounded"]),
                helper.make_node("Cast", [f"{q}/rounded"], [f"{q}/uint8"], to=TensorProto.UINT8),
            ]
            quantized_inputs[x] = (f"{q}/uint8", f"{q}/scale")
        rows, row_scales = quantized_inputs[x]
        matrix = numpy_helper.to_array(weight).astype(np.float32)
        column_scales = (np.maximum(np.abs(matrix).max(axis=0), np.float32(1e-12)) / np.float32(INT8_MAX)).astype(
            np.float32
        )
        matrix_int8 = np.clip(np.round(matrix / column_scales), -INT8_MAX, INT8_MAX).astype(np.int8)
        w = f"w/{products}"
        products += 1
        constant(f"{w}/int8", matrix_int8)
        constant(f"{w}/scale", column_scales)
        replaced.add(weight.name)
        nodes += [
            helper.make_node(
                "MatMulIntegerToFloat",
                [rows, f"{w}/int8", one, f"{w}/scale", zero_point],
                [f"{w}/product"],
                domain=MS_DOMAIN,
            ),
            helper.make_node("Mul", [f"{w}/product", row_scales], [node.output[0]]),
        ]
    kept = [tensor for tensor in graph.initializer if tensor.name not in replaced]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + constants)
    model.opset_import.append(helper.make_opsetid(MS_DOMAIN, 1))
    onnx.save(model, str(destination))
    return products
