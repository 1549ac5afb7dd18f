"""Operations on a live index, in the loop ingest → index → serve → monitor → reindex.

* :mod:`~recallwatch.ops.ingest` — corpus into a store, idempotent, resumable, gated;
* :mod:`~recallwatch.ops.probes` — versioned probe sets (golden and/or logged queries, or vectors);
* :mod:`~recallwatch.ops.monitor` — recall vs exact, latency, coverage, index age, data drift;
* :mod:`~recallwatch.ops.probe_latency` — the probes' latency against its cap, with its interval;
* :mod:`~recallwatch.ops.budget` — the error budget over monitor runs;
* :mod:`~recallwatch.ops.reindex` — background rebuild, verified atomic switch, rollback;
* :mod:`~recallwatch.ops.promote` — production only for an ACCEPTed, cleanly ingested version;
* :mod:`~recallwatch.ops.calibrate` — no-result threshold and noise-ceiling calibration;
* :mod:`~recallwatch.ops.groups` — a gate metric by group, with gaps and bootstrap intervals.
"""

from recallwatch.ops.promote import PromoteDecision, check_promotion, promote

__all__ = ["PromoteDecision", "check_promotion", "promote"]
