"""Built-in example models: a planar two-link flexible arm, a spacecraft with two flexible
appendages, and Damaren & Sharf's spin-up beam and Shuttle arm.

Every builder returns a :class:`~flexdyn.chain.Model` whose flexible bodies are straight
uniform beams discretised by :func:`flexdyn.beam.beam_modes` (lumped-mass Euler–Bernoulli
elements, cantilever modes: node 0 sits at the body-frame origin and does not deform).
Units are SI throughout: m, kg, s, N, and rad.

The default instances are also shipped as model files in ``flexdyn/data``;
:func:`builtin_model` loads one and :func:`list_builtin_models` lists them.

Example
-------
>>> import flexdyn as fd
>>> model = fd.models.spinup_beam()
>>> tau = fd.models.spinup_torque(model)
>>> res = fd.simulate(model, t_span=(0.0, 1.0), tau=tau)  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from importlib import resources

import numpy as np
import scipy

from .beam import beam_modes
from .chain import Model, ModelBuilder, load_model
from .dynamics import inverse_dynamics, mass_matrix
from .joints import JOINT_KINDS, FixedJoint, RevoluteJoint
from .loads import TimeFunction, of_time

__all__ = [
    "BUILTIN_MODELS",
    "builtin_model",
    "list_builtin_models",
    "modal_frequencies",
    "rigid_hub_inertia",
    "shuttle_arm",
    "shuttle_maneuver",
    "slew_torque",
    "spacecraft",
    "spinup_beam",
    "spinup_profile",
    "spinup_torque",
    "two_link_arm",
]


def _rot_z(angle: float) -> list[list[float]]:
    """Rotation about z, exact for multiples of 90°."""
    c = {0: 1.0, 90: 0.0, 180: -1.0, 270: 0.0}
    s = {0: 0.0, 90: 1.0, 180: 0.0, 270: -1.0}
    k = float(angle) % 360.0
    if k in c:
        ck, sk = c[int(k)], s[int(k)]
    else:
        ck, sk = float(np.cos(np.radians(angle))), float(np.sin(np.radians(angle)))
    return [[ck, -sk, 0.0], [sk, ck, 0.0], [0.0, 0.0, 1.0]]


def _positive(value: float, name: str, *, allow_zero: bool = False) -> float:
    x = float(value)
    if not np.isfinite(x) or x < 0.0 or (x == 0.0 and not allow_zero):
        req = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}={value!r} must be finite and {req}")
    return x


def _gravity(gravity: Sequence[float]) -> list[float]:
    g = np.asarray(gravity, dtype=float)
    if g.shape != (3,) or not np.all(np.isfinite(g)):
        raise ValueError(f"gravity must be 3 finite numbers (m/s²), got {gravity!r}")
    return g.tolist()


# ----------------------------------------------------------------------------------------------
# two-link arm
# ----------------------------------------------------------------------------------------------
def two_link_arm(
    *,
    length1: float = 2.0,
    length2: float = 1.6,
    mass_per_length1: float = 2.0,
    mass_per_length2: float = 1.5,
    EI1: float = 300.0,
    EI2: float = 150.0,
    hub_mass: float = 2.0,
    hub_inertia: float = 0.1,
    elbow_mass: float = 1.0,
    elbow_inertia: float = 0.01,
    payload_mass: float = 1.0,
    payload_inertia: float = 0.0,
    n_elements: int = 6,
    n_modes: int = 1,
    damping_ratio: float = 0.0,
    gravity: Sequence[float] = (0.0, 0.0, 0.0),
    name: str = "two_link_arm",
) -> Model:
    """Planar two-link flexible manipulator moving in the x-y plane.

    Both joints are revolute about z.  Each link is a uniform cantilever beam along its body
    x-axis that bends in the x-y plane only (bending stiffness ``EI_z``, no axial, torsional
    or out-of-plane deformation).  Link 2 is jointed at link 1's tip node, so the elbow
    follows the tip's elastic deflection and slope.  The tip payload is a point mass (with an
    optional rotary inertia about z) added to link 2's tip node; it moves with the deformed
    tip.  The cantilever modes of the bare beams are used as a Ritz basis: the modal mass
    matrices include the hub, elbow and payload.

    Parameters
    ----------
    length1, length2 : link lengths (m).
    mass_per_length1, mass_per_length2 : beam mass per length (kg/m).
    EI1, EI2 : in-plane bending stiffness (N m²).
    hub_mass, hub_inertia : rigid shoulder hub on link 1 at the joint (kg; kg m² about z).
    elbow_mass, elbow_inertia : rigid elbow motor on link 2 at its joint (kg; kg m² about z).
    payload_mass, payload_inertia : tip payload on link 2's tip node (kg; kg m² about z).
    n_elements : beam elements per link.
    n_modes : cantilever bending modes per link.
    damping_ratio : modal damping ratio ζ (dimensionless, ≥ 0).
    gravity : gravity vector in the inertial frame (m/s²); off by default.  The arm moves in
        the x-y plane, so e.g. ``(0, -9.81, 0)`` gives a vertical arm.
    name : model name.

    Returns
    -------
    Model with ``nq = nu = 2 + 2 n_modes``; bodies ``"link1"``, ``"link2"``.
    """
    L1 = _positive(length1, "length1")
    L2 = _positive(length2, "length2")
    hub_mass = _positive(hub_mass, "hub_mass", allow_zero=True)
    hub_inertia = _positive(hub_inertia, "hub_inertia", allow_zero=True)
    elbow_mass = _positive(elbow_mass, "elbow_mass", allow_zero=True)
    elbow_inertia = _positive(elbow_inertia, "elbow_inertia", allow_zero=True)
    payload_mass = _positive(payload_mass, "payload_mass", allow_zero=True)
    payload_inertia = _positive(payload_inertia, "payload_inertia", allow_zero=True)
    b1 = beam_modes(L1, mass_per_length1, EI_z=EI1, n_elements=n_elements, n_modes=n_modes,
                    damping_ratio=damping_ratio)
    b2 = beam_modes(L2, mass_per_length2, EI_z=EI2, n_elements=n_elements, n_modes=n_modes,
                    damping_ratio=damping_ratio)
    flex2 = b2.to_flex_dict()
    flex2["node_masses"][-1] += payload_mass
    flex2["node_inertias"][-1][0][0] += 0.5 * payload_inertia
    flex2["node_inertias"][-1][1][1] += 0.5 * payload_inertia
    flex2["node_inertias"][-1][2][2] += payload_inertia

    def disk(mass: float, izz: float) -> dict:
        # a thin disk about z: Ixx = Iyy = Izz / 2 (satisfies the triangle inequality)
        return {"mass": mass, "com": [0.0, 0.0, 0.0],
                "inertia": [[0.5 * izz, 0.0, 0.0], [0.0, 0.5 * izz, 0.0], [0.0, 0.0, izz]]}

    builder = ModelBuilder(name, gravity=_gravity(gravity))
    builder.add_body(
        "link1", None,
        joint={"type": "revolute", "axis": [0.0, 0.0, 1.0]},
        rigid=disk(hub_mass, hub_inertia) if hub_mass or hub_inertia else None,
        flex=b1.to_flex_dict(),
    )
    builder.add_body(
        "link2", "link1",
        joint={"type": "revolute", "axis": [0.0, 0.0, 1.0], "parent_node": b1.n_nodes - 1},
        rigid=disk(elbow_mass, elbow_inertia) if elbow_mass or elbow_inertia else None,
        flex=flex2,
    )
    return builder.build()


# ----------------------------------------------------------------------------------------------
# spacecraft
# ----------------------------------------------------------------------------------------------
def spacecraft(
    *,
    hub_mass: float = 1000.0,
    hub_size: float = 2.0,
    array_length: float = 8.0,
    array_mass_per_length: float = 3.0,
    array_width: float = 2.0,
    EI_out: float = 1.5e3,
    EI_in: float = 2.0e4,
    GJ: float = 2.0e3,
    n_elements: int = 8,
    n_modes: int = 4,
    damping_ratio: float = 0.0,
    array_joint: str = "fixed",
    name: str = "spacecraft",
) -> Model:
    """Rigid cubic hub on a ``free`` joint with two flexible solar arrays; zero gravity.

    The hub is a homogeneous cube (body ``"hub"``, frame at its centre).  The arrays
    (``"array_pos"``, ``"array_neg"``) are 3D cantilever beams attached at the centres of the
    hub's +y and −y faces, pointing outwards along ±y.  Each array's body x-axis is its long
    axis, its body y-axis lies in the panel plane and its z-axis is normal to the panel:
    out-of-plane bending (deflection along z) has stiffness ``EI_out``, in-plane bending
    ``EI_in``, torsion ``GJ`` with the panel's polar inertia ``μ w²/12``; no axial stretch.

    Parameters
    ----------
    hub_mass : kg.
    hub_size : cube edge length (m).
    array_length : m.
    array_mass_per_length : kg/m.
    array_width : panel width (m), sets the torsional inertia.
    EI_out, EI_in : bending stiffnesses (N m²).
    GJ : torsional stiffness (N m²).
    n_elements, n_modes : beam elements and modes per array.
    damping_ratio : modal damping ratio ζ.
    array_joint : ``"fixed"`` (rigidly mounted arrays) or ``"revolute"`` (solar array drive
        about the array's long axis).
    name : model name.

    Returns
    -------
    Model with the hub's ``free`` joint first (``q``: quaternion ``[w, x, y, z]`` and position;
    ``u``: ``[ω; v]`` in hub coordinates), then each array's (joint and) modal coordinates.
    """
    kind = JOINT_KINDS.get(array_joint) if isinstance(array_joint, str) else None
    if kind not in (FixedJoint, RevoluteJoint):
        raise ValueError(f"array_joint={array_joint!r} must be 'fixed' or 'revolute'")
    m = _positive(hub_mass, "hub_mass")
    s = _positive(hub_size, "hub_size")
    mu = _positive(array_mass_per_length, "array_mass_per_length")
    w = _positive(array_width, "array_width")
    ic = m * s * s / 6.0
    arr = beam_modes(array_length, mu, EI_y=EI_out, EI_z=EI_in, GJ=GJ,
                     polar_inertia_per_length=mu * w * w / 12.0,
                     n_elements=n_elements, n_modes=n_modes, damping_ratio=damping_ratio)
    builder = ModelBuilder(name, gravity=(0.0, 0.0, 0.0))
    builder.add_body(
        "hub", None,
        joint={"type": "free"},
        rigid={"mass": m, "com": [0.0, 0.0, 0.0],
               "inertia": [[ic, 0.0, 0.0], [0.0, ic, 0.0], [0.0, 0.0, ic]]},
    )
    for side, sign, angle in (("pos", 1.0, 90), ("neg", -1.0, 270)):
        joint = {"type": array_joint,
                 "placement": {"translation": [0.0, sign * 0.5 * s, 0.0],
                               "rotation": _rot_z(angle)}}
        if "axis" in kind.file_keys:  # the drive turns the array about its long axis
            joint["axis"] = [1.0, 0.0, 0.0]
        builder.add_body(f"array_{side}", "hub", joint=joint, flex=arr.to_flex_dict())
    return builder.build()


# ----------------------------------------------------------------------------------------------
# spin-up beam (Damaren & Sharf 1995, Sec 4.1)
# ----------------------------------------------------------------------------------------------
def spinup_beam(
    *,
    mass: float = 12.0,
    length: float = 10.0,
    EI: float = 1.4004e4,
    EA: float | None = 3.1724e7,
    n_elements: int = 10,
    n_bending: int = 2,
    n_axial: int = 2,
    hub_inertia: float = 0.0,
    name: str = "spinup_beam",
    basis: str = "lumped",
    membrane: str = "condensed",
) -> Model:
    """The planar spin-up beam of Damaren & Sharf (1995), Sec 4.1.

    A uniform beam (m = 12 kg, L = 10 m, EI = 1.4004e4 N m², EA = 3.1724e7 N) pinned at one
    end by a revolute joint about z; it lies along its body x-axis and deforms in the x-y
    plane.  It carries the ``n_bending`` lowest cantilever bending modes and the
    ``n_axial`` lowest stretch modes of an ``n_elements``-element lumped mesh
    (:func:`~flexdyn.beam.beam_modes`, in ascending frequency: with the defaults the bending
    modes first), and, with ``EA``, the stiffening tensors of the stiffened fidelities
    (:mod:`flexdyn.stiffening`).  The paper's basis has one stretch mode (``n_axial=1``,
    ``basis="natural"``); the default two put the largest bending of the torque-driven
    spin-up within 0.3 % of its value with eight stretch modes (2.5 % with one: the stretch
    modes carry the centrifugal load's distribution, ``docs/stiffening.md``).

    Parameters
    ----------
    mass : total beam mass (kg).
    length : m.
    EI : in-plane bending stiffness (N m²).
    EA : axial stiffness (N), or None for an inextensible beam (then ``n_axial`` must be 0).
    n_elements : beam elements.
    n_bending, n_axial : numbers of bending and stretch modes.
    hub_inertia : optional rigid hub inertia about the pin (kg m²); 0 in the paper.
    name : model name.
    basis : ``"lumped"`` (default), ``"natural"``: the paper's natural-mode basis (the
        continuous cantilever's eigenfunctions, mass lumped at ``n_elements + 1``
        Gauss–Lobatto points), or ``"finite"``: its finite-element basis (consistent-mass
        elements; the paper's spin-up uses ``n_elements=1``, whose two bending and one
        stretch mode are all the element has); see :func:`~flexdyn.beam.beam_modes`.

    Returns
    -------
    Model with one body ``"beam"``: ``q = [θ, η]``, ``u = [θ̇, η̇]``.
    """
    mass = _positive(mass, "mass")
    length = _positive(length, "length")
    hub_inertia = _positive(hub_inertia, "hub_inertia", allow_zero=True)
    if n_bending < 0 or n_axial < 0 or n_bending + n_axial == 0:
        raise ValueError("need n_bending >= 0, n_axial >= 0 and at least one mode")
    if n_axial and EA is None:
        raise ValueError("n_axial > 0 needs EA")
    flex = beam_modes(length, mass / length, EI_z=EI if n_bending else None, EA=EA,
                      n_elements=n_elements, basis=basis, membrane=membrane,
                      n_modes={"transverse_y": n_bending, "axial": n_axial}).to_flex_dict()
    rigid = None
    if hub_inertia:
        h = hub_inertia
        rigid = {"mass": 0.0, "com": [0.0, 0.0, 0.0],
                 "inertia": [[0.5 * h, 0.0, 0.0], [0.0, 0.5 * h, 0.0], [0.0, 0.0, h]]}
    builder = ModelBuilder(name, gravity=(0.0, 0.0, 0.0))
    builder.add_body("beam", None, joint={"type": "revolute", "axis": [0.0, 0.0, 1.0]},
                     rigid=rigid, flex=flex)
    return builder.build()


def spinup_profile(t, T: float = 15.0, omega_s: float = 6.0):
    """Prescribed hub motion of the spin-up manoeuvre (Damaren & Sharf, Sec 4.1).

    ``θ̇(t) = Ω (t/T − sin(2πt/T)/(2π))`` for ``0 ≤ t < T``, then ``Ω``; the motion is at rest
    for ``t < 0``.

    Parameters
    ----------
    t : float or array — time (s).
    T : spin-up duration (s).
    omega_s : final rate Ω (rad/s).

    Returns
    -------
    (θ, θ̇, θ̈) : floats or arrays shaped like ``t`` (rad, rad/s, rad/s²).
    """
    T = _positive(T, "T")
    tt = np.asarray(t, dtype=float)
    tc = np.clip(tt, 0.0, T)
    w = 2.0 * np.pi / T
    theta = omega_s * (tc**2 / (2.0 * T) + (np.cos(w * tc) - 1.0) / (w * w * T))
    theta = theta + omega_s * np.maximum(tt - T, 0.0)
    theta_dot = np.where(tt >= T, omega_s, omega_s * (tc / T - np.sin(w * tc) / (2.0 * np.pi)))
    theta_ddot = np.where((tt >= T) | (tt < 0.0), 0.0, omega_s / T * (1.0 - np.cos(w * tc)))
    if np.ndim(t) == 0:
        return float(theta), float(theta_dot), float(theta_ddot)
    return theta, theta_dot, theta_ddot


def rigid_hub_inertia(model: Model, body: int = 0) -> float:
    """Inertia about the axis of ``body``'s (single-dof) joint with the model undeformed
    and every joint at zero: the diagonal entry of the mass matrix (kg m²)."""
    if model.nu_joint[body] != 1:
        raise ValueError(f"body {model.names[body]!r} has no single-dof joint")
    # one evaluation at setup: the reference, which compiles nothing
    M = mass_matrix(model, model.neutral_configuration(), backend="reference")
    k = int(model.u_start[body])
    return float(M[k, k])


def spinup_torque(model: Model, T: float = 15.0, omega_s: float = 6.0,
                  body: int = 0) -> TimeFunction:
    """Open-loop hub torque of the torque-driven spin-up: rigid-beam inverse dynamics.

    ``τ_hub(t) = I_rigid θ̈(t)`` with ``I_rigid`` the inertia of the undeformed model about
    the hub joint axis (:func:`rigid_hub_inertia`, e.g. Σ m_j x_j² of the lumped beam) and
    ``θ̈`` from :func:`spinup_profile`; every other slot of ``τ`` (modal forces) is 0.

    Returns
    -------
    :class:`~flexdyn.loads.TimeFunction` ``tau(t, q, u) -> (nu,)`` (N m) of ``t`` alone, as
    accepted by :func:`flexdyn.simulate`, with the attribute ``rigid_inertia`` (kg m²).
    """
    T = _positive(T, "T")
    inertia = rigid_hub_inertia(model, body)
    k = int(model.u_start[body])
    nu = model.nu
    gain, w = inertia * omega_s / T, 2.0 * math.pi / T

    @of_time
    def tau(t: float) -> np.ndarray:
        # I θ̈ with θ̈ of spinup_profile in scalar arithmetic: an integrator calls this at
        # every stage, where the array version costs twenty times more
        out = np.zeros(nu)
        if 0.0 <= t < T:
            out[k] = gain * (1.0 - math.cos(w * t))
        return out

    tau.rigid_inertia = inertia
    return tau


# ----------------------------------------------------------------------------------------------
# shipped model files
# ----------------------------------------------------------------------------------------------
def modal_frequencies(model: Model) -> list[np.ndarray]:
    """Per body, the natural frequencies (Hz, ascending) of its modes with the body frame held
    fixed: ``sqrt(eig(K, M_ff)) / 2π`` with ``M_ff`` the modal block of the undeformed modal
    mass.  A mode combination without inertia of its own (moving only massless nodes, whose
    inertia comes from a child; or a repeated mode column) has no frequency: ``inf``."""
    out = []
    for body in model.bodies:
        m = body.n_modes
        if m == 0:
            out.append(np.zeros(0))
            continue
        M_ff = body.M_m0[:m, :m]
        try:
            lam = scipy.linalg.eigh(body.K, M_ff, eigvals_only=True)
        except np.linalg.LinAlgError:  # M_ff singular: generalized eigenvalues, inf for none
            ev = scipy.linalg.eigvals(body.K, M_ff)
            lam = np.sort(np.where(np.isfinite(ev), ev.real, np.inf))
        out.append(np.sqrt(np.clip(lam, 0.0, None)) / (2.0 * np.pi))
    return out


def slew_torque(model: Model, duration: float = 2.0, angle: float = 0.5) -> TimeFunction:
    """A rest-to-rest slew command for the demo.

    Every 1-dof joint (and the z rotation of a free or spherical root joint) is to turn by
    ``±angle`` (alternating sign from joint to joint) in ``duration`` seconds with the
    acceleration profile ``sin(2πt/Tₛ) sin²(πt/Tₛ)`` (zero rate and acceleration at both
    ends).  The torques are the rigid-body inverse dynamics of that motion about the
    undeformed neutral configuration, ``τ = M_jj θ̈``, ``M_jj`` the joints' block of the mass
    matrix; velocity products are neglected, so the slew is approximate.  Returns a
    :class:`~flexdyn.loads.TimeFunction` ``tau(t, q, u) -> (nu,)`` (N m) of ``t`` alone.
    """
    M = mass_matrix(model, model.neutral_configuration(), backend="reference")  # at setup
    # rigid response to the unit shape over a unit duration: ∫₀¹∫₀ˢ shape = 3 / (16π)
    pos = 3.0 / (16.0 * np.pi)
    slots, targets = [], []
    sign = 1.0
    for i, joint in enumerate(model.joints):
        if joint.slew_speed is None or (joint.quaternion and model.parent[i] >= 0):
            continue
        slots.append(int(model.u_start[i]) + joint.slew_speed)
        targets.append(sign * angle)
        sign = -sign
    amps = M[np.ix_(slots, slots)] @ np.array(targets) / (pos * duration**2)
    slots_a, amps_a = np.array(slots, dtype=int), amps
    nu = model.nu

    @of_time
    def tau(t: float) -> np.ndarray:
        out = np.zeros(nu)
        if 0.0 <= t < duration:
            x = t / duration
            out[slots_a] = amps_a * (np.sin(2 * np.pi * x) * np.sin(np.pi * x) ** 2)
        return out

    return tau


# ----------------------------------------------------------------------------------------------
# Damaren & Sharf's Shuttle arm (Sec 4.2)
# ----------------------------------------------------------------------------------------------
#: Table 2: per link (name, length m, mass kg, J_roll, J_pitch = J_yaw kg m² about the joint
#: end, joint axis in the body frame)
SHUTTLE_LINKS = (
    ("shoulder_yaw", 0.9, 95.0, 0.2, 25.75, (0.0, 0.0, 1.0)),
    ("upper_boom", 6.4, 138.0, 0.4, 1884.36, (0.0, 1.0, 0.0)),
    ("lower_boom", 7.0, 85.0, 0.4, 1388.53, (0.0, 1.0, 0.0)),
    ("wrist_pitch", 0.5, 8.0, 0.2, 0.76, (0.0, 1.0, 0.0)),
    ("wrist_yaw", 0.8, 44.0, 0.2, 9.49, (0.0, 0.0, 1.0)),
    ("wrist_roll", 0.6, 41.0, 0.2, 5.02, (1.0, 0.0, 0.0)),
)
#: Table 2: the payload (kg; kg m² about its centre of mass: roll, pitch, yaw)
SHUTTLE_PAYLOAD = (15000.0, 30000.0, 515000.0, 515000.0)
#: Table 2: the booms' stiffnesses EI (both planes), GJ (N m²) and EA (N)
SHUTTLE_BOOM_STIFFNESS = (4.046e6, 2.040e6, 2.790e9)
#: Eq 34: the step torques of maneuver II-f (N m); II-s takes a tenth
SHUTTLE_STEP_TORQUES = np.array([2.0, 3.5, 2.0, 1.0, 0.5, 0.01]) * 1e3


#: the modes of each Shuttle boom by family: Damaren & Sharf's six for Table 3
SHUTTLE_BOOM_MODES = {"transverse_y": 2, "transverse_z": 2, "axial": 1, "torsion": 1}


def shuttle_arm(*, basis: str = "natural", n_elements: int = 10,
                n_modes: Mapping[str, int] | None = None, membrane: str = "condensed",
                name: str = "shuttle_arm") -> Model:
    """Damaren & Sharf's six-joint arm modelled after the Space Shuttle's (Sec 4.2, Table 2).

    The shuttle is the fixed ground. Six bodies in a chain, each on a revolute joint at the
    end of the previous one, all lying along their body x axes in the reference
    configuration (every joint angle zero: the arm stretched straight out along the
    inertial x axis): shoulder yaw (about z), the upper boom on shoulder pitch (y), the
    lower boom on the elbow (y), wrist pitch (y), wrist yaw (z), wrist roll (x), and the
    payload on a fixed joint at the end of the wrist. The two booms are flexible uniform
    beams (Table 2's EI in both planes, GJ, EA; mass per length ``m/l``, polar inertia per
    length ``J_roll/l``) with the paper's six modes each: two bending modes in each plane,
    one stretch and one torsion mode (:data:`SHUTTLE_BOOM_MODES`; ``n_modes`` another
    choice by family, as :func:`~flexdyn.beam.beam_modes` takes it), in ``basis``
    (``"natural"``, the paper's choice for Table 3, by default), their stiffening tensors with
    the ``membrane`` energy of :func:`~flexdyn.beam.geometric_stiffness` (``"modal"``: the
    paper's). The other links are rigid.

    What Table 2 does not say and this model assumes: the joint axes above (the usual
    shoulder yaw–pitch, elbow pitch, wrist pitch–yaw–roll sequence); each rigid link a rod
    from its joint along x (centre of mass at ``l/2``) whose pitch and yaw inertias are
    Table 2's about the joint end (they match ``m l²/3``) and roll inertia Table 2's about
    the axis; the payload's centre of mass at the wrist's end, with Table 2's inertias about
    it. The upper boom's first cantilever frequency is 37.19 rad/s, as the paper's 37.2; the
    lower boom's, from the same data, is 41.4 rad/s where the paper quotes 34.5 (the table
    does not reproduce it).

    Returns
    -------
    Model with bodies ``shoulder_yaw``, ``upper_boom``, ``lower_boom``, ``wrist_pitch``,
    ``wrist_yaw``, ``wrist_roll``, ``payload``; ``q`` = the six joint angles, each boom's
    six modal coordinates after its joint's angle.
    """
    EI, GJ, EA = SHUTTLE_BOOM_STIFFNESS
    builder = ModelBuilder(name, gravity=(0.0, 0.0, 0.0))
    parent, parent_length, parent_nodes = None, 0.0, 0
    for link, length, mass, j_roll, j_end, axis in SHUTTLE_LINKS:
        joint: dict = {"type": "revolute", "axis": list(axis)}
        if parent is not None:
            if parent_nodes:
                joint["parent_node"] = parent_nodes - 1
            else:
                joint["placement"] = {"translation": [parent_length, 0.0, 0.0]}
        if link.endswith("boom"):
            beam = beam_modes(length, mass / length, EI_y=EI, EI_z=EI, EA=EA, GJ=GJ,
                              polar_inertia_per_length=j_roll / length, n_elements=n_elements,
                              n_modes=dict(SHUTTLE_BOOM_MODES if n_modes is None else n_modes),
                              basis=basis, membrane=membrane)
            builder.add_body(link, parent, joint=joint, flex=beam.to_flex_dict())
            parent_nodes = beam.n_nodes
        else:
            j_com = j_end - mass * (length / 2) ** 2
            builder.add_body(link, parent, joint=joint,
                             rigid={"mass": mass, "com": [length / 2, 0.0, 0.0],
                                    "inertia": np.diag([j_roll, j_com, j_com]).tolist()})
            parent_nodes = 0
        parent, parent_length = link, length
    m_p, j_r, j_p, j_y = SHUTTLE_PAYLOAD
    builder.add_body("payload", parent,
                     joint={"type": "fixed", "placement": {"translation": [parent_length, 0.0,
                                                                           0.0]}},
                     rigid={"mass": m_p, "com": [0.0, 0.0, 0.0],
                            "inertia": np.diag([j_r, j_p, j_y]).tolist()})
    return builder.build()


def shuttle_maneuver(model: Model, maneuver: str
                     ) -> tuple[Callable[[float, np.ndarray, np.ndarray], np.ndarray], float]:
    """``(tau, T)``: the joint torques ``tau(t, q, u)`` of one of Damaren & Sharf's maneuvers
    of :func:`shuttle_arm` (Eqs 33–34) and its duration ``T`` (s).

    * ``"I-f"``, ``"I-s"``: every joint follows ``θ(t) = θ_d (t/T − sin(2πt/T)/(2π))``,
      ``θ_d = 0.4`` rad, ``T`` = 20 s and 60 s; the torques are the rigid arm's inverse
      dynamics of that motion (the model with its modes held at zero), held at zero after
      ``T``.
    * ``"II-f"``, ``"II-s"``: step torques, :data:`SHUTTLE_STEP_TORQUES` (a tenth for II-s)
      for ``t < T/2``, zero after; ``T`` = 20 s and 60 s.
    """
    kinds = {"I-f": 20.0, "I-s": 60.0, "II-f": 20.0, "II-s": 60.0}
    if maneuver not in kinds:
        raise ValueError(f"unknown maneuver {maneuver!r}; expected one of {list(kinds)}")
    T = kinds[maneuver]
    joints = np.array([int(model.u_start[i]) for i in range(model.n_bodies)
                       if model.nu_joint[i] == 1])
    if joints.size != 6:
        raise ValueError(f"shuttle_maneuver needs the six revolute joints of shuttle_arm(), "
                         f"model {model.name!r} has {joints.size}")
    nu = model.nu
    if maneuver.startswith("II"):
        steps = SHUTTLE_STEP_TORQUES * (1.0 if maneuver == "II-f" else 0.1)

        def step(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
            out = np.zeros(nu)
            if t < T / 2:
                out[joints] = steps
            return out

        return step, T
    theta_d, w = 0.4, 2 * np.pi / T
    q_joints = np.array([int(model.q_start[i]) for i in range(model.n_bodies)
                         if model.nu_joint[i] == 1])
    q, u, udot = model.neutral_configuration(), np.zeros(nu), np.zeros(nu)

    def rigid_inverse_dynamics(t: float, _q: np.ndarray, _u: np.ndarray) -> np.ndarray:
        out = np.zeros(nu)
        if t >= T:
            return out
        q[q_joints] = theta_d * (t / T - np.sin(w * t) / (2 * np.pi))
        u[joints] = theta_d * (1 - np.cos(w * t)) / T
        udot[joints] = theta_d * w * np.sin(w * t) / T
        out[joints] = inverse_dynamics(model, q, u, udot, fidelity="full")[joints]
        return out

    return rigid_inverse_dynamics, T


BUILTIN_MODELS: dict[str, Callable[[], Model]] = {
    "two_link_arm": two_link_arm,
    "spacecraft": spacecraft,
    "spinup_beam": spinup_beam,
}


def list_builtin_models() -> list[str]:
    """Names of the model files shipped in ``flexdyn/data`` (sorted)."""
    data = resources.files("flexdyn").joinpath("data")
    return sorted(p.name[:-5] for p in data.iterdir() if p.name.endswith(".json"))


def builtin_model(name: str) -> Model:
    """Load the shipped model file ``flexdyn/data/<name>.json``.

    It holds the model built by the function of the same name with its default arguments.
    ``KeyError`` listing the available names for an unknown ``name``.
    """
    names = list_builtin_models()
    if name not in names:
        raise KeyError(f"no built-in model {name!r}; available: {names}")
    ref = resources.files("flexdyn").joinpath("data").joinpath(f"{name}.json")
    with resources.as_file(ref) as path:
        return load_model(path)
