"""Robots from URDF files, with chosen links made flexible (``docs/urdf.md``).

:func:`urdf_model_dict` reads a URDF robot (a file or its XML text, parsed with the standard
library's ``xml.etree.ElementTree``) and returns the model dict of the model-file format
(``model-format.md``), which :func:`flexdyn.load_urdf` validates and builds.

Mapping
-------
* Every link that moves on its own becomes a body named after the link; the joint to its
  parent link becomes the body's joint (``revolute`` and ``continuous`` → ``revolute``,
  ``prismatic`` → ``prismatic``, ``floating`` → ``free``, ``planar`` → ``planar`` with the
  URDF axis as the plane's normal, ``fixed`` → ``fixed``), its ``origin`` the joint's
  ``placement``, its ``axis`` (normalised) the joint axis.  The child link's frame is the
  joint's moving frame.
* Bodies come in the order of Pinocchio's ``buildModelFromUrdf``: depth first from the root
  link, the joints leaving a link taken in the byte order of their names.
* A link's ``inertial`` (mass, centre of mass and the inertia tensor about it, turned by the
  ``origin``'s rpy into the link frame) is the body's rigid part.  Links on ``fixed`` joints
  are merged into their parent's body (``merge_fixed=True``) or stay bodies on fixed joints;
  a link hanging from a flexible link on a fixed joint always stays a body, attached at the
  beam's node.  Links without mass whose subtrees have neither mass nor a moving joint (tool
  frames) carry nothing and are left out.
* ``limit``: ``lower``/``upper`` (revolute and prismatic joints) → the joint force block's
  limits with ``limit_stiffness`` and ``limit_damping``; ``effort`` > 0 → ``torque_limit``;
  ``velocity`` is not used.  ``dynamics``: ``damping`` → ``damping``, ``friction`` →
  ``coulomb`` (smoothed, :mod:`flexdyn.joint_forces`).
* A link named in ``flexible`` becomes a flexible body: a beam from ``start`` to ``end`` (link
  frame) whose modes come from :func:`flexdyn.beam.beam_modes`; with ``keep_inertia`` (the
  default) the rigid part is the URDF inertia less the beam's, so that at zero deformation
  the body has the URDF link's mass, centre of mass and inertia.  Children attach at the node
  nearest their joint's origin.

Geometry (``visual``, ``collision``), ``transmission``, ``gazebo`` and other extensions are
not read.  ``mimic`` joints are refused.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .beam import Material, Section, beam_modes, circle, rectangle, section_properties, tube
from .files import read_text
from .model_file import PSD_RTOL, TOL
from .spatial import rigid_inertia, skew, unskew

__all__ = ["DEFAULT_GRAVITY", "DEFAULT_LIMIT_DAMPING", "DEFAULT_LIMIT_STIFFNESS",
           "FLEXIBLE_KEYS", "URDFError", "URDF_JOINT_TYPES", "urdf_model_dict"]

#: The URDF joint types read, and the flexdyn joint type of each.
URDF_JOINT_TYPES: dict[str, str] = {"revolute": "revolute", "continuous": "revolute",
                                    "prismatic": "prismatic", "fixed": "fixed",
                                    "floating": "free", "planar": "planar"}
#: Joint types whose ``limit`` ``lower``/``upper`` bound the motion (URDF: not ``continuous``).
_LIMITED = ("revolute", "prismatic")
#: Joint types whose ``dynamics`` and ``limit effort`` become joint forces (their speeds are
#: the rates of their coordinates).
_FORCED = ("revolute", "continuous", "prismatic")
#: The penalty stiffness of the joint limits, N m/rad (revolute) or N/m (prismatic): the
#: limit gives way by 1 mrad (1 mm) under 100 N m (100 N).
DEFAULT_LIMIT_STIFFNESS = 1e5
#: The damping of the joint limits, N m s/rad or N s/m.
DEFAULT_LIMIT_DAMPING = 1e2
#: Gravity in the inertial frame, m/s² (as Pinocchio's default).
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
#: Keys of a flexible link's entry in ``flexible``.
FLEXIBLE_KEYS = ("start", "end", "y_axis", "material", "section", "mass_per_length", "EI_y",
                 "EI_z", "EA", "GJ", "polar_inertia_per_length", "axial", "n_elements",
                 "n_modes", "boundary", "damping_ratio", "basis", "keep_inertia")
_BEAM_PROPERTIES = ("mass_per_length", "EI_y", "EI_z", "EA", "GJ", "polar_inertia_per_length")
_BEAM_OPTIONS = ("n_elements", "n_modes", "boundary", "damping_ratio", "basis")
_MATERIAL_KEYS = ("E", "rho", "G", "nu")
#: the forms of a ``section`` mapping: its keys, and the section they make
_SECTION_FORMS = (
    (("A", "Iy", "Iz", "J"), Section),
    (("outer_radius", "wall"), tube),
    (("radius",), circle),
    (("width", "height"), rectangle),
)


class URDFError(ValueError):
    """A URDF file or text that cannot be read as a robot; the message names the file and the
    element (``<joint name="elbow">``) or link."""


# ----------------------------------------------------------------------------------------------
# the parsed robot
# ----------------------------------------------------------------------------------------------
@dataclass
class _Pose:
    """Pose ``(R, p)`` of a frame in another (``R``'s columns: its axes)."""

    R: np.ndarray = field(default_factory=lambda: np.eye(3))
    p: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def then(self, other: _Pose) -> _Pose:
        return _Pose(self.R @ other.R, self.R @ other.p + self.p)


@dataclass
class _Link:
    name: str
    mass: float = 0.0
    com: np.ndarray = field(default_factory=lambda: np.zeros(3))
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


@dataclass
class _Joint:
    name: str
    type: str
    parent: str
    child: str
    origin: _Pose
    axis: np.ndarray
    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    damping: float = 0.0
    friction: float = 0.0


def _inertia_problem(inertia: np.ndarray) -> str | None:
    """Why an inertia tensor (3 × 3, kg m²) is no body's — not positive semi-definite, or its
    principal moments violate the triangle inequality (the model file's tolerances) — or
    None."""
    eig = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    scale = float(np.max(np.abs(eig)))
    moments = ", ".join(f"{e:.6g}" for e in eig)
    if eig[0] < -PSD_RTOL * scale:
        return f"the inertia is not positive semi-definite (principal moments {moments} kg m²)"
    if eig[0] + eig[1] < eig[2] - TOL * scale:
        return (f"the principal moments {moments} kg m² violate the triangle inequality (no "
                "body has them)")
    return None


def _rpy(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF's fixed-axis roll, pitch, yaw: ``R = R_z(yaw) R_y(pitch) R_x(roll)``."""
    cr, sr, cp, sp, cy, sy = (math.cos(roll), math.sin(roll), math.cos(pitch),
                              math.sin(pitch), math.cos(yaw), math.sin(yaw))
    return np.array([[cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
                     [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
                     [-sp, cp * sr, cp * cr]])


class _Reader:
    """The elements of one URDF document, with messages that name the source."""

    def __init__(self, label: str):
        self.label = label

    def error(self, where: str, text: str) -> URDFError:
        return URDFError(f"{self.label}: {where}: {text}")

    def number(self, el: ET.Element, attr: str, where: str, default: float | None = None
               ) -> float | None:
        raw = el.get(attr)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise self.error(where, f"<{el.tag} {attr}=\"{raw}\"> is not a number") from None
        if not math.isfinite(value):
            raise self.error(where, f"<{el.tag} {attr}=\"{raw}\"> is not finite")
        return value

    def vector(self, el: ET.Element | None, attr: str, where: str, default: Sequence[float]
               ) -> np.ndarray:
        raw = None if el is None else el.get(attr)
        if raw is None:
            return np.array(default, dtype=float)
        try:
            values = [float(x) for x in raw.split()]
        except ValueError:
            values = []
        if len(values) != 3 or not all(map(math.isfinite, values)):
            raise self.error(where, f"<{el.tag} {attr}=\"{raw}\"> must be three finite "
                                    "numbers")
        return np.array(values)

    def origin(self, el: ET.Element, where: str) -> _Pose:
        o = el.find("origin")
        return _Pose(_rpy(*self.vector(o, "rpy", where, (0.0, 0.0, 0.0))),
                     self.vector(o, "xyz", where, (0.0, 0.0, 0.0)))

    def link(self, el: ET.Element, name: str) -> _Link:
        where = f'<link name="{name}">'
        inertial = el.find("inertial")
        if inertial is None:
            return _Link(name)
        mass_el = inertial.find("mass")
        mass = None if mass_el is None else self.number(mass_el, "value", where)
        if mass is None:
            raise self.error(where, "<inertial> needs <mass value=\"...\">")
        if mass < 0.0:
            raise self.error(where, f"<mass value=\"{mass_el.get('value')}\"> is negative")
        pose = self.origin(inertial, where)
        i_el = inertial.find("inertia")
        keys = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        xx, xy, xz, yy, yz, zz = (0.0 if i_el is None else self.number(i_el, k, where, 0.0)
                                  for k in keys)
        inertia = pose.R @ np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) @ pose.R.T
        self.check_inertia(where + " <inertia>", inertia)
        return _Link(name, mass, pose.p, inertia)

    def check_inertia(self, where: str, inertia: np.ndarray) -> None:
        problem = _inertia_problem(inertia)
        if problem:
            raise self.error(where, problem)

    def joint(self, el: ET.Element, name: str) -> _Joint:
        where = f'<joint name="{name}">'
        jtype = el.get("type")
        if jtype not in URDF_JOINT_TYPES:
            raise self.error(where, f"unknown joint type {jtype!r}; URDF joint types are "
                                    f"{', '.join(URDF_JOINT_TYPES)}")
        if el.find("mimic") is not None:
            raise self.error(where, "mimic joints are not supported (flexdyn has no coupled "
                                    "joints); give the joint its own coordinate or fix it")
        ends = []
        for tag in ("parent", "child"):
            e = el.find(tag)
            if e is None or not e.get("link"):
                raise self.error(where, f"needs <{tag} link=\"...\">")
            ends.append(e.get("link"))
        axis = self.vector(el.find("axis"), "xyz", where, (1.0, 0.0, 0.0))
        norm = float(np.linalg.norm(axis))
        if jtype not in ("fixed", "floating") and norm == 0.0:
            raise self.error(where, "<axis xyz=\"0 0 0\"> is the zero vector")
        j = _Joint(name, jtype, ends[0], ends[1], self.origin(el, where),
                   axis / norm if norm else axis)
        lim = el.find("limit")
        if lim is not None and jtype in _FORCED:
            if jtype in _LIMITED:
                j.lower, j.upper = (self.number(lim, k, where) for k in ("lower", "upper"))
                if j.lower is not None and j.upper is not None and j.lower >= j.upper:
                    raise self.error(where, f"<limit lower=\"{lim.get('lower')}\" upper=\""
                                            f"{lim.get('upper')}\">: lower must be below upper")
            j.effort = self.number(lim, "effort", where)
            if j.effort is not None and j.effort < 0.0:
                raise self.error(where, f"<limit effort=\"{lim.get('effort')}\"> is negative")
        dyn = el.find("dynamics")
        if dyn is not None:
            j.damping, j.friction = (self.number(dyn, k, where, 0.0)
                                     for k in ("damping", "friction"))
            for key, value in (("damping", j.damping), ("friction", j.friction)):
                if value < 0.0:
                    raise self.error(where, f"<dynamics {key}=\"{dyn.get(key)}\"> is negative")
                if value > 0.0 and jtype not in _FORCED:
                    raise self.error(where, f"<dynamics {key}> on a {jtype} joint: flexdyn's "
                                            "joint forces act on revolute, continuous and "
                                            "prismatic joints only")
        return j


def _source_text(source: str | os.PathLike, package_dirs: Sequence[str | os.PathLike]
                 ) -> tuple[str, str]:
    """``(label, XML text)`` of ``source``: a path (``package://`` resolved in
    ``package_dirs``) or the XML text itself."""
    if isinstance(source, str) and source.lstrip().startswith("<"):
        return "URDF text", source
    text = os.fspath(source)
    if text.startswith("package://"):
        rest = text[len("package://"):]
        package = rest.split("/", 1)[0]
        candidates = []
        for d in map(Path, package_dirs):
            candidates += [d / rest] + ([d / rest.split("/", 1)[-1]] if d.name == package else [])
        found = [c for c in candidates if c.is_file()]
        if not found:
            raise URDFError(f"{text}: not found in package_dirs "
                            f"{[os.fspath(d) for d in package_dirs]}")
        text = os.fspath(found[0])
    return text, read_text(text)


# ----------------------------------------------------------------------------------------------
# the tree
# ----------------------------------------------------------------------------------------------
def _parse(label: str, text: str) -> tuple[str, dict[str, _Link], dict[str, _Joint]]:
    """The robot's name, links and joints, each checked."""
    reader = _Reader(label)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise URDFError(f"{label}: malformed XML: {exc}") from None
    if root.tag != "robot":
        raise URDFError(f"{label}: the root element is <{root.tag}>, expected <robot>")
    links: dict[str, _Link] = {}
    joints: dict[str, _Joint] = {}
    for tag, table, parse in (("link", links, reader.link), ("joint", joints, reader.joint)):
        for el in root.findall(tag):
            name = el.get("name")
            if not name:
                raise reader.error(f"<{tag}> number {len(table) + 1}", "has no name")
            if name in table:
                raise reader.error(f'<{tag} name="{name}">', f"a second {tag} of that name")
            table[name] = parse(el, name)
    if not links:
        raise URDFError(f"{label}: the robot has no <link>")
    return root.get("name", ""), links, joints


def _tree(reader: _Reader, links: Mapping[str, _Link], joints: Mapping[str, _Joint]
          ) -> tuple[str, dict[str, _Joint], dict[str, list[_Joint]]]:
    """The root link, each link's parent joint and each link's child joints (in the byte order
    of their names); a missing link, a link with two parents, several roots or a cycle raise."""
    parent_joint: dict[str, _Joint] = {}
    children: dict[str, list[_Joint]] = {name: [] for name in links}
    for j in joints.values():
        for end in (j.parent, j.child):
            if end not in links:
                raise reader.error(f'<joint name="{j.name}">', f'link "{end}" does not exist')
        if j.child in parent_joint:
            raise reader.error(f'<joint name="{j.name}">',
                               f'link "{j.child}" already has the parent joint '
                               f'"{parent_joint[j.child].name}"; a URDF robot is a tree')
        parent_joint[j.child] = j
        children[j.parent].append(j)
    for kids in children.values():
        kids.sort(key=lambda j: j.name.encode("utf-8"))
    roots = [name for name in links if name not in parent_joint]
    if len(roots) > 1:
        raise reader.error("robot", f"links {', '.join(map(repr, roots))} have no parent "
                                    "joint; a URDF robot has one root link")
    reached = set(_depth_first(roots[0], children)) if roots else set()
    lost = [name for name in links if name not in reached]
    if lost:
        cycle, link = [], lost[0]
        while link not in cycle:
            cycle.append(link)
            link = parent_joint[link].parent
        cycle = cycle[cycle.index(link):][::-1]
        path = " -> ".join(f'"{c}"' for c in [*cycle, cycle[0]])
        raise reader.error(f'<joint name="{parent_joint[cycle[0]].name}">',
                           f"the joints close a cycle of links {path}; a URDF robot is a tree")
    return roots[0], parent_joint, children


def _depth_first(root: str, children: Mapping[str, list[_Joint]]) -> list[str]:
    """The links in Pinocchio's order: depth first, each link's child joints in order."""
    out, stack = [], [root]
    while stack:
        link = stack.pop()
        out.append(link)
        stack.extend(j.child for j in reversed(children[link]))
    return out


# ----------------------------------------------------------------------------------------------
# flexible links
# ----------------------------------------------------------------------------------------------
def _section(reader: _Reader, where: str, value: Any) -> Section:
    if isinstance(value, Section):
        return value
    if isinstance(value, Mapping):
        for keys, make in _SECTION_FORMS:
            if set(value) == set(keys):
                return make(**{k: float(value[k]) for k in keys})
    forms = "; ".join(", ".join(keys) for keys, _ in _SECTION_FORMS)
    raise reader.error(where, f"section must be a flexdyn.beam.Section or a mapping with the "
                              f"keys of one of: {forms}; got {value!r}")


def _material(reader: _Reader, where: str, value: Any) -> Material:
    if isinstance(value, Material):
        return value
    if isinstance(value, Mapping) and set(value) <= set(_MATERIAL_KEYS):
        return Material(**value)
    raise reader.error(where, f"material must be a flexdyn.beam.Material or a mapping with "
                              f"keys among {', '.join(_MATERIAL_KEYS)} (E and rho required); "
                              f"got {value!r}")


def _point(reader: _Reader, where: str, key: str, value: Any) -> np.ndarray:
    p = np.asarray(value, dtype=float)
    if p.shape != (3,) or not np.all(np.isfinite(p)):
        raise reader.error(where, f"{key} must be a point [x, y, z] in the link frame (m), "
                                  f"got {value!r}")
    return p


def _beam_frame(reader: _Reader, where: str, axis: np.ndarray, y_axis: Any) -> np.ndarray:
    """The beam's axes in the link frame (columns): ``x`` along the beam, ``y`` the projection
    of ``y_axis`` (default: the link's y axis, or its z axis when y is within 25° of the
    beam), ``z = x × y``."""
    if y_axis is None:
        y_ref = np.eye(3)[1] if abs(axis[1]) < 0.9 else np.eye(3)[2]
    else:
        y_ref = _point(reader, where, "y_axis", y_axis)
    y = y_ref - (y_ref @ axis) * axis
    if np.linalg.norm(y) <= 1e-6 * max(float(np.linalg.norm(y_ref)), 1e-300):
        raise reader.error(where, f"y_axis {list(y_ref)} is parallel to the beam")
    y = y / np.linalg.norm(y)
    return np.column_stack([axis, y, np.cross(axis, y)])


def _flexible(reader: _Reader, link: _Link, spec: Mapping[str, Any], child_origins:
              Sequence[np.ndarray]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """``(flex block, rigid block or None)`` of a flexible link (``docs/urdf.md``)."""
    where = f'flexible["{link.name}"]'
    if not isinstance(spec, Mapping):
        raise reader.error(where, f"must be a mapping of the keys {', '.join(FLEXIBLE_KEYS)}")
    unknown = [k for k in spec if k not in FLEXIBLE_KEYS]
    if unknown:
        raise reader.error(where, f"unknown key {unknown[0]!r}; keys are "
                                  f"{', '.join(FLEXIBLE_KEYS)}")
    start = _point(reader, where, "start", spec.get("start", (0.0, 0.0, 0.0)))
    if spec.get("end") is None:
        if len(child_origins) != 1:
            raise reader.error(where, f"the link has {len(child_origins)} child joints: give "
                                      "the beam's end (a point in the link frame)")
        end = child_origins[0]
    else:
        end = _point(reader, where, "end", spec["end"])
    length = float(np.linalg.norm(end - start))
    if length == 0.0:
        raise reader.error(where, "start and end coincide: the beam has no length")
    R = _beam_frame(reader, where, (end - start) / length, spec.get("y_axis"))
    props: dict[str, Any] = {}
    if (spec.get("material") is None) != (spec.get("section") is None):
        raise reader.error(where, "give material and section together (or beam properties)")
    if spec.get("material") is not None:
        props = section_properties(_material(reader, where, spec["material"]),
                                   _section(reader, where, spec["section"]),
                                   axial=bool(spec.get("axial", False)))
    props.update({k: spec[k] for k in _BEAM_PROPERTIES if spec.get(k) is not None})
    props.update({k: spec[k] for k in _BEAM_OPTIONS if spec.get(k) is not None})
    try:
        beam = beam_modes(length, **props)
    except (TypeError, ValueError) as exc:
        raise reader.error(where, str(exc)) from None
    n = beam.n_nodes
    rot = np.kron(np.eye(2 * n), R)  # [r; t] of every node, turned into the link frame
    flex = {"nodes": start + beam.nodes @ R.T, "node_masses": beam.node_masses,
            "node_inertias": R @ beam.node_inertias @ R.T, "modes": rot @ beam.modes,
            "stiffness": beam.stiffness, "damping": beam.damping}
    if beam.geometric_stiffness_1 is not None:
        flex.update(geometric_stiffness_1=beam.geometric_stiffness_1,
                    geometric_stiffness_2=beam.geometric_stiffness_2,
                    axial_modes=beam.axial_modes.tolist())
    if not spec.get("keep_inertia", True):
        return flex, None
    beam_inertia = sum(rigid_inertia(m, x, J) for x, m, J in
                       zip(flex["nodes"], flex["node_masses"], flex["node_inertias"],
                           strict=True))
    rest = _rigid_part(rigid_inertia(link.mass, link.com, link.inertia) - beam_inertia)
    if rest["mass"] < -1e-12 * max(link.mass, 1e-300):
        raise reader.error(where, f"the beam's mass {beam.total_mass:.6g} kg exceeds the link's "
                                  f"{link.mass:.6g} kg; choose a lighter beam or keep_inertia="
                                  "False")
    rest["mass"] = max(rest["mass"], 0.0)
    problem = _inertia_problem(rest["inertia"])
    if problem:
        raise reader.error(where, f"the link's inertia less the beam's is no body's: {problem}; "
                                  "choose a lighter or shorter beam, or keep_inertia=False")
    return flex, rest


def _rigid_part(M: np.ndarray) -> dict[str, Any]:
    """``{"mass", "com", "inertia"}`` of a spatial inertia about a frame origin (6 × 6,
    angular first, :func:`flexdyn.spatial.rigid_inertia`)."""
    m = float(M[3, 3])
    c = unskew(M[:3, 3:]) / m if m > 0.0 else np.zeros(3)
    C = skew(c)
    inertia = M[:3, :3] + m * C @ C
    return {"mass": m, "com": c, "inertia": 0.5 * (inertia + inertia.T)}


# ----------------------------------------------------------------------------------------------
# the model dict
# ----------------------------------------------------------------------------------------------
def urdf_model_dict(
    source: str | os.PathLike,
    *,
    flexible: Mapping[str, Mapping[str, Any]] | None = None,
    floating_base: bool = False,
    package_dirs: Sequence[str | os.PathLike] = (),
    merge_fixed: bool = True,
    limit_stiffness: float | None = DEFAULT_LIMIT_STIFFNESS,
    limit_damping: float = DEFAULT_LIMIT_DAMPING,
    gravity: Sequence[float] = DEFAULT_GRAVITY,
) -> dict[str, Any]:
    """The model dict (model-file format) of a URDF robot; :func:`flexdyn.load_urdf` builds it.

    Parameters are those of :func:`flexdyn.load_urdf`.

    Raises
    ------
    URDFError
        For malformed XML, a missing or duplicate link or joint, a link with two parents, a
        cycle, several root links, an unknown joint type, a ``mimic`` joint, a number that is
        not one, a negative mass, an inertia that is not positive semi-definite or violates
        the triangle inequality, and an invalid ``flexible`` entry, naming the element.
    """
    label, text = _source_text(source, package_dirs)
    reader = _Reader(label)
    name, links, joints = _parse(label, text)
    root, parent_joint, children = _tree(reader, links, joints)
    flexible = dict(flexible or {})
    for link in flexible:
        if link not in links:
            raise reader.error(f'flexible["{link}"]', f"no such link; links are "
                                                      f"{', '.join(map(repr, links))}")
    order = _depth_first(root, children)

    def carries(link: str) -> bool:  # the link or its subtree has mass or a moving joint
        own = links[link].mass > 0.0 or np.any(links[link].inertia) or link in flexible
        return bool(own) or any(j.type != "fixed" or carries(j.child) for j in children[link])

    bodies: list[dict[str, Any]] = []
    inertia: dict[str, np.ndarray] = {}  # a rigid body's spatial inertia about its frame
    nodes: dict[str, np.ndarray] = {}  # a flexible body's nodes
    owner: dict[str, tuple[str, _Pose]] = {}  # link -> (its body, its pose in the body)
    for link in order:
        j = parent_joint.get(link)
        if j is None:
            joint: dict[str, Any] = {"type": "free" if floating_base else "fixed"}
            parent = None
        else:
            parent, pose = owner[j.parent]
            pose = pose.then(j.origin)
            on_node = parent in nodes
            if j.type == "fixed" and link not in flexible and not carries(link):
                owner[link] = (parent, pose)
                continue
            if j.type == "fixed" and merge_fixed and link not in flexible and not on_node:
                owner[link] = (parent, pose)
                L = links[link]
                inertia[parent] = inertia[parent] + rigid_inertia(
                    L.mass, pose.R @ L.com + pose.p, pose.R @ L.inertia @ pose.R.T)
                continue
            joint = _joint_block(j, pose, nodes.get(parent), limit_stiffness, limit_damping)
        owner[link] = (link, _Pose())
        body: dict[str, Any] = {"name": link, "parent": parent, "joint": joint}
        L = links[link]
        if link in flexible:
            origins = [c.origin.p for c in children[link]]
            body["flex"], rigid = _flexible(reader, L, flexible[link], origins)
            nodes[link] = np.asarray(body["flex"]["nodes"])
            if rigid is not None:
                body["rigid"] = rigid
        else:
            inertia[link] = rigid_inertia(L.mass, L.com, L.inertia)
        bodies.append(body)
    for body in bodies:
        if body["name"] in inertia:
            body["rigid"] = _rigid_part(inertia[body["name"]])
    return {"name": name, "gravity": list(gravity), "bodies": bodies}


def _joint_block(j: _Joint, pose: _Pose, parent_nodes: np.ndarray | None,
                 limit_stiffness: float | None, limit_damping: float) -> dict[str, Any]:
    """The model-file joint of URDF joint ``j`` whose fixed frame has ``pose`` in its parent
    body (attached at the node nearest the joint's origin when the parent is flexible)."""
    joint: dict[str, Any] = {"type": URDF_JOINT_TYPES[j.type]}
    if j.type not in ("fixed", "floating"):
        joint["axis"] = j.axis
    p = pose.p
    if parent_nodes is not None:
        k = int(np.argmin(np.linalg.norm(parent_nodes - p, axis=1)))
        joint["parent_node"] = k
        p = p - parent_nodes[k]
    joint["placement"] = {"rotation": pose.R, "translation": p}
    forces: dict[str, float] = {}
    if j.lower is not None and limit_stiffness is not None:
        forces["lower"] = j.lower
    if j.upper is not None and limit_stiffness is not None:
        forces["upper"] = j.upper
    if forces:
        forces.update(limit_stiffness=limit_stiffness, limit_damping=limit_damping)
    if j.effort is not None and j.effort > 0.0:
        forces["torque_limit"] = j.effort
    if j.damping > 0.0:
        forces["damping"] = j.damping
    if j.friction > 0.0:
        forces["coulomb"] = j.friction
    if forces:
        joint["forces"] = forces
    return joint
