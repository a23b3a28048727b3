"""Numeric helpers shared by the tests: relative errors and closeness assertions.

One copy for the whole suite (import with ``from helpers import ...``; ``tests/`` is on
``sys.path``).  Random models and states live in :mod:`strategies`, the independent reference
implementations in :mod:`oracles`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.special

import flexdyn as fd

__all__ = ["PENDULUM", "RTOL", "TINY", "assert_close", "pendulum", "pendulum_period", "rel_err",
           "segment_spinup"]

#: Default relative tolerance of one flexdyn computation against another or a reference
#: (a few hundred operations of round-off on well-conditioned data).
RTOL = 1e-10
#: Smallest denominator of :func:`rel_err` (so that a vanishing reference compares exactly).
TINY = float(np.finfo(float).tiny)


def rel_err(got, ref, scale: float = 0.0) -> float:
    """``max |got − ref| / max(max |ref|, scale, tiny)`` over all entries (max-norm error
    relative to the size of ``ref``); ``0.0`` for empty arrays.

    ``scale`` is a floor of the denominator, for quantities that may vanish or be much
    smaller than their neighbours (e.g. ``P⁺`` of a body on a free joint, or bias forces
    near rest measured against ``max |M| max |u|²``).  The shapes must agree exactly (no
    broadcasting).  A NaN or infinity in either argument gives ``inf``, so that every
    comparison ``rel_err(...) < tol`` fails on it.
    """
    got, ref = np.asarray(got), np.asarray(ref)
    assert got.shape == ref.shape, f"shape {got.shape} != reference shape {ref.shape}"
    if ref.size == 0:
        return 0.0
    num = float(np.max(np.abs(got - ref)))
    denom = max(float(np.max(np.abs(ref))), float(scale), TINY)
    if not (math.isfinite(num) and math.isfinite(denom)):
        return math.inf
    return num / denom


def assert_close(got, ref, what: str, *, tol: float = RTOL, scale: float = 0.0) -> None:
    """Assert ``rel_err(got, ref, scale) <= tol``; the message names ``what`` and the error.

    ``tol`` and ``scale`` are keyword-only, so that a positional argument can never be
    taken for the other.
    """
    err = rel_err(got, ref, scale)
    assert err <= tol, f"{what}: relative error {err:.3e} > {tol:.0e}"


def massless_slider() -> fd.Model:
    """A revolute base carrying a massless prismatic slider at the tip: the slider's joint
    has no inertia, so the articulated inertia D of body 1 and the mass matrix are singular."""
    return (fd.ModelBuilder("slider")
            .add_body("base", None, joint={"type": "revolute", "axis": [0, 0, 1]},
                      rigid={"mass": 1.0, "com": [0.5, 0, 0],
                             "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]]})
            .add_body("slider", "base", joint={"type": "prismatic", "axis": [1, 0, 0]},
                      rigid={"mass": 0.0, "inertia": [[0.1, 0, 0], [0, 0.1, 0], [0, 0, 0.1]]})
            .build())


def euler_body(flexible: bool = False) -> fd.Model:
    """A body on an Euler-angle joint (3-2-1), whose speeds are the angular velocity: a
    quasi-velocity joint, neither its coordinates' rates nor a quaternion joint's; with
    ``flexible``, one bending mode of a point mass at 1 m."""
    flex = ({"nodes": [[1, 0, 0]], "node_masses": [1.0],
             "modes": [[0], [0], [0], [0], [1], [0]], "stiffness": [[4.0]]}
            if flexible else None)
    return fd.ModelBuilder("euler").add_body(
        "b", joint={"type": "euler", "sequence": "321"},
        rigid={"mass": 1.0, "inertia": np.eye(3)}, flex=flex).build()


PENDULUM = {"m": 2.0, "l": 0.7, "I_c": 0.05, "g": 9.81}


def pendulum() -> fd.Model:
    """A rigid pendulum about z, centre of mass at ``l`` along the body x axis, gravity −y:
    θ = 0 is horizontal, the bottom is θ = −π/2."""
    p = PENDULUM
    return (fd.ModelBuilder("pendulum", gravity=(0.0, -p["g"], 0.0))
            .add_body("bob", None, joint={"type": "revolute", "axis": [0, 0, 1]},
                      rigid={"mass": p["m"], "com": [p["l"], 0, 0],
                             "inertia": [[0.01, 0, 0], [0, p["I_c"], 0], [0, 0, p["I_c"]]]})
            .build())


def pendulum_period(amplitude: float) -> float:
    """Exact period of the pendulum swinging ``amplitude`` either side of the bottom:
    ``4 √(I_O / (m g l)) K(sin²(amplitude/2))``."""
    p = PENDULUM
    inertia = p["I_c"] + p["m"] * p["l"] ** 2
    return 4.0 * np.sqrt(inertia / (p["m"] * p["g"] * p["l"])) * scipy.special.ellipk(
        np.sin(amplitude / 2) ** 2)


def segment_spinup(n: int, t_eval: np.ndarray, hub_torque, *, mass: float = 12.0,
                   length: float = 10.0, EI: float = 1.4004e4) -> np.ndarray:
    """The spin-up beam of :func:`flexdyn.models.spinup_beam` as a geometrically exact chain
    of rigid segments: ``n`` planar revolute joints at ``(k + ½) h`` (``h = L/n``) with
    rotational springs ``EI/h`` (the curvature of a length ``h`` lumped at each), between
    ``n + 1`` uniform rigid segments (the two end ones ``h/2`` long, the root one clamped to
    the hub), driven by ``hub_torque(t, q, u)``, whose first entry is the hub's torque (the
    spin-up beam's :func:`flexdyn.models.spinup_torque`).  Large
    rotations, foreshortening and the centrifugal stiffening are exact; the discretization
    error is ``O(h²)``.  Returns the tip's deflection across the root segment (its y in the
    root segment's frame, m) at ``t_eval``."""
    mu, h = mass / length, length / n
    lengths = [h / 2] + [h] * (n - 1) + [h / 2]
    builder = fd.ModelBuilder("segments")
    for j, ell in enumerate(lengths):
        inertia = mu * ell**3 / 12
        builder.add_body(f"s{j}", f"s{j - 1}" if j else None,
                         joint={"type": "revolute", "axis": [0, 0, 1],
                                "placement": {"translation": [lengths[j - 1] if j else 0.0,
                                                              0, 0]}},
                         rigid={"mass": mu * ell, "com": [ell / 2, 0, 0],
                                "inertia": np.diag([1e-9, inertia, inertia]).tolist()})
    model = builder.build()

    def tau(t: float, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        out = -(EI / h) * q
        out[0] = hub_torque(t, q, u)[0]
        return out

    t_eval = np.asarray(t_eval, dtype=float)
    res = fd.simulate(model, np.zeros(model.nq), np.zeros(model.nu), (0.0, t_eval[-1]),
                      tau=tau, t_eval=t_eval,
                      integrator=fd.ScipyIVP("DOP853", rtol=1e-9, atol=1e-11))
    angles = np.cumsum(res.q[:, 1:], axis=1)  # of segments 1 … n against the root segment
    return np.sin(angles) @ np.asarray(lengths[1:])
