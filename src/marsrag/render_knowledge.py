"""Printing the knowledge base for people in a terminal (Rich): its collections, then its documents.

Every text from data goes through :func:`~marsrag.render_text.shown` (control characters visible, no markup).
Long values (a default collection is a resolved folder) fold within their column, so 80 columns stay readable.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table

from marsrag.render_text import console, shown


def print_knowledge(listing: dict[str, Any]) -> None:
    """Print a ``kb list`` document (:meth:`marsrag.rag.manage.KnowledgeListing.to_dict`): two tables."""
    out = console()
    collections = Table(title="Collections", title_justify="left", box=None, padding=(0, 2))
    collections.add_column("collection", overflow="fold", ratio=1)
    collections.add_column("documents", justify="right", no_wrap=True)
    collections.add_column("chunks", justify="right", no_wrap=True)
    collections.add_column("last ingested (UTC)", no_wrap=True)
    for item in listing["collections"]:
        collections.add_row(
            shown(item["name"]), shown(item["documents"]), shown(item["chunks"]), shown(_when(item["ingested_at"]))
        )
    out.print(collections)
    out.print()
    documents = Table(title="Documents", title_justify="left", box=None, padding=(0, 2))
    documents.add_column("collection", overflow="fold", ratio=1)
    documents.add_column("path", overflow="fold", ratio=2)
    documents.add_column("chunks", justify="right", no_wrap=True)
    documents.add_column("ingested (UTC)", no_wrap=True)
    for item in listing["documents"]:
        documents.add_row(
            shown(item["collection"]), shown(item["path"]), shown(item["chunks"]), shown(_when(item["ingested_at"]))
        )
    out.print(documents)
    chunks = sum(item["chunks"] for item in listing["collections"])
    for item in listing.get("embeddings", []):
        out.print(
            f"Embedded with {shown(item['embedder'])} ({shown(item['dimension'])} dimensions): "
            f"{shown(item['chunks'])} of {chunks} chunks",
            markup=False,
        )
    if chunks and not listing.get("embeddings"):
        out.print("Not embedded: keyword search only (marsrag ingest embeds it with the configured embedder)")


def _when(moment: str) -> str:
    """``2026-12-05 12:06`` from an ISO 8601 UTC time: to the minute, as a person reads it."""
    return moment[:16].replace("T", " ")
