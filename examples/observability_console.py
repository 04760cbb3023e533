"""The README's Observability example: spans printed to the console, costs of one request."""

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from pywrapai_graph import LLM, cost_scope
from pywrapai_graph.testing import ScriptedChatModel

provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
trace.set_tracer_provider(provider)  # from here on, every call makes spans
llm = LLM(provider=ScriptedChatModel(["Hi!"], provider="openai"), model="gpt-4o-mini")
with cost_scope("request-42") as scope:  # or LLM(provider="openai") with OPENAI_API_KEY
    llm.chat("Hello")  # prints the "chat gpt-4o-mini" span, GenAI attributes included
print(f"request cost ${scope.cost_usd:.6f}, {scope.usage.total_tokens} tokens")
