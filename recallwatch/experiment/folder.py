"""The folder an experiment writes into (``--out-dir DIR``): one experiment at a time, and an
earlier experiment's results never replaced unasked.

:func:`claim` checks that DIR is a folder (or can be made one), takes an operating-system lock on
``DIR/.experiment.lock`` for as long as the experiment runs (released when the process ends,
however it ends: a lock left by a killed run never blocks), and refuses a DIR that holds the
results of another plan unless ``replace`` is given. The results of the same plan file are an
earlier run of it: the rerun replaces them and reuses the cache.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from recallwatch.errors import UsageError
from recallwatch.experiment.plan import Plan

__all__ = ["LOCK", "OUTPUTS", "claim", "plan_path"]

LOCK = ".experiment.lock"
#: the files an experiment writes into DIR, besides its cache/
OUTPUTS = ("results.json", "results.md", "report.html")
_SCHEMA_PREFIX = "recallwatch.experiment/"


def plan_path(plan: Plan) -> str:
    """The plan file as results.json records it, to tell a rerun of it from another plan."""
    return str(plan.source.resolve())


@contextmanager
def claim(out: Path, plan: Plan, *, replace: bool = False) -> Iterator[Path]:
    """Hold DIR for this experiment; yields it as an absolute path (re-entrant in one thread)."""
    from recallwatch._files import file_lock

    folder = _usable(Path(out))
    lock = folder / LOCK
    with ExitStack() as held:
        try:
            held.enter_context(file_lock(lock, wait=False))
        except BlockingIOError:
            raise _busy(folder, lock) from None
        except OSError as exc:
            raise UsageError(f"cannot lock the experiment's output folder {folder}: "
                             f"{exc.strerror or exc} (give --out-dir a folder you may write "
                             "in)") from None
        _check_outputs(folder, plan, replace)
        yield folder


def _usable(out: Path) -> Path:
    """DIR as an absolute path, created if missing; a file or a folder that cannot be made is a
    UsageError saying which."""
    folder = out.absolute()
    try:  # the path goes into store URIs, pipeline specs and results.json, all UTF-8
        str(folder).encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"the experiment's output folder {str(folder)!r} has a name that is not "
                         "UTF-8 text (give --out-dir a folder named in UTF-8)") from None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file is there (exist_ok covers a folder)
        raise UsageError(f"the experiment's output folder {folder} is a file, not a folder "
                         "(give --out-dir a folder: it is created when missing)") from None
    except OSError as exc:
        where = "" if exc.filename in (None, str(folder)) else f" ({exc.filename})"
        raise UsageError(f"cannot create the experiment's output folder {folder}: "
                         f"{exc.strerror or exc}{where} (give --out-dir a folder you may write "
                         "in)") from None
    return folder


def _busy(folder: Path, lock: Path) -> UsageError:
    from recallwatch._files import lock_holder

    pid = lock_holder(lock)
    who = "another recallwatch experiment" + ("" if pid is None else f" (pid {pid})")
    return UsageError(f"{who} is using {folder}: wait for it to finish, or give another --out-dir "
                      "(two experiments writing one folder would mix their builds and results)")


def _check_outputs(folder: Path, plan: Plan, replace: bool) -> None:
    for name in (*OUTPUTS, "cache"):
        path = folder / name
        kind_ok = path.is_dir() if name == "cache" else path.is_file()
        if path.exists() and not kind_ok:
            expected = "folder" if name == "cache" else "file"
            raise UsageError(f"{path} is not a {expected}: the experiment writes its "
                             f"{'cache' if name == 'cache' else 'results'} there (move it away, "
                             "or give another --out-dir)")
    results = folder / "results.json"
    if replace or not results.is_file():
        return
    earlier = _read_results(results)
    if earlier is None:
        raise UsageError(f"{results} is not the results of an experiment (not JSON with the "
                         f"schema {_SCHEMA_PREFIX}…): give another --out-dir, or --force to "
                         "replace it")
    if _same_plan(earlier, plan, folder):
        return
    raise UsageError(f"{folder} holds the results of another experiment: {_describe(earlier)} "
                     f"(give another --out-dir, or --force to replace them with the results of "
                     f"{plan.source}; the cache of built variants is kept and reused)")


def _read_results(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith(_SCHEMA_PREFIX):
        return None
    return data


def _same_plan(earlier: dict[str, Any], plan: Plan, folder: Path) -> bool:
    recorded = earlier.get("plan_path")
    if isinstance(recorded, str):
        return recorded == plan_path(plan)
    # results written before plan_path was recorded: "plan" is the path as it was typed, from
    # the folder the experiment ran in (the output folder's parent, most likely, or here)
    typed = earlier.get("plan")
    if not isinstance(typed, str):
        return False
    candidates = {Path(typed).absolute(), (folder.parent / typed).absolute()}
    return any(c.exists() and c.resolve() == plan.source.resolve() for c in candidates)


def _describe(earlier: dict[str, Any]) -> str:
    plan = earlier.get("plan_path") or earlier.get("plan") or "unknown"
    variants = earlier.get("variants")
    count = len(variants) if isinstance(variants, list) else "?"
    return f"plan {plan}, {count} variant(s), winner {earlier.get('winner')!s}"
