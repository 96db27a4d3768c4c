"""``marsrag worker``: a Celery worker process executing MarsRAG's run and action jobs."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from marsrag.queue.app import QueueSettings, celery_app


def run_worker(
    *,
    broker: str,
    config: str | Path | None = None,
    llm: str | None = None,
    db: str | None = None,
    base_url: str | None = None,
    concurrency: int = 1,
    loglevel: str = "INFO",
) -> None:
    """Execute jobs from the queue until stopped (SIGTERM or Ctrl-C: jobs in progress finish first).

    Raises:
        ConfigError, InputError, StoreError: bad config, LLM spec, database or queue settings (nothing starts).
    """
    from marsrag.queue import jobs
    from marsrag.runtime.service import open_runner

    settings = QueueSettings.from_env(broker)
    with open_runner(config, llm, db, base_url) as runner:
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
