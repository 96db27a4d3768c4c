"""LLMs for CrewAI that MarsRAG ships: the replay LLM for tests and demos (imports CrewAI)."""
