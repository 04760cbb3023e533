"""The reference's prompt versioning: two sessions on two prompt versions (A/B test).

Needs a provider: ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for a local or proxy server).
"""

from pathlib import Path

from pywrapai import LLM
from pywrapai_graph import GraphLLM, PromptRegistry

PROMPTS = str(Path(__file__).resolve().parent / "system_prompts_registry")

llm = LLM(provider="anthropic", model="claude-haiku-4-5-20251001")

registry = PromptRegistry(prompts_dir=PROMPTS)
print(registry.list_files())

# Version A — using v1
graph_v1 = GraphLLM(
    llm=llm,
    enable_system_prompt_versioning=True,
    prompt_file="support-agent-v1.txt",
    prompts_dir=PROMPTS,
)

# Version B — using v2 for A/B testing
graph_v2 = GraphLLM(
    llm=llm,
    enable_system_prompt_versioning=True,
    prompt_file="support-agent-v2.txt",
    prompts_dir=PROMPTS,
)

print(graph_v1.chat("Where is my order?").content)
print(graph_v2.chat("Where is my order?").content)
for prompt_file, cost in sorted(llm.tokens.cost_by_prompt_file().items(), key=str):
    print(f"{prompt_file}: ${cost:.6f}")
