"""The natural modes of the assembled system, and the derivative schemes of the control
interfaces, in the tangent coordinates of :mod:`flexdyn.tangent` (re-exported here).

Complex-step derivatives through the reference tier are exact to round-off, with no step to
choose: one reference evaluation per column.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Collection, Sequence
from typing import Any, NamedTuple

import numpy as np
import scipy

from .chain import Model, state_layout
from .dynamics import inverse_dynamics, mass_matrix
from .tangent import (
    COORDINATE_CHART,
    TANGENT_CHARTS,
    TangentChart,
    TangentCoordinates,
    complex_step_jacobian,
)
from .terms import DEFAULT_FIDELITY, check_fidelity

__all__ = [
    "COORDINATE_CHART",
    "ModalAnalysis",
    "TANGENT_CHARTS",
    "TangentChart",
    "TangentCoordinates",
    "DERIVATIVES",
    "central_difference_jacobian",
    "complex_step_jacobian",
    "held_speeds",
    "highest_frequency",
    "modal_analysis",
    "refuse_closures",
    "tangent_force_jacobian",
    "tangent_stiffness",
]

#: the settings of :func:`modal_analysis`'s ``joints``: every joint moves, or every one held
FREE, LOCKED = "free", "locked"

#: relative step of the central differences (balances O(h²) truncation and O(ε/h) round-off)
CENTRAL_STEP = 1e-6


# ---------------------------------------------------------------------------------------------
# derivative schemes
# ---------------------------------------------------------------------------------------------
def central_difference_jacobian(f: Callable[[np.ndarray], np.ndarray], x0: np.ndarray,
                                columns: Sequence[int] | None = None,
                                linear: bool = False) -> np.ndarray:
    """``∂f/∂x`` at ``x0`` by central differences with the steps ``h · max(1, |x0_k|)``,
    ``h`` = :data:`CENTRAL_STEP` (truncation error O(h²), round-off O(ε/h): about 1e-9
    relative for smooth ``f``) or 1 for an affine ``f`` (``linear``: exact but for round-off),
    the columns ``columns`` (default all); ``f`` is called with real arguments only, so it may
    run on the compiled engine."""
    columns = range(x0.size) if columns is None else columns
    step = 1.0 if linear else CENTRAL_STEP
    out = []
    for k in columns:
        h = step * max(1.0, abs(float(x0[k])))
        x_plus, x_minus = x0.astype(float), x0.astype(float)
        x_plus[k] += h
        x_minus[k] -= h
        out.append((np.asarray(f(x_plus)) - np.asarray(f(x_minus))) / (2.0 * h))
    if not out:  # no columns (every coordinate held)
        return np.zeros((np.asarray(f(x0)).size, 0))
    return np.array(out).T.reshape(-1, len(out))


#: derivative schemes of the control interfaces: exact complex steps through the reference
#: tier, or central differences that run on the engine
DERIVATIVES: dict[str, Callable[..., np.ndarray]] = {
    "complex-step": complex_step_jacobian, "central": central_difference_jacobian}


# ---------------------------------------------------------------------------------------------
# the assembled system's modes
# ---------------------------------------------------------------------------------------------
class ModalAnalysis(NamedTuple):
    """Natural modes of the assembled system at rest (:func:`modal_analysis`).

    Attributes
    ----------
    frequencies : (k,) natural frequencies, Hz, in the order of ``omega_squared``: 0 for
        rigid-body modes, NaN for unstable ones (they do not oscillate: see
        :attr:`unstable` and :attr:`growth_rates`).
    omega_squared : (k,) the eigenvalues ``ω²`` of ``K φ = ω² M φ`` (rad²/s², ascending;
        negative: statically unstable).
    shapes : (nu, k) mode shapes in the layout of ``u`` (``M``-normalised: ``φᵀ M φ = 1``;
        zero at held speeds).
    rigid : (k,) bool — rigid-body (zero-frequency) modes: ``|ω²| ≤ rtol · max |ω²|``.
    free : (k,) indices of the speeds that move (the others held).
    M, K : (k, k) mass and tangent stiffness over the free speeds.
    speed_names : the names of the ``nu`` speeds.
    """

    frequencies: np.ndarray
    omega_squared: np.ndarray
    shapes: np.ndarray
    rigid: np.ndarray
    free: np.ndarray
    M: np.ndarray
    K: np.ndarray
    speed_names: list[str]

    @property
    def unstable(self) -> np.ndarray:
        """(k,) bool — modes with ``ω² < 0`` beyond the rigid-body tolerance: about an
        unstable equilibrium (an inverted pendulum, a buckled boom) they grow as
        ``exp(σ t)``, ``σ = √(−ω²)``."""
        return (self.omega_squared < 0.0) & ~self.rigid

    @property
    def growth_rates(self) -> np.ndarray:
        """(k,) ``σ = √(−ω²)`` (1/s) of the unstable modes, 0 for the others."""
        return np.sqrt(np.where(self.unstable, -self.omega_squared, 0.0))

    @property
    def n_rigid(self) -> int:
        """The number of rigid-body (zero-frequency) modes."""
        return int(np.count_nonzero(self.rigid))

    def __repr__(self) -> str:
        """A summary for the console: the counts and the lowest :data:`SHOWN` frequencies
        (the arrays are the attributes)."""
        k = self.frequencies.size
        shown = ", ".join(f"{f:.4g}" for f in self.frequencies[:SHOWN])
        return (f"ModalAnalysis({k} modes over {self.free.size} of {len(self.speed_names)} "
                f"speeds: {self.n_rigid} rigid, {int(np.count_nonzero(self.unstable))} "
                f"unstable; frequencies [{shown}{', …' if k > SHOWN else ''}] Hz)")


#: the frequencies that ``repr(ModalAnalysis)`` shows
SHOWN = 8


def refuse_closures(model: Model, what: str, advice: str) -> None:
    """``ValueError`` naming the closures when ``model`` has any: ``what`` does not handle
    them yet (it would answer for the open tree); ``advice`` says what to do instead."""
    if model.constraints:
        raise ValueError(f"{what}: the model has loop closures "
                         f"({', '.join(c.name for c in model.constraints)}), which it does not "
                         f"handle yet; {advice}")


def held_speeds(model: Model, bodies: Collection[str], what: str) -> np.ndarray:
    """(nu,) bool: the joint speeds of ``bodies`` (names, validated)."""
    if isinstance(bodies, str):
        bodies = [bodies]
    held = np.zeros(model.nu, dtype=bool)
    for name in bodies:
        if name not in model.names:
            raise ValueError(f"{what}: no body {name!r}; bodies are {list(model.names)}")
        i = model.body_index(name)
        us = int(model.u_start[i])
        held[us:us + int(model.nu_joint[i])] = True
    return held


def tangent_force_jacobian(model: Model, q: np.ndarray, u: np.ndarray, *,
                           fidelity: str = DEFAULT_FIDELITY, f_ext: Any = None, f_nodes=None,
                           columns: Sequence[int] | None = None
                           ) -> tuple[np.ndarray, TangentCoordinates]:
    """``K_δ = ∂τ/∂δ`` (nu × len(columns)): how the generalized forces that hold the state
    ``(q, u)`` with ``u̇ = 0`` (:func:`flexdyn.inverse_dynamics` on the reference tier:
    elastic, gravity, velocity terms, ``f_ext`` constant in body coordinates, ``f_nodes``
    in the nodes' frames) change with the tangent coordinates ``δ`` about ``q`` (module
    docstring), the columns ``columns`` (default all), by complex step; and those tangent
    coordinates (:class:`TangentCoordinates` about ``q``)."""
    tangent = TangentCoordinates(model, q)
    zero = np.zeros(model.nu)
    K_d = complex_step_jacobian(
        lambda d: inverse_dynamics(model, tangent.configuration(d), u, zero, fidelity, f_ext,
                                   f_nodes=f_nodes, backend="reference"), zero, columns)
    return K_d, tangent


def tangent_stiffness(model: Model, q: np.ndarray, u: np.ndarray | None = None, *,
                      fidelity: str = DEFAULT_FIDELITY, f_ext: Any = None,
                      f_nodes=None) -> np.ndarray:
    """``K = ∂τ/∂ξ`` (nu × nu): how the generalized forces that hold the state ``(q, u)``
    with ``u̇ = 0`` (:func:`flexdyn.inverse_dynamics`: elastic, gravity, velocity terms,
    ``f_ext`` constant in body coordinates, ``f_nodes`` as there) change with a displacement
    ``δ = T ξ`` along the speeds (``T = ∂δ̇/∂u``: tangent coordinates, module docstring).
    At an equilibrium of conservative forces it is the symmetric Hessian of the potential
    energy."""
    q, u = (np.asarray(a, dtype=float) for a in
            model.check_state(q, np.zeros(model.nu) if u is None else u))
    K_d, tangent = tangent_force_jacobian(model, q, u, fidelity=fidelity, f_ext=f_ext,
                                          f_nodes=f_nodes)
    return K_d @ tangent.rate_map()


def modal_analysis(model: Model, q: Any = None, *, joints: str | Collection[str] = "free",
                   fidelity: str = DEFAULT_FIDELITY, rtol: float = 1e-9) -> ModalAnalysis:
    """Natural frequencies and mode shapes of the assembled system about the configuration
    ``q`` at rest: ``K φ = ω² M φ`` with ``M = M(q)`` (:func:`flexdyn.mass_matrix`) and the
    tangent stiffness ``K`` (:func:`tangent_stiffness`: elastic and gravity stiffness),
    undamped.

    Parameters
    ----------
    q : (nq,) or None (the neutral configuration) — should be an equilibrium
        (:func:`~flexdyn.control.equilibrium`); elsewhere ``K`` is not symmetric, a
        ``RuntimeWarning`` says so and its symmetric part is used.
    joints : ``"free"`` (every joint moves), ``"locked"`` (every joint held: the modes of
        the flexible bodies on locked joints) or a collection of body names whose joints
        are held.
    rtol : eigenvalues with ``|ω²| ≤ rtol · max |ω²|`` are rigid-body modes.

    Returns
    -------
    :class:`ModalAnalysis`: unstable modes (``ω² < 0``, about an unstable equilibrium) have
    frequency NaN, are marked in :attr:`~ModalAnalysis.unstable` with their growth rates, and
    raise a ``RuntimeWarning``; rigid-body modes have frequency 0
    (:attr:`~ModalAnalysis.n_rigid`).  ``ValueError`` for a model with loop closures (not
    handled yet: :func:`flexdyn.linearize` projects onto them).
    """
    check_fidelity(fidelity)
    refuse_closures(model, "modal_analysis", "the eigenvalues of flexdyn.linearize(model, q).A "
                    "(projected onto the closures) are the closed chain's")
    q = model.neutral_configuration() if q is None else q
    q = np.asarray(model.check_state(q)[0], dtype=float)
    if isinstance(joints, str) and joints in (FREE, LOCKED):
        held = held_speeds(model, model.names if joints == LOCKED else (), "joints")
    elif isinstance(joints, str) or not isinstance(joints, Collection):
        raise ValueError(f"joints must be 'free', 'locked' or a collection of body names, "
                         f"got {joints!r}")
    else:
        held = held_speeds(model, joints, "joints")
    free = np.flatnonzero(~held)
    K = tangent_stiffness(model, q, fidelity=fidelity)[np.ix_(free, free)]
    M = mass_matrix(model, q, fidelity=fidelity)[np.ix_(free, free)]
    asym = np.max(np.abs(K - K.T), initial=0.0)
    if asym > 1e-6 * max(np.max(np.abs(K), initial=0.0), 1e-300):
        warnings.warn(f"the tangent stiffness is not symmetric (|K − Kᵀ| = {asym:.3g}): q is "
                      "not an equilibrium or the loads are not conservative; the modes are "
                      "those of its symmetric part (find an equilibrium with "
                      "flexdyn.equilibrium)", RuntimeWarning, stacklevel=2)
    lam, phi = _eigh(K, M)
    rigid = np.abs(lam) <= rtol * max(np.max(np.abs(lam), initial=0.0), 1e-300)
    lam = np.where(rigid, 0.0, lam)
    shapes = np.zeros((model.nu, free.size))
    shapes[free] = phi
    frequencies = np.where(lam < 0.0, np.nan, np.sqrt(np.abs(lam))) / (2 * np.pi)
    modes = ModalAnalysis(frequencies, lam, shapes, rigid, free, M, K,
                          [e.name for e in state_layout(model)["u"]])
    if np.any(modes.unstable):
        rates = ", ".join(f"{r:.4g}" for r in modes.growth_rates[modes.unstable])
        warnings.warn(f"q is an unstable equilibrium: {int(modes.unstable.sum())} mode(s) with "
                      f"ω² < 0 (growth rates {rates} 1/s), reported with frequency NaN; "
                      "ModalAnalysis.unstable and .growth_rates describe them",
                      RuntimeWarning, stacklevel=2)
    return modes




def _eigh(K: np.ndarray, M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``K φ = ω² M φ`` for the symmetric part of ``K``; ``ValueError`` when ``M`` is not
    positive definite."""
    try:
        return scipy.linalg.eigh((K + K.T) / 2, M)
    except np.linalg.LinAlgError:
        raise ValueError("the mass matrix is not positive definite: a degree of freedom has no "
                         "inertia (a repeated mode, modes that move only massless nodes, a "
                         "massless body); the system has no modal analysis") from None


def highest_frequency(model: Model, q: Any, fidelity: str = DEFAULT_FIDELITY,
                      held: Collection[str] = ()) -> float:
    """The highest natural frequency ``ω_max`` (rad/s) of the assembled system about ``q``
    with every joint free but those of the bodies ``held`` (a prescribed motion holds its
    joints: their speeds are no degrees of freedom): the largest eigenvalue of the symmetric
    part of the tangent stiffness against ``M(q)`` on the free speeds, whether or not ``q``
    is an equilibrium (loop closures left out) — what limits the step of explicit
    integrators."""
    q = np.asarray(model.check_state(q)[0], dtype=float)
    free = np.flatnonzero(~held_speeds(model, held, "held"))
    K = tangent_stiffness(model, q, fidelity=fidelity)[np.ix_(free, free)]
    lam, _ = _eigh(K, mass_matrix(model, q, fidelity=fidelity)[np.ix_(free, free)])
    return float(np.sqrt(max(float(lam[-1]), 0.0))) if lam.size else 0.0
