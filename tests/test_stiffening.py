"""Geometric stiffening: the consistent and exact body models (Damaren & Sharf Sec 2.3.1).

Independent checks: the frequencies of a rotating cantilever against a rotating
Euler–Bernoulli beam solved here by Hermite finite elements with the centrifugal tension
``ρAΩ²(L² − x²)/2`` (itself checked against the published uniform-beam values); the
centrifugal stretch ``ρAΩ²L³/(3EA)``; energy conservation of the exact model; the elastic
force as the complex-step gradient of the strain energy; the quartic energy of a bent beam
by direct integration, and its condensed form by eliminating a complete stretch basis; the
spin-up beam following its profile, and bending as a geometrically exact chain of rigid
segments does; a static tip load bending a slender cantilever as beam theory says.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.optimize

import flexdyn as fd
from flexdyn.beam import beam_modes, geometric_stiffness
from flexdyn.stiffening import ConsistentBodyModel, ExactBodyModel
from flexdyn.terms import body_models
from helpers import segment_spinup

# published first flapwise frequencies of a uniform rotating cantilever (no hub radius) in
# units of sqrt(EI / (ρA L⁴)) for the rotation parameters Ω = 1 … 5 in the same units
PUBLISHED_FLAP = {1: 3.6816, 2: 4.1373, 3: 4.7973, 4: 5.5850, 5: 6.4495}


def rotating_beam_frequencies(omega: float, n_el: int = 40) -> tuple[float, float]:
    """First flapwise (out of plane) and lagwise (in plane) frequencies of a uniform rotating
    cantilever, EI = ρA = L = 1: Hermite elements, consistent mass, the geometric stiffness
    of the centrifugal tension ``T(x) = Ω²(1 − x²)/2``; in plane also the spin softening
    ``−Ω² M``."""
    h = 1.0 / n_el
    n = 2 * (n_el + 1)
    K, KG, M = np.zeros((n, n)), np.zeros((n, n)), np.zeros((n, n))
    xg, wg = np.polynomial.legendre.leggauss(6)
    xg, wg = 0.5 * (xg + 1), 0.5 * wg
    for e in range(n_el):
        s = slice(2 * e, 2 * e + 4)
        for xi, w in zip(xg, wg, strict=True):
            N = np.array([1 - 3 * xi**2 + 2 * xi**3, h * (xi - 2 * xi**2 + xi**3),
                          3 * xi**2 - 2 * xi**3, h * (-xi**2 + xi**3)])
            dN = np.array([-6 * xi + 6 * xi**2, h * (1 - 4 * xi + 3 * xi**2),
                           6 * xi - 6 * xi**2, h * (-2 * xi + 3 * xi**2)]) / h
            d2N = np.array([-6 + 12 * xi, h * (-4 + 6 * xi), 6 - 12 * xi,
                            h * (-2 + 6 * xi)]) / h**2
            x = (e + xi) * h
            K[s, s] += w * h * np.outer(d2N, d2N)
            KG[s, s] += w * h * 0.5 * omega**2 * (1 - x**2) * np.outer(dN, dN)
            M[s, s] += w * h * np.outer(N, N)
    free = slice(2, n)  # clamped at x = 0
    K, KG, M = K[free, free], KG[free, free], M[free, free]
    flap = np.sqrt(scipy.linalg.eigh(K + KG, M, eigvals_only=True)[0])
    lag = np.sqrt(scipy.linalg.eigh(K + KG - omega**2 * M, M, eigvals_only=True)[0])
    return float(flap), float(lag)


@pytest.mark.parametrize("omega", sorted(PUBLISHED_FLAP))
def test_rotating_beam_solver_matches_the_published_values(omega):
    flap, lag = rotating_beam_frequencies(omega)
    assert flap == pytest.approx(PUBLISHED_FLAP[omega], rel=2e-4)
    assert lag == pytest.approx(np.sqrt(flap**2 - omega**2), rel=1e-7)


def spinning_beam(n_axial: int, n_elements: int = 10, EA: float = 1e4,
                  basis: str = "lumped", n_bending: int = 1) -> fd.Model:
    """A uniform cantilever (EI = ρA = L = 1) on a hub turning about z; ``n_bending`` modes
    in and out of the plane of rotation each, ``n_axial`` stretch modes."""
    beam = beam_modes(1.0, 1.0, EI_y=1.0, EI_z=1.0, EA=EA, n_elements=n_elements,
                      n_modes={"transverse_y": n_bending, "transverse_z": n_bending,
                               "axial": n_axial},
                      basis=basis)
    return (fd.ModelBuilder("spinning")
            .add_body("beam", None, joint={"type": "revolute", "axis": [0.0, 0.0, 1.0]},
                      flex=beam.to_flex_dict())
            .build())


def steady_spin(model: fd.Model, omega: float, fidelity: str):
    """The relative equilibrium ``η*`` at the prescribed hub rate ``Ω`` and the frequencies
    (rad/s, ascending) of the small motions about it, from the hybrid dynamics."""
    m = model.nu - 1
    mask = np.zeros(model.nu, dtype=bool)
    mask[0] = True

    def modal_acceleration(eta, eta_dot):
        udot, _ = fd.hybrid_dynamics(model, np.r_[0.0, eta], np.r_[omega, eta_dot], None,
                                     np.zeros(model.nu), mask, fidelity=fidelity)
        return udot[1:]

    eta = scipy.optimize.fsolve(lambda e: modal_acceleration(e, np.zeros(m)), np.zeros(m),
                                xtol=1e-13)
    A = np.zeros((2 * m, 2 * m))
    A[:m, m:] = np.eye(m)
    h = 1e-7
    for k in range(2 * m):
        dx = np.zeros(2 * m)
        dx[k] = h
        A[m:, k] = (modal_acceleration(eta + dx[:m], dx[m:])
                    - modal_acceleration(eta - dx[:m], -dx[m:])) / (2 * h)
    return eta, np.sort(np.abs(np.linalg.eigvals(A).imag))[::2]


@pytest.mark.parametrize("basis, n_elements", [("lumped", 10), ("natural", 20), ("finite", 8)])
def test_rotating_cantilever_flap_and_lag_frequencies(basis, n_elements):
    """The exact model with 3 stretch modes, in every basis: first flap and lag frequencies
    within 2 % of the rotating-beam solution, below and above the non-rotating first
    frequency (3.516); the full model has no stiffening (its flap frequency falls
    instead)."""
    model = spinning_beam(n_axial=3, n_elements=n_elements, basis=basis)
    body = model.bodies[0]
    flap_mode = int(np.flatnonzero(np.abs(body.Pi_t[:, 2]).max(axis=0) > 0)[0])
    for omega in (1.0, 3.0, 5.0):
        flap_ref, lag_ref = rotating_beam_frequencies(omega)
        _, w = steady_spin(model, omega, "exact")
        lag, flap = w[0], w[1]
        assert flap == pytest.approx(flap_ref, rel=0.02), omega
        assert lag == pytest.approx(lag_ref, rel=0.02), omega
    _, w_full = steady_spin(model, 3.0, "full")
    assert w_full[1] < 3.52  # no stiffening: spin only softens the beam in "full"
    assert flap_mode in (0, 1)


@pytest.mark.parametrize("basis, n_elements, rel", [("lumped", 10, 0.01), ("natural", 20, 1e-3)])
def test_centrifugal_stretch(basis, n_elements, rel):
    """At a steady spin the stretch modes take the tip out by ``ρAΩ²L³/(3EA)``."""
    EA, omega = 1e4, 3.0
    model = spinning_beam(n_axial=3, n_elements=n_elements, EA=EA, basis=basis)
    eta, _ = steady_spin(model, omega, "exact")
    tip = model.bodies[0].Pi_t[-1] @ eta
    assert tip[0] == pytest.approx(omega**2 / (3 * EA), rel=rel)
    assert abs(tip[1]) < 1e-9 and abs(tip[2]) < 1e-9


@pytest.mark.slow
def test_the_exact_model_conserves_energy_and_the_consistent_one_does_not():
    """Free motion from a deformed state, no damping: the exact model's energy is constant
    to integration accuracy, the consistent model's is not."""
    beam = beam_modes(1.0, 1.0, EI_y=2.0, EI_z=1.0, EA=50.0, n_elements=6,
                      n_modes={"transverse_y": 1, "transverse_z": 1, "axial": 1})
    model = (fd.ModelBuilder("two beams")
             .add_body("b0", None, joint={"type": "revolute", "axis": [0.0, 0.0, 1.0]},
                       flex=beam.to_flex_dict())
             .add_body("b1", "b0", joint={"type": "revolute", "axis": [0.0, 1.0, 0.0],
                                           "parent_node": 6}, flex=beam.to_flex_dict())
             .build())
    q0 = model.neutral_configuration()
    q0[1:4] = [0.25, -0.2, 0.01]
    q0[5:8] = [-0.2, 0.3, 0.02]
    u0 = np.zeros(model.nu)
    u0[[0, 4]] = [2.0, -1.5]
    kw = dict(t_span=(0.0, 2.0), rtol=1e-10, atol=1e-12, t_eval=np.linspace(0.0, 2.0, 41))
    exact = fd.simulate(model, q0, u0, fidelity="exact", **kw)
    consistent = fd.simulate(model, q0, u0, fidelity="consistent", **kw)
    assert np.max(np.abs(exact.energy_balance_error)) < 1e-6
    assert np.max(np.abs(consistent.energy_balance_error)) > 1e-3
    full = fd.simulate(model, q0, u0, fidelity="full", **kw)
    assert np.max(np.abs(full.q - exact.q)) > 1e-3  # the stiffening acts


def test_elastic_force_is_the_gradient_of_the_strain_energy():
    beam = beam_modes(2.0, 3.0, EI_y=400.0, EI_z=300.0, EA=5e4, GJ=200.0,
                      polar_inertia_per_length=0.01, n_elements=5, n_modes=7)
    model = (fd.ModelBuilder("beam")
             .add_body("beam", None, joint={"type": "revolute", "axis": [0.0, 0.0, 1.0]},
                       flex=beam.to_flex_dict())
             .build())
    bm = body_models(model, "exact")[0]
    assert isinstance(bm, ExactBodyModel)
    K1, K2 = beam.geometric_stiffness_1, beam.geometric_stiffness_2
    for axes in ((1, 0, 2), (2, 1, 0), (0, 2, 1)):
        np.testing.assert_allclose(K1, K1.transpose(axes), rtol=0, atol=1e-9 * np.abs(K1).max())
    for axes in ((1, 0, 2, 3), (0, 2, 1, 3), (3, 1, 2, 0)):
        np.testing.assert_allclose(K2, K2.transpose(axes), rtol=0, atol=1e-9 * np.abs(K2).max())
    rng = np.random.default_rng(3)
    eta = rng.normal(0.0, 0.05, 7)
    h = 1e-30
    gradient = np.array([bm.strain_energy(eta + 1j * h * e).imag / h for e in np.eye(7)])
    force = bm.elastic_force(eta, np.zeros(7))
    np.testing.assert_allclose(force, gradient, rtol=1e-12, atol=1e-12 * np.abs(force).max())
    assert np.abs(force - beam.stiffness @ eta).max() > 1e-6 * np.abs(force).max()


def test_quartic_energy_of_a_bent_beam_by_direct_integration():
    """A beam bent in one plane and twisted: ``U₄ = ⅛ ∫ EA (v'² + r_p² φ'²)² dx`` integrated
    on a fine grid of the element interpolation (no stretch: ``U₃ = 0``)."""
    L, EA, rp2 = 2.0, 1e3, 0.01
    beam = beam_modes(L, 1.0, EI_z=5.0, GJ=3.0, polar_inertia_per_length=rp2, n_elements=4,
                      n_modes=3)
    K1, K2 = geometric_stiffness(beam.modes, beam.nodes[:, 0], EA, rp2, membrane="modal")
    eta = np.array([0.3, -0.2, 0.1])
    Pi = beam.modes.reshape(-1, 6, 3) @ eta  # node [rx, ry, rz, tx, ty, tz]
    h = L / 4
    x = np.linspace(0.0, 1.0, 2001)
    U4 = 0.0
    for e in range(4):
        v1, r1, v2, r2 = Pi[e, 4], Pi[e, 2], Pi[e + 1, 4], Pi[e + 1, 2]
        coeffs = np.polynomial.polynomial.Polynomial  # v(ξ) as a cubic in ξ
        H = [coeffs([1, 0, -3, 2]), coeffs([0, h, -2 * h, h]), coeffs([0, 0, 3, -2]),
             coeffs([0, 0, -h, h])]
        v = v1 * H[0] + r1 * H[1] + v2 * H[2] + r2 * H[3]
        dv = v.deriv()(x) / h
        dphi = (Pi[e + 1, 0] - Pi[e, 0]) / h
        U4 += np.trapezoid(EA / 8 * (dv**2 + rp2 * dphi**2) ** 2, x * h)
    assert np.einsum("ijk,i,j,k", K1, eta, eta, eta) == pytest.approx(0.0, abs=1e-12)
    assert np.einsum("ijkl,i,j,k,l", K2, eta, eta, eta, eta) / 24 == pytest.approx(U4,
                                                                                   rel=1e-6)


def membrane_energy(beam, eta: np.ndarray) -> float:
    """``½ η_sᵀ K0_ss η_s + K1·η³/3! + K2·η⁴/4!``: the membrane part of a beam's strain
    energy (its stretch modes' linear stiffness and the stiffening tensors)."""
    s = beam.axial_modes
    return (0.5 * eta[s] @ beam.stiffness[np.ix_(s, s)] @ eta[s]
            + np.einsum("ijk,i,j,k", beam.geometric_stiffness_1, eta, eta, eta) / 6
            + np.einsum("ijkl,i,j,k,l", beam.geometric_stiffness_2, eta, eta, eta, eta) / 24)


@pytest.mark.parametrize("basis", ["lumped", "finite"])
def test_condensed_membrane_energy_is_the_complete_stretch_basis_eliminated(basis):
    """The condensed membrane energy with ``k`` stretch modes equals the modal (Damaren &
    Sharf) energy of the same mesh with *every* stretch mode, minimized over the stretch
    coordinates beyond the ``k`` (a quadratic minimum, solved here), less its minimum over
    all of them (what the mesh's element interpolation cannot relax): the axial
    displacement the ``k`` modes cannot take relaxes as far as the mesh allows.  Without
    load the condensed energy's minimum over the ``k`` stretch coordinates is 0 — bending
    stores no membrane energy, as in an inextensible beam."""
    L, ne, k = 2.0, 6, 2
    kw = dict(EI_y=3.0, EI_z=5.0, EA=4e3, n_elements=ne, basis=basis)
    bend = {"transverse_y": 2, "transverse_z": 1}
    few = beam_modes(L, 1.5, **kw, n_modes={**bend, "axial": k})
    n_axial = ne  # the mesh's stretch modes: one per element
    every = beam_modes(L, 1.5, **kw, n_modes={**bend, "axial": n_axial}, membrane="modal")
    fb, eb = np.array(few.families), np.array(every.families)
    np.testing.assert_allclose(few.modes[:, fb != "axial"], every.modes[:, eb != "axial"],
                               atol=1e-12)
    np.testing.assert_allclose(few.modes[:, fb == "axial"],
                               every.modes[:, eb == "axial"][:, :k], atol=1e-12)
    rng = np.random.default_rng(3)
    bent, kept = 0.2 * rng.standard_normal(3), 1e-3 * rng.standard_normal(k)

    def modal_minimum(free: np.ndarray) -> float:
        """The modal energy minimized over the stretch coordinates ``free`` (indices into
        the stretch modes), the others at ``kept`` (quadratic in them: one linear solve)."""
        eta = np.zeros(every.n_modes)
        eta[eb != "axial"] = bent
        axial = np.flatnonzero(eb == "axial")
        eta[axial[:k]] = kept
        z = axial[free]
        eta[z] = 0.0
        grad = np.zeros(z.size)
        hess = np.zeros((z.size, z.size))
        for j in range(z.size):  # the energy is quadratic in the stretch coordinates
            e = np.zeros(every.n_modes)
            e[z[j]] = 1.0
            up, down = membrane_energy(every, eta + e), membrane_energy(every, eta - e)
            grad[j] = (up - down) / 2
            hess[j, j] = up + down - 2 * membrane_energy(every, eta)
            for i in range(j):
                f = np.zeros(every.n_modes)
                f[z[i]] = 1.0
                hess[i, j] = hess[j, i] = (membrane_energy(every, eta + e + f)
                                           - membrane_energy(every, eta + e)
                                           - membrane_energy(every, eta + f)
                                           + membrane_energy(every, eta))
        eta[z] = np.linalg.solve(hess, -grad)
        return membrane_energy(every, eta)

    eta = np.zeros(few.n_modes)
    eta[fb != "axial"], eta[fb == "axial"] = bent, kept
    beyond, residual = modal_minimum(np.arange(k, n_axial)), modal_minimum(np.arange(n_axial))
    assert residual < 0.05 * beyond  # nearly all of the locked energy is relaxable
    assert membrane_energy(few, eta) == pytest.approx(beyond - residual, rel=1e-9)
    eta[fb == "axial"] = 0.0
    s = few.axial_modes
    c = np.einsum("sjk,j,k->s", few.geometric_stiffness_1[s], eta, eta) / 2
    eta[s] = -np.linalg.solve(few.stiffness[np.ix_(s, s)], c)  # the stretch at rest
    assert abs(membrane_energy(few, eta)) < 1e-12 * beyond


def test_spinup_bends_as_a_chain_of_rigid_segments():
    """Damaren & Sharf's torque-driven spin-up (5 s), exact model, natural basis with two
    bending and one or two stretch modes: the largest bending is a geometrically exact
    chain of rigid segments with bending springs (Richardson-extrapolated from 10 and 20
    segments) within 1 % with the default, condensed, membrane energy; the paper's modal
    one locks and bends about a quarter as much."""
    t_eval = np.linspace(0.0, 5.0, 501)
    flexible = {}
    for membrane in ("condensed", "modal"):
        for n_axial in (1, 2):
            model = fd.models.spinup_beam(basis="natural", n_elements=40, n_axial=n_axial,
                                          membrane=membrane)
            res = fd.simulate(model, t_span=(0.0, 5.0), tau=fd.models.spinup_torque(model),
                              t_eval=t_eval, integrator=fd.RadauIIA(rtol=1e-8, atol=1e-10))
            flexible[membrane, n_axial] = np.max(np.abs(res.deflection("beam")[:, 1]))
    torque = fd.models.spinup_torque(fd.models.spinup_beam(basis="natural", n_elements=40))
    coarse, fine = (np.max(np.abs(segment_spinup(n, t_eval, torque))) for n in (10, 20))
    exact = fine + (fine - coarse) / 3
    assert abs(fine - coarse) < 1e-2 * exact  # the chain has converged to O(h²)
    for n_axial in (1, 2):
        assert abs(flexible["condensed", n_axial] / exact - 1) < 1e-2, n_axial
        assert flexible["modal", n_axial] < 0.5 * exact, n_axial


def test_slender_cantilever_bends_as_beam_theory_under_a_tip_load():
    """A static tip force that bends a cantilever of ``EA L²/EI = 8000`` by 2.7 % of its
    length (``fd.equilibrium``, exact model, four bending modes): within 1 % of
    ``P L³/3EI`` with 0, 1, 2 or 4 stretch modes in the default, condensed, form; the modal
    form locks (below 0.9 of it with up to four stretch modes)."""
    L, EI, slender, P = 2.0, 100.0, 8000.0, 0.027 * 3 * 100.0 / 4.0
    for membrane in ("condensed", "modal"):
        for n_axial in (0, 1, 2, 4):
            beam = beam_modes(L, 1.0, EI_y=EI, EA=slender * EI / L**2, n_elements=32,
                              n_modes={"transverse_z": 4, "axial": n_axial},
                              membrane=membrane)
            model = fd.ModelBuilder("cantilever").add_body(
                "beam", joint={"type": "fixed"}, flex=beam.to_flex_dict()).build()
            eq = fd.equilibrium(model, f_nodes={("beam", -1): [0, 0, 0, 0, 0, -P]})
            ratio = -(model.bodies[0].Pi_t[-1][2] @ model.eta(eq.q, 0)) / (P * L**3 / 3 / EI)
            if membrane == "condensed":
                assert abs(ratio - 1) < 1e-2, n_axial
            else:
                assert ratio < 0.9, n_axial


def test_spinup_beam_follows_its_profile_with_stiffening():
    """Damaren & Sharf's spin-up beam (the built-in model with its defaults) under the
    torque of its rigid-body profile: with the default fidelity, the exact model, the hub
    rate reaches the profile's 6 rad/s and the tip bends by centimetres; the full model (no
    stiffening) stalls near 3.8 rad/s and bends by metres."""
    model = fd.models.spinup_beam()
    torque = fd.models.spinup_torque(model)
    kw = dict(t_span=(0.0, 15.0), tau=torque, rtol=1e-6, atol=1e-8, t_eval=[15.0])
    exact = fd.simulate(model, **kw)  # the default fidelity, "exact"
    assert exact.fidelity == fd.DEFAULT_FIDELITY == "exact"
    assert exact.u[-1, 0] == pytest.approx(6.0, rel=0.05)
    assert np.abs(exact.deflection("beam")[-1, 1]) < 0.5
    full = fd.simulate(model, fidelity="full", **kw)
    assert full.u[-1, 0] < 4.0


def test_bodies_without_stiffening_data_give_the_full_terms():
    model = fd.models.two_link_arm(n_modes=2)
    assert model.bodies[0].K1 is None
    rng = np.random.default_rng(0)
    q, u, tau = rng.normal(size=model.nq), rng.normal(size=model.nu), rng.normal(size=model.nu)
    full = fd.forward_dynamics(model, q, u, tau)
    for fidelity in ("consistent", "exact"):
        np.testing.assert_array_equal(fd.forward_dynamics(model, q, u, tau, fidelity=fidelity),
                                      full)
        assert fd.energy.energies(model, q, u, fidelity) == fd.energy.energies(model, q, u)


def test_consistent_model_leaves_the_stretch_rows_alone():
    model = fd.models.spinup_beam(n_axial=1)  # the paper's basis
    bm = body_models(model, "consistent")[0]
    assert isinstance(bm, ConsistentBodyModel)
    eta = np.array([0.3, -0.1, 1e-3])
    force = bm.geometric_force(eta)
    exact = body_models(model, "exact")[0].geometric_force(eta)
    assert force[2] == 0.0 and exact[2] != 0.0  # no foreshortening load on the stretch mode
    cubic = 0.5 * (model.bodies[0].K1 @ eta) @ eta
    np.testing.assert_allclose(force[:2], cubic[:2], rtol=1e-14)


def test_stiffening_data_survive_files_and_are_validated(tmp_path):
    model = fd.models.spinup_beam(n_axial=1)  # the paper's basis
    path = tmp_path / "spinup.json"
    fd.save_model(model, path)
    back = fd.load_model(path)
    np.testing.assert_array_equal(back.bodies[0].K1, model.bodies[0].K1)
    np.testing.assert_array_equal(back.bodies[0].K2, model.bodies[0].K2)
    np.testing.assert_array_equal(back.bodies[0].axial_modes, [2])
    d = model.to_dict()
    flex = d["bodies"][0]["flex"]
    bad = dict(flex, geometric_stiffness_1=np.asarray(flex["geometric_stiffness_1"]).copy())
    bad["geometric_stiffness_1"][0, 1, 2] += 1.0
    with pytest.raises(ValueError, match="geometric_stiffness_1 is not symmetric"):
        fd.Model.from_dict(dict(d, bodies=[dict(d["bodies"][0], flex=bad)]))
    for change, message in (
            ({"geometric_stiffness_2": None}, "geometric_stiffness_1 is given without"),
            ({"axial_modes": [5]}, "axial_modes must be a list of distinct mode indices"),
            ({"geometric_stiffness_1": np.zeros((2, 2, 2))},
             "geometric_stiffness_1 has 2 entries, expected the number of modes = 3"),
    ):
        with pytest.raises(ValueError, match=message):
            fd.Model.from_dict(dict(d, bodies=[dict(d["bodies"][0], flex=dict(flex, **change))]))


def test_beam_mode_families():
    b = beam_modes(1.0, 1.0, EI_y=1.0, EI_z=2.0, EA=1e3, GJ=1.0, polar_inertia_per_length=1e-3,
                   n_elements=8, n_modes={"transverse_z": 2, "axial": 1, "torsion": 1})
    Pi = b.modes.reshape(-1, 6, 4)
    moves = [{k for k, row in zip("rx ry rz tx ty tz".split(), np.abs(Pi[:, :, c]).max(axis=0),
                                  strict=True) if row > 1e-12} for c in range(4)]
    assert sorted(map(sorted, moves)) == [["rx"], ["ry", "tz"], ["ry", "tz"], ["tx"]]
    assert np.all(np.diff(b.frequencies) > 0)
    np.testing.assert_array_equal(b.axial_modes, [i for i, s in enumerate(moves) if s == {"tx"}])
    lowest = beam_modes(1.0, 1.0, EI_y=1.0, EI_z=2.0, n_elements=8, n_modes=3)
    assert lowest.n_modes == 3 and lowest.geometric_stiffness_1 is None
    with pytest.raises(ValueError, match="unknown family 'bending'"):
        beam_modes(1.0, 1.0, EI_z=1.0, n_modes={"bending": 2})
    with pytest.raises(ValueError, match=r"n_modes\['axial'\]=1 exceeds the 0 axial modes"):
        beam_modes(1.0, 1.0, EI_z=1.0, n_modes={"axial": 1})
    with pytest.raises(ValueError, match="selects no modes"):
        beam_modes(1.0, 1.0, EI_z=1.0, n_modes={"axial": 0})


def test_natural_modes_have_the_closed_form_frequencies():
    """The natural-mode basis: the continuous cantilever's frequencies (bending
    ``(β_r L)² sqrt(EI/(ρA L⁴))`` with ``1 + cos βL cosh βL = 0``; stretch and torsion
    ``(2r − 1)π/2 · sqrt(EA/(ρA L²))``, ``sqrt(GJ/(ρI_p L²))``), mass-orthonormal modes on
    the Gauss–Lobatto nodes, and the same frequencies out of the model built from them."""
    L, mu, EI, EA, GJ, ip = 2.0, 3.0, 50.0, 4e4, 30.0, 0.02
    beta_l = np.array([scipy.optimize.brentq(lambda z: 1 + np.cos(z) * np.cosh(z), a, a + 1.5)
                       for a in (1.0, 4.0, 7.0, 10.0)])
    bending = beta_l**2 * np.sqrt(EI / (mu * L**4))
    stretch = np.array([1, 3]) * np.pi / 2 * np.sqrt(EA / (mu * L**2))
    b = beam_modes(L, mu, EI_z=EI, EA=EA, n_elements=24,
                   n_modes={"transverse_y": 4, "axial": 2}, basis="natural")
    expected = np.sort(np.concatenate([bending, stretch]))
    np.testing.assert_allclose(b.frequencies, expected, rtol=1e-12)
    np.testing.assert_allclose(b.modes.T @ b.mass_matrix() @ b.modes, np.eye(6), atol=1e-10)
    assert b.nodes[0, 0] == 0.0 and b.nodes[-1, 0] == L  # the ends are nodes
    model = (fd.ModelBuilder("beam")
             .add_body("beam", None, joint={"type": "revolute", "axis": [0.0, 0.0, 1.0]},
                       flex=b.to_flex_dict())
             .build())
    np.testing.assert_allclose(fd.models.modal_frequencies(model)[0] * 2 * np.pi, expected,
                               rtol=1e-9)
    twist = beam_modes(L, mu, GJ=GJ, polar_inertia_per_length=ip, n_elements=24,
                       n_modes={"torsion": 2}, basis="natural")
    np.testing.assert_allclose(twist.frequencies,
                               np.array([1, 3]) * np.pi / 2 * np.sqrt(GJ / (ip * L**2)),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="basis='natural' has cantilever modes only"):
        beam_modes(L, mu, EI_z=EI, boundary="free-free", basis="natural")
    with pytest.raises(ValueError, match="basis='spectral' is not one of"):
        beam_modes(L, mu, EI_z=EI, basis="spectral")


def test_spinup_beam_in_the_natural_basis():
    model = fd.models.spinup_beam(basis="natural", n_axial=1)
    freqs = fd.models.modal_frequencies(model)[0]
    # 0.6017 Hz, 3.771 Hz bending (βL closed form), 141.6 Hz stretch (π/2 sqrt(EA/m L))
    np.testing.assert_allclose(freqs, [1.8751040687119611**2 * np.sqrt(1.4004e4 * 10 / 12.0)
                                       / 100 / (2 * np.pi),
                                       4.6940911329741745**2 * np.sqrt(1.4004e4 * 10 / 12.0)
                                       / 100 / (2 * np.pi),
                                       np.pi / 2 * np.sqrt(3.1724e7 / (1.2 * 100)) / (2 * np.pi)],
                               rtol=1e-9)
    assert model.bodies[0].K1 is not None


def test_finite_elements_with_consistent_mass_converge_from_above():
    """The finite-element basis: one element gives the closed forms of a consistent-mass
    cubic element (bending: the 2 × 2 eigenproblem of ``EI/L³ [[12, −6L], [−6L, 4L²]]`` and
    ``mL/420 [[156, −22L], [−22L, 4L²]]``; stretch ``sqrt(3 EA/(m L))``); refining, the
    frequencies fall monotonically towards the continuous beam's (Rayleigh–Ritz upper
    bounds), and the modes are orthonormal in the Gauss–Lobatto-lumped mass, which is the
    consistent mass."""
    L, mu, EI, EA = 2.0, 3.0, 50.0, 4e4
    m = mu * L
    one = beam_modes(L, mu, EI_z=EI, EA=EA, n_elements=1, basis="finite",
                     n_modes={"transverse_y": 2, "axial": 1})
    K = EI / L**3 * np.array([[12, -6 * L], [-6 * L, 4 * L**2]])
    M = m / 420 * np.array([[156, -22 * L], [-22 * L, 4 * L**2]])
    bending = np.sqrt(scipy.linalg.eigh(K, M, eigvals_only=True))
    np.testing.assert_allclose(one.frequencies, np.sort(np.r_[bending, np.sqrt(3 * EA / (m * L))]),
                               rtol=1e-12)
    beta_l = np.array([1.8751040687119611, 4.6940911329741745])
    exact = beta_l**2 * np.sqrt(EI / (mu * L**4))
    previous = np.full(2, np.inf)
    for ne in (1, 2, 4, 8, 16):
        b = beam_modes(L, mu, EI_z=EI, n_elements=ne, basis="finite",
                       n_modes={"transverse_y": 2})
        np.testing.assert_allclose(b.modes.T @ b.mass_matrix() @ b.modes, np.eye(2),
                                   atol=1e-12)
        assert np.all(b.frequencies > exact) and np.all(b.frequencies < previous), ne
        previous = b.frequencies
    np.testing.assert_allclose(previous, exact, rtol=1e-5)
    model = fd.models.spinup_beam(n_elements=1, basis="finite", n_axial=1)
    assert model.bodies[0].n_modes == 3 and model.bodies[0].K1 is not None
