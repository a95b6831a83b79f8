"""A LangGraph ReAct agent whose model sees a MemLens-managed context (memlens.langchain), with a
scripted stub model: no network. Run: python examples/python/langgraph_agent.py"""

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

from memlens.langchain import pre_model_hook


class StubModel(GenericFakeChatModel):
    """Plays back scripted replies; accepts tools like a real chat model."""

    def bind_tools(self, tools, **kwargs):
        return self


@tool
def search_fares(destination: str) -> str:
    """Fares to a destination."""
    return f"fares to {destination}: " + "flight option, " * 150


replies = [AIMessage("", tool_calls=[{"id": f"c{i}", "name": "search_fares", "args": {"destination": city}}])
           for i, city in enumerate(["Lisbon", "Porto", "Madrid", "Seville"])]
model = StubModel(messages=iter(replies + [AIMessage("Porto is the cheapest.")]))
hook = pre_model_hook(max_tokens=1200, model="gpt-4o", policy="window")
agent = create_react_agent(model, [search_fares], pre_model_hook=hook, prompt="You are a travel agent.")

result = agent.invoke({"messages": [HumanMessage("Where can I fly cheapest this weekend?")]})
print(result["messages"][-1].content)
print(f"state: {len(result['messages'])} messages; the model's last context: "
      f"{hook.trimmer.last_tokens} tokens of a 1,200 budget")
