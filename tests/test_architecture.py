"""Structural rules of the ``flexdyn`` package, checked on its source (``ast``) and on a
built model.

* The modules form a layered import graph: no import cycle, counting imports inside
  functions (deferred imports that only hide a cycle) as well as module-level ones, and no
  submodule imports the package ``flexdyn`` itself (only ``flexdyn/__init__.py`` and
  ``flexdyn/__main__.py`` sit above the other modules).
* The fidelity names ``"full"`` / ``"ruthless"`` are dispatched on in one module,
  ``flexdyn/terms.py``.
* Joint-type names are dispatched on only by the joint registry ``flexdyn/joints.py``, the
  model-file reader ``flexdyn/model_file.py`` and the URDF reader ``flexdyn/urdf.py`` (whose
  ``"revolute"``, ``"fixed"``, … are URDF's joint types).
* The constant arrays of a built :class:`flexdyn.Model` and its bodies are read-only, and
  writing into the kinematics returned to a caller cannot corrupt the model.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import flexdyn as fd
from flexdyn import models

PACKAGE = "flexdyn"
SRC = Path(__file__).resolve().parent.parent / "src" / PACKAGE

FIDELITY_NAMES = frozenset({"full", "ruthless"})
FIDELITY_MODULE = "flexdyn/terms.py"
JOINT_TYPE_NAMES = frozenset(
    {"fixed", "revolute", "prismatic", "screw", "cylindrical", "universal", "spherical", "free"}
)
JOINT_TYPE_MODULES = frozenset({"flexdyn/joints.py", "flexdyn/model_file.py", "flexdyn/urdf.py"})
#: the closure registry and the engine's closure codes: their ``"revolute"`` key is a kind
#: of loop closure (5 rows), not a joint
CLOSURE_MODULES = ("flexdyn/constraints.py", "flexdyn/engine/closure.py")
#: the only modules that may import the package itself / whose imports may point upward
TOP_MODULES = frozenset({"flexdyn", "flexdyn.__main__"})


# ---------------------------------------------------------------------------------------------
# the package's modules
# ---------------------------------------------------------------------------------------------
def _module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every module and (sub)package ``__init__``."""
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = path
    return out


MODULES = _module_files()


def _display(name: str) -> str:
    """``flexdyn/chain.py`` style name of a module."""
    return MODULES[name].relative_to(SRC.parent).as_posix()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _parse(name: str) -> ast.Module:
    return ast.parse(MODULES[name].read_text(encoding="utf-8"), filename=str(MODULES[name]))


def test_the_package_is_found():
    assert SRC.is_dir(), SRC
    assert {"flexdyn", "flexdyn.joints", "flexdyn.spatial"} <= set(MODULES)


# ---------------------------------------------------------------------------------------------
# a. import graph
# ---------------------------------------------------------------------------------------------
def _existing(dotted: str) -> str | None:
    """The longest prefix of ``dotted`` that is a module of the package (or None)."""
    parts = dotted.split(".")
    for k in range(len(parts), 0, -1):
        cand = ".".join(parts[:k])
        if cand in MODULES:
            return cand
    return None


def imported_modules(name: str) -> Iterator[tuple[str, int]]:
    """``(module, line)`` for every import of a flexdyn module in module ``name``: at module
    level, inside functions and classes and under ``if TYPE_CHECKING`` alike.

    ``import flexdyn.x``, ``from flexdyn.x import y``, ``from .x import y``, ``from . import
    x`` and ``from .. import x`` resolve to the submodule ``flexdyn.…x`` (or, when ``y`` is
    itself a submodule, to ``flexdyn.…x.y``); ``import flexdyn`` and ``from flexdyn import
    y`` / ``from . import y`` with ``y`` not a submodule resolve to the package
    ``flexdyn`` (its ``__init__``).
    """
    package = name if _is_package(name) else name.rpartition(".")[0]
    for node in ast.walk(_parse(name)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                    target = _existing(alias.name)
                    if target:
                        yield target, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                if node.level - 1 >= len(base_parts):
                    continue  # beyond the top package: not ours
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if not (base == PACKAGE or base.startswith(PACKAGE + ".")):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES:  # ``from pkg import submodule``
                    yield sub, node.lineno
                else:
                    target = _existing(base)
                    if target:
                        yield target, node.lineno


def _ancestors(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:k]) for k in range(1, len(parts))}


def import_graph() -> tuple[dict[str, dict[str, int]], list[str]]:
    """Edges ``module -> {imported module: line}`` and the violations of "no submodule
    imports the package ``flexdyn``".

    Importing ``a.b.c`` also executes the subpackage ``a.b``'s ``__init__``: such implicit
    edges to intermediate subpackages are added, except to the importer's own ancestors
    (a package's ``__init__`` is running whenever one of its modules is imported) and to the
    top package, which the second rule covers.  Outgoing edges of ``flexdyn/__init__.py``
    and ``flexdyn/__main__.py`` are dropped: they are the top of the layering.
    """
    graph: dict[str, dict[str, int]] = {}
    package_imports = []
    for name in MODULES:
        edges: dict[str, int] = {}
        own = _ancestors(name)
        for target, line in imported_modules(name):
            if target == PACKAGE:
                if name not in TOP_MODULES:
                    package_imports.append(f"{_display(name)}:{line} imports the package "
                                           f"{PACKAGE!r} itself")
                continue
            if target == name:
                continue
            edges.setdefault(target, line)
            for pkg in _ancestors(target) - own - {PACKAGE, name}:  # a package runs its own
                edges.setdefault(pkg, line)
        graph[name] = {} if name in TOP_MODULES else edges
    return graph, package_imports


def find_cycles(graph: dict[str, dict[str, int]]) -> list[tuple[list[str], list[str]]]:
    """``(members, cycle)`` for every strongly connected component with a cycle (Tarjan's
    algorithm): its modules, and one shortest cycle through its first module as a closed
    path ``[m, …, m]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph.get(v, ()):
                components.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)

    cycles = []
    for comp in components:
        members, start = set(comp), comp[0]
        # breadth-first search for the shortest path start -> ... -> start inside comp
        prev: dict[str, str] = {}
        frontier, found = [start], None
        while frontier and found is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w not in members:
                        continue
                    if w == start:
                        found = v
                        break
                    if w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if found is not None:
                    break
            frontier = nxt
        chain = [found]  # found -> start closes the cycle; walk back to start
        while chain[-1] != start:
            chain.append(prev[chain[-1]])
        cycles.append((comp, chain[::-1] + [start]))
    return cycles


def _format_cycle(graph: dict[str, dict[str, int]], cycle: list[str]) -> str:
    steps = [f"{_display(a)}:{graph[a][b]} -> {_display(b)}"
             for a, b in zip(cycle, cycle[1:], strict=False)]
    return "\n    ".join(steps)


def test_import_graph_helpers():
    """The resolution of import statements and the cycle search (on synthetic input)."""
    g = {"a": {"b": 1}, "b": {"c": 2}, "c": {"a": 3, "d": 4}, "d": {}, "e": {"e": 5}}
    cycles = find_cycles(g)
    assert sorted((tuple(m), tuple(c)) for m, c in cycles) == [
        (("a", "b", "c"), ("a", "b", "c", "a")), (("e",), ("e", "e"))]
    assert find_cycles({"a": {"b": 1}, "b": {}}) == []
    # relative imports of the real package resolve to real modules
    targets = {t for t, _ in imported_modules("flexdyn.joints")}
    assert "flexdyn.spatial" in targets


def test_no_import_cycles():
    graph, package_imports = import_graph()
    assert not package_imports, (
        "modules other than flexdyn/__main__.py import the package flexdyn (its __init__), "
        "which imports them back:\n  " + "\n  ".join(package_imports))
    cycles = find_cycles(graph)
    assert not cycles, "import cycles among the flexdyn modules:\n  " + "\n  ".join(
        f"modules {[_display(m) for m in members]} import each other; one cycle "
        f"(module:line -> module):\n    " + _format_cycle(graph, cycle)
        for members, cycle in cycles)


def private_imports(name: str, tree: ast.Module | None = None
                    ) -> Iterator[tuple[str, str, int]]:
    """``(module, private name, line)`` of each ``from module import _name`` in module
    ``name`` (its source, or ``tree``) that names another module of the package."""
    for node in ast.walk(_parse(name) if tree is None else tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = name if _is_package(name) else name.rpartition(".")[0]
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = f"{base}.{node.module}" if node.module else base
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    yield source, alias.name, node.lineno


def test_no_module_imports_another_modules_private_names():
    offenders = [f"{_display(name)}:{line} imports {private} from {source}"
                 for name in MODULES for source, private, line in private_imports(name)]
    assert not offenders, "private names imported across modules:\n  " + "\n  ".join(
        offenders)


def test_private_imports_are_found():
    tree = ast.parse("from .kernels import _hidden, shown\nfrom ..chain import _also, __all__\n"
                     "from . import _module\n")
    found = {(s, n) for s, n, _ in private_imports("flexdyn.engine.split", tree)}
    assert found == {("flexdyn.engine.kernels", "_hidden"), ("flexdyn.chain", "_also"),
                     ("flexdyn.engine", "_module")}


# ---------------------------------------------------------------------------------------------
# b, c. dispatch on names
# ---------------------------------------------------------------------------------------------
def _constants(node: ast.AST) -> Iterator[str]:
    """String constants of ``node`` itself or of a tuple/list/set literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for elt in node.elts:
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                yield elt.value


def dispatch_strings(tree: ast.AST) -> Iterator[tuple[str, int, str]]:
    """``(string, line, how)`` for string constants that a module compares with or keys on:
    operands of comparisons (``==``, ``!=``, ``in``, ``not in``, ``is`` …, also within a
    tuple/list/set literal), keys of dict literals, constant subscripts and the values of
    ``match`` cases.  Docstrings, default arguments and dict values are not included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                for s in _constants(operand):
                    yield s, node.lineno, "comparison"
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                if key is not None:
                    for s in _constants(key):
                        yield s, key.lineno, "dict key"
        elif isinstance(node, ast.Subscript):
            for s in _constants(node.slice):
                yield s, node.lineno, "subscript"
        elif isinstance(node, ast.MatchValue):
            for s in _constants(node.value):
                yield s, node.lineno, "match case"


def offenders(names: frozenset[str]) -> dict[str, list[str]]:
    """Module (``flexdyn/x.py``) -> ``["line: how 'name'"]`` for the dispatch on ``names``."""
    out: dict[str, list[str]] = {}
    for module in MODULES:
        hits = [f"{line}: {how} {s!r}" for s, line, how in dispatch_strings(_parse(module))
                if s in names]
        if hits:
            out[_display(module)] = sorted(set(hits), key=lambda h: int(h.split(":")[0]))
    return out


def test_dispatch_string_detection():
    tree = ast.parse(
        'x == "a"\n"a" != x\nx in ("b", "c")\nd = {"e": 1}\nd["f"]\n'
        'match x:\n    case "g":\n        pass\n'
        'def f(x="h"):\n    """i"""\n    return {"k": "j"}\n')
    assert {s for s, _, _ in dispatch_strings(tree)} == {"a", "b", "c", "e", "f", "g", "k"}


def test_fidelity_names_are_dispatched_on_in_terms_only():
    found = offenders(FIDELITY_NAMES)
    others = {m: hits for m, hits in found.items() if m != FIDELITY_MODULE}
    assert not others, (
        f"fidelity names compared/keyed outside {FIDELITY_MODULE}:\n"
        + "\n".join(f"  {m}:{h}" for m, hits in others.items() for h in hits))
    assert (SRC / "terms.py").is_file(), f"{FIDELITY_MODULE} does not exist"
    assert FIDELITY_MODULE in found, (
        f"{FIDELITY_MODULE} does not dispatch on the fidelity names (\"full\"/\"ruthless\")")


def _revolute_key_lines(module: str) -> list[str]:
    """``"<line>: dict key 'revolute'"`` for the lines of ``module`` where a dict literal
    has the key ``"revolute"`` (what :func:`offenders` reports for them)."""
    text = (SRC.parent / module).read_text(encoding="utf-8").splitlines()
    return [f"{k}: dict key 'revolute'" for k, line in enumerate(text, 1)
            if '"revolute":' in line]


def test_joint_type_names_are_dispatched_on_in_joints_and_model_file_only():
    found = offenders(JOINT_TYPE_NAMES)
    for module in CLOSURE_MODULES:  # only the closure kind's name
        assert found.get(module) == _revolute_key_lines(module), module
    others = {m: hits for m, hits in found.items()
              if m not in JOINT_TYPE_MODULES and m not in CLOSURE_MODULES}
    assert not others, (
        f"joint-type names compared/keyed outside {', '.join(sorted(JOINT_TYPE_MODULES))}:\n"
        + "\n".join(f"  {m}:{h}" for m, hits in others.items() for h in hits))


# ---------------------------------------------------------------------------------------------
# d. read-only model data
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model() -> fd.Model:
    """The spacecraft: a rigid hub on a free joint carrying two flexible arrays."""
    m = models.builtin_model("spacecraft")
    assert any(b.n_modes == 0 for b in m.bodies) and any(b.n_modes > 0 for b in m.bodies)
    return m


def _arrays(obj) -> dict[str, np.ndarray]:
    return {k: v for k, v in vars(obj).items() if isinstance(v, np.ndarray)}


def _writable(arr: np.ndarray) -> bool:
    """Whether writing into ``arr`` succeeds (it writes ``arr``'s own values, so a writable
    array is left unchanged); a read-only one raises ``ValueError``."""
    try:
        arr[...] = arr.copy()
    except ValueError:
        return False
    return True


MODEL_ARRAYS = ("parent", "gravity", "n_modes", "q_start", "u_start", "nq_joint", "nu_joint")
BODY_ARRAYS = ("com", "inertia", "nodes", "node_masses", "node_inertias", "Pi_r", "Pi_t", "K",
               "C", "M_s", "M_rigid", "M_m0")


def test_model_arrays_are_read_only(model):
    arrays = _arrays(model)
    assert set(MODEL_ARRAYS) <= set(arrays), sorted(arrays)
    writable = [f"Model.{name}" for name, arr in arrays.items() if _writable(arr)]
    assert not writable, f"writable model arrays: {writable}"


def test_body_arrays_are_read_only(model):
    writable = []
    for i, body in enumerate(model.bodies):
        arrays = {**_arrays(body), "M_m0": body.M_m0}  # M_m0: computed on first use
        assert set(BODY_ARRAYS) <= set(arrays), sorted(arrays)
        writable += [f"bodies[{i}].{name}" for name, arr in arrays.items() if _writable(arr)]
        frames0 = _arrays(body.frames0)
        assert frames0, "frames0 holds no arrays"
        writable += [f"bodies[{i}].frames0.{name}" for name, arr in frames0.items()
                     if _writable(arr)]
    assert not writable, f"writable body arrays: {writable}"


@pytest.mark.parametrize("fidelity", ["full", "ruthless"])
def test_writing_into_kinematics_does_not_corrupt_the_model(model, fidelity):
    """``kin.M_m[i]`` of a rigid and of a flexible body: either read-only, or a private
    copy; afterwards the mass matrix and fresh kinematics are unchanged."""
    rng = np.random.default_rng(0)
    q = model.normalize_configuration(model.neutral_configuration()
                                      + 0.1 * rng.normal(size=model.nq))
    M_before = fd.mass_matrix(model, q, fidelity).copy()
    kin = fd.compute_kinematics(model, q, fidelity)
    rigid = next(i for i, b in enumerate(model.bodies) if b.n_modes == 0)
    flexible = next(i for i, b in enumerate(model.bodies) if b.n_modes > 0)
    before = {i: np.array(kin.M_m[i]) for i in (rigid, flexible)}
    for i in (rigid, flexible):
        try:
            kin.M_m[i][...] = 1e6
        except ValueError:
            pass
    fresh = fd.compute_kinematics(model, q, fidelity)
    for i in (rigid, flexible):
        np.testing.assert_array_equal(fresh.M_m[i], before[i],
                                      err_msg=f"M_m[{i}] changed by writing into kin.M_m[{i}]")
    np.testing.assert_array_equal(fd.mass_matrix(model, q, fidelity), M_before)
