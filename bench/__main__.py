"""``python -m bench`` (``make bench``): every benchmark, each figure next to its same-run baseline."""

from __future__ import annotations

import os
import platform
import sys
import tempfile

from bench._page import DATA, PAGE, ROOT, machine, write
from bench._timing import PRINTED, pin_to_one_core

#: The benchmarks, in the order a whole run takes them.
NAMES = (
    "contract",
    "crewai",
    "runtime",
    "store",
    "rag",
    "main_job",
    "coldstart",
    "web",
    "load",
    "metrics",
    "realmodel",
)


def main() -> None:
    """Run the benchmarks in a throwaway home, so CrewAI's files land nowhere that lasts.

    With no arguments every benchmark runs and the run is written to ``docs/performance.md`` (and JSON);
    with names (``python -m bench contract web``) only those run, and nothing is written: the page holds
    one whole run.
    """
    chosen = sys.argv[1:]
    unknown = sorted(set(chosen) - set(NAMES))
    if unknown:
        raise SystemExit(f"unknown benchmark {', '.join(unknown)}: choose from {', '.join(NAMES)}")
    with tempfile.TemporaryDirectory(prefix="marsrag-bench-") as home:
        os.environ.update(
            HOME=home, XDG_DATA_HOME=f"{home}/data", XDG_CONFIG_HOME=f"{home}/config", MARSRAG_HOME=f"{home}/marsrag"
        )
        from bench import (
            coldstart_bench,
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

        modules = {
            "contract": contract_bench,
            "crewai": crewai_bench,
            "runtime": runtime_bench,
            "store": store_bench,
            "rag": rag_bench,
            "main_job": main_job_bench,
            "coldstart": coldstart_bench,
            "web": web_bench,
            "load": load_bench,
            "metrics": metrics_bench,
            "realmodel": realmodel_bench,
        }
        about = machine()
        print(
            f"MarsRAG benchmarks, {about['date']}, commit {about['commit']}, {about['cpu']} ({about['cores']} cores),"
            f" Python {platform.python_version()} {platform.machine()}; {pin_to_one_core()}"
        )
        for name in chosen or NAMES:
            modules[name].run()
        if not chosen:
            write(PRINTED, about)
            print(f"\nwritten: {PAGE.relative_to(ROOT)} and {DATA.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
