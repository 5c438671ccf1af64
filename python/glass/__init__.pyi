# Type stubs for the glass package (python/glass/__init__.py over the extension glass._glass).
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Literal, Sequence, overload

import numpy as np
import numpy.typing as npt

__version__: str

class Error(Exception):
    code: str
class InvalidFileError(Error): ...
class InvalidArgumentError(Error, ValueError): ...
class UnsupportedError(Error): ...
class CapacityExceededError(Error): ...
class IoError(Error, OSError): ...
class CancelledError(Error): ...
class InternalError(Error): ...

class ModelInfo:
    path: str
    architecture: str
    summary: str
    backend: str
    vocab_size: int
    n_ctx: int
    n_ctx_train: int
    n_layers: int
    n_batch: int
    kv_size: int
    kv_bytes_per_row: int
    kv_block_size: int
    n_seq_max: int
    kv_size_window: int
    file_bytes: int
    n_params: int
    weight_bytes: int
    weight_type: str
    file_type: str
    load_ms: float
    def as_dict(self) -> dict[str, Any]: ...

class TokenLogprob:
    id: int
    logprob: float

class TokenLogprobs:
    id: int
    logprob: float
    top: list[TokenLogprob]

class Timings:
    prompt_ms: float
    ttft_ms: float
    decode_ms: float
    n_prompt_tokens: int
    n_decoded: int

class GenerateResult:
    text: str
    text_bytes: bytes
    tokens: list[int]
    finish_reason: Literal["stop", "length", "cancelled"]
    seed: int
    timings: Timings
    logprobs: list[TokenLogprobs]
    usage: dict[str, int]  # prompt_tokens, completion_tokens, total_tokens
    counters: dict[str, int]  # plans_compiled, kv_rows_written, prefix_tokens_recomputed

class Stream(Iterator[str]):
    result: GenerateResult | None
    done: bool
    text: str
    def __iter__(self) -> Stream: ...
    def __next__(self) -> str: ...
    def close(self) -> None: ...
    def __enter__(self) -> Stream: ...
    def __exit__(self, *args: object) -> None: ...

PieceCallback = Callable[[str], bool | None]

def load(path: str | os.PathLike[str], backend: str = "cpu", *, n_ctx: int = 0, threads: int = 0,
         kv_size: int = 0, cache_type: Literal["f32", "f16"] = "f32", n_batch: int = 0, min_ctx: int = 0,
         kv_block_size: int = 16, n_seq_max: int = 64, chat_template: str | None = None,
         repack_weights: bool = True, fuse: bool = True, isa: str = "",
         decode_strategy: str = "", decompose: bool = False) -> Model: ...

class Model:
    @property
    def info(self) -> ModelInfo: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def plans_compiled(self) -> int: ...
    @property
    def chat_template(self) -> str: ...
    @overload
    def tokenize(self, text: str, add_special: bool = True, parse_special: bool = True,
                 as_array: Literal[False] = False) -> list[int]: ...
    @overload
    def tokenize(self, text: str, add_special: bool, parse_special: bool,
                 as_array: Literal[True]) -> npt.NDArray[np.int32]: ...
    def detokenize(self, ids: Sequence[int] | npt.NDArray[np.integer]) -> str: ...
    def token_to_piece(self, id: int) -> bytes: ...
    def is_end_of_generation(self, id: int) -> bool: ...
    def apply_chat_template(self, messages: Sequence[dict[str, Any]], add_generation_prompt: bool = True,
                            tools: list[Any] | None = None, **kwargs: Any) -> str: ...
    def session(self, *, kv_size: int = 0, kv_block_size: int = 0, n_seq_max: int = 0,
                cache_type: str = "", batch_invariant: bool | None = None) -> Session: ...
    @overload
    def generate(self, prompt: str | Sequence[int], *, stream: Literal[False] = False,
                 on_piece: PieceCallback | None = None, max_tokens: int = 128, temperature: float = 0.8,
                 top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
                 repeat_penalty: float = 1.0, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                 penalty_last_n: int = 64, seed: int | None = 0xC0FFEE, stop: str | Sequence[str] = (),
                 stop_token_ids: Sequence[int] = (), stop_at_end_of_generation: bool = True,
                 logprobs: bool = False, top_logprobs: int = 0,
                 logit_bias: dict[int, float] | None = None) -> GenerateResult: ...
    @overload
    def generate(self, prompt: str | Sequence[int], *, stream: Literal[True],
                 on_piece: None = None, max_tokens: int = 128, temperature: float = 0.8,
                 top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
                 repeat_penalty: float = 1.0, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                 penalty_last_n: int = 64, seed: int | None = 0xC0FFEE, stop: str | Sequence[str] = (),
                 stop_token_ids: Sequence[int] = (), stop_at_end_of_generation: bool = True,
                 logprobs: bool = False, top_logprobs: int = 0,
                 logit_bias: dict[int, float] | None = None) -> Stream: ...
    @overload
    def chat(self, messages: Sequence[dict[str, Any]], *, stream: Literal[False] = False,
             on_piece: PieceCallback | None = None, max_tokens: int = 128, temperature: float = 0.8,
             top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
             repeat_penalty: float = 1.0, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
             penalty_last_n: int = 64, seed: int | None = 0xC0FFEE, stop: str | Sequence[str] = (),
             stop_token_ids: Sequence[int] = (), stop_at_end_of_generation: bool = True,
             logprobs: bool = False, top_logprobs: int = 0,
             logit_bias: dict[int, float] | None = None) -> GenerateResult: ...
    @overload
    def chat(self, messages: Sequence[dict[str, Any]], *, stream: Literal[True],
             on_piece: None = None, max_tokens: int = 128, temperature: float = 0.8,
             top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
             repeat_penalty: float = 1.0, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
             penalty_last_n: int = 64, seed: int | None = 0xC0FFEE, stop: str | Sequence[str] = (),
             stop_token_ids: Sequence[int] = (), stop_at_end_of_generation: bool = True,
             logprobs: bool = False, top_logprobs: int = 0,
             logit_bias: dict[int, float] | None = None) -> Stream: ...
    def generate_batch(self, prompts: Sequence[str | Sequence[int]], *,
                       on_piece: Callable[[int, str], bool | None] | None = None, max_tokens: int = 128,
                       temperature: float = 0.8, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
                       typical_p: float = 1.0, repeat_penalty: float = 1.0, presence_penalty: float = 0.0,
                       frequency_penalty: float = 0.0, penalty_last_n: int = 64, seed: int | None = 0xC0FFEE,
                       stop: str | Sequence[str] = (), stop_token_ids: Sequence[int] = (),
                       stop_at_end_of_generation: bool = True, logprobs: bool = False, top_logprobs: int = 0,
                       logit_bias: dict[int, float] | None = None) -> list[GenerateResult]: ...
    def tensor(self, name: str) -> npt.NDArray[np.float32]: ...
    def tensor_names(self) -> list[str]: ...
    def graph(self, after_rewrites: bool = False) -> Graph: ...
    def log_likelihood(self, text: str | Sequence[int], add_special: bool = True) -> npt.NDArray[np.float64]: ...
    def perplexity(self, text: str | Sequence[int], add_special: bool = True) -> float: ...

class Session:
    model: Model
    @overload
    def eval(self, ids: Sequence[int] | npt.NDArray[np.integer], all_logits: bool = False,
             capture: None = None) -> npt.NDArray[np.float32]: ...
    @overload
    def eval(self, ids: Sequence[int] | npt.NDArray[np.integer], all_logits: bool,
             capture: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]: ...
    @property
    def logits(self) -> npt.NDArray[np.float32]: ...
    @property
    def tokens(self) -> list[int]: ...
    @property
    def n_past(self) -> int: ...
    @property
    def stats(self) -> dict[str, int]: ...
    def truncate(self, n: int) -> None: ...
    def reset(self) -> None: ...
    @overload
    def generate(self, prompt: str | Sequence[int], *, stream: Literal[False] = False,
                 on_piece: PieceCallback | None = None, max_tokens: int = 128, temperature: float = 0.8,
                 top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
                 repeat_penalty: float = 1.0, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                 penalty_last_n: int = 64, seed: int | None = 0xC0FFEE, stop: str | Sequence[str] = (),
                 stop_token_ids: Sequence[int] = (), stop_at_end_of_generation: bool = True,
                 logprobs: bool = False, top_logprobs: int = 0,
                 logit_bias: dict[int, float] | None = None) -> GenerateResult: ...
    @overload
    def generate(self, prompt: str | Sequence[int], *, stream: Literal[True],
                 on_piece: None = None, max_tokens: int = 128, temperature: float = 0.8,
                 top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
                 repeat_penalty: float = 1.0, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
                 penalty_last_n: int = 64, seed: int | None = 0xC0FFEE, stop: str | Sequence[str] = (),
                 stop_token_ids: Sequence[int] = (), stop_at_end_of_generation: bool = True,
                 logprobs: bool = False, top_logprobs: int = 0,
                 logit_bias: dict[int, float] | None = None) -> Stream: ...
    @overload
    def chat(self, messages: Sequence[dict[str, Any]], *, stream: Literal[False] = False,
             on_piece: PieceCallback | None = None, max_tokens: int = 128, temperature: float = 0.8,
             top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
             repeat_penalty: float = 1.0, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
             penalty_last_n: int = 64, seed: int | None = 0xC0FFEE, stop: str | Sequence[str] = (),
             stop_token_ids: Sequence[int] = (), stop_at_end_of_generation: bool = True,
             logprobs: bool = False, top_logprobs: int = 0,
             logit_bias: dict[int, float] | None = None) -> GenerateResult: ...
    @overload
    def chat(self, messages: Sequence[dict[str, Any]], *, stream: Literal[True],
             on_piece: None = None, max_tokens: int = 128, temperature: float = 0.8,
             top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05, typical_p: float = 1.0,
             repeat_penalty: float = 1.0, presence_penalty: float = 0.0, frequency_penalty: float = 0.0,
             penalty_last_n: int = 64, seed: int | None = 0xC0FFEE, stop: str | Sequence[str] = (),
             stop_token_ids: Sequence[int] = (), stop_at_end_of_generation: bool = True,
             logprobs: bool = False, top_logprobs: int = 0,
             logit_bias: dict[int, float] | None = None) -> Stream: ...

@dataclass
class Node:
    id: int
    op: str
    name: str
    inputs: list[int]
    attrs: dict[str, Any]
    shape: list[int | str]
    dtype: str

@dataclass
class Graph:
    nodes: list[Node]
    outputs: dict[str, int]
    state_updates: list[tuple[int, int]]
    rewrites: list[str]
    after_rewrites: bool
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Node]: ...
    def node(self, name: str) -> Node: ...
    def ops(self) -> dict[str, int]: ...
    def to_json(self) -> str: ...
    def to_dot(self) -> str: ...
    def to_text(self) -> str: ...
