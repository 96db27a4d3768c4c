"""A judged set of goals on the sample knowledge base (``examples/knowledge_base``), each with the documents
that answer it: what recall at 5 is measured on, per retriever (keyword, vector, hybrid).

Three classes, 12 goals each, written from the documents' subjects before any retriever was run on them:

- ``plain``: worded as the documents are ("rolling restart of the cache tier");
- ``paraphrase``: the same subjects in other words, avoiding the documents' own terms ("the card processor"
  for the payments gateway, "sluggish" for latency);
- ``symptom``: what a user would type in the moment, describing what they see rather than naming it.

A goal counts as recalled when any of its expected documents is among the first task's top 5 passages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from marsrag.rag.knowledge import KnowledgeBase

GoalClass = Literal["plain", "paraphrase", "symptom"]

#: (class, goal, expected documents: paths under the knowledge base folder, as cited).
JUDGED: Final[tuple[tuple[GoalClass, str, tuple[str, ...]], ...]] = (
    # -- plain ---------------------------------------------------------------------------------------------------
    ("plain", "How do I do a rolling restart of a regional cache tier?", ("runbooks/cache-rolling-restart.md",)),
    ("plain", "Pre-warm a cache node from a snapshot", ("runbooks/cache-prewarm-from-snapshot.md",)),
    (
        "plain",
        "What caused the retry storm against the payments gateway?",
        ("incidents/2025-04-23-payments-retry-storm.md", "runbooks/retry-storm.md"),
    ),
    ("plain", "How do we rotate TLS certificates?", ("runbooks/rotate-certificates.md",)),
    ("plain", "Steps of a database failover drill", ("runbooks/database-failover-drill.md",)),
    (
        "plain",
        "How should timeouts, retries and circuit breakers be configured?",
        ("practices/timeouts-and-retries.md",),
    ),
    ("plain", "What are error budgets and how do SLOs use them?", ("practices/slis-slos-and-error-budgets.md",)),
    (
        "plain",
        "Checkout connection pool exhaustion after release 4.18.0",
        ("incidents/2025-02-26-checkout-connection-pool-exhaustion.md",),
    ),
    ("plain", "How do I drain a compute node safely?", ("runbooks/drain-node.md",)),
    ("plain", "Staged canary rollout with checkpoints", ("runbooks/staged-canary-rollout.md",)),
    ("plain", "How to roll back a deploy", ("runbooks/rollback-deploy.md",)),
    ("plain", "Load shedding and graceful degradation", ("practices/load-shedding.md",)),
    # -- paraphrase ----------------------------------------------------------------------------------------------
    (
        "paraphrase",
        "The card processor keeps rejecting charges: what is our playbook?",
        (
            "architecture/payments-gateway.md",
            "incidents/2025-01-18-payments-certificate-expiry.md",
            "incidents/2025-04-23-payments-retry-storm.md",
            "runbooks/retry-storm.md",
        ),
    ),
    (
        "paraphrase",
        "How do we bounce the in-memory storage layer one region at a time?",
        ("runbooks/cache-rolling-restart.md",),
    ),
    (
        "paraphrase",
        "Clients hammering a struggling dependency with repeated attempts",
        (
            "runbooks/retry-storm.md",
            "incidents/2025-04-23-payments-retry-storm.md",
            "practices/timeouts-and-retries.md",
        ),
    ),
    (
        "paraphrase",
        "Renewing expiring credentials used for encrypted service-to-service traffic",
        ("runbooks/rotate-certificates.md", "incidents/2025-01-18-payments-certificate-expiry.md"),
    ),
    (
        "paraphrase",
        "Practising a switch to the standby primary for the orders store",
        ("runbooks/database-failover-drill.md", "incidents/2025-03-14-orders-db-failover-stale-connections.md"),
    ),
    ("paraphrase", "Taking a machine out of rotation without dropping work", ("runbooks/drain-node.md",)),
    ("paraphrase", "Shipping a new build to a small slice of traffic first", ("runbooks/staged-canary-rollout.md",)),
    ("paraphrase", "Why the mean response time hides the slow tail", ("practices/latency-percentiles.md",)),
    (
        "paraphrase",
        "Who leads during a major outage and when do we wake up executives?",
        ("runbooks/incident-command-and-escalation.md",),
    ),
    ("paraphrase", "Writing a blameless review after something broke", ("practices/postmortem-culture.md",)),
    ("paraphrase", "How much spare room should we keep before the holiday peak?", ("practices/capacity-planning.md",)),
    (
        "paraphrase",
        "Name resolution changes that took hours to reach every client",
        ("incidents/2025-02-04-catalog-dns-ttl-migration.md",),
    ),
    # -- symptom -------------------------------------------------------------------------------------------------
    (
        "symptom",
        "The site is sluggish right after we restarted some servers",
        (
            "incidents/2025-05-19-checkout-latency-cold-cache-restarts.md",
            "practices/cache-warmup-and-hit-rates.md",
            "runbooks/cache-prewarm-from-snapshot.md",
            "runbooks/cache-rolling-restart.md",
        ),
    ),
    (
        "symptom",
        "Customers can't pay in Asia since this morning",
        ("incidents/2025-01-18-payments-certificate-expiry.md", "architecture/payments-gateway.md"),
    ),
    (
        "symptom",
        "Orders are piling up and not getting shipped during the sale",
        ("incidents/2025-05-09-order-queue-backlog-spring-sale.md", "architecture/order-queue.md"),
    ),
    (
        "symptom",
        "Buying stopped working after the new release went out",
        (
            "incidents/2025-02-26-checkout-connection-pool-exhaustion.md",
            "runbooks/rollback-deploy.md",
            "runbooks/scale-connection-pool.md",
        ),
    ),
    (
        "symptom",
        "Product pages show errors in one region after a networking change",
        ("incidents/2025-02-04-catalog-dns-ttl-migration.md", "architecture/catalog-and-search.md"),
    ),
    (
        "symptom",
        "Search results broke right after someone changed a setting",
        ("incidents/2025-04-02-search-bad-config-push.md", "runbooks/rollback-deploy.md"),
    ),
    (
        "symptom",
        "Saving orders fails after the primary database switched over",
        ("incidents/2025-03-14-orders-db-failover-stale-connections.md", "runbooks/database-failover-drill.md"),
    ),
    ("symptom", "Our pager goes off all night for blips nobody needs to act on", ("practices/alerting-on-slos.md",)),
    (
        "symptom",
        "The app servers are all waiting to get a handle to the database",
        ("runbooks/scale-connection-pool.md", "incidents/2025-02-26-checkout-connection-pool-exhaustion.md"),
    ),
    ("symptom", "Everything is overloaded: should we turn some features off?", ("practices/load-shedding.md",)),
    (
        "symptom",
        "We can't tell what is slow because there are no dashboards or traces",
        ("practices/observability.md",),
    ),
    (
        "symptom",
        "Half the images and static files load slowly for visitors abroad",
        ("architecture/cdn-and-cache-tier.md",),
    ),
)


def recalled(kb: KnowledgeBase, retrievers: Sequence[str], limit: int = 5) -> dict[GoalClass, list[bool]]:
    """Per class, per goal (in order): whether an expected document is among ``retrievers``' top ``limit``."""
    found: dict[GoalClass, list[bool]] = {"plain": [], "paraphrase": [], "symptom": []}
    for kind, goal, expected in JUDGED:
        results = kb.find(goal, limit, retrievers=retrievers).results
        paths = {str(hit["source"]).split("#")[0].removeprefix("knowledge_base/") for hit in results}
        found[kind].append(bool(paths & set(expected)))
    return found
