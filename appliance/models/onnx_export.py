"""Export the embedder's shipped weights to ONNX (fp32, and int8 matrix products with activations
quantized per token: `onnx_quantize.py`), offline.

The network is exported with transformers' eager attention (a matrix product, the additive mask, a
softmax): its default SDPA attention exports with a NaN guard (IsNaN + Where over every attention
matrix) that took 16% of ONNX Runtime's time for nothing (scripts/bench_embedder.py).

Runs where the model store is built (`appliance models init`, `appliance bundle`), never at query
time, and reads only the local folder. The export is deterministic for the pinned torch/onnx/
onnxruntime versions: the same weights give byte-identical files, so each file is pinned by sha256
like every other model file (a different result stops the build instead of shipping unchecked bytes).
"""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

from appliance.models.onnx_encoder import ONNX_FILES
from appliance.models.onnx_quantize import quantize_per_token
from appliance.models.store import ModelStoreError

OPSET = 17
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def export_onnx(model_path: Path, destination: Path) -> dict[str, Path]:
    """Write onnx/model.onnx and onnx/model_qint8.onnx for the model folder; {store path: file}."""
    import torch
    from transformers import AutoModel

    try:
        import onnx  # noqa: F401  (torch.onnx.export and the quantizer need it)
    except ImportError as exc:
        raise ModelStoreError(
            f"the ONNX export of the embedder needs the onnx package ({exc}); it is a development "
            "dependency (`make install`, or pip install 'onnx==1.23.2')"
        ) from exc

    fp32 = destination / ONNX_FILES["onnx"]
    int8 = destination / ONNX_FILES["onnx-int8"]
    fp32.parent.mkdir(parents=True, exist_ok=True)
    model = AutoModel.from_pretrained(str(model_path), local_files_only=True, attn_implementation="eager").eval()

    class Encoder(torch.nn.Module):
        """Keyword arguments, so the export does not depend on the order of forward()'s parameters."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, mask: torch.Tensor, token_types: torch.Tensor) -> torch.Tensor:
            out = self.model(input_ids=input_ids, attention_mask=mask, token_type_ids=token_types)
            return out.last_hidden_state

    ids = torch.ones((2, 16), dtype=torch.long)
    example = (ids, torch.ones_like(ids), torch.zeros_like(ids))
    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "last_hidden_state")}
    with tempfile.TemporaryDirectory() as scratch, warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the TorchScript exporter's notes on advanced indexing
        partial = Path(scratch) / "model.onnx"
        torch.onnx.export(
            Encoder(),
            example,
            str(partial),
            input_names=list(INPUTS),
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=OPSET,
            dynamo=False,
        )
        quantized = Path(scratch) / "model_qint8.onnx"
        quantize_per_token(partial, quantized)
        partial.replace(fp32)
        quantized.replace(int8)
    return {ONNX_FILES["onnx"]: fp32, ONNX_FILES["onnx-int8"]: int8}
