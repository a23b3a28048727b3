"""Closed chains: the closure constraints of a tree and its constrained forward dynamics
(Jain & Rodriguez Sec VIII).

A closed-chain system is the tree of the model plus the closures of ``model.constraints``
(:mod:`flexdyn.constraints`): ``g(q) = 0`` (n_c,), ``J(q) u = 0``, ``J u̇ + γ(q, u) = 0``.
With Lagrange multipliers ``λ`` (the closure forces) the equations of motion are::

    M u̇ + Jᵀ λ = τ − C,      J u̇ = −γ.

Their solution from the tree's own factors (Sec VIII): the tree's accelerations
``u̇_f = M⁻¹ (τ − C)`` (any forward-dynamics method), ``Y = M⁻¹ Jᵀ`` (the O(N)
mass-matrix-inverse sweeps of Lemma 4 applied to the n_c columns of ``Jᵀ``), the tree's
inverse inertia reflected to the closures ``Λ = J M⁻¹ Jᵀ = J Y`` (n_c × n_c), then::

    Λ λ = J u̇_f + γ,      u̇ = u̇_f − Y λ.

Simulation adds Baumgarte's stabilization (``J u̇ = −γ − 2ω ġ − ω² g``), whose terms vanish
on the closure manifold.

An endpoint at a node is the node's deformed frame (its elastic displacement and rotation
included) in the residuals ``g`` for every fidelity; ``J`` and ``γ`` follow the body model of
the fidelity, like the motion of a child attached there (for ``"ruthless"``: the undeformed
node frames with ``E_j η̇``, Eq B1, so that ``ġ = J u`` to first order in the deformation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy

from .chain import Model
from .constraints import Closure, Endpoint
from .linalg import LAMBDA_RTOL
from .newton_euler import modal_accelerations
from .spatial import Transform, cross_motion
from .terms import PositionTerms, VelocityTerms, geometry_terms, modal_velocities

__all__ = ["ClosureError", "ClosureTerms", "closed_chain_accelerations", "closure_terms",
           "dependent_rows"]


class ClosureError(ValueError):
    """Closures that are redundant or inconsistent at a state, or cannot be assembled; the
    message names them."""


@dataclass(frozen=True)
class ClosureTerms:
    """The closures of a model at ``(q, u)``.

    Attributes
    ----------
    g : (n_c,) — position residuals (m for point rows, rad for orientation rows).
    J : (n_c, nu) — the constraint Jacobian, ``ġ = J u``.
    gamma : (n_c,) — ``γ = J̇ u``: ``g̈ = J u̇ + γ``.
    owner : (n_c,) int — the index in ``model.constraints`` of each row's closure.
    """

    g: np.ndarray
    J: np.ndarray
    gamma: np.ndarray
    owner: np.ndarray


def _endpoint(model: Model, pos: PositionTerms, geo: PositionTerms, u: np.ndarray, Jm: list,
              alpha0: list, k: int, node: int | None, point: np.ndarray | None
              ) -> tuple[Endpoint, np.ndarray | None]:
    """The inertial kinematics of an endpoint on body ``k`` (-1: the ground) and its
    Jacobian (6, nu) of ``[ω; v]`` (None on the ground); its pose from the deformed
    geometry ``geo``, its motion from the body models of ``pos``.

    Node ``j``'s twist in its own frame is ``E_j η̇ + φ*(k, j) V`` (Eq 21) and its rate at
    ``u̇ = 0`` is ``[E_j, φ*] α_m⁰ + Ė_j η̇ + V_j × E_j η̇`` with the body model's product
    rates; a point of ``F_k`` moves with ``φ*(k, point)``."""
    if k < 0:
        return Endpoint.fixed(point), None
    bm = pos.body_models[k]
    m = int(model.n_modes[k])
    if node is not None:
        T, E = bm.node_pose(pos.frames[k], node)
        pose = geo.pose[k].compose(geo.body_models[k].node_pose(geo.frames[k], node)[0])
    else:
        T, E = Transform(np.eye(3), point), np.zeros((6, m))
        pose = geo.pose[k].compose(T)
    Bmap = np.hstack([E, T.phi().T])  # (6, m + 6)
    J_local = Bmap @ Jm[k]
    V = J_local @ u
    A = Bmap @ alpha0[k][:, 0]
    if node is not None and m:
        rates = bm.product_rates(model.eta_dot(u, k))
        A = A + bm.node_twist_rate(pos.frames[k], node, rates) + cross_motion(V, E @ rates)
    R = pose.R
    J = np.vstack([R @ J_local[:3], R @ J_local[3:]])
    return Endpoint(p=pose.p, R=R, w=R @ V[:3], v=R @ V[3:], alpha=R @ A[:3],
                    a=R @ (A[3:] + np.cross(V[:3], V[3:]))), J


def closure_terms(model: Model, pos: PositionTerms, vel: VelocityTerms, u: np.ndarray
                  ) -> ClosureTerms:
    """``g``, ``J`` and ``γ`` of every closure of ``model`` at ``(pos.q, u)``.

    The body Jacobians come from the velocity recursion of Eq 11 applied to the identity
    (:func:`flexdyn.terms.modal_velocities`), the accelerations at ``u̇ = 0`` from Eq 24
    without gravity (:func:`flexdyn.newton_euler.modal_accelerations`); each closure kind
    turns its endpoints' kinematics into rows (:mod:`flexdyn.constraints`)."""
    nu = model.nu
    geo = geometry_terms(pos)
    Jm = modal_velocities(model, pos, np.eye(nu))
    alpha0 = modal_accelerations(model, pos, vel, np.zeros((nu, 1)), gravity=False)
    g, J, gamma, owner = [], [], [], []
    for c_index, c in enumerate(model.constraints):
        A, JA = _endpoint(model, pos, geo, u, Jm, alpha0, c.body, c.node, c.point)
        B, JB = _endpoint(model, pos, geo, u, Jm, alpha0, c.other_body, c.other_node,
                          c.other_point)
        rows = c.rows(A, B)
        Jc = rows.W_A @ JA
        if JB is not None:
            Jc = Jc + rows.W_B @ JB
        g.append(rows.g)
        J.append(Jc)
        gamma.append(rows.gamma)
        owner.append(np.full(c.n_rows, c_index))
    return ClosureTerms(g=np.concatenate(g), J=np.vstack(J), gamma=np.concatenate(gamma),
                        owner=np.concatenate(owner))


def dependent_rows(model: Model, Lam: np.ndarray, owner: np.ndarray) -> str:
    """A sentence naming the closures whose rows depend on the others' (pivoted QR of the
    symmetric ``Λ``), for :class:`ClosureError` messages."""
    _, R, perm = scipy.linalg.qr(Lam, pivoting=True)
    d = np.abs(np.diag(R))
    rank = int(np.sum(d > LAMBDA_RTOL * max(d[0], np.finfo(float).tiny)))
    rows = sorted(int(r) for r in perm[rank:])

    def label(r: int) -> str:
        c: Closure = model.constraints[owner[r]]
        return f"{c.name!r} row {r - int(np.argmax(owner == owner[r]))}"

    involved = sorted({model.constraints[owner[r]].name for r in range(len(owner))
                       if np.any(np.abs(Lam[r, rows]) > LAMBDA_RTOL * np.max(np.abs(Lam)))
                       or r in rows})
    return (f"the closures {', '.join(repr(n) for n in involved)} are redundant or singular "
            f"here: their {len(owner)} rows have rank {rank}; "
            f"{', '.join(label(r) for r in rows)} depend on the others (remove them, or use "
            "a closure kind with fewer rows, such as 'pin' instead of 'revolute' or 'ball' "
            "in a planar mechanism)")


def closed_chain_accelerations(model: Model, terms: ClosureTerms, udot_tree: np.ndarray,
                               Y: np.ndarray, u: np.ndarray, rate: float = 0.0
                               ) -> tuple[np.ndarray, np.ndarray]:
    """``(u̇, λ)`` (nu,), (n_c,): the closed chain's accelerations and closure forces from
    the tree's accelerations ``u̇_f`` and ``Y = M⁻¹ Jᵀ`` (nu × n_c), Sec VIII.

    ``Λ λ = J u̇_f + γ + 2ω J u + ω² g`` with ``Λ = J Y`` and Baumgarte's rate ``ω = rate``
    (1/s; 0: none), ``u̇ = u̇_f − Y λ``, so that ``M u̇ + Jᵀ λ = τ − C``.

    ``Λ`` is tested by Cholesky (a squared pivot ``L_kk²`` at most
    :data:`~flexdyn.linalg.LAMBDA_RTOL` ``· Λ_kk``: singular; the share of row ``k`` that
    the rows before it do not explain, invariant under a scaling of the rows, so that metres
    and radians mix) and solved by LU, which is analytic in the entries
    (complex step).  Raises :class:`ClosureError` naming the closures when ``Λ`` is singular.
    """
    J = terms.J
    Lam = J @ Y
    Lam = 0.5 * (Lam + Lam.T)
    b = J @ udot_tree + terms.gamma
    if rate:
        b = b + 2.0 * rate * (J @ u) + rate * rate * terms.g
    try:  # the test of its real part (complex step: Λ is complex symmetric)
        L = np.linalg.cholesky(Lam.real)
    except np.linalg.LinAlgError:
        L = None
    if L is None or np.any(np.diag(L) ** 2 <= LAMBDA_RTOL * np.diag(Lam.real)):
        raise ClosureError(dependent_rows(model, Lam.real, terms.owner))
    lam = np.linalg.solve(Lam, b)
    return udot_tree - Y @ lam, lam
