"""all-MiniLM-L6-v2 on ONNX Runtime: a graph built from the packaged safetensors weights, int8 weights.

No registry package ships this model as ONNX, and exporting needs torch; so the graph is written here
with the ``onnx`` package from the same weights ``reasoningbank.ai.minilm`` reads: the same forward pass
(BERT encoder, erf-GELU, mean pooling over the real tokens, L2 normalisation) as standard operators.
With ``int8`` its matrix weights are quantised by ONNX Runtime's dynamic quantisation (activations
quantised per call): on a 2-core Xeon a one-line query takes ~2 ms on one core against ~12 ms for the
numpy pass, at the same retrieval quality (bench/README.md, "embedders.py"). The vectors differ from the
fp32 model's (cosine 0.92-0.98), so a bank embedded by one is re-embedded for the other. Nothing is
fetched from the network.

Building and quantising take ~2.5 s, and every process that embeds (``prepare_service``, web, the
worker) would pay them at each start; so the built graph is cached in a directory (the data directory's
``cache/`` by default, ``EMBEDDING_CACHE_DIR``) under a key of everything it is made from (the weights'
and config's digest, the builder's source, the onnx and onnxruntime versions, int8 or not), and a later
process loads it in ~0.3 s. A cache entry whose checksum does not match, or that ONNX Runtime refuses,
is rebuilt; a cache that cannot be written is skipped with a warning (docs/search.md#embedders).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import tempfile
import threading
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17  # LayerNormalization
BATCH_TEXTS = 32
# A cache entry: this line, the graph's sha256 in hex and a newline, then the serialised graph. One file
# replaced atomically, so a reader never sees a graph without its checksum, whatever the writers do.
CACHE_MAGIC = b"reasoningbank-onnx-graph-v1\n"

logger = logging.getLogger(__name__)


def graph_build(model_dir: Path, out_path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from safetensors.numpy import load_file

    config = json.loads((model_dir / "config.json").read_text())
    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head_dim, eps = hidden // heads, float(config.get("layer_norm_eps", 1e-12))
    w = load_file(str(model_dir / "model.safetensors"))
    if "embeddings.word_embeddings.weight" not in w:
        w = {k.removeprefix("bert."): v for k, v in w.items()}

    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []
    counter = [0]

    def const(name: str, array: np.ndarray) -> str:
        # np.ascontiguousarray would turn a scalar into a 1-element vector
        inits.append(numpy_helper.from_array(np.array(array, order="C"), name))
        return name

    def node(op: str, inputs: Sequence[str], **attrs: Any) -> str:
        counter[0] += 1
        out = f"{op.lower()}_{counter[0]}"
        nodes.append(helper.make_node(op, list(inputs), [out], **attrs))
        return out

    def linear(x: str, prefix: str) -> str:
        weight = const(f"{prefix}.W", w[f"{prefix}.weight"].T.astype(np.float32))
        bias = const(f"{prefix}.b", w[f"{prefix}.bias"].astype(np.float32))
        return node("Add", [node("MatMul", [x, weight]), bias])

    def layer_norm(x: str, prefix: str) -> str:
        return node(
            "LayerNormalization",
            [x, const(f"{prefix}.g", w[f"{prefix}.weight"]), const(f"{prefix}.beta", w[f"{prefix}.bias"])],
            axis=-1,
            epsilon=eps,
        )

    i64 = lambda *v: np.asarray(v, dtype=np.int64)  # noqa: E731
    f32 = lambda v: np.asarray(v, dtype=np.float32)  # noqa: E731
    word = const("word", w["embeddings.word_embeddings.weight"].astype(np.float32))
    position = const(
        "position",
        (w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]).astype(
            np.float32
        ),
    )
    length = node("Gather", [node("Shape", ["input_ids"]), const("one", np.asarray(1, dtype=np.int64))], axis=0)
    positions = node(
        "Range", [const("zero", np.asarray(0, dtype=np.int64)), length, const("step", np.asarray(1, dtype=np.int64))]
    )
    h = node("Add", [node("Gather", [word, "input_ids"]), node("Gather", [position, positions])])
    h = layer_norm(h, "embeddings.LayerNorm")
    masked = node("Mul", [node("Sub", [const("f_one", f32(1.0)), "mask"]), const("neg", f32(-1e9))])
    key_bias = node("Unsqueeze", [masked, const("ax12", i64(1, 2))])
    qkv_shape = const("qkv_shape", i64(0, 0, 3, heads, head_dim))
    ctx_shape = const("ctx_shape", i64(0, 0, hidden))
    scale = const("scale", f32(1.0 / math.sqrt(head_dim)))
    for i in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{i}"
        qkv_w = np.concatenate(
            [w[f"{p}.attention.self.{n}.weight"].T for n in ("query", "key", "value")], axis=1
        ).astype(np.float32)
        qkv_b = np.concatenate([w[f"{p}.attention.self.{n}.bias"] for n in ("query", "key", "value")]).astype(
            np.float32
        )
        qkv = node("Add", [node("MatMul", [h, const(f"{p}.qkv.W", qkv_w)]), const(f"{p}.qkv.b", qkv_b)])
        qkv = node("Transpose", [node("Reshape", [qkv, qkv_shape])], perm=[2, 0, 3, 1, 4])
        q, k, v = (node("Gather", [qkv, const(f"{p}.idx{j}", np.asarray(j, dtype=np.int64))], axis=0) for j in range(3))
        scores = node("MatMul", [node("Mul", [q, scale]), node("Transpose", [k], perm=[0, 1, 3, 2])])
        probs = node("Softmax", [node("Add", [scores, key_bias])], axis=-1)
        context = node("Reshape", [node("Transpose", [node("MatMul", [probs, v])], perm=[0, 2, 1, 3]), ctx_shape])
        h = layer_norm(
            node("Add", [linear(context, f"{p}.attention.output.dense"), h]), f"{p}.attention.output.LayerNorm"
        )
        inner = linear(h, f"{p}.intermediate.dense")
        erf = node("Erf", [node("Mul", [inner, const(f"{p}.rsqrt2", f32(1 / math.sqrt(2)))])])
        gelu = node(
            "Mul", [node("Mul", [inner, const(f"{p}.half", f32(0.5))]), node("Add", [erf, const(f"{p}.one", f32(1.0))])]
        )
        h = layer_norm(node("Add", [linear(gelu, f"{p}.output.dense"), h]), f"{p}.output.LayerNorm")
    mask3 = node("Unsqueeze", ["mask", const("ax2", i64(2))])
    summed = node("ReduceSum", [node("Mul", [h, mask3]), const("ax1", i64(1))], keepdims=0)
    count = node("ReduceSum", ["mask", const("ax1b", i64(1))], keepdims=1)
    mean = node("Div", [summed, node("Max", [count, const("tiny", f32(1e-9))])])
    nodes.append(helper.make_node("LpNormalization", [mean], ["embedding"], axis=-1, p=2))
    graph = helper.make_graph(
        nodes,
        "minilm",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "length"]),
        ],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out_path))


def quantised(fp32_path: Path, out_path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # quantize_dynamic logs an advice on the root logger ("consider pre-processing"), meant for vision models
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        quantize_dynamic(str(fp32_path), str(out_path), weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"])
    finally:
        logging.disable(previous)


def graph_bytes(model_dir: Path, *, int8: bool) -> bytes:
    """The serialised graph for ``model_dir``'s weights (built in a scratch directory, then dropped)."""
    with tempfile.TemporaryDirectory(prefix="reasoningbank-onnx-") as tmp:
        path = Path(tmp) / "fp32.onnx"
        graph_build(model_dir, path)
        if int8:
            quantised(path, Path(tmp) / "int8.onnx")
            path = Path(tmp) / "int8.onnx"
        return path.read_bytes()


def graph_cache_key(model_dir: Path, *, int8: bool) -> str:
    """What the graph is made from, as one digest: a change to any of it makes another graph."""
    digest = hashlib.sha256()
    for name in ("config.json", "model.safetensors"):
        with open(model_dir / name, "rb") as file:
            digest.update(hashlib.file_digest(file, "sha256").digest())
    # this module's source builds it (an edit to the builder must not load the old graph), onnx writes it
    # and onnxruntime's quantiser rewrites it
    digest.update(Path(__file__).read_bytes())
    versions = f"onnx {metadata.version('onnx')} onnxruntime {metadata.version('onnxruntime')} int8 {int8}"
    digest.update(versions.encode())
    return digest.hexdigest()


def graph_cache_path(cache_dir: Path, model_dir: Path, *, int8: bool) -> Path:
    kind = "int8" if int8 else "fp32"
    return cache_dir / f"minilm-onnx-{kind}-{graph_cache_key(model_dir, int8=int8)[:32]}.graph"


def graph_cache_read(path: Path) -> bytes | None:
    """The cached graph at ``path``, or None when there is none or it is damaged (a wrong checksum)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    header = len(CACHE_MAGIC) + 65
    if not data.startswith(CACHE_MAGIC) or len(data) < header:
        return None
    graph = data[header:]
    if hashlib.sha256(graph).hexdigest().encode() + b"\n" != data[len(CACHE_MAGIC) : header]:
        return None
    return graph


def graph_cache_write(path: Path, graph: bytes) -> None:
    """Store ``graph`` at ``path`` (atomically) and drop the entries other keys of its kind left behind
    (each ~58 MB: one per upgrade would pile up). A cache that cannot be written only costs the next
    process the build, so that is a warning, not an error."""
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".tmp-", delete=False) as out:
            temporary = out.name
            out.write(CACHE_MAGIC + hashlib.sha256(graph).hexdigest().encode() + b"\n" + graph)
        os.replace(temporary, path)
    except OSError as exc:
        logger.warning("could not cache the ONNX graph in %s (%s): the next process builds it again", path.parent, exc)
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        return
    kind = path.name.rsplit("-", 1)[0]
    for old in path.parent.glob(f"{kind}-*.graph"):
        if old != path:
            with contextlib.suppress(OSError):
                old.unlink()


def graph_load_or_build(model_dir: Path, *, int8: bool, cache_dir: Path | None, reuse: bool = True) -> bytes:
    """The serialised graph for ``model_dir``: from the cache when it holds a sound entry for it (and
    ``reuse``), else built and, with a ``cache_dir``, stored there for the next process."""
    path = graph_cache_path(cache_dir, model_dir, int8=int8) if cache_dir is not None else None
    if path is not None and reuse:
        cached = graph_cache_read(path)
        if cached is not None:
            return cached
    began = time.monotonic()
    graph = graph_bytes(model_dir, int8=int8)
    logger.info("built the ONNX graph of %s in %.1f s", model_dir, time.monotonic() - began)
    if path is not None:
        graph_cache_write(path, graph)
    return graph


class OnnxMiniLMModel:
    """The tokenizer of ``minilm.MiniLMModel`` and an ONNX Runtime session over the graph; the same
    ``encode`` contract (unit float32 rows in input order, batches sorted by length and padded)."""

    def __init__(
        self, model_dir: Path, *, int8: bool = True, threads: int | None = None, cache_dir: Path | None = None
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        from reasoningbank.ai import minilm

        missing = [n for n in ("config.json", "tokenizer.json", "model.safetensors") if not (model_dir / n).is_file()]
        if missing:
            raise minilm.ModelFilesMissing(f"model directory {model_dir} lacks {', '.join(missing)}")
        config = json.loads((model_dir / "config.json").read_text())
        self.hidden = int(config["hidden_size"])
        sbert_path = model_dir / "sentence_bert_config.json"
        sbert = json.loads(sbert_path.read_text()) if sbert_path.is_file() else {}
        # cut at max_seq_length and padded per batch here, as minilm.MiniLMModel (and sentence-transformers) do
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(
            max_length=min(int(sbert.get("max_seq_length", 256)), int(config.get("max_position_embeddings", 512)))
        )
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        # the binding refuses concurrent use of one tokenizer ("Already borrowed"), as in minilm.py
        self._tokenizer_lock = threading.Lock()
        options = ort.SessionOptions()
        # One thread per process unless the environment says otherwise: the reason minilm.py holds its
        # BLAS to one thread (several processes share a few cores) holds for ONNX Runtime's pool too.
        options.intra_op_num_threads = threads or int(os.environ.get("OMP_NUM_THREADS") or 1)
        options.inter_op_num_threads = 1
        # Dynamic quantisation scales activations per call over the whole batch, so a text's vector would
        # depend on its batch mates (cosine 0.98-0.99 between the two): int8 runs one text per call,
        # which costs nothing measurable (~245 texts/s on one core either way, 2-core Xeon).
        self._batch = 1 if int8 else BATCH_TEXTS
        graph = graph_load_or_build(model_dir, int8=int8, cache_dir=cache_dir)
        try:
            self._session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        except Exception:  # ONNX Runtime's own error types; a sound build never fails here
            if cache_dir is None:
                raise
            # a cached graph with a valid checksum that this runtime still refuses: built again, replaced
            logger.warning("ONNX Runtime refused the cached graph; building it again", exc_info=True)
            graph = graph_load_or_build(model_dir, int8=int8, cache_dir=cache_dir, reuse=False)
            self._session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._tokenizer_lock:
            ids = [self._tokenizer.encode(text).ids for text in texts]
        out = np.empty((len(ids), self.hidden), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for start in range(0, len(order), self._batch):
            chunk = order[start : start + self._batch]
            length = max(len(ids[i]) for i in chunk)
            input_ids = np.zeros((len(chunk), length), dtype=np.int64)  # 0 is [PAD]
            mask = np.zeros((len(chunk), length), dtype=np.float32)
            for row, i in enumerate(chunk):
                input_ids[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1.0
            out[chunk] = self._session.run(["embedding"], {"input_ids": input_ids, "mask": mask})[0]
        return out


if __name__ == "__main__":
    # python -m reasoningbank.ai.minilm_onnx DIR: the packaged model's int8 graph into the cache DIR (the
    # Dockerfile builds the image's graph this way, so no container process builds it)
    import sys

    from reasoningbank.ai.minilm import packaged_model_dir

    graph_load_or_build(packaged_model_dir(), int8=True, cache_dir=Path(sys.argv[1]))
