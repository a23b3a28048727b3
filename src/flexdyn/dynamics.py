"""The front door: every per-state function validates its inputs once, builds the per-state
terms of the chosen body model (:mod:`flexdyn.terms`) and runs one algorithm.

* :func:`inverse_dynamics` — Newton–Euler (:func:`flexdyn.newton_euler.rnea`), Eqs 44–45;
* :func:`bias_forces` — Newton–Euler with ``u̇ = 0``, Eq 43;
* :func:`mass_matrix` — composite bodies (:func:`flexdyn.composite_body.crba`), Eqs 47–50;
* :func:`forward_dynamics` — one of :data:`FORWARD_METHODS`, Eqs 46, 58, 64;
* :func:`hybrid_dynamics` — some accelerations prescribed (:mod:`flexdyn.hybrid`);
* :func:`joint_wrenches` — the loads the joints transmit (Eq 36);
* :func:`innovations_factors` — articulated bodies, Eq 51;
* :func:`mass_matrix_inverse` — Lemma 4, Eqs 54–57.

Inputs ``q`` (nq,), ``u``, ``u̇``, ``τ`` (nu,) follow the layout of ``model-format.md``; real
or complex (complex-step differentiation) numbers.

The bound interface
-------------------
:func:`bind` chooses the model, body model and backend once and returns a :class:`Dynamics`
whose methods take only the state (and ``out=``, an array to write the result into): the
way to call the dynamics many times, as an ODE right-hand side or a controller does.  The
module-level functions keep their signatures and delegate to a :class:`Dynamics` cached per
model, fidelity and backend (held weakly: it does not keep the model alive).  Arrays of
exactly the compiled entries' type go straight into them; everything else takes the general
path (``_forward_dynamics`` and its siblings), which validates in full and routes to the
reference where the engine does not run.

Backends
--------
:func:`forward_dynamics`, :func:`inverse_dynamics`, :func:`bias_forces`, :func:`mass_matrix`,
:func:`mass_matrix_inverse`, :func:`hybrid_dynamics`, :func:`joint_wrenches` (and the
energies of :mod:`flexdyn.energy`) take ``backend`` (one of :data:`BACKENDS`): ``"engine"``
(the default) runs the compiled engine (:class:`flexdyn.engine.Engine`, one per model and
fidelity, built on first use and cached), ``"reference"`` the numpy algorithms below.  The
engine takes real inputs only: complex inputs always run the reference.  Nodal loads
``f_nodes`` enter :func:`forward_dynamics`, :func:`inverse_dynamics`, :func:`bias_forces`,
:func:`hybrid_dynamics` and :func:`joint_wrenches` on the engine as body wrenches and modal
forces (:func:`nodal_loads_at`, the loaded bodies' node frames in numpy), and so do the
derivatives, with the slopes of those wrenches and forces in the loaded bodies' modal
coordinates added by complex steps of :func:`nodal_loads_at`.  Both backends validate alike
and raise the same errors.
:func:`innovations_factors` (whose result is the reference's per-body factors) runs the
reference only.

Batches
-------
Every per-state function also takes a batch of states: ``q`` (B, nq) with the other state
arrays (B, nu) (``τ`` may be None) and ``f_ext`` (B, n_bodies, 6) or one (n_bodies, 6) for
all; the result gains the leading axis B and equals the loop over the states (see
:func:`batched`).  An invalid state is reported with its batch index.
"""

from __future__ import annotations

import functools
import inspect
import math
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
import scipy

from .articulated_body import (
    ArticulatedFactors,
    apply_mass_matrix_inverse,
    articulated_body_inertias,
    articulated_forward_dynamics,
    articulated_forward_dynamics_split,
)
from .chain import Model, numeric_array
from .closure import ClosureError, ClosureTerms, closed_chain_accelerations, closure_terms
from .composite_body import composite_forward_dynamics, crba
from .coriolis import coriolis_matrix as _coriolis_matrix
from .engine import DERIVATIVE_METHODS, Engine, kernels
from .engine.nodal import NodalEngine
from .hybrid import hybrid_dynamics as _hybrid
from .joint_forces import applied_forces, motor_torques, passive_forces
from .linalg import COMPLEX_STEP, SingularInertiaError
from .newton_euler import joint_wrenches as wrenches_of_modal_forces
from .newton_euler import modal_forces, rnea
from .nodal import nodal_method, nodal_state_terms
from .tangent import TangentCoordinates
from .terms import (
    DEFAULT_FIDELITY,
    FIDELITIES,
    PositionTerms,
    body_models,
    check_fidelity,
    modal_velocities,
    position_terms,
    state_terms,
)

__all__ = [
    "BACKENDS",
    "REFINED_METHODS",
    "REFINE_CONDITION",
    "REFINE_LOSS",
    "Dynamics",
    "ForwardDynamicsDerivatives",
    "InverseDynamicsDerivatives",
    "condition_estimate",
    "bind",
    "assemble",
    "batch_op",
    "cached_engine",
    "check_backend",
    "is_entry_array",
    "on_engine",
    "tree_forward_dynamics",
    "closed_chain",
    "closed_hybrid",
    "stabilized_forward_dynamics",
    "torque_limit_slopes",
    "closure_residuals",
    "constraint_forces",
    "FORWARD_METHODS",
    "batched",
    "bias_forces",
    "check_external_forces",
    "forward_dynamics",
    "forward_dynamics_derivatives",
    "hybrid_dynamics",
    "innovations_factors",
    "coriolis_matrix",
    "joint_wrenches",
    "inverse_dynamics",
    "inverse_dynamics_derivatives",
    "mass_matrix",
    "mass_matrix_inverse",
    "nodal_loads",
    "nodal_loads_at",
]

#: Forward-dynamics algorithms by method name; each ``(model, pos, vel, tau, f_ext) -> u̇``.
FORWARD_METHODS: dict[str, Callable[..., np.ndarray]] = {
    "articulated": articulated_forward_dynamics,  # Eq 58
    "articulated-split": articulated_forward_dynamics_split,  # Eqs 62–64
    "composite": composite_forward_dynamics,  # Eq 46
    "nodal": nodal_method,  # Rodriguez Eqs 9.1–9.26
}
#: The per-state terms ``(model, q, u, fidelity) -> (pos, vel)`` each method consumes: the
#: modal terms of :mod:`flexdyn.terms`, or the node-wise terms of :mod:`flexdyn.nodal`.
FORWARD_TERMS: dict[str, Callable[..., tuple]] = {
    "articulated": state_terms,
    "articulated-split": state_terms,
    "composite": state_terms,
    "nodal": nodal_state_terms,
}
#: Backends of the per-state functions: the compiled engine (default) and the numpy reference.
BACKENDS: tuple[str, ...] = ("engine", "reference")
#: Forward-dynamics methods the compiled engine runs (the others run the reference).
ENGINE_METHODS = frozenset({"articulated", "articulated-split", "composite"})
#: the O(N) forward-dynamics methods that :class:`Dynamics` refines where the model calls for
#: it (:meth:`Dynamics.refines`; ``"composite"`` solves the mass matrix by Cholesky)
REFINED_METHODS = frozenset({"articulated", "articulated-split"})
#: the condition number of the mass matrix above which :class:`Dynamics` measures whether
#: the O(N) solves need refining (:meth:`Dynamics.ill_conditioned`): there their relative
#: error may grow past about 1e-8 while a dense Cholesky solve's stays near ``ε κ``
REFINE_CONDITION = 1e7
#: how many times a dense Cholesky solve's error the articulated solve of an ill-conditioned
#: model may make before :class:`Dynamics` refines the O(N) solves (:meth:`Dynamics.refines`)
REFINE_LOSS = 10.0


def condition_estimate(M: np.ndarray) -> float:
    """The condition number (1-norm) of a symmetric positive definite ``M`` (n × n),
    estimated from its Cholesky factor (LAPACK ``dpocon``, O(n²) after the factorization);
    ``inf`` where ``M`` is not positive definite."""
    if M.size == 0:  # no degree of freedom
        return 1.0
    L, info = scipy.linalg.lapack.dpotrf(M, lower=1)
    if info != 0:
        return math.inf
    rcond, info = scipy.linalg.lapack.dpocon(L, np.abs(M).sum(axis=0).max(), uplo="L")
    return math.inf if info != 0 or rcond == 0.0 else 1.0 / rcond

#: the largest change of any coordinate in one step of :func:`assemble` (rad or m)
ASSEMBLY_STEP = 0.5
#: :func:`assemble` nudges the free joint coordinates by up to ``ASSEMBLY_NUDGE`` (rad or m,
#: a fixed pseudo-random draw) when the residual has not halved in ``ASSEMBLY_STALL`` steps
ASSEMBLY_NUDGE, ASSEMBLY_STALL = 0.1, 4

_ENGINES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_ENGINES_LOCK = threading.Lock()


def batched(*state_args: str, engine_op: Callable[[dict], str | None] | None = None,
            from_engine: Callable[[np.ndarray], Any] | None = None
            ) -> Callable[[Callable], Callable]:
    """Decorator: let a per-state function ``fn(model, q, ...)`` take a leading batch axis.

    When ``q`` is 2-D, ``(B, nq)``, the arguments named in ``state_args`` must be ``(B, ·)``
    (or None), ``f_ext`` may be ``(B, n_bodies, 6)`` or one ``(n_bodies, 6)`` for all, and the
    result is ``np.stack`` of ``fn`` over the B states.  An error of state ``b`` is re-raised
    with the same type and the prefix ``"batch item b: "``.

    ``engine_op(arguments)`` names the operation of :meth:`flexdyn.engine.Engine.batch` that
    computes ``fn`` for these arguments (None: not on the engine).  Such a batch is validated
    as a whole and computed in one call shared among the cores (``_engine_batch``); a
    batch with an invalid state, complex numbers or a non-finite result runs the loop, which
    reports the state by index.  ``from_engine`` (optional) makes ``fn``'s batched result of
    the engine's (e.g. one column of ``"energy_momentum"``'s rows)."""

    def decorate(fn: Callable) -> Callable:
        signature = inspect.signature(fn)

        @functools.wraps(fn)
        def call(*args, **kwargs):
            if len(args) > 1 and type(args[1]) is np.ndarray and args[1].ndim == 1:
                return fn(*args, **kwargs)  # one state, as arrays: nothing to bind
            arguments = signature.bind(*args, **kwargs).arguments
            q = arguments["q"]
            if np.ndim(q) != 2:
                return fn(**arguments)
            n = np.shape(q)[0]
            if n == 0:
                raise ValueError(f"q has shape {np.shape(q)}: an empty batch; give one state "
                                 "(nq,) or a batch (B, nq) with B ≥ 1")
            per_state = {"q": np.asarray(q)}
            for name in state_args:
                value = arguments.get(name)
                if value is not None:
                    per_state[name] = np.asarray(value)
            f_ext = arguments.get("f_ext")
            if f_ext is not None and np.ndim(f_ext) == 3:
                per_state["f_ext"] = np.asarray(f_ext)
            for name, value in per_state.items():
                if value.ndim < 2 or value.shape[0] != n:
                    raise ValueError(f"{name} has shape {value.shape}; with a batch of {n} "
                                     f"states (q of shape {np.shape(q)}) it needs a leading "
                                     f"axis of {n}")
            op = None if engine_op is None else engine_op(arguments)
            if op is not None:
                result = _engine_batch(op, arguments, per_state, state_args)
                if result is not None:
                    return result if from_engine is None else from_engine(result)
            out = []
            for b in range(n):
                try:
                    out.append(fn(**(arguments | {k: v[b] for k, v in per_state.items()})))
                except (ValueError, TypeError, FloatingPointError) as exc:
                    raise type(exc)(f"batch item {b}: {exc}") from exc
            if isinstance(out[0], tuple):
                return tuple(np.stack(part) for part in zip(*out, strict=True))
            return np.stack(out)

        return call

    return decorate


def _engine_batch(op: str, arguments: dict, per_state: dict[str, np.ndarray],
                  state_args: tuple[str, ...]) -> np.ndarray | None:
    """A batch of operation ``op`` on the engine, or None when some state is not for the
    engine (complex numbers), is invalid or gives a non-finite result (the caller's loop
    then reports it by index).  ``state_args[0]`` is u, ``state_args[1]`` the second state
    array (τ or u̇; zero when absent), for ``"hybrid"`` ``state_args[2]`` the prescribed
    accelerations (:meth:`flexdyn.engine.Engine.hybrid_dynamics`, which returns a pair)."""
    model: Model = arguments["model"]
    n = per_state["q"].shape[0]
    shapes = {"q": (model.nq,), "f_ext": (model.n_bodies, 6)}  # the others: (nu,)
    arrays = {}
    for name, a in per_state.items():
        if (a.dtype.kind not in "fiu" or a.dtype.itemsize > 8
                or a.shape[1:] != shapes.get(name, (model.nu,)) or not np.all(np.isfinite(a))):
            return None
        arrays[name] = a
    try:
        q = model.unit_quaternions(arrays["q"])
    except ValueError:
        return None
    f_ext = arrays.get("f_ext")
    if f_ext is None and arguments.get("f_ext") is not None:
        try:
            f_one = check_external_forces(model, arguments["f_ext"])
        except (ValueError, TypeError):
            return None
        if f_one.dtype.kind != "f" or not np.all(np.isfinite(f_one)):
            return None
        f_ext = np.repeat(f_one[None], n, axis=0)
    names = (*state_args, None, None, None)
    u, x = arrays.get(names[0]), arrays.get(names[1])
    engine = cached_engine(model, arguments.get("fidelity", DEFAULT_FIDELITY))
    if op == "hybrid":
        results = engine.hybrid_dynamics(q, u, x, arrays.get(names[2]),
                                         arguments["prescribed"], f_ext)
        return results if all(np.all(np.isfinite(r)) for r in results) else None
    result = engine.batch(op, q, u, x, f_ext)
    return result if np.all(np.isfinite(result)) else None


def _batch_on_engine(arguments: dict) -> bool:
    """Whether a batch with these arguments is for the engine: the default backend, a known
    fidelity and no nodal loads."""
    return (arguments.get("backend", "engine") == "engine"
            and not _has_nodal_loads(arguments.get("f_nodes"))
            and arguments.get("fidelity", DEFAULT_FIDELITY) in FIDELITIES)


def _forward_op(arguments: dict) -> str | None:
    """The engine operation of a forward-dynamics batch: its method (None: not on the
    engine, or a closed chain, whose batch runs the loop)."""
    method = arguments.get("method", "articulated")
    ok = (isinstance(method, str) and method in ENGINE_METHODS and _batch_on_engine(arguments)
          and not arguments["model"].constraints)
    return method if ok else None


def batch_op(op: str) -> Callable[[dict], str | None]:
    """``op`` for a batch on the engine (else None)."""
    return lambda arguments: op if _batch_on_engine(arguments) else None


def _hybrid_op(arguments: dict) -> str | None:
    """``"hybrid"`` for a batch of :func:`hybrid_dynamics` on the engine with a valid mask
    (else None: the loop, which names a bad mask)."""
    mask = np.asarray(arguments["prescribed"])
    model = arguments["model"]
    ok = (mask.dtype == bool and mask.shape == (model.nu,) and _batch_on_engine(arguments)
          and not model.constraints)
    return "hybrid" if ok else None


def check_external_forces(model: Model, f_ext) -> np.ndarray | None:
    """Validate ``f_ext``: None or an array (n_bodies, 6) of wrenches ``[moment; force]``
    acting at each body frame origin, in body-frame coordinates (N m, N); real or complex."""
    if f_ext is None:
        return None
    f = numeric_array(f_ext, "f_ext")
    if f.shape != (model.n_bodies, 6):
        raise ValueError(f"f_ext has shape {f.shape}, expected ({model.n_bodies}, 6)")
    if not np.all(np.isfinite(f)):
        raise ValueError("f_ext contains non-finite values")
    return f


def nodal_loads(model: Model, pos: PositionTerms, f_nodes) -> tuple[np.ndarray, np.ndarray]:
    """Wrenches at nodes of flexible bodies as the loads the algorithms take.

    ``f_nodes`` maps ``(body, node)`` — a body name or index, a node index (negative counts
    from the last node) — to a wrench ``[moment; force]`` (6,) acting at the node, in the
    node's frame (N m, N).  A wrench ``w`` at node ``j`` of body ``i`` does the work of
    ``B_jᵀ w = [E_jᵀ w; φ(k, j) w]`` (Eq 21, node maps at the deformation of the body model):
    its rigid part is a wrench at the origin of ``F_i`` (added to ``f_ext``), its modal part
    a generalized force on ``η`` (added to the modal entries of ``τ``).

    Returns ``(f_ext (n_bodies, 6), τ (nu,))``.
    """
    return _nodal_loads(model, lambda i: pos.frames[i], f_nodes)


def nodal_loads_at(model: Model, q: np.ndarray, f_nodes, fidelity: str = DEFAULT_FIDELITY
                   ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`nodal_loads` at the configuration ``q`` (nq,) for the body model of
    ``fidelity``, forming the node frames of the loaded bodies only: a node's frame in its
    body's frame depends on the body's own ``η`` alone (its body model's ``node_frames``), so
    the position terms of the whole model are not needed."""
    models = body_models(model, fidelity)
    return _nodal_loads(model, lambda i: models[i].node_frames(model.eta(q, i)), f_nodes)


def _nodal_load_slopes(model: Model, q: np.ndarray, f_nodes, fidelity: str) -> np.ndarray:
    """``∂G/∂δ`` (nu × nu) at ``q`` (nq,) of the generalized forces ``G = Σ_i J_iᵀ f_i + g``
    of the nodal loads ``f_nodes`` (:func:`nodal_loads_at`: ``f_i`` their wrench on body
    ``i``'s frame, ``g`` their modal forces), but for ``∂J_iᵀ/∂δ f_i``, which the engine's
    derivatives take with ``f_i`` among the body wrenches: ``J_iᵀ ∂f_i/∂δ + ∂g/∂δ``.  A
    node's frame moves in its body's frame with the body's own ``η`` alone, so only the
    columns of the loaded bodies' modal coordinates are nonzero (complex steps of
    :func:`nodal_loads_at`; ``J_i`` the rows of body ``i``'s frame in
    :func:`~flexdyn.terms.modal_velocities`)."""
    G = np.zeros((model.nu, model.nu))
    loaded = sorted({_node_key(model, key)[0] for key in f_nodes})
    J_m = modal_velocities(model, position_terms(model, q, body_models(model, fidelity),
                                                 fidelity), np.eye(model.nu))
    for i in loaded:
        m, q0 = int(model.n_modes[i]), int(model.q_start[i] + model.nq_joint[i])
        u0 = int(model.u_start[i] + model.nu_joint[i])
        for k in range(m):
            qc = q.astype(complex)
            qc[q0 + k] += 1j * COMPLEX_STEP
            f, g = nodal_loads_at(model, qc, f_nodes, fidelity)
            G[:, u0 + k] = J_m[i][m:].T @ (f[i].imag / COMPLEX_STEP) + g.imag / COMPLEX_STEP
    return G


def _has_nodal_loads(f_nodes) -> bool:
    """Whether ``f_nodes`` (None or a mapping ``{(body, node): wrench (6,)}``) holds any
    load; ``ValueError`` naming its type for anything else (an array has no nodes to name)."""
    if f_nodes is None:
        return False
    if not isinstance(f_nodes, Mapping):
        raise ValueError("f_nodes must be a mapping {(body, node): wrench (6,)}, got "
                         f"{type(f_nodes).__name__}")
    return len(f_nodes) > 0


def _nodal_loads(model: Model, frames: Callable[[int], Any], f_nodes
                 ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`nodal_loads` with ``frames(i)`` the node frames of body ``i``."""
    f = np.zeros((model.n_bodies, 6))
    g = np.zeros(model.nu)
    node_maps: dict[int, np.ndarray] = {}  # per body, B_j of all its nodes (computed once)
    if not _has_nodal_loads(f_nodes):
        return f, g
    for key, wrench in f_nodes.items():
        i, j = _node_key(model, key)
        w = numeric_array(wrench, f"f_nodes[{key!r}]")
        if w.shape != (6,):
            raise ValueError(f"f_nodes[{key!r}] must be a finite wrench of shape (6,), got "
                             f"shape {w.shape}")
        if not np.all(np.isfinite(w)):
            raise ValueError(f"f_nodes[{key!r}] contains non-finite values")
        if i not in node_maps:
            node_maps[i] = model.bodies[i].node_maps(frames(i))
        B = node_maps[i][j]
        m = int(model.n_modes[i])
        load = B.T @ w
        f = f.astype(np.result_type(f, load), copy=False)
        g = g.astype(np.result_type(g, load), copy=False)
        f[i] += load[m:]
        s = int(model.u_start[i] + model.nu_joint[i])
        g[s:s + m] += load[:m]
    return f, g


def _node_key(model: Model, key) -> tuple[int, int]:
    """``(body index, node index)`` of an ``f_nodes`` key, with a message naming it."""
    try:
        body, node = key
    except (TypeError, ValueError):
        raise ValueError(f"f_nodes keys are (body, node) pairs, got {key!r}") from None
    if isinstance(body, str):
        i = model.body_index(body) if body in model.names else None
    else:
        i = int(body) if isinstance(body, (int, np.integer)) and not isinstance(body, bool) \
            and 0 <= body < model.n_bodies else None
    if i is None:
        raise ValueError(f"f_nodes[{key!r}]: no body {body!r}; bodies are {list(model.names)}")
    n = model.bodies[i].n_nodes
    if n == 0:
        raise ValueError(f"f_nodes[{key!r}]: body {model.names[i]!r} is rigid (it has no "
                         "nodes): give its loads as f_ext")
    if isinstance(node, bool) or not isinstance(node, (int, np.integer)):
        raise ValueError(f"f_nodes[{key!r}]: the node must be an integer index, got "
                         f"{node!r}")
    if not -n <= node < n:
        raise ValueError(f"f_nodes[{key!r}]: node {node!r} out of range for body "
                         f"{model.names[i]!r} with {n} nodes")
    return i, int(node) % n


def _external(model: Model, pos: PositionTerms, f_ext, f_nodes):
    """``(f_ext, g)``: the body-origin wrenches with the nodal loads' rigid parts, and the
    nodal loads' modal generalized forces (None, 0 without nodal loads)."""
    if not _has_nodal_loads(f_nodes):
        return f_ext, 0.0
    f, g = nodal_loads(model, pos, f_nodes)
    return (f if f_ext is None else f_ext + f), g


def _external_at(model: Model, q: np.ndarray, fidelity: str, f_ext, f_nodes
                 ) -> tuple[np.ndarray | None, np.ndarray | None] | None:
    """:func:`_external` at the configuration ``q`` (:func:`nodal_loads_at`) for the engine:
    ``(f_ext, g)``, ``g`` None without nodal loads; None for complex nodal loads, which the
    reference runs (complex step)."""
    if not _has_nodal_loads(f_nodes):
        return f_ext, None
    f, g = nodal_loads_at(model, q, f_nodes, fidelity)
    if g.dtype.kind == "c":
        return None
    return (f if f_ext is None else f_ext + f), g


def check_backend(backend: str) -> str:
    """``backend`` if it is one of :data:`BACKENDS`, else ``ValueError`` listing them."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
    return backend


class _WeakModel:
    """Refers to its ``model`` weakly, so that a cache keyed by the model does not keep the
    model alive."""

    @property
    def model(self) -> Model:
        return self._model()

    @model.setter
    def model(self, model: Model) -> None:
        self._model = weakref.ref(model)


class _CachedEngine(_WeakModel, Engine):
    """An :class:`~flexdyn.engine.Engine` of the cache keyed by the model."""


def _cached(model: Model, key: Any, build: Callable[[], Any]) -> Any:
    """``build()`` for ``(model, key)``: built once (under a lock, so that threads asking at
    the same time share one) and cached while the model lives (what is cached must refer to
    the model weakly)."""
    with _ENGINES_LOCK:
        per_model = _ENGINES.setdefault(model, {})
        if key not in per_model:
            per_model[key] = build()
        return per_model[key]


def cached_engine(model: Model, fidelity: str = DEFAULT_FIDELITY) -> Engine:
    """The compiled engine of ``model`` for ``fidelity``, built once (``_cached``)."""
    check_fidelity(fidelity)
    return _cached(model, fidelity, lambda: _CachedEngine(model, fidelity))


def _cached_nodal_engine(model: Model, fidelity: str = DEFAULT_FIDELITY) -> NodalEngine:
    """The compiled filter and smoother of a model of rigid and nodal bodies
    (:class:`flexdyn.engine.nodal.NodalEngine`), built once (``_cached``)."""
    check_fidelity(fidelity)
    return _cached(model, ("nodal", fidelity), lambda: NodalEngine(model, fidelity))


#: The compiled engine of each forward-dynamics method it runs, by method (the modal engine
#: for :data:`ENGINE_METHODS`, the nodal one for ``"nodal"``).
COMPILED_FORWARD: dict[str, Callable[[Model, str], Any]] = {
    **dict.fromkeys(ENGINE_METHODS, cached_engine), "nodal": _cached_nodal_engine}


_FLOAT64 = np.dtype(np.float64)


def is_entry_array(a, *shape: int) -> bool:
    """Whether ``a`` is a writable, aligned, C-contiguous float64 array of shape ``shape``
    (the compiled entries' one type)."""
    return (type(a) is np.ndarray and (a.dtype is _FLOAT64 or a.dtype == _FLOAT64)
            and a.shape == shape and a.flags.carray)


def on_engine(backend: str, *arrays: np.ndarray | None) -> bool:
    """Whether validated ``arrays`` go to the compiled engine: ``backend`` is ``"engine"``
    and every array is real, at most double precision (else the reference: complex step,
    extended precision)."""
    return backend == "engine" and all(
        a is None or (a.dtype.kind == "f" and a.dtype.itemsize <= 8) for a in arrays)


def _finite(result: np.ndarray, what: str) -> np.ndarray:
    """``result`` if every entry is finite, else ``FloatingPointError`` (an input so large
    that the arithmetic overflowed)."""
    if not np.all(np.isfinite(result)):
        raise FloatingPointError(f"{what} is not finite: the arithmetic overflowed (inputs too "
                                 "large?)")
    return result


@batched("u", "tau", engine_op=_forward_op)
def _forward_dynamics(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray | None = None,
                      method: str = "articulated", fidelity: str = DEFAULT_FIDELITY,
                      f_ext: np.ndarray | None = None, f_nodes=None,
                      backend: str = "engine") -> np.ndarray:
    """:func:`forward_dynamics` in full: validated, batched, on either backend, for every
    input."""
    return stabilized_forward_dynamics(model, q, u, tau, method, fidelity, f_ext, f_nodes,
                                       backend)


def stabilized_forward_dynamics(model: Model, q: np.ndarray, u: np.ndarray,
                                tau: np.ndarray | None, method: str, fidelity: str,
                                f_ext: np.ndarray | None, f_nodes, backend: str,
                                rate: float = 0.0) -> np.ndarray:
    """:func:`forward_dynamics` of one state with Baumgarte's ``rate`` ``ω`` (1/s) in a
    closed chain's acceleration constraint, ``J u̇ = −γ − 2ω J u − ω² g``
    (:func:`flexdyn.closure.closed_chain_accelerations`; 0: none, as
    :func:`forward_dynamics`; ignored for a tree): the inputs validated, then one compiled
    call for a closed chain on the engine's articulated method, else the tree's
    accelerations closed by :func:`closed_chain`."""
    check_backend(backend)
    if not isinstance(method, str) or method not in FORWARD_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {tuple(FORWARD_METHODS)}")
    q, u, tau = model.check_state(q, u, tau=np.zeros(model.nu) if tau is None else tau)
    f_ext = check_external_forces(model, f_ext)
    if (model.constraints and method == "articulated" and not _has_nodal_loads(f_nodes)
            and on_engine(backend, q, u, tau, f_ext)):
        udot = _closed_on_engine(model, q, u, tau, fidelity, f_ext, rate)
        if udot is not None:
            return _finite(udot, "u̇")
    udot = tree_forward_dynamics(model, q, u, tau, method, fidelity, f_ext, f_nodes, backend)
    if model.constraints:
        udot = closed_chain(model, q, u, udot, fidelity, backend, rate)[0]
    return _finite(udot, "u̇")


def _closed_on_engine(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
                      fidelity: str, f_ext: np.ndarray | None, rate: float) -> np.ndarray | None:
    """A closed chain's ``u̇`` by one compiled call
    (:func:`flexdyn.engine.closure.closed_derivative`, Baumgarte's ``rate``), or None where
    it reports singular closures (the caller's reference path then names them)."""
    run = cached_engine(model, fidelity)
    out = np.empty(model.nq + model.nu)
    status = run.closed_derivative_status(
        np.concatenate([q, u]).astype(float), np.asarray(tau, dtype=float),
        np.zeros((model.n_bodies, 6)) if f_ext is None else np.ascontiguousarray(f_ext, float),
        rate, out)
    return None if status != -1 and status != kernels.OVERFLOW else out[model.nq:]


def tree_forward_dynamics(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
                           method: str, fidelity: str, f_ext: np.ndarray | None, f_nodes,
                           backend: str) -> np.ndarray:
    """The tree's accelerations ``u̇_f`` (closures left out) for validated inputs."""
    if _has_nodal_loads(f_nodes) and FORWARD_TERMS[method] is not state_terms:
        raise ValueError(f"method {method!r} takes no f_nodes; give the node loads as "
                         "generalized forces in tau's node slots, or use method 'articulated'")
    loads = (_external_at(model, q, fidelity, f_ext, f_nodes)
             if on_engine(backend, q, u, tau, f_ext) and method in COMPILED_FORWARD else None)
    if loads is not None:
        f_e, g = loads  # g: modal entries only, where there are no torque limits
        return COMPILED_FORWARD[method](model, fidelity).forward_dynamics(
            q, u, tau if g is None else tau + g, f_e, method)
    with np.errstate(over="ignore", invalid="ignore"):
        pos, vel = FORWARD_TERMS[method](model, q, u, fidelity)
        f_ext, g = _external(model, pos, f_ext, f_nodes)
        return FORWARD_METHODS[method](model, pos, vel, applied_forces(model, q, u, tau) + g,
                                       f_ext)


def closed_chain(model: Model, q: np.ndarray, u: np.ndarray, udot_tree: np.ndarray,
                 fidelity: str = DEFAULT_FIDELITY, backend: str = "engine", rate: float = 0.0
                 ) -> tuple[np.ndarray, np.ndarray, ClosureTerms]:
    """``(u̇, λ, terms)``: the closed chain's accelerations (nu,), closure forces (n_c,) and
    closure terms at a validated state, from the tree's accelerations ``u̇_f``
    (:func:`flexdyn.closure.closed_chain_accelerations`).  On the engine (real inputs) the
    closure terms are one compiled call
    (:meth:`flexdyn.engine.Engine.closure_terms`) and ``Y = M⁻¹ Jᵀ`` the engine's block
    sweeps; else the reference's (Lemma 4).  ``rate``: Baumgarte's ``ω`` (1/s)."""
    with np.errstate(over="ignore", invalid="ignore"):
        terms, mass_inverse = _closure_terms(model, q, u, fidelity, backend)
        udot, lam = closed_chain_accelerations(model, terms, udot_tree,
                                               mass_inverse(terms.J.T), u, rate)
    return udot, lam, terms


def _closure_terms(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str, backend: str
                   ) -> tuple[ClosureTerms, Callable[[np.ndarray], np.ndarray]]:
    """The closure terms at a validated state and ``B ↦ M⁻¹ B`` (B (nu, k)) at it (Lemma 4):
    the engine's (:meth:`flexdyn.engine.Engine.closure_terms`, its block sweeps) where it
    runs them, else the reference's from one set of per-state terms."""
    if on_engine(backend, q, u):
        run = cached_engine(model, fidelity)
        return (ClosureTerms(*run.closure_terms(q, u), owner=_owners(model)),
                lambda B: run.apply_mass_matrix_inverse(q, B))
    pos, vel = state_terms(model, q, u, fidelity)
    return (closure_terms(model, pos, vel, u),
            lambda B: apply_mass_matrix_inverse(model, pos, B))


def _owners(model: Model) -> np.ndarray:
    """The index in ``model.constraints`` of each closure row (n_c,)."""
    return np.repeat(np.arange(len(model.constraints)), [c.n_rows for c in model.constraints])


@batched("u", "tau")
def constraint_forces(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray | None = None,
                      method: str = "articulated", fidelity: str = DEFAULT_FIDELITY,
                      f_ext: np.ndarray | None = None, f_nodes=None,
                      backend: str = "engine") -> np.ndarray:
    """The closure forces ``λ`` (n_c,) of a closed chain: ``M u̇ + Jᵀ λ = τ − C`` with
    ``J u̇ = −J̇ u`` (Jain & Rodriguez Sec VIII; :mod:`flexdyn.closure`).

    Rows follow ``model.constraints`` (``model.n_constraints`` in all; each closure's rows
    in the order of :mod:`flexdyn.constraints`).  A point row's ``λ_i`` is the component
    along its direction ``n_i`` (the other endpoint's frame turned to inertial axes) of the
    force (N) that endpoint A exerts on endpoint B through the closure, ``−λ_i n_i`` acting
    on A; an orientation row's is likewise a moment (N m).  Arguments as for
    :func:`forward_dynamics`; ``q`` (nq,) or a batch (B, nq).

    Raises :class:`~flexdyn.closure.ClosureError` (a ``ValueError``) naming redundant or
    singular closures, ``ValueError`` for a model without closures.
    """
    check_backend(backend)
    if not model.constraints:
        raise ValueError(f"constraint_forces: model {model.name!r} has no loop closures "
                         "(its 'constraints' list is empty)")
    if not isinstance(method, str) or method not in FORWARD_METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {tuple(FORWARD_METHODS)}")
    q, u, tau = model.check_state(q, u, tau=np.zeros(model.nu) if tau is None else tau)
    f_ext = check_external_forces(model, f_ext)
    udot = tree_forward_dynamics(model, q, u, tau, method, fidelity, f_ext, f_nodes, backend)
    return _finite(closed_chain(model, q, u, udot, fidelity, backend)[1], "λ")


def closure_residuals(model: Model, q: np.ndarray, u: np.ndarray | None = None,
                      fidelity: str = DEFAULT_FIDELITY) -> tuple[np.ndarray, np.ndarray]:
    """How far ``(q, u)`` is from satisfying the closures: ``(g, ġ = J u)``, (n_c,) each
    (m and rad; m/s and rad/s), rows as in :func:`constraint_forces`; ``u`` None: zero."""
    q, u = model.check_state(q, np.zeros(model.nu) if u is None else u)
    pos, vel = state_terms(model, q, u, fidelity)
    terms = closure_terms(model, pos, vel, u)
    return terms.g, terms.J @ u


def assemble(model: Model, q: np.ndarray | None = None, u: np.ndarray | None = None, *,
             fixed: tuple[str, ...] | list[str] = (), fidelity: str = DEFAULT_FIDELITY,
             tol: float = 1e-12, max_iterations: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Assemble the closures: the state ``(q, u)`` nearest a guess that satisfies them.

    Gauss–Newton on ``g(q) = 0`` over the joint coordinates of the bodies not in ``fixed``
    (their modal coordinates and the fixed bodies' joints keep their values): each step is
    the least-squares, minimum-norm ``δu`` of ``J_free δu = −g``, shortened to at most
    :data:`ASSEMBLY_STEP` in every entry and applied as ``q ← q + Γ(q) δu`` (quaternions
    renormalised).  A guess where the closures' Jacobian is singular (a linkage stretched
    straight) stalls the iteration; it is then nudged (:data:`ASSEMBLY_NUDGE`, a fixed
    pseudo-random draw, so the result is reproducible) and goes on: which assembly branch it
    reaches from such a guess is not chosen.  The speeds are then projected the same
    way onto ``J u = 0`` (the free joints' speeds change least).

    Parameters
    ----------
    q : (nq,) the guess (default the neutral configuration);  u : (nu,) or None (zero).
    fixed : names of bodies whose joint coordinates and speeds are held (drivers, e.g. a
        crank angle).
    tol : the largest residual accepted, ``max |g|`` (m, rad) and ``max |J u|``.

    Raises
    ------
    ClosureError
        Naming the closures and their residuals when the iteration does not reach ``tol``
        (the closures cannot be assembled from this guess: out of reach, or over-
        constrained by ``fixed``).
    """
    q = model.neutral_configuration() if q is None else q
    q, u = model.check_state(q, np.zeros(model.nu) if u is None else u)
    q, u = np.array(q, dtype=float), np.array(u, dtype=float)
    if not model.constraints:
        raise ValueError(f"assemble: model {model.name!r} has no loop closures")
    free = np.zeros(model.nu, dtype=bool)
    for i in range(model.n_bodies):
        if model.names[i] not in fixed:
            s = int(model.u_start[i])
            free[s:s + int(model.nu_joint[i])] = True
    unknown = [name for name in fixed if name not in model.names]
    if unknown:
        raise ValueError(f"assemble: fixed names unknown bodies {unknown}; bodies are "
                         f"{list(model.names)}")

    def residual(q: np.ndarray, u: np.ndarray) -> ClosureTerms:
        pos, vel = state_terms(model, q, u, fidelity)
        return closure_terms(model, pos, vel, u)

    best, stalled = np.inf, 0
    nudge = np.random.default_rng(0)
    for _ in range(max_iterations):
        terms = residual(q, u)
        error = float(np.max(np.abs(terms.g)))
        if error <= tol:
            break
        best, stalled = (error, 0) if error < 0.5 * best else (best, stalled + 1)
        du = np.zeros(model.nu)
        du[free] = -np.linalg.lstsq(terms.J[:, free], terms.g, rcond=None)[0]
        du *= min(1.0, ASSEMBLY_STEP / max(float(np.max(np.abs(du))), 1e-300))
        if stalled >= ASSEMBLY_STALL:  # a singular guess (a linkage stretched straight)
            du[free] += nudge.uniform(-ASSEMBLY_NUDGE, ASSEMBLY_NUDGE, int(free.sum()))
            best, stalled = np.inf, 0
        q = model.normalize_configuration(q + model.Gamma(q) @ du)
    else:
        terms = residual(q, u)
    if np.max(np.abs(terms.g)) > tol:
        worst = {model.constraints[k].name: float(np.max(np.abs(terms.g[terms.owner == k])))
                 for k in range(len(model.constraints))}
        raise ClosureError("assemble: the closures cannot be assembled from this guess "
                           f"(residuals after {max_iterations} iterations: "
                           + ", ".join(f"{n!r} {r:.3g}" for n, r in worst.items())
                           + "); try another guess or fewer fixed bodies")
    u[free] -= np.linalg.lstsq(terms.J[:, free], terms.J @ u, rcond=None)[0]
    return q, u


@batched("u", "udot", engine_op=batch_op("inverse"))
def _inverse_dynamics(model: Model, q: np.ndarray, u: np.ndarray, udot: np.ndarray,
                      fidelity: str = DEFAULT_FIDELITY, f_ext: np.ndarray | None = None,
                      f_nodes=None, backend: str = "engine") -> np.ndarray:
    """:func:`inverse_dynamics` in full: validated, batched, on either backend, for every
    input."""
    check_backend(backend)
    q, u, udot = model.check_state(q, u, udot=udot)
    f_ext = check_external_forces(model, f_ext)
    loads = _external_at(model, q, fidelity, f_ext, f_nodes) if on_engine(
        backend, q, u, udot, f_ext) else None
    if loads is not None:
        tau = cached_engine(model, fidelity).inverse_dynamics(q, u, udot, loads[0])
        return _finite(tau if loads[1] is None else tau - loads[1], "τ")
    with np.errstate(over="ignore", invalid="ignore"):
        pos, vel = state_terms(model, q, u, fidelity)
        f_ext, g = _external(model, pos, f_ext, f_nodes)
        return _finite(rnea(model, pos, vel, udot, f_ext) - g - passive_forces(model, q, u),
                       "τ")


class InverseDynamicsDerivatives(NamedTuple):
    """The derivatives of inverse dynamics ``τ = ID(q, u, u̇)`` (Eq 44,
    :func:`inverse_dynamics_derivatives`), each (nu, nu), or (B, nu, nu) for a batch.

    Attributes
    ----------
    d_q : ``∂τ/∂δ`` along the tangent coordinates ``δ`` of :mod:`flexdyn.tangent` (column
        ``j``: how ``τ`` changes per unit of ``δ_j``; N m/rad, N/m, modal units).
    d_u : ``∂τ/∂u`` (N m s/rad, …): the velocity terms' and dampers' derivatives.
    M : ``∂τ/∂u̇``, the mass matrix (Eqs 47/50).
    """

    d_q: np.ndarray
    d_u: np.ndarray
    M: np.ndarray


class ForwardDynamicsDerivatives(NamedTuple):
    """The derivatives of forward dynamics ``u̇ = FD(q, u, τ)``
    (:func:`forward_dynamics_derivatives`), each (nu, nu), or (B, nu, nu) for a batch.

    ``u̇`` is the accelerations of :func:`forward_dynamics` (Eqs 46, 58: every method gives
    them), differentiated through ``M u̇ + C = sat(τ)`` (Eqs 43–44).

    Attributes
    ----------
    d_q : ``∂u̇/∂δ`` along the tangent coordinates ``δ`` of :mod:`flexdyn.tangent` (as the
        ``A`` matrix of :func:`flexdyn.linearize`): 1/s² between revolute joints (rad/s² per
        rad), the modal units elsewhere.
    d_u : ``∂u̇/∂u`` (1/s between revolute joints).
    d_tau : ``∂u̇/∂τ = M⁻¹ diag(sat′(τ))`` (1/(kg m²) between revolute joints): ``M⁻¹`` where
        no torque limit holds ``τ`` (a saturated entry's column is zero).
    """

    d_q: np.ndarray
    d_u: np.ndarray
    d_tau: np.ndarray


def _leading(model: Model, q, u, x, f_ext, x_name: str) -> tuple:
    """``(q, u, x, f_ext, batch)``: one state or a batch validated in full
    (:meth:`Model.check_state`, :func:`check_external_forces`; ``"batch item b: "`` naming
    the state) and given a leading axis B; ``u``, ``x`` None become zero, ``f_ext`` (n_bodies,
    6) is shared by every state of a batch, (B, n_bodies, 6) is per state."""
    batch = np.ndim(q) == 2
    qs = np.asarray(q) if batch else [q]
    n = len(qs)
    if batch and n == 0:
        raise ValueError(f"q has shape {np.shape(q)}: an empty batch; give one state (nq,) or "
                         "a batch (B, nq) with B ≥ 1")

    def per_state(value, name: str, per: int) -> list:
        if value is None or not batch:
            return [value] * n
        value = np.asarray(value)
        if value.ndim != per + 1 or value.shape[0] != n:
            raise ValueError(f"{name} has shape {value.shape}; with a batch of {n} states "
                             f"(q of shape {np.shape(q)}) it needs a leading axis of {n}")
        return list(value)

    us, xs = per_state(u, "u", 1), per_state(x, x_name, 1)
    fs = per_state(f_ext, "f_ext", 2) if np.ndim(f_ext) == 3 else [f_ext] * n
    zero = np.zeros(model.nu)
    out: list[list] = [[], [], [], []]
    for b in range(n):
        try:
            qb, ub, xb = model.check_state(qs[b], zero if us[b] is None else us[b],
                                           **{x_name: zero if xs[b] is None else xs[b]})
            fb = check_external_forces(model, fs[b])
        except (ValueError, TypeError) as exc:
            if not batch:
                raise
            raise type(exc)(f"batch item {b}: {exc}") from exc
        for part, value in zip(out, (qb, ub, xb, fb), strict=True):
            part.append(value)
    f_all = None if all(f is None for f in out[3]) else np.stack(
        [np.zeros((model.n_bodies, 6)) if f is None else f for f in out[3]])
    arrays = (np.stack(out[0]), np.stack(out[1]), np.stack(out[2]), f_all)
    if any(a is not None and a.dtype.kind == "c" for a in arrays):
        raise TypeError("the derivatives take a real state and real loads (they are exact "
                        "already: no complex step through them)")
    return (*arrays, batch)


def torque_limit_slopes(model: Model, tau: np.ndarray) -> np.ndarray:
    """``sat′(τ)`` (nu,): the slope of the motor torque limits at ``τ`` (nu,) — 1 inside a
    limit (and on speeds without one), 0 where the limit holds ``τ`` — by a complex step of
    :func:`flexdyn.joint_forces.motor_torques` (entry by entry, so one step gives them all)."""
    return motor_torques(model, tau + 1j * COMPLEX_STEP).imag / COMPLEX_STEP


def _tree_derivatives(model: Model) -> None:
    """``ValueError`` naming the loop closures of ``model``, whose derivatives these are not."""
    if model.constraints:
        raise ValueError(
            f"the derivatives of the dynamics are those of a tree; model {model.name!r} has "
            f"loop closures ({', '.join(c.name for c in model.constraints)}): "
            "flexdyn.linearize linearizes a closed chain (complex steps, projected onto the "
            "closures' tangent space)")


def _reference_derivatives(model: Model, q, u, udot, tau, fidelity: str, f_ext, f_nodes,
                           forward: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:meth:`flexdyn.engine.Engine.derivatives` on the reference tier, for states with a
    leading axis (validated by :func:`_leading`): complex steps of its Newton–Euler
    recursion, one evaluation per column, ``δ`` entering by its chart's retraction
    (:meth:`~flexdyn.tangent.TangentCoordinates.configuration`); for forward dynamics the
    solve of ``M du̇ = sat′(τ) dτ − ∂τ/∂δ dδ − ∂τ/∂u du`` (``np.linalg.solve``)."""
    nu, h = model.nu, COMPLEX_STEP
    d_q, d_u, M = (np.empty((len(q), nu, nu)) for _ in range(3))
    for b in range(len(q)):
        tangent = TangentCoordinates(model, q[b])
        f_b = None if f_ext is None else f_ext[b]

        def tau_of(qc, uc, b=b, f_b=f_b):
            return _inverse_dynamics(model, qc, uc, udot[b], fidelity, f_b, f_nodes,
                                     "reference")

        for j in range(nu):
            step = np.zeros(nu, dtype=complex)
            step[j] = 1j * h
            d_q[b][:, j] = tau_of(tangent.configuration(step), u[b]).imag / h
            d_u[b][:, j] = tau_of(q[b], u[b] + step).imag / h
        M[b] = _mass_matrix(model, q[b], fidelity, "reference")
    _finite(d_q, "∂τ/∂δ")
    _finite(d_u, "∂τ/∂u")
    if not forward:
        return d_q, d_u, M
    slope = np.stack([torque_limit_slopes(model, t) for t in tau])
    rhs = np.concatenate([-d_q, -d_u, np.eye(nu) * slope[:, None, :]], axis=2)
    try:
        X = np.linalg.solve(M, rhs)
    except np.linalg.LinAlgError:
        raise SingularInertiaError("mass matrix is singular or not positive definite (a "
                                   "degree of freedom without inertia?)") from None
    return X[..., :nu], X[..., nu:2 * nu], X[..., 2 * nu:]


@batched("u", "tau", "udot_prescribed", engine_op=_hybrid_op)
def _hybrid_dynamics(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray | None,
                     udot_prescribed: np.ndarray | None, prescribed: np.ndarray, *,
                     fidelity: str = DEFAULT_FIDELITY, f_ext: np.ndarray | None = None,
                     f_nodes=None, backend: str = "engine") -> tuple[np.ndarray, np.ndarray]:
    """:func:`hybrid_dynamics` in full: validated, batched, on either backend, for every
    input."""
    check_backend(backend)
    mask = np.asarray(prescribed)
    if mask.dtype != bool or mask.shape != (model.nu,):
        raise ValueError(f"prescribed must be a boolean array of shape ({model.nu},), got "
                         f"{mask.dtype} {mask.shape}")
    zero = np.zeros(model.nu)
    q, u, tau, udot_known = model.check_state(
        q, u, tau=zero if tau is None else tau,
        udot_prescribed=zero if udot_prescribed is None else udot_prescribed)
    f_ext = check_external_forces(model, f_ext)
    if model.constraints:
        udot, T, _, _ = closed_hybrid(model, q, u, tau, udot_known, mask, fidelity, f_ext,
                                      f_nodes, backend)
    else:
        udot, T = _tree_hybrid(model, q, u, tau, udot_known, mask, fidelity, f_ext, f_nodes,
                               backend)
    return _finite(udot, "u̇"), _finite(T, "τ")


def _tree_hybrid(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
                 udot_known: np.ndarray, mask: np.ndarray, fidelity: str,
                 f_ext: np.ndarray | None, f_nodes, backend: str
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The tree's hybrid dynamics ``(u̇, τ)`` (closures left out) for validated inputs.  On
    the engine the nodal loads' modal forces ``g`` act as part of ``τ`` (no joint entry, so
    no saturation) and come out of the loads it returns."""
    loads = _external_at(model, q, fidelity, f_ext, f_nodes) if on_engine(
        backend, q, u, tau, udot_known, f_ext) else None
    if loads is not None:
        f, g = loads
        udot, T = cached_engine(model, fidelity).hybrid_dynamics(
            q, u, tau if g is None else tau + g, udot_known, mask, f)
        return udot, T if g is None else T - g
    with np.errstate(over="ignore", invalid="ignore"):
        pos, vel = state_terms(model, q, u, fidelity)
        f_ext, g = _external(model, pos, f_ext, f_nodes)
        motor, passive = motor_torques(model, tau), passive_forces(model, q, u)
        udot, T = _hybrid(model, pos, vel, motor + passive + g, udot_known, ~mask, f_ext)
        T = T - g - passive  # the motor forces
        T[~mask] = motor[~mask]
        return udot, T


def closed_hybrid(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
                  udot_known: np.ndarray, mask: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                  f_ext: np.ndarray | None = None, f_nodes=None, backend: str = "engine",
                  rate: float = 0.0
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, ClosureTerms]:
    """``(u̇, τ, λ, terms)``: hybrid dynamics of a closed chain at a validated state —
    ``u̇`` (nu,), ``τ`` (nu,), the closure forces ``λ`` (n_c,) and the
    :class:`~flexdyn.closure.ClosureTerms` it used.  ``q`` (nq,), ``u``, ``tau``,
    ``udot_known`` (nu,), ``mask`` (nu,) bool; the rest as for :func:`hybrid_dynamics`.

    ``M u̇ + C + Jᵀ λ = τ`` with ``u̇`` given where ``mask`` and ``τ`` given elsewhere, and
    ``J u̇ = −γ`` (with Baumgarte's ``rate``, as :func:`closed_chain`).  The tree's hybrid
    dynamics is affine in the free forces, so ``u̇ = u̇_h − Y λ`` with ``u̇_h`` that of ``τ``
    and ``Y``'s column ``k`` the change of the free accelerations under the generalized force
    ``Jᵀ e_k`` (one more hybrid sweep per closure row); ``Λ = J Y``, then ``λ`` as in
    :func:`flexdyn.closure.closed_chain_accelerations`.  The loads at the prescribed entries
    are those that realise the motion with the closures acting: the tree's hybrid loads
    under ``τ − Jᵀ λ``, plus ``(Jᵀ λ)`` there."""
    udot_h, T_h = _tree_hybrid(model, q, u, tau, udot_known, mask, fidelity, f_ext, f_nodes,
                               backend)
    terms, _ = _closure_terms(model, q, u, fidelity, backend)
    nc = terms.J.shape[0]
    Y, dT = np.empty((model.nu, nc)), np.empty((model.nu, nc))
    for k in range(nc):
        udot_k, T_k = _tree_hybrid(model, q, u, tau - terms.J[k], udot_known, mask, fidelity,
                                   f_ext, f_nodes, backend)
        Y[:, k], dT[:, k] = udot_h - udot_k, T_h - T_k
    udot, lam = closed_chain_accelerations(model, terms, udot_h, Y, u, rate)
    T = T_h - dT @ lam + terms.J.T @ lam
    T[~mask] = tau[~mask]
    return udot, T, lam, terms

@batched("u", "udot", engine_op=batch_op("joint_wrenches"))
def _joint_wrenches(model: Model, q: np.ndarray, u: np.ndarray, udot: np.ndarray,
                    fidelity: str = DEFAULT_FIDELITY, f_ext: np.ndarray | None = None,
                    f_nodes=None, backend: str = "engine") -> np.ndarray:
    """:func:`joint_wrenches` in full: validated, batched, on either backend, for every
    input."""
    check_backend(backend)
    q, u, udot = model.check_state(q, u, udot=udot)
    f_ext = check_external_forces(model, f_ext)
    loads = _external_at(model, q, fidelity, f_ext, f_nodes) if on_engine(
        backend, q, u, udot, f_ext) else None
    if loads is not None:  # the nodal loads' rigid parts alone load the joints
        return _finite(cached_engine(model, fidelity).joint_wrenches(q, u, udot, loads[0]),
                       "joint wrenches")
    with np.errstate(over="ignore", invalid="ignore"):
        pos, vel = state_terms(model, q, u, fidelity)
        f_ext, _ = _external(model, pos, f_ext, f_nodes)
        f = modal_forces(model, pos, vel, udot[:, None], f_ext)
        return _finite(wrenches_of_modal_forces(model, pos, f), "joint wrenches")


@batched("u", engine_op=batch_op("inverse"))
def _bias_forces(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                 f_ext: np.ndarray | None = None, f_nodes=None,
                 backend: str = "engine") -> np.ndarray:
    """:func:`bias_forces` in full: validated, batched, on either backend, for every
    input."""
    check_backend(backend)
    q, u = model.check_state(q, u)
    f_ext = check_external_forces(model, f_ext)
    loads = _external_at(model, q, fidelity, f_ext, f_nodes) if on_engine(
        backend, q, u, f_ext) else None
    if loads is not None:
        C = cached_engine(model, fidelity).inverse_dynamics(q, u, None, loads[0])
        return _finite(C if loads[1] is None else C - loads[1], "C")
    with np.errstate(over="ignore", invalid="ignore"):
        pos, vel = state_terms(model, q, u, fidelity)
        f_ext, g = _external(model, pos, f_ext, f_nodes)
        return _finite(rnea(model, pos, vel, np.zeros(model.nu), f_ext) - g
                       - passive_forces(model, q, u), "C")


@batched("u")
def coriolis_matrix(model: Model, q: np.ndarray, u: np.ndarray,
                    fidelity: str = DEFAULT_FIDELITY) -> np.ndarray:
    """The Coriolis matrix ``C(q, u)`` (nu × nu): ``C u`` is the velocity-dependent part of
    :func:`bias_forces` (damping excluded), ``Ṁ − 2C`` is skew-symmetric, in the speeds of
    the model's joints (Poincaré's form, Kwatny & Blankenship Eq 53a), so that
    ``M u̇ + C u + D u + F(q) = τ`` with ``F(q) = bias_forces(model, q, 0)`` (gravity and
    elastic forces) and ``D`` the modal damping.  Numpy, from the element Jacobians
    (:mod:`flexdyn.coriolis`); ``ValueError`` for ``fidelity="ruthless"``.

    ``q`` (nq,), ``u`` (nu,) real, or a batch (B, nq), (B, nu)."""
    check_fidelity(fidelity)
    q, u = model.check_state(q, u)
    if np.iscomplexobj(q) or np.iscomplexobj(u):
        raise TypeError("coriolis_matrix takes real q and u (it differentiates by complex step "
                        "itself)")
    return _coriolis_matrix(model, q, u, fidelity)


@batched(engine_op=batch_op("mass"))
def _mass_matrix(model: Model, q: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                 backend: str = "engine") -> np.ndarray:
    """:func:`mass_matrix` in full: validated, batched, on either backend, for every
    input."""
    check_backend(backend)
    q, _ = model.check_state(q)
    if on_engine(backend, q):
        return cached_engine(model, fidelity).mass_matrix(q)
    return crba(model, state_terms(model, q, None, fidelity)[0])


def innovations_factors(model: Model, q: np.ndarray, fidelity: str = DEFAULT_FIDELITY
                        ) -> tuple[PositionTerms, ArticulatedFactors]:
    """Innovations factors at ``q``: ``(pos, factors)`` with ``D, G, τ̄, P`` per body (Eq 51)
    and the methods ``factors.K(pos, i)`` = ``K(p, i)`` and ``factors.Psi(pos, i)`` =
    ``Ψ(p, i)``."""
    q, _ = model.check_state(q)
    pos = state_terms(model, q, None, fidelity)[0]
    return pos, articulated_body_inertias(model, pos)


@batched(engine_op=batch_op("mass_inverse"))
def _mass_matrix_inverse(model: Model, q: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                         backend: str = "engine") -> np.ndarray:
    """:func:`mass_matrix_inverse` in full: validated, batched, on either backend, for every
    input."""
    check_backend(backend)
    q, _ = model.check_state(q)
    if on_engine(backend, q):
        return cached_engine(model, fidelity).mass_matrix_inverse(q)
    pos, factors = innovations_factors(model, q, fidelity)
    return apply_mass_matrix_inverse(model, pos, np.eye(model.nu), factors)


# ----------------------------------------------------------------------------------------------
# the bound interface
# ----------------------------------------------------------------------------------------------
class Dynamics:
    """The per-state dynamics of one model, its body model and backend chosen once (as
    Pinocchio's ``Data`` or MuJoCo's ``MjData``): made by :func:`bind`.

    Every method takes one state (``q`` (nq,), ``u``, ``τ``, ``u̇`` (nu,)) or a batch of them
    (a leading axis B, as the module-level functions, :func:`batched`) and accepts ``out=``,
    an array of the result's shape and dtype ``float64`` to write the result into (returned).
    The model is not validated again: only the arguments, cheaply.  On the engine, arrays
    that are already what the compiled entries take (writable, C-contiguous ``float64`` of
    the exact shapes, no nodal loads, a tree) go straight in, the entry checking finiteness
    and quaternion norms; anything else (complex numbers for complex-step derivatives, other
    dtypes and layouts, ``f_nodes``, loop closures, batches) takes the general path of the
    module-level function, which validates in full, names what is wrong and runs the
    reference where the engine does not.  Either way the result is the same to round-off.

    Attributes
    ----------
    model : the :class:`~flexdyn.Model` (not copied: do not modify it while bound).
    fidelity : the body model, one of :data:`~flexdyn.terms.FIDELITIES`.
    backend : ``"engine"`` or ``"reference"`` (:data:`BACKENDS`).
    """

    def __init__(self, model: Model, fidelity: str | None = None, backend: str = "engine"):
        fidelity = DEFAULT_FIDELITY if fidelity is None else fidelity
        check_fidelity(fidelity)
        self.model = model
        self.fidelity = fidelity
        self.backend = check_backend(backend)
        self._run: Engine | bool | None = None if backend == "engine" else False
        self._nq, self._nu, self._nb = model.nq, model.nu, model.n_bodies
        self._q_shape, self._vector = (model.nq,), (model.nu,)
        self._zero_tau = np.zeros(model.nu)
        self._zero_wrenches = np.zeros((model.n_bodies, 6))
        #: the engine's entry of each method (False: none), on first use
        self._forward: dict[str, Callable | bool] = {}
        self._ill: bool | None = None  # ill_conditioned(), on first use
        self._refine: bool | None = None  # refines(), on first use
        self._M0: np.ndarray | None = None  # _neutral_mass_matrix(), on first use
        self._q_dir: np.ndarray | None = None  # _directions, on first use

    def __repr__(self) -> str:
        return (f"Dynamics(model={self.model.name!r}, fidelity={self.fidelity!r}, "
                f"backend={self.backend!r})")

    def _engine(self) -> Engine | None:
        """The compiled engine of a tree on the engine backend (built on first use), else
        None (the general path)."""
        if self._run is None:
            self._run = False if self.model.constraints else cached_engine(self.model,
                                                                           self.fidelity)
        return self._run or None

    def _short(self, q, n_q: int, u, x, f_ext, out, out_shape: tuple[int, ...]
               ) -> Engine | None:
        """The engine when ``q`` (``n_q``,), ``u``, ``x`` (nu,), ``f_ext`` (n_bodies, 6) and
        ``out`` (``out_shape``) are what its entries take (``u``, ``x``, ``f_ext``, ``out`` may
        be None), else None."""
        run = self._run if self._run is not None else self._engine()
        nu = self._nu
        if not (run and is_entry_array(q, n_q) and (u is None or is_entry_array(u, nu))
                and (x is None or is_entry_array(x, nu))
                and (out is None or is_entry_array(out, *out_shape))
                and (f_ext is None or is_entry_array(f_ext, self._nb, 6))):
            return None
        return run

    def _forward_entry(self, method: str) -> Callable | None:
        """``entry(q, u, tau, f_ext, udot) -> status``: the machine code of the engine's
        forward dynamics of ``method`` with the buffers it takes first
        (:meth:`flexdyn.engine.Engine.forward_entry`), or None where the general path runs
        it."""
        entry = self._forward.get(method)
        if entry is None and method in ENGINE_METHODS:
            run = self._engine()
            if run:
                code, buffers = run.forward_entry(method)
                entry = self._forward[method] = functools.partial(code, *buffers)
            else:
                entry = self._forward[method] = False
        return entry or None

    def forward_dynamics(self, q: np.ndarray, u: np.ndarray, tau: np.ndarray | None = None, *,
                         method: str = "articulated", f_ext: np.ndarray | None = None,
                         f_nodes=None, out: np.ndarray | None = None) -> np.ndarray:
        """``u̇`` (nu,) with ``M(q) u̇ + C(q, u) = τ``: :func:`forward_dynamics` (arguments
        and errors as there).  Where the model calls for it (:meth:`refines`) the O(N)
        methods' result takes one step of iterative refinement."""
        entry = (self._forward.get(method) or self._forward_entry(method)) \
            if type(method) is str and f_nodes is None else None
        nu, vector = self._nu, self._vector
        # is_entry_array written out for q, u and τ on this hot path (a Python call each
        # less; a float64 dtype that is not numpy's own object takes the general path)
        if entry is not None \
                and type(q) is np.ndarray and q.dtype is _FLOAT64 and q.shape == self._q_shape \
                and q.flags.carray and type(u) is np.ndarray and u.dtype is _FLOAT64 \
                and u.shape == vector and u.flags.carray \
                and (tau is None or (type(tau) is np.ndarray and tau.dtype is _FLOAT64
                                     and tau.shape == vector and tau.flags.carray)) \
                and (out is None or is_entry_array(out, nu)) \
                and (f_ext is None or is_entry_array(f_ext, self._nb, 6)):
            udot = np.empty(nu) if out is None else out
            status = entry(q, u, self._zero_tau if tau is None else tau,
                           self._zero_wrenches if f_ext is None else f_ext, udot)
            if status == -1:
                return udot if self._refine is False else self._refined(q, u, tau, method,
                                                                        f_ext, f_nodes, udot)
            if status == kernels.OVERFLOW:
                return _finite(udot, "u̇")
            # an invalid input or a singular inertia: the general path names it
        udot = _into(out, _forward_dynamics(self.model, q, u, tau, method, self.fidelity, f_ext,
                                            f_nodes, self.backend))
        return udot if self._refine is False else self._refined(q, u, tau, method, f_ext,
                                                                f_nodes, udot)

    def ill_conditioned(self) -> bool:
        """Whether the mass matrix at the neutral configuration has a condition number above
        :data:`REFINE_CONDITION` (estimated once, by the reference tier, from its Cholesky
        factor: LAPACK's ``dpocon``), so that the O(N) solves (the articulated-body and split
        methods, :meth:`mass_matrix_inverse`) lose digits that one step of iterative
        refinement restores: their error grows faster with ``κ(M)`` than a dense Cholesky
        solve's (a heavy payload on light links, Jain & Rodriguez's Shuttle arm)."""
        if self._ill is None:
            kappa = condition_estimate(self._neutral_mass_matrix())
            # a singular M (a degree of freedom without inertia): the solves name it
            self._ill = REFINE_CONDITION < kappa < math.inf
        return self._ill

    def _neutral_mass_matrix(self) -> np.ndarray:
        """``M`` (nu × nu) at the neutral configuration by the reference tier, computed once
        for :meth:`ill_conditioned` and :meth:`refines`."""
        if self._M0 is None:
            self._M0 = _mass_matrix(self.model, self.model.neutral_configuration(),
                                    self.fidelity, "reference")
        return self._M0

    def refines(self) -> bool:
        """Whether the O(N) solves (the articulated and split methods,
        :meth:`mass_matrix_inverse`) take one step of iterative refinement: where the model
        is :meth:`ill_conditioned` and, measured once at the neutral configuration for three
        seeded accelerations ``u̇`` (``τ = M u̇ + C``), the articulated solve's error exceeds
        :data:`REFINE_LOSS` times a dense Cholesky solve's of the same ``M`` and ``C``.  The
        condition number alone does not decide: a heavy payload on the Shuttle arm's flexible
        booms costs the articulated solve three digits more than Cholesky, long rigid or
        flexible chains as ill-conditioned cost it none (``tests/test_conditioning.py``),
        and the step doubles the cost of a call."""
        if self._refine is None:
            self._refine = self.ill_conditioned() and self._articulated_loss() > REFINE_LOSS
        return self._refine

    def _articulated_loss(self) -> float:
        """The largest relative error of the articulated solve over that of a dense Cholesky
        solve (at least ``ε κ / 1000``, its attainable accuracy) for three seeded ``u̇`` at the
        neutral configuration at rest (:meth:`refines`)."""
        model, q0, M = self.model, self.model.neutral_configuration(), self._neutral_mass_matrix()
        zero = np.zeros(model.nu)
        C = _bias_forces(model, q0, zero, self.fidelity, None, None, self.backend)
        udot = np.random.default_rng(0).normal(size=(3, model.nu))
        tau = udot @ M.T + C
        dense = scipy.linalg.cho_solve(scipy.linalg.cho_factor(M), (tau - C).T).T
        fast = np.array([tree_forward_dynamics(model, q0, zero, t, "articulated", self.fidelity,
                                               None, None, self.backend) for t in tau])

        def error(x: np.ndarray) -> float:
            return float(np.max(np.linalg.norm(x - udot, axis=1) / np.linalg.norm(udot, axis=1)))

        floor = 1e-3 * np.finfo(float).eps * np.linalg.cond(M)
        return error(fast) / max(error(dense), floor)

    def _refined(self, q, u, tau, method: str, f_ext, f_nodes, udot: np.ndarray) -> np.ndarray:
        """``u̇`` of an O(N) method (:data:`REFINED_METHODS`) after one step of iterative
        refinement where the model calls for it (:meth:`refines`; else ``u̇`` as it is),
        written into ``udot`` (Wilkinson; Higham, *Accuracy and Stability of Numerical
        Algorithms*, Ch 12): with the residual ``r = τ − (M u̇ + C)`` by
        Newton–Euler inverse dynamics (backward stable), the same O(N) solve of ``τ + r``,
        ``M̃⁻¹ (τ + r − C) = u̇ + M̃⁻¹ r`` (``M̃`` the matrix the solve inverts exactly; its
        error ``M̃ − M`` depends on ``q`` alone), is the refined ``u̇``: its error is that of
        ``u̇`` times ``‖M⁻¹ (M̃ − M)‖``."""
        if method not in REFINED_METHODS or not self.refines():
            return udot
        tau = np.zeros_like(np.asarray(u, dtype=float)) if tau is None else tau
        r = tau - self.inverse_dynamics(q, u, udot, f_ext=f_ext, f_nodes=f_nodes)
        udot[...] = _forward_dynamics(self.model, q, u, tau + r, method, self.fidelity, f_ext,
                                      f_nodes, self.backend)
        return udot

    def inverse_dynamics(self, q: np.ndarray, u: np.ndarray, udot: np.ndarray, *,
                         f_ext: np.ndarray | None = None, f_nodes=None,
                         out: np.ndarray | None = None) -> np.ndarray:
        """``τ = M(q) u̇ + C(q, u)`` (nu,): :func:`inverse_dynamics`."""
        if udot is not None and f_nodes is None:
            result = self._inverse(q, u, udot, f_ext, out, "τ")
            if result is not None:
                return result
        return _into(out, _inverse_dynamics(self.model, q, u, udot, self.fidelity, f_ext,
                                            f_nodes, self.backend))

    def bias_forces(self, q: np.ndarray, u: np.ndarray, *, f_ext: np.ndarray | None = None,
                    f_nodes=None, out: np.ndarray | None = None) -> np.ndarray:
        """``C(q, u)`` (nu,) of Eq 43: :func:`bias_forces`."""
        if f_nodes is None:
            result = self._inverse(q, u, None, f_ext, out, "C")
            if result is not None:
                return result
        return _into(out, _bias_forces(self.model, q, u, self.fidelity, f_ext, f_nodes,
                                       self.backend))

    def _inverse(self, q, u, udot, f_ext, out, what: str) -> np.ndarray | None:
        """Eq 44 by the engine's entry for arguments it takes, else None."""
        run = self._short(q, self._nq, u, udot, f_ext, out, (self._nu,))
        if run is None:
            return None
        tau = np.empty(self._nu) if out is None else out
        status = run.inverse_status(q, u, udot, f_ext, tau)
        if status == kernels.OVERFLOW:
            return _finite(tau, what)
        return tau if status == -1 else None

    def mass_matrix(self, q: np.ndarray, *, out: np.ndarray | None = None) -> np.ndarray:
        """``M(q)`` (nu × nu), Eqs 47/50: :func:`mass_matrix`."""
        nu = self._nu
        run = self._short(q, self._nq, None, None, None, out, (nu, nu))
        if run is not None:
            M = np.empty((nu, nu)) if out is None else out
            if run.mass_status(q, M) != kernels.INVALID:
                return M
        return _into(out, _mass_matrix(self.model, q, self.fidelity, self.backend))

    def mass_matrix_inverse(self, q: np.ndarray, *, out: np.ndarray | None = None
                            ) -> np.ndarray:
        """``M⁻¹(q)`` (nu × nu), Lemma 4: :func:`mass_matrix_inverse`; where the model calls
        for it (:meth:`refines`) after one step of iterative refinement,
        ``X + X (I − M X)``."""
        X = _mass_matrix_inverse(self.model, q, self.fidelity, self.backend)
        if self._refine is not False and self.refines():
            X = X + X @ (np.eye(self._nu) - self.mass_matrix(q) @ X)
        return _into(out, X)

    def inverse_dynamics_derivatives(self, q: np.ndarray, u: np.ndarray, udot: np.ndarray, *,
                                     f_ext: np.ndarray | None = None, f_nodes=None,
                                     out: tuple[np.ndarray, ...] | None = None
                                     ) -> InverseDynamicsDerivatives:
        """``(∂τ/∂δ, ∂τ/∂u, M)``: :func:`inverse_dynamics_derivatives`; ``out`` a triple of
        arrays."""
        return _derivatives_into(out, InverseDynamicsDerivatives(
            *self._derivatives(False, q, u, udot, None, f_ext, f_nodes)))

    def forward_dynamics_derivatives(self, q: np.ndarray, u: np.ndarray,
                                     tau: np.ndarray | None = None, *,
                                     f_ext: np.ndarray | None = None, f_nodes=None,
                                     out: tuple[np.ndarray, ...] | None = None
                                     ) -> ForwardDynamicsDerivatives:
        """``(∂u̇/∂δ, ∂u̇/∂u, ∂u̇/∂τ)``: :func:`forward_dynamics_derivatives`; ``out`` a triple
        of arrays."""
        return _derivatives_into(out, ForwardDynamicsDerivatives(
            *self._derivatives(True, q, u, None, tau, f_ext, f_nodes)))

    def _derivatives(self, forward: bool, q, u, udot, tau, f_ext, f_nodes) -> tuple:
        """The three derivative blocks of :meth:`forward_dynamics_derivatives` (``forward``;
        the engine's entries solve for ``u̇``, :meth:`forward_dynamics` names what is wrong)
        or of :meth:`inverse_dynamics_derivatives`:
        one state of the engine's arrays straight into the engine's machine code
        (:meth:`flexdyn.engine.Engine.derivatives_code`), anything else validated in full
        (:func:`_leading`) and run on the engine or the reference tier."""
        nq, nu = self._nq, self._nu
        x = tau if forward else udot
        run = self._short(q, nq, u, x, f_ext, None, (nu,)) if f_nodes is None else None
        if run is not None:
            code = run.derivatives_code()
            zero_tau, zero_wrenches = self._zero_tau, self._zero_wrenches
            udot = np.zeros(nu) if forward else udot  # forward derivatives solve for u̇
            if run.rigid_tree:  # one state
                d = np.empty((3, nu, nu))
                if code(forward, q, u, udot, zero_tau if tau is None else tau,
                        zero_wrenches if f_ext is None else f_ext, d) == -1:
                    return d[0], d[1], d[2]
            else:  # a batch of one
                d, status = np.empty((3, 1, nu, nu)), np.empty(1, dtype=np.int64)
                code(forward, 0, 1, q[None], u[None], udot[None],
                     (zero_tau if tau is None else tau)[None],
                     (zero_wrenches if f_ext is None else f_ext)[None], self._directions(), d,
                     status)
                if status[0] == -1:
                    return d[0, 0], d[1, 0], d[2, 0]
            if forward:  # names a singular inertia as for one state
                self.forward_dynamics(q, u, tau, f_ext=f_ext)
            # an invalid input, a singular mass matrix or an overflow: the general path
            # reports it
        model = self.model
        _tree_derivatives(model)
        q, u, x, f_ext, batch = _leading(model, q, u, x, f_ext, "tau" if forward else "udot")
        if forward:
            tau = x
            udot = self.forward_dynamics(q, u, tau, f_ext=f_ext, f_nodes=f_nodes)
        else:
            tau, udot = np.zeros_like(x), x
        engine, nodal = on_engine(self.backend, q, u, udot, tau, f_ext), _has_nodal_loads(f_nodes)
        loads = ([nodal_loads_at(model, q_b, f_nodes, self.fidelity) for q_b in q]
                 if engine and nodal else [])
        if engine and all(g.dtype.kind != "c" for _, g in loads):  # complex loads: reference
            if nodal:  # held in the body frames, as f_ext; their slopes in η added below
                f_ext = np.array([f for f, _ in loads]) + (0.0 if f_ext is None else f_ext)
                tau = tau + np.array([g for _, g in loads])
            d_q, d_u, d_x, status = self._engine().derivatives(
                forward, q, u, udot, tau, f_ext, self._directions())
            if np.any(status == kernels.OVERFLOW):
                raise FloatingPointError("the derivatives are not finite: the arithmetic "
                                         "overflowed (inputs too large?)")
            if nodal:
                G = np.array([_nodal_load_slopes(model, q_b, f_nodes, self.fidelity)
                              for q_b in q])
                if forward:  # M state by state: the one-state entry, not the batched one
                    G = np.linalg.solve(np.array([self.mass_matrix(q_b) for q_b in q]), G)
                d_q = d_q + (G if forward else -G)
        else:
            d_q, d_u, d_x = _reference_derivatives(model, q, u, udot, tau, self.fidelity, f_ext,
                                                   f_nodes, forward)
        return (d_q, d_u, d_x) if batch else (d_q[0], d_u[0], d_x[0])

    def _directions(self) -> np.ndarray:
        """``∂q/∂δ`` (nq, nu) at the neutral configuration
        (:meth:`~flexdyn.tangent.TangentCoordinates.directions`), built once: the engine's
        derivatives take it and form the quaternion joints' blocks at each state."""
        if self._q_dir is None:
            self._q_dir = TangentCoordinates(self.model,
                                             self.model.neutral_configuration()).directions()
        return self._q_dir

    def hybrid_dynamics(self, q: np.ndarray, u: np.ndarray, tau: np.ndarray | None,
                        udot_prescribed: np.ndarray | None, prescribed: np.ndarray, *,
                        f_ext: np.ndarray | None = None, f_nodes=None,
                        out: tuple[np.ndarray, np.ndarray] | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
        """``(u̇, τ)`` with the accelerations where ``prescribed`` given:
        :func:`hybrid_dynamics`; ``out`` a pair of arrays."""
        udot, T = _hybrid_dynamics(self.model, q, u, tau, udot_prescribed, prescribed,
                                   fidelity=self.fidelity, f_ext=f_ext, f_nodes=f_nodes,
                                   backend=self.backend)
        if out is None:
            return udot, T
        return _into(out[0], udot), _into(out[1], T)

    def joint_wrenches(self, q: np.ndarray, u: np.ndarray, udot: np.ndarray, *,
                       f_ext: np.ndarray | None = None, f_nodes=None,
                       out: np.ndarray | None = None) -> np.ndarray:
        """The wrench each joint transmits (n_bodies, 6), Eq 36: :func:`joint_wrenches`."""
        return _into(out, _joint_wrenches(self.model, q, u, udot, self.fidelity, f_ext, f_nodes,
                                          self.backend))

    def state_derivative(self, t: float, x: np.ndarray, tau: np.ndarray | None = None, *,
                         method: str = "articulated", f_ext: np.ndarray | None = None,
                         out: np.ndarray | None = None) -> np.ndarray:
        """``ẋ = [Γ(q) u; u̇]`` (nq + nu,) of the state ``x = [q; u]`` (nq + nu,) at time ``t``
        (s; the dynamics does not depend on it: the argument order of ODE solvers), with
        ``τ`` (nu,) or None and ``f_ext`` (n_bodies, 6) or None; quaternions are scaled to
        unit length first.  Loop closures are kept at the acceleration level, without
        stabilization (:func:`flexdyn.rhs` adds Baumgarte's).  A batch ``x`` (B, nq + nu)
        with ``τ`` (B, nu) gives (B, nq + nu)."""
        nx = self._nq + self._nu
        run = self._short(x, nx, None, tau, f_ext, out, (nx,))
        if run is not None and type(method) is str and method in DERIVATIVE_METHODS:
            xdot = np.empty(nx) if out is None else out
            status = run.derivative_status(x, self._zero_tau if tau is None else tau,
                                           self._zero_wrenches if f_ext is None else f_ext,
                                           method, xdot)
            if status == -1:
                return xdot
            if status == kernels.OVERFLOW:
                return _finite(xdot, "ẋ")
        return _into(out, self._state_derivative(x, tau, method, f_ext))

    def _state_derivative(self, x, tau, method: str, f_ext) -> np.ndarray:
        """:meth:`state_derivative` validated in full (one state or a batch)."""
        model = self.model
        x = numeric_array(x, "x")
        nx = model.nq + model.nu
        if x.ndim == 2 and x.shape[1:] == (nx,):
            taus = [None] * len(x) if tau is None else np.asarray(tau)
            if tau is not None and taus.shape != (len(x), model.nu):
                raise ValueError(f"tau has shape {taus.shape}; with a batch of {len(x)} states "
                                 f"it needs ({len(x)}, {model.nu})")
            return np.stack([self._state_derivative(x[b], taus[b], method, f_ext)
                             for b in range(len(x))])
        if x.shape != (nx,):
            raise ValueError(f"x has shape {x.shape}, expected ({nx},) = (nq + nu,) or a batch "
                             f"(B, {nx})")
        q, u = x[:model.nq], x[model.nq:]
        if not np.all(np.isfinite(x)):
            raise ValueError("x contains non-finite values")
        q = model.normalize_configuration(q)
        udot = _forward_dynamics(model, q, u, tau, method, self.fidelity, f_ext, None,
                                 self.backend)
        return np.concatenate([model.qdot(q, u), udot])


def _into(out: np.ndarray | None, result: np.ndarray) -> np.ndarray:
    """``result``, or ``out`` with ``result`` written into it (``ValueError`` naming a shape or
    dtype that does not fit)."""
    if out is None:
        return result
    if not isinstance(out, np.ndarray) or out.shape != result.shape \
            or not np.can_cast(result.dtype, out.dtype, "same_kind"):
        got = (f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray)
               else type(out).__name__)
        raise ValueError(f"out must be an array of shape {result.shape} and dtype "
                         f"{result.dtype}, got {got}")
    out[...] = result
    return out


def _derivatives_into(out: tuple[np.ndarray, ...] | None, result: NamedTuple) -> NamedTuple:
    """``result``, or its parts written into the arrays of ``out`` (``_into``)."""
    if out is None:
        return result
    if not isinstance(out, tuple | list) or len(out) != len(result):
        raise ValueError(f"out must be a tuple of {len(result)} arrays, got "
                         f"{type(out).__name__}")
    return type(result)(*(_into(o, r) for o, r in zip(out, result, strict=True)))


class _CachedDynamics(_WeakModel, Dynamics):
    """A :class:`Dynamics` of the module-level functions' cache keyed by the model."""


def bind(model: Model, *, fidelity: str | None = None, backend: str = "engine") -> Dynamics:
    """The dynamics of ``model`` for one body model and backend, chosen once: a
    :class:`Dynamics` whose methods take only the state.

    Parameters
    ----------
    model : Model
    fidelity : the body model, one of :data:`~flexdyn.terms.FIDELITIES` (None: the default,
        ``"exact"``).
    backend : ``"engine"`` (compiled, default) or ``"reference"`` (numpy).

    Example::

        dyn = fd.bind(model)
        udot = dyn.forward_dynamics(q, u, tau)
        dyn.mass_matrix(q, out=M)      # into a preallocated (nu, nu) array
    """
    return Dynamics(model, fidelity, backend)


def _bound(model: Model, fidelity: str, backend: str) -> Dynamics:
    """The cached :class:`Dynamics` of the module-level functions, one per model, fidelity
    and backend (built once, ``_cached``; ``ValueError`` for an unknown fidelity or
    backend)."""
    per_model = _ENGINES.get(model)
    key = ("bound", fidelity, backend)
    if per_model is not None and type(fidelity) is str and type(backend) is str:
        run = per_model.get(key)
        if run is not None:
            return run
    check_fidelity(fidelity)
    check_backend(backend)
    return _cached(model, key, lambda: _CachedDynamics(model, fidelity, backend))


def forward_dynamics(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray | None = None,
                     method: str = "articulated", fidelity: str = DEFAULT_FIDELITY,
                     f_ext: np.ndarray | None = None, f_nodes=None,
                     backend: str = "engine") -> np.ndarray:
    """Generalized accelerations ``u̇`` (nu,) with ``M(q) u̇ + C(q, u) = τ``.

    Raises ``ValueError``/``TypeError`` for invalid inputs (naming the argument),
    :class:`~flexdyn.linalg.SingularInertiaError` for a degree of freedom without inertia and
    ``FloatingPointError`` when inputs are so large that the result overflows.

    Parameters
    ----------
    q : (nq,), u : (nu,), tau : (nu,) or None (zero) — layout of ``model-format.md``; or a
        batch ``(B, nq)``, ``(B, nu)`` (see :func:`batched`).
    method : ``"articulated"`` (O(N) articulated-body algorithm, Eq 58), ``"articulated-split"``
        (flexible/hinge split, Eqs 62–64; Eq B3 for the ruthless model), ``"composite"``
        (Eq 46) or ``"nodal"`` (Rodriguez's filter and smoother, O(nodes), for models of rigid
        and nodal bodies: :mod:`flexdyn.nodal`, compiled in
        :mod:`flexdyn.engine.nodal`; no ``f_nodes``).
    fidelity : the body model, one of :data:`~flexdyn.terms.FIDELITIES`: ``"exact"``
        (default), ``"consistent"``, ``"full"`` or ``"ruthless"``.
    f_ext : (n_bodies, 6) or None — external wrenches at the body frame origins.
    f_nodes : mapping ``{(body, node): wrench (6,)}`` or None — wrenches at nodes, in the node
        frames (:func:`nodal_loads`).
    backend : ``"engine"`` (compiled, default) or ``"reference"`` (numpy); see the module
        notes on which calls the engine runs.
    """
    return _bound(model, fidelity, backend).forward_dynamics(
        q, u, tau, method=method, f_ext=f_ext, f_nodes=f_nodes)


def inverse_dynamics(model: Model, q: np.ndarray, u: np.ndarray, udot: np.ndarray,
                     fidelity: str = DEFAULT_FIDELITY, f_ext: np.ndarray | None = None,
                     f_nodes=None, backend: str = "engine") -> np.ndarray:
    """Generalized forces ``τ = M(q) u̇ + C(q, u)`` (nu,), Eqs 44–45: the motor forces, with
    the joint forces ``τ_J`` of :mod:`flexdyn.joint_forces` (springs, dampers, friction,
    limits) acting besides them (their torque limits are not applied).

    Parameters
    ----------
    model : Model
    q : (nq,) coordinates; u : (nu,) speeds; udot : (nu,) accelerations
        (layout of ``model-format.md``: per body, joint then modal entries).
    fidelity : the body model, one of :data:`~flexdyn.terms.FIDELITIES`: ``"exact"``
        (default), ``"consistent"``, ``"full"`` or ``"ruthless"``.
    f_ext : (n_bodies, 6) or None — external wrenches ``[N m; N]`` at body frame
        origins, in body coordinates.
    f_nodes : as for :func:`forward_dynamics`.
    backend : ``"engine"`` (compiled, default) or ``"reference"`` (numpy).

    Returns
    -------
    τ : (nu,) — joint forces/torques and modal forces (N, N m, or modal units).
    """
    return _bound(model, fidelity, backend).inverse_dynamics(q, u, udot, f_ext=f_ext,
                                                             f_nodes=f_nodes)


def forward_dynamics_derivatives(model: Model, q: np.ndarray, u: np.ndarray,
                                 tau: np.ndarray | None = None, *, fidelity: str | None = None,
                                 f_ext: np.ndarray | None = None, f_nodes=None,
                                 backend: str = "engine") -> ForwardDynamicsDerivatives:
    """The derivatives of the forward dynamics ``u̇ = FD(q, u, τ)`` in the state and the
    inputs: ``(d_q, d_u, d_tau)`` = ``(∂u̇/∂δ, ∂u̇/∂u, ∂u̇/∂τ)``, each (nu, nu).

    ``δ`` are the tangent coordinates of :mod:`flexdyn.tangent` about ``q`` (one per speed:
    the joint coordinates themselves, a quaternion joint's rotation vector in its child frame,
    the modal coordinates), the coordinates of :func:`flexdyn.linearize`.  With
    ``τ = ID(q, u, u̇)`` the inverse dynamics at ``u̇ = FD(q, u, τ)``, differentiating
    ``M u̇ + C = sat(τ)`` gives ``d_q = −M⁻¹ ∂ID/∂δ``, ``d_u = −M⁻¹ ∂ID/∂u`` and
    ``d_tau = M⁻¹ diag(sat′(τ))`` (:func:`inverse_dynamics_derivatives`; the torque limits'
    slope is 1 inside them, 0 where one holds).  Exact to round-off on every body model, joint
    kind and joint force: the engine differentiates its own stages in forward mode
    (:mod:`flexdyn.engine.derivatives`), the reference tier by complex steps.

    Parameters
    ----------
    model : Model (a tree: ``ValueError`` for loop closures, which
        :func:`flexdyn.linearize` handles).
    q : (nq,), u : (nu,), tau : (nu,) or None (zero) — or a batch ``(B, nq)``, ``(B, nu)``
        (the results gain the leading axis B); ``f_ext`` (n_bodies, 6) for every state or
        (B, n_bodies, 6).
    fidelity : the body model (None: ``"exact"``); f_ext, f_nodes, backend : as for
        :func:`forward_dynamics` (constant loads: ``f_ext`` in body coordinates, ``f_nodes``
        in the node frames, turning with them).

    Returns
    -------
    :class:`ForwardDynamicsDerivatives` ``(d_q, d_u, d_tau)``.
    """
    return _bound(model, DEFAULT_FIDELITY if fidelity is None else fidelity,
                  backend).forward_dynamics_derivatives(q, u, tau, f_ext=f_ext, f_nodes=f_nodes)


def inverse_dynamics_derivatives(model: Model, q: np.ndarray, u: np.ndarray,
                                 udot: np.ndarray, *, fidelity: str | None = None,
                                 f_ext: np.ndarray | None = None, f_nodes=None,
                                 backend: str = "engine") -> InverseDynamicsDerivatives:
    """The derivatives of the inverse dynamics ``τ = ID(q, u, u̇)`` (Eq 44, the motor forces
    of :func:`inverse_dynamics`): ``(d_q, d_u, M)`` = ``(∂τ/∂δ, ∂τ/∂u, ∂τ/∂u̇)``, each
    (nu, nu), ``δ`` the tangent coordinates of :mod:`flexdyn.tangent`.

    On the engine, one evaluation of Eq 44 in complex arithmetic per column at
    ``q + i h ∂q/∂δ_j`` (or ``u + i h e_j``, the position terms computed once) gives the
    column exactly to round-off (forward-mode differentiation of the compiled stages,
    :mod:`flexdyn.engine.derivatives`; compiled on first use, about a minute); the reference
    tier takes the same complex steps through its own recursions.

    Parameters
    ----------
    model : Model (a tree: ``ValueError`` for loop closures).
    q : (nq,), u : (nu,), udot : (nu,) — or a batch with a leading axis B, as for
        :func:`forward_dynamics_derivatives`.
    fidelity, f_ext, f_nodes, backend : as for :func:`inverse_dynamics`.

    Returns
    -------
    :class:`InverseDynamicsDerivatives` ``(d_q, d_u, M)``.
    """
    return _bound(model, DEFAULT_FIDELITY if fidelity is None else fidelity,
                  backend).inverse_dynamics_derivatives(q, u, udot, f_ext=f_ext,
                                                        f_nodes=f_nodes)


def hybrid_dynamics(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray | None,
                    udot_prescribed: np.ndarray | None, prescribed: np.ndarray, *,
                    fidelity: str = DEFAULT_FIDELITY, f_ext: np.ndarray | None = None,
                    f_nodes=None, backend: str = "engine") -> tuple[np.ndarray, np.ndarray]:
    """Accelerations and loads with some accelerations prescribed and the rest free, O(N)
    (:mod:`flexdyn.hybrid`: the articulated-body filter and smoother of Eq 58 with the
    prescribed rows kept out of the articulated inertias).

    Raises :class:`~flexdyn.linalg.SingularInertiaError` naming the body whose free degrees
    of freedom carry no inertia, and ``FloatingPointError`` when the result overflows.

    Parameters
    ----------
    q : (nq,), u : (nu,) — the state (or batches, see :func:`batched`).
    tau : (nu,) or None (zero) — generalized forces; read where ``prescribed`` is False.
    udot_prescribed : (nu,) or None (zero) — accelerations; read where ``prescribed``.
    prescribed : (nu,) bool — which entries of ``u̇`` are given: whole joints, single dofs of
        a joint, all joints with the modes free, …; the same for every state of a batch.
    fidelity, f_ext, f_nodes : as for :func:`forward_dynamics`.
    backend : ``"engine"`` (compiled, default: :meth:`flexdyn.engine.Engine.hybrid_dynamics`)
        or ``"reference"`` (numpy, :func:`flexdyn.hybrid.hybrid_dynamics`); complex inputs
        run the reference.

    Returns
    -------
    u̇ : (nu,) — the prescribed entries as given, the free ones computed.
    τ : (nu,) — the given forces at the free entries; at the prescribed ones the loads that
        realise the motion (feedforward joint torques, modal loads).

    For a model with loop closures the free accelerations also keep the closures and the
    prescribed loads include the closure forces (:func:`closed_hybrid`; the prescribed
    motion must leave the closures assemblable, else :class:`~flexdyn.ClosureError`).
    """
    return _bound(model, fidelity, backend).hybrid_dynamics(
        q, u, tau, udot_prescribed, prescribed, f_ext=f_ext, f_nodes=f_nodes)


def joint_wrenches(model: Model, q: np.ndarray, u: np.ndarray, udot: np.ndarray,
                   fidelity: str = DEFAULT_FIDELITY, f_ext: np.ndarray | None = None,
                   f_nodes=None, backend: str = "engine") -> np.ndarray:
    """The spatial force ``[moment; force]`` (n_bodies, 6) each joint transmits from the
    parent to the child, in the child's joint frame ``J_c`` about its origin (N m, N), for the
    motion ``(q, u, u̇)`` (Eq 36) — fixed joints included, so the root load of an appendage is
    available.  With ``u̇`` from :func:`forward_dynamics` or :func:`hybrid_dynamics`.

    ``q`` (nq,), ``u``, ``udot`` (nu,) or batches (B, ·) (result (B, n_bodies, 6));
    ``fidelity``, ``f_ext``, ``f_nodes`` as for :func:`inverse_dynamics`; ``backend``
    ``"engine"`` (compiled, default: the modal forces of the engine's Newton–Euler,
    :meth:`flexdyn.engine.Engine.joint_wrenches`) or ``"reference"``
    (:func:`flexdyn.newton_euler.joint_wrenches`)."""
    return _bound(model, fidelity, backend).joint_wrenches(q, u, udot, f_ext=f_ext,
                                                           f_nodes=f_nodes)


def bias_forces(model: Model, q: np.ndarray, u: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                f_ext: np.ndarray | None = None, f_nodes=None,
                backend: str = "engine") -> np.ndarray:
    """Bias vector ``C(q, u)`` (nu,) of Eq 43 with gravity, stiffness, damping, external
    forces and less the joint forces ``τ_J`` (:mod:`flexdyn.joint_forces`): everything but
    ``M u̇``, so that ``M u̇ + C = τ`` (N, N m, or modal units).

    ``q`` (nq,), ``u`` (nu,), ``fidelity``, ``f_ext`` (n_bodies, 6), ``f_nodes`` and
    ``backend`` as for :func:`inverse_dynamics` (which this is with ``u̇ = 0``)."""
    return _bound(model, fidelity, backend).bias_forces(q, u, f_ext=f_ext, f_nodes=f_nodes)


def mass_matrix(model: Model, q: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                backend: str = "engine") -> np.ndarray:
    """System mass matrix ``M(q)`` (nu × nu), Eqs 43, 49–50 (kg, kg m, kg m², modal units).

    Parameters
    ----------
    q : (nq,) coordinates in the layout of ``model-format.md``.
    fidelity : the body model, one of :data:`~flexdyn.terms.FIDELITIES`: ``"exact"``
        (default), ``"consistent"``, ``"full"`` or ``"ruthless"``.
    backend : ``"engine"`` (compiled, default) or ``"reference"`` (numpy).
    """
    return _bound(model, fidelity, backend).mass_matrix(q)


def mass_matrix_inverse(model: Model, q: np.ndarray, fidelity: str = DEFAULT_FIDELITY,
                        backend: str = "engine") -> np.ndarray:
    """``M⁻¹(q)`` (nu × nu) from the innovations factors (Lemma 4), without inverting ``M``:
    the O(N) sweeps applied to the identity block (on the engine: the factors once, then one
    filter and one smoother sweep over the nu columns together,
    :meth:`flexdyn.engine.Engine.apply_mass_matrix_inverse`).

    ``q`` (nq,) or a batch (B, nq); ``fidelity`` and ``backend`` as for :func:`mass_matrix`.
    Raises :class:`~flexdyn.linalg.SingularInertiaError` for a degree of freedom without
    inertia."""
    return _bound(model, fidelity, backend).mass_matrix_inverse(q)
