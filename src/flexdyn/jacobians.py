"""Frame and node Jacobians, and their rate times the speeds, for controllers and inverse
kinematics.

Every body ``k`` carries its frame ``F_k`` and, if it has nodes, one frame per node ``j``
(origin at the node's position ``l_j(η)``, axes ``R_j(η)`` relative to ``F_k``: the node
frames of the body model, :class:`flexdyn.body.NodeFrames`).  The twist ``[ω; v]`` (angular
velocity, rad/s, then the velocity of the frame's origin, m/s) of such a frame is linear in
the generalized speeds ``u`` (nu,)::

    V(k)   = J_m(k)[m:] u                           (body frame F_k),
    V_s(j) = B_j J_m(k) u,  B_j = [E_j, φ*(k, j)]   (node j: the node twist of Eq 21),

with ``J_m(k)`` ((m + 6) × nu) the map ``u ↦ V_m(k) = [η̇; V(k)]`` of the modal velocities
(Eq 11 of Jain & Rodriguez 1992, ``V_m(k) = Φ*(p, k) V_m(p) + ℋ*(k) χ(k)``).  Both twists
are in the element's own frame (``frame="local"``).  ``frame="world"`` gives the same twist
on inertial axes, ``blkdiag(R, R) J`` with ``R`` the element's orientation in the inertial
frame: ``ω`` and ``ṗ``, the inertial velocity of the element's origin, on inertial axes
(the "local world aligned" convention: the twist is *not* moved to the inertial origin).
For quaternion joints (spherical, free) ``u`` holds angular velocities, not ``q̇``:
``q̇ = Γ(q) u`` (:meth:`flexdyn.Model.qdot`).

:func:`jacobian_rate_product` gives ``J̇(q, u) u``, the velocity-product ("bias")
acceleration, so that the element's acceleration is ``J u̇ + J̇ u``.  ``J̇`` is the derivative
along ``q̇ = Γ(q) u``, taken by complex step (exact to round-off) as for the Coriolis matrix
(:mod:`flexdyn.coriolis`).  :func:`frame_pose` gives the element's inertial pose.

The geometry is that of the chosen body model (``fidelity``).  For every fidelity but the
ruthless one (:func:`flexdyn.terms.deformed_nodes`), ``J u`` is exactly the rate of the
deformed pose of :func:`frame_pose` (a node frame's origin at ``l0 + Π_t η`` in ``F_k``).
The ruthless model (Appendix B, Eq B1) keeps every body matrix at ``η = 0``: its ``J`` is the
full model's at zero deformation (a first-order twist, which still contains the modal rates),
and :func:`frame_pose` returns the undeformed placement that model uses, whose rate ``J u``
is not; ``J̇ u`` is then the rate of the ruthless twist ``J(q) u`` (it keeps the products of
``η̇`` with the hinge rates that Eq B1 drops from that model's accelerations).
"""

from __future__ import annotations

import numpy as np

from .chain import Model
from .coriolis import element_jacobians
from .dynamics import batched
from .linalg import COMPLEX_STEP
from .spatial import Transform
from .terms import DEFAULT_FIDELITY, PositionTerms, body_models, check_fidelity, position_terms

__all__ = ["FRAMES", "frame_jacobian", "frame_pose", "jacobian_rate_product"]

#: Component frames of the Jacobians: the element's own axes, or inertial axes.
FRAMES: tuple[str, ...] = ("local", "world")


# ----------------------------------------------------------------------------------------------
# argument checks
# ----------------------------------------------------------------------------------------------
def _target(model: Model, body, node) -> tuple[int, int | None]:
    """``(body index, node index or None)`` of the arguments (a body by name or index,
    :meth:`flexdyn.chain.Model.index`), or ``ValueError`` naming them."""
    i = model.index(body)
    if node is None:
        return i, None
    n = model.bodies[i].n_nodes
    name = model.names[i]
    if not isinstance(node, (int, np.integer)) or isinstance(node, bool):
        raise ValueError(f"node must be an int or None (the body frame), got {node!r} for "
                         f"body {name!r}")
    if n == 0:
        raise ValueError(f"body {name!r} has no nodes (node {int(node)} requested); use "
                         "node=None for its body frame")
    if not -n <= node < n:
        raise ValueError(f"node {int(node)} out of range for body {name!r} with {n} nodes: "
                         f"valid nodes are {-n} to {n - 1} (negative counts from the last), "
                         "or None for the body frame")
    return i, int(node) % n


def _check_frame(frame) -> None:
    if not isinstance(frame, str) or frame not in FRAMES:
        raise ValueError(f"unknown frame {frame!r}; expected one of {FRAMES}")


def _pose(pos: PositionTerms, i: int, j: int | None) -> Transform:
    """Inertial pose of ``F_i`` (``j`` None) or of node ``j`` of body ``i``."""
    return pos.pose[i] if j is None else pos.pose[i].compose(pos.frames[i].transform(j))


def _twist_map(model: Model, pos: PositionTerms, i: int, j: int | None,
               frame: str) -> np.ndarray:
    """``J`` (6 × nu) of the element in components of ``frame``: its ``J_e`` of
    :func:`flexdyn.coriolis.element_jacobians` (the rigid part of each body, then its nodes,
    body by body), rotated to inertial axes for ``"world"``."""
    e = sum(1 + b.n_nodes for b in model.bodies[:i]) + (0 if j is None else 1 + j)
    J = element_jacobians(model, pos)[e][1]
    if frame == "local":
        return J
    R = _pose(pos, i, j).R
    return np.concatenate([R @ J[:3], R @ J[3:]])


def _position_terms(model: Model, q: np.ndarray, fidelity: str) -> PositionTerms:
    return position_terms(model, q, body_models(model, fidelity), fidelity)


# ----------------------------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------------------------
def frame_pose(model: Model, q: np.ndarray, body: str | int, node: int | None = None, *,
               fidelity: str = DEFAULT_FIDELITY) -> tuple[np.ndarray, np.ndarray]:
    """Inertial pose of body ``body``'s frame ``F_k`` or of one of its node frames.

    Parameters
    ----------
    model : Model
    q : (nq,) or (B, nq) — coordinates (unit quaternions), real or complex.
    body : str or int — body name or index (0 to n_bodies − 1).
    node : int or None — node index of that body (negative counts from the last node); None
        (default) for the body frame.
    fidelity : str — body model (:data:`flexdyn.terms.FIDELITIES`): its node frames, and where it
        attaches the children (deformed nodes, or undeformed ones for ``"ruthless"``).

    Returns
    -------
    R : (3, 3) or (B, 3, 3) — orientation (columns: the frame's axes in inertial axes).
    p : (3,) or (B, 3) — inertial position of the frame's origin, m; for a node of a
        deformed-geometry fidelity, ``pose(F_k) · (l0_j + Π_t(j) η)``.
    """
    i, j = _target(model, body, node)
    check_fidelity(fidelity)
    return _frame_pose(model, q, i, j, fidelity)


@batched()
def _frame_pose(model: Model, q: np.ndarray, i: int, j: int | None,
                fidelity: str) -> tuple[np.ndarray, np.ndarray]:
    q = model.check_state(q)[0]
    T = _pose(_position_terms(model, q, fidelity), i, j)
    return T.R, T.p


def frame_jacobian(model: Model, q: np.ndarray, body: str | int, node: int | None = None, *,
                   frame: str = "local", fidelity: str = DEFAULT_FIDELITY) -> np.ndarray:
    """Jacobian ``J(q)`` of a body frame or node frame: its twist is ``V = J u``.

    ``node=None``: the body frame ``F_k``, ``V(k)`` = rows ``m:`` of ``V_m(k)`` (Eq 11,
    ``V_m(k) = Φ*(p, k) V_m(p) + ℋ*(k) χ(k)``).  ``node=j``: the node frame ``j`` of body
    ``k``, ``V_s(j) = B_j V_m(k)``, ``B_j = [E_j, φ*(k, j)]`` (Eq 21).

    Parameters
    ----------
    model : Model
    q : (nq,) or (B, nq) — coordinates in the layout of ``model-format.md`` (unit
        quaternions); real, or complex for complex-step differentiation.
    body : str or int — body name or index (0 to n_bodies − 1).
    node : int or None — node index of that body (negative counts from the last node); None
        (default) for the body frame.
    frame : ``"local"`` (default) or ``"world"`` — the components of ``V = [ω; v]``:
        ``"local"``: in the body or node frame itself (``ω`` its angular velocity, ``v`` the
        velocity of its origin, both on its own axes: the twist of Eqs 11 and 21);
        ``"world"``: both on inertial axes, ``v = ṗ`` the inertial velocity of the frame's
        origin (``J_world = blkdiag(R, R) J_local``, ``R`` from :func:`frame_pose`).
    fidelity : str — body model, one of :data:`flexdyn.terms.FIDELITIES` (see the module
        docstring for ``"ruthless"``).

    Returns
    -------
    (6, nu) or (B, 6, nu) — rows ``[ω (rad/s); v (m/s)]`` per unit of each generalized speed
    (joint speeds as in the model format: for spherical and free joints the relative angular
    velocity, not the quaternion rate; then the modal rates ``η̇``).

    Raises
    ------
    ValueError
        For an unknown body, a node out of range, an unknown ``frame`` or fidelity, or a
        ``q`` of the wrong shape or with a quaternion off unit norm (batches: with the index
        of the state).
    """
    i, j = _target(model, body, node)
    _check_frame(frame)
    check_fidelity(fidelity)
    return _frame_jacobian(model, q, i, j, frame, fidelity)


@batched()
def _frame_jacobian(model: Model, q: np.ndarray, i: int, j: int | None, frame: str,
                    fidelity: str) -> np.ndarray:
    q = model.check_state(q)[0]
    return _twist_map(model, _position_terms(model, q, fidelity), i, j, frame)


def jacobian_rate_product(model: Model, q: np.ndarray, u: np.ndarray, body: str | int,
                          node: int | None = None, *, frame: str = "local",
                          fidelity: str = DEFAULT_FIDELITY) -> np.ndarray:
    """``J̇(q, u) u``: the velocity-product ("bias") acceleration of a body or node frame, so
    that the frame's acceleration is ``d/dt (J u) = J u̇ + J̇ u``.

    ``J̇ = d/dt J(q(t))`` along ``q̇ = Γ(q) u``, by complex step:
    ``J̇ u = Im J(q + i h Γ(q) u) u / h`` (``h`` = :data:`flexdyn.linalg.COMPLEX_STEP`, exact
    to round-off).
    The time derivative is that of the components of ``V = J u`` in ``frame``:

    * ``"world"``: of the inertial components ``[ω; ṗ]``, so ``J u̇ + J̇ u = [ω̇; p̈]``: the
      angular acceleration and the classical acceleration of the frame's origin, both on
      inertial axes (for ``u̇ = 0``, ``J̇ u`` alone).
    * ``"local"``: of the components on the moving frame's own axes, ``[ω_l; v_l] =
      [Rᵀω; Rᵀṗ]``, so ``J u̇ + J̇ u = [Rᵀ ω̇; Rᵀ p̈ − ω_l × v_l]``: Jain & Rodriguez's
      spatial acceleration.  For a body frame and ``u̇ = 0`` it is ``α(k)`` of the recursion
      ``α_m(k) = Φ*(p, k) α_m(p) + ℋ*(k) u̇ + a_m(k)`` with the velocity products ``a_m`` of
      Eq 25; at node ``j``, ``B_j α_m(k) + Ė_j η̇ + V_s(j) × E_j η̇`` (deformed-geometry
      fidelities).  The classical acceleration of the origin on local axes is the linear
      rows plus ``ω_l × v_l``; the angular rows are the world ones on local axes, ``Rᵀ ω̇``.

    Parameters
    ----------
    model : Model
    q : (nq,) or (B, nq) — real coordinates (unit quaternions).
    u : (nu,) or (B, nu) — real generalized speeds.
    body, node, frame, fidelity : as for :func:`frame_jacobian`.

    Returns
    -------
    (6,) or (B, 6) — ``[rad/s²; m/s²]``.

    Raises
    ------
    ValueError
        As :func:`frame_jacobian`, and for a ``u`` of the wrong shape.
    TypeError
        For complex ``q`` or ``u`` (the function differentiates by complex step itself).
    """
    i, j = _target(model, body, node)
    _check_frame(frame)
    check_fidelity(fidelity)
    return _jacobian_rate_product(model, q, u, i, j, frame, fidelity)


@batched("u")
def _jacobian_rate_product(model: Model, q: np.ndarray, u: np.ndarray, i: int, j: int | None,
                           frame: str, fidelity: str) -> np.ndarray:
    q, u = model.check_state(q, u)
    if np.iscomplexobj(q) or np.iscomplexobj(u):
        raise TypeError("jacobian_rate_product takes real q and u (it differentiates by "
                        "complex step itself)")
    q_step = model.check_state(q + 1j * COMPLEX_STEP * model.qdot(q, u))[0]
    moved = _position_terms(model, q_step, fidelity)
    return (_twist_map(model, moved, i, j, frame).imag / COMPLEX_STEP) @ u
