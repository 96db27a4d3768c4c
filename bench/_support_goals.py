"""Goals for the support signal on the sample knowledge base: ones it answers, ones it does not cover.

Two sets, written by hand before the signal's thresholds were chosen: ``CALIBRATION`` set the thresholds
(``marsrag.rag.support``), ``HELD_OUT`` was only measured afterwards, so its figures say how the signal does
on goals it was not tuned on. Inside goals are worded plainly (a paraphrase with none of the documents' words
is the hybrid-retrieval issue's to find). Outside goals mix topics far from the knowledge base with ones that
share its vocabulary ("payment provider", "sale", "database") but ask what it does not say.
"""

from __future__ import annotations

CALIBRATION_INSIDE = [
    "How do we rotate the payments TLS certificate?",
    "A retry storm is hammering the payments gateway. How do we stop it?",
    "How do I restart cache nodes without hurting checkout latency?",
    "The checkout connection pool is exhausted. How do we scale it?",
    "How do we roll back a bad deploy?",
    "When should a burn-rate alert page someone?",
    "How do we drain a node before maintenance?",
    "What is the safe way to do a staged canary rollout?",
    "Why do latency averages mislead us?",
    "How should we plan capacity before a big sale?",
    "How do we run a database failover drill?",
    "The order queue backlog keeps growing. What should we do?",
]
CALIBRATION_OUTSIDE = [
    "What is the capital of Australia and who won the 2018 FIFA World Cup?",
    "How much are on-call engineers paid per weekend shift?",
    "How do I bake sourdough bread at home?",
    "What is our parental leave policy?",
    "How do we migrate our Kubernetes cluster to a new cloud region?",
    "Which laptop should new hires order?",
    "How do I configure single sign-on for the HR portal?",
    "What are the tax rules for employee stock options in Germany?",
    "How do we set up email marketing campaigns for the spring sale?",
    "How do we negotiate a contract with a new payment provider?",
    "What is the best database for storing time series?",
    "What time does the cafeteria close on Fridays?",
]
HELD_OUT_INSIDE = [
    "How does the payments gateway route between providers?",
    "When should load shedding start, and what gets shed first?",
    "How do I warm a cache node from a snapshot?",
    "What is an error budget and how is it spent?",
    "Who leads an incident and when do we escalate?",
    "What caused the search errors after the ranking config push?",
    "How far ahead should the DNS TTL be lowered before a cutover?",
    "What timeouts and retries should a service use toward its dependencies?",
    "What does the checkout service depend on?",
    "Which signals should we watch while a cache warms up?",
]
HELD_OUT_OUTSIDE = [
    "How do I reset my VPN password?",
    "What is the dress code at the office?",
    "How do we handle GDPR data deletion requests?",
    "How do I request a second monitor for my desk?",
    "Which programming language should the mobile app use?",
    "How do we train a fraud detection model?",
    "Where do I file a travel expense report?",
    "What is the recipe for a good margherita pizza?",
    "How many vacation days do employees get per year?",
    "What is the company's policy on open source contributions?",
]
