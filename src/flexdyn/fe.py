"""Finite-element components: a structure's mass and stiffness matrices with its node
coordinates, checked, and reduced to a flexible body of flexdyn.

A :class:`Component` holds what a finite-element tool exports for one part — node positions
(n × 3, in the frame the body will use), the mass and stiffness matrices (N × N, dense or
scipy sparse, ``N = dofs_per_node · n``, node-major in the finite-element order
``[tx, ty, tz, rx, ry, rz]`` per node, or ``[tx, ty, tz]`` for solid-element nodes) and
optionally a damping matrix.  :meth:`Component.reduce` turns it into the ``flex`` block of a
body (:meth:`flexdyn.ModelBuilder.add_body`) by one of three bases: the fixed-interface
normal modes of the component clamped at the node the joint holds (``"cantilever"``), those
with every interface node clamped plus the interface nodes' static constraint modes (Craig &
Bampton 1968, ``"craig-bampton"``), or the free-free elastic modes (``"free-interface"``).

A lumped mass matrix (diagonal in the translations, a 3 × 3 rotary block per node) becomes
the body's node masses and rotary inertias; a consistent (coupled) one becomes the inertia
invariants of its kinetic energy on the modes (:class:`flexdyn.body.InertiaInvariants`:
the rigid-body mass, first moment and inertia, the rigid–elastic coupling and their
dependence on the modal coordinates, all from the matrix itself), which every fidelity and
algorithm runs.  The component's rigid-body mass, centre of mass and inertia, from its mass
matrix and its rigid-body motions, are reported by :meth:`Component.rigid_body` and
:meth:`info`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy

from .body import InertiaInvariants
from .files import write_atomically

__all__ = ["METHODS", "Component", "RigidBody", "load_component", "read_matrix_market"]

#: the bases of :meth:`Component.reduce`
METHODS = ("craig-bampton", "cantilever", "free-interface")
#: the relative size of an asymmetry, and of an eigenvalue of K, taken as round-off
_SYMMETRY_RTOL = 1e-9
_NULL_RTOL = 1e-9


@dataclass(frozen=True)
class RigidBody:
    """The rigid-body mass properties of a component: ``mass`` (kg), ``com`` (3,) (m, in the
    component's frame) and ``inertia`` (3, 3) about the centre of mass (kg m²)."""

    mass: float
    com: np.ndarray
    inertia: np.ndarray


class Component:
    """A finite-element component (module docstring).

    Parameters
    ----------
    nodes : (n, 3) node positions (m), in the frame of the body the component becomes.
    mass, stiffness : (N, N) symmetric matrices, dense or scipy sparse, ``N`` =
        ``dofs_per_node · n``, node-major, each node's DOFs ``[tx, ty, tz, rx, ry, rz]``
        (``dofs_per_node=3``: ``[tx, ty, tz]``); SI units (kg, kg m², N/m, N m/rad).  Free-free
        matrices are the normal input: the stiffness has the rigid-body motions in its null
        space.
    dofs_per_node : 6 or 3.
    damping : (N, N) symmetric, or None.
    name : for messages.

    Raises ``ValueError`` naming the matrix and what is wrong: shapes, non-finite entries,
    asymmetry, a mass matrix that is not positive semi-definite or has no positive mass, a
    stiffness that is not positive semi-definite.
    """

    def __init__(self, nodes: Any, mass: Any, stiffness: Any, *, dofs_per_node: int = 6,
                 damping: Any = None, name: str | None = None):
        self.name = name or "component"
        where = f"component {self.name!r}"
        if dofs_per_node not in (3, 6):
            raise ValueError(f"{where}: dofs_per_node must be 6 or 3, got {dofs_per_node!r}")
        nodes = np.array(nodes, dtype=float)
        if nodes.ndim != 2 or nodes.shape[1] != 3 or not len(nodes):
            raise ValueError(f"{where}: nodes must have shape (n, 3), got {nodes.shape}")
        if not np.all(np.isfinite(nodes)):
            raise ValueError(f"{where}: nodes has non-finite entries")
        self.nodes, self.dofs_per_node = nodes, int(dofs_per_node)
        n_dof = self.dofs_per_node * len(nodes)
        self.mass = _matrix(where, "mass", mass, n_dof)
        self.stiffness = _matrix(where, "stiffness", stiffness, n_dof)
        self.damping = None if damping is None else _matrix(where, "damping", damping, n_dof)
        eigenvalues = {label: np.linalg.eigvalsh(matrix)
                       for label, matrix in (("mass", self.mass), ("stiffness", self.stiffness))}
        for label, eig in eigenvalues.items():
            if eig[0] < -_NULL_RTOL * max(eig[-1], 0.0):
                raise ValueError(f"{where}: {label} is not positive semi-definite (eigenvalue "
                                 f"{eig[0]:.3g}, largest {eig[-1]:.3g})")
        eig = eigenvalues["stiffness"]
        #: the rigid-body motions the stiffness leaves free (6 for a free-free component):
        #: its eigenvalues at round-off of the largest
        self.free_motions = int(np.sum(eig <= _NULL_RTOL * max(eig[-1], 0.0)))
        if self.rigid_body().mass <= 0.0:
            raise ValueError(f"{where}: mass gives the component no mass in translation")

    @property
    def n_nodes(self) -> int:
        return len(self.nodes)

    @property
    def n_dof(self) -> int:
        return self.dofs_per_node * self.n_nodes

    def rigid_modes(self) -> np.ndarray:
        """(N, 6) the component's rigid-body motions in its DOFs: columns a unit translation
        along x, y, z and a unit rotation about x, y, z through the origin (``t = θ × p``
        at each node, and ``r = θ`` where nodes have rotations)."""
        d = self.dofs_per_node
        modes = np.zeros((self.n_nodes, d, 6))
        modes[:, :3, :3] = np.eye(3)
        x, y, z = self.nodes.T
        zero = np.zeros_like(x)
        # θ × p as a matrix of θ: −p̃
        modes[:, :3, 3:] = -np.stack([np.stack([zero, -z, y], -1), np.stack([z, zero, -x], -1),
                                      np.stack([-y, x, zero], -1)], 1)
        if d == 6:
            modes[:, 3:, 3:] = np.eye(3)
        return modes.reshape(self.n_dof, 6)

    def rigid_body(self) -> RigidBody:
        """The mass, centre of mass and inertia about it from the mass matrix and
        :meth:`rigid_modes` (``Φ_Rᵀ M Φ_R`` is the 6 × 6 spatial inertia about the origin)."""
        R = self.rigid_modes()
        inertia = R.T @ self.mass @ R
        m = float(inertia[0, 0])
        if m <= 0.0:
            return RigidBody(m, np.zeros(3), np.zeros((3, 3)))
        # the coupling block is m c̃ᵀ (translation × rotation): c from its skew part
        coupling = inertia[:3, 3:] / m
        com = np.array([coupling[1, 2], coupling[2, 0], coupling[0, 1]])
        c = _skew(com)
        return RigidBody(m, com, inertia[3:, 3:] + m * c @ c)

    def is_lumped(self) -> bool:
        """Whether the mass matrix is lumped: diagonal in the translations, with a 3 × 3
        rotary block per node (the form of flexdyn's node masses and inertias)."""
        d = self.dofs_per_node
        blocks = np.zeros_like(self.mass, dtype=bool)
        for j in range(self.n_nodes):
            s = j * d
            blocks[s:s + 3, s:s + 3] = np.eye(3, dtype=bool)
            if d == 6:
                blocks[s + 3:s + 6, s + 3:s + 6] = True
        tol = _SYMMETRY_RTOL * np.max(np.abs(self.mass))  # round-off of a turned matrix
        translational = self.mass.reshape(self.n_nodes, d, self.n_nodes, d)[
            np.arange(self.n_nodes), :3, np.arange(self.n_nodes), :3]
        equal = np.allclose(translational, translational[:, :1, :1] * np.eye(3), rtol=0.0,
                            atol=tol)
        return bool(np.max(np.abs(self.mass[~blocks]), initial=0.0) <= tol and equal)

    def info(self) -> str:
        """A summary: nodes, DOFs, the mass matrix's form, the rigid-body properties, the
        number of rigid-body motions the stiffness leaves free."""
        rb, free = self.rigid_body(), self.free_motions
        com, inertia = ((np.round(a, 6) + 0.0).tolist() for a in (rb.com, rb.inertia))  # no -0
        form = "lumped" if self.is_lumped() else "consistent"
        return (f"component {self.name!r}: {self.n_nodes} nodes, {self.n_dof} DOFs "
                f"({self.dofs_per_node} per node), {form} mass; mass {rb.mass:.6g} kg, centre "
                f"of mass {com} m, inertia about it (kg m²) {inertia}; the stiffness leaves "
                f"{free} rigid-body motion{'s' * (free != 1)} free"
                f"{'' if free == 6 else ' (6 for a free-free component)'}")

    def reduce(self, attach: int, *, interface: Sequence[int] = (), n_modes: int | None = None,
               max_frequency: float | None = None,
               method: str = "craig-bampton") -> dict[str, Any]:
        """The ``flex`` block of a body made of this component (the body frame is the frame
        of :attr:`nodes`; join it at node ``attach``: ``child_node=attach``).

        The normal modes are chosen by count, ``n_modes``, or by frequency,
        ``max_frequency`` (Hz: every mode up to it); give one of the two.
        ``method``: ``"cantilever"``, the lowest normal modes of the component
        with ``attach`` clamped; ``"craig-bampton"``, those with ``attach`` and every node of
        ``interface`` clamped, plus the static constraint modes of the interface nodes'
        DOFs (``K u = 0`` with one interface DOF at 1, the others and ``attach`` at 0);
        ``"free-interface"``, the lowest free-free elastic modes.  Massless DOFs
        (rotations of nodes without rotary inertia) are condensed statically.  The modes are
        mass-normalized where they are normal modes; the body's modal stiffness is ``Φᵀ K Φ``
        and its damping ``Φᵀ C Φ``.

        A lumped mass matrix (:meth:`is_lumped`) becomes node masses and rotary inertias, a
        consistent one the block's ``inertia_invariants_0/1/2``
        (:class:`flexdyn.body.InertiaInvariants`) with massless nodes.
        """
        where = f"component {self.name!r}"
        if method not in METHODS:
            raise ValueError(f"{where}: method={method!r} is not one of "
                             f"{', '.join(map(repr, METHODS))}")
        nodes_ok = set(range(self.n_nodes))
        for label, node in (("attach", attach), *(("interface", k) for k in interface)):
            if not isinstance(node, (int, np.integer)) or int(node) not in nodes_ok:
                raise ValueError(f"{where}: {label} node {node!r} is not a node index in "
                                 f"[0, {self.n_nodes - 1}]")
        if int(attach) in {int(k) for k in interface}:
            raise ValueError(f"{where}: the attach node {attach} is also in interface")
        if method != "craig-bampton" and len(interface):
            raise ValueError(f"{where}: interface nodes are for method='craig-bampton'")
        if (n_modes is None) == (max_frequency is None):
            raise ValueError(f"{where}: give one of n_modes and max_frequency")
        if n_modes is not None and (not isinstance(n_modes, (int, np.integer)) or n_modes < 0):
            raise ValueError(f"{where}: n_modes must be an integer >= 0, got {n_modes!r}")
        if max_frequency is not None and not max_frequency >= 0.0:
            raise ValueError(f"{where}: max_frequency must be >= 0 (Hz), got {max_frequency!r}")
        d = self.dofs_per_node
        dofs = lambda node: list(range(node * d, node * d + d))  # noqa: E731
        fixed = [] if method == "free-interface" else dofs(int(attach))
        boundary = [k for node in interface for k in dofs(int(node))]
        M, K = self.mass, self.stiffness
        massless = np.flatnonzero(np.diag(M) == 0.0)
        inner = np.setdiff1d(np.arange(self.n_dof), np.r_[fixed, boundary].astype(int))
        # normal modes of the inner DOFs (the clamped ones at 0), massless DOFs condensed
        normal = _normal_modes(K, M, inner, massless, n_modes, max_frequency, where,
                               rigid=6 if method == "free-interface" else 0)
        columns = [normal]
        if boundary:  # constraint modes: K_ii ψ_i = −K_ib at each unit interface DOF
            psi = np.zeros((self.n_dof, len(boundary)))
            psi[boundary, np.arange(len(boundary))] = 1.0
            psi[inner] = -np.linalg.solve(K[np.ix_(inner, inner)], K[np.ix_(inner, boundary)])
            columns.append(psi)
        phi = np.column_stack(columns)
        stiffness = phi.T @ K @ phi
        damping = (np.zeros_like(stiffness) if self.damping is None
                   else phi.T @ self.damping @ phi)
        # the component's DOFs in flexdyn's node rows [rx, ry, rz, tx, ty, tz]
        n = self.n_nodes
        order = np.r_[3:6, 0:3] if d == 6 else np.r_[3:6]
        rows = (6 * np.arange(n)[:, None] + order[None, :]).ravel()
        modes = np.zeros((6 * n, phi.shape[1]))
        modes[rows] = phi
        block = {"nodes": self.nodes.copy(), "modes": modes,
                 "stiffness": 0.5 * (stiffness + stiffness.T),
                 "damping": 0.5 * (damping + damping.T)}
        if self.is_lumped():  # node masses and rotary inertias
            blocks = M.reshape(n, d, n, d)
            at = np.arange(n)
            return block | {"node_masses": blocks[at, 0, at, 0].copy(),
                            "node_inertias": (blocks[at, 3:, at, 3:].copy() if d == 6
                                              else np.zeros((n, 3, 3)))}
        mass = np.zeros((6 * n, 6 * n))
        mass[np.ix_(rows, rows)] = M
        by_node = modes.reshape(n, 6, -1)
        invariants = InertiaInvariants.of(self.nodes, mass, by_node[:, :3], by_node[:, 3:])
        return block | {"node_masses": np.zeros(n), "node_inertias": np.zeros((n, 3, 3)),
                        "inertia_invariants_0": invariants.I0,
                        "inertia_invariants_1": invariants.I1,
                        "inertia_invariants_2": invariants.I2}

    def save(self, path: str | Path, *, overwrite: bool = True) -> None:
        """Write the component as flexdyn's ``.npz`` component file (:func:`load_component`
        reads it), atomically."""
        arrays = {"nodes": self.nodes, "mass": self.mass, "stiffness": self.stiffness,
                  "dofs_per_node": np.array(self.dofs_per_node), "name": np.array(self.name)}
        if self.damping is not None:
            arrays["damping"] = self.damping

        def write(f: Any) -> None:
            np.savez_compressed(f, **arrays)

        write_atomically(Path(path), write, binary=True, overwrite=overwrite)


def load_component(path: str | Path) -> Component:
    """A :class:`Component` from flexdyn's ``.npz`` component file
    (:meth:`Component.save`): arrays ``nodes``, ``mass``, ``stiffness``, ``dofs_per_node``,
    ``name`` and optionally ``damping``.  ``ValueError`` naming the file and entry."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as data:
        missing = [k for k in ("nodes", "mass", "stiffness", "dofs_per_node") if k not in data]
        if missing:
            raise ValueError(f"{path}: not a flexdyn component file (no {', '.join(missing)})")
        return Component(data["nodes"], data["mass"], data["stiffness"],
                         dofs_per_node=int(data["dofs_per_node"]),
                         damping=data["damping"] if "damping" in data else None,
                         name=str(data["name"]) if "name" in data else path.stem)


def read_matrix_market(nodes: str | Path, mass: str | Path, stiffness: str | Path, *,
                       dofs_per_node: int = 6, damping: str | Path | None = None,
                       name: str | None = None) -> Component:
    """A :class:`Component` from a node table and Matrix Market files, as finite-element
    tools export them: ``nodes`` a CSV file of one node per line, ``x, y, z`` in metres (a
    header line and a leading node-number column are allowed: with four columns the first
    is taken as the node number and the rows are sorted by it), ``mass``, ``stiffness`` and
    optionally ``damping`` ``.mtx`` files (read by ``scipy.io.mmread``; a symmetric file stores
    one triangle).  ``ValueError`` naming the file."""
    path = Path(nodes)
    try:
        table = np.loadtxt(path, delimiter=",", ndmin=2,
                           skiprows=1 if not _numeric_line(path) else 0)
    except ValueError as exc:
        raise ValueError(f"{path}: not a CSV node table of x, y, z (m): {exc}") from None
    if table.shape[1] == 4:
        table = table[np.argsort(table[:, 0], kind="stable"), 1:]
    if table.shape[1] != 3:
        raise ValueError(f"{path}: a node table needs 3 columns (x, y, z) or 4 (number, x, y, "
                         f"z), got {table.shape[1]}")

    def read(file: str | Path) -> Any:
        try:
            return scipy.io.mmread(file)
        except (OSError, ValueError) as exc:
            raise ValueError(f"{file}: not a Matrix Market file: {exc}") from None

    return Component(table, read(mass), read(stiffness), dofs_per_node=dofs_per_node,
                     damping=None if damping is None else read(damping),
                     name=name or path.stem)


def _numeric_line(path: Path) -> bool:
    """Whether the first line of ``path`` holds numbers (no header)."""
    with open(path, encoding="utf-8") as f:
        first = f.readline().split(",")
    try:
        [float(v) for v in first]
    except ValueError:
        return False
    return True


def _matrix(where: str, label: str, value: Any, n: int) -> np.ndarray:
    """A symmetric (n, n) float matrix from a dense or sparse one, ``ValueError`` naming it."""
    a = value.toarray() if scipy.sparse.issparse(value) else np.asarray(value, dtype=float)
    if a.shape != (n, n):
        raise ValueError(f"{where}: {label} must have shape ({n}, {n}) (dofs_per_node x nodes), "
                         f"got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{where}: {label} has non-finite entries")
    scale = np.max(np.abs(a)) if a.size else 0.0
    if np.max(np.abs(a - a.T), initial=0.0) > _SYMMETRY_RTOL * scale:
        raise ValueError(f"{where}: {label} is not symmetric (largest |A - Aᵀ| "
                         f"{np.max(np.abs(a - a.T)):.3g} of {scale:.3g})")
    return 0.5 * (a + a.T)


def _skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def _normal_modes(K: np.ndarray, M: np.ndarray, inner: np.ndarray, massless: np.ndarray,
                  n_modes: int | None, max_frequency: float | None, where: str,
                  rigid: int) -> np.ndarray:
    """(N, k) the lowest mass-normalized normal modes of ``K φ = ω² M φ`` on the DOFs
    ``inner`` (the others 0), its massless DOFs condensed statically, the first ``rigid``
    (zero-frequency) modes left out: ``n_modes`` of them, or those up to ``max_frequency``
    (Hz)."""
    heavy = np.setdiff1d(inner, massless)
    light = np.intersect1d(inner, massless)
    Khh = K[np.ix_(heavy, heavy)]
    recover = np.zeros((len(light), len(heavy)))
    if len(light):
        recover = -np.linalg.solve(K[np.ix_(light, light)], K[np.ix_(light, heavy)])
        Khh = Khh + K[np.ix_(heavy, light)] @ recover
    Khh, Mhh = 0.5 * (Khh + Khh.T), M[np.ix_(heavy, heavy)]
    if max_frequency is not None:  # every elastic mode (ascending) up to the frequency
        w2, vec = scipy.linalg.eigh(Khh, Mhh)
        vec = vec[:, rigid:][:, w2[rigid:] <= (2.0 * np.pi * max_frequency) ** 2]
        n_modes = vec.shape[1]
    else:
        available = len(heavy) - rigid
        if n_modes > available:
            raise ValueError(f"{where}: n_modes={n_modes} is more than the {available} "
                             "elastic modes the component has with these DOFs clamped")
        if n_modes == 0:
            return np.zeros((M.shape[0], 0))
        w2, vec = scipy.linalg.eigh(Khh, Mhh, subset_by_index=[rigid, rigid + n_modes - 1])
    modes = np.zeros((M.shape[0], n_modes))
    modes[heavy] = vec
    modes[light] = recover @ vec
    for i in range(n_modes):  # the sign: the largest entry positive
        k = np.argmax(np.abs(modes[:, i]))
        modes[:, i] *= np.sign(modes[k, i]) or 1.0
    return modes
