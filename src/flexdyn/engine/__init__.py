"""The compiled engine (numba): one packed model per (model, fidelity), joint kernels by
code, one body kernel per body model, generic sweeps (:mod:`flexdyn.engine.kernels`), the
flexible/hinge split of the articulated-body algorithm (:mod:`flexdyn.engine.split`), and
entries compiled on first use for ``M⁻¹ b`` and the energies and momentum
(:mod:`flexdyn.engine.extras`)."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from ..articulated_body import SplitFactors
from ..chain import Model
from ..linalg import SingularInertiaError
from ..ruthless import RuthlessBodyModel
from ..startup import uncollected
from ..terms import DEFAULT_FIDELITY, body_models, deformed_geometry
from . import caching, closure, derivatives, extras, kernels, layout, rigid_tree, split, stages
from .pack import Packed, pack, pack_split

__all__ = ["BATCH_OPS", "DERIVATIVE_METHODS", "OP_STAGES", "SPLIT", "CEntry", "Engine",
           "kernel_array"]


#: the method of the flexible/hinge split (Eqs 62–64), whose entries take the split's buffers
#: after the packed model's and are compiled on first use
SPLIT = "articulated-split"
#: compiled forward dynamics by method: ``(ib, fb, [sib, sfb,] q, u, tau, f_ext, udot) ->
#: status``
_FORWARD = {"articulated": kernels.forward_articulated, "composite": kernels.forward_composite,
            SPLIT: split.forward_split}
#: the operations of :meth:`Engine.batch`: their codes of :func:`flexdyn.engine.kernels.batch`,
#: None for :data:`SPLIT` (:func:`flexdyn.engine.split.batch`) and the entries of
#: :mod:`flexdyn.engine.extras`
BATCH_OPS = {"articulated": kernels.ARTICULATED, "composite": kernels.COMPOSITE,
             "inverse": kernels.INVERSE, "mass": kernels.MASS, SPLIT: None, "mass_inverse": None,
             "energy_momentum": None, "joint_wrenches": None}
#: forward-dynamics methods of the state derivative by name (codes of the C entry,
#: :mod:`flexdyn.engine.ccall`)
DERIVATIVE_METHODS = {"articulated": kernels.ARTICULATED, "composite": kernels.COMPOSITE}
#: the compiled state derivative by method: ``(ib, fb, x, tau, f_ext, xdot) -> status``
_DERIVATIVE = {"articulated": kernels.derivative_articulated,
               "composite": kernels.derivative_composite}
#: the entries of a rigid tree on one-dof joints (:func:`flexdyn.engine.rigid_tree.is_rigid_tree`)
#: by the method they replace: forward dynamics, the state derivative and the batch entry
_RIGID_TREE_FORWARD = {"articulated": kernels.forward_rigid_tree}
_RIGID_TREE_DERIVATIVE = {"articulated": kernels.derivative_rigid_tree}
_RIGID_TREE_BATCH = {"articulated": kernels.batch_rigid_tree}
#: the stages (:mod:`flexdyn.engine.stages`) that the entries of each operation call, which
#: their caller compiles (:meth:`Engine.stage_buffers`): ``"implicit"`` the compiled
#: integrators (:func:`flexdyn.engine.galpha.generalized_alpha`), ``"implicit_exact"`` with
#: their exact iteration matrix, ``"derivatives"`` those of :mod:`flexdyn.engine.derivatives`
#: (the derivatives of one state among them), ``"terms"`` the entries
#: that run the terms and their own sweeps (hybrid dynamics, the split, the closures)
OP_STAGES = {
    "articulated": ("position", "velocity", "articulated"),
    "composite": ("position", "velocity", "newton_euler", "composite"),
    "inverse": ("position", "velocity", "newton_euler"),
    "mass": ("position", "composite"),
    "terms": ("position", "velocity"),
    "mass_inverse": ("position",),
    "energy_momentum": ("position",),
    "joint_wrenches": ("position", "velocity", "newton_euler"),
    "implicit": ("position", "velocity", "newton_euler", "composite"),
    "implicit_exact": ("position", "velocity", "newton_euler", "composite", "derivatives"),
    "derivatives": ("position", "velocity", "composite", "derivatives"),
}
#: states per thread below which a batch is not shared among threads
STATES_PER_THREAD = 64


def _machine_code(entry: Callable, *args) -> Callable:
    """The compiled code of the entry ``entry`` for the types of ``args`` (compiled, or
    loaded from the cache, on first use), called from Python without numba's dispatch, which
    resolves the type of every argument on every call.  The code does not check its
    arguments: its caller passes arrays of exactly these types (dtype, dimensions, layout)
    and shapes."""
    signature = tuple(numba.typeof(a) for a in args)
    with uncollected(caching.compiled(entry, signature)):
        return entry.compile(signature)


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _threads() -> ThreadPoolExecutor:
    """The process-wide pool that shares batches among the cores (the kernels release the
    GIL)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1,
                                       thread_name_prefix="flexdyn-batch")
        return _pool


def _forget_threads() -> None:
    """In a child made by ``fork`` (a process pool's worker, :func:`flexdyn.simulate_many`):
    the parent's pool and lock without their threads, which a fork does not copy; a batch
    would wait for them forever.  The child makes its own pool on first use."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_threads)


def kernel_array(a, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``a`` as the one array type the kernels are compiled for (writable, C-contiguous
    ``float64``; any other type would compile a new specialization), copied only when it is
    not one already.  ``TypeError`` for anything but real numbers up to double precision and
    ``ValueError`` for a shape other than ``shape``, naming ``name``."""
    a = np.asarray(a)
    if a.dtype.kind not in "fiu" or a.dtype.itemsize > 8:
        raise TypeError(f"{name} has dtype {a.dtype}; the engine takes real numbers up to "
                        "float64 (complex or wider inputs: backend='reference')")
    if a.shape != shape:
        raise ValueError(f"{name} has shape {a.shape}, expected {shape}")
    if a.dtype != np.float64 or not a.flags.c_contiguous or not a.flags.writeable:
        a = np.array(a, dtype=np.float64, order="C")
    return a


def _checked(status: int, out: np.ndarray) -> np.ndarray:
    """``out`` unless the entry found its inputs invalid."""
    if status == kernels.INVALID:
        raise ValueError("an input is not finite or a joint quaternion is off unit norm "
                         "(Model.check_state names it)")
    return out


@dataclass(frozen=True)
class CEntry:
    """The C state derivative of :mod:`flexdyn.engine.ccall` for one model: ``address`` of
    ``int64_t flexdyn_state_derivative(ib, fb, method, x, tau, f_ext, xdot)``, the model's
    buffers ``ib`` (int64) and ``fb`` (float64) to pass to it (keep them alive while C holds
    their pointers) and ``function``, the same entry through ``ctypes``."""

    address: int
    ib: np.ndarray
    fb: np.ndarray
    function: Callable


class Engine:
    """Compiled per-state dynamics of ``model`` for one fidelity.  The methods take ``q``
    (nq,), ``u``, ``u̇``, ``τ`` (nu,) and ``f_ext`` (n_bodies, 6) or None as real arrays
    (converted by :func:`kernel_array`, which names a wrong shape); the kernels check
    finiteness and quaternion norms themselves.

    The per-state methods are those of the model's tree (loop closures are added by
    :func:`flexdyn.dynamics.closed_chain` from :meth:`closure_terms`); methods mirror the
    reference algorithms: :meth:`terms`, :meth:`inverse_dynamics`,
    :meth:`mass_matrix`, :meth:`forward_dynamics` (``"articulated"``, Eq 58,
    ``"articulated-split"``, Eqs 62–64, or ``"composite"``, Eq 46), :meth:`split_factors`
    (Eq 63), :meth:`hybrid_dynamics` (:mod:`flexdyn.hybrid`) and :meth:`joint_wrenches`
    (Eq 36).

    A rigid tree on revolute, prismatic and screw joints
    (:func:`flexdyn.engine.rigid_tree.is_rigid_tree`, ``rigid_tree``) runs the articulated
    method's forward dynamics, state derivative and batches through the rigid tree's entries:
    the same recursions in three fused sweeps of fixed-size loops, equal to the general
    entries to round-off.

    ``indirect_min_modes``: a ruthless body with children and at least this many modes forms
    ``D_f⁻¹`` of the split by the push-through form of Eq B3, others explicitly (default: the
    body models' rule, :data:`flexdyn.ruthless.INDIRECT_MIN_MODES`)."""

    def __init__(self, model: Model, fidelity: str = DEFAULT_FIDELITY,
                 indirect_min_modes: int | None = None):
        self.model = model
        self.fidelity = fidelity
        self.indirect_min_modes = indirect_min_modes
        self.packed: Packed = pack(model, body_models(model, fidelity))
        #: whether the model is a rigid tree on one-dof joints, whose articulated method runs
        #: the rigid tree's entries (same results to round-off, fixed-size sweeps)
        self.rigid_tree = rigid_tree.is_rigid_tree(self.packed.ib)
        rigid = self.rigid_tree
        self._forward = _FORWARD | (_RIGID_TREE_FORWARD if rigid else {})
        self._derivative = _DERIVATIVE | (_RIGID_TREE_DERIVATIVE if rigid else {})
        self._batch = _RIGID_TREE_BATCH if rigid else {}
        self._zero_wrenches = np.zeros((model.n_bodies, 6))
        self._zero_speeds = np.zeros(model.nu)
        self._split: tuple[np.ndarray, ...] | None = None
        self._closures: tuple[np.ndarray, np.ndarray] | None = None
        self._codes: dict[str, Callable] = {}  # machine code of the bound interface's calls
        self._stage_buffers: dict[str, tuple[np.ndarray, ...]] = {}  # (stage_buffers)

    @property
    def split_buffers(self) -> tuple[np.ndarray, ...]:
        """``(ib, fb, st, sib, sfb)``: the packed model, the table of the stages of its terms
        (:meth:`stage_buffers`) and the split's constants
        (:func:`~flexdyn.engine.pack.pack_split`), packed on first use."""
        if self._split is None:
            self._split = (*self.stage_buffers("terms"), *pack_split(
                self.model, body_models(self.model, self.fidelity), self.indirect_min_modes))
        return self._split

    def _inputs(self, q, u, x, f_ext, x_name: str, lead: tuple[int, ...] = ()) -> tuple:
        """``(q, u, x, f_ext)`` for the kernels, of shapes ``lead`` + (nq,), (nu,), (nu,),
        (n_bodies, 6); None becomes zero."""
        nu, wrench = self.model.nu, self._zero_wrenches.shape
        zeros = np.zeros(lead + (nu,))
        return (kernel_array(q, lead + (self.model.nq,), "q"),
                zeros if u is None else kernel_array(u, lead + (nu,), "u"),
                zeros if x is None else kernel_array(x, lead + (nu,), x_name),
                (self._zero_wrenches if not lead else np.zeros(lead + wrench)) if f_ext is None
                else kernel_array(f_ext, lead + wrench, "f_ext"))

    def terms(self, q: np.ndarray, u: np.ndarray, f_ext: np.ndarray | None = None
              ) -> layout.Work:
        """The workspace after the position and velocity terms (fields named as the
        reference's :class:`flexdyn.terms.PositionTerms` and ``VelocityTerms``, padded)."""
        q, u, _, f_ext = self._inputs(q, u, None, f_ext, "")
        return kernels.terms(*self.stage_buffers("terms"), q, u, f_ext)

    # The entries validate their inputs (finite, unit quaternions, normalised inside) and
    # report a status: −1 done, INVALID, OVERFLOW (a non-finite result) or a body index
    # (singular inertia).  The public methods raise for INVALID and a body index and return
    # an overflowed result as it is (the caller reports it).

    def inverse_status(self, q, u, udot, f_ext, tau: np.ndarray) -> int:
        """The status of Eq 44 into ``tau`` (nu,) for arguments already of the kernels' type
        and shapes (unchecked), ``udot`` and ``f_ext`` may be None (zero)."""
        zeros = self._zero_speeds if udot is None else udot
        return kernels.inverse(*self.stage_buffers("inverse"), q, u, zeros,
                               self._zero_wrenches if f_ext is None else f_ext, tau)

    def mass_status(self, q, M: np.ndarray) -> int:
        """The status of Eqs 47/50 into ``M`` (nu × nu) for ``q`` already of the kernels' type
        and shape (unchecked)."""
        return kernels.mass(*self.stage_buffers("mass"), q, M)

    def inverse_dynamics(self, q, u, udot, f_ext=None) -> np.ndarray:
        """``τ`` (nu,), Eq 44."""
        tau = np.empty(self.model.nu)
        return _checked(self.inverse_status(*self._inputs(q, u, udot, f_ext, "udot"), tau), tau)

    def mass_matrix(self, q) -> np.ndarray:
        """``M`` (nu × nu), Eqs 47/50."""
        M = np.empty((self.model.nu, self.model.nu))
        return _checked(self.mass_status(kernel_array(q, (self.model.nq,), "q"), M), M)

    def forward_dynamics(self, q, u, tau, f_ext=None, method: str = "articulated"):
        """``u̇`` (nu,): ``"articulated"`` (Eqs 51/58), ``"articulated-split"`` (Eqs 62–64,
        B3) or ``"composite"`` (Eq 46)."""
        if method not in _FORWARD:
            raise ValueError(f"unknown method {method!r}; the engine runs {tuple(_FORWARD)}")
        return _checked(*self.forward_status(*self._inputs(q, u, tau, f_ext, "tau"), method))

    def forward_entry(self, method: str) -> tuple[Callable, tuple[np.ndarray, ...]]:
        """``(code, buffers)``: the machine code of the compiled forward dynamics of
        ``method`` (of ``_FORWARD``, or the rigid tree's; ``_machine_code``)
        and the buffers it takes before ``(q, u, tau, f_ext, udot)``, writable C-contiguous
        ``float64`` arrays of shapes (nq,), (nu,), (nu,), (n_bodies, 6), (nu,) that the caller
        has checked (:func:`flexdyn.dynamics.is_entry_array`: the code does not); it
        returns the status of :meth:`forward_status`."""
        buffers = self._forward_buffers(method)
        code = self._codes.get(method)
        if code is None:
            nq, nu = self.model.nq, self.model.nu
            code = self._codes[method] = _machine_code(
                self._forward[method], *buffers, np.empty(nq), np.empty(nu), np.empty(nu),
                self._zero_wrenches, np.empty(nu))
        return code, buffers

    def _forward_buffers(self, method: str) -> tuple[np.ndarray, ...]:
        """The buffers that the forward dynamics and the state derivative of ``method`` take
        before the state: the rigid tree's entries take the packed model alone, the others
        the stages they call too (:meth:`stage_buffers`), the split its constants too."""
        if method == SPLIT:
            return self.split_buffers
        if self.rigid_tree and method in _RIGID_TREE_FORWARD:
            return tuple(self.packed)
        return self.stage_buffers(method)

    def stage_buffers(self, op: str) -> tuple[np.ndarray, ...]:
        """``(ib, fb, st)``: the packed model and the table of the compiled stages
        (:func:`flexdyn.engine.stages.table`) that the entries of ``op`` (of
        :data:`OP_STAGES`) call, compiled on first use."""
        buffers = self._stage_buffers.get(op)
        if buffers is None:
            if op not in OP_STAGES:
                raise ValueError(f"unknown operation {op!r}; the engine's stages serve "
                                 f"{tuple(OP_STAGES)}")
            buffers = self._stage_buffers[op] = (*self.packed, stages.table(OP_STAGES[op]))
        return buffers

    def forward_status(self, q, u, tau, f_ext, method: str) -> tuple[int, np.ndarray]:
        """``(status, u̇)`` of :meth:`forward_dynamics` for arguments already of the kernels'
        type and shapes, ``f_ext`` may be None (unchecked), by the entry of
        :meth:`forward_entry`, without raising for :data:`~flexdyn.engine.layout.INVALID` and
        :data:`~flexdyn.engine.layout.OVERFLOW` (a singular inertia raises)."""
        udot = np.empty(self.model.nu)
        status = self._forward[method](*self._forward_buffers(method), q, u, tau,
                                       self._zero_wrenches if f_ext is None else f_ext, udot)
        if status >= 0:
            raise self._singular(method, status)
        return status, udot

    def state_derivative(self, x, tau=None, f_ext=None, method: str = "articulated"
                         ) -> np.ndarray:
        """``ẋ = [Γ(q) u; u̇]`` (nq + nu,) of the state ``x = [q; u]`` (nq + nu,) with ``τ``
        (nu,) or None and ``f_ext`` (n_bodies, 6) or None; quaternions are scaled to unit
        length first (as :func:`flexdyn.simulation.rhs`).  ``ValueError`` for a model with loop
        closures (:func:`flexdyn.simulation.rhs` closes them)."""
        self._tree_only("state_derivative")
        nq, nu = self.model.nq, self.model.nu
        x = kernel_array(x, (nq + nu,), "x")
        _, _, tau, f_ext = self._inputs(x[:nq], None, tau, f_ext, "tau")
        out = np.empty(nq + nu)
        status = self.derivative_status(x, tau, f_ext, method, out)
        if status == kernels.INVALID:
            raise ValueError("x, tau or f_ext is not finite, or a joint quaternion is zero")
        return out

    def derivative_status(self, x, tau, f_ext, method: str, out: np.ndarray) -> int:
        """:func:`flexdyn.engine.kernels.derivative_articulated` (or ``_composite``) for
        arguments already of the kernels' type and shapes (unchecked; ``out`` of length
        nq + nu, or nq + nu + 3 for the energy-balance integrands): its status; a singular
        inertia raises."""
        if method not in _DERIVATIVE:
            raise ValueError(f"unknown method {method!r}; the engine's state derivative runs "
                             f"{tuple(_DERIVATIVE)}")
        status = self._derivative[method](*self._forward_buffers(method), x, tau, f_ext, out)
        if status >= 0:
            raise self._singular(method, status)
        return status

    def closed_derivative_status(self, x, tau, f_ext, rate: float, out: np.ndarray) -> int:
        """:func:`flexdyn.engine.closure.closed_derivative` (the articulated method) for
        arguments already of the kernels' type and shapes, as :meth:`derivative_status`:
        its status (:data:`~flexdyn.engine.closure.SINGULAR` for redundant or locked
        closures); a singular inertia raises."""
        status = closure.closed_derivative(*self.stage_buffers("articulated"),
                                           *self.closure_buffers, self.geometry,
                                           x, tau, f_ext, float(rate), out)
        if status >= 0:
            raise self._singular("articulated", status)
        return status

    @functools.cached_property
    def geometry(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The packed ``(ib, fb)`` of the ``"full"`` body models, which place the closures'
        endpoints (:func:`flexdyn.engine.closure.closure_rows`) where this fidelity's kernels
        form no deformed node frames (``"ruthless"``, Eq B1;
        :func:`~flexdyn.terms.deformed_geometry`); None where they do.  Packed on first
        use."""
        if deformed_geometry(body_models(self.model, self.fidelity), self.model):
            return None
        return tuple(pack(self.model, body_models(self.model, "full")))

    @property
    def closure_buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ci, cf)``: the model's closures packed on first use
        (:func:`~flexdyn.engine.closure.pack_closures`)."""
        if self._closures is None:
            self._closures = closure.pack_closures(self.model.constraints)
        return self._closures

    def c_state_derivative(self) -> CEntry:
        """The state derivative as a C function (:mod:`flexdyn.engine.ccall`) with this
        model's packed buffers (compiles, or loads from numba's cache, on first use).
        ``ValueError`` for a model with loop closures, which it does not cover."""
        from . import ccall

        self._tree_only("c_state_derivative")
        address = ccall.flexdyn_state_derivative.address
        return CEntry(address, self.packed.ib, self.packed.fb, ccall.CTYPES_PROTOTYPE(address))

    def _tree_only(self, what: str) -> None:
        """``ValueError`` naming ``what`` if the model has loop closures."""
        if self.model.constraints:
            raise ValueError(
                f"Engine.{what} computes the dynamics of a tree; model {self.model.name!r} "
                f"has loop closures ({', '.join(c.name for c in self.model.constraints)}): use "
                "flexdyn.rhs(model), which closes them")

    def split_factors(self, q) -> SplitFactors:
        """The factors of the flexible/hinge split at ``q`` (Eq 63), as the reference's
        :func:`flexdyn.articulated_body.articulated_body_inertias_split` (``P`` None for a
        ruthless body, whose flexible step does not form it)."""
        status, w, sw = split.factors(*self.split_buffers,
                                      kernel_array(q, (self.model.nq,), "q"))
        _checked(status, sw)
        if status >= 0:
            raise self._singular(SPLIT, status)
        m = [int(k) for k in self.model.n_modes]
        nj = [int(k) for k in self.model.nu_joint]
        ruthless = [isinstance(bm, RuthlessBodyModel)
                    for bm in body_models(self.model, self.fidelity)]
        n = range(self.model.n_bodies)
        return SplitFactors(
            P=[None if ruthless[i] else w.P[i, :m[i] + 6, :m[i] + 6] for i in n],
            Df_inv=[sw.Df_inv[i, :m[i], :m[i]] for i in n], g=[sw.g[i, :, :m[i]] for i in n],
            P_R=list(sw.P_R), DR_inv=[sw.DR_inv[i, :nj[i], :nj[i]] for i in n],
            G_R=[sw.G_R[i, :, :nj[i]] for i in n], P_R_plus=list(sw.P_R_plus))

    def closure_terms(self, q, u) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(g, J, γ)`` of the model's loop closures at a valid ``(q, u)`` (unit
        quaternions): (n_c,), (n_c, nu), (n_c,) (:func:`flexdyn.engine.closure.closure_terms`,
        compiled on first use; the closures packed on first use)."""
        nc, nu = self.model.n_constraints, self.model.nu
        g, J, gamma = np.empty(nc), np.empty((nc, nu)), np.empty(nc)
        closure.closure_terms(*self.stage_buffers("terms"), *self.closure_buffers, self.geometry,
                              kernel_array(q, (self.model.nq,), "q"),
                              kernel_array(u, (nu,), "u"), g, J, gamma)
        return g, J, gamma

    def mass_matrix_inverse(self, q) -> np.ndarray:
        """``M⁻¹`` (nu × nu), Lemma 4: :meth:`apply_mass_matrix_inverse` to the identity."""
        return self.apply_mass_matrix_inverse(q, np.eye(self.model.nu))

    def apply_mass_matrix_inverse(self, q, b) -> np.ndarray:
        """``M⁻¹ b`` for ``b`` (nu,) or (nu, k), shaped like ``b`` (Lemma 4, Eqs 54–57): the
        articulated factors at ``q`` applied to the k columns in one filter and one smoother
        sweep (:func:`flexdyn.engine.extras.mass_inverse`), not k solves."""
        b = np.asarray(b)
        b = kernel_array(b, (self.model.nu, *b.shape[1:2]), "b")
        rhs_rows = np.ascontiguousarray(b.T if b.ndim == 2 else b[None])  # one per row
        q = kernel_array(q, (self.model.nq,), "q")[None]
        out = np.empty((1, *rhs_rows.shape))
        status = self._share(extras.mass_inverse, self.stage_buffers("mass_inverse"),
                             (q, rhs_rows, out))
        self._single(int(status[0]), "articulated")
        return out[0, 0] if b.ndim == 1 else np.ascontiguousarray(out[0].T)

    def derivatives(self, forward: bool, q, u, udot, tau, f_ext, q_dir
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The derivatives of inverse dynamics (``forward`` False: ``∂τ/∂δ``, ``∂τ/∂u``,
        ``M``) or of forward dynamics (True: ``∂u̇/∂δ``, ``∂u̇/∂u``, ``∂u̇/∂τ``, with ``udot``
        its accelerations) at the states of ``q`` (B, nq), ``u``, ``udot``, ``tau`` (B, nu)
        (``tau`` None: zero) and ``f_ext`` (B, n_bodies, 6) or None, in the tangent
        directions ``∂q/∂δ`` (:meth:`flexdyn.tangent.TangentCoordinates.directions`) whose
        blocks but the quaternion joints' are ``q_dir`` (nq, nu) (the entry forms those at
        each state's configuration): three (B, nu, nu) arrays
        and the statuses (B,) of :func:`flexdyn.engine.derivatives.derivatives` (compiled on
        first use; :meth:`derivatives_entry`), the states shared among the cores (one state
        is milliseconds of work: a thread from two states on); the forward derivatives
        overwrite ``udot`` with the accelerations they solve for.  Raises for an
        invalid state and a singular mass matrix (``"batch item b: "`` in a batch of more
        than one)."""
        lead = (len(q),)
        q, u, udot, f_ext = self._inputs(q, u, udot, f_ext, "udot", lead)
        nq, nu = self.model.nq, self.model.nu
        tau = np.zeros(lead + (nu,)) if tau is None else kernel_array(tau, lead + (nu,), "tau")
        q_dir = kernel_array(q_dir, (nq, nu), "q_dir")
        d = np.empty((3,) + lead + (nu, nu))
        kernel, buffers, directions = self.derivatives_entry(q_dir)
        status = self._share(kernel, (*buffers, forward),
                             (q, u, udot, tau, f_ext, *directions, d), per_thread=1)
        if lead[0] == 1:
            self._single(int(status[0]), "composite")
        else:
            self._raise_for(status, "composite")
        return d[0], d[1], d[2], status

    def derivatives_entry(self, q_dir: np.ndarray
                          ) -> tuple[Callable, tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
        """``(entry, buffers, directions)``: the compiled derivatives of this model, taking
        ``(*buffers, forward, t, n_threads, q, u, udot, tau, f_ext, *directions, d, status)``
        (``d``: the three blocks, 3 × B × nu × nu) — a rigid tree on one-dof joints by its
        analytic sweeps (:func:`flexdyn.engine.derivatives.derivatives_rigid_tree`: the
        packed model, no directions, ``δ = q``), any other by complex steps and tangent
        sweeps (:func:`flexdyn.engine.derivatives.derivatives`: the packed model and the
        stages of its mass matrix and terms, ``directions = (q_dir,)``); forward derivatives
        write ``u̇`` into ``udot``."""
        if self.rigid_tree:
            return derivatives.derivatives_rigid_tree, self._derivatives_buffers(), ()
        return derivatives.derivatives, self._derivatives_buffers(), (q_dir,)

    def _derivatives_buffers(self) -> tuple[np.ndarray, ...]:
        """The buffers the derivatives' entries take before their arguments: a rigid tree's
        the packed model alone, any other's the stages of its mass matrix and terms too."""
        return tuple(self.packed) if self.rigid_tree else self.stage_buffers("derivatives")

    def derivatives_code(self) -> Callable:
        """The derivatives of one state as machine code (``_machine_code``) with the packed
        model bound: for a rigid tree on one-dof joints its single-state entry
        (:func:`flexdyn.engine.derivatives.derivatives_rigid_tree_one`) taking ``(forward, q,
        u, udot, tau, f_ext, d)`` of shapes (nq,), (nu,), (nu,), (nu,), (n_bodies, 6),
        (3, nu, nu) and returning the status; for any other model :meth:`derivatives_entry`'s
        entry for a batch of one, taking ``(forward, t, n_threads, q, u, udot, tau, f_ext,
        q_dir, d, status)`` of shapes (1, nq), (1, nu), (1, nu), (1, nu), (1, n_bodies, 6),
        (nq, nu), (3, 1, nu, nu) and (1,) (``int64``).  The arrays are C-contiguous
        ``float64`` (writable where written) that the caller has checked: the code does
        not."""
        code = self._codes.get("derivatives")
        if code is None:
            buffers = self._derivatives_buffers()
            entry, args = self._derivatives_one()
            code = self._codes["derivatives"] = functools.partial(
                _machine_code(entry, *buffers, *args), *buffers)
        return code

    def _derivatives_one(self) -> tuple[Callable, tuple]:
        """``(entry, arguments)``: the entry of :meth:`derivatives_code` and arguments of the
        types it takes after the buffers."""
        nq, nu = self.model.nq, self.model.nu
        if self.rigid_tree:
            return derivatives.derivatives_rigid_tree_one, (
                True, np.empty(nq), np.empty(nu), np.empty(nu), np.empty(nu),
                self._zero_wrenches, np.empty((3, nu, nu)))
        return derivatives.derivatives, (
            True, 0, 1, np.empty((1, nq)), np.empty((1, nu)), np.empty((1, nu)),
            np.empty((1, nu)), self._zero_wrenches[None], np.empty((nq, nu)),
            np.empty((3, 1, nu, nu)), np.empty(1, dtype=np.int64))

    def derivatives_ready(self) -> bool:
        """Whether the machine code of :meth:`derivatives_code` is compiled, in this process
        or in the engine's cache on disk (:func:`flexdyn.engine.caching.compiled`): its
        first call then loads it instead of compiling for tens of seconds: the entry and,
        but for a rigid tree, the stage of one state's derivatives
        (:func:`flexdyn.engine.derivatives.state_derivatives`).  Compiles nothing, the stages
        included."""
        if "derivatives" in self._codes:
            return True
        entry, args = self._derivatives_one()
        if self.rigid_tree:
            return caching.compiled(entry, tuple(numba.typeof(a) for a in (*self.packed, *args)))
        table = np.zeros(len(stages.NAMES), dtype=np.int64)
        return all(caching.compiled(function, argtypes) for function, argtypes in (
            (entry, tuple(numba.typeof(a) for a in (*self.packed, table, *args))),
            stages.STAGES["derivatives"]))

    def energy_momentum(self, q, u=None) -> np.ndarray:
        """``[T, V, h, p]`` (8,): kinetic and potential energy (J) and the spatial momentum
        about the inertial origin in inertial coordinates (N m s, N s); ``u`` None is at rest
        (:func:`flexdyn.engine.extras.energy_momentum`, entries
        :data:`~flexdyn.engine.extras.KINETIC`, ``POTENTIAL``, ``MOMENTUM``)."""
        q, u, _, _ = self._inputs(q, u, None, None, "")
        out = np.empty((1, extras.ENERGY_MOMENTUM))
        status = self._share(extras.energy_momentum, self.stage_buffers("energy_momentum"),
                             (q[None], u[None], out))
        self._single(int(status[0]), "energy_momentum")
        return out[0]

    def hybrid_dynamics(self, q, u, tau, udot_known, prescribed, f_ext=None
                        ) -> tuple[np.ndarray, np.ndarray]:
        """``(u̇, T)`` of hybrid dynamics (:mod:`flexdyn.hybrid`, O(N)): the accelerations
        with the entries where ``prescribed`` (nu,) bool is True given by ``udot_known`` and
        the others free under the forces ``tau``, and the generalized forces with the loads
        that realise the prescribed accelerations (``tau`` elsewhere).  ``u``, ``tau``,
        ``udot_known`` may be None (zero).  ``q`` (nq,) gives (nu,) each; a batch ``q``
        (B, nq) with ``u``, ``tau``, ``udot_known`` (B, nu) and ``f_ext`` (B, n_bodies, 6)
        or None gives (B, nu) each, the states shared among the cores, each equal to its
        single call bit for bit (:func:`flexdyn.engine.kernels.hybrid`).  Raises
        :class:`SingularInertiaError` naming the body whose free-part ``D`` is singular
        (with ``"batch item b: "`` in a batch)."""
        nu = self.model.nu
        mask = np.asarray(prescribed)
        if mask.dtype != bool or mask.shape != (nu,):
            raise ValueError(f"prescribed must be a boolean array of shape ({nu},), got "
                             f"{mask.dtype} {mask.shape}")
        lead = (len(q),) if np.ndim(q) == 2 else ()
        q, u, tau, f_ext = self._inputs(q, u, tau, f_ext, "tau", lead)
        known = (np.zeros(lead + (nu,)) if udot_known is None
                 else kernel_array(udot_known, lead + (nu,), "udot_known"))
        mask = mask.astype(np.float64)
        if lead:
            udot, T = np.empty(lead + (nu,)), np.empty(lead + (nu,))
            status = self._share(kernels.hybrid, self.stage_buffers("terms"),
                                 (q, u, tau, known, mask, f_ext, udot, T))
            self._raise_for(status, "articulated")
            return udot, T
        udot, T, status = np.empty((1, nu)), np.empty((1, nu)), np.empty(1, dtype=np.int64)
        kernels.hybrid(*self.stage_buffers("terms"), 0, 1, q[None], u[None], tau[None],
                       known[None], mask, f_ext[None], udot, T, status)
        self._single(int(status[0]), "articulated")
        return udot[0], T[0]

    def joint_wrenches(self, q, u, udot, f_ext=None) -> np.ndarray:
        """The spatial force ``[moment; force]`` (n_bodies, 6) that each joint transmits from
        the parent to the child, in the child's joint frame ``J_c`` about its origin (Eq 36,
        :func:`flexdyn.newton_euler.joint_wrenches`), for the motion ``(q, u, u̇)``; batches
        by :meth:`batch` (``"joint_wrenches"``)."""
        q, u, udot, f_ext = self._inputs(q, u, udot, f_ext, "udot")
        out = np.empty((1, self.model.n_bodies, 6))
        status = self._share(extras.joint_wrenches, self.stage_buffers("joint_wrenches"),
                             (q[None], u[None], udot[None], f_ext[None], out))
        self._single(int(status[0]), "joint_wrenches")
        return out[0]

    def batch(self, op: str, q: np.ndarray, u: np.ndarray | None = None,
              x: np.ndarray | None = None, f_ext: np.ndarray | None = None) -> np.ndarray:
        """Operation ``op`` of :data:`BATCH_OPS` over the leading axis B of ``q`` (B, nq),
        ``u`` and ``x`` (B, nu) (``x`` is τ, or u̇ for ``"inverse"``), ``f_ext`` None or
        (B, n_bodies, 6); the states are shared among the cores.  Returns (B, nu), or
        (B, nu, nu) for ``"mass"`` and ``"mass_inverse"``, (B, 8) for ``"energy_momentum"``,
        (B, n_bodies, 6) for ``"joint_wrenches"`` (``x`` is u̇); each state's result equals
        the single call's bit for bit."""
        if op not in BATCH_OPS:
            raise ValueError(f"unknown operation {op!r}; expected one of {tuple(BATCH_OPS)}")
        if np.ndim(q) != 2:
            raise ValueError(f"q has shape {np.shape(q)}; a batch needs (B, {self.model.nq})")
        n_states, nu = len(q), self.model.nu
        if op == "mass_inverse":
            q = kernel_array(q, (n_states, self.model.nq), "q")
            out = np.empty((n_states, nu, nu))
            status = self._share(extras.mass_inverse, self.stage_buffers(op), (q, np.eye(nu), out))
            result = np.ascontiguousarray(out.transpose(0, 2, 1))
        elif op == "energy_momentum":
            q, u, _, _ = self._inputs(q, u, None, None, "", (n_states,))
            result = np.empty((n_states, extras.ENERGY_MOMENTUM))
            status = self._share(extras.energy_momentum, self.stage_buffers(op), (q, u, result))
        elif op == "joint_wrenches":
            q, u, x, f_ext = self._inputs(q, u, x, f_ext, "udot", (n_states,))
            result = np.empty((n_states, self.model.n_bodies, 6))
            status = self._share(extras.joint_wrenches, self.stage_buffers(op),
                                 (q, u, x, f_ext, result))
        else:
            q, u, x, f_ext = self._inputs(q, u, x, f_ext, "udot" if op == "inverse" else "tau",
                                          (n_states,))
            out = np.empty((n_states, nu * nu if op == "mass" else nu))
            if op in self._batch:
                kernel, head = self._batch[op], tuple(self.packed)
            elif op == SPLIT:
                kernel, head = split.batch, self.split_buffers
            else:
                kernel, head = kernels.batch, (*self.stage_buffers(op), BATCH_OPS[op])
            status = self._share(kernel, head, (q, u, x, f_ext, out))
            result = out.reshape(n_states, nu, nu) if op == "mass" else out
        self._raise_for(status, op)
        return result

    def _raise_for(self, status: np.ndarray, op: str) -> None:
        """Raise for the first state of a batch's ``status`` (B,) that is invalid or has a
        singular inertia (``_single``), with the prefix ``"batch item b: "``."""
        bad = np.flatnonzero((status >= 0) | (status == kernels.INVALID))
        if bad.size:
            b = int(bad[0])
            try:
                self._single(int(status[b]), op)
            except (ValueError, SingularInertiaError) as exc:
                raise type(exc)(f"batch item {b}: {exc}") from None

    @staticmethod
    def _share(kernel, head: tuple, tail: tuple, per_thread: int = STATES_PER_THREAD
               ) -> np.ndarray:
        """The statuses (B,) of the batch entry ``kernel(*head, t, n_threads, *tail, status)``
        run on the states of the leading axis of ``tail[0]``, shared among the cores, at least
        ``per_thread`` states to a thread."""
        n_states = len(tail[0])
        status = np.empty(n_states, dtype=np.int64)
        shares = n_states // per_thread  # (os.cpu_count takes microseconds)
        n_threads = 1 if shares < 2 else min(os.cpu_count() or 1, shares)
        if n_threads == 1:
            kernel(*head, 0, 1, *tail, status)
        else:
            for job in [_threads().submit(kernel, *head, t, n_threads, *tail, status)
                        for t in range(n_threads)]:
                job.result()
        return status

    def _single(self, status: int, method: str) -> None:
        """Raise for the status of one state: ``ValueError`` for
        :data:`~flexdyn.engine.layout.INVALID`, :class:`SingularInertiaError` for a body
        index; nothing for done or an overflow (the caller reports it)."""
        if status >= 0:
            raise self._singular(method, status)
        _checked(status, None)

    def _singular(self, method: str, status: int) -> SingularInertiaError:
        """The reference's error for a singular-inertia ``status`` of ``method``'s entry (the
        split's: ``i`` for ``D_f`` of body ``i``, ``n + i`` for its ``D_R``)."""
        if method == "composite":
            return SingularInertiaError("mass matrix is singular or not positive definite "
                                        "(a degree of freedom without inertia?)")
        name, body = "D", status
        if method == SPLIT:
            n = self.model.n_bodies
            name, body = ("D_f", status) if status < n else ("D_R", status - n)
        return SingularInertiaError(
            f"articulated inertia {name} of body {body} {self.model.names[body]!r} is singular or "
            "not positive definite (a degree of freedom without inertia, e.g. a massless body "
            "on its joint?)")
