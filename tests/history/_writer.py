"""A separate process that writes gate runs into a history, for the concurrency and kill tests.

    python -m tests.history._writer DB TEMPLATE.json TAG COUNT   # COUNT <= 0: until killed

Prints ``committed RUN_ID`` (flushed) after each run is committed, so the parent knows what must
survive a kill.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

from recallwatch.acceptance.model import GateResult
from recallwatch.history import History, record_gate_run


def main(db: str, template: str, tag: str, count: int) -> None:
    base = GateResult.from_dict(json.loads(Path(template).read_text(encoding="utf-8")))
    print("ready", flush=True)
    if count > 0:  # the gate's own path: compare with both baselines, then record
        for i in range(count):
            run = record_gate_run(replace(base, run_id=f"{tag}-{i:04d}"), db)
            print(f"committed {run.run_id}", flush=True)
        return
    with History(db) as h:  # as fast as possible, so that kills land inside writes
        i = 0
        while True:
            run_id = f"{tag}-{i:06d}"
            h.record(replace(base, run_id=run_id))
            print(f"committed {run_id}", flush=True)
            i += 1


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
