"""Bad arrays and options passed to the public functions raise ValueError naming them."""

import numpy as np
import pytest

import flexdyn as fd


@pytest.fixture(scope="module")
def model():
    flex = {
        "nodes": [[0, 0, 0], [0.5, 0, 0], [1, 0, 0]],
        "node_masses": [0.0, 1.0, 0.5],
        "modes": [[0.0]] * 6 + [[0.0]] * 2 + [[1.0], [0.0], [0.3], [0.0]]
        + [[0.0]] * 2 + [[1.2], [0.0], [1.0], [0.0]],
        "stiffness": [[40.0]],
    }
    return fd.Model.from_dict({
        "name": "arm",
        "bodies": [
            {"name": "link1", "parent": None, "joint": {"type": "revolute", "axis": [0, 0, 1]},
             "rigid": {"mass": 1.0, "com": [0.5, 0, 0], "inertia": np.diag([0.01, 0.1, 0.1])},
             "flex": flex},
            {"name": "link2", "parent": "link1",
             "joint": {"type": "spherical", "parent_node": 2},
             "rigid": {"mass": 1.0, "com": [0.4, 0, 0], "inertia": np.diag([0.01, 0.1, 0.1])}},
        ],
    })


def state(model):
    return model.neutral_configuration(), np.zeros(model.nu)


def test_wrong_q_shape(model):
    q, u = state(model)
    with pytest.raises(ValueError, match=rf"q has shape \(3,\), expected \({model.nq},\)"):
        fd.mass_matrix(model, q[:3])


def test_wrong_u_shape(model):
    q, u = state(model)
    with pytest.raises(ValueError, match=r"u has shape"):
        fd.bias_forces(model, q, np.zeros(model.nu + 1))


def test_nan_state(model):
    q, u = state(model)
    u[1] = np.nan
    with pytest.raises(ValueError, match=r"u contains non-finite values at indices \[1\]"):
        fd.forward_dynamics(model, q, u)


@pytest.mark.parametrize("name", ["tau", "udot"])
def test_wrong_force_or_acceleration_shape(model, name):
    q, u = state(model)
    bad = np.zeros(model.nu - 1)
    with pytest.raises(ValueError, match=rf"{name} has shape"):
        if name == "tau":
            fd.forward_dynamics(model, q, u, bad)
        else:
            fd.inverse_dynamics(model, q, u, bad)


def test_unknown_fidelity_and_method(model):
    q, u = state(model)
    with pytest.raises(ValueError, match="unknown fidelity 'stiff'"):
        fd.mass_matrix(model, q, fidelity="stiff")
    with pytest.raises(ValueError, match="unknown method 'featherstone'"):
        fd.forward_dynamics(model, q, u, method="featherstone")


def test_bad_external_forces(model):
    q, u = state(model)
    with pytest.raises(ValueError, match=r"f_ext has shape \(6,\), expected \(2, 6\)"):
        fd.bias_forces(model, q, u, f_ext=np.zeros(6))
    f = np.zeros((2, 6))
    f[0, 0] = np.inf
    with pytest.raises(ValueError, match="f_ext contains non-finite"):
        fd.bias_forces(model, q, u, f_ext=f)


def test_unknown_body_name(model):
    with pytest.raises(KeyError, match="no body named 'link3'"):
        model.body_index("link3")


def test_singular_mass_matrix_raises_for_composite():
    """A massless slider carrying a cart on a parallel slider: M = [[m, m], [m, m]]."""
    slider = {"name": "slider", "parent": None, "joint": {"type": "prismatic", "axis": [1, 0, 0]}}
    cart = {"name": "cart", "parent": "slider",
            "joint": {"type": "prismatic", "axis": [1, 0, 0]},
            "rigid": {"mass": 2.0, "com": [0.3, 0.1, 0], "inertia": np.diag([0.1, 0.2, 0.25])}}
    model = fd.Model.from_dict({"name": "s", "bodies": [slider, cart]})
    with pytest.raises(ValueError, match="mass matrix is singular"):
        fd.forward_dynamics(model, np.zeros(2), np.zeros(2), method="composite")


def test_former_names_warn_and_give_the_class():
    with pytest.warns(DeprecationWarning,
                      match=r"flexdyn.Kinematics is deprecated; use flexdyn.PositionTerms"):
        assert fd.Kinematics is fd.PositionTerms
    with pytest.warns(DeprecationWarning, match=r"use flexdyn.VelocityTerms"):
        assert fd.terms.Velocities is fd.VelocityTerms
    with pytest.raises(AttributeError, match=r"module 'flexdyn' has no attribute 'Kinematic'"):
        fd.Kinematic  # noqa: B018
