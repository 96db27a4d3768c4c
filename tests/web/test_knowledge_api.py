"""The API's knowledge reads and runs kept to collections, through the real app over a real SQLite file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from marsrag.rag import KnowledgeBase
from marsrag.rag.manage import listing
from tests.conftest import REPO
from tests.rag.conftest import write
from tests.web.conftest import Site, answer

TOKEN = "s3cret-token-" + "x" * 24


def filled(site: Site, tmp_path: Path) -> None:
    """The sample knowledge base as ``handbook``, a note as ``notes``."""
    write(tmp_path / "notes", "airlock.md", "# Airlock\n\nCycle the airlock twice before the cache restart.\n")
    with KnowledgeBase.open(site.db) as kb:
        kb.ingest([REPO / "examples" / "knowledge_base"], collection="handbook")
        kb.ingest([tmp_path / "notes"], collection="notes")


def test_the_knowledge_read_is_the_kb_list_document(site: Site, tmp_path: Path) -> None:
    """Empty, then the same JSON as ``kb list --format json``; one collection; an unknown one is 422 with hints."""
    assert site.client.get("/api/knowledge").json() == {"collections": [], "documents": [], "embeddings": []}
    filled(site, tmp_path)
    response = site.client.get("/api/knowledge")
    assert response.status_code == 200
    assert response.json() == listing(db=site.db).to_dict()
    notes = site.client.get("/api/knowledge", params={"collection": "notes"}).json()
    assert [c["name"] for c in notes["collections"]] == ["notes"]
    assert [(d["path"], d["chunks"]) for d in notes["documents"]] == [("notes/airlock.md", 1)]
    unknown = site.client.get("/api/knowledge", params={"collection": "note"})
    assert unknown.status_code == 422
    assert unknown.json()["field"] == "collection" and "did you mean 'notes'" in unknown.json()["detail"]


def test_a_run_request_keeps_to_its_collections(site: Site, tmp_path: Path) -> None:
    """``collections: ["notes"]``: the run document records them and every retrieved passage is a note's."""
    filled(site, tmp_path)
    run_id = site.start("Checkout latency breached its SLO after the cache restart", collections=["notes"])
    document = site.client.get(f"/api/runs/{run_id}").json()
    assert document["collections"] == ["notes"]
    sources = [r["source"] for t in document["tasks"] for r in (t["retrieval"] or {}).get("results", [])]
    assert sources and all(source.startswith("notes/") for source in sources)
    everything = site.start("Checkout latency breached its SLO after the cache restart")
    assert site.client.get(f"/api/runs/{everything}").json()["collections"] is None


def test_an_unknown_or_empty_collection_list_is_refused_and_nothing_is_stored(site: Site, tmp_path: Path) -> None:
    """422 with the field and a JSON reason naming the collection; an empty list too; no run is stored."""
    filled(site, tmp_path)
    refused = site.client.post("/api/runs", json={"goal": "Cache restart", "collections": ["notes", "handbok"]})
    assert refused.status_code == 422
    body = refused.json()
    assert body["field"] == "collections" and "unknown collection 'handbok'" in body["detail"]
    assert "did you mean 'handbook'" in body["detail"]
    empty = site.client.post("/api/runs", json={"goal": "Cache restart", "collections": []})
    assert empty.status_code == 422 and empty.json()["field"] == "collections"
    blank = site.client.post("/api/runs", json={"goal": "Cache restart", "collections": [""]})
    assert blank.status_code == 422
    assert site.client.get("/api/runs").json() == []


def test_off_loopback_the_knowledge_read_needs_the_token(site_factory: Callable[..., Site]) -> None:
    """The same auth as every API route: 401 without the bearer token, the listing with it."""
    site = site_factory([answer()], host="0.0.0.0", token=TOKEN)
    refused = site.client.get("/api/knowledge")
    assert refused.status_code == 401 and refused.json()["error"] == "unauthorized"
    allowed = site.client.get("/api/knowledge", headers={"Authorization": f"Bearer {TOKEN}"})
    assert allowed.status_code == 200 and allowed.json() == {"collections": [], "documents": [], "embeddings": []}


def test_the_openapi_schema_types_the_knowledge_read(site: Site) -> None:
    """``GET /api/knowledge`` answers a typed model with real examples; a run request documents ``collections``."""
    schema = site.client.get("/openapi.json").json()
    operation = schema["paths"]["/api/knowledge"]["get"]
    assert operation["tags"] == ["knowledge"]
    ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
    assert ok == {"$ref": "#/components/schemas/KnowledgeListing"}
    models = schema["components"]["schemas"]
    assert models["KnowledgeCollection"]["examples"][0]["name"] == "handbook"
    assert models["KnowledgeDocument"]["examples"][0]["path"] == "kb/runbook.md"
    assert set(models["KnowledgeDocument"]["properties"]) == {
        "collection",
        "path",
        "chunks",
        "size",
        "source",
        "ingested_at",
    }
    assert "collections" in models["RunRequest"]["properties"]
    assert "collections" in models["RunDocument"]["properties"]
