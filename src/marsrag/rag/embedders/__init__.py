"""Embedders: text to vectors for the knowledge base's vector search (the other half of hybrid retrieval).

One interface, :class:`~marsrag.rag.embedders.base.Embedder`, two implementations: the embedded default,
WordLlama's static 256-dimension embeddings shipped in its wheel (:mod:`.wordllama`: offline, no key, no model
hub), and any OpenAI-compatible ``/v1/embeddings`` endpoint (:mod:`.endpoint`: Ollama, llama.cpp's server,
vLLM, OpenAI). :func:`~marsrag.rag.embedders.select.resolve_embedder` turns a setting into one.
"""
