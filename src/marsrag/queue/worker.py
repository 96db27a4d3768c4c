"""``marsrag worker``: a Celery worker process executing MarsRAG's run and action jobs on a given runner."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

from marsrag.queue import jobs
from marsrag.queue.app import QueueSettings, celery_app

if TYPE_CHECKING:
    from marsrag.runtime.runner import WorkflowRunner


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
