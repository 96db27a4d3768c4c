"""``python -m bench`` (``make bench``): every benchmark, each figure next to its same-run baseline."""

from __future__ import annotations

import platform

from bench import contract_bench
from bench._timing import pin_to_one_core


def main() -> None:
    """Run all benchmarks."""
    print(f"MarsRAG benchmarks on Python {platform.python_version()}, {platform.machine()}; {pin_to_one_core()}")
    contract_bench.run()


if __name__ == "__main__":
    main()
