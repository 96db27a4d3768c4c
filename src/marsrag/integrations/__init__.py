"""Bindings to other frameworks. Each module imports its framework lazily: import them only when needed."""
