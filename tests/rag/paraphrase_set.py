"""A judged set of goals on the sample knowledge base (``examples/knowledge_base``), each with the documents
that answer it: what recall at 5 is measured on, per retriever (keyword, vector, hybrid).

Three classes, 12 goals each, written from the documents' subjects before any retriever was run on them:

- ``plain``: worded as the documents are ("rolling restart of the cache tier");
- ``paraphrase``: the same subjects in other words, avoiding the documents' own terms ("the card processor"
  for the payments gateway, "sluggish" for latency);
- ``symptom``: what a user would type in the moment, describing what they see rather than naming it.

A goal counts as recalled when any of its expected documents is among the first task's top 5 passages.

:data:`HELD_OUT` is a second set of the issue's shape (10 plain, 20 paraphrased), written on 2026-12-06 from the
documents' headings before any retriever was run on it, after :data:`JUDGED` had been used to choose the fusion
and the embedder: the fusion and the embedder were never tuned on it. Its goals are worded apart from
:data:`JUDGED`'s.
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


#: The held-out set: (class, goal, expected documents), as :data:`JUDGED`; never tuned on.
HELD_OUT: Final[tuple[tuple[GoalClass, str, tuple[str, ...]], ...]] = (
    (
        "plain",
        "What is the burn rate of an error budget and how do we alert on it?",
        ("practices/alerting-on-slos.md", "practices/slis-slos-and-error-budgets.md"),
    ),
    ("plain", "How does the order queue carry orders from checkout to fulfillment?", ("architecture/order-queue.md",)),
    (
        "plain",
        "Little's law for sizing connection pools",
        ("practices/capacity-planning.md", "runbooks/scale-connection-pool.md"),
    ),
    ("plain", "Exponential backoff with full jitter", ("practices/timeouts-and-retries.md", "runbooks/retry-storm.md")),
    ("plain", "Incident severity levels and escalation timers", ("runbooks/incident-command-and-escalation.md",)),
    (
        "plain",
        "What counts as a change and when is there a change freeze?",
        ("practices/change-management-and-blast-radius.md", "runbooks/staged-canary-rollout.md"),
    ),
    ("plain", "Distributed traces and structured logs", ("practices/observability.md",)),
    (
        "plain",
        "Search errors after a malformed ranking configuration push",
        ("incidents/2025-04-02-search-bad-config-push.md",),
    ),
    (
        "plain",
        "Order queue backlog during the spring sale",
        ("incidents/2025-05-09-order-queue-backlog-spring-sale.md",),
    ),
    ("plain", "Payment providers and routing in the payments gateway", ("architecture/payments-gateway.md",)),
    (
        "paraphrase",
        "How fast are we allowed to spend our unreliability allowance before someone gets paged?",
        ("practices/alerting-on-slos.md", "practices/slis-slos-and-error-budgets.md"),
    ),
    (
        "paraphrase",
        "Getting a freshly booted memory store node to serve hits again before it takes traffic",
        (
            "runbooks/cache-prewarm-from-snapshot.md",
            "practices/cache-warmup-and-hit-rates.md",
            "architecture/cdn-and-cache-tier.md",
        ),
    ),
    (
        "paraphrase",
        "Which teams own which parts of the shop, and which geographies send us the most visitors?",
        ("architecture/platform-overview.md",),
    ),
    ("paraphrase", "Undoing a bad ship when the new version misbehaves", ("runbooks/rollback-deploy.md",)),
    (
        "paraphrase",
        "How many simultaneous links to the data store should each app instance hold?",
        ("runbooks/scale-connection-pool.md", "practices/capacity-planning.md"),
    ),
    (
        "paraphrase",
        "Deciding who talks to customers and how often updates go out while things are down",
        ("runbooks/incident-command-and-escalation.md",),
    ),
    (
        "paraphrase",
        "Keeping the storefront usable with fewer features when a backend is falling over",
        ("practices/load-shedding.md",),
    ),
    (
        "paraphrase",
        "The edge network that serves pictures and scripts close to shoppers",
        ("architecture/cdn-and-cache-tier.md",),
    ),
    (
        "paraphrase",
        "Limiting how much of the fleet a risky modification can hurt",
        ("practices/change-management-and-blast-radius.md", "runbooks/staged-canary-rollout.md"),
    ),
    (
        "paraphrase",
        "Spreading re-attempts out randomly so clients don't all come back at the same instant",
        ("practices/timeouts-and-retries.md", "runbooks/retry-storm.md"),
    ),
    (
        "paraphrase",
        "What happened when the outbound identity file for the card processor lapsed?",
        ("incidents/2025-01-18-payments-certificate-expiry.md", "runbooks/rotate-certificates.md"),
    ),
    (
        "paraphrase",
        "Why did old handles break writes once the database moved to its standby?",
        ("incidents/2025-03-14-orders-db-failover-stale-connections.md",),
    ),
    (
        "paraphrase",
        "A lookup record change that lingered in resolvers far too long",
        ("incidents/2025-02-04-catalog-dns-ttl-migration.md",),
    ),
    (
        "paraphrase",
        "The background workers that pick up purchases and get parcels out the door",
        ("architecture/order-queue.md",),
    ),
    (
        "paraphrase",
        "How long may a call to another service wait before giving up?",
        ("practices/timeouts-and-retries.md", "architecture/checkout-service.md"),
    ),
    (
        "paraphrase",
        "Tripping a fuse toward a failing third party so we stop calling it",
        ("practices/timeouts-and-retries.md", "architecture/payments-gateway.md", "runbooks/retry-storm.md"),
    ),
    (
        "paraphrase",
        "Checking that the slowest one in a hundred requests stays quick",
        ("practices/latency-percentiles.md",),
    ),
    (
        "paraphrase",
        "Rehearsing our disaster procedure for the main data store on a schedule",
        ("runbooks/database-failover-drill.md",),
    ),
    (
        "paraphrase",
        "Tracking how well we respond to outages quarter over quarter",
        ("practices/postmortem-culture.md",),
    ),
    (
        "paraphrase",
        "A tweak to how the find-products service orders its hits broke it",
        ("incidents/2025-04-02-search-bad-config-push.md", "architecture/catalog-and-search.md"),
    ),
)


def recalled(
    kb: KnowledgeBase,
    retrievers: Sequence[str],
    limit: int = 5,
    goals: Sequence[tuple[GoalClass, str, tuple[str, ...]]] = JUDGED,
) -> dict[GoalClass, list[bool]]:
    """Per class of ``goals``, per goal (in order): whether an expected document is among ``retrievers``' top
    ``limit``."""
    found: dict[GoalClass, list[bool]] = {}
    for kind, goal, expected in goals:
        results = kb.find(goal, limit, retrievers=retrievers).results
        paths = {str(hit["source"]).split("#")[0].removeprefix("knowledge_base/") for hit in results}
        found.setdefault(kind, []).append(bool(paths & set(expected)))
    return found
