"""``marsrag worker``: a Celery worker process executing MarsRAG's run and action jobs on a given runner."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from marsrag.errors import QueueUnavailableError
from marsrag.queue import jobs
from marsrag.queue.app import QueueSettings, celery_app
from marsrag.urls import mask

if TYPE_CHECKING:
    from marsrag.runtime.runner import WorkflowRunner


#: Seconds the up-front broker check waits to connect (a worker with no broker says so at once).
BROKER_CHECK_TIMEOUT = 3.0


def check_broker(broker: str, timeout: float = BROKER_CHECK_TIMEOUT) -> None:
    """Connect to the broker once, within ``timeout`` seconds, before a worker starts.

    Celery's own worker retries a broker it cannot reach forever, logging each attempt; this says it in one line.

    Raises:
        QueueUnavailableError: the broker cannot be reached (the message names it, its password masked).
    """
    import redis  # lazy: the broker's client (celery[redis])

    # Kombu's Unix-socket scheme is redis-py's unix:// (redis+socket:///path/to/redis.sock).
    url = "unix://" + broker.removeprefix("redis+socket://") if broker.startswith("redis+socket://") else broker
    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.ping()
    except (redis.exceptions.RedisError, OSError) as error:
        reason = " ".join(str(error).split()) or type(error).__name__
        raise QueueUnavailableError(f"the broker {mask(broker)} is unreachable: {reason}") from None
    finally:
        client.close()


def run_worker(
    runner: WorkflowRunner, settings: QueueSettings, *, concurrency: int = 1, loglevel: str = "INFO"
) -> None:
    """Execute jobs from the queue on ``runner`` until stopped (SIGTERM or Ctrl-C: jobs in progress finish first).

    The caller (:func:`marsrag.compose.run_worker_process`) opens the runner and closes it afterwards.
    """
    jobs.bind(runner)
    app = celery_app(settings)
    # Threads in one process: CrewAI crews are built per job; SIGKILL takes the whole worker, whose
    # unacknowledged jobs are then redelivered. The node name is unique per process, so many can share a host.
    app.worker_main(
        argv=[
            "worker",
            "--pool=threads",
            f"--concurrency={concurrency}",
            f"--loglevel={loglevel}",
            f"--queues={settings.queue}",
            f"--hostname=marsrag-{os.getpid()}@{socket.gethostname()}",
            "--without-gossip",
            "--without-mingle",
        ]
    )
