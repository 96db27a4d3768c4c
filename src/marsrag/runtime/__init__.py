"""The MarsRAG orchestrator: runs workflows, chains loops into hooks, routes, stores typed state."""
