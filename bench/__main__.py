"""``python -m bench`` (``make bench``): every benchmark, each figure next to its same-run baseline."""

from __future__ import annotations

import os
import platform
import tempfile

from bench._timing import pin_to_one_core


def main() -> None:
    """Run all benchmarks in a throwaway home, so CrewAI's files land nowhere that lasts."""
    with tempfile.TemporaryDirectory(prefix="marsrag-bench-") as home:
        os.environ.update(
            HOME=home, XDG_DATA_HOME=f"{home}/data", XDG_CONFIG_HOME=f"{home}/config", MARSRAG_HOME=f"{home}/marsrag"
        )
        from bench import (
            contract_bench,
            crewai_bench,
            load_bench,
            main_job_bench,
            metrics_bench,
            rag_bench,
            realmodel_bench,
            runtime_bench,
            store_bench,
            web_bench,
        )

        print(f"MarsRAG benchmarks on Python {platform.python_version()}, {platform.machine()}; {pin_to_one_core()}")
        contract_bench.run()
        crewai_bench.run()
        runtime_bench.run()
        store_bench.run()
        rag_bench.run()
        main_job_bench.run()
        web_bench.run()
        load_bench.run()
        metrics_bench.run()
        realmodel_bench.run()


if __name__ == "__main__":
    main()
