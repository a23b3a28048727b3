"""Wrenches at nodes of flexible bodies (``f_nodes``) against independent references: the
generalized forces of the brute-force oracle's node velocities (virtual power), the static
tip deflection of a cantilever under a tip force (``P L³ / 3EI``), and consistency between
the per-state functions."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import flexdyn as fd
from flexdyn.beam import beam_modes
from helpers import assert_close
from oracles.brute_force import BruteModel
from strategies import models_and_states


def _first_node(model: fd.Model) -> tuple[int, int] | None:
    for i, body in enumerate(model.bodies):
        if body.n_nodes:
            return i, body.n_nodes - 1
    return None


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sample=models_and_states(max_bodies=4, max_modes=3))
def test_generalized_force_of_a_nodal_wrench_is_its_virtual_power(sample):
    """``−ΔC`` of a wrench ``w = [n; f]`` at a node equals ``J_ωᵀ n + J_vᵀ (R f)`` with the
    node's angular (node frame) and linear (inertial) partial velocities from the oracle."""
    model, q, u = sample.model, sample.q, sample.u
    key = _first_node(model)
    if key is None:
        return
    i, j = key
    w = np.random.default_rng(7).normal(size=6)
    got = (fd.bias_forces(model, q, u)
           - fd.bias_forces(model, q, u, f_nodes={(model.names[i], j): w}))
    brute = BruteModel(sample.d)
    _, _, R = brute.configuration(q)
    Jv, Jw, _ = brute.jacobians(q)
    e = sum(1 + b.nodes.shape[0] for b in brute.bodies[:i]) + 1 + j  # the node's element
    ref = Jw[e].T @ w[:3] + Jv[e].T @ (R[e] @ w[3:])
    assert_close(got, ref, "generalized force of the nodal wrench", tol=1e-8,
                 scale=float(np.max(np.abs(w))))


@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_static_tip_deflection_of_a_cantilever(fidelity):
    """A tip force ``P`` on a clamped uniform beam: ``K η = E_tipᵀ [0; P]`` gives the tip
    deflection ``P L³ / (3 E I)`` (Euler–Bernoulli), to the modal truncation."""
    L, EI, P = 1.5, 250.0, 2.0
    beam = beam_modes(L, 2.0, EI_y=EI, EI_z=EI, n_elements=24, n_modes=6)
    model = (fd.ModelBuilder("cantilever")
             .add_body("beam", None, joint={"type": "fixed"}, flex=beam.to_flex_dict())
             .build())
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    force = np.array([0, 0, 0, 0, P, 0])  # along the body y axis, in the tip node's frame
    g = -fd.bias_forces(model, q, z, fidelity, f_nodes={("beam", -1): force})
    eta = np.linalg.solve(model.bodies[0].K, g)
    deflection = model.bodies[0].Pi_t[-1] @ eta
    assert abs(deflection[1] - P * L**3 / (3 * EI)) < 2e-3 * P * L**3 / (3 * EI)
    assert abs(deflection[0]) < 1e-12 and abs(deflection[2]) < 1e-12


def test_per_state_functions_agree_with_nodal_loads():
    model = fd.models.builtin_model("spacecraft")
    rng = np.random.default_rng(2)
    q = model.normalize_configuration(model.neutral_configuration()
                                      + 0.05 * rng.normal(size=model.nq))
    u, tau = rng.normal(size=model.nu), rng.normal(size=model.nu)
    loads = {("array_pos", -1): rng.normal(size=6), (2, 3): rng.normal(size=6)}
    udot = fd.forward_dynamics(model, q, u, tau, f_nodes=loads)
    assert_close(fd.inverse_dynamics(model, q, u, udot, f_nodes=loads), tau, "ID(FD)",
                 scale=1.0)
    M = fd.mass_matrix(model, q)
    C = fd.bias_forces(model, q, u, f_nodes=loads)
    assert_close(M @ udot + C, tau, "M u̇ + C", scale=1.0)
    mask = np.zeros(model.nu, dtype=bool)
    mask[:6] = True  # the hub's motion prescribed, the arrays free
    a, T = fd.hybrid_dynamics(model, q, u, tau, udot, mask, f_nodes=loads)
    assert_close(a, udot, "hybrid u̇", scale=1.0)
    assert_close(T, tau, "hybrid τ", scale=1.0)
    W = fd.joint_wrenches(model, q, u, udot, f_nodes=loads)
    assert W.shape == (3, 6) and np.all(np.isfinite(W))
    with pytest.raises(ValueError, match=r"no body 'boom'"):
        fd.forward_dynamics(model, q, u, tau, f_nodes={("boom", 0): np.zeros(6)})
    with pytest.raises(ValueError, match=r"node 99 out of range for body 'array_pos'"):
        fd.forward_dynamics(model, q, u, tau, f_nodes={("array_pos", 99): np.zeros(6)})
    with pytest.raises(ValueError, match=r"must be a finite wrench of shape \(6,\)"):
        fd.forward_dynamics(model, q, u, tau, f_nodes={("array_pos", 0): np.zeros(3)})



def test_bad_nodal_loads_are_named_and_complex_ones_run_the_reference():
    model = fd.models.two_link_arm()
    q, u = model.neutral_configuration(), np.zeros(model.nu)
    for loads, message in (({("link2", -1): [0, 0, np.nan, 0, 0, 0]},
                            r"f_nodes\[\('link2', -1\)\] contains non-finite values"),
                           ({("link2", 1.5): np.ones(6)}, "the node must be an integer index"),
                           ({("link2", True): np.ones(6)}, "the node must be an integer index"),
                           ({(True, 1): np.ones(6)}, "no body True")):
        with pytest.raises(ValueError, match=message):
            fd.forward_dynamics(model, q, u, f_nodes=loads)
    # an array is not a mapping of nodes, whichever function and path it reaches
    array = np.ones(6)
    udot = np.zeros(model.nu)
    for call in (lambda: fd.forward_dynamics(model, q, u, f_nodes=array),
                 lambda: fd.forward_dynamics(model, q[None], u[None], f_nodes=array),
                 lambda: fd.inverse_dynamics(model, q, u, udot, f_nodes=array),
                 lambda: fd.bias_forces(model, q, u, f_nodes=array),
                 lambda: fd.bind(model).forward_dynamics(q, u, f_nodes=array),
                 lambda: fd.hybrid_dynamics(model, q, u, np.zeros(model.nu), udot,
                                            np.zeros(model.nu, bool), f_nodes=array)):
        with pytest.raises(ValueError, match="f_nodes must be a mapping .* got ndarray"):
            call()
    craft = fd.models.spacecraft()
    with pytest.raises(ValueError, match="body 'hub' is rigid"):
        fd.bias_forces(craft, craft.neutral_configuration(), np.zeros(craft.nu),
                       f_nodes={("hub", 0): np.ones(6)})
    # a complex step along a nodal force: the reference's arithmetic, on either backend
    h, force = 1e-20, np.array([0.0, 0.0, 0.3, 0.0, 1.0, 0.0])
    step = {("link2", -1): force + 1j * h * np.eye(6)[4]}
    slope = fd.forward_dynamics(model, q, u, f_nodes=step).imag / h
    d = 1e-6
    plus, minus = ({("link2", -1): force + s * d * np.eye(6)[4]} for s in (1, -1))
    central = (fd.forward_dynamics(model, q, u, f_nodes=plus)
               - fd.forward_dynamics(model, q, u, f_nodes=minus)) / (2 * d)
    assert_close(slope, central, "∂u̇/∂f (complex step)", tol=1e-7, scale=1.0)
