"""Control-design interfaces: linearization, equilibria and steady spin, and the stable
step of explicit integrators.

Everything works in the tangent coordinates of :mod:`flexdyn.modal` (``δ`` (nu,) about a
configuration ``q₀``: the coordinates themselves, or for quaternion joints the rotation
vector and displacement in the joint's child frame), with exact derivatives: the compiled
derivatives of the dynamics, or complex steps through the reference tier (one reference
evaluation per column), which :func:`linearize` takes by default until the compiled ones pay
for their compile (``_default_derivative``).
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import scipy

from .chain import Model, state_layout
from .dynamics import (
    cached_engine,
    closure_residuals,
    forward_dynamics,
    hybrid_dynamics,
    inverse_dynamics,
    inverse_dynamics_derivatives,
    mass_matrix,
    torque_limit_slopes,
)
from .linalg import COMPLEX_STEP
from .modal import (
    DERIVATIVES,
    TangentCoordinates,
    complex_step_jacobian,
    held_speeds,
    refuse_closures,
    tangent_force_jacobian,
)
from .outputs import Outputs
from .simulation import PrescribedMotion
from .stability import IMPLICIT, step_limit
from .terms import DEFAULT_FIDELITY, check_fidelity

__all__ = ["COMPILED", "COMPILE_AFTER", "Equilibrium", "Linearization", "equilibrium", "linearize",
           "max_stable_step"]


# ---------------------------------------------------------------------------------------------
# linearization
# ---------------------------------------------------------------------------------------------
class Linearization(NamedTuple):
    """``ẋ = A x + B τ``, ``y = C x + D τ`` about an operating point (:func:`linearize`).

    Attributes
    ----------
    A : (n, n); B : (n, nu); C : (ny, n); D : (ny, nu).
    state_names : the ``n`` entries of ``x`` — ``δ`` then ``u`` (module docstring), less the
        prescribed joints' entries; for a model with loop closures ``x`` are coordinates
        along ``basis`` and the names those of the full tangent state.
    input_names : the ``nu`` entries of ``τ`` (the state layout's speed names).
    output_names : the ``ny`` outputs.
    q : (nq,), u : (nu,) — the operating point (prescribed entries imposed).
    basis : (2 nu', n) or None — for a model with loop closures, the orthonormal basis ``N``
        of the closures' tangent space in the full tangent state ``x_full = N x``.
    """

    A: np.ndarray
    B: np.ndarray
    C: np.ndarray
    D: np.ndarray
    state_names: list[str]
    input_names: list[str]
    output_names: list[str]
    q: np.ndarray
    u: np.ndarray
    basis: np.ndarray | None


def _closure_basis(model: Model, tangent: TangentCoordinates, x0: np.ndarray,
                   fidelity: str) -> np.ndarray:
    """The closures linearized in the tangent state ``x = [δ; u]`` (2 n_c × 2 nu): the
    velocity rows ``∂(J u)/∂x`` by complex step, the position rows ``∂g/∂δ = J T⁻¹`` with
    ``T = ∂δ̇/∂u`` (``ġ = J u`` and ``δ̇ = T u`` at ``δ = 0``)."""
    nu = model.nu

    def velocity(x: np.ndarray) -> np.ndarray:
        return closure_residuals(model, tangent.configuration(x[:nu]), x[nu:], fidelity)[1]

    G_v = complex_step_jacobian(velocity, x0)
    T = tangent.rate_map()
    G_p = np.hstack([np.linalg.solve(T.T, G_v[:, nu:].T).T, np.zeros_like(G_v[:, nu:])])
    return np.vstack([G_p, G_v])


#: :func:`linearize`'s compiled derivatives of the dynamics
#: (:func:`flexdyn.inverse_dynamics_derivatives`)
COMPILED = "compiled"
#: seconds of the reference tier's complex steps that :func:`linearize`'s default spends in
#: a process before it compiles the engine's derivatives (``_default_derivative``)
COMPILE_AFTER = 2.0


class _ReferenceTime:
    """Seconds this process has spent in :func:`linearize`'s default on the reference tier."""

    seconds = 0.0


def _default_derivative(model: Model, fidelity: str, f: Callable[[np.ndarray], np.ndarray],
                        x0: np.ndarray, columns: int) -> str:
    """:func:`linearize`'s derivative where none is given, for a tree: compiled where the
    engine's derivatives of ``model`` are compiled or cached
    (:meth:`flexdyn.engine.Engine.derivatives_ready`), else by complex steps through the
    reference tier for as long as that stays cheap.

    The compile takes tens of seconds once per installation (``docs/install.md``); the
    reference tier needs none and takes milliseconds to a second per linearization.  So the
    reference tier answers until this process has spent :data:`COMPILE_AFTER` seconds in it
    or would with this call (its ``columns`` complex steps of ``f``, priced by timing one at
    ``x0``), and the compiled derivatives from then on: a process never spends more than
    :data:`COMPILE_AFTER` seconds beyond what compiling at once would cost, and one that
    linearizes a few times never compiles.  Both are exact to round-off."""
    if _ReferenceTime.seconds >= COMPILE_AFTER or cached_engine(model,
                                                                 fidelity).derivatives_ready():
        return COMPILED
    x = x0.astype(complex)
    x[0] += 1j * COMPLEX_STEP
    start = time.perf_counter()
    f(x)
    step = time.perf_counter() - start
    _ReferenceTime.seconds += step
    return COMPILED if _ReferenceTime.seconds + columns * step > COMPILE_AFTER else "complex-step"


def _compiled_jacobians(model: Model, tangent: TangentCoordinates, x0: np.ndarray,
                        tau: np.ndarray, udot: np.ndarray, free: np.ndarray, fidelity: str,
                        f_ext: Any, f_nodes) -> tuple[np.ndarray, np.ndarray]:
    """``A`` (2 nu × 2 nu) and ``B`` (2 nu × nu) of ``ẋ = [δ̇; u̇]`` at ``x0 = [0; u]`` from the
    compiled derivatives of inverse dynamics at ``(q, u, u̇)``: with ``M_ff`` the mass matrix
    of the ``free`` speeds (the others prescribed: their ``u̇`` a function of time),
    ``M_ff du̇_f = sat′(τ_f) dτ_f − ∂τ_f/∂δ dδ − ∂τ_f/∂u du``; the rows of ``δ̇`` by complex
    steps of the charts' rates (:meth:`TangentCoordinates.rates`, cheap)."""
    nu = model.nu
    q, u = tangent.q0, x0[nu:]
    D = inverse_dynamics_derivatives(model, q, u, udot, fidelity=fidelity, f_ext=f_ext,
                                     f_nodes=f_nodes)
    rates = complex_step_jacobian(
        lambda x: tangent.rates(tangent.configuration(x[:nu]), x[:nu], x[nu:]), x0)
    slope = torque_limit_slopes(model, tau)
    f = np.flatnonzero(free)
    M_ff = D.M[np.ix_(f, f)]
    A_u, B_u = np.zeros((nu, 2 * nu)), np.zeros((nu, nu))
    if f.size:  # (every speed prescribed: nothing moves freely)
        A_u[f] = scipy.linalg.solve(M_ff, -np.concatenate([D.d_q[f], D.d_u[f]], axis=1),
                                    assume_a="pos")
        B_u[np.ix_(f, f)] = scipy.linalg.solve(M_ff, np.diag(slope[f]), assume_a="pos")
    return np.vstack([rates, A_u]), np.vstack([np.zeros((nu, nu)), B_u])


def linearize(model: Model, q: Any, u: Any = None, tau: Any = None, *,
              fidelity: str = DEFAULT_FIDELITY, prescribed: Mapping[str, Callable] | None = None,
              t: float = 0.0, f_ext: Any = None, f_nodes: Mapping | None = None,
              outputs: Sequence[str] = (),
              method: str = "articulated", derivative: str | None = None) -> Linearization:
    """Linearize ``ẋ = f(x, τ)`` about ``(q, u, τ)``: exact derivatives, compiled (default),
    by complex step through the reference tier, or central differences on the engine.

    The state ``x = [δ; u]`` is the tangent state of the module docstring: ``δ`` (nu,)
    about ``q`` (``δ = 0`` at the operating point) — the joint coordinates themselves, or
    for quaternion joints the rotation vector (and displacement) in the joint's child frame
    — then the speeds ``u`` of the state layout.  ``ẋ = [δ̇; u̇]`` with ``u̇`` the forward
    dynamics of :func:`flexdyn.forward_dynamics` (fidelity, method, ``f_ext`` as there).

    Parameters
    ----------
    model : Model
    q : (nq,) operating configuration; u : (nu,) or None (zero) speeds; tau : (nu,) or None
        (zero) generalized forces at the operating point.
    fidelity, method, f_ext, f_nodes : as for :func:`flexdyn.forward_dynamics` (constant
        loads: ``f_ext`` in body coordinates, ``f_nodes`` in the node frames).
    prescribed : ``{body: f(t) -> (q_j, u_j, u̇_j)}``, :func:`flexdyn.simulate`'s form: those
        joints move as prescribed (their entries imposed on ``q``, ``u`` at time ``t``) and
        their entries leave the state — a body spinning at a prescribed rate linearizes
        about its relative equilibrium.
    t : time at which ``prescribed`` is evaluated (s).
    derivative : None (default), ``"compiled"``, ``"complex-step"`` or ``"central"``.
        ``"compiled"``: the exact derivatives of :func:`flexdyn.inverse_dynamics_derivatives`,
        forward-mode differentiation of the compiled engine, milliseconds for tens of
        coordinates, compiled on first use (tens of seconds, once per installation).
        ``"complex-step"``: exact to round-off through the numpy reference tier, one
        evaluation per column, milliseconds per column.  ``"central"``: central differences
        of the compiled engine's accelerations
        (:func:`flexdyn.modal.central_difference_jacobian`), about 1e-9 relative.  None: for
        a tree ``"compiled"`` where its code is compiled or cached, else the reference
        tier's complex steps until this process has spent :data:`COMPILE_AFTER` seconds in
        them, then ``"compiled"`` (``_default_derivative``); for a model with loop closures
        ``"complex-step"``.  The two exact schemes agree to round-off.  The output rows and
        the closures' tangent space are complex steps in every case.
    outputs : names of outputs ``y``: any of :attr:`Linearization.state_names` (one row),
        or an output of :class:`flexdyn.outputs.Outputs` (a state-layout name, a body's
        ``.position`` or ``.rotation``, ``"<body>.tip"``, ``"<body>.node[j]"``, either with
        ``".deflection"``: node positions and elastic displacements, m).

    Returns
    -------
    :class:`Linearization` — a tuple ``(A, B, C, D, state_names, input_names,
    output_names, q, u, basis)``: ``A`` (n, n), ``B`` (n, nu) over all ``nu`` entries of
    ``τ`` (a prescribed joint's entries are columns of zeros), ``C`` (ny, n), ``D`` (ny,
    nu) = 0.  For a model with loop closures the state is projected onto the closures'
    tangent space (position and velocity closures linearized): ``x_full = N x`` with ``N``
    = ``basis``; ``A = Nᵀ A_full N``, ``B = Nᵀ B_full``, ``C = C_full N`` (the closed
    chain's flow keeps that space, so nothing is lost).
    """
    check_fidelity(fidelity)
    if derivative is not None and derivative != COMPILED and derivative not in DERIVATIVES:
        raise ValueError(f"unknown derivative {derivative!r}; expected one of "
                         f"{(None, COMPILED, *DERIVATIVES)}")
    u = np.zeros(model.nu) if u is None else u
    tau = np.zeros(model.nu) if tau is None else tau
    q, u, tau = (np.asarray(a, dtype=float) for a in
                 model.check_state(q, u, tau=tau))
    drive, known, mask = None, None, np.zeros(model.nu, dtype=bool)
    if prescribed is not None:
        drive = PrescribedMotion(model, prescribed)
        q, u, known = drive.impose(float(t), q, u, at_start=True)
        mask = drive.mask
    tangent = TangentCoordinates(model, q)
    nu = model.nu

    def accelerations(qc: np.ndarray, uc: np.ndarray, tc: np.ndarray) -> np.ndarray:
        if drive is None:
            return forward_dynamics(model, qc, uc, tc, method=method, fidelity=fidelity,
                                    f_ext=f_ext, f_nodes=f_nodes, backend=backend)
        return hybrid_dynamics(model, qc, uc, tc, known, mask, fidelity=fidelity,
                               f_ext=f_ext, f_nodes=f_nodes, backend=backend)[0]

    def f(x: np.ndarray, tc: np.ndarray = tau) -> np.ndarray:
        d, uc = x[:nu], x[nu:]
        qc = tangent.configuration(d)
        return np.concatenate([tangent.rates(qc, d, uc), accelerations(qc, uc, tc)])

    keep = np.flatnonzero(~np.concatenate([mask, mask]))
    x0 = np.concatenate([np.zeros(nu), u])
    tiered = derivative is None and not model.constraints and keep.size > 0
    if tiered:
        backend = "reference"  # the tier that _default_derivative prices
        derivative = _default_derivative(model, fidelity, f, x0, keep.size + nu)
    elif derivative is None:  # loop closures, or every speed prescribed
        derivative = "complex-step"
    backend = "reference" if derivative == "complex-step" else "engine"
    start = time.perf_counter()
    if derivative == COMPILED:
        A, B = _compiled_jacobians(model, tangent, x0, tau, accelerations(q, u, tau), ~mask,
                                   fidelity, f_ext, f_nodes)
        A, B = A[keep][:, keep], B[keep]
    else:
        jacobian = DERIVATIVES[derivative]
        A = jacobian(f, x0, keep)[keep]
        B = jacobian(lambda tc: f(x0, tc), tau, linear=True)[keep]  # u̇ is affine in τ
        if tiered:
            _ReferenceTime.seconds += time.perf_counter() - start
    speed_names = [e.name for e in state_layout(model)["u"]]
    all_names = tangent.names() + speed_names
    names = [all_names[k] for k in keep]
    y_names, y_fns = [], []
    for spec in outputs:
        if isinstance(spec, str) and spec in names:
            k = int(keep[names.index(spec)])
            y_names.append(spec)
            y_fns.append(lambda qc, x, k=k: x[k:k + 1])
        else:
            out = Outputs(model, [spec], fidelity)
            y_names += out.names
            y_fns.append(lambda qc, x, out=out: out(qc, x[nu:]))

    def y(x_kept: np.ndarray) -> np.ndarray:
        x = x0.astype(x_kept.dtype)
        x[keep] = x_kept
        qc = tangent.configuration(x[:nu])
        return np.concatenate([fn(qc, x) for fn in y_fns])

    C = (complex_step_jacobian(y, x0[keep]) if y_fns else np.zeros((0, keep.size)))
    basis = None
    if model.constraints:
        basis = scipy.linalg.null_space(_closure_basis(model, tangent, x0, fidelity)[:, keep])
        A, B, C = basis.T @ A @ basis, basis.T @ B, C @ basis
    return Linearization(A, B, C, np.zeros((C.shape[0], nu)), names, speed_names, y_names,
                         q, u, basis)


# ---------------------------------------------------------------------------------------------
# equilibrium and steady spin
# ---------------------------------------------------------------------------------------------
class Equilibrium(NamedTuple):
    """A static equilibrium or a steady spin (:func:`equilibrium`).

    Attributes
    ----------
    q : (nq,) coordinates; u : (nu,) speeds (zero but the spin rates).
    tau : (nu,) generalized forces that hold it: the given ones at free speeds, the reactions
        (torques, forces) at held ones.
    residual : the largest force imbalance reached at the free speeds (N, N m, modal
        units): at most ``tol`` times the largest force at ``q0``.
    iterations : evaluations of the forces (one per Jacobian column included).
    eigenvalues : (2 k,) complex — the eigenvalues of the linearization about it
        (:func:`linearize`, the held and spinning joints kept at their values and rates),
        over the ``k`` free speeds; 1/s.
    stable : no eigenvalue has a positive real part beyond round-off (``Re λ ≤ 1e-6 ·
        max(1, |λ|max)``): stable or marginally stable (undamped modes, rigid-body modes).
        False for an unstable equilibrium, such as an inverted pendulum: a small
        disturbance grows.
    load_steps : the load steps of the continuation that reached it (1: the whole load at
        once).
    """

    q: np.ndarray
    u: np.ndarray
    tau: np.ndarray
    residual: float
    iterations: int
    eigenvalues: np.ndarray
    stable: bool
    load_steps: int


#: :func:`equilibrium`'s continuation: a load step is accepted when every Newton correction
#: is at most this fraction of the one before (the path is followed, not jumped off)
CONTRACTION = 0.5
#: Newton corrections per load step at most
CORRECTIONS = 10
#: the smallest load step (fraction of the load) before :func:`equilibrium` gives up
MIN_LOAD_STEP = 1e-6
#: a load step is refused when the determinant of the tangent stiffness changes sign within
#: it (Newton jumped to another branch) unless it is below this (a bifurcation on the path)
MIN_CROSSING = 1e-3
#: directions of the scaled tangent stiffness with a singular value below its largest over
#: this are singular (no stiffness): a horizontal pendulum, a turn about the vertical
SINGULAR = 1e12
#: the length of a step along such directions, relative to the largest scaled unit
#: ``√D_ii`` (0.1 rad for a single pendulum)
SINGULAR_REACH = 0.1
#: the tolerance of the intermediate load steps, relative to the largest force at ``q0``
#: (the last one takes ``tol``)
PATH_TOL = 1e-6


def equilibrium(model: Model, q0: Any = None, *, tau: Any = None, f_ext: Any = None,
                f_nodes: Mapping | None = None, held: Collection[str] = (),
                spin: Mapping[str, Any] | None = None, fidelity: str = DEFAULT_FIDELITY,
                tol: float = 1e-9) -> Equilibrium:
    """Static equilibrium under gravity and constant loads, or the steady state of a body
    spinning at a constant rate: the coordinates where the forces that hold ``(q, u)``
    with ``u̇ = 0`` (:func:`flexdyn.inverse_dynamics`) equal ``τ`` at every free speed.

    Solved by continuation in the load from ``q0``: with ``r(q)`` the force imbalance at the
    free speeds, the path ``r(q) = (1 − λ) r(q₀)`` is followed from ``λ = 0`` (``q₀``) to
    ``λ = 1`` in load steps, each by Newton's method in the tangent coordinates (module
    docstring of :mod:`flexdyn.modal`) about the current iterate with the exact tangent
    stiffness (:func:`flexdyn.modal.tangent_force_jacobian`: complex step).  The Newton
    systems are scaled by the mass matrix at ``q0`` (``D^{-½} K D^{-½}``, ``D = diag M``),
    so stiff stretch modes and soft bending modes weigh alike.  A load step is accepted when
    each correction is at most half the one before (``CONTRACTION``) and the determinant of
    the tangent stiffness (over its nonzero eigenvalues) keeps its sign (a change means the
    iterate left the branch, unless the step is below ``MIN_CROSSING``: a bifurcation on
    the path); else it is quartered.
    The whole load is tried first, so well-posed problems take a few Newton steps; the
    continuation keeps the solution on the branch connected to ``q0`` (an arm started near
    its hanging configuration does not jump to the inverted one) and carries strongly
    nonlinear ones (slender booms with geometric stiffening) to the end.  Along directions
    without stiffness at an iterate (a link horizontal in gravity) the step goes the way
    the loads push, as the motion from rest would, and is kept short (``SINGULAR_REACH``);
    where the loads do not push (a turn about the vertical of a body hanging from a
    spherical joint) it stays put.

    Parameters
    ----------
    q0 : (nq,) or None (neutral) — the starting guess; held joints stay at their values.
    tau : (nu,) or None — constant generalized forces (read at the free speeds).
    f_ext : (n_bodies, 6) or None — constant wrenches at the body frames, body coordinates,
        as for :func:`flexdyn.forward_dynamics`.
    f_nodes : ``{(body, node): (6,) wrench}`` or None — wrenches ``[N m; N]`` at nodes of
        flexible bodies in the nodes' (deformed) frames, as for
        :func:`flexdyn.forward_dynamics`: a tip load on a cantilever.
    held : body names whose joints are held at ``q0``.
    spin : ``{body: rate}`` — those joints turn at the constant speeds ``rate`` (a number for
        a one-speed joint, else (nu_j,)) and are held in angle: the steady spin of a rotating
        body (its stretched state), for a joint whose axis keeps the loads steady.
    fidelity : the body model, one of :data:`~flexdyn.terms.FIDELITIES`.
    tol : convergence on the force imbalance, relative to the largest force at ``q0`` (and
        to 1).

    Returns
    -------
    :class:`Equilibrium`, with the imbalance reached, the eigenvalues of the linearization
    about it and whether it is stable (an equilibrium found from ``q0`` may be an unstable
    one: an arm started near upright; a ``RuntimeWarning`` says so).  ``ValueError`` when no
    equilibrium is found (a free-floating body under gravity has none: hold it), naming the
    load fraction and imbalance reached, and for a model with loop closures (not handled
    yet).
    """
    check_fidelity(fidelity)
    refuse_closures(model, "equilibrium", "the closure forces would be left out: simulate "
                    "with damping to rest")
    q0 = model.neutral_configuration() if q0 is None else q0
    tau = np.zeros(model.nu) if tau is None else tau
    q0, _, tau = (np.asarray(a, dtype=float) for a in
                  model.check_state(q0, np.zeros(model.nu), tau=tau))
    mask = held_speeds(model, held, "held")
    u = np.zeros(model.nu)
    for name, rate in (spin or {}).items():
        mask |= held_speeds(model, [name], "spin")
        i = model.body_index(name)
        us, nuj = int(model.u_start[i]), int(model.nu_joint[i])
        rate = np.atleast_1d(np.asarray(rate, dtype=float))
        if rate.shape != (nuj,) or not np.all(np.isfinite(rate)):
            raise ValueError(f"spin[{name!r}]: expected {nuj} finite joint speed(s), got "
                             f"{rate.tolist()}")
        u[us:us + nuj] = rate
    free = np.flatnonzero(~mask)
    zero = np.zeros(model.nu)
    count = [0]

    def forces(q: np.ndarray) -> np.ndarray:
        count[0] += 1
        return inverse_dynamics(model, q, u, zero, fidelity, f_ext, f_nodes=f_nodes,
                                backend="reference") - tau

    start = forces(q0)
    scale = max(float(np.max(np.abs(start), initial=0.0)), 1.0)
    r0 = start[free]
    weight = np.sqrt(np.abs(np.diag(mass_matrix(model, q0, fidelity, backend="reference"))))
    weight = np.maximum(weight, 1e-12 * max(float(np.max(weight, initial=0.0)), 1e-300))[free]
    reach = SINGULAR_REACH * max(float(np.max(weight, initial=0.0)), 1e-300)

    def correct(q: np.ndarray, lam: float, increment: float
                ) -> tuple[np.ndarray, float, bool, int]:
        """Newton from ``q`` (converged at ``λ − increment``) on ``r(q) = (1 − λ) r₀``:
        ``(q, imbalance, converged, corrections)``."""
        goal = (tol if lam == 1.0 else max(tol, PATH_TOL)) * scale
        previous, side = math.inf, 0.0
        for k in range(CORRECTIONS + 1):
            residual = forces(q)[free] - (1.0 - lam) * r0
            imbalance = float(np.max(np.abs(residual), initial=0.0))
            if not np.isfinite(imbalance):
                return q, imbalance, False, k
            if imbalance <= goal:
                return q, imbalance, True, k
            if k == CORRECTIONS:
                break
            K_d, tangent = tangent_force_jacobian(model, q, u, fidelity=fidelity, f_ext=f_ext,
                                                  f_nodes=f_nodes, columns=free)
            count[0] += free.size
            S = K_d[free] / weight[:, None] / weight[None, :]
            if not np.all(np.isfinite(S)):
                return q, imbalance, False, k
            sign = _branch_sign(S)
            if side * sign < 0.0 and increment > MIN_CROSSING:
                return q, imbalance, False, k  # the stiffness changed sign: jumped off
            side = side or sign
            y = _scaled_newton_step(S, residual / weight, reach)
            size = float(np.linalg.norm(y))
            if not size <= CONTRACTION * previous:
                return q, imbalance, False, k
            previous = size
            d = np.zeros(model.nu)
            d[free] = y / weight
            q = model.normalize_configuration(tangent.configuration(d))
        return q, imbalance, False, CORRECTIONS

    q, lam, increment, steps = q0, 0.0, 1.0, 0
    imbalance = float(np.max(np.abs(r0), initial=0.0))
    if imbalance > tol * scale:
        while lam < 1.0:
            target = min(1.0, lam + increment)
            trial, trial_imbalance, converged, k = correct(q, target, target - lam)
            if converged:
                q, lam, imbalance, steps = trial, target, trial_imbalance, steps + 1
                increment = 2.0 * increment if k <= 3 else increment
            else:
                increment /= 4.0
                if increment < MIN_LOAD_STEP:
                    raise ValueError(
                        f"no equilibrium found from q0: the continuation stopped at "
                        f"{lam:.3g} of the load (force imbalance {trial_imbalance:.3g} at "
                        f"{target:.3g} of it, against {tol * scale:.3g}, after {count[0]} "
                        "evaluations); a body on a free or unsupported joint under steady "
                        "loads has none — hold it with held=[…]")
    held_forces = forces(q) + tau
    out_tau = np.where(mask, held_forces, tau)
    eigenvalues = _eigenvalues_held(model, q, u, out_tau, mask, fidelity, f_ext, f_nodes)
    bound = STABILITY_RTOL * max(1.0, float(np.max(np.abs(eigenvalues), initial=0.0)))
    stable = bool(np.all(eigenvalues.real <= bound))
    if not stable:
        warnings.warn(f"the equilibrium found is unstable: the linearization about it has "
                      f"eigenvalues with Re λ up to {float(np.max(eigenvalues.real)):.4g} 1/s "
                      "(Equilibrium.eigenvalues); start q0 nearer the one you want",
                      RuntimeWarning, stacklevel=2)
    return Equilibrium(q, u, out_tau, imbalance, count[0], eigenvalues, stable, max(steps, 1))


def _scaled_newton_step(S: np.ndarray, r: np.ndarray, reach: float) -> np.ndarray:
    """``y`` with ``S y = −r`` (``S`` the scaled tangent stiffness, ``r`` the scaled
    imbalance), by singular values: in the singular directions (below ``1/SINGULAR`` of the
    largest), which carry no stiffness (a link horizontal in gravity, a spherical pendulum's
    turn about the vertical), the step is ``−r``'s part there over ``μ = ‖r‖ / reach``: at
    most ``reach`` long, the way the loads push, and nothing where they do not push."""
    if S.size == 0:
        return np.zeros(0)
    U, sigma, Vt = np.linalg.svd(S)
    regular = sigma > sigma[0] / SINGULAR
    ur = U.T @ r
    y = -Vt[regular].T @ (ur[regular] / sigma[regular])
    if not regular.all():
        r_null = U[:, ~regular] @ ur[~regular]
        y -= r_null * (reach / max(float(np.linalg.norm(r)), 1e-300))
    return y


def _branch_sign(S: np.ndarray) -> float:
    """The sign of the product of the eigenvalues of ``S`` that are not zero (below
    ``1/SINGULAR`` of the largest modulus); 0 when none is."""
    lam = np.linalg.eigvals(S)
    if lam.size == 0 or not np.all(np.isfinite(lam)):
        return 0.0
    keep = np.abs(lam) > np.max(np.abs(lam)) / SINGULAR
    return float(np.sign(np.prod(lam[keep]).real)) if keep.any() else 0.0


#: :func:`equilibrium` calls an eigenvalue unstable when its real part exceeds this fraction
#: of the largest modulus (and of 1/s): rigid-body modes are double zero eigenvalues, which
#: round-off splits into ±O(√ε)
STABILITY_RTOL = 1e-6


def _eigenvalues_held(model: Model, q: np.ndarray, u: np.ndarray, tau: np.ndarray,
                      held: np.ndarray, fidelity: str, f_ext: Any, f_nodes: Any) -> np.ndarray:
    """The eigenvalues of :func:`linearize`'s ``A`` about ``(q, u, τ)`` with the joints of
    the ``held`` speeds prescribed at their coordinates and (constant) speeds."""
    prescribed = {}
    for i, name in enumerate(model.names):
        if np.any(model.u_joint(held, i)):
            qj, uj = model.q_joint(q, i).copy(), model.u_joint(u, i).copy()
            # linearize reads the prescribed motion at t = 0 only
            prescribed[name] = lambda t, qj=qj, uj=uj: (qj, uj, np.zeros_like(uj))
    lin = linearize(model, q, u, tau, fidelity=fidelity, f_ext=f_ext, f_nodes=f_nodes,
                    prescribed=prescribed or None)
    return np.linalg.eigvals(lin.A) if lin.A.size else np.zeros(0, dtype=complex)


# ---------------------------------------------------------------------------------------------
# stiffness guidance
# ---------------------------------------------------------------------------------------------
def max_stable_step(model: Model, integrator: str = "rk4", q: Any = None, u: Any = None, *,
                    fidelity: str = DEFAULT_FIDELITY) -> float:
    """The largest step (s) of an explicit integrator that keeps the linearization about
    ``(q, u)`` (default: neutral configuration, at rest) stable: the eigenvalues ``λ`` of
    ``A`` (:func:`linearize`, damping included) against the integrator's stability
    polynomial (:func:`flexdyn.stability.step_limit`).

    ``integrator``: ``"euler"``, ``"rk4"``, ``"RK23"``, ``"RK45"``, ``"DOP853"``
    (:data:`flexdyn.stability.STABILITY_TABLEAUX`); ``inf`` for ``"Radau"``, ``"BDF"``,
    ``"LSODA"``, ``"generalized-alpha"``.  The highest assembled frequency sets it: for
    ``"rk4"`` and an undamped mode of ``ω`` rad/s, ``h < 2√2 / ω``.  Away from
    equilibrium the growing (statically unstable) modes limit nothing.
    """
    if integrator in IMPLICIT:
        return math.inf
    step_limit(integrator, np.zeros(0))  # validates the name before any work
    q = model.neutral_configuration() if q is None else q
    lin = linearize(model, q, u, fidelity=fidelity)
    return step_limit(integrator, np.linalg.eigvals(lin.A))
