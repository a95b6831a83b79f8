"""An OpenAI Agents SDK agent with a MemLensSession (memlens.openai_agents): the history sent
each turn stays under the budget. A stub model, no network. Run:
python examples/python/openai_agents_session.py"""

import asyncio
import json

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from memlens.openai_agents import MemLensSession

set_tracing_disabled(True)


class StubModel(Model):
    """Looks the order up, then answers."""

    def __init__(self):
        self.calls = 0

    async def get_response(self, system_instructions, input, *args, **kwargs):
        self.calls += 1
        if self.calls % 2:
            order = f"W{1000 + self.calls}"
            out = [ResponseFunctionToolCall(type="function_call", call_id=f"call{self.calls}", name="lookup",
                                            arguments=json.dumps({"order": order}))]
        else:
            out = [ResponseOutputMessage(id=f"m{self.calls}", type="message", role="assistant", status="completed",
                                         content=[ResponseOutputText(type="output_text", text="It has shipped.",
                                                                     annotations=[])])]
        return ModelResponse(output=out, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


@function_tool
def lookup(order: str) -> str:
    """Look up an order."""
    return f"order {order}: " + "status shipped, carrier DHL, " * 60


async def main():
    session = MemLensSession("customer-42", budget=1000, model="gpt-4o")
    agent = Agent(name="support", instructions="Be brief.", model=StubModel(), tools=[lookup])
    for question in ["Where is my order?", "And the second one?", "The third?", "Thanks, one more?"]:
        result = await Runner.run(agent, question, session=session)
        sent = session.pool._last
        print(f"{question!r}: {result.final_output} (history sent at the run's start: "
              f"{sent['tokens']} tokens; {len(session.all_items)} items in the session)")


asyncio.run(main())
