"""Each drop-in with the real library it drops into (pinned in scripts/py.sh), driven by a stub
model: no network."""

import asyncio
import json

import memlens
import pytest

# -- LangChain / LangGraph ------------------------------------------------------------------

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages import trim_messages as langchain_trim
from langchain_core.tools import tool
from memlens.langchain import Trimmer, pre_model_hook, trim_messages


def conversation(turns: int):
    msgs = [SystemMessage("You are a travel agent."), HumanMessage("Find me a flight to Lisbon.")]
    for i in range(turns):
        msgs.append(AIMessage("", tool_calls=[{"id": f"c{i}", "name": "search", "args": {"q": f"fare {i}"}}]))
        msgs.append(ToolMessage("fare data " * 120, tool_call_id=f"c{i}"))
        msgs.append(AIMessage(f"Option {i} costs {100 + i} EUR."))
    msgs.append(HumanMessage("Which one is cheapest?"))
    return msgs


def check_pairs(msgs):
    open_calls = set()
    for m in msgs:
        if isinstance(m, ToolMessage):
            assert m.tool_call_id in open_calls, "orphaned ToolMessage"
            open_calls.discard(m.tool_call_id)
        else:
            assert not open_calls, f"tool calls {open_calls} without results"
            open_calls |= {c["id"] for c in getattr(m, "tool_calls", None) or []}
    assert not open_calls


def test_trim_messages_keeps_pairs_system_and_the_callers_objects():
    msgs = conversation(6)
    out = trim_messages(msgs, max_tokens=700, token_counter="approximate")
    assert out[0] is msgs[0] and out[-1] is msgs[-1]
    assert all(any(m is o for o in msgs) for m in out)
    check_pairs(out)
    assert memlens.count_tokens("".join(str(m.content) for m in out)) < 700
    # LangChain's own, as documented, also fits the budget; compared here on the same input.
    theirs = langchain_trim(msgs, max_tokens=700, token_counter="approximate", strategy="last")
    assert theirs[-1] is msgs[-1]
    with pytest.raises(ValueError, match="strategy"):
        trim_messages(msgs, max_tokens=700, strategy="first")


def test_trim_messages_takes_a_prompt_value_as_langchains_does():
    from langchain_core.prompt_values import ChatPromptValue

    msgs = conversation(6)
    out = trim_messages(ChatPromptValue(messages=msgs), max_tokens=700)
    assert out == trim_messages(msgs, max_tokens=700)
    assert out[-1] is msgs[-1]
    check_pairs(out)


def test_the_trimmer_adds_only_new_messages_and_restarts_on_a_new_history():
    trimmer = Trimmer(max_tokens=700)
    msgs = conversation(3)
    first = trimmer(msgs)
    pool = trimmer._pool
    msgs += [AIMessage("Option 3 is cheapest."), HumanMessage("Book it.")]
    second = trimmer(msgs)
    assert trimmer._pool is pool and second[-1] is msgs[-1]
    assert pool.stats()["messages"] == len(msgs)
    other = conversation(1)
    assert trimmer(other)[-1] is other[-1] and trimmer._pool is not pool
    assert first[0] is msgs[0]


class ToolCallingFake(GenericFakeChatModel):
    """A scripted chat model that records what it was sent (and accepts tools)."""

    seen: list = []

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def test_pre_model_hook_in_a_langgraph_react_agent():
    from langgraph.prebuilt import create_react_agent

    @tool
    def search(q: str) -> str:
        """Search fares."""
        return "fare data " * 120

    script = [AIMessage("", tool_calls=[{"id": f"c{i}", "name": "search", "args": {"q": str(i)}}]) for i in range(5)]
    model = ToolCallingFake(messages=iter(script + [AIMessage("Option 2 is cheapest.")]))
    model.seen = []
    hook = pre_model_hook(max_tokens=500)
    agent = create_react_agent(model, [search], pre_model_hook=hook, prompt="You are a travel agent.")
    result = agent.invoke({"messages": [HumanMessage("Find the cheapest fare.")]})
    assert result["messages"][-1].content == "Option 2 is cheapest."
    assert len(result["messages"]) == 12  # the state keeps the whole history
    assert len(model.seen) == 6
    for sent in model.seen:
        check_pairs(sent)
        assert any(isinstance(m, HumanMessage) for m in sent)
    assert hook.trimmer.last_tokens <= 500
    assert len(model.seen[-1]) < len(result["messages"])  # something was trimmed


# -- OpenAI Agents SDK ------------------------------------------------------------------------

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.memory import Session
from agents.models.interface import Model
from agents.usage import Usage
from memlens.openai_agents import MemLensSession
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

set_tracing_disabled(True)  # no network: the SDK would upload traces


class StubModel(Model):
    """Calls the tool once per run, then answers; records every input it is given."""

    def __init__(self):
        self.inputs = []

    async def get_response(self, system_instructions, input, model_settings, tools, output_schema,
                           handoffs, tracing, **kwargs):
        self.inputs.append(list(input) if isinstance(input, list) else input)
        n = len(self.inputs)
        if n % 2 == 1:
            out = [ResponseFunctionToolCall(type="function_call", call_id=f"call{n}", name="lookup",
                                            arguments=json.dumps({"order": f"W{n}"}))]
        else:
            out = [ResponseOutputMessage(id=f"m{n}", type="message", role="assistant", status="completed",
                                         content=[ResponseOutputText(type="output_text", text=f"Done {n}.", annotations=[])])]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


@function_tool
def lookup(order: str) -> str:
    """Look up an order."""
    return f"order {order}: " + "status shipped, " * 80


def test_session_keeps_the_budget_across_runner_turns():
    model = StubModel()
    agent = Agent(name="support", instructions="Be brief.", model=model, tools=[lookup])
    session = MemLensSession("user-1", budget=400, model="gpt-4o")
    assert isinstance(session, Session)

    async def run():
        for i in range(6):
            result = await Runner.run(agent, f"Where is order number {i}?", session=session)
            assert result.final_output.startswith("Done")

    asyncio.run(run())
    assert len(session.all_items) == 6 * 4  # user, call, output, answer per run
    for sent in model.inputs:
        calls = {i["call_id"] for i in sent if isinstance(i, dict) and i.get("type") == "function_call"}
        outputs = {i["call_id"] for i in sent if isinstance(i, dict) and i.get("type") == "function_call_output"}
        assert calls == outputs, "a call without its output, or the reverse"
    assert len(model.inputs[-1]) < len(session.all_items)
    assert session.pool._last["tokens"] <= 400

    async def pop():
        last = await session.pop_item()
        assert last is session.all_items[-1] or last not in session.all_items
        await session.clear_session()
        assert await session.get_items() == []

    asyncio.run(pop())


# -- LlamaIndex ------------------------------------------------------------------------------

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms import ChatMessage, MessageRole
from llama_index.core.llms.mock import MockLLM
from memlens.llama_index import MemLensMemory


def test_memory_in_a_llama_index_chat_engine():
    memory = MemLensMemory.from_defaults(token_limit=300, model="gpt-4o")
    engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=40), memory=memory)
    for i in range(10):
        engine.chat(f"question {i} about flights and fares to Lisbon")
    assert len(memory.get_all()) == 20
    kept = memory.get()
    assert 0 < len(kept) < 20 and memory.pool._last["tokens"] <= 300
    assert all(any(m is o for o in memory.get_all()) for m in kept)


def test_memory_keeps_tool_calls_with_their_results():
    call = ChatMessage(role=MessageRole.ASSISTANT, content="", additional_kwargs={"tool_calls": [
        {"id": "t1", "type": "function", "function": {"name": "search", "arguments": "{}"}}]})
    result = ChatMessage(role=MessageRole.TOOL, content="fares " * 300, additional_kwargs={"tool_call_id": "t1"})
    history = [ChatMessage(role=MessageRole.SYSTEM, content="Be brief."),
               ChatMessage(role=MessageRole.USER, content="Search fares."), call, result,
               ChatMessage(role=MessageRole.USER, content="Cheapest?")]
    memory = MemLensMemory.from_defaults(chat_history=history, token_limit=120)
    kept = memory.get()
    assert (call in kept) == (result in kept)
    assert kept[0] is history[0] and kept[-1] is history[-1]
    assert asyncio.run(memory.aget()) == kept
