"""Layers you can test: every import in recallwatch/ goes down the layer order.

The walk reads every ``import`` and ``from … import`` in every module (at the top, inside
functions, under ``TYPE_CHECKING``) and every registry target string (``"recallwatch.x.y:Name"``),
and fails, naming the file and line, on

* an import from a higher layer (a layer imports only from itself and the layers below);
* a cycle between packages (two units that import each other, directly or through others);
* an import of another package's private module (``recallwatch.<pkg>._x`` from outside ``<pkg>``;
  the top-level core modules ``recallwatch._x`` are open to all);
* a cycle between two modules, even of one package (two modules that need each other are one
  module, or share a third that holds what both need), except the known ones listed in
  :data:`MODULE_CYCLES_KNOWN`.

:data:`LAYERS` is the one statement of the layer order; CONTRIBUTING.md cites it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "recallwatch"

# Lowest first. A unit is a module or a package (with everything under it); a module belongs to
# the longest unit that names it, and every module must belong to one.
LAYERS: dict[str, int] = {
    # 0 core: one home for each small thing, importable from everywhere
    "recallwatch.errors": 0,
    "recallwatch._version": 0,
    "recallwatch._registry": 0,
    "recallwatch._progress": 0,
    "recallwatch._files": 0,
    "recallwatch._hashing": 0,
    "recallwatch._durations": 0,
    "recallwatch._redact": 0,
    "recallwatch.records": 0,
    "recallwatch.vectors": 0,
    "recallwatch._http": 0,
    "recallwatch._blas": 0,
    "recallwatch._process": 0,
    "recallwatch._usercache": 0,
    "recallwatch._terminal": 0,
    "recallwatch._usercode": 0,
    "recallwatch.formats": 1,
    "recallwatch.metrics": 2,
    "recallwatch.stats": 3,
    "recallwatch.embedders": 4,
    "recallwatch.stores": 5,
    "recallwatch.retrievers": 5,  # anything that answers queries with ranked chunk ids
    "recallwatch.acceptance": 6,
    "recallwatch.report": 7,
    "recallwatch.history": 8,
    "recallwatch.bench": 9,
    "recallwatch.ops": 10,
    "recallwatch.judgments": 11,
    # answer-level evaluation: judges (one on the LLM client of judgments), generators, the
    # gate's answer step (a finished gate result in, judged answers out)
    "recallwatch.answers": 11,
    "recallwatch.online": 11,
    "recallwatch.scale": 11,  # the heavy steps (ops, bench, suite) on Ray
    "recallwatch.experiment": 11,  # variants of a pipeline built, judged and compared
    "recallwatch.web": 12,
    # the gate whole (open, run, judged@K, stale-set check, history, reports): what the CLI and
    # recallwatch.gate call; above the history and the judgments it records and reads
    "recallwatch.acceptance.run": 12,
    # 13 interfaces: the CLI, the package's public API, and the pytest plugin (it lives in suite
    # because its entry point in pyproject.toml is a contract)
    "recallwatch.cli": 13,
    "recallwatch": 13,  # recallwatch/__init__.py alone
    "recallwatch.__main__": 13,  # python -m recallwatch: the command
    "recallwatch.acceptance.pytest_plugin": 13,
}

# Imports of another package's private module that are allowed anyway, each with its reason.
# Empty: keep it so (the test fails on an entry no import uses).
PRIVATE_ALLOWED: set[tuple[str, str]] = set()

# Cycles between modules of one package that are known, each waiting for its package's owner to
# untie it: a new one fails the test; one that is gone may be deleted from here.
MODULE_CYCLES_KNOWN: set[frozenset[str]] = set()

_TARGET = re.compile(r"^(recallwatch(?:\.\w+)+):\w+$")  # a registry's "module:attribute"


@dataclass(frozen=True)
class Edge:
    file: str  # relative to the checkout, with forward slashes
    line: int
    source: str  # the importing module
    target: str  # the imported module


def module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str | None:
    """The LAYERS key a module belongs to: the longest that names it or a package above it
    (``recallwatch`` itself names only the package's ``__init__``)."""
    parts = module.split(".")
    for n in range(len(parts), 1, -1):
        if ".".join(parts[:n]) in LAYERS:
            return ".".join(parts[:n])
    return "recallwatch" if module == "recallwatch" else None


def package_of(module: str) -> str:
    """``recallwatch.<pkg>``: whose private modules ``module`` may import."""
    return ".".join(module.split(".")[:2])


def edges(sources: Mapping[str, str]) -> Iterator[Edge]:
    """Every import of a recallwatch module in ``sources`` (relative path -> source text)."""
    modules = {module_name(path) for path in sources}

    def resolve(name: str) -> str | None:
        while name and name not in modules:  # an attribute: the module that holds it
            name = name.rpartition(".")[0]
        return name or None

    for path, text in sorted(sources.items()):
        source = module_name(path)
        package = source if path.endswith("__init__.py") else source.rpartition(".")[0]
        nodes = sorted(ast.walk(ast.parse(text, filename=path)),
                       key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
        for node in nodes:
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                # `from pkg import module` imports that module; `from module import name` the module
                names = [f"{base}.{alias.name}" for alias in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                match = _TARGET.match(node.value)
                names = [match.group(1)] if match else []
            targets = {resolve(n) for n in names if n.split(".")[0] == "recallwatch"}
            for target in sorted(t for t in targets if t is not None and t != source):
                yield Edge(path, node.lineno, source, target)


def violations(sources: Mapping[str, str], private_allowed: set[tuple[str, str]]) -> list[str]:
    """One line per broken rule, ``file:line: what``; then one per unused allowlist entry."""
    out: list[str] = []
    graph: dict[str, dict[str, Edge]] = {}
    used: set[tuple[str, str]] = set()
    for path in sorted(sources):
        if unit_of(module_name(path)) is None:
            out.append(f"{path}: {module_name(path)} is in no layer: add it (or its package) to "
                       "LAYERS in tests/test_layers.py")
    for edge in edges(sources):
        src, dst = unit_of(edge.source), unit_of(edge.target)
        if src is None or dst is None:
            continue
        where = f"{edge.file}:{edge.line}"
        if LAYERS[dst] > LAYERS[src]:
            out.append(f"{where}: {src} (layer {LAYERS[src]}) imports {edge.target} from a "
                       f"higher layer ({dst}, layer {LAYERS[dst]}): move what it needs down")
        private = [p for p in edge.target.split(".")[2:] if p.startswith("_")]
        if private and package_of(edge.target) != package_of(edge.source):
            if (edge.file, edge.target) in private_allowed:
                used.add((edge.file, edge.target))
            else:
                out.append(f"{where}: imports {edge.target}, a private module of "
                           f"{package_of(edge.target)}: use (or add to) its public API")
        if src != dst:
            graph.setdefault(src, {}).setdefault(dst, edge)
    for cycle in sorted(_cycles(graph)):
        steps = [graph[a][b] for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True)]
        out.append("cycle between " + " → ".join([*cycle, cycle[0]]) + ": "
                   + "; ".join(f"{e.file}:{e.line} imports {e.target}" for e in steps))
    out += [f"{file}: no longer imports {target}: delete it from PRIVATE_ALLOWED"
            for file, target in sorted(private_allowed - used)]
    return out


def module_cycles(sources: Mapping[str, str]) -> list[str]:
    """One line per cycle between modules (not units), with the import of each step."""
    graph: dict[str, dict[str, Edge]] = {}
    for edge in edges(sources):
        graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
    out = []
    for cycle in sorted(_cycles(graph)):
        if frozenset(cycle) in MODULE_CYCLES_KNOWN:
            continue
        steps = [graph[a][b] for a, b in zip(cycle, [*cycle[1:], cycle[0]], strict=True)]
        out.append("cycle between modules " + " → ".join([*cycle, cycle[0]]) + ": "
                   + "; ".join(f"{e.file}:{e.line} imports {e.target}" for e in steps))
    return out


def _cycles(graph: Mapping[str, Mapping[str, Edge]]) -> list[list[str]]:
    """One cycle through each group of units that reach each other (Tarjan's components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[list[str]] = []

    def visit(unit: str) -> None:
        index[unit] = low[unit] = len(index)
        stack.append(unit)
        for nxt in sorted(graph.get(unit, {})):
            if nxt not in index:
                visit(nxt)
                low[unit] = min(low[unit], low[nxt])
            elif nxt in stack:
                low[unit] = min(low[unit], index[nxt])
        if low[unit] == index[unit]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == unit:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for unit in sorted(graph):
        if unit not in index:
            visit(unit)
    return [_a_cycle(graph, set(group)) for group in groups]


def _a_cycle(graph: Mapping[str, Mapping[str, Edge]], group: set[str]) -> list[str]:
    """A shortest path back to the group's first unit, through the group only."""
    start = min(group)
    paths: dict[str, list[str]] = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for unit in frontier:
            for nxt in sorted(graph.get(unit, {})):
                if nxt == start:
                    return paths[unit]
                if nxt in group and nxt not in paths:
                    paths[nxt] = [*paths[unit], nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no cycle in {sorted(group)}")  # a component always has one


def _package_sources() -> dict[str, str]:
    return {path.relative_to(ROOT).as_posix(): path.read_text(encoding="utf-8")
            for path in sorted(PACKAGE.rglob("*.py"))}


def test_every_import_goes_down_the_layers() -> None:
    found = violations(_package_sources(), PRIVATE_ALLOWED)
    assert not found, "\n".join(["", *found])


def test_no_two_modules_import_each_other() -> None:
    found = module_cycles(_package_sources())
    assert not found, "\n".join(["", *found, "move what both need into a third module"])


def test_the_checker_finds_a_cycle_between_modules_of_one_package() -> None:
    found = module_cycles({
        "recallwatch/stats/__init__.py": "",
        "recallwatch/stats/_a.py": "def f():\n    from recallwatch.stats._b import g\n",
        "recallwatch/stats/_b.py": "from typing import TYPE_CHECKING\n"
                                   "if TYPE_CHECKING:\n"
                                   "    from recallwatch.stats._a import f\n",
    })
    assert found == [
        "cycle between modules recallwatch.stats._a → recallwatch.stats._b → "
        "recallwatch.stats._a: recallwatch/stats/_a.py:2 imports recallwatch.stats._b; "
        "recallwatch/stats/_b.py:3 imports recallwatch.stats._a"]


def test_layers_are_numbered_without_gaps() -> None:
    order = sorted({v for v in LAYERS.values()})
    assert order == list(range(14))
    assert [u for u, v in LAYERS.items() if v == 13] == [
        "recallwatch.cli", "recallwatch", "recallwatch.__main__",
        "recallwatch.acceptance.pytest_plugin"]


# The checker checked: a small made-up tree where each rule is broken once.
_FAKE = {
    "recallwatch/__init__.py": "",
    "recallwatch/errors.py": "",
    "recallwatch/formats/__init__.py": "LAZY = 'recallwatch.acceptance.gate:run'\n",  # up, a string
    "recallwatch/formats/golden.py": (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from recallwatch.stores.base import VectorStore\n"  # up, under TYPE_CHECKING
    ),
    "recallwatch/stores/__init__.py": "REG = 'recallwatch.stores.lancedb.store:LanceStore'\n",
    "recallwatch/stores/base.py": "from recallwatch.errors import InputError\n",
    "recallwatch/stores/lancedb.py": "from . import base\nfrom ._uri import parse\n",
    "recallwatch/stores/_uri.py": "",
    "recallwatch/acceptance/__init__.py": "",
    "recallwatch/acceptance/gate.py": (
        "def run():\n"
        "    from recallwatch.stores._uri import parse\n"  # private, inside a function
        "    from recallwatch.report import to_json\n"  # up
    ),
    "recallwatch/report/__init__.py": "from recallwatch.acceptance import gate\n",
    "recallwatch/acceptance/pytest_plugin.py": "from recallwatch.report import to_json\n",
    "recallwatch/web/__init__.py": "import recallwatch.cli\n",  # up
    "recallwatch/cli/__init__.py": "from recallwatch.web import app\n",
    "recallwatch/newpkg/__init__.py": "",
}


def test_the_checker_finds_each_rule_broken() -> None:
    found = violations(_FAKE, {("recallwatch/ops/x.py", "recallwatch.stores._common")})
    assert found == [
        "recallwatch/newpkg/__init__.py: recallwatch.newpkg is in no layer: add it (or its "
        "package) to LAYERS in tests/test_layers.py",
        "recallwatch/acceptance/gate.py:2: imports recallwatch.stores._uri, a private module of "
        "recallwatch.stores: use (or add to) its public API",
        "recallwatch/acceptance/gate.py:3: recallwatch.acceptance (layer 6) imports "
        "recallwatch.report from a higher layer (recallwatch.report, layer 7): move what it "
        "needs down",
        "recallwatch/formats/__init__.py:1: recallwatch.formats (layer 1) imports "
        "recallwatch.acceptance.gate from a higher layer (recallwatch.acceptance, layer 6): move "
        "what it needs down",
        "recallwatch/formats/golden.py:3: recallwatch.formats (layer 1) imports "
        "recallwatch.stores.base from a higher layer (recallwatch.stores, layer 5): move what "
        "it needs down",
        "recallwatch/web/__init__.py:1: recallwatch.web (layer 12) imports recallwatch.cli "
        "from a higher layer (recallwatch.cli, layer 13): move what it needs down",
        "cycle between recallwatch.acceptance → recallwatch.report → recallwatch.acceptance: "
        "recallwatch/acceptance/gate.py:3 imports recallwatch.report; "
        "recallwatch/report/__init__.py:1 imports recallwatch.acceptance.gate",
        "cycle between recallwatch.cli → recallwatch.web → recallwatch.cli: "
        "recallwatch/cli/__init__.py:1 imports recallwatch.web; recallwatch/web/__init__.py:1 "
        "imports recallwatch.cli",
        "recallwatch/ops/x.py: no longer imports recallwatch.stores._common: delete it from "
        "PRIVATE_ALLOWED",
    ]


@pytest.mark.parametrize(("module", "unit"), [
    ("recallwatch", "recallwatch"),
    ("recallwatch.records", "recallwatch.records"),
    ("recallwatch.acceptance.pytest_plugin", "recallwatch.acceptance.pytest_plugin"),
    ("recallwatch.acceptance.gate", "recallwatch.acceptance"),
    ("recallwatch.bench.engines.faiss_engines", "recallwatch.bench"),
    ("recallwatch._unknown", None),
])
def test_units(module: str, unit: str | None) -> None:
    assert unit_of(module) == unit
