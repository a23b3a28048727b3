"""Compile the engine ahead of time (``python -m flexdyn compile``), with progress.

The engine's entries compile on their first call in an installation and are cached on disk
(:mod:`flexdyn.engine.caching`); :func:`precompile` makes those first calls on purpose, on
small built-in models, so that a session, a notebook or a test run that follows finds
everything cached.  Each task calls the public function a user would call, so it compiles
exactly the specializations those calls use.  The default tasks are a newcomer's first
hour — the demo's state derivative, :func:`~flexdyn.simulate`'s default integrator,
forward and inverse dynamics, the mass matrix, :func:`~flexdyn.linearize` (its compiled
derivatives, which its default takes once they are cached) and
:func:`~flexdyn.modal_analysis`; ``everything=True`` adds every other entry: the composite
and split methods, batches, hybrid dynamics, the joint wrenches, ``M⁻¹``, the energies, the
C function, rigid trees and loop closures.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .beam import beam_modes
from .chain import Model, ModelBuilder
from .control import COMPILED, linearize
from .dynamics import (
    assemble,
    bias_forces,
    forward_dynamics,
    forward_dynamics_derivatives,
    hybrid_dynamics,
    inverse_dynamics,
    joint_wrenches,
    mass_matrix,
    mass_matrix_inverse,
)
from .energy import total_energy
from .engine import Engine
from .modal import modal_analysis
from .models import two_link_arm
from .simulation import simulate

__all__ = ["Task", "precompile", "tasks"]


@dataclass(frozen=True)
class Task:
    """One first call: ``what`` it compiles (as a progress line names it) and ``run``."""

    what: str
    run: Callable[[], object]


def _state(model: Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A generic state ``(q, u, τ)`` of ``model`` (nonzero speeds and loads)."""
    q = model.neutral_configuration()
    return q, np.full(model.nu, 0.1), np.full(model.nu, 0.2)


def _rigid_chain() -> Model:
    """Three rigid links on revolute joints: the rigid tree's entries."""
    b = ModelBuilder("rigid chain", gravity=(0.0, -9.81, 0.0))
    parent = None
    for i in range(3):
        b.add_body(f"link{i}", parent, joint={"type": "revolute", "axis": [0, 0, 1],
                                              "placement": {"translation": [0.5 * (i > 0), 0,
                                                                            0]}},
                   rigid={"mass": 1.0, "com": [0.25, 0, 0], "inertia": np.eye(3) * 0.01})
        parent = f"link{i}"
    return b.build()


def _slider_crank() -> Model:
    """A crank, a flexible rod and a slider closed by a pin: the closed chain's entries."""
    rod = beam_modes(0.3, 0.162, EI_z=8.4, n_elements=4, n_modes=1)
    z = [0, 0, 1]
    return (ModelBuilder("slider-crank")
            .add_body("crank", None, joint={"type": "revolute", "axis": z},
                      rigid={"mass": 0.5, "com": [0.075, 0, 0],
                             "inertia": np.diag([1e-5, 1e-3, 1e-3])})
            .add_body("rod", "crank", flex=rod,
                      joint={"type": "revolute", "axis": z,
                             "placement": {"translation": [0.15, 0, 0]}})
            .add_body("slider", None, joint={"type": "prismatic", "axis": [1, 0, 0]},
                      rigid={"mass": 0.3, "com": [0, 0, 0], "inertia": np.eye(3) * 1e-4})
            .add_constraint("wrist", "pin", "rod", "slider", node=4, other_point=[0, 0, 0],
                            axis=z)
            .build())


def tasks(everything: bool = False) -> list[Task]:
    """The first calls :func:`precompile` makes, in order: a newcomer's first hour, and with
    ``everything`` every other entry of the engine."""
    arm = two_link_arm()
    q, u, tau = _state(arm)
    span = (0.0, 1e-3)
    first_hour = [
        Task("the state derivative (flexdyn demo, DOP853)",
             lambda: simulate(arm, t_span=span, tau=tau, integrator="DOP853")),
        Task("the compiled integrators (simulate's default)",
             lambda: simulate(arm, t_span=span, tau=tau)),
        Task("forward dynamics", lambda: forward_dynamics(arm, q, u, tau)),
        Task("inverse dynamics and bias forces",
             lambda: (inverse_dynamics(arm, q, u, tau), bias_forces(arm, q, u))),
        Task("the mass matrix", lambda: mass_matrix(arm, q)),
        Task("linearize (the derivatives of the dynamics)",
             lambda: linearize(arm, q, u, tau, derivative=COMPILED)),
        Task("modal_analysis", lambda: modal_analysis(arm)),
    ]
    if not everything:
        return first_hour
    batch_q, batch_u, batch_tau = (np.stack([a, a]) for a in (q, u, tau))
    chain = _rigid_chain()
    cq, cu, ctau = _state(chain)
    crank = _slider_crank()
    return first_hour + [
        Task("forward dynamics (composite, articulated-split)",
             lambda: [forward_dynamics(arm, q, u, tau, method=m)
                      for m in ("composite", "articulated-split")]),
        Task("batches (every method)",
             lambda: [forward_dynamics(arm, batch_q, batch_u, batch_tau, method=m)
                      for m in ("articulated", "composite", "articulated-split")]
             + [mass_matrix(arm, batch_q), inverse_dynamics(arm, batch_q, batch_u, batch_tau)]),
        Task("the generalized-α integrator",
             lambda: simulate(arm, t_span=span, tau=tau, integrator="generalized-alpha")),
        Task("hybrid dynamics",
             lambda: hybrid_dynamics(arm, q, u, tau, np.zeros(arm.nu),
                                     np.arange(arm.nu) == 0)),
        Task("the joint wrenches", lambda: joint_wrenches(arm, q, u, tau)),
        Task("the mass matrix inverse", lambda: mass_matrix_inverse(arm, q)),
        Task("the energies", lambda: total_energy(arm, q, u)),
        Task("the state derivative as a C function",
             lambda: Engine(arm).c_state_derivative()),
        Task("rigid trees",
             lambda: (forward_dynamics(chain, cq, cu, ctau),
                      forward_dynamics(chain, np.stack([cq, cq]), np.stack([cu, cu]),
                                       np.stack([ctau, ctau])),
                      simulate(chain, t_span=span, tau=ctau, integrator="DOP853"),
                      forward_dynamics_derivatives(chain, cq, cu, ctau))),
        Task("loop closures",
             lambda: [simulate(crank, *assemble(crank), t_span=span, integrator=integrator)
                      for integrator in ("DOP853", "auto")]),
    ]


def precompile(everything: bool = False, *,
               progress: Callable[[int, int, str, float | None], None] | None = None
               ) -> list[tuple[str, float]]:
    """Make the first calls of :func:`tasks` (``everything``: all of them) so that the
    engine's entries they use are compiled and cached; returns ``(what, seconds)`` per task.
    ``progress(k, n, what, seconds)`` is called as task ``k`` of ``n`` starts (``seconds``
    None) and when it ends."""
    done = []
    todo = tasks(everything)
    for k, task in enumerate(todo, start=1):
        if progress is not None:
            progress(k, len(todo), task.what, None)
        start = time.perf_counter()
        task.run()
        done.append((task.what, time.perf_counter() - start))
        if progress is not None:
            progress(k, len(todo), task.what, done[-1][1])
    return done
