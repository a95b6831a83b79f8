"""A LlamaIndex chat engine with MemLensMemory (memlens.llama_index) and LlamaIndex's MockLLM:
no network. Run: python examples/python/llama_index_memory.py"""

from llama_index.core.chat_engine import SimpleChatEngine
from llama_index.core.llms.mock import MockLLM

from memlens.llama_index import MemLensMemory

memory = MemLensMemory.from_defaults(token_limit=400, model="gpt-4o", policy="value")
engine = SimpleChatEngine.from_defaults(llm=MockLLM(max_tokens=60), memory=memory)
for i in range(8):
    engine.chat(f"Question {i}: what changed in the fare rules for route {i}?")
print(f"{len(memory.get_all())} messages put, {len(memory.get())} sent in "
      f"{memory.pool._last['tokens']} tokens (budget 400)")
