"""Simulation results: histories, energy bookkeeping, accessors and output files.

:class:`SimulationResult` holds what :func:`flexdyn.simulate` computed (``nt`` samples) and
evaluates energies, momentum, poses and deflections from it on demand;
:class:`SimulationError` reports a failed integration.
"""

from __future__ import annotations

import csv
import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .animation import animate
from .chain import Model, state_layout
from .dynamics import check_backend, joint_wrenches
from .energy import energies, momentum
from .files import write_atomically
from .spatial import Transform
from .terms import DEFAULT_FIDELITY, check_fidelity, state_terms

__all__ = ["MAX_NPZ_BYTES", "BodyTrajectory", "SimulationError", "SimulationResult"]


class SimulationError(RuntimeError):
    """The integration failed (solver failure or non-finite state/forces).

    Attributes
    ----------
    t : float — the time of the failure (s): the right-hand-side evaluation that failed, or
        the solver's time when its step failed.
    solver_message : str — the solver's (or the failed check's) message.
    partial : SimulationResult or None — the samples computed before the failure (the
        ``t_eval`` times passed, or the accepted steps), with their energy bookkeeping.
    """

    def __init__(self, message: str, t: float, solver_message: str = "",
                 partial: SimulationResult | None = None):
        super().__init__(message)
        self.t = float(t)
        self.solver_message = solver_message or message
        self.partial = partial


#: the histories a result may lack (written to ``.npz`` when present)
_OPTIONAL_HISTORIES = ("udot", "f_ext", "constraint_forces", "closure_drift")
#: the entries of a result file that :meth:`SimulationResult.from_npz` reads
_NPZ_TEXT = ("model", "fidelity", "method", "energy_fidelity", "settings")
_NPZ_REQUIRED = ("t", "q", "u", "tau", "work", "external_work", "dissipation", "model",
                 "fidelity", "method", "energy_fidelity")
_NPZ_ENTRIES = (*_NPZ_REQUIRED, *_OPTIONAL_HISTORIES, "settings")

_NPY_HEADERS = {(1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0}

#: Largest content (bytes, all entries read together) of a result file read back.
MAX_NPZ_BYTES = 2 * 2**30


def _npy_header(path: Path, d: Any, name: str) -> tuple[tuple[int, ...], np.dtype, int]:
    """``(shape, dtype, bytes)`` of entry ``name`` of the open ``.npz`` ``d``, read from the
    entry's header without inflating its data; ``ValueError`` naming file and entry when
    the header is malformed or disagrees with the entry's stored size."""
    try:
        info = d.zip.getinfo(f"{name}.npy")
        with d.zip.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            if version not in _NPY_HEADERS:
                raise ValueError(f"format version {version} is not one numpy writes here")
            shape, _, dtype = _NPY_HEADERS[version](fh, max_header_size=2**16)
            offset = fh.tell()
    except (ValueError, OSError, EOFError, KeyError, SyntaxError, zipfile.BadZipFile) as exc:
        raise ValueError(f"{path}: entry {name!r} has no valid array header: {exc}") from None
    if dtype.hasobject:
        raise ValueError(f"{path}: entry {name!r} holds Python objects")
    if any(n < 0 for n in shape):
        raise ValueError(f"{path}: entry {name!r} has a negative size in its shape {shape}")
    size = math.prod(shape) * dtype.itemsize
    if info.file_size != offset + size:
        raise ValueError(f"{path}: entry {name!r} stores {info.file_size - offset} bytes for "
                         f"an array of shape {shape} and type {dtype} ({size} bytes)")
    return shape, dtype, size


def versions() -> dict[str, str]:
    """The versions of flexdyn, Python and the numerical libraries (stored with results)."""
    import platform
    from importlib import metadata

    out = {"python": platform.python_version()}
    for package in ("flexdyn", "numpy", "scipy", "numba"):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "unknown"
    return out


class BodyTrajectory(NamedTuple):
    """Pose history of a body frame (:meth:`SimulationResult.body_trajectory`)."""

    position: np.ndarray  #: (nt, 3) origin in the inertial frame, m
    rotation: np.ndarray  #: (nt, 3, 3) orientation (columns: the body axes in inertial axes)


@dataclass(eq=False)
class SimulationResult:
    """Histories of a simulation (``nt`` samples).

    Attributes
    ----------
    t : (nt,) times (s).
    q : (nt, nq) coordinates (unit quaternions), u : (nt, nu) speeds.
    model : the simulated Model.
    fidelity, method : the body model and forward-dynamics method used.
    work : (nt,) work done by ``τ`` since ``t[0]``, ``∫ τ·u dt`` (J), integrated with the state.
    external_work : (nt,) work of ``f_ext`` (J).
    dissipation : (nt,) energy dissipated by modal damping (J).
    tau : (nt, nu) the applied generalized forces at the samples; with
        ``simulate(..., prescribed=...)`` the prescribed entries hold the loads that realise
        the prescribed motion.
    udot : (nt, nu) the accelerations at the samples, or None (a result read from a file
        written before they were stored).
    f_ext : (nt, n_bodies, 6) the external wrenches at the body frame origins, in body
        coordinates (N m, N), the rigid parts of nodal loads included; None without any.
    constraint_forces : (nt, n_c) the closure forces ``λ`` of a closed chain at the samples
        (:func:`flexdyn.constraint_forces`); None for a tree.
    closure_drift : (nt, n_c) the closures' residuals ``g`` at the samples (m, rad); None for
        a tree.  ``max_closure_drift`` is its largest magnitude.
    energy_fidelity : body model used to evaluate energies and momentum; default: the
        simulated ``fidelity`` (each model is checked against its own energy, as Damaren &
        Sharf do).  Set ``"full"`` to measure a ruthless run against the exact energy.
    energy_backend : the tier that evaluates the energies and momentum (one of
        :data:`flexdyn.dynamics.BACKENDS`): ``"engine"`` (default), or ``"reference"``, whose
        numpy evaluation of a few hundred samples takes about as long as loading the engine's
        entry from its cache and compiles nothing (``python -m flexdyn demo``'s summary).
        Not stored by :meth:`to_npz`.
    nfev, wall_time, message : solver statistics (right-hand-side evaluations, seconds of
        the integration, solver message); ``wall_time`` leaves out the engine's compiling on
        first use, which :func:`flexdyn.simulate` reports as ``settings["compile_time"]``.
    settings : the settings of the run (integrator, tolerances, steps, method, fidelity, …;
        :func:`flexdyn.simulate` fills it), stored by :meth:`to_npz` with the versions of
        flexdyn, Python, numpy, scipy and numba (``settings["versions"]`` when read back).
    t_events, q_events, u_events : with ``simulate(..., events=...)``, per event function
        the times (s) of its zeros and the states there (lists of (n_k,), (n_k, nq),
        (n_k, nu)); None without events.
    """

    t: np.ndarray
    q: np.ndarray
    u: np.ndarray
    model: Model
    fidelity: str = DEFAULT_FIDELITY
    method: str = "articulated"
    work: np.ndarray | None = None
    external_work: np.ndarray | None = None
    dissipation: np.ndarray | None = None
    tau: np.ndarray | None = None
    udot: np.ndarray | None = None
    f_ext: np.ndarray | None = None
    constraint_forces: np.ndarray | None = None
    closure_drift: np.ndarray | None = None
    energy_fidelity: str | None = None
    energy_backend: str = "engine"
    nfev: int = 0
    wall_time: float = 0.0
    message: str = ""
    t_events: list | None = None
    q_events: list | None = None
    u_events: list | None = None
    settings: dict | None = None
    _energy_cache: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.energy_fidelity is None:
            self.energy_fidelity = self.fidelity
        check_fidelity(self.fidelity)
        check_fidelity(self.energy_fidelity, "energy_fidelity")
        check_backend(self.energy_backend)
        self.t = np.asarray(self.t, dtype=float)
        nt = self.t.size
        self.q = np.asarray(self.q, dtype=float).reshape(nt, self.model.nq)
        self.u = np.asarray(self.u, dtype=float).reshape(nt, self.model.nu)
        for name in ("work", "external_work", "dissipation"):
            v = getattr(self, name)
            setattr(self, name, np.zeros(nt) if v is None else np.asarray(v, float).reshape(nt))
        self.tau = (np.zeros((nt, self.model.nu)) if self.tau is None
                    else np.asarray(self.tau, float).reshape(nt, self.model.nu))
        if self.udot is not None:
            self.udot = np.asarray(self.udot, float).reshape(nt, self.model.nu)
        if self.f_ext is not None:
            self.f_ext = np.asarray(self.f_ext, float).reshape(nt, self.model.n_bodies, 6)
        for name in ("constraint_forces", "closure_drift"):
            v = getattr(self, name)
            if v is not None:
                setattr(self, name, np.asarray(v, float).reshape(nt, self.model.n_constraints))

    @property
    def max_closure_drift(self) -> float:
        """The largest closure residual ``max |g|`` over the samples (m, rad); 0 for a
        tree."""
        d = self.closure_drift
        return 0.0 if d is None or not d.size else float(np.max(np.abs(d)))

    def __repr__(self) -> str:
        span = f"t = {self.t[0]:.6g} … {self.t[-1]:.6g} s" if len(self) else "no samples"
        return (f"SimulationResult(model {self.model.name!r}, {len(self)} samples, {span}, "
                f"fidelity {self.fidelity!r}, {self.nfev} rhs evaluations: {self.message})")

    def __len__(self) -> int:
        return int(self.t.size)

    # -- energy ------------------------------------------------------------------------------
    def _energies(self) -> np.ndarray:
        """(nt, 2) kinetic and potential energy for the current ``energy_fidelity`` (computed
        once per fidelity, by ``energy_backend``)."""
        fid = self.energy_fidelity
        check_fidelity(fid, "energy_fidelity")
        if fid not in self._energy_cache:
            self._energy_cache[fid] = (
                np.column_stack(energies(self.model, self.q, self.u, fid,
                                         check_backend(self.energy_backend)))
                if len(self) else np.empty((0, 2)))
        return self._energy_cache[fid]

    @property
    def kinetic_energy(self) -> np.ndarray:
        """(nt,) kinetic energy ``½ uᵀ M u`` (J)."""
        return self._energies()[:, 0].copy()

    @property
    def potential_energy(self) -> np.ndarray:
        """(nt,) elastic plus gravitational energy (J)."""
        return self._energies()[:, 1].copy()

    @property
    def total_energy(self) -> np.ndarray:
        """(nt,) ``E = T + V`` (J)."""
        return self._energies().sum(axis=1)

    @property
    def energy_balance_error(self) -> np.ndarray:
        """(nt,) percentage energy-balance error ``e_E`` (Damaren & Sharf Eq 30).

        ``e_E = 100 (ΔE − ΔW_τ − ΔW_ext + ΔD) / max|E|``, each change counted from the first
        sample (``t0``, or the first of ``t_eval``, where the works need not be zero); with no
        initial energy, no external wrenches and no damping this is the paper's
        ``(E − W)/|E_peak| × 100 %``.
        """
        E = self.total_energy
        if not E.size:
            return E
        peak = float(np.max(np.abs(E)))
        W_tau, W_ext, D = self.work, self.external_work, self.dissipation
        num = (E - E[0]) - (W_tau - W_tau[0]) - (W_ext - W_ext[0]) + (D - D[0])
        return 100.0 * num / max(peak, np.finfo(float).tiny)

    @property
    def energy_balance_rms(self) -> float:
        """RMS of :attr:`energy_balance_error` over the samples, ``e_E,RMS`` (Eq 32), %."""
        e = self.energy_balance_error
        return float(np.sqrt(np.mean(e**2))) if e.size else 0.0

    def momentum(self) -> np.ndarray:
        """(nt, 6) total spatial momentum ``[angular about the origin; linear]`` in inertial
        coordinates (see :func:`flexdyn.energy.momentum`)."""
        if not len(self):
            return np.empty((0, 6))
        return momentum(self.model, self.q, self.u, self.energy_fidelity,
                        check_backend(self.energy_backend))

    def joint_wrenches(self) -> np.ndarray:
        """(nt, n_bodies, 6) the spatial force ``[moment; force]`` each joint transmits from
        the parent to the child at the samples, in the child's joint frame ``J_c`` about its
        origin (N m, N), fixed joints included (:func:`flexdyn.joint_wrenches` of the
        simulated motion and loads)."""
        if self.udot is None:
            raise ValueError("this result has no accelerations (udot): it was read from a "
                             "file without them; simulate again to get the joint wrenches")
        if not len(self):
            return np.empty((0, self.model.n_bodies, 6))
        return joint_wrenches(self.model, self.q, self.u, self.udot, self.fidelity,
                              f_ext=self.f_ext)

    # -- accessors ---------------------------------------------------------------------------
    def joint(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(q, u)`` histories of body ``name``'s joint, shapes (nt, nq_j) and (nt, nu_j)."""
        i = self.model.body_index(name)
        qs, us = int(self.model.q_start[i]), int(self.model.u_start[i])
        return (self.q[:, qs:qs + int(self.model.nq_joint[i])],
                self.u[:, us:us + int(self.model.nu_joint[i])])

    def modes(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(η, η̇)`` histories of body ``name``, shapes (nt, m) each."""
        i = self.model.body_index(name)
        m = int(self.model.n_modes[i])
        qs = int(self.model.q_start[i] + self.model.nq_joint[i])
        us = int(self.model.u_start[i] + self.model.nu_joint[i])
        return self.q[:, qs:qs + m], self.u[:, us:us + m]

    def body_pose(self, name: str, k: int) -> Transform:
        """Pose of body ``name``'s frame in the inertial frame at sample ``k``."""
        i = self.model.body_index(name)
        return state_terms(self.model, self.q[k], None, self.fidelity)[0].pose[i]

    def body_trajectory(self, name: str) -> BodyTrajectory:
        """Pose history of body ``name``'s frame in the inertial frame:
        :class:`BodyTrajectory` ``(position (nt, 3) m, rotation (nt, 3, 3))``."""
        i = self.model.index(name)
        poses = [state_terms(self.model, q, None, self.fidelity)[0].pose[i] for q in self.q]
        return BodyTrajectory(np.array([T.p for T in poses]).reshape(-1, 3),
                              np.array([T.R for T in poses]).reshape(-1, 3, 3))

    def _node(self, name: str, node: int) -> tuple[int, int]:
        i = self.model.body_index(name)
        n = self.model.bodies[i].n_nodes
        if n == 0:
            raise ValueError(f"body {name!r} has no nodes")
        if not -n <= node < n:
            raise IndexError(f"node {node} out of range for body {name!r} with {n} nodes")
        return i, node % n

    def deflection(self, name: str, node: int = -1) -> np.ndarray:
        """(nt, 3) elastic displacement ``Π_t(node) η`` of a node in its body frame (m)."""
        i, j = self._node(name, node)
        eta, _ = self.modes(name)
        return eta @ self.model.bodies[i].Pi_t[j].T

    def tip_position(self, name: str, node: int = -1) -> np.ndarray:
        """(nt, 3) inertial position of node ``node`` (default the last) of body ``name``,
        deformed: ``pose · (l0 + Π_t η)`` (m)."""
        i, j = self._node(name, node)
        body = self.model.bodies[i]
        local = body.nodes[j] + self.deflection(name, node)
        out = np.empty((len(self), 3))
        for k, q in enumerate(self.q):
            out[k] = state_terms(self.model, q, None, self.fidelity)[0].pose[i].apply(local[k])
        return out

    def node_motion(self, name: str) -> np.ndarray:
        """(nt, n, 6) the elastic motion ``Π(j) η`` of every node ``j`` of body ``name`` in
        its body frame, in flexdyn's node rows ``[rx, ry, rz, tx, ty, tz]``: the node's
        rotation (rad; the rotation vector of its frame relative to the body frame for the
        default tip kinematics) and displacement (m) — the finite-element displacement vector
        of a reduced component, node by node, for recovering stresses in the tool that made
        it.  Zeros for a body without modes."""
        i = self.model.body_index(name)
        body = self.model.bodies[i]
        if body.n_nodes == 0:
            raise ValueError(f"body {name!r} has no nodes")
        eta, _ = self.modes(name)
        return np.einsum("jcm,tm->tjc", np.concatenate([body.Pi_r, body.Pi_t], axis=1), eta)

    def modal_superposition(self, name: str, shapes: Any) -> np.ndarray:
        """(nt, k) the outputs ``y = S η`` of body ``name`` by modal superposition:
        ``shapes`` (k, m) holds, per output quantity (a stress component at a point, a
        section force, a strain gauge), its value per unit of each of the body's ``m`` modal
        coordinates — the modal stress or force shapes a finite-element tool computes for
        the same modes (in the same order and normalization as the body's ``modes``).
        ``ValueError`` naming the body and the expected shape."""
        i = self.model.body_index(name)
        m = int(self.model.n_modes[i])
        S = np.asarray(shapes, dtype=float)
        if S.ndim == 1 and m:
            S = S[None, :]
        if S.ndim != 2 or S.shape[1] != m:
            raise ValueError(f"body {name!r} has {m} modal coordinates: shapes must have shape "
                             f"(k, {m}), one row per output, got {S.shape}")
        if not np.all(np.isfinite(S)):
            raise ValueError(f"body {name!r}: shapes has non-finite entries")
        eta, _ = self.modes(name)
        return eta @ S.T

    def max_tip_deflection(self) -> dict[str, float]:
        """Largest ``|Π_t η|`` of each flexible body's last node over the run (m)."""
        return {b.name: float(np.max(np.linalg.norm(self.deflection(b.name), axis=1)))
                for b in self.model.bodies if b.n_modes and b.n_nodes}

    # -- output ------------------------------------------------------------------------------
    def _columns(self) -> tuple[list[str], np.ndarray]:
        lay = state_layout(self.model)
        names = (["t"] + ["q:" + e.name for e in lay["q"]] + ["u:" + e.name for e in lay["u"]]
                 + ["tau:" + e.name for e in lay["u"]]
                 + ["work", "external_work", "dissipation", "kinetic_energy",
                    "potential_energy", "total_energy", "energy_balance_error_pct"])
        data = np.column_stack([self.t, self.q, self.u, self.tau, self.work, self.external_work,
                                self.dissipation, self.kinetic_energy, self.potential_energy,
                                self.total_energy, self.energy_balance_error])
        return names, data

    def to_csv(self, path: str | Path, *, overwrite: bool = True) -> None:
        """Write one row per sample: ``t``, ``q``, ``u``, ``τ``, work, energies and ``e_E``;
        the header names the columns (``q:<body>.<component>``, see
        :func:`~flexdyn.chain.state_layout`).

        The file is replaced atomically (:func:`flexdyn.files.write_atomically`): a failed
        write leaves an existing ``path`` intact; ``overwrite=False`` refuses an existing
        ``path`` with ``FileExistsError``."""
        names, data = self._columns()

        def write(fh) -> None:
            w = csv.writer(fh)
            w.writerow(names)
            for row in data:
                w.writerow([repr(float(v)) for v in row])

        write_atomically(path, write, overwrite=overwrite)

    def to_npz(self, path: str | Path, *, overwrite: bool = True) -> None:
        """Save the histories, energies and the model (as model-file JSON) to ``.npz``;
        read back with :meth:`from_npz`.  ``path`` is written as given (no suffix is added)
        and replaced atomically (:func:`flexdyn.files.write_atomically`): a failed write
        leaves an existing ``path`` intact; ``overwrite=False`` refuses an existing ``path``
        with ``FileExistsError``."""
        model_json = json.dumps(self.model.to_dict())
        write_atomically(path, lambda fh: np.savez_compressed(
            fh, t=self.t, q=self.q, u=self.u, tau=self.tau, work=self.work,
            **{name: getattr(self, name) for name in _OPTIONAL_HISTORIES
               if getattr(self, name) is not None},
            external_work=self.external_work, dissipation=self.dissipation,
            kinetic_energy=self.kinetic_energy, potential_energy=self.potential_energy,
            total_energy=self.total_energy, energy_balance_error=self.energy_balance_error,
            fidelity=np.array(self.fidelity), method=np.array(self.method),
            energy_fidelity=np.array(self.energy_fidelity), model=np.array(model_json),
            settings=np.array(json.dumps({**(self.settings or {}), "versions": versions()})),
        ), binary=True, overwrite=overwrite)

    @classmethod
    def from_npz(cls, path: str | Path, *, max_bytes: int = MAX_NPZ_BYTES) -> SimulationResult:
        """Load a result written by :meth:`to_npz`.

        Every entry's shape and type are read from its header and checked against the
        model's sizes (``t`` (nt,), ``q`` (nt, nq), ...) before any array is inflated, and
        the entries read may hold at most ``max_bytes`` together, so that a small crafted
        file cannot exhaust the memory.  The times must be finite and increasing.

        Raises
        ------
        ValueError
            Naming the file and the entry, for anything but a well-formed result: a missing
            entry, a wrong shape or type, a model that does not load, too large a content.
        """
        path = Path(path)
        try:
            archive = np.load(path, allow_pickle=False)
        except (ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise ValueError(f"{path}: not a result file (.npz): {exc}") from None
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise ValueError(f"{path}: not a result file (.npz): a single array")
        with archive as d:
            return cls._from_archive(path, d, max_bytes)

    @classmethod
    def _from_archive(cls, path: Path, d: Any, max_bytes: int) -> SimulationResult:
        """:meth:`from_npz` of the open archive ``d``."""
        headers = {name: _npy_header(path, d, name) for name in _NPZ_ENTRIES if name in d}
        for name in _NPZ_REQUIRED:
            if name not in headers:
                raise ValueError(f"{path}: entry {name!r} is missing: not a result written "
                                 "by SimulationResult.to_npz")
        total = sum(n for _, _, n in headers.values())
        if total > max_bytes:
            raise ValueError(f"{path}: the entries hold {total} bytes, more than the limit "
                             f"of {max_bytes} bytes (from_npz(..., max_bytes=...))")
        for name, (shape, dtype, _) in headers.items():
            text = name in _NPZ_TEXT
            if (dtype.kind == "U" and shape == ()) != text or (
                    not text and dtype.kind not in "biuf"):
                raise ValueError(f"{path}: entry {name!r} holds {dtype} of shape {shape}, "
                                 f"expected {'one string' if text else 'numbers'}")

        def entry(name: str) -> Any:
            try:
                return d[name]
            except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
                raise ValueError(f"{path}: entry {name!r} does not read: {exc}") from None

        def decode(name: str) -> Any:
            try:
                return json.loads(str(entry(name)))
            except (ValueError, RecursionError) as exc:
                raise ValueError(f"{path}: entry {name!r} is not JSON: "
                                 f"{type(exc).__name__}: {exc}") from None

        try:
            model = Model.from_dict(decode("model"))
        except (ValueError, TypeError, KeyError, IndexError, AttributeError,
                RecursionError) as exc:
            raise ValueError(f"{path}: entry 'model' is not a valid model: "
                             f"{type(exc).__name__}: {exc}") from None
        nt = headers["t"][0][0] if len(headers["t"][0]) == 1 else -1
        shapes = {"t": (nt,), "q": (nt, model.nq), "u": (nt, model.nu), "tau": (nt, model.nu),
                  "work": (nt,), "external_work": (nt,), "dissipation": (nt,),
                  "udot": (nt, model.nu), "f_ext": (nt, model.n_bodies, 6),
                  "constraint_forces": (nt, model.n_constraints),
                  "closure_drift": (nt, model.n_constraints)}
        for name, want in shapes.items():
            if name in headers and headers[name][0] != want:
                raise ValueError(f"{path}: entry {name!r} has shape {headers[name][0]}, "
                                 f"expected {want} (nt = {headers['t'][0]} samples of a model "
                                 f"with nq = {model.nq}, nu = {model.nu})")
        t = entry("t").astype(float)
        if not np.all(np.isfinite(t)) or np.any(np.diff(t) <= 0):
            raise ValueError(f"{path}: entry 't' must hold finite, increasing times")
        try:
            settings = decode("settings") if "settings" in d else None
            return cls(t=t, q=entry("q"), u=entry("u"), model=model,
                       fidelity=str(entry("fidelity")), method=str(entry("method")),
                       work=entry("work"), external_work=entry("external_work"),
                       dissipation=entry("dissipation"), tau=entry("tau"),
                       **{name: entry(name) if name in d else None
                          for name in _OPTIONAL_HISTORIES},
                       energy_fidelity=str(entry("energy_fidelity")),
                       settings=settings if isinstance(settings, dict) else None)
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{path}: {exc}") from None

    def animate(self, path: str | Path, **options: Any) -> Path:
        """Write an animation of the deformed bodies to ``path`` (``.gif``, or ``.mp4``
        with imageio-ffmpeg); :func:`flexdyn.animation.animate` for the ``options``
        (``fps``, ``frames``, ``exaggerate``, view)."""
        return animate(self, path, **options)

    def plot(self, path: str | Path | None = None, *, overwrite: bool = True):
        """Plot joint coordinates (quaternions left out), modal coordinates and ``e_E``.

        Returns the matplotlib ``Figure``; saves it to ``path`` when given (atomically;
        ``overwrite=False`` refuses an existing file).  Needs matplotlib
        (``pip install 'flexdyn[plot]'``).
        """
        try:
            from matplotlib.figure import Figure
        except ImportError:
            raise ImportError(
                "SimulationResult.plot needs matplotlib; install the 'plot' extra: "
                "pip install 'flexdyn[plot]'"
            ) from None
        lay = state_layout(self.model)
        fig = Figure(figsize=(8, 8), layout="constrained")
        ax1, ax2, ax3 = fig.subplots(3, 1, sharex=True)
        for e in lay["q"]:
            if e.kind in ("angle", "displacement", "position"):
                ax1.plot(self.t, self.q[:, e.index], label=e.name)
            elif e.kind in ("modal", "nodal"):
                ax2.plot(self.t, self.q[:, e.index], label=e.name)
            elif e.name.endswith(".qw"):  # a quaternion: plot its rotation vector
                rv = _rotation_vectors(self.q[:, e.index:e.index + 4])
                for c in range(3):
                    ax1.plot(self.t, rv[:, c], label=f"{e.body}.rot_{'xyz'[c]}")
        ax1.set_ylabel("joint coordinates\n(rad, m)")
        ax2.set_ylabel("elastic coordinates\n(η, node displacements)")
        ax3.plot(self.t, self.energy_balance_error, color="k")
        ax3.set_ylabel("energy balance\nerror e_E (%)")
        ax3.set_xlabel("t (s)")
        for ax in (ax1, ax2):
            if ax.lines:
                ax.legend(fontsize="small", ncols=2, loc="best")
        fig.suptitle(f"{self.model.name} ({self.fidelity}, {self.method})")
        if path is not None:
            fmt = Path(path).suffix[1:].lower() or "png"
            write_atomically(path, lambda fh: fig.savefig(fh, format=fmt, dpi=120),
                             binary=True, overwrite=overwrite)
        return fig


def _rotation_vectors(quat: np.ndarray) -> np.ndarray:
    """Rotation vectors (n, 3) of unit quaternions ``[w, x, y, z]`` (n, 4), angles in [0, π]."""
    q = np.where(quat[:, :1] < 0, -quat, quat)
    s = np.linalg.norm(q[:, 1:], axis=1)
    angle = 2.0 * np.arctan2(s, q[:, 0])
    scale = np.where(s > 1e-12, angle / np.where(s > 1e-12, s, 1.0), 2.0)
    return q[:, 1:] * scale[:, None]
