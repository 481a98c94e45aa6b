"""The bundled MiniLM run by ONNX Runtime, fp32 or dynamically quantised to int8.

The embedding pass is the floor of every cold run. The ONNX graph is exported once, offline,
from the same weights the default embedder loads (torch's exporter, then ONNX Runtime's dynamic
int8 quantisation for `precision: int8`) and kept under `export_dir`; each run then embeds with
ONNX Runtime. Its vectors are close to the default's, not equal (docs/results.md, "Embedding
backends"), so its identity differs: the cache never mixes them.

Texts are padded as the default embedder pads them (each to its own length rounded up to
PAD_STEP tokens), so a text's vector does not depend on the texts beside it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from memeval.backends.embedders.base import (
    EMBEDDERS,
    EmbeddingError,
    LoadedWidth,
    l2_normalise,
)
from memeval.backends.embedders.sentence_transformer import (
    BUNDLED,
    PAD_STEP,
    by_padded_length,
    model_path,
)
from memeval.registry import bounded
from memeval.threads import settings

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OPSET = 17


def export_fp32(source: str, target: str) -> None:
    """The transformer (without pooling) as an ONNX graph of dynamic batch and length."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    model = AutoModel.from_pretrained(source).eval()
    # padded, so the trace keeps the attention mask
    example = AutoTokenizer.from_pretrained(source)(["a", "a padded example"], padding=True,
                                                    return_tensors="pt")

    class Hidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    axes = {name: {0: "batch", 1: "tokens"} for name in (*INPUTS, "hidden")}
    with torch.no_grad():
        torch.onnx.export(Hidden(), tuple(example[name] for name in INPUTS), target,
                          input_names=list(INPUTS), output_names=["hidden"],
                          dynamic_axes=axes, opset_version=OPSET, dynamo=False)


def keep_fp32(fp32: Path, target: Path) -> Path:
    """fp32: the exported graph as it is."""
    return fp32


def quantise_int8(fp32: Path, target: Path) -> Path:
    """The weights of every MatMul as int8, one scale per output channel; activations quantised
    per batch at run time. Measured against fp32 on 100 corpus texts (mean / least cosine):
    ONNX Runtime's defaults (per-tensor, embeddings quantised too) 0.949 / 0.878, MatMuls only
    0.950 / 0.911, MatMuls per channel 0.993 / 0.984."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    return exported(target, partial(quantize_dynamic, str(fp32), op_types_to_quantize=["MatMul"],
                                    per_channel=True, weight_type=QuantType.QInt8))


PRECISIONS: dict[str, Callable[[Path, Path], Path]] = {"fp32": keep_fp32, "int8": quantise_int8}
# Texts per forward pass. int8 quantises activations with one scale per call, taken from the whole
# batch: a text's vector would depend on its batch-mates (and a cold run on a warm one), so each
# text is run alone.
PER_CALL: dict[str, int | None] = {"fp32": None, "int8": 1}


def exported(target: Path, export: Callable[[str], Any]) -> Path:
    """`target`, exported first if absent; written aside and renamed, so a run stopped mid-way
    never leaves half a graph that a later run would load."""
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        aside = target.with_name(f"{target.stem}.{os.getpid()}.partial.onnx")
        try:
            export(str(aside))
            aside.replace(target)
        finally:
            aside.unlink(missing_ok=True)
    return target


@dataclass
class OnnxConfig:
    model: str = BUNDLED
    precision: str = "int8"
    batch_size: int = bounded(32, 1)
    max_seq_length: int | None = bounded(None, 1)
    export_dir: str = "~/.cache/memeval/onnx"

    def validate(self) -> None:
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {sorted(PRECISIONS)}")
        if self.batch_size <= 0:
            raise ValueError("batch_size must be positive")


class OnnxEmbedder(LoadedWidth):
    """Loads lazily, exporting the graph on first use: building a run pays neither."""

    def __init__(self, cfg: OnnxConfig) -> None:
        self.cfg = cfg
        name = "all-MiniLM-L6-v2" if cfg.model == BUNDLED else cfg.model
        self.identity = f"onnx-{cfg.precision}:{name}"
        if cfg.max_seq_length:
            self.identity += f":len{cfg.max_seq_length}"
        self.identity += f":pad{PAD_STEP}"
        self._dim = 384 if cfg.model == BUNDLED else 0  # another model's: read when loaded
        self._session: Any = None
        self._tokenizer: Any = None
        self._limit = 0

    def _graph(self, source: str) -> Path:
        """The graph for `precision`, exported (and quantised) on first use."""
        name = "all-MiniLM-L6-v2" if self.cfg.model == BUNDLED else \
            "".join(c if c.isalnum() else "_" for c in str(Path(source).resolve()))
        folder = Path(self.cfg.export_dir).expanduser()
        fp32 = exported(folder / f"{name}-fp32.onnx", partial(export_fp32, source))
        return PRECISIONS[self.cfg.precision](fp32, folder / f"{name}-{self.cfg.precision}.onnx")

    def _load(self) -> Any:
        if self._session is None:
            try:
                import onnxruntime as ort
                from transformers import AutoTokenizer

                source = model_path(self.cfg.model)
                graph = self._graph(source)
                options = ort.SessionOptions()
                options.intra_op_num_threads = settings().model
                options.inter_op_num_threads = 1
                self._session = ort.InferenceSession(str(graph), options,
                                                     providers=["CPUExecutionProvider"])
                self._tokenizer = AutoTokenizer.from_pretrained(source)
            except ImportError as err:
                raise EmbeddingError(f'embedder=onnx needs ONNX Runtime ({err}): pip install '
                                     f'"memeval[onnx]"') from err
            except Exception as err:
                raise EmbeddingError(f"cannot load the ONNX model of '{self.cfg.model}': "
                                     f"{err}") from err
            self._limit = self.cfg.max_seq_length or _max_seq_length(source)
            self._dim = int(self._session.get_outputs()[0].shape[-1])
        return self._session

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        session = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        counts = [len(ids) for ids in self._tokenizer(
            list(texts), truncation=True, max_length=self._limit)["input_ids"]]
        vectors = np.empty((len(texts), self.dim), dtype=np.float32)
        step = PER_CALL[self.cfg.precision] or self.cfg.batch_size
        for padded, rows in by_padded_length(counts, self._limit).items():
            for start in range(0, len(rows), step):
                batch = rows[start : start + step]
                encoded = self._tokenizer([texts[i] for i in batch], truncation=True,
                                          max_length=padded, padding="max_length",
                                          return_tensors="np")
                hidden = session.run(None, {name: encoded[name].astype(np.int64)
                                            for name in INPUTS})[0]
                mask = encoded["attention_mask"][..., None].astype(np.float32)
                vectors[batch] = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
        return l2_normalise(vectors)


def _max_seq_length(source: str) -> int:
    """The length sentence-transformers truncates to (sentence_bert_config.json), else 512."""
    config = Path(source) / "sentence_bert_config.json"
    if config.exists():
        return int(json.loads(config.read_text())["max_seq_length"])
    return 512


@EMBEDDERS.register("onnx", OnnxConfig)
def build_onnx(cfg: OnnxConfig) -> OnnxEmbedder:
    return OnnxEmbedder(cfg)
