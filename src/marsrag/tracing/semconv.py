"""The attribute and operation names MarsRAG's spans carry: OpenTelemetry's GenAI conventions, then its own.

The GenAI names follow the semantic conventions as of release v1.41.0 (the last before they moved to their
own repository): ``gen_ai.provider.name`` (which replaced ``gen_ai.system`` in v1.37.0), the ``retrieval``
and ``invoke_workflow`` operations. Spelled out rather than imported: opentelemetry-semantic-conventions keeps
them in a private ``_incubating`` module. MarsRAG's own attributes are under ``loop.`` (the Loop Contract's
fields) and ``marsrag.`` (everything else).
"""

from __future__ import annotations

from typing import Final

#: The semantic conventions release the ``gen_ai.*`` names below follow.
SEMCONV_VERSION: Final = "1.41.0"

# -- GenAI ---------------------------------------------------------------------------------------------------
OPERATION: Final = "gen_ai.operation.name"
PROVIDER: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
RESPONSE_MODEL: Final = "gen_ai.response.model"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
OUTPUT_TYPE: Final = "gen_ai.output.type"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
AGENT_NAME: Final = "gen_ai.agent.name"
WORKFLOW_NAME: Final = "gen_ai.workflow.name"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
DATA_SOURCE: Final = "gen_ai.data_source.id"
TOP_K: Final = "gen_ai.request.top_k"
SERVER_ADDRESS: Final = "server.address"
SERVER_PORT: Final = "server.port"
ERROR_TYPE: Final = "error.type"

# The operations (gen_ai.operation.name) of MarsRAG's spans.
CHAT: Final = "chat"
INVOKE_AGENT: Final = "invoke_agent"
INVOKE_WORKFLOW: Final = "invoke_workflow"
RETRIEVAL: Final = "retrieval"

# -- the Loop Contract -----------------------------------------------------------------------------------------
VALIDATION_STATUS: Final = "loop.validation_status"
TRANSITION_MODE: Final = "loop.transition_mode"
LOOP_MODE: Final = "loop.loop_mode"
CONTRACT_VERSION: Final = "loop.contract_version"
SUPPORT: Final = "loop.support"
HOOK_SOURCE: Final = "loop.hook_source"
#: Prefix of the run's outcome counts: ``loop.outcome.valid``, ``.partial``, ``.failed``, ``.skipped``.
OUTCOME: Final = "loop.outcome"

# -- MarsRAG ------------------------------------------------------------------------------------------------
RUN_ID: Final = "marsrag.run_id"
TASK_ID: Final = "marsrag.task_id"
SESSION_ID: Final = "marsrag.session_id"
RUN_STATUS: Final = "marsrag.run.status"
RUN_REASON: Final = "marsrag.run.reason"
RESUMED: Final = "marsrag.run.resumed"
#: The operator action (``repair``, ``regenerate``) an action span is.
ACTION: Final = "marsrag.action"
EXPERIMENT: Final = "marsrag.experiment"
ARM: Final = "marsrag.arm"
POSITION: Final = "marsrag.task.position"
ATTEMPTS: Final = "marsrag.task.attempts"
ATTEMPT: Final = "marsrag.attempt"
STRUCTURED_OUTPUT: Final = "marsrag.structured_output"
STRUCTURED_OUTPUT_REFUSED: Final = "marsrag.structured_output.refused"
RETRIEVAL_RESULTS: Final = "marsrag.retrieval.results"
COLLECTIONS: Final = "marsrag.retrieval.collections"
GOAL: Final = "marsrag.goal"
QUERY: Final = "marsrag.retrieval.query"
#: The span event of an attempt the contract judged (its validation status and error count).
ATTEMPT_EVENT: Final = "marsrag.attempt.judged"
#: The data source of retrieval spans: MarsRAG's knowledge base.
KNOWLEDGE_BASE: Final = "marsrag.knowledge_base"
