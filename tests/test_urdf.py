"""URDF import (``flexdyn.load_urdf``): against Pinocchio loading the same files, the joint
forces from ``limit`` and ``dynamics``, flexible links in their rigid limit, bad files, and
the files and command line.

The Pinocchio comparisons map the states joint by joint (Pinocchio's ``k``-th joint is
flexdyn's ``k``-th moving joint, which the test checks by the link each carries):

* revolute, prismatic: the same coordinate and speed;
* continuous: Pinocchio ``q = [cos θ, sin θ]``, flexdyn ``θ``;
* planar (normal z): Pinocchio ``q = [x, y, cos θ, sin θ]``, flexdyn ``[x, y, θ]``; both
  ``[vx, vy, ω]`` in the moving frame;
* floating: Pinocchio ``q = [p, (x, y, z, w)]``, ``v = [v; ω]`` in the moving frame;
  flexdyn ``q = [(w, x, y, z), p]``, ``u = [ω; v]``.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import numpy as np
import pytest

import flexdyn as fd
from flexdyn.__main__ import main
from flexdyn.beam import ALUMINIUM, tube
from flexdyn.urdf import DEFAULT_LIMIT_DAMPING, DEFAULT_LIMIT_STIFFNESS, URDFError
from helpers import RTOL, rel_err

DATA = Path(__file__).resolve().parent / "data" / "urdf"
#: the shipped robots: file, floating base
ROBOTS = [("ur5", False), ("arm7", False), ("gantry", False), ("quadruped", True)]
SMOOTHING = 0.01  # the joint forces' default friction smoothing (model-format.md)


def _erd_robots() -> list[tuple[str, bool]]:
    """URDFs of ``example-robot-data`` (the ``compare`` extra) when installed."""
    try:
        files = importlib.metadata.files("example-robot-data") or []
    except importlib.metadata.PackageNotFoundError:
        return []
    wanted = {"ur5_robot.urdf": False, "panda.urdf": False, "solo12.urdf": True}
    return [(str(f.locate()), wanted[f.name]) for f in files if f.name in wanted
            and "/robots/" in str(f)]


# ----------------------------------------------------------------------------------------------
# Pinocchio
# ----------------------------------------------------------------------------------------------
class PinRobot:
    """Pinocchio's model of the same URDF text and the map of flexdyn's states onto it."""

    def __init__(self, pin, text: str, model: fd.Model, floating: bool):
        self.pin = pin
        self.model = (pin.buildModelFromXML(text, pin.JointModelFreeFlyer()) if floating
                      else pin.buildModelFromXML(text))
        self.data = self.model.createData()
        self.fd = model
        moving = [i for i in range(model.n_bodies) if model.nu_joint[i] > 0]
        assert len(moving) == self.model.njoints - 1
        # the k-th moving flexdyn body is the link Pinocchio's k-th joint carries
        for k, i in enumerate(moving, start=1):
            name = model.names[i]
            assert self.model.frames[self.model.getFrameId(name)].parentJoint == k, name
        self.moving = moving
        P = np.zeros((model.nu, model.nu))
        for k, i in enumerate(moving, start=1):
            iv, nv = self.model.joints[k].idx_v, self.model.joints[k].nv
            s = int(model.u_start[i])
            if nv == 6:  # [v; ω] from [ω; v]
                P[iv:iv + 3, s + 3:s + 6] = np.eye(3)
                P[iv + 3:iv + 6, s:s + 3] = np.eye(3)
            else:
                P[iv:iv + nv, s:s + nv] = np.eye(nv)
        self.P = P

    def q(self, q_fd: np.ndarray) -> np.ndarray:
        q = np.zeros(self.model.nq)
        for k, i in enumerate(self.moving, start=1):
            jm = self.model.joints[k]
            iq, nq = jm.idx_q, jm.nq
            x = self.fd.q_joint(q_fd, i)
            if nq == 7:
                q[iq:iq + 7] = [*x[4:7], *x[1:4], x[0]]
            elif nq == 4:
                q[iq:iq + 4] = [x[0], x[1], np.cos(x[2]), np.sin(x[2])]
            elif nq == 2:
                q[iq:iq + 2] = [np.cos(x[0]), np.sin(x[0])]
            else:
                q[iq] = x[0]
        return q


def random_state(model: fd.Model, rng: np.random.Generator, margin: float = 0.02):
    """``q`` within the joint limits (by ``margin``), ``u``, ``u̇`` and ``τ`` within the
    torque limits; unit quaternions."""
    q = model.neutral_configuration()
    for i, joint in enumerate(model.joints):
        s = int(model.q_start[i])
        if joint.quaternion:
            Q = rng.normal(size=4)
            q[s:s + 4] = Q / np.linalg.norm(Q)
            q[s + 4:s + 7] = rng.uniform(-1, 1, 3)
            continue
        rows = model.joint_forces[i]
        for k in range(joint.nq):
            lo, hi = -np.pi, np.pi
            if rows is not None and np.isfinite(rows[k, 6]):
                lo, hi = rows[k, 6] + margin, rows[k, 7] - margin
            q[s + k] = rng.uniform(lo, hi)
    u, udot = rng.normal(size=model.nu), rng.normal(size=model.nu)
    tau = rng.normal(size=model.nu)
    return q, u, udot, tau


def _pinocchio_errors(pin, text: str, model: fd.Model, floating: bool, seed: int,
                      passive=None) -> dict[str, float]:
    """Relative errors of flexdyn against Pinocchio at a random state; ``passive(q, u)``: the
    joint forces τ_J the test expects flexdyn to add (Pinocchio has none)."""
    pr = PinRobot(pin, text, model, floating)
    q, u, udot, tau = random_state(model, np.random.default_rng(seed))
    tau_j = np.zeros(model.nu) if passive is None else passive(q, u)
    P = pr.P
    qp, vp, ap = pr.q(q), P @ u, P @ udot
    M = pin.crba(pr.model, pr.data, qp).copy()
    M = np.triu(M) + np.triu(M, 1).T
    return {
        "mass matrix": rel_err(P @ fd.mass_matrix(model, q) @ P.T, M),
        "bias forces": rel_err(P @ fd.bias_forces(model, q, u),
                               pin.nonLinearEffects(pr.model, pr.data, qp, vp) - P @ tau_j),
        "inverse dynamics": rel_err(P @ fd.inverse_dynamics(model, q, u, udot),
                                    pin.rnea(pr.model, pr.data, qp, vp, ap) - P @ tau_j),
        "forward dynamics": rel_err(P @ fd.forward_dynamics(model, q, u, tau),
                                    pin.aba(pr.model, pr.data, qp, vp, P @ (tau + tau_j))),
    }


def _assert_small(errors: dict[str, float], what: str) -> None:
    bad = {k: v for k, v in errors.items() if not v < RTOL}
    assert not bad, f"{what}: relative errors {bad}"


@pytest.mark.parametrize("merge_fixed", [True, False])
@pytest.mark.parametrize("robot, floating", ROBOTS)
def test_shipped_robots_match_pinocchio(robot, floating, merge_fixed):
    pin = pytest.importorskip("pinocchio")
    path = DATA / f"{robot}.urdf"
    model = fd.load_urdf(path, floating_base=floating, merge_fixed=merge_fixed)
    assert np.array_equal(model.gravity, [0.0, 0.0, -9.81])
    for seed in range(3):
        _assert_small(_pinocchio_errors(pin, path.read_text(), model, floating, seed),
                      f"{robot} seed {seed}")


@pytest.mark.parametrize("path, floating", _erd_robots() or [pytest.param(
    None, None, marks=pytest.mark.skip("example-robot-data is not installed"))])
def test_example_robot_data_matches_pinocchio(path, floating):
    """The URDFs of example-robot-data; the Panda's mimic finger joint (which flexdyn refuses,
    naming it) is turned into an independent joint in both models, and the ``dynamics``
    elements (joint forces, which Pinocchio's dynamics leave out) are dropped."""
    pin = pytest.importorskip("pinocchio")
    text = Path(path).read_text()
    if "<mimic" in text:
        with pytest.raises(URDFError, match=r'<joint name="[^"]+">: mimic joints'):
            fd.load_urdf(path)
        text = re.sub(r"<mimic[^>]*/>", "", text)
    text = re.sub(r"<dynamics[^>]*/>", "", text)
    model = fd.load_urdf(text, floating_base=floating)
    for seed in range(2):
        _assert_small(_pinocchio_errors(pin, text, model, floating, seed),
                      f"{path} seed {seed}")


def random_urdf(seed: int) -> str:
    """A random robot: a tree of 2 to 8 links on revolute, continuous, prismatic, fixed,
    planar (normal z, as Pinocchio reads any) and floating joints with random names (so that
    siblings come out of document order), rotated origins, unaligned axes and rotated
    inertial frames."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    names = [f"{rng.choice(list('abcXYZ'))}{k}" for k in range(n)]

    def vec(v):
        return " ".join(f"{x:.17g}" for x in v)

    parts = []
    for k in range(n):
        m1, m2 = rng.uniform(0.01, 0.1, 2)
        moments = [m1, m2, rng.uniform(abs(m1 - m2), m1 + m2)]
        parts.append(f'<link name="L{k}"><inertial><mass value="{rng.uniform(0.2, 3):.17g}"/>'
                     f'<origin xyz="{vec(rng.uniform(-0.2, 0.2, 3))}" '
                     f'rpy="{vec(rng.uniform(-3, 3, 3))}"/><inertia ixx="{moments[0]:.17g}" '
                     f'iyy="{moments[1]:.17g}" izz="{moments[2]:.17g}" ixy="0" ixz="0" '
                     'iyz="0"/></inertial></link>')
        if k == 0:
            continue
        jtype = rng.choice(["revolute", "revolute", "continuous", "prismatic", "fixed",
                            "planar", "floating"])
        axis = [0.0, 0.0, 1.0] if jtype == "planar" else rng.normal(size=3)
        limit = ('<limit lower="-5" upper="5" effort="1000" velocity="1"/>'
                 if jtype in ("revolute", "prismatic") else "")
        parts.append(f'<joint name="{names[k]}" type="{jtype}"><parent link="L'
                     f'{int(rng.integers(0, k))}"/><child link="L{k}"/>'
                     f'<origin xyz="{vec(rng.uniform(-0.5, 0.5, 3))}" '
                     f'rpy="{vec(rng.uniform(-3, 3, 3))}"/><axis xyz="{vec(axis)}"/>'
                     f'{limit}</joint>')
    rng.shuffle(parts)
    return "<robot name='random'>" + "".join(parts) + "</robot>"


@pytest.mark.parametrize("seed", range(12))
def test_random_robots_match_pinocchio(seed):
    pin = pytest.importorskip("pinocchio")
    text = random_urdf(seed)
    floating = seed % 3 == 0
    for merge_fixed in (True, False):
        model = fd.load_urdf(text, floating_base=floating, merge_fixed=merge_fixed)
        _assert_small(_pinocchio_errors(pin, text, model, floating, seed),
                      f"seed {seed}, merge_fixed={merge_fixed}:\n{text}")


def test_floating_joint_in_the_file_matches_pinocchio():
    """A ``floating`` joint from a world link is the free flyer of ``floating_base``."""
    pin = pytest.importorskip("pinocchio")
    text = (DATA / "quadruped.urdf").read_text().replace(
        '<link name="trunk">',
        '<link name="world"/>\n  <joint name="base" type="floating">\n'
        '    <parent link="world"/>\n    <child link="trunk"/>\n'
        '    <origin xyz="0.1 0.2 0.3" rpy="0.3 0.2 0.1"/>\n  </joint>\n  <link name="trunk">')
    model = fd.load_urdf(text)
    assert model.names[:2] == ("world", "trunk") and model.nq == 19
    _assert_small(_pinocchio_errors(pin, text, model, False, 7), "floating joint")


def test_siblings_come_in_the_byte_order_of_their_joint_names():
    """Pinocchio's order, written out for the gantry (checked against Pinocchio above)."""
    model = fd.load_urdf(DATA / "gantry.urdf")
    assert model.names == ("floor", "table", "carriage_x", "carriage_y", "ram", "finger",
                           "tool")
    assert [e.name for e in fd.state_layout(model)["q"]][:3] == ["table.x", "table.y",
                                                                 "table.theta"]


# ----------------------------------------------------------------------------------------------
# limit and dynamics
# ----------------------------------------------------------------------------------------------
DAMPED = """<robot name="damped">
  <link name="base"/>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="a"/><origin xyz="0 0 0.2" rpy="0.2 0 0"/>
    <axis xyz="0 0 1"/>
    <limit lower="-1.0" upper="1.5" effort="30" velocity="2"/>
    <dynamics damping="0.7" friction="1.3"/>
  </joint>
  <link name="a"><inertial><mass value="2"/><origin xyz="0.3 0 0"/>
    <inertia ixx="0.01" iyy="0.05" izz="0.05" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j2" type="prismatic">
    <parent link="a"/><child link="b"/><origin xyz="0.5 0 0" rpy="0 0.3 0"/>
    <axis xyz="1 0 0"/>
    <limit lower="0" upper="0.4" effort="200" velocity="1"/>
    <dynamics damping="15"/>
  </joint>
  <link name="b"><inertial><mass value="1"/>
    <inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j3" type="continuous">
    <parent link="b"/><child link="c"/><axis xyz="0 1 0"/>
    <limit effort="5" velocity="3"/>
    <dynamics friction="0.4"/>
  </joint>
  <link name="c"><inertial><mass value="0.5"/><origin xyz="0 0 0.1"/>
    <inertia ixx="0.002" iyy="0.002" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
</robot>"""
#: per joint speed: damping, friction, lower, upper, effort (as written above)
DAMPED_TABLE = [(0.7, 1.3, -1.0, 1.5, 30.0), (15.0, 0.0, 0.0, 0.4, 200.0),
                (0.0, 0.4, -np.inf, np.inf, 5.0)]


def _documented_forces(q: np.ndarray, u: np.ndarray, k_l: float, c_l: float) -> np.ndarray:
    """τ_J of docs/urdf.md, written out: −c v − μ tanh(v/v_s) and the one-sided limit."""
    out = np.zeros(3)
    for k, (c, mu, lo, hi, _) in enumerate(DAMPED_TABLE):
        f = -c * u[k] - mu * np.tanh(u[k] / SMOOTHING)
        if q[k] > hi:
            f += min(0.0, -k_l * (q[k] - hi) - c_l * u[k])
        if q[k] < lo:
            f += max(0.0, -k_l * (q[k] - lo) - c_l * u[k])
        out[k] = f
    return out


def test_dynamics_and_limits_map_onto_the_joint_forces():
    pin = pytest.importorskip("pinocchio")
    model = fd.load_urdf(DAMPED)

    def passive(q, u):
        return _documented_forces(q, u, DEFAULT_LIMIT_STIFFNESS, DEFAULT_LIMIT_DAMPING)

    for seed in range(3):
        _assert_small(_pinocchio_errors(pin, DAMPED, model, False, seed, passive),
                      f"seed {seed}")
    # beyond the limits: the penalty contact of the documented stiffness and damping
    q, u = np.array([1.52, -0.01, 0.3]), np.array([0.3, -0.2, 0.1])
    expected = passive(q, u)
    assert expected[0] < 0 < expected[1]
    pr = PinRobot(pin, DAMPED, model, False)
    nle = pin.nonLinearEffects(pr.model, pr.data, pr.q(q), u)
    assert rel_err(fd.bias_forces(model, q, u), nle - expected) < RTOL
    # the effort saturates the applied force in forward dynamics
    tau = np.array([80.0, -500.0, 2.0])
    sat = np.array([30.0, -200.0, 2.0])
    a_pin = pin.aba(pr.model, pr.data, pr.q(q), u, sat + expected)
    assert rel_err(fd.forward_dynamics(model, q, u, tau), a_pin) < RTOL


def test_limits_can_be_left_out_and_tuned():
    free = fd.load_urdf(DAMPED, limit_stiffness=None)
    rows = free.joint_forces[1]
    assert np.isinf(rows[0, 6]) and np.isinf(rows[0, 7]) and rows[0, 10] == 30.0
    stiff = fd.load_urdf(DAMPED, limit_stiffness=3e6, limit_damping=7.0)
    q, u = np.array([1.6, 0.0, 0.0]), np.zeros(3)
    diff = fd.bias_forces(stiff, q, u) - fd.bias_forces(free, q, u)
    assert diff[0] == pytest.approx(3e6 * 0.1, rel=1e-9)
    assert diff[1:] == pytest.approx([0.0, 0.0], abs=1e-9)


# ----------------------------------------------------------------------------------------------
# flexible links
# ----------------------------------------------------------------------------------------------
FOREARM = {"material": ALUMINIUM, "section": tube(0.03, 0.003), "n_elements": 6,
           "n_modes": 4}


def _joint_rows(model: fd.Model) -> np.ndarray:
    """Indices of the joint speeds in ``u``."""
    return np.concatenate([np.arange(int(model.u_start[i]), int(model.u_start[i])
                                     + int(model.nu_joint[i])) for i in range(model.n_bodies)])


@pytest.mark.parametrize("robot, link, extra", [
    ("ur5", "forearm_link", {}),
    ("arm7", "link4", {"start": [0.01, 0.02, 0.0], "end": [-0.0825, 0.384, 0.0],
                       "y_axis": [0.0, 0.0, 1.0], "section": tube(0.01, 0.001)}),
])
def test_flexible_link_at_zero_deformation_is_the_rigid_link(robot, link, extra):
    """keep_inertia: at η = 0, η̇ = 0 the joint block of M, the bias forces and the inverse
    dynamics (η̈ = 0) are the rigid import's."""
    rigid = fd.load_urdf(DATA / f"{robot}.urdf")
    flex = fd.load_urdf(DATA / f"{robot}.urdf", flexible={link: {**FOREARM, **extra}})
    assert flex.n_modes[flex.index(link)] == 4
    rows = _joint_rows(flex)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, u, udot, _ = random_state(rigid, rng)
        qf, uf, af = (np.zeros(flex.nq), np.zeros(flex.nu), np.zeros(flex.nu))
        qf[[int(flex.q_start[i]) + k for i in range(flex.n_bodies)
            for k in range(int(flex.nq_joint[i]))]] = q
        uf[rows], af[rows] = u, udot
        assert rel_err(fd.mass_matrix(flex, qf)[np.ix_(rows, rows)],
                       fd.mass_matrix(rigid, q)) < RTOL
        assert rel_err(fd.bias_forces(flex, qf, uf)[rows], fd.bias_forces(rigid, q, u)) < RTOL
        assert rel_err(fd.inverse_dynamics(flex, qf, uf, af)[rows],
                       fd.inverse_dynamics(rigid, q, u, udot)) < RTOL


def _quasi_static_error(scale: float, seed: int) -> float:
    """The relative difference of the joint accelerations of the UR5 with its forearm a beam
    of ``E × scale`` and the rigid UR5, at the deflection where the modal accelerations
    vanish (η̇ = 0), at a random state."""
    stiff = {**FOREARM, "material": {"E": ALUMINIUM.E * scale, "G": ALUMINIUM.G * scale,
                                     "rho": ALUMINIUM.rho}}
    rigid = fd.load_urdf(DATA / "ur5.urdf")
    flex = fd.load_urdf(DATA / "ur5.urdf", flexible={"forearm_link": stiff})
    i = flex.index("forearm_link")
    modal = np.arange(int(flex.u_start[i] + flex.nu_joint[i]),
                      int(flex.u_start[i] + flex.nu_joint[i] + flex.n_modes[i]))
    qi = modal - int(flex.u_start[i]) + int(flex.q_start[i])
    rows = _joint_rows(flex)
    q, u, _, tau = random_state(rigid, np.random.default_rng(seed))
    tau *= 20.0
    qf, uf, tf = np.zeros(flex.nq), np.zeros(flex.nu), np.zeros(flex.nu)
    qf[rows], uf[rows], tf[rows] = q, u, tau  # one coordinate per speed here

    def modal_acc(eta):
        x = qf.copy()
        x[qi] = eta
        return fd.forward_dynamics(flex, x, uf, tf)[modal]

    eta = np.zeros(modal.size)
    for _ in range(4):  # Newton on η̈(η) = 0, central differences
        h = 1e-7 / scale
        J = np.column_stack([(modal_acc(eta + h * e) - modal_acc(eta - h * e)) / (2 * h)
                             for e in np.eye(modal.size)])
        eta = eta - np.linalg.solve(J, modal_acc(eta))
    assert np.max(np.abs(eta)) > 0.0
    qf[qi] = eta
    a_flex = fd.forward_dynamics(flex, qf, uf, tf)
    assert np.max(np.abs(a_flex[modal])) < 1e-9 * np.max(np.abs(a_flex[rows]))
    return rel_err(a_flex[rows], fd.forward_dynamics(rigid, q, u, tau))


@pytest.mark.parametrize("seed", [11, 12])
def test_stiff_flexible_link_at_its_quasi_static_deflection_moves_as_the_rigid_one(seed):
    """With E × 10⁶ the joint accelerations at the quasi-static deflection are the rigid
    arm's within 1e-6, and the difference falls as the compliance (× 10³ from E × 10³)."""
    e6, e3 = _quasi_static_error(1e6, seed), _quasi_static_error(1e3, seed)
    assert e6 < 1e-6
    assert 0.5e3 < e3 / e6 < 2e3, (e3, e6)


def test_children_of_a_flexible_link_attach_at_the_nearest_node():
    flex = fd.load_urdf(DATA / "ur5.urdf", flexible={"forearm_link": {
        **FOREARM, "end": [0.0, 0.0, 0.3]}})
    d = flex.to_dict()["bodies"]
    forearm = next(b for b in d if b["name"] == "forearm_link")
    wrist = next(b for b in d if b["name"] == "wrist_1_link")
    nodes = np.array(forearm["flex"]["nodes"])
    assert np.allclose(nodes[:, :2], 0.0) and nodes[-1, 2] == pytest.approx(0.3)
    assert wrist["joint"]["parent_node"] == len(nodes) - 1
    assert wrist["joint"]["placement"]["translation"] == pytest.approx([0.0, 0.0, 0.09225])


def test_keep_inertia_false_is_the_beam_alone():
    flex = fd.load_urdf(DATA / "ur5.urdf", flexible={"forearm_link": {
        **FOREARM, "keep_inertia": False}})
    body = flex.to_dict()["bodies"][flex.index("forearm_link")]
    section = tube(0.03, 0.003)
    assert "rigid" not in body
    assert sum(body["flex"]["node_masses"]) == pytest.approx(
        ALUMINIUM.rho * section.A * 0.39225, rel=1e-12)


@pytest.mark.parametrize("spec, message", [
    ({"material": ALUMINIUM}, "give material and section together"),
    ({**FOREARM, "lenght": 1.0}, "unknown key 'lenght'"),
    ({**FOREARM, "section": tube(0.2, 0.05)}, "exceeds the link's"),
    ({**FOREARM, "end": [0.0, 0.0, 0.0]}, "no length"),
    ({**FOREARM, "section": tube(0.01, 0.0005), "end": [1.0, 0.0, 0.0]},
     "the link's inertia less the beam's is no body's: the inertia is not positive"),
    ({**FOREARM, "section": {"radius": 0.01, "wall": 0.001}}, "section must be"),
])
def test_bad_flexible_entries(spec, message):
    with pytest.raises(URDFError, match=r'flexible\["forearm_link"\].*' + re.escape(message)):
        fd.load_urdf(DATA / "ur5.urdf", flexible={"forearm_link": spec})


def test_flexible_link_must_exist():
    with pytest.raises(URDFError, match=r'flexible\["forarm_link"\]: no such link'):
        fd.load_urdf(DATA / "ur5.urdf", flexible={"forarm_link": FOREARM})


# ----------------------------------------------------------------------------------------------
# bad files
# ----------------------------------------------------------------------------------------------
LINK = '<link name="{}"><inertial><mass value="1"/>' \
       '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'


def _robot(*elements: str) -> str:
    return "<robot name='r'>" + "".join(elements) + "</robot>"


def _joint(name: str, parent: str, child: str, jtype: str = "revolute", extra: str = "") -> str:
    return (f'<joint name="{name}" type="{jtype}"><parent link="{parent}"/>'
            f'<child link="{child}"/><axis xyz="0 0 1"/>{extra}</joint>')


BAD = {
    "malformed XML": (_robot(LINK.format("a")).replace("</link>", ""), r"malformed XML: .*line"),
    "missing link": (_robot(LINK.format("a"), _joint("j", "a", "ghost")),
                     r'<joint name="j">: link "ghost" does not exist'),
    "cycle": (_robot(LINK.format("base"), LINK.format("a"), LINK.format("b"),
                     _joint("j0", "base", "c"), LINK.format("c"),
                     _joint("j1", "a", "b"), _joint("j2", "b", "a")),
              r'<joint name="j\d">: the joints close a cycle of links "(a|b)" -> "(a|b)"'),
    "unknown joint type": (_robot(LINK.format("a"), LINK.format("b"),
                                  _joint("hinge1", "a", "b", "hinge")),
                           r"<joint name=\"hinge1\">: unknown joint type 'hinge'"),
    "indefinite inertia": (_robot(LINK.format("a"), LINK.format("b").replace(
        'ixx="1"', 'ixx="-0.5"'), _joint("j", "a", "b")),
        r'<link name="b"> <inertia>: the inertia is not positive semi-definite'),
    "triangle inequality": (_robot(LINK.format("a"), LINK.format("b").replace(
        'izz="1"', 'izz="3"'), _joint("j", "a", "b")),
        r'<link name="b"> <inertia>: .* violate the triangle inequality'),
    "mimic": (_robot(LINK.format("a"), LINK.format("b"), _joint(
        "finger2", "a", "b", "prismatic", '<mimic joint="finger1"/>')),
        r'<joint name="finger2">: mimic joints are not supported'),
    "two parents": (_robot(LINK.format("a"), LINK.format("b"), LINK.format("c"),
                           _joint("j1", "a", "c"), _joint("j2", "b", "c")),
                    r'<joint name="j2">: link "c" already has the parent joint "j1"'),
    "two roots": (_robot(LINK.format("a"), LINK.format("b")),
                  r"robot: links 'a', 'b' have no parent joint"),
    "bad number": (_robot(LINK.format("a"), LINK.format("b"), _joint(
        "j", "a", "b", extra='<origin xyz="0 0.1"/>')),
        r'<joint name="j">: <origin xyz="0 0.1"> must be three finite numbers'),
    "negative mass": (_robot(LINK.format("a").replace('value="1"', 'value="-2"')),
                      r'<link name="a">: <mass value="-2"> is negative'),
    "duplicate link": (_robot(LINK.format("a"), LINK.format("a")),
                       r'<link name="a">: a second link of that name'),
    "inverted limits": (_robot(LINK.format("a"), LINK.format("b"), _joint(
        "j", "a", "b", extra='<limit lower="1" upper="-1" effort="1" velocity="1"/>')),
        r'<joint name="j">: <limit lower="1" upper="-1">: lower must be below upper'),
    "not a robot": ("<model/>", r"the root element is <model>"),
    "negative effort": (_robot(LINK.format("a"), LINK.format("b"), _joint(
        "j", "a", "b", extra='<limit lower="-1" upper="1" effort="-3" velocity="1"/>')),
        r'<joint name="j">: <limit effort="-3"> is negative'),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_files_raise_one_error_naming_the_element(case, tmp_path):
    text, pattern = BAD[case]
    with pytest.raises(URDFError, match="URDF text: " + pattern):
        fd.load_urdf(text)
    path = tmp_path / "bad.urdf"
    path.write_text(text)
    with pytest.raises(URDFError, match=re.escape(str(path)) + ": " + pattern):
        fd.load_model(path)


def test_the_cli_reports_a_bad_urdf_on_one_line(tmp_path, capsys):
    path = tmp_path / "bad.urdf"
    path.write_text(BAD["mimic"][0])
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert 'finger2' in err and "mimic" in err and err.count("\n") == 1


# ----------------------------------------------------------------------------------------------
# files, names, command line
# ----------------------------------------------------------------------------------------------
def test_inertial_frames_and_merged_links_by_hand():
    """A link's inertia turned by its inertial rpy, a fixed child merged in: the body's mass,
    centre of mass and inertia about it, computed here from the file's numbers."""
    text = _robot(
        '<link name="a"/>', _joint("j", "a", "b"),
        '<link name="b"><inertial><mass value="2"/>'
        '<origin xyz="0.1 0 0" rpy="0 0 1.5707963267948966"/>'
        '<inertia ixx="0.01" iyy="0.04" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial></link>',
        '<joint name="f" type="fixed"><parent link="b"/><child link="c"/>'
        '<origin xyz="0.5 0 0" rpy="0 0 0"/></joint>',
        '<link name="c"><inertial><mass value="1"/>'
        '<inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0" iyz="0"/></inertial></link>')
    model = fd.load_urdf(text)
    assert model.names == ("a", "b")
    rigid = model.to_dict()["bodies"][1]["rigid"]
    # b: about its com, x and y swapped by the 90° yaw: diag(0.04, 0.01, 0.03); c at x = 0.5
    com = (2 * 0.1 + 1 * 0.5) / 3
    expected = np.diag([0.04, 0.01, 0.03]) + np.diag([0.02, 0.02, 0.02])
    expected += np.diag([0.0, 1.0, 1.0]) * (2 * (0.1 - com) ** 2 + 1 * (0.5 - com) ** 2)
    assert rigid["mass"] == pytest.approx(3.0, rel=1e-15)
    assert rigid["com"] == pytest.approx([com, 0.0, 0.0], abs=1e-15)
    assert np.allclose(rigid["inertia"], expected, rtol=0, atol=1e-15)


def test_massless_tool_frames_are_left_out_and_others_kept():
    model = fd.load_urdf(DATA / "arm7.urdf", merge_fixed=False)
    assert "hand" in model.names and "tool_center" not in model.names
    assert "world" in model.names and "link0" in model.names


@pytest.mark.parametrize("flexible", [None, {"forearm_link": FOREARM}])
def test_save_model_round_trip(tmp_path, flexible):
    model = fd.load_urdf(DATA / "ur5.urdf", flexible=flexible)
    path = tmp_path / "ur5.json"
    fd.save_model(model, path)
    back = fd.load_model(path)
    assert back.to_dict() == model.to_dict()
    q = model.neutral_configuration() + 0.1
    u = np.linspace(-1, 1, model.nu)
    assert np.array_equal(fd.bias_forces(back, q, u), fd.bias_forces(model, q, u))


def test_package_addresses_are_found_in_package_dirs(tmp_path):
    (tmp_path / "my_robot" / "urdf").mkdir(parents=True)
    (tmp_path / "my_robot" / "urdf" / "ur5.urdf").write_text((DATA / "ur5.urdf").read_text())
    for where in (tmp_path, tmp_path / "my_robot"):
        model = fd.load_urdf("package://my_robot/urdf/ur5.urdf", package_dirs=[where])
        assert model.nu == 6
    with pytest.raises(URDFError, match="not found in package_dirs"):
        fd.load_urdf("package://my_robot/urdf/ur5.urdf", package_dirs=[tmp_path / "x"])


def test_cli_info_and_simulate_read_urdf(tmp_path, capsys):
    path = str(DATA / "ur5.urdf")
    assert main(["info", path]) == 0
    out = capsys.readouterr().out
    assert "model 'ur5': 7 bodies, nq = 6, nu = 6" in out and "forearm_link" in out
    npz = tmp_path / "run.npz"
    assert main(["simulate", path, "--t", "0.05", "--out", str(npz)]) == 0
    assert npz.stat().st_size > 0
