"""Symbolic equations of motion in Poincaré's form (Kwatny & Blankenship, Secs II–III,
Prop 4, Eqs 53a–c) and code generated from them — the optional extra ``symbolic`` (sympy).

:func:`symbolic_model` derives, from a :class:`~flexdyn.chain.Model` and in its own
coordinates ``q`` (nq) and speeds ``p`` (nu) — the joints' quasi-velocities where they have
them (quaternion, Euler and joint-map joints) —

    𝓜(q) ṗ + 𝒞(q, p) p + 𝓕(q) + D p = Q_p                                   (53a)

for the ``"full"`` body model: ``𝓜 = Σ_e J_eᵀ M_e J_e`` over the mass elements ``e`` (the
rigid part of each body, each node), ``𝒞 = Σ_e J_eᵀ (M_e J̇_e + B(V_e) J_e)`` (the factorization
of :mod:`flexdyn.coriolis`, ``𝓜̇ − 2𝒞`` skew), ``𝓕 = Γᵀ ∂𝒱/∂q`` (53c) with ``𝒱`` the gravity
potential of every element and the strain energy ``½ ηᵀ K η``, ``D`` the modal damping and
``Q_p = τ`` (the generalized forces of flexdyn's layout are already dual to ``p``).

Element kinematics are symbolic poses composed along the tree as in the model-file
conventions: joints from :data:`SYMBOLIC_JOINTS` (products of screw exponentials, Prop 1 and
Eq 15, for every kind but the quaternion ones; ``Γ(q)`` of Prop 2, Eq 19, for joints with
quasi-velocities), node frames ``(R(Π_r η), l0 + Π_t η)`` of the model's tip kinematics.
An element's twist (in its own frame) is ``V_e = J_e p`` with
``J_e = [vee(R_eᵀ ∂R_e/∂q); R_eᵀ ∂p_e/∂q] Γ(q)`` and ``J̇_e = Σ_k (∂J_e/∂q_k) (Γ p)_k``.

Node rotations: every tip kinematics.  The exponential map ``I + a(s) θ̃ + b(s) θ̃²``
(``s = θ·θ``) is written with ``a = sin√s/√s`` and ``b = (1 − cos√s)/s`` as sympy functions
whose derivatives are further functions, evaluated by their power series
(:data:`SERIES_TERMS` terms: round-off for ``|θ| ≤ 2π``) in the numpy functions and the C
source, so the expressions and their derivatives are regular at ``θ = 0``.  Geometric
stiffening is not included (the ``"full"`` model).

:class:`SymbolicModel` holds the expressions; :meth:`SymbolicModel.functions` returns numpy
functions of them (``sympy.lambdify`` with common subexpressions) and
:meth:`SymbolicModel.c_source` a C translation unit.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

try:
    import sympy as sp
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError("flexdyn.symbolic needs sympy; install the 'symbolic' extra: "
                      "pip install 'flexdyn[symbolic]'") from exc

from .body import Body, require_lumped_mass
from .chain import Model
from .coriolis import skew_gyroscopic
from .joint_forces import COULOMB, DAMPING, LOWER, PRELOAD, REST, STIFFNESS, TORQUE_LIMIT, UPPER
from .joints import (
    CylindricalJoint,
    FixedJoint,
    FreeJoint,
    Joint,
    PrismaticJoint,
    ProductJoint,
    RevoluteJoint,
    ScrewJoint,
    SphericalJoint,
    UniversalJoint,
)
from .spatial import Transform, skew, twist_maps

__all__ = ["SYMBOLIC_JOINTS", "SYMBOLIC_TIP_KINEMATICS", "SymbolicModel", "symbolic_model"]

Pose = tuple[Any, Any]  # (R 3 × 3, p 3 × 1) sympy matrices


# ---------------------------------------------------------------------------------------------
# symbolic rotations and screw exponentials
# ---------------------------------------------------------------------------------------------
def _on_symbols(fn: Callable, *args: Any) -> Any:
    """``fn`` of :mod:`flexdyn.spatial` or :mod:`flexdyn.coriolis` (numpy code) applied to
    sympy matrices, as object arrays (vectors flattened), returned as a sympy matrix."""
    arrays = [np.array(a, dtype=object).reshape(-1) if 1 in a.shape else
              np.array(a, dtype=object) for a in args]
    return sp.Matrix(fn(*arrays))


def _hat(v) -> Any:
    """``ṽ`` (3 × 3) of a sympy 3-vector (:func:`flexdyn.spatial.skew`)."""
    return _on_symbols(skew, sp.Matrix(v))


def _vee(S) -> Any:
    return sp.Matrix([S[2, 1], S[0, 2], S[1, 0]])


def _exact(a: Any) -> Any:
    """A numeric array as a sympy matrix of exact numbers (integers stay integers)."""
    a = np.asarray(a, dtype=float)
    return sp.Matrix(*a.shape, [sp.Integer(int(x)) if float(x).is_integer() else sp.Float(x)
                                for x in a.ravel()]) if a.ndim == 2 else \
        sp.Matrix([sp.Integer(int(x)) if float(x).is_integer() else sp.Float(x) for x in a])


def screw_exponential(h: Any, e: Any) -> Pose:
    """``exp(ĥ ε)`` (Prop 1) for a column ``h = [ω; v]`` (``|ω| = 1`` or ``ω = 0``): the
    rotation ``I + sin ε ω̃ + (1 − cos ε) ω̃²`` and translation
    ``(ε I + (1 − cos ε) ω̃ + (ε − sin ε) ω̃²) v``."""
    K = _hat(_exact(h[:3]))
    K2 = K * K
    s, c1 = sp.sin(e), 1 - sp.cos(e)
    return (sp.eye(3) + s * K + c1 * K2, (e * sp.eye(3) + c1 * K + (e - s) * K2) * _exact(h[3:]))


def _compose(a: Pose, b: Pose) -> Pose:
    return a[0] * b[0], a[0] * b[1] + a[1]


def _inverse(a: Pose) -> Pose:
    return a[0].T, -a[0].T * a[1]


def _identity() -> Pose:
    return sp.eye(3), sp.zeros(3, 1)


def _constant(T: Transform) -> Pose:
    return _exact(T.R), _exact(T.p)


def _product(columns: np.ndarray, eps: Sequence[Any]) -> tuple[Pose, Any]:
    """``λ(ε) = exp(ĥ_r ε_r) ⋯ exp(ĥ_1 ε_1)`` and ``B(ε)`` (6 × r) of Prop 2 (column ``i``:
    ``Ad_{U_{i−1}⁻¹} h_i``), as :func:`flexdyn.joints.kinematic_map`."""
    U, B = _identity(), sp.zeros(6, columns.shape[1])
    for i in range(columns.shape[1]):
        w, v = _exact(columns[:3, i]), _exact(columns[3:, i])
        B[:3, i] = U[0].T * w
        B[3:, i] = U[0].T * (v + w.cross(U[1]))
        U = _compose(screw_exponential(columns[:, i], eps[i]), U)
    return U, B


# ---------------------------------------------------------------------------------------------
# joints: pose of J_c in J_p and Γ(q) of q̇ = Γ p, by joint class
# ---------------------------------------------------------------------------------------------
def _poe_joint(columns: Callable[[Joint], list[tuple[np.ndarray, int]]]
               ) -> Callable[[Joint, Sequence[Any]], tuple[Pose, Any]]:
    """A joint whose pose is a product of screw exponentials of its coordinates (outermost
    first) and whose speeds are the coordinate rates (``Γ = I``)."""
    def build(joint: Joint, q: Sequence[Any]) -> tuple[Pose, Any]:
        T = _identity()
        for h, k in columns(joint):
            T = _compose(T, screw_exponential(h, q[k]))
        return T, sp.eye(joint.nq)
    return build


def _twist(w: Any, v: Any) -> np.ndarray:
    return np.concatenate([np.asarray(w, dtype=float), np.asarray(v, dtype=float)])


def _quaternion_pose(q: Sequence[Any]) -> tuple[Any, Any]:
    """``R`` of the unit quaternion ``[w, x, y, z]`` and ``Γ`` (4 × 3) of
    ``q̇ = ½ q ⊗ [0, ω]``."""
    w, v = q[0], sp.Matrix(q[1:4])
    R = (w * w - v.dot(v)) * sp.eye(3) + 2 * v * v.T + 2 * w * _hat(v)
    G = sp.zeros(4, 3)
    G[0, :] = -v.T / 2
    G[1:, :] = (w * sp.eye(3) + _hat(v)) / 2
    return R, G


def _spherical(joint: Joint, q: Sequence[Any]) -> tuple[Pose, Any]:
    R, G = _quaternion_pose(q)
    return (R, sp.zeros(3, 1)), G


def _free(joint: Joint, q: Sequence[Any]) -> tuple[Pose, Any]:
    R, G = _quaternion_pose(q)
    Gamma = sp.zeros(7, 6)
    Gamma[:4, :3] = G
    Gamma[4:, 3:] = R  # ṗ = R v
    return (R, sp.Matrix(q[4:7])), Gamma


def _product_joint(joint: ProductJoint, q: Sequence[Any]) -> tuple[Pose, Any]:
    """``λ(ε)`` (Eq 26) and the block-diagonal ``Γ = diag(B_i⁺ S_i)`` (Eqs 19, 25)."""
    eps = [None] * joint.nq
    for k, c in enumerate(joint.order):
        eps[c] = q[k]
    T, Gamma = _identity(), sp.zeros(joint.nq, joint.nu)
    for a, b in joint.blocks:
        U, B = _product(joint.columns[:, a:b], eps[a:b])
        Gamma[a:b, a:b] = sp.simplify((B.T * B).LUsolve(B.T * _exact(joint.basis[:, a:b])))
        T = _compose(U, T)
    return T, Gamma.extract(list(joint.order), list(range(joint.nu)))


#: ``joint class → (joint, q symbols) → ((R, p) of J_c in J_p, Γ(q))``, looked up along the
#: class's MRO (the product joints share one entry).
SYMBOLIC_JOINTS: dict[type, Callable[[Any, Sequence[Any]], tuple[Pose, Any]]] = {
    FixedJoint: _poe_joint(lambda j: []),
    RevoluteJoint: _poe_joint(lambda j: [(_twist(j.axis, np.zeros(3)), 0)]),
    PrismaticJoint: _poe_joint(lambda j: [(_twist(np.zeros(3), j.axis), 0)]),
    ScrewJoint: _poe_joint(lambda j: [(_twist(j.axis, j.pitch * j.axis), 0)]),
    CylindricalJoint: _poe_joint(lambda j: [(_twist(j.axis, np.zeros(3)), 0),
                                            (_twist(np.zeros(3), j.axis), 1)]),
    UniversalJoint: _poe_joint(lambda j: [(_twist(j.axes[0], np.zeros(3)), 0),
                                          (_twist(j.axes[1], np.zeros(3)), 1)]),
    SphericalJoint: _spherical,
    FreeJoint: _free,
    ProductJoint: _product_joint,
}


def _joint_pose(joint: Joint, q: Sequence[Any]) -> tuple[Pose, Any]:
    for cls in type(joint).__mro__:
        if cls in SYMBOLIC_JOINTS:
            return SYMBOLIC_JOINTS[cls](joint, q)
    raise NotImplementedError(f"no symbolic form for the joint {joint!r}")


# ---------------------------------------------------------------------------------------------
# node frames: the tip kinematics
# ---------------------------------------------------------------------------------------------
def _axis_rotation(axis: int, angle: Any) -> Any:
    return screw_exponential(_twist(np.eye(3)[axis], np.zeros(3)), angle)[0]


def _euler(order: tuple[int, int, int]) -> Callable[[Any], Any]:
    def rotation(theta: Any) -> Any:
        R = sp.eye(3)
        for k in order:
            R = R * _axis_rotation(k, theta[k])
        return R
    return rotation


#: terms of the power series of the exponential map's coefficient functions (entire functions
#: of ``s = θ·θ``; 30 terms reach round-off for ``|θ| ≤ 2π``)
SERIES_TERMS = 30
#: derivatives of the coefficient functions the equations need (``J``: first, ``J̇``: second)
SERIES_ORDERS = 4


def _series_coefficients(offset: int, k: int) -> list[float]:
    """Taylor coefficients in ``s`` of the ``k``-th derivative of
    ``Σ_n (−s)^n / (2n + offset)!`` (``offset`` 1: ``sin√s/√s``, 2: ``(1 − cos√s)/s``)."""
    return [(-1) ** (n + k) * math.factorial(n + k)
            / (math.factorial(n) * math.factorial(2 * (n + k) + offset))
            for n in range(SERIES_TERMS)]


def _series_function(name: str, offset: int, k: int) -> type:
    """A sympy function of ``s``: the ``k``-th derivative of the series of ``offset``, whose
    own derivative is the next one."""
    def fdiff(self, argindex=1):
        return _SERIES[(offset, k + 1)](self.args[0])
    return type(name, (sp.Function,), {"nargs": 1, "fdiff": fdiff, "offset": offset,
                                        "order": k})


#: ``(offset, k) → sympy function``: ``a_k`` (``a = sin√s/√s``) and ``b_k``
#: (``b = (1 − cos√s)/s``) and their derivatives in ``s``
_SERIES: dict[tuple[int, int], type] = {}
for _k in range(SERIES_ORDERS + 1):
    _SERIES[(1, _k)] = _series_function(f"expmap_a{_k}", 1, _k)
    _SERIES[(2, _k)] = _series_function(f"expmap_b{_k}", 2, _k)


def _horner(coefficients: list[float]) -> Callable:
    def evaluate(s):
        out = 0.0 * s
        for c in reversed(coefficients):
            out = out * s + c
        return out
    return evaluate


def _exponential(theta: Any) -> Any:
    """``exp(θ̃) = I + a(s) θ̃ + b(s) θ̃²`` with ``s = θ·θ`` and the even coefficient
    functions as series: analytic at ``θ = 0``, derivatives included."""
    if all(t == 0 for t in theta):
        return sp.eye(3)
    s = (theta.T * theta)[0, 0]
    K = _hat(theta)
    return sp.eye(3) + _SERIES[(1, 0)](s) * K + _SERIES[(2, 0)](s) * K * K


#: ``tip-kinematics name → R(θ)`` of the node rotation coordinates ``θ`` (3 × 1).
SYMBOLIC_TIP_KINEMATICS: dict[str, Callable[[Any], Any]] = {
    "exponential": _exponential,
    "neglect": lambda theta: sp.eye(3),
    "euler-321": _euler((2, 1, 0)),
    "euler-123": _euler((0, 1, 2)),
}


def _node_pose(body: Body, j: int | None, eta: Any) -> Pose:
    """Pose of node ``j`` in ``F`` at the modal coordinates ``η`` (the frame for None)."""
    if j is None:
        return _identity()
    theta = _exact(body.Pi_r[j]) * eta if body.n_modes else sp.zeros(3, 1)
    p = _exact(body.nodes[j]) + (_exact(body.Pi_t[j]) * eta if body.n_modes else sp.zeros(3, 1))
    return SYMBOLIC_TIP_KINEMATICS[body.tip_kinematics](theta), p


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class SymbolicModel:
    """The equations of motion of a model in Poincaré's form (module docstring).

    Attributes
    ----------
    model : the Model.
    q, p : sympy column matrices of the coordinate (nq) and speed (nu) symbols, named as
        :func:`flexdyn.state_layout` (``q0``… and ``p0``… for valid identifiers).
    M : (nu × nu) ``𝓜(q)``;  C : (nu × nu) ``𝒞(q, p)``;  F : (nu × 1) ``𝓕(q)`` (gravity
        and elastic forces);  D : (nu × nu) damping;  Gamma : (nq × nu) ``Γ(q)``.
    """

    model: Model
    q: Any
    p: Any
    M: Any
    C: Any
    F: Any
    D: Any
    Gamma: Any

    def functions(self) -> dict[str, Callable]:
        """Numpy functions of the expressions: ``M(q)``, ``C(q, p)``, ``F(q)``,
        ``Gamma(q)`` (arrays of the model's layout) and ``forward_dynamics(q, p, tau)``
        ``= 𝓜⁻¹ (τ − 𝒞 p − 𝓕 − D p)``."""
        args = (list(self.q), list(self.p))
        series = {f.__name__: _horner(_series_coefficients(f.offset, f.order))
                  for f in _SERIES.values()}
        fM, fC, fF, fG = (sp.lambdify(args, X, modules=[series, "numpy"], cse=True)
                          for X in (self.M, self.C, self.F, self.Gamma))
        D = np.array(self.D, dtype=float)

        def M(q):
            return np.asarray(fM(q, np.zeros(len(self.p))), dtype=np.result_type(q, float))

        def C(q, p):
            return np.asarray(fC(q, p), dtype=np.result_type(q, p, float))

        def F(q):
            return np.asarray(fF(q, np.zeros(len(self.p))),
                              dtype=np.result_type(q, float)).reshape(-1)

        def Gamma(q):
            return np.asarray(fG(q, np.zeros(len(self.p))), dtype=np.result_type(q, float))

        def forward_dynamics(q, p, tau):
            return np.linalg.solve(M(q), tau - C(q, p) @ p - F(q) - D @ p)

        return {"M": M, "C": C, "F": F, "Gamma": Gamma, "forward_dynamics": forward_dynamics}

    def c_source(self, prefix: str = "model") -> str:
        """A C translation unit with ``void <prefix>_M(const double *q, double *out)``
        (row-major nu × nu), ``<prefix>_C(const double *q, const double *p, double *out)``,
        ``<prefix>_F(const double *q, double *out)`` and ``<prefix>_Gamma(const double *q,
        double *out)`` (nq × nu), each with its common subexpressions."""
        names = {s: f"q[{k}]" for k, s in enumerate(self.q)}
        names.update({s: f"p[{k}]" for k, s in enumerate(self.p)})
        out = ["#include <math.h>", ""]
        series = {f.__name__: f.__name__ for f in _SERIES.values()}
        used = set().union(*(X.atoms(sp.Function) for X in (self.M, self.C, self.F,
                                                             self.Gamma)))
        for f in _SERIES.values():  # the exponential map's coefficient series, by Horner
            if not any(isinstance(g, f) for g in used):
                continue
            terms = " + s * (".join(repr(c) for c in _series_coefficients(f.offset, f.order))
            out += [f"static double {f.__name__}(double s) {{",
                    f"    return {terms}{')' * (SERIES_TERMS - 1)};", "}"]
        out.append("")
        for name, X, inputs in (("M", self.M, "const double *q"),
                                ("C", self.C, "const double *q, const double *p"),
                                ("F", self.F, "const double *q"),
                                ("Gamma", self.Gamma, "const double *q")):
            X = X.xreplace({s: sp.Symbol(n) for s, n in names.items()})
            temps, (reduced,) = sp.cse([X], symbols=(sp.Symbol(f"t{k}")
                                                      for k in itertools.count()))
            out.append(f"void {prefix}_{name}({inputs}, double *out) {{")
            out += [f"    const double {t} = {sp.ccode(e, user_functions=series)};"
                    for t, e in temps]
            out += [f"    out[{k}] = {sp.ccode(e, user_functions=series)};"
                    for k, e in enumerate(reduced)]
            out += ["}", ""]
        return "\n".join(out)


def _symbols(model: Model) -> tuple[Any, Any]:
    nq, nu = model.nq, model.nu
    return (sp.Matrix(sp.symbols(f"q0:{nq}", real=True)) if nq else sp.zeros(0, 1),
            sp.Matrix(sp.symbols(f"p0:{nu}", real=True)) if nu else sp.zeros(0, 1))


def symbolic_model(model: Model, simplify: bool = False) -> SymbolicModel:
    """:class:`SymbolicModel` of ``model`` (module docstring); ``simplify`` runs
    ``sympy.simplify`` on every entry of the results (slow beyond a few bodies; the local
    twist maps are always simplified).

    The element Jacobians follow the tree as the twists do (Eqs 11, 21): across the joint
    ``J_i = Ad(T⁻¹) J_t + J_loc(T)``, at a node ``J_n = Ad(N⁻¹) J_i + J_loc(N)``, where ``T``
    is the pose of ``F_i`` in its parent's attach-node frame, ``N`` a node's pose in ``F_i``
    and ``J_loc`` the twist Jacobian of a local pose (``[vee(Rᵀ ∂R/∂q); Rᵀ ∂p/∂q] Γ``); the
    gravity forces are ``−Σ_e J_eᵀ w_e`` with ``w_e`` the element's weight at its origin.

    Joint springs, preloads and dampers (:mod:`flexdyn.joint_forces`) enter ``𝓕`` (the
    spring's ``k (q − q₀) − τ₀``: the gradient of its potential) and ``D`` (``c``); the
    non-smooth joint forces — friction, limits and torque limits — have no place in these
    equations, and a model with them raises ``ValueError`` naming the joints."""
    rough = [model.names[i] for i, rows in enumerate(model.joint_forces) if rows is not None
             and (np.any(rows[:, COULOMB] != 0) or np.any(np.isfinite(rows[:, [LOWER, UPPER]]))
                  or np.any(np.isfinite(rows[:, TORQUE_LIMIT])))]
    if rough:
        raise ValueError("symbolic_model takes joint springs, preloads and dampers; the joints "
                         f"of {', '.join(map(repr, rough))} have friction, limits or a torque "
                         "limit, which are not smooth")
    require_lumped_mass(model.bodies, "symbolic_model")
    q, p = _symbols(model)
    nq, nu = model.nq, model.nu
    Gamma = sp.zeros(nq, nu)
    for i, joint in enumerate(model.joints):  # the joints' Γ first: the local maps need it
        qs, us, m = int(model.q_start[i]), int(model.u_start[i]), int(model.n_modes[i])
        Gamma[qs:qs + joint.nq, us:us + joint.nu] = _joint_pose(joint, list(
            q[qs:qs + joint.nq]))[1]
        s, t = qs + joint.nq, us + joint.nu
        Gamma[s:s + m, t:t + m] = sp.eye(m)
    J_body: list = []
    R_body: list = []  # orientation of each body frame in the inertial frame
    elements: list[tuple[np.ndarray, Any, Any, Any]] = []  # (M_e, J_e, R_e, com)
    D = np.zeros((nu, nu))
    F = sp.zeros(nu, 1)
    for i, (body, joint) in enumerate(zip(model.bodies, model.joints, strict=True)):
        qs, us = int(model.q_start[i]), int(model.u_start[i])
        nqj, nuj, m = joint.nq, joint.nu, body.n_modes
        eta = _modal(q, model, i)
        T = _compose(_compose(_constant(model.placement[i]),
                              _joint_pose(joint, list(q[qs:qs + nqj]))[0]),
                     _compose(_constant(model.child_placement[i]),
                              _inverse(_node_pose(body, model.child_node[i], eta))))
        par = int(model.parent[i])
        if par < 0:
            J_t, R_t = sp.zeros(6, nu), sp.eye(3)
        else:  # the parent's attach node
            N = _node_pose(model.bodies[par], model.parent_node[i], _modal(q, model, par))
            J_t = _twist_map(N) * J_body[par] + _local_jacobian(N, q, Gamma)
            R_t = R_body[par] * N[0]
        J = _twist_map(T) * J_t + _local_jacobian(T, q, Gamma)
        R = R_t * T[0]
        J_body.append(J)
        R_body.append(R)
        elements.append((body.M_rigid, J, R, _exact(body.com)))
        for j in range(body.n_nodes):
            N = _node_pose(body, j, eta)
            elements.append((body.M_s[j], _twist_map(N) * J + _local_jacobian(N, q, Gamma),
                             R * N[0], sp.zeros(3, 1)))
        if m:
            F[us + nuj:us + nuj + m, 0] = _exact(body.K) * eta
            D[us + nuj:us + nuj + m, us + nuj:us + nuj + m] = body.C
        forces = model.joint_forces[i]
        if forces is not None:  # joint coordinates are their speeds' rates here
            for k, (stiffness, rest, preload, damping) in enumerate(
                    forces[:, [STIFFNESS, REST, PRELOAD, DAMPING]]):
                F[us + k, 0] += (_exact([stiffness])[0] * (q[qs + k] - _exact([rest])[0])
                                 - _exact([preload])[0])
                D[us + k, us + k] += damping
    g = _exact(model.gravity)
    M, C = sp.zeros(nu, nu), sp.zeros(nu, nu)
    qdot = Gamma * p
    for M_e, J, R, com in elements:
        if not np.any(M_e):
            continue
        Me = _exact(M_e)
        weight = float(M_e[3, 3]) * (R.T * g)
        F -= J.T * sp.Matrix.vstack(com.cross(weight), weight)
        J_dot = sp.zeros(6, nu)
        for k in range(nq):
            J_dot += J.diff(q[k]) * qdot[k]
        M += J.T * Me * J
        C += J.T * (Me * J_dot + _on_symbols(skew_gyroscopic, Me, J * p) * J)
    if simplify:
        M, C, F = (X.applyfunc(sp.simplify) for X in (M, C, F))
    return SymbolicModel(model=model, q=q, p=p, M=M, C=C, F=F, D=sp.Matrix(D), Gamma=Gamma)


def _modal(q: Any, model: Model, i: int) -> Any:
    s = int(model.q_start[i] + model.nq_joint[i])
    m = int(model.n_modes[i])
    return sp.Matrix(q[s:s + m]) if m else sp.zeros(0, 1)


def _twist_map(T: Pose) -> Any:
    """``Ad(T⁻¹)`` (6 × 6): a twist of the outer frame seen in the frame of pose ``T``
    (:func:`flexdyn.spatial.twist_maps`)."""
    return _on_symbols(twist_maps, *T)


def _local_jacobian(T: Pose, q: Any, Gamma: Any) -> Any:
    """``[vee(Rᵀ ∂R/∂q_k); Rᵀ ∂p/∂q_k] Γ`` (6 × nu), simplified: the twist of the frame of a
    local pose ``T = (R, p)`` relative to its outer frame, in its own frame, per unit speed
    (only the coordinates ``T`` depends on contribute)."""
    R, r = T
    J = sp.zeros(6, len(q))
    for k, s in enumerate(q):
        if R.has(s) or r.has(s):
            J[:3, k] = _vee(R.T * R.diff(s))
            J[3:, k] = R.T * r.diff(s)
    return (J * Gamma).applyfunc(sp.simplify)
