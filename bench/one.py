"""``python -m bench.one NAME OUT``: run one benchmark module and write the tables it printed to ``OUT`` (JSON).

What ``python -m bench`` runs once per benchmark, each in a fresh interpreter (see ``bench/__main__.py``).
"""

from __future__ import annotations

import json
import sys
from importlib import import_module
from pathlib import Path

from bench._timing import PRINTED


def main() -> None:
    """Run ``bench.NAME_bench.run()`` and write every table it printed, in order, to the JSON file ``OUT``."""
    name, out = sys.argv[1], Path(sys.argv[2])
    import_module(f"bench.{name}_bench").run()
    out.write_text(json.dumps([report.to_json() for report in PRINTED]), encoding="utf-8")


if __name__ == "__main__":
    main()
