"""MemLens for the OpenAI Agents SDK: a ``Session`` that keeps the conversation under a budget.

The SDK's sessions return the whole history on every turn (openai-agents-python #1539);
:class:`MemLensSession` returns what a MemLens policy keeps of it::

    from agents import Agent, Runner
    from memlens.openai_agents import MemLensSession

    session = MemLensSession("user-42", budget=8000, model="gpt-4o")
    await Runner.run(agent, "Where is my order?", session=session)

Items are the SDK's own (Responses API input items) and come back as they were added, or as
copies with a compressed ``output`` / ``content``. A ``function_call`` and its
``function_call_output`` are kept or dropped together; the newest user message is always kept.
Each item is one message to the engine: a function call is an assistant message with one tool
call, its output a tool message, a reasoning item an assistant message with its summary as
reasoning. Not handled: a reasoning model's requirement that a kept function call keep the
reasoning item before it (use a policy that keeps recent messages, ``protect.recent_messages``).

Needs ``openai-agents``; MemLens itself does not depend on it.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import MemoryPool, Policy

try:
    from agents.memory import SessionABC
except ImportError as e:  # pragma: no cover - exercised only without openai-agents
    raise ImportError("memlens.openai_agents needs openai-agents: pip install openai-agents") from e

__all__ = ["MemLensSession", "to_chat_message"]

_EXTRA = 0x80000000
_TEXT_PARTS = ("input_text", "output_text", "text", "refusal", "summary_text")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text") or p.get("refusal") or "")
            for p in content
            if isinstance(p, dict) and p.get("type") in _TEXT_PARTS
        )
    return "" if content is None else json.dumps(content)


def to_chat_message(item: Dict[str, Any]) -> Dict[str, Any]:
    """The chat message an SDK input item stands for, as the engine reads it."""
    kind = item.get("type")
    role = item.get("role")
    if kind in (None, "message") and role in ("user", "system", "developer", "assistant"):
        return {"role": "system" if role == "developer" else role, "content": _text(item.get("content"))}
    if kind == "function_call":
        call = {"name": item.get("name", ""), "arguments": item.get("arguments", "")}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": item["call_id"], "type": "function", "function": call}],
        }
    if kind == "function_call_output":
        return {"role": "tool", "tool_call_id": item["call_id"], "content": _text(item.get("output"))}
    if kind == "reasoning":
        summary = _text(item.get("summary")) or "[reasoning]"
        return {"role": "assistant", "content": None, "reasoning_content": summary}
    # Hosted tool calls and other items: what the model sees is their JSON.
    return {"role": "assistant", "content": json.dumps(item, default=str)}


def _patched(item: Dict[str, Any], value: Dict[str, Any]) -> Dict[str, Any]:
    if item.get("type") == "function_call_output":
        return dict(item, output=value.get("content") or "")
    if "content" in item:
        return {"role": item.get("role", "assistant"), "content": value.get("content") or ""}
    return item


class MemLensSession(SessionABC):
    """A Session whose ``get_items`` is the context a MemLens policy keeps within ``budget``."""

    def __init__(
        self,
        session_id: str,
        *,
        budget: int,
        model: str = "gpt-4o",
        policy: Policy = "window",
    ) -> None:
        self.session_id = session_id
        self.session_settings = None
        self._options = {"budget": budget, "model": model, "policy": policy}
        self._items: List[Dict[str, Any]] = []
        self.pool = MemoryPool(**self._options)

    def _rebuild(self) -> None:
        self.pool = MemoryPool(**self._options)
        for item in self._items:
            self.pool._raw.add(to_chat_message(item))

    async def add_items(self, items: List[Any]) -> None:
        for item in items:
            item = dict(item) if not isinstance(item, dict) else item
            self.pool._raw.add(to_chat_message(item))
            self._items.append(item)

    async def get_items(self, limit: Optional[int] = None) -> List[Any]:
        decided = self.pool._raw.context(None)
        self.pool._last = {k: decided[k] for k in ("tokens", "full_tokens", "over_budget", "evicted")}
        extras = decided["extras"]
        out: List[Any] = []
        for r in decided["refs"]:
            if r < _EXTRA:
                out.append(self._items[r])
            else:
                extra = extras[r - _EXTRA]
                if extra["kind"] != "patched":
                    raise RuntimeError("this policy summarizes: use one that does not in a session")
                out.append(_patched(self._items[extra["message"]], extra["value"]))
        return out[-limit:] if limit else out

    async def pop_item(self) -> Optional[Any]:
        if not self._items:
            return None
        item = self._items.pop()
        self._rebuild()  # the engine cannot forget a message: replay the rest
        return item

    async def clear_session(self) -> None:
        self._items = []
        self._rebuild()

    @property
    def all_items(self) -> List[Any]:
        """Everything added, kept or not."""
        return list(self._items)
