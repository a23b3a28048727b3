"""Modelling conveniences: beams from material and section, ``parent_node="tip"``,
payloads, per-body methods by name, result accessors, argument hints, pickling.

Independent checks: section properties by numerical integration over the section and
against the published torsion constants of rectangles; a cantilever of aluminium tube
against its closed-form first frequency; models built by hand.
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.beam import ALUMINIUM, STEEL, Material, beam_modes, circle, rectangle, tube
from helpers import rel_err


def _integrated(r_in: float, r_out: float) -> tuple[float, float]:
    """Area and ``∫ z² dA`` of an annulus by the midpoint rule in polar coordinates."""
    r = np.linspace(r_in, r_out, 2001)
    r = (r[1:] + r[:-1]) / 2
    dr = (r_out - r_in) / r.size
    phi = (np.arange(720) + 0.5) * 2 * np.pi / 720
    R, P = np.meshgrid(r, phi)
    dA = R * dr * (2 * np.pi / 720)
    return float(dA.sum()), float(((R * np.sin(P)) ** 2 * dA).sum())


def test_sections():
    t = tube(0.02, 0.003)
    A, Iy = _integrated(0.017, 0.02)
    assert rel_err(t.A, A) < 1e-6 and rel_err(t.Iy, Iy) < 1e-6 and t.Iz == t.Iy
    assert t.J == t.Iy + t.Iz  # the polar moment of a circular section
    c = circle(0.01)
    assert rel_err(c.Iy, math.pi * 0.01**4 / 4) < 1e-12
    # torsion constants J = β a b³ (Timoshenko & Goodier): β = 0.1406 (square), 0.291 (5:1)
    assert abs(rectangle(0.02, 0.02).J / (0.1406 * 0.02**4) - 1) < 5e-3
    assert abs(rectangle(0.1, 0.02).J / (0.291 * 0.1 * 0.02**3) - 1) < 5e-3
    r = rectangle(0.1, 0.02)  # width along y, height along z
    assert rel_err(r.Iy, 0.1 * 0.02**3 / 12) < 1e-12 and rel_err(r.Iz, 0.02 * 0.1**3 / 12) < 1e-12
    assert abs(STEEL.G - 210e9 / 2.6) < 1.0 and Material(1e9, 1e3).G is None
    with pytest.raises(ValueError, match="tube: wall=0.03 is thicker"):
        tube(0.02, 0.03)
    with pytest.raises(ValueError, match="Material: rho=-1 must be positive"):
        Material(1e9, -1)


def test_beam_from_material_and_section():
    """An aluminium tube cantilever: the first bending frequency is
    ``1.8751² √(EI/μL⁴) / 2π`` (Euler–Bernoulli) as the mesh is refined; explicit keywords
    win over the section's."""
    sec, L = tube(0.01, 0.002), 0.8
    beam = beam_modes(L, material=ALUMINIUM, section=sec, n_elements=16, n_modes=2)
    mu, EI = ALUMINIUM.rho * sec.A, ALUMINIUM.E * sec.Iy
    f1 = 1.8751**2 * math.sqrt(EI / (mu * L**4)) / (2 * math.pi)
    assert np.allclose(beam.frequencies / (2 * math.pi), f1, rtol=2e-3)  # both planes
    stiff = beam_modes(L, material=ALUMINIUM, section=sec, EI_y=4 * EI, n_elements=16,
                       n_modes=2)
    assert abs(stiff.frequencies[1] / beam.frequencies[1] - 2.0) < 1e-3
    with pytest.raises(ValueError, match="material and section together"):
        beam_modes(L, material=ALUMINIUM)


def test_builder_tip_and_payload():
    beam = beam_modes(1.0, 2.0, EI_z=50.0, n_elements=4, n_modes=2)
    rev = {"type": "revolute", "axis": [0, 0, 1]}

    def two(parent_node, payload: bool) -> fd.Model:
        b = (fd.ModelBuilder("two").add_body("a", joint=rev, flex=beam)
             .add_body("b", "a", joint={**rev, "parent_node": parent_node}, flex=beam))
        if payload:
            b.add_payload("b", 0.7, np.diag([0.01, 0.02, 0.03]))
        return b.build()

    assert two("tip", False).to_dict() == two(4, False).to_dict()
    heavy, light = two("tip", True), two(4, False)
    assert abs(heavy.bodies[1].total_mass - light.bodies[1].total_mass - 0.7) < 1e-12
    by_hand = light.to_dict()
    by_hand["bodies"][1]["flex"]["node_masses"][-1] += 0.7
    inertias = np.zeros((5, 3, 3))  # the beam's nodes have no rotary inertia of their own
    inertias[-1] = np.diag([0.01, 0.02, 0.03])
    by_hand["bodies"][1]["flex"]["node_inertias"] = inertias.tolist()
    assert fd.Model.from_dict(by_hand).to_dict() == heavy.to_dict()
    with pytest.raises(ValueError, match="joint parent_node: body 'a' has no nodes"):
        (fd.ModelBuilder("x").add_body("a", joint=rev, rigid={"mass": 1.0})
         .add_body("b", "a", joint={**rev, "parent_node": "tip"}))
    with pytest.raises(ValueError, match="a node is an index or 'tip'"):
        fd.ModelBuilder("x").add_body("a", joint=rev, flex=beam).add_payload("a", 1.0, node="end")
    with pytest.raises(ValueError, match="mass must be a finite number"):
        fd.ModelBuilder("x").add_body("a", joint=rev, flex=beam).add_payload("a", -1.0)


def test_per_body_methods_take_names():
    arm = fd.models.two_link_arm(n_modes=2)
    q = np.arange(arm.nq, dtype=float)
    assert arm.q_slice("link2") == arm.q_slice(1) == arm.q_slice(-1)
    assert np.array_equal(arm.eta(q, "link2"), arm.eta(q, 1))
    assert np.array_equal(arm.u_joint(q, "link1"), arm.u_joint(q, 0))
    with pytest.raises(ValueError, match=r"no body named 'link3'; bodies are \['link1', 'link2'\]"):
        arm.q_slice("link3")
    with pytest.raises(ValueError, match="body index 2 out of range"):
        arm.u_slice(2)


def test_result_accessors_and_hints():
    arm = fd.models.two_link_arm()
    res = fd.simulate(arm, t_span=(0.0, 0.2), tau=np.array([1.0, 0.0, 0.0, 0.0]))
    text = repr(res)
    assert "\n" not in text and text.startswith("SimulationResult(model 'two_link_arm', ")
    traj = res.body_trajectory("link2")
    assert traj.position.shape == (len(res), 3) and traj.rotation.shape == (len(res), 3, 3)
    k = len(res) // 2
    pose = res.body_pose("link2", k)
    assert rel_err(traj.position[k], pose.p) < 1e-14 and rel_err(traj.rotation[k], pose.R) < 1e-14
    with pytest.raises(ValueError, match=r"did you mean t_span=\(0, 1\)"):
        fd.simulate(fd.models.spacecraft(), (0, 1))


def test_models_and_results_pickle():
    """Models and results travel to worker processes: a pickled model gives the same
    dynamics, a pickled result the same histories."""
    sc = fd.models.spacecraft()
    back = pickle.loads(pickle.dumps(sc))
    q, u = sc.neutral_configuration(), np.linspace(-1, 1, sc.nu)
    assert np.array_equal(fd.forward_dynamics(back, q, u), fd.forward_dynamics(sc, q, u))
    res = fd.simulate(fd.models.two_link_arm(), t_span=(0.0, 0.05))
    again = pickle.loads(pickle.dumps(res))
    assert np.array_equal(again.q, res.q) and again.model.to_dict() == res.model.to_dict()
