"""MemLens for LangChain and LangGraph: a ``trim_messages`` that keeps tool calls with their
results, and a ``pre_model_hook`` for LangGraph's ``create_react_agent``.

``trim_messages`` takes the arguments LangChain's does (``max_tokens``, ``token_counter``,
``strategy``, ``include_system``, ``start_on`` ...), so swapping the import is enough::

    from memlens.langchain import trim_messages
    trimmed = trim_messages(messages, max_tokens=4000, token_counter=model)

It decides with a MemLens policy (``policy="window"`` by default: the newest messages that fit,
like ``strategy="last"``), never separates an ``AIMessage``'s tool calls from their
``ToolMessage`` results (LangChain's can: langchain #33245, #35313), always keeps the system
message and the newest human message, and counts tokens exactly with the model's tokenizer
(``model=``; the ``token_counter`` argument is accepted for compatibility, not called).
Kept messages are the very objects passed in; a message with a compressed or removed part is a
copy (``model_copy``) with that part changed.

For an agent loop, :class:`Trimmer` keeps its pool between calls and adds only the messages that
are new, so each call costs the new messages, not the history; :func:`pre_model_hook` wraps one
for ``create_react_agent(..., pre_model_hook=...)``.

Needs ``langchain-core`` (and ``langgraph`` for the hook); MemLens itself does not depend on them.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence

from . import MemoryPool, Policy

try:
    from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
except ImportError as e:  # pragma: no cover - exercised only without langchain-core
    raise ImportError("memlens.langchain needs langchain-core: pip install langchain-core") from e

__all__ = ["Trimmer", "pre_model_hook", "trim_messages"]

_EXTRA = 0x80000000


class Trimmer:
    """An incremental ``trim_messages``: call it with the conversation so far, every turn.

    Messages already seen (the same objects, in the same order) are not added again; when the
    list no longer starts with them (a new conversation, an edited history), the pool starts
    over.
    """

    def __init__(
        self, *, max_tokens: int, model: str = "gpt-4o", policy: Policy = "window"
    ) -> None:
        self.max_tokens = max_tokens
        self.model = model
        self.policy = policy
        self._pool: Optional[MemoryPool] = None
        self._seen: List[BaseMessage] = []
        self._last_input: Any = None

    def _reset(self) -> MemoryPool:
        self._pool = MemoryPool(model=self.model, budget=self.max_tokens, policy=self.policy)
        self._seen = []
        self._last_input: Any = None
        return self._pool

    def __call__(self, messages: Sequence[Any]) -> List[BaseMessage]:
        pool = self._pool
        n = len(self._seen)
        # The history is the one seen before when its last seen message is the same object at
        # the same place: O(1), so a call costs only what is new.
        if pool is None or len(messages) < n or (n and messages[n - 1] is not self._last_input):
            pool, n = self._reset(), 0
        new = convert_to_messages(messages[n:])
        for m, d in zip(new, convert_to_openai_messages(new)):
            pool._raw.add(d)
            self._seen.append(m)
        if len(messages):
            self._last_input = messages[-1]
        decided = pool._raw.context(None)
        pool._last = {k: decided[k] for k in ("tokens", "full_tokens", "over_budget")}
        extras = decided["extras"]
        out: List[BaseMessage] = []
        for r in decided["refs"]:
            if r < _EXTRA:
                out.append(self._seen[r])
                continue
            extra = extras[r - _EXTRA]
            if extra["kind"] != "patched":
                raise RuntimeError("this policy summarizes: use one that does not with LangChain")
            out.append(_patched(self._seen[extra["message"]], extra["value"]))
        return out

    @property
    def last_tokens(self) -> Optional[int]:
        """Tokens of the latest result (the pool's exact count)."""
        return None if self._pool is None or self._pool._last is None else self._pool._last["tokens"]


def _patched(original: BaseMessage, value: Dict[str, Any]) -> BaseMessage:
    """The original message with the parts MemLens changed: its content, and for an AIMessage
    the tool calls still there."""
    update: Dict[str, Any] = {"content": value.get("content") or ""}
    if getattr(original, "tool_calls", None):
        kept = {c["id"] for c in value.get("tool_calls") or []}
        update["tool_calls"] = [c for c in original.tool_calls if c.get("id") in kept]
    return original.model_copy(update=update)


def trim_messages(
    messages: Any,
    *,
    max_tokens: int,
    token_counter: Any = None,
    strategy: str = "last",
    allow_partial: bool = False,
    end_on: Any = None,
    start_on: Any = None,
    include_system: bool = True,
    text_splitter: Any = None,
    model: str = "gpt-4o",
    policy: Policy = None,
) -> List[BaseMessage]:
    """``langchain_core.messages.trim_messages`` with MemLens' guarantees (see the module docs).

    ``strategy="last"`` (LangChain's default and the only one an agent wants: the newest
    messages) maps to the ``window`` policy unless ``policy=`` names another. The system message
    is always kept and the result always ends on the newest human message's turn, so
    ``include_system``, ``start_on`` and ``end_on`` need not be set; ``allow_partial`` and
    ``text_splitter`` are not supported (MemLens compresses whole parts, it never cuts a message).
    ``messages`` is a sequence of messages (or message-like dicts and tuples) or a
    ``PromptValue``, as LangChain's accepts.
    """
    if strategy != "last":
        raise ValueError('memlens.langchain.trim_messages supports strategy="last" only')
    if allow_partial or text_splitter is not None:
        raise ValueError("allow_partial / text_splitter are not supported: MemLens never cuts a message")
    del token_counter, end_on, start_on, include_system  # accepted for compatibility
    if hasattr(messages, "to_messages"):  # a PromptValue, as LangChain's accepts
        messages = messages.to_messages()
    return Trimmer(max_tokens=max_tokens, model=model, policy=policy or "window")(messages)


def pre_model_hook(
    *, max_tokens: int, model: str = "gpt-4o", policy: Policy = "window"
) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
    """A LangGraph ``pre_model_hook`` that sends the model a MemLens-managed context while the
    graph's state keeps the whole history (``llm_input_messages``)."""
    trimmer = Trimmer(max_tokens=max_tokens, model=model, policy=policy)

    def hook(state: Dict[str, Any]) -> Dict[str, Any]:
        return {"llm_input_messages": trimmer(state["messages"])}

    hook.trimmer = trimmer  # type: ignore[attr-defined]
    return hook
