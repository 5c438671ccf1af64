"""glass: a local LLM runtime (C++20), from Python.

    import glass
    model = glass.load("models/stories260K.gguf")
    print(model.generate("Once upon a time", max_tokens=32, temperature=0).text)
    for piece in model.generate("Once upon a time", max_tokens=32, stream=True):
        print(piece, end="", flush=True)

    session = model.session()
    logits = session.eval(model.tokenize("Once upon a time"))   # float32 [vocab], a new array

Every computing call (load, eval, generation) runs with the GIL released, so threads using
different sessions run in parallel. Errors raise glass.Error subclasses carrying glass's message.
docs/python.md is the guide; the type stubs (__init__.pyi) list every signature.
"""

from __future__ import annotations

import inspect
import json
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from . import _glass
from ._glass import (  # noqa: F401  (re-exported)
    CancelledError,
    CapacityExceededError,
    Error,
    GenerateResult,
    InternalError,
    InvalidArgumentError,
    InvalidFileError,
    IoError,
    ModelInfo,
    Stream,
    Timings,
    TokenLogprob,
    TokenLogprobs,
    UnsupportedError,
    __version__,
)

__all__ = [
    "load", "Model", "Session", "Graph", "Node", "GenerateResult", "Stream", "ModelInfo", "Timings",
    "TokenLogprob", "TokenLogprobs", "Error", "InvalidFileError", "InvalidArgumentError",
    "UnsupportedError", "CapacityExceededError", "IoError", "CancelledError", "InternalError",
]


def load(path: str | os.PathLike, backend: str = "cpu", *, n_ctx: int = 0, threads: int = 0,
         kv_size: int = 0, cache_type: str = "f32", n_batch: int = 0, min_ctx: int = 0,
         kv_block_size: int = 16, n_seq_max: int = 64, chat_template: str | None = None,
         repack_weights: bool = True, fuse: bool = True, isa: str = "", decode_strategy: str = "",
         decompose: bool = False) -> Model:
    """Loads a GGUF file (any shard of a split model: all are loaded), a folder holding one GGUF model,
    or a Hugging Face model directory (config.json + safetensors).

    backend: "cpu" (the default, as the glass command's) or "ref" (the reference interpreter).
    n_ctx: positions one sequence may reach (0: the training context, as far as memory holds its cache). threads: compute
    threads (0: one per hardware thread). kv_size: rows of the KV cache pool (0: n_ctx).
    cache_type: "f32" (exact) or "f16". n_batch: most tokens per prefill call (0: min(512, ...)).
    The other arguments are glass::LoadOptions' fields of the same names (docs/api.md).
    Raises glass.Error subclasses (a missing file: IoError or InvalidFileError, naming the path).
    """
    o = _glass.LoadOptions()
    o.backend = backend
    o.n_ctx = n_ctx
    o.min_ctx = min_ctx
    o.n_threads = threads
    o.kv_size = kv_size
    o.cache_type = cache_type
    o.n_batch = n_batch
    o.kv_block_size = kv_block_size
    o.n_seq_max = n_seq_max
    o.chat_template = chat_template or ""
    o.repack_weights = repack_weights
    o.fuse = fuse
    o.isa = isa
    o.decode_strategy = decode_strategy
    o.decompose = decompose
    return Model(_glass._load(os.fspath(path), o))


def _config(*, max_tokens: int = 128, temperature: float = 0.8, top_k: int = 40, top_p: float = 0.95,
            min_p: float = 0.05, typical_p: float = 1.0, repeat_penalty: float = 1.0,
            presence_penalty: float = 0.0, frequency_penalty: float = 0.0, penalty_last_n: int = 64,
            seed: int | None = 0xC0FFEE, stop: str | Sequence[str] = (),
            stop_token_ids: Sequence[int] = (), stop_at_end_of_generation: bool = True,
            logprobs: bool = False, top_logprobs: int = 0,
            logit_bias: dict[int, float] | None = None) -> Any:
    # One call into C++ per request: the options cost a few microseconds, not one per field.
    if isinstance(stop, str):
        stop = [stop]
    return _glass._config(max_tokens, temperature, top_k, top_p, min_p, typical_p, repeat_penalty,
                          presence_penalty, frequency_penalty, penalty_last_n, seed, list(stop),
                          list(stop_token_ids), stop_at_end_of_generation, logprobs, top_logprobs,
                          logit_bias)


_OPTIONS = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in inspect.signature(_config).parameters.values()]


def _with_options(fn: Callable) -> Callable:
    """Shows the generation options in the signature of a method that takes **options."""
    sig = inspect.signature(fn)
    own = [p for p in sig.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
    fn.__signature__ = sig.replace(parameters=own + _OPTIONS)
    return fn


_GENERATION_DOC = """
    Options (keyword only; glass's defaults, which are llama.cpp's): max_tokens=128,
    temperature=0.8 (0: greedy), top_k=40 (0: off), top_p=0.95 (1: off), min_p=0.05 (0: off),
    typical_p=1.0, repeat_penalty=1.0, presence_penalty=0.0, frequency_penalty=0.0,
    penalty_last_n=64, seed=0xC0FFEE (None or negative: a random one, reported in result.seed),
    stop=[] (strings matched across tokens; the text stops before them), stop_token_ids=[],
    stop_at_end_of_generation=True, logprobs=False, top_logprobs=0 (0..20, needs logprobs),
    logit_bias={token_id: bias}.

    stream=False: returns a GenerateResult (text, tokens, finish_reason "stop" | "length" |
    "cancelled", seed, usage, timings, logprobs). on_piece(piece: str) is called with each piece
    of text as it is produced; returning False cancels (finish_reason "cancelled").
    stream=True: returns a glass.Stream, an iterator yielding each piece (str) as produced by a
    thread of its own; once exhausted, stream.result is the GenerateResult and the pieces joined
    equal result.text. stream.close() (or `with`) cancels early.
    Ctrl-C (KeyboardInterrupt) cancels the generation cleanly and is raised afterwards.
"""


def _doc(text: str) -> Callable:
    def deco(fn: Callable) -> Callable:
        fn.__doc__ = text + _GENERATION_DOC
        return fn
    return deco


class Model:
    """A loaded model: immutable and shareable between threads. Made by glass.load."""

    def __init__(self, handle: Any):
        self._m = handle

    def __repr__(self) -> str:
        i = self._m.info
        return f"<glass.Model {i.architecture} {os.path.basename(i.path)} on {i.backend}>"

    @property
    def info(self) -> ModelInfo:
        """architecture, vocab_size, n_ctx, n_layers, n_batch, kv_size, backend, weight_type, ...
        (info.as_dict() gives them all)."""
        return self._m.info

    @property
    def vocab_size(self) -> int:
        return self._m.info.vocab_size

    @property
    def plans_compiled(self) -> int:
        """Plans compiled so far (2 after load; flat while generating)."""
        return self._m.plans_compiled

    @property
    def chat_template(self) -> str:
        return self._m.chat_template

    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True,
                 as_array: bool = False) -> list[int] | np.ndarray:
        """Text to token ids as the model's tokenizer says (BOS added when the model asks for it
        and add_special is true). as_array=True gives an int32 ndarray instead of a list."""
        return self._m.tokenize(text, add_special, parse_special, as_array)

    def detokenize(self, ids: Sequence[int] | np.ndarray) -> str:
        """Token ids to text (bytes that are not UTF-8 read as U+FFFD)."""
        return self._m.detokenize(ids)

    def token_to_piece(self, id: int) -> bytes:
        """The bytes of one token (may be part of a UTF-8 sequence); control tokens give b""."""
        return self._m.token_to_piece(id)

    def is_end_of_generation(self, id: int) -> bool:
        return self._m.is_end_of_generation(id)

    def apply_chat_template(self, messages: Sequence[dict], add_generation_prompt: bool = True,
                            tools: list | None = None, **kwargs: Any) -> str:
        """Renders messages ([{"role": ..., "content": ...}, ...]) through the chat template as
        Hugging Face transformers does; keyword arguments are more template variables
        (enable_thinking=False)."""
        return self._m.apply_chat_template(messages, add_generation_prompt, tools, kwargs or None)

    def session(self, *, kv_size: int = 0, kv_block_size: int = 0, n_seq_max: int = 0,
                cache_type: str = "", batch_invariant: bool | None = None) -> Session:
        """A new session: its own KV cache, for one thread at a time. The cache's size, block
        size, sequences, type ("f32" / "f16") and batch invariance are the session's own, as
        llama.cpp's context parameters (0, "" and None: the load's); sizes compile nothing, a
        block size or cache type no session used before compiles its plans on first use."""
        return Session(self._m.session(kv_size, kv_block_size, n_seq_max, cache_type, batch_invariant), self)

    @_with_options
    @_doc("""Generates a continuation of `prompt` (str: tokenized with BOS as the model says; or a
    list of token ids, used as given) in a fresh session.
""")
    def generate(self, prompt: str | Sequence[int], *, stream: bool = False,
                 on_piece: Callable[[str], bool | None] | None = None, **options: Any):
        cfg = _config(**options)
        if stream:
            return self._m.stream(prompt, cfg)
        return self._m.generate(prompt, cfg, on_piece)

    @_with_options
    @_doc("""One chat reply to `messages` ([{"role": "system" | "user" | "assistant" | "tool",
    "content": str, ...}]; other keys, such as tool_calls, reach the template) in a fresh
    session, rendered with the model's chat template.
""")
    def chat(self, messages: Sequence[dict], *, stream: bool = False,
             on_piece: Callable[[str], bool | None] | None = None, **options: Any):
        cfg = _config(**options)
        if stream:
            return self._m.chat_stream(messages, cfg)
        return self._m.chat(messages, cfg, on_piece)

    @_with_options
    def generate_batch(self, prompts: Sequence[str | Sequence[int]], *,
                       on_piece: Callable[[int, str], bool | None] | None = None,
                       **options: Any) -> list[GenerateResult]:
        """Generates for several prompts together (one plan call per step for all of them; each
        gets the tokens it would alone). Options as generate's (one set for every prompt);
        on_piece(index, piece) streams. Returns one GenerateResult per prompt, in order."""
        return self._m.generate_batch(prompts, [_config(**options)], on_piece)

    def tensor(self, name: str) -> np.ndarray:
        """A weight by its GGUF name ("blk.0.attn_q.weight"), dequantized to a new float32 array
        of its shape ([out, in] for a linear layer). tensor_names() lists them."""
        return self._m.tensor(name)

    def tensor_names(self) -> list[str]:
        return self._m.tensor_names()

    def graph(self, after_rewrites: bool = False) -> Graph:
        """The model's graph as built, or (after_rewrites=True) as compiled for the prefill plan,
        with the rewrites that fired in graph.rewrites (what `glass graph --after-rewrites` shows)."""
        return Graph._parse(self, after_rewrites)

    def log_likelihood(self, text: str | Sequence[int], add_special: bool = True) -> np.ndarray:
        """log p(token[i] | token[:i]) for i = 1 .. n-1 of the tokenized text (float64 [n - 1]),
        from one all-logits evaluation in a fresh session. The text must fit the context (n_ctx)."""
        ids = self.tokenize(text, add_special) if isinstance(text, str) else list(text)
        if len(ids) < 2:
            return np.zeros(0)
        logits = self._m.all_logits(ids)[:-1].astype(np.float64)
        top = logits.max(axis=1)
        lse = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
        return logits[np.arange(len(ids) - 1), ids[1:]] - lse

    def perplexity(self, text: str | Sequence[int], add_special: bool = True) -> float:
        """exp(-mean log-likelihood) over the predicted tokens of the text."""
        ll = self.log_likelihood(text, add_special)
        if ll.size == 0:
            raise InvalidArgumentError("perplexity: the text has fewer than two tokens")
        return float(np.exp(-ll.mean()))


class Session:
    """A conversation's state: the KV cache, its tokens and the last logits. Not thread-safe: one
    thread at a time (a second call while one runs raises RuntimeError). Made by Model.session."""

    def __init__(self, handle: Any, model: Model):
        self._s = handle
        self._capture: list[str] = []
        self.model = model

    def __repr__(self) -> str:
        return f"<glass.Session n_past={self._s.n_past}>"

    def eval(self, ids: Sequence[int] | np.ndarray, all_logits: bool = False,
             capture: Sequence[str] | None = None) -> np.ndarray | dict[str, np.ndarray]:
        """Evaluates token ids at the next positions through the KV cache and returns the logits,
        always as a new float32 array (a copy; the session keeps its own): [vocab] for the last
        token, or [n, vocab] for every token with all_logits=True.

        capture: graph node names (as model.graph() lists them, e.g. "blk.0.ffn_out") whose values
        to return as well: the result is then a dict name -> float32 array [rows, ...] (a row per
        token evaluated; nodes after the logits-row selection, such as "result_norm", have a row
        per logits row) plus "logits" -> the logits. The session compiles plans of its own the
        first time a set of names is captured; its cache is kept.
        """
        names = list(capture) if capture else []
        if names != self._capture:
            self._s.set_capture(names)
            self._capture = names
        logits = self._s.eval(ids, all_logits)
        if not names:
            return logits
        out = self._s.captured()
        out["logits"] = logits
        return out

    @property
    def logits(self) -> np.ndarray:
        """The last evaluated token's logits (float32 [vocab], a copy)."""
        return self._s.logits

    @property
    def tokens(self) -> list[int]:
        """The ids the cache holds, in order."""
        return self._s.tokens

    @property
    def n_past(self) -> int:
        return self._s.n_past

    @property
    def stats(self) -> dict[str, int]:
        """n_eval_calls, n_tokens_evaluated, kv_rows_written, prefix_tokens_recomputed (always 0),
        prefix_tokens_reused (chat: tokens taken from the KV pool's prefix index)."""
        return self._s.stats

    def truncate(self, n: int) -> None:
        """Keeps the first n cached tokens and forgets the rest."""
        self._s.truncate(n)

    def reset(self) -> None:
        """Forgets the cache: the next eval starts at position 0."""
        self._s.reset()

    def _plain(self) -> None:
        if self._capture:
            self._s.set_capture([])
            self._capture = []

    @_with_options
    @_doc("""Continues this session with `prompt` (str: BOS only when the session is empty; or
    token ids) and generates; a later call continues the same conversation without evaluating it
    again.
""")
    def generate(self, prompt: str | Sequence[int], *, stream: bool = False,
                 on_piece: Callable[[str], bool | None] | None = None, **options: Any):
        self._plain()
        cfg = _config(**options)
        if stream:
            return self._s.stream(prompt, cfg)
        return self._s.generate(prompt, cfg, on_piece)

    @_with_options
    @_doc("""One chat turn: renders the whole conversation, keeps the cached tokens it shares with
    this session (earlier turns are not evaluated again) and generates the reply.
""")
    def chat(self, messages: Sequence[dict], *, stream: bool = False,
             on_piece: Callable[[str], bool | None] | None = None, **options: Any):
        self._plain()
        cfg = _config(**options)
        if stream:
            return self._s.chat_stream(messages, cfg)
        return self._s.chat(messages, cfg, on_piece)


@dataclass
class Node:
    """One node of the graph: it produces one tensor."""
    id: int
    op: str
    name: str
    inputs: list[int]
    attrs: dict[str, Any]
    shape: list[int | str]  # constants, or the symbols "T" (tokens), "S" (cache rows), "O" (logits rows)
    dtype: str


@dataclass
class Graph:
    """The model's graph as objects: nodes in topological order, outputs (name -> node id), state
    updates (state node id, value node id) and, for a compiled graph, the rewrites that fired."""
    nodes: list[Node]
    outputs: dict[str, int]
    state_updates: list[tuple[int, int]]
    rewrites: list[str] = field(default_factory=list)
    after_rewrites: bool = False
    _model: Model | None = field(default=None, repr=False, compare=False)
    _json: str = field(default="", repr=False, compare=False)

    @classmethod
    def _parse(cls, model: Model, after_rewrites: bool) -> Graph:
        text = model._m.graph_text("json", after_rewrites)
        doc = json.loads(text)
        nodes = [Node(i, n["op"], n.get("name", ""), list(n["inputs"]), dict(n.get("attrs", {})),
                      list(n["shape"]), n["dtype"]) for i, n in enumerate(doc["nodes"])]
        rewrites = []
        if after_rewrites:
            for line in model._m.graph_text("text", True).splitlines():
                if line.startswith("rewrite "):
                    rewrites.append(line[len("rewrite "):])
        return cls(nodes, {o["name"]: o["node"] for o in doc["outputs"]},
                   [(u["state"], u["value"]) for u in doc["state_updates"]], rewrites, after_rewrites,
                   model, text)

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def node(self, name: str) -> Node:
        """The last node of that name (the value dumps show under it). KeyError when none."""
        for n in reversed(self.nodes):
            if n.name == name:
                return n
        raise KeyError(name)

    def ops(self) -> dict[str, int]:
        """How many nodes of each op."""
        count: dict[str, int] = {}
        for n in self.nodes:
            count[n.op] = count.get(n.op, 0) + 1
        return count

    def to_json(self) -> str:
        """The library's versioned JSON of this graph (what `glass graph --format json` prints)."""
        return self._json

    def to_dot(self) -> str:
        """Graphviz DOT (`glass graph --format dot`)."""
        return self._model._m.graph_text("dot", self.after_rewrites)

    def to_text(self) -> str:
        """The text dump (`glass graph`), with the rewrite lines when after_rewrites."""
        return self._model._m.graph_text("text", self.after_rewrites)
