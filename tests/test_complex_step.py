"""Complex-step differentiability of the reference (numpy) dynamics functions.

For a real-analytic ``f``, ``f'(x)·d = Im f(x + i h d) / h + O(h²)`` with no subtractive
cancellation, so ``h = 1e-30`` gives the directional derivative to round-off.  That only
works if every operation carries the imaginary part: an ``np.asarray(x, dtype=float)`` or an
in-place ``+=`` into a float buffer drops it (with at most a ``ComplexWarning``) or raises.

For every public reference function × fidelity × forward-dynamics method (where it applies)
× differentiated argument, on three small models, each test checks at a random state and
along a random direction ``d`` that

* evaluating at ``x + i h d`` emits no :class:`numpy.exceptions.ComplexWarning` and returns
  a complex result;
* its real part equals ``f(x)`` (relative 1e-12);
* ``Im f(x + i h d) / h`` equals the central difference ``(f(x + εd) − f(x − εd)) / 2ε``
  (relative 1e-5, the truncation/round-off level of the difference with ``ε ≈ 1e-6``).

Differentiated arguments: ``q`` (the non-quaternion coordinates: angles, displacements,
positions, modal coordinates), ``quat`` (a direction tangent to every unit quaternion, only
on models with spherical/free joints), ``u``, ``udot``, ``tau`` and ``f_ext``.  For
:func:`flexdyn.rhs` the state is ``x = [q; u]`` and ``f_ext`` is the constant array given to
``rhs``.

Models: the built-in ``two_link_arm`` (chain of revolute flexible links), the built-in
``spacecraft`` (rigid hub on a free joint with two flexible arrays: a tree) and a seeded
random tree with a spherical joint, screw/cylindrical joints, flexible bodies with damped
modes and gravity.
"""

from __future__ import annotations

import functools
import warnings
import zlib
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import pytest

import flexdyn as fd
from strategies import random_f_ext, random_model_dict, random_state

try:
    from flexdyn import mass_matrix_inverse
except ImportError:  # older layout
    from flexdyn.articulated_body import mass_matrix_inverse

H = 1e-30  #: complex step
EPS = 1e-6  #: central-difference step, relative to the size of the argument
RTOL_DERIVATIVE = 1e-5
RTOL_REAL = 1e-12

ComplexWarning = np.exceptions.ComplexWarning

FIDELITIES = ("full", "ruthless")
METHODS = ("articulated", "articulated-split", "composite")


# ---------------------------------------------------------------------------------------------
# models and base states
# ---------------------------------------------------------------------------------------------
def _random_tree() -> fd.Model:
    d = random_model_dict(
        np.random.default_rng(20240611),
        parents=[-1, 0, 0, 2],
        joint_types=["revolute", "spherical", "screw", "cylindrical"],
        n_nodes=[3, 2, 0, 2],
        n_modes=[2, 2, 0, 1],
        gravity=True,
        damping=True,
        name="random_tree",
    )
    return fd.Model.from_dict(d)


MODEL_BUILDERS: dict[str, Callable[[], fd.Model]] = {
    "two_link_arm": lambda: fd.models.builtin_model("two_link_arm"),
    "spacecraft": lambda: fd.models.builtin_model("spacecraft"),
    "random_tree": _random_tree,
}
#: Models with spherical/free joints (the ``quat`` direction applies).  Checked below.
QUATERNION_MODELS = ("spacecraft", "random_tree")


@functools.cache
def get_model(name: str) -> fd.Model:
    return MODEL_BUILDERS[name]()


def quaternion_blocks(model: fd.Model) -> list[slice]:
    """Slices of ``q`` holding a quaternion ``[w, x, y, z]``."""
    idx = [e.index for e in fd.state_layout(model)["q"] if e.kind == "quaternion"]
    assert len(idx) % 4 == 0
    return [slice(idx[k], idx[k] + 4) for k in range(0, len(idx), 4)]


@functools.cache
def base_arguments(name: str) -> dict[str, np.ndarray]:
    """A random state of model ``name`` with nonzero ``tau`` and ``f_ext`` (read-only)."""
    model = get_model(name)
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    q, u, udot = random_state(model, rng)
    args = {
        "q": q,
        "u": u,
        "udot": udot,
        "tau": rng.normal(size=model.nu),
        "f_ext": random_f_ext(model, rng),
    }
    for a in args.values():
        a.flags.writeable = False
    return args


def direction(model: fd.Model, base: dict[str, np.ndarray], arg: str,
              rng: np.random.Generator) -> tuple[str, np.ndarray]:
    """``(key, d)``: a random direction ``d`` (max-norm 1) in the argument ``key``."""
    if arg in ("q", "quat"):
        q = base["q"]
        d = np.zeros_like(q)
        blocks = quaternion_blocks(model)
        if arg == "q":
            mask = np.ones(q.size, dtype=bool)
            for b in blocks:
                mask[b] = False
            d[mask] = rng.normal(size=int(mask.sum()))
        else:
            for b in blocks:
                w = rng.normal(size=4)
                d[b] = w - (w @ q[b]) * q[b]  # tangent to the unit sphere at q[b]
        key = "q"
    else:
        key = arg
        d = rng.normal(size=base[arg].shape)
    assert np.any(d), f"empty direction for {arg!r}"
    return key, d / np.max(np.abs(d))


# ---------------------------------------------------------------------------------------------
# functions under test
# ---------------------------------------------------------------------------------------------
class Func(NamedTuple):
    name: str
    args: tuple[str, ...]  # differentiable arguments
    methods: tuple[str | None, ...]
    call: Callable[[fd.Model, str, str | None, dict[str, Any]], Any]


def _rhs(model, fidelity, method, a):
    f = fd.rhs(model, fidelity=fidelity, method=method, f_ext=a["f_ext"])
    return f(0.0, np.concatenate([a["q"], a["u"]]), a["tau"])


FUNCS = (
    Func("forward_dynamics", ("q", "quat", "u", "tau", "f_ext"), METHODS,
         lambda m, fid, meth, a: fd.forward_dynamics(
             m, a["q"], a["u"], a["tau"], method=meth, fidelity=fid, f_ext=a["f_ext"])),
    Func("rhs", ("q", "quat", "u", "tau", "f_ext"), METHODS, _rhs),
    Func("inverse_dynamics", ("q", "quat", "u", "udot", "f_ext"), (None,),
         lambda m, fid, meth, a: fd.inverse_dynamics(
             m, a["q"], a["u"], a["udot"], fidelity=fid, f_ext=a["f_ext"])),
    Func("bias_forces", ("q", "quat", "u", "f_ext"), (None,),
         lambda m, fid, meth, a: fd.bias_forces(
             m, a["q"], a["u"], fidelity=fid, f_ext=a["f_ext"])),
    Func("mass_matrix", ("q", "quat"), (None,),
         lambda m, fid, meth, a: fd.mass_matrix(m, a["q"], fidelity=fid)),
    Func("mass_matrix_inverse", ("q", "quat"), (None,),
         lambda m, fid, meth, a: mass_matrix_inverse(m, a["q"], fidelity=fid)),
    Func("kinetic_energy", ("q", "quat", "u"), (None,),
         lambda m, fid, meth, a: fd.kinetic_energy(m, a["q"], a["u"], fid)),
    Func("potential_energy", ("q", "quat"), (None,),
         lambda m, fid, meth, a: fd.potential_energy(m, a["q"], fid)),
    Func("total_energy", ("q", "quat", "u"), (None,),
         lambda m, fid, meth, a: fd.total_energy(m, a["q"], a["u"], fid)),
    Func("momentum", ("q", "quat", "u"), (None,),
         lambda m, fid, meth, a: fd.momentum(m, a["q"], a["u"], fid)),
)



def vacuous(func: str, fidelity: str, model: str, arg: str) -> bool:
    """Cases whose derivative vanishes identically, so the check would say nothing.

    The spacecraft floats free without gravity and its speeds and wrenches are in hub
    coordinates, so only ``q̇ = Γ(q) u`` (in ``rhs``) and the inertial momentum depend on the
    hub attitude; the ruthless mass matrix (and so ``M⁻¹`` and ``T``) does not depend on its
    modal coordinates or on the hub position either.  The random tree covers ``quat``.
    """
    if model != "spacecraft":
        return False
    if arg == "quat":
        return func not in ("rhs", "momentum")
    return (arg == "q" and fidelity == "ruthless"
            and func in ("mass_matrix", "mass_matrix_inverse", "kinetic_energy"))


def _cases():
    for func in FUNCS:
        for method in func.methods:
            for fidelity in FIDELITIES:
                for model in MODEL_BUILDERS:
                    for arg in func.args:
                        if arg == "quat" and model not in QUATERNION_MODELS:
                            continue
                        if vacuous(func.name, fidelity, model, arg):
                            continue
                        parts = [func.name, method, fidelity, model, arg]
                        yield pytest.param(func, method, fidelity, model, arg,
                                           id="-".join(p for p in parts if p))


# ---------------------------------------------------------------------------------------------
# tests
# ---------------------------------------------------------------------------------------------
def test_model_coverage():
    """The models are what the docstring says (quaternions, a tree, flexible bodies)."""
    for name in MODEL_BUILDERS:
        has_quat = bool(quaternion_blocks(get_model(name)))
        assert has_quat == (name in QUATERNION_MODELS), name
    sc = get_model("spacecraft")
    assert sc.joints[0].type == "free" and int(sc.n_modes.sum()) > 0
    tree = get_model("random_tree")
    assert "spherical" in [j.type for j in tree.joints]
    assert np.count_nonzero(tree.n_modes) >= 2


@pytest.mark.parametrize(("func", "method", "fidelity", "model_name", "arg"), list(_cases()))
def test_complex_step_matches_central_difference(func, method, fidelity, model_name, arg):
    model = get_model(model_name)
    base = base_arguments(model_name)
    rng = np.random.default_rng(zlib.crc32(f"{func.name}/{method}/{fidelity}/{arg}".encode()))
    key, d = direction(model, base, arg, rng)

    def f(x):
        return np.asarray(func.call(model, fidelity, method, {**base, key: x}))

    x0 = base[key]
    f0 = f(x0)
    assert not np.iscomplexobj(f0)

    # complex step
    with warnings.catch_warnings():
        warnings.simplefilter("error", ComplexWarning)
        fc = f(x0 + 1j * H * d)
    assert np.iscomplexobj(fc), f"{func.name} returned {fc.dtype} for a complex {key}"
    assert fc.shape == f0.shape
    scale = float(np.max(np.abs(f0)))
    np.testing.assert_allclose(fc.real, f0, rtol=RTOL_REAL, atol=RTOL_REAL * scale,
                               err_msg="real part of f(x + i h d) differs from f(x)")
    cs = fc.imag / H

    # central difference
    eps = EPS * max(1.0, float(np.max(np.abs(x0))))
    fdiff = (f(x0 + eps * d) - f(x0 - eps * d)) / (2.0 * eps)
    dscale = float(np.max(np.abs(fdiff)))
    assert dscale > 1e-8 * max(1.0, scale), "vacuous check: the derivative vanishes"
    np.testing.assert_allclose(cs, fdiff, rtol=RTOL_DERIVATIVE, atol=RTOL_DERIVATIVE * dscale,
                               err_msg="complex-step derivative differs from central difference")
