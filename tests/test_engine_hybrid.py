"""Hybrid dynamics and joint wrenches on the compiled engine against the numpy reference.

* On hypothesis trees with every joint type, both fidelities, with and without external
  wrenches, and masks of every kind (random, all free, all prescribed, one dof of each joint
  — single dofs of multi-dof joints —, the joints prescribed with the modes free, the modes
  prescribed with the joints free): the engine's ``u̇`` and loads equal the reference's; the
  prescribed accelerations and the free forces come back exactly as given; the loads fed to
  forward dynamics reproduce ``u̇``; a mask that differs in one entry gives another answer.
* All free is the engine's forward dynamics, bit for bit where both run the general sweeps
  (to round-off on a rigid tree, whose forward dynamics has its own); all prescribed is its
  inverse dynamics.
* Batches (1 and 7 states) equal the single calls bit for bit.
* A singular free part raises the same message naming the body on both backends (and none
  when that body's dof is prescribed); nodal loads and complex inputs run the reference.
* Joint wrenches: the engine equals the reference, single states and batches.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("numba")

import flexdyn as fd  # noqa: E402
from flexdyn import dynamics  # noqa: E402
from flexdyn.engine import Engine  # noqa: E402
from flexdyn.linalg import SingularInertiaError  # noqa: E402
from helpers import assert_close, massless_slider, rel_err  # noqa: E402
from strategies import models_and_states  # noqa: E402

SETTINGS = settings(max_examples=30, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SAMPLES = models_and_states(max_bodies=6, max_modes=4)
FIDELITY = st.sampled_from(fd.FIDELITIES)
MASKS = ("random", "all free", "all prescribed", "one dof per joint", "modes free",
         "joints free")
#: relative tolerance of the engine against the reference (the same equations, other
#: summation orders and factorizations; a six-body random tree of Euler-angle and compound
#: joints has reached 1.04e-12)
TOL = 1e-11


pytestmark = pytest.mark.usefixtures("quiet_numba")


def _joint_rows(model: fd.Model) -> np.ndarray:
    """(nu,) bool: the joint speeds (the rest are modal coordinates)."""
    rows = np.zeros(model.nu, dtype=bool)
    for i in range(model.n_bodies):
        s = int(model.u_start[i])
        rows[s:s + int(model.nu_joint[i])] = True
    return rows


def _mask(model: fd.Model, kind: str, rng: np.random.Generator) -> np.ndarray:
    """A mask of prescribed entries (nu,) of the given kind (see :data:`MASKS`)."""
    joints = _joint_rows(model)
    if kind == "random":
        return rng.random(model.nu) < 0.5
    if kind == "all free":
        return np.zeros(model.nu, dtype=bool)
    if kind == "all prescribed":
        return np.ones(model.nu, dtype=bool)
    if kind == "modes free":
        return joints
    if kind == "joints free":
        return ~joints
    mask = np.zeros(model.nu, dtype=bool)  # one dof of each joint
    for i in range(model.n_bodies):
        nj = int(model.nu_joint[i])
        if nj:
            mask[int(model.u_start[i]) + int(rng.integers(nj))] = True
    return mask


def _scale(model: fd.Model, q, fidelity: str, udot) -> float:
    """The size of the loads: ``max|M| (1 + max|u̇|)``."""
    M = fd.mass_matrix(model, q, fidelity)
    return float(np.max(np.abs(M))) * (1.0 + float(np.max(np.abs(udot))))


def _inputs(model: fd.Model, seed: int):
    rng = np.random.default_rng(seed)
    return rng, rng.normal(size=model.nu), rng.normal(size=model.nu)


# ---------------------------------------------------------------------------------------------
# hybrid dynamics: the engine against the reference
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY, kind=st.sampled_from(MASKS),
       seed=st.integers(0, 2**16), loaded=st.booleans())
def test_engine_equals_the_reference(sample, fidelity, kind, seed, loaded):
    model, q, u = sample.model, sample.q, sample.u
    f_ext = sample.f_ext if loaded else None
    rng, tau, known = _inputs(model, seed)
    mask = _mask(model, kind, rng)
    udot, T = fd.hybrid_dynamics(model, q, u, tau, known, mask, fidelity=fidelity, f_ext=f_ext)
    ref_udot, ref_T = fd.hybrid_dynamics(model, q, u, tau, known, mask, fidelity=fidelity,
                                         f_ext=f_ext, backend="reference")
    scale = _scale(model, q, fidelity, ref_udot)
    assert_close(udot, ref_udot, f"u̇ ({kind})", tol=TOL, scale=1.0)
    assert_close(T, ref_T, f"τ ({kind})", tol=TOL, scale=scale)
    np.testing.assert_array_equal(udot[mask], known[mask])
    np.testing.assert_array_equal(T[~mask], tau[~mask])
    back = fd.forward_dynamics(model, q, u, T, fidelity=fidelity, f_ext=f_ext)
    assert_close(back, udot, "forward dynamics of the realised loads", tol=1e-8, scale=1.0)


@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY, seed=st.integers(0, 2**16))
def test_one_entry_of_the_mask_changes_the_answer(sample, fidelity, seed):
    """Prescribing one more entry, at an acceleration other than the one it had free, moves
    that entry and (through the coupling) the loads; the engine follows the reference."""
    model, q, u = sample.model, sample.q, sample.u
    rng, tau, known = _inputs(model, seed)
    mask = _mask(model, "random", rng)
    free = np.flatnonzero(~mask)
    if free.size == 0:
        mask[rng.integers(model.nu)] = False
        free = np.flatnonzero(~mask)
    udot, T = fd.hybrid_dynamics(model, q, u, tau, known, mask, fidelity=fidelity)
    j = int(rng.choice(free))
    more = mask.copy()
    more[j] = True
    known[j] = udot[j] + 1.0
    udot2, T2 = fd.hybrid_dynamics(model, q, u, tau, known, more, fidelity=fidelity)
    ref_udot2, ref_T2 = fd.hybrid_dynamics(model, q, u, tau, known, more, fidelity=fidelity,
                                           backend="reference")
    assert udot2[j] == udot[j] + 1.0
    assert rel_err(T2, T) > 1e-6  # the load on entry j is no longer τ_j
    scale = _scale(model, q, fidelity, ref_udot2)
    assert_close(udot2, ref_udot2, "u̇ with one more prescribed", tol=TOL, scale=1.0)
    assert_close(T2, ref_T2, "τ with one more prescribed", tol=TOL, scale=scale)


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(sample=SAMPLES, fidelity=FIDELITY)
def test_all_free_is_forward_and_all_prescribed_is_inverse_dynamics(sample, fidelity):
    model, q, u, udot, f = sample.model, sample.q, sample.u, sample.udot, sample.f_ext
    tau = np.random.default_rng(2).normal(size=model.nu)
    engine = Engine(model, fidelity)
    none = np.zeros(model.nu, dtype=bool)
    got, T = engine.hybrid_dynamics(q, u, tau, udot, none, f)
    if engine.rigid_tree:  # its forward dynamics runs the fused sweeps: other roundings
        assert_close(got, engine.forward_dynamics(q, u, tau, f), "all free", tol=TOL,
                     scale=1.0)
    else:
        np.testing.assert_array_equal(got, engine.forward_dynamics(q, u, tau, f))
    np.testing.assert_array_equal(T, tau)
    got, T = engine.hybrid_dynamics(q, u, tau, udot, ~none, f)
    np.testing.assert_array_equal(got, udot)
    assert_close(T, engine.inverse_dynamics(q, u, udot, f), "all prescribed",
                 tol=TOL, scale=_scale(model, q, fidelity, udot))


# ---------------------------------------------------------------------------------------------
# batches
# ---------------------------------------------------------------------------------------------
def _spacecraft_states(n: int, seed: int):
    model = fd.models.builtin_model("spacecraft")
    rng = np.random.default_rng(seed)
    q = np.stack([model.neutral_configuration()] * n)
    q[:, 7:] = rng.normal(scale=0.1, size=(n, model.nq - 7))
    return model, rng, q, *(rng.normal(size=(n, model.nu)) for _ in range(3))


@pytest.mark.parametrize("n", [1, 7])
@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_batches_equal_the_single_calls(n, fidelity):
    model, rng, Q, U, T, A = _spacecraft_states(n, n)
    F = rng.normal(size=(n, model.n_bodies, 6))
    mask = _mask(model, "random", rng)
    got_udot, got_T = fd.hybrid_dynamics(model, Q, U, T, A, mask, fidelity=fidelity, f_ext=F)
    wrenches = fd.joint_wrenches(model, Q, U, A, fidelity, f_ext=F[0])
    assert got_udot.shape == got_T.shape == (n, model.nu)
    assert wrenches.shape == (n, model.n_bodies, 6)
    for b in range(n):
        udot, tau = fd.hybrid_dynamics(model, Q[b], U[b], T[b], A[b], mask, fidelity=fidelity,
                                       f_ext=F[b])
        np.testing.assert_array_equal(got_udot[b], udot)
        np.testing.assert_array_equal(got_T[b], tau)
        np.testing.assert_array_equal(wrenches[b],
                                      fd.joint_wrenches(model, Q[b], U[b], A[b], fidelity,
                                                        f_ext=F[0]))
    ref_udot, ref_T = fd.hybrid_dynamics(model, Q, U, T, A, mask, fidelity=fidelity, f_ext=F,
                                         backend="reference")
    assert_close(got_udot, ref_udot, "batched u̇", tol=TOL, scale=1.0)
    assert_close(got_T, ref_T, "batched τ", tol=TOL)


def test_batch_without_forces_or_accelerations():
    """``τ`` and ``u̇`` None are zero, in a batch as in one state."""
    model, _, Q, U, _, _ = _spacecraft_states(3, 1)
    mask = _joint_rows(model)
    got_udot, got_T = fd.hybrid_dynamics(model, Q, U, None, None, mask)
    for b in range(3):
        udot, tau = fd.hybrid_dynamics(model, Q[b], U[b], None, None, mask)
        np.testing.assert_array_equal(got_udot[b], udot)
        np.testing.assert_array_equal(got_T[b], tau)


# ---------------------------------------------------------------------------------------------
# errors and dispatch
# ---------------------------------------------------------------------------------------------
def _messages(fn, *args, **kwargs) -> list[str]:
    out = []
    for backend in dynamics.BACKENDS:
        with pytest.raises(SingularInertiaError) as info:
            fn(*args, backend=backend, **kwargs)
        out.append(str(info.value))
    return out


@pytest.mark.parametrize("fidelity", fd.FIDELITIES)
def test_singular_free_part_names_the_body_on_both_backends(fidelity):
    """A massless slider: singular when its dof is free, not when it is prescribed."""
    model = massless_slider()
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    base_only = np.array([True, False])
    got, ref = _messages(fd.hybrid_dynamics, model, q, z, z, z, base_only, fidelity=fidelity)
    assert got == ref
    assert "articulated inertia D of body 1 'slider' is singular" in got
    got, ref = _messages(fd.hybrid_dynamics, model, np.stack([q, q]), np.stack([z, z]), None,
                         None, base_only, fidelity=fidelity)
    assert got == ref and got.startswith("batch item 0: articulated inertia D of body 1")
    slider = np.array([False, True])
    tau, known = np.array([0.5, 0.0]), np.array([0.0, 2.0])
    udot, T = fd.hybrid_dynamics(model, q, z, tau, known, slider, fidelity=fidelity)
    ref_udot, ref_T = fd.hybrid_dynamics(model, q, z, tau, known, slider, fidelity=fidelity,
                                         backend="reference")
    assert_close(udot, ref_udot, "u̇", tol=TOL)
    assert_close(T, ref_T, "τ", tol=TOL)


def test_bad_masks_and_backends_same_message():
    model = fd.models.builtin_model("two_link_arm")
    q, z = model.neutral_configuration(), np.zeros(model.nu)
    for bad in (np.ones(3, dtype=bool), np.ones(model.nu, dtype=int)):
        for backend in dynamics.BACKENDS:
            with pytest.raises(ValueError, match=r"prescribed must be a boolean array"):
                fd.hybrid_dynamics(model, q, z, z, z, bad, backend=backend)
        with pytest.raises(ValueError, match=r"prescribed must be a boolean array"):
            fd.hybrid_dynamics(model, np.stack([q, q]), np.stack([z, z]), None, None, bad)
    for fn, args in ((fd.hybrid_dynamics, (z, z, z, z > 0)), (fd.joint_wrenches, (z, z))):
        with pytest.raises(ValueError, match="'engine', 'reference'"):
            fn(model, q, *args, backend="numba")


def test_complex_inputs_run_the_reference(monkeypatch):
    model = fd.models.two_link_arm(n_modes=2, gravity=(0.0, -9.81, 0.0))
    q, u = model.neutral_configuration(), np.full(model.nu, 0.3)
    mask = _joint_rows(model)
    h = 1e-30
    qc = q + 1j * h * np.linspace(0.1, 0.5, model.nq)
    complex_ref = [fd.hybrid_dynamics(model, qc, u, u, u, mask, backend="reference"),
                   fd.joint_wrenches(model, qc, u, u, backend="reference")]
    monkeypatch.setattr(dynamics, "cached_engine", None)  # any engine call would fail
    got_complex = [fd.hybrid_dynamics(model, qc, u, u, u, mask),
                   fd.joint_wrenches(model, qc, u, u)]
    for g, e in zip((*got_complex[0], got_complex[1]), (*complex_ref[0], complex_ref[1]),
                    strict=True):
        np.testing.assert_array_equal(g, e)
    assert np.iscomplexobj(got_complex[1]) and np.any(got_complex[1].imag != 0)


# ---------------------------------------------------------------------------------------------
# joint wrenches
# ---------------------------------------------------------------------------------------------
@SETTINGS
@given(sample=SAMPLES, fidelity=FIDELITY, loaded=st.booleans())
def test_joint_wrenches_equal_the_reference(sample, fidelity, loaded):
    model, q, u, udot = sample.model, sample.q, sample.u, sample.udot
    f_ext = sample.f_ext if loaded else None
    got = fd.joint_wrenches(model, q, u, udot, fidelity, f_ext=f_ext)
    ref = fd.joint_wrenches(model, q, u, udot, fidelity, f_ext=f_ext, backend="reference")
    assert got.shape == (model.n_bodies, 6)
    assert_close(got, ref, "joint wrenches", tol=TOL,
                 scale=_scale(model, q, fidelity, udot))
    other = fd.joint_wrenches(model, q, u, udot + 1.0, fidelity, f_ext=f_ext)
    assert rel_err(other, got) > 1e-6  # the accelerations reach the wrenches
