"""Where the load stage (``gen.fleet.profiles.load_profiles``) spends its time.

Writes a bench fleet (``bench/fleet.py``), then times, in this process, medians of
``--repeat`` runs of CPU time (``time.process_time``, so other jobs on a shared machine
count less): the YAML parse with positions (``gen.fleet.loader.load_documents``), the
pydantic validation (``gen.fleet.profiles.validate_documents``) and the whole
``load_profiles`` (with the Model configs and the fleet's gen.yaml). ``--cold`` clears the
loader's scalar caches before each run, as a fresh process starts.

    python bench/load_stage.py --clusters 40 --services 32 --repeat 7
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fleet import write_fleet

from gen.fleet import loader, profiles


def _cold() -> None:
    loader._RESOLVED.clear()
    loader._CONSTRUCTED.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=40)
    parser.add_argument("--services", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--root", type=Path, default=None,
                        help="where to write the fleet (default: a temporary folder)")
    parser.add_argument("--warm", action="store_true",
                        help="keep the loader's scalar caches between runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gen-load-", dir=args.root) as scratch:
        root = write_fleet(Path(scratch), args.clusters, args.services)
        times: dict[str, list[float]] = {"parse": [], "validate": [], "load_profiles": []}
        documents = 0
        for _ in range(args.repeat):
            if not args.warm:
                _cold()
            start = time.process_time()
            docs = loader.load_documents(root)
            parsed = time.process_time()
            profiles.validate_documents(docs)
            validated = time.process_time()
            if not args.warm:
                _cold()
            again = time.process_time()
            profiles.load_profiles(root)
            done = time.process_time()
            times["parse"].append(parsed - start)
            times["validate"].append(validated - parsed)
            times["load_profiles"].append(done - again)
            documents = len(docs)
        print(json.dumps({
            "clusters": args.clusters, "services": args.services, "documents": documents,
            "files": len(loader.profile_files(root)),
            **{k: round(statistics.median(v), 4) for k, v in times.items()},
        }))


if __name__ == "__main__":
    main()
