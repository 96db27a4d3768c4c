"""The Celery application of MarsRAG's job queue, configured for at-least-once execution of runs.

Jobs carry ids only; every worker reads and writes the shared store. A worker killed mid-run has its runs
handed back by the next sweep of any server (:mod:`marsrag.runtime.recovery`): the worker's heartbeat on the
run stops (:mod:`marsrag.runtime.heartbeat`), the run is found stale (its ``host:pid`` checked on its own host,
else a minute without a beat) and sent again; another worker resumes it from its committed tasks. That is the
mechanism, not Celery's: Redis cannot tell a dead consumer from a slow one, so its unacknowledged messages come
back only after ``visibility_timeout`` (``redeliver_after``), which must exceed the longest run or live runs
would be redelivered; and ``task_reject_on_worker_lost`` acts when a pool child dies under a live worker, not
when the worker itself is SIGKILLed. Late acknowledgement stays as the fallback with no server sweeping: the
dead worker's job comes back after ``redeliver_after`` and resumes the run. The claim on the run (a
compare-and-set in the store) keeps two workers from executing one run; a duplicate job is a no-op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from marsrag.errors import InputError
from marsrag.queue.jobs import ACT_JOB, RUN_JOB, register
from marsrag.settings import Settings

__all__ = ["ACT_JOB", "RUN_JOB", "QueueSettings", "celery_app"]


@dataclass(frozen=True)
class QueueSettings:
    """How the queue is reached and how long things may take.

    Attributes:
        broker: the broker URL (``redis://host:6379/0``); results of actions go to the same Redis.
        queue: the queue name (``MARSRAG_QUEUE``, default ``marsrag``): servers and workers must agree.
        redeliver_after: seconds after which an unacknowledged job (its worker died) goes to another worker
            (``MARSRAG_REDELIVER_AFTER``, default 3600). Longer than your longest run: a job redelivered
            while its run still executes finds the run claimed and waits.
        action_timeout: seconds a server waits for a worker to finish an operator action
            (``MARSRAG_ACTION_TIMEOUT``, default 300).
    """

    broker: str
    queue: str = "marsrag"
    redeliver_after: float = 3600.0
    action_timeout: float = 300.0

    @classmethod
    def from_settings(cls, settings: Settings) -> QueueSettings:
        """The queue settings of the resolved ``settings`` (their broker, queue name and timeouts).

        Raises:
            InputError: no broker, or a broker that is not Redis.
        """
        broker = settings.broker
        if not broker:
            raise InputError("no broker: give --broker redis://host:6379/0 or set MARSRAG_BROKER")
        if not broker.startswith(("redis://", "rediss://", "redis+socket://")):
            raise InputError(f"broker {broker!r}: MarsRAG's queue runs on Redis; give a redis:// URL")
        return cls(
            broker=broker,
            queue=settings.queue,
            redeliver_after=settings.redeliver_after,
            action_timeout=settings.action_timeout,
        )


def celery_app(settings: QueueSettings) -> Any:
    """A Celery app on ``settings``, with MarsRAG's jobs registered."""
    from celery import Celery  # lazy: Celery

    app = Celery("marsrag", broker=settings.broker, backend=settings.broker)
    # Sweep for abandoned messages often enough that redelivery takes about redeliver_after, not 100 s more.
    sweep = max(1, min(10, int(settings.redeliver_after // 10)))
    app.conf.update(
        task_default_queue=settings.queue,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        # At-least-once: acknowledge a job after it ends; a lost worker's job is redelivered after the
        # visibility timeout (the fallback: a server's sweep hands a dead worker's runs back within a minute).
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        # One job at a time per worker slot: a job held by a busy worker is not one another could take.
        worker_prefetch_multiplier=1,
        broker_transport_options={
            "visibility_timeout": settings.redeliver_after,
            "unacked_restore_interval": sweep,
            "unacked_restore_throttle": 1,
        },
        # An unreachable Redis is reported in seconds (a 503 and a stored pending run), not after a minute of retries.
        result_backend_transport_options={
            "visibility_timeout": settings.redeliver_after,
            "retry_policy": {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1},
        },
        redis_socket_connect_timeout=3,
        broker_connection_timeout=3,
        result_expires=3600,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
    )
    register(app)
    return app
