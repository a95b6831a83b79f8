"""MemLens for LlamaIndex: a memory usable where ``Memory`` is (chat engines, agents).

LlamaIndex's ``Memory`` flushes the oldest messages past a token ratio and truncates memory
blocks by priority (llama_index #23093); :class:`MemLensMemory` keeps what a MemLens policy
keeps within ``token_limit``::

    from llama_index.core.chat_engine import SimpleChatEngine
    from memlens.llama_index import MemLensMemory

    memory = MemLensMemory.from_defaults(token_limit=8000, model="gpt-4o")
    engine = SimpleChatEngine.from_defaults(llm=llm, memory=memory)

``get()`` returns the kept ``ChatMessage`` objects themselves (copies where a part was
compressed); an assistant message's tool calls (``additional_kwargs["tool_calls"]``) and the
tool messages answering them are kept or dropped together; the system message and the newest
user message are always kept. ``get_all()`` returns everything put.

Needs ``llama-index-core``; MemLens itself does not depend on it.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import MemoryPool

try:
    from llama_index.core.llms import ChatMessage
    from llama_index.core.memory.types import BaseMemory
    from pydantic import PrivateAttr
except ImportError as e:  # pragma: no cover - exercised only without llama-index-core
    raise ImportError("memlens.llama_index needs llama-index-core: pip install llama-index-core") from e

__all__ = ["MemLensMemory", "to_chat_message"]

_EXTRA = 0x80000000


def _call_dict(call: Any) -> Dict[str, Any]:
    c = call.model_dump() if hasattr(call, "model_dump") else dict(call)
    f = c.get("function") or {}
    args = f.get("arguments", "")
    return {
        "id": c.get("id", ""),
        "type": "function",
        "function": {"name": f.get("name", ""), "arguments": args if isinstance(args, str) else json.dumps(args)},
    }


def to_chat_message(message: ChatMessage) -> Dict[str, Any]:
    """The OpenAI-style message a ``ChatMessage`` stands for, as the engine reads it."""
    role = getattr(message.role, "value", message.role)
    out: Dict[str, Any] = {"role": role, "content": message.content or ""}
    kwargs = message.additional_kwargs or {}
    if kwargs.get("tool_calls"):
        out["tool_calls"] = [_call_dict(c) for c in kwargs["tool_calls"]]
    if role == "tool":
        out["tool_call_id"] = kwargs.get("tool_call_id", "")
    return out


class MemLensMemory(BaseMemory):
    """Chat memory kept by a MemLens policy within ``token_limit`` tokens."""

    token_limit: int = 8000
    model: str = "gpt-4o"
    policy: Any = "window"
    _pool: Any = PrivateAttr(default=None)
    _messages: List[ChatMessage] = PrivateAttr(default_factory=list)

    @classmethod
    def class_name(cls) -> str:
        return "MemLensMemory"

    @classmethod
    def from_defaults(  # type: ignore[override]
        cls,
        chat_history: Optional[List[ChatMessage]] = None,
        token_limit: int = 8000,
        model: str = "gpt-4o",
        policy: Any = "window",
        **_: Any,
    ) -> "MemLensMemory":
        memory = cls(token_limit=token_limit, model=model, policy=policy)
        memory.set(chat_history or [])
        return memory

    @property
    def pool(self) -> MemoryPool:
        if self._pool is None:
            self._pool = MemoryPool(budget=self.token_limit, model=self.model, policy=self.policy)
        return self._pool

    def put(self, message: ChatMessage) -> None:
        self.pool._raw.add(to_chat_message(message))
        self._messages.append(message)

    def get(self, input: Optional[str] = None, **kwargs: Any) -> List[ChatMessage]:
        decided = self.pool._raw.context(input)
        self.pool._last = {k: decided[k] for k in ("tokens", "full_tokens", "over_budget", "evicted")}
        extras = decided["extras"]
        out: List[ChatMessage] = []
        for r in decided["refs"]:
            if r < _EXTRA:
                out.append(self._messages[r])
                continue
            extra = extras[r - _EXTRA]
            if extra["kind"] != "patched":
                raise RuntimeError("this policy summarizes: use one that does not here")
            original = self._messages[extra["message"]]
            out.append(original.model_copy(update={"content": extra["value"].get("content") or ""}))
        return out

    def get_all(self) -> List[ChatMessage]:
        return list(self._messages)

    def set(self, messages: List[ChatMessage]) -> None:
        self.reset()
        for m in messages:
            self.put(m)

    def reset(self) -> None:
        self._pool = None
        self._messages = []
