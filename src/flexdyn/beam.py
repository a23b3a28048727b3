"""Flexible-body modal data for a straight uniform beam.

This module turns elementary beam properties (mass per length and the axial,
torsional and bending stiffnesses) into the lumped-mass nodal data that
describes a flexible body in flexdyn: node positions, node masses, node rotary
inertias, a mass-normalised modal matrix and the modal stiffness and damping.

Conventions
-----------
* The beam is straight and uniform, lies along the body-frame x-axis and runs
  from the origin (node 0, ``x = 0``) to ``x = length``.
* Nodal degrees of freedom are ordered **rotation first, then translation**:
  node ``j`` owns rows ``6j .. 6j+5`` of the modal matrix, in the order
  ``[rx, ry, rz, tx, ty, tz]``.
* Small rotations follow the right-hand rule, so for bending
  ``rz = +d(ty)/dx`` (x-y plane, stiffness ``EI_z``) and
  ``ry = -d(tz)/dx`` (x-z plane, stiffness ``EI_y``).
* The mass matrix is lumped: each element gives half of its mass (and half of
  its polar inertia) to each of its two end nodes.  The node rotary inertia is
  ``J_j = diag(Ip_j, Ip_j/2, Ip_j/2)`` from the polar inertia (zero without
  one: Euler-Bernoulli bending without rotary inertia).  Per node the lumped
  mass matrix is ``diag(J_j, m_j I3)``; this is exactly the matrix implied by the
  returned ``node_masses`` and ``node_inertias``, and the modes are
  mass-normalised with respect to it:
  ``sum_j Pi_j^T diag(J_j, m_j I3) Pi_j = I``.
* Degrees of freedom without mass (the rotations when no polar inertia is
  given) are eliminated by static (Guyan)
  condensation before the eigen-analysis and recovered afterwards, so the
  rotation rows of the returned modes are filled.

Because the beam is straight and the mass is lumped, axial, torsional and the
two bending deformations are uncoupled.  They are analysed separately and the
resulting modes merged in ascending frequency; every mode therefore involves a
single deformation type (this keeps the modes well defined even when
``EI_y == EI_z`` makes bending frequencies coincide).
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy

__all__ = ["ALUMINIUM", "BeamModes", "MEMBRANE_FORMS", "MODE_FAMILIES", "Material",
           "PLANE_FAMILIES", "STEEL", "Section", "beam_modes", "circle",
           "frame_element_mass", "frame_element_stiffness", "geometric_stiffness", "nodal_beam",
           "rectangle",
           "section_properties", "tube"]

_BOUNDARIES = ("cantilever", "free-free")

# Local DOF indices inside one node's 6-vector [rx, ry, rz, tx, ty, tz].
_RX, _RY, _RZ, _TX, _TY, _TZ = range(6)

# Relative frequency threshold (omega / omega_max of a deformation group) below
# which an eigenpair of a free-free beam is treated as a rigid-body mode.  The
# rigid-body eigenvalues come out of eigh at ~1e-16 * lambda_max, i.e.
# omega ~ 1e-8 * omega_max, while the lowest elastic bending eigenvalue is
# ~ lambda_max / n_elements**4; 3e-7 separates both up to a few thousand elements.
_RIGID_FREQ_REL_TOL = 3e-7

# Relative tolerance for treating two frequencies as equal when ordering modes.
_TIE_REL_TOL = 1e-9


@dataclass(frozen=True)
class BeamModes:
    """Lumped-mass modal description of a flexible beam (body frame, SI units).

    Attributes
    ----------
    nodes : numpy.ndarray, shape (n, 3)
        Undeformed node positions [m].
    node_masses : numpy.ndarray, shape (n,)
        Lumped point masses [kg].
    node_inertias : numpy.ndarray, shape (n, 3, 3)
        Lumped rotary inertias about the nodes [kg m^2].
    modes : numpy.ndarray, shape (6n, m)
        Mass-normalised modal matrix Pi.  Rows ``6j .. 6j+5`` hold node ``j``'s
        ``[rx, ry, rz, tx, ty, tz]`` (rotations [rad], translations [m], per
        unit modal coordinate).
    stiffness : numpy.ndarray, shape (m, m)
        Modal stiffness ``diag(frequencies**2)`` [1/s^2].
    damping : numpy.ndarray, shape (m, m)
        Modal damping ``diag(2 zeta_i frequencies_i)`` [1/s].
    frequencies : numpy.ndarray, shape (m,)
        Natural circular frequencies [rad/s], ascending.
    geometric_stiffness_1, geometric_stiffness_2 : numpy.ndarray or None
        The symmetric tensors ``K1 = ∂³U/∂η³`` (m, m, m) and ``K2 = ∂⁴U/∂η⁴``
        (m, m, m, m) of the strain energy's cubic and quartic parts (see
        :func:`geometric_stiffness`); None without ``EA`` (an inextensible
        beam has no membrane strain).
    axial_modes : numpy.ndarray, shape (k,)
        Indices of the stretch (axial) modes.
    families : tuple of str, length m
        The family of each mode (:data:`MODE_FAMILIES`): ``"transverse_y"`` deflects along
        the body y axis, ``"transverse_z"`` along z, ``"axial"`` stretches along x,
        ``"torsion"`` twists about x.
    section_forces : numpy.ndarray, shape (n - 1, 6, m), or None
        The section forces per unit modal coordinate, for
        :meth:`flexdyn.SimulationResult.modal_superposition`: at the section through node
        ``e`` (the start of the segment to node ``e + 1``), the wrench ``[Mx, My, Mz, N, Vy,
        Vz]`` (torque, bending moments, axial and shear forces; N m, N) that the part of the
        beam before it (towards node 0) exerts on the part after it, about node ``e`` in the
        beam's own axes (x along it; :meth:`placed` leaves them so).  Each segment's end
        forces ``k_e u_e`` of the frame element between its nodes
        (:func:`frame_element_stiffness`): exact for the lumped and finite-element bases,
        the frame element's interpolation of the continuous eigenfunctions in the natural
        basis.  The rows of a deformation the beam does not have (no ``EA``: ``N``; no
        ``GJ``: ``Mx``; no ``EI_y``: ``My`` and ``Vz``; no ``EI_z``: ``Mz`` and ``Vy``) are
        NaN: an inextensible beam's axial force, for one, is a constraint force, not a modal
        quantity.
    """

    nodes: np.ndarray
    node_masses: np.ndarray
    node_inertias: np.ndarray
    modes: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    frequencies: np.ndarray
    geometric_stiffness_1: np.ndarray | None = None
    geometric_stiffness_2: np.ndarray | None = None
    axial_modes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    families: tuple[str, ...] = ()
    section_forces: np.ndarray | None = None

    @property
    def n_nodes(self) -> int:
        """Number of nodes ``n``."""
        return int(self.nodes.shape[0])

    @property
    def n_modes(self) -> int:
        """Number of modes ``m``."""
        return int(self.modes.shape[1])

    @property
    def total_mass(self) -> float:
        """Total mass of the body [kg]."""
        return float(np.sum(self.node_masses))

    def mass_matrix(self) -> np.ndarray:
        """Lumped nodal mass matrix implied by the node data.

        Returns
        -------
        numpy.ndarray, shape (6n, 6n)
            Block diagonal; node ``j``'s block is
            ``diag(node_inertias[j], node_masses[j] * I3)``.
        """
        return _lumped_mass_matrix(self.node_masses, self.node_inertias)

    def placed(self, origin: Any, rotation: Any) -> BeamModes:
        """The same beam placed in another body frame: node ``j`` at ``origin + R x_j``, its
        rotation and translation rows and its rotary inertia turned by ``R`` (``R Π_j``,
        ``R J_j Rᵀ``); frequencies, modal stiffness, damping and stiffening tensors are those
        of the modal coordinates and do not change.

        Parameters
        ----------
        origin : array_like, shape (3,)
            Where the beam starts (node 0) in the new frame [m].
        rotation : array_like, shape (3, 3)
            A rotation whose columns are the beam's x (along the beam), y and z axes in the
            new frame.
        """
        R = np.asarray(rotation, dtype=float)
        n = self.n_nodes
        turned = np.einsum("ab,jkbm->jkam", R, self.modes.reshape(n, 2, 3, self.n_modes))
        return BeamModes(nodes=np.asarray(origin, dtype=float) + self.nodes @ R.T,
                         node_masses=self.node_masses,
                         node_inertias=np.einsum("ab,jbc,dc->jad", R, self.node_inertias, R),
                         modes=turned.reshape(6 * n, self.n_modes), stiffness=self.stiffness,
                         damping=self.damping, frequencies=self.frequencies,
                         geometric_stiffness_1=self.geometric_stiffness_1,
                         geometric_stiffness_2=self.geometric_stiffness_2,
                         axial_modes=self.axial_modes, families=self.families,
                         section_forces=self.section_forces)

    def to_flex_dict(self) -> dict[str, Any]:
        """Plain, JSON-serialisable flexible-body description.

        Returns
        -------
        dict
            Keys ``nodes`` (n x 3), ``node_masses`` (n), ``node_inertias``
            (n x 3 x 3), ``modes`` (6n x m), ``stiffness`` (m x m) and
            ``damping`` (m x m), each as nested lists of Python floats; with
            the stiffening data also ``geometric_stiffness_1`` (m x m x m),
            ``geometric_stiffness_2`` (m x m x m x m) and ``axial_modes``
            (indices).
        """
        out: dict[str, Any] = {
            "nodes": np.asarray(self.nodes, dtype=float).tolist(),
            "node_masses": np.asarray(self.node_masses, dtype=float).tolist(),
            "node_inertias": np.asarray(self.node_inertias, dtype=float).tolist(),
            "modes": np.asarray(self.modes, dtype=float).tolist(),
            "stiffness": np.asarray(self.stiffness, dtype=float).tolist(),
            "damping": np.asarray(self.damping, dtype=float).tolist(),
        }
        if self.geometric_stiffness_1 is not None:
            out["geometric_stiffness_1"] = np.asarray(self.geometric_stiffness_1).tolist()
            out["geometric_stiffness_2"] = np.asarray(self.geometric_stiffness_2).tolist()
            out["axial_modes"] = [int(k) for k in self.axial_modes]
        return out


def frame_element_stiffness(
    length: float,
    *,
    EA: float = 0.0,
    GJ: float = 0.0,
    EI_y: float = 0.0,
    EI_z: float = 0.0,
) -> np.ndarray:
    """Stiffness matrix of a 3D Euler-Bernoulli frame element along x.

    Parameters
    ----------
    length : float
        Element length [m].
    EA : float, optional
        Axial stiffness [N].
    GJ : float, optional
        Torsional stiffness [N m^2].
    EI_y : float, optional
        Bending stiffness for deflection ``tz`` / rotation ``ry`` (x-z plane)
        [N m^2].
    EI_z : float, optional
        Bending stiffness for deflection ``ty`` / rotation ``rz`` (x-y plane)
        [N m^2].

    Returns
    -------
    numpy.ndarray, shape (12, 12)
        Element stiffness for the DOFs ``[rx, ry, rz, tx, ty, tz]`` of the
        first node followed by those of the second node.  Rigid-body motions of
        the element (with ``rz = d(ty)/dx`` and ``ry = -d(tz)/dx``) lie in its
        null space.
    """
    L = float(length)
    if not (math.isfinite(L) and L > 0.0):
        raise ValueError(f"frame_element_stiffness: length={length!r} must be positive")
    k = np.zeros((12, 12))

    def add_bar(dof: int, stiff: float) -> None:
        idx = [dof, 6 + dof]
        k[np.ix_(idx, idx)] += stiff / L * np.array([[1.0, -1.0], [-1.0, 1.0]])

    add_bar(_TX, EA)
    add_bar(_RX, GJ)

    # Bending with DOF order (w_a, theta_a, w_b, theta_b), theta = +dw/dx.
    kb = (
        np.array(
            [
                [12.0, 6.0 * L, -12.0, 6.0 * L],
                [6.0 * L, 4.0 * L * L, -6.0 * L, 2.0 * L * L],
                [-12.0, -6.0 * L, 12.0, -6.0 * L],
                [6.0 * L, 2.0 * L * L, -6.0 * L, 4.0 * L * L],
            ]
        )
        / L**3
    )

    # x-y plane: w = ty, theta = rz = +d(ty)/dx.
    idx_xy = [_TY, _RZ, 6 + _TY, 6 + _RZ]
    k[np.ix_(idx_xy, idx_xy)] += EI_z * kb
    # x-z plane: w = tz, theta = -ry = d(tz)/dx, i.e. flip the rotation sign.
    flip = np.diag([1.0, -1.0, 1.0, -1.0])
    idx_xz = [_TZ, _RY, 6 + _TZ, 6 + _RY]
    k[np.ix_(idx_xz, idx_xz)] += EI_y * (flip @ kb @ flip)
    return k


def frame_element_mass(length: float, mass_per_length: float,
                       polar_inertia_per_length: float = 0.0) -> np.ndarray:
    """Consistent mass matrix of a 3D Euler-Bernoulli frame element along x.

    The interpolation of :func:`frame_element_stiffness`: linear for the stretch and the
    twist, cubic Hermite for the bending (with ``rz = d(ty)/dx`` and ``ry = -d(tz)/dx``);
    the rotary inertia of the bending is left out, as in the element's stiffness.  The
    element reproduces rigid-body motion exactly: its rigid-body mass, centre and inertia are
    those of the uniform bar.

    Parameters
    ----------
    length : float
        Element length [m].
    mass_per_length : float
        [kg/m].
    polar_inertia_per_length : float, optional
        Rotary inertia of the section about the element's axis, per length [kg m].

    Returns
    -------
    numpy.ndarray, shape (12, 12)
        For the DOFs ``[rx, ry, rz, tx, ty, tz]`` of the first node followed by those of the
        second node.
    """
    L = float(length)
    if not (math.isfinite(L) and L > 0.0):
        raise ValueError(f"frame_element_mass: length={length!r} must be positive")
    mu, ip = float(mass_per_length), float(polar_inertia_per_length)
    if not (math.isfinite(mu) and mu >= 0.0 and math.isfinite(ip) and ip >= 0.0):
        raise ValueError("frame_element_mass: mass_per_length and polar_inertia_per_length "
                         f"must be >= 0, got {mass_per_length!r}, {polar_inertia_per_length!r}")
    m = np.zeros((12, 12))
    bar = np.array([[2.0, 1.0], [1.0, 2.0]]) / 6.0
    m[np.ix_([_TX, 6 + _TX], [_TX, 6 + _TX])] = mu * L * bar
    m[np.ix_([_RX, 6 + _RX], [_RX, 6 + _RX])] = ip * L * bar
    # bending with DOF order (w_a, theta_a, w_b, theta_b), theta = +dw/dx
    mb = mu * L / 420.0 * np.array([[156.0, 22.0 * L, 54.0, -13.0 * L],
                                    [22.0 * L, 4.0 * L * L, 13.0 * L, -3.0 * L * L],
                                    [54.0, 13.0 * L, 156.0, -22.0 * L],
                                    [-13.0 * L, -3.0 * L * L, -22.0 * L, 4.0 * L * L]])
    m[np.ix_([_TY, _RZ, 6 + _TY, 6 + _RZ], [_TY, _RZ, 6 + _TY, 6 + _RZ])] = mb
    flip = np.diag([1.0, -1.0, 1.0, -1.0])
    idx_xz = [_TZ, _RY, 6 + _TZ, 6 + _RY]
    m[np.ix_(idx_xz, idx_xz)] = flip @ mb @ flip
    return m


@dataclass(frozen=True)
class Material:
    """An isotropic material: Young's modulus ``E`` (Pa), density ``rho`` (kg/m³) and the
    shear modulus ``G`` (Pa; from Poisson's ratio ``nu`` as ``E / (2 (1 + nu))`` if not
    given; None: no torsion from this material)."""

    E: float
    rho: float
    G: float | None = None
    nu: float | None = None

    def __post_init__(self) -> None:
        for key in ("E", "rho"):
            _positive_float(getattr(self, key), key, "Material")
        if self.G is None and self.nu is not None:
            if not -1.0 < self.nu < 0.5:
                raise ValueError(f"Material: nu={self.nu!r} must lie in (-1, 0.5)")
            object.__setattr__(self, "G", self.E / (2.0 * (1.0 + self.nu)))
        if self.G is not None:
            _positive_float(self.G, "G", "Material")


@dataclass(frozen=True)
class Section:
    """A beam cross-section in the body y–z plane: area ``A`` (m²), second moments
    ``Iy = ∫ z² dA`` (bending with deflection along z) and ``Iz = ∫ y² dA`` (m⁴), and the
    torsion constant ``J`` (m⁴; the polar moment for circular sections)."""

    A: float
    Iy: float
    Iz: float
    J: float

    def __post_init__(self) -> None:
        for key in ("A", "Iy", "Iz", "J"):
            _positive_float(getattr(self, key), key, "Section")


def tube(outer_radius: float, wall: float) -> Section:
    """A circular tube of outer radius and wall thickness (m)."""
    _positive_float(outer_radius, "outer_radius", "tube")
    _positive_float(wall, "wall", "tube")
    if wall > outer_radius:
        raise ValueError(f"tube: wall={wall!r} is thicker than outer_radius={outer_radius!r}")
    r_in = outer_radius - wall
    inertia = np.pi / 4.0 * (outer_radius**4 - r_in**4)
    return Section(np.pi * (outer_radius**2 - r_in**2), inertia, inertia, 2.0 * inertia)


def circle(radius: float) -> Section:
    """A solid circular section of radius (m)."""
    return tube(radius, radius)


def rectangle(width: float | None = None, height: float | None = None, *,
              size_y: float | None = None, size_z: float | None = None) -> Section:
    """A solid rectangle in the body y–z plane (m): ``rectangle(size_y=0.04, size_z=0.005)``
    names the body axis of each side (the form to prefer: a 40 × 5 mm strip bends 64 times
    more easily along z than along y, and swapping the sides swaps the two); the positional
    ``rectangle(width, height)`` is the same with ``width`` along y and ``height`` along z.

    The torsion constant is Roark's ``a b³ (1/3 − 0.21 (b/a)(1 − b⁴/12a⁴))`` (``a ≥ b`` the
    sides; within 0.5 % of the exact series)."""
    if (width is None) != (height is None) or (size_y is None) != (size_z is None) or (
            (width is None) == (size_y is None)):
        raise ValueError("rectangle: give the sides as size_y= and size_z= (along the body y "
                         "and z axes) or as width, height (along y, along z), not both")
    if width is None:
        width, height = size_y, size_z
        labels = ("size_y", "size_z")
    else:
        labels = ("width", "height")
    width = _positive_float(width, labels[0], "rectangle")
    height = _positive_float(height, labels[1], "rectangle")
    a, b = max(width, height), min(width, height)
    J = a * b**3 * (1.0 / 3.0 - 0.21 * (b / a) * (1.0 - b**4 / (12.0 * a**4)))
    return Section(width * height, width * height**3 / 12.0, height * width**3 / 12.0, J)


def section_properties(material: Material, section: Section, *, bending: str = "both",
                       axial: bool = False, torsion: bool = True) -> dict[str, float]:
    """The keywords of :func:`beam_modes` for a beam of ``material`` and ``section``:
    ``mass_per_length = ρ A``, ``EI_y = E Iy`` and ``EI_z = E Iz`` (``bending``: ``"both"``,
    ``"y"`` — deflection along y only — ``"z"`` or ``"none"``), ``EA = E A`` if ``axial``,
    ``GJ = G J`` and ``polar_inertia_per_length = ρ (Iy + Iz)`` if ``torsion`` and the
    material has a shear modulus."""
    if bending not in ("both", "y", "z", "none"):
        raise ValueError(f"bending must be 'both', 'y', 'z' or 'none', got {bending!r}")
    out: dict[str, float] = {"mass_per_length": material.rho * section.A}
    if bending in ("both", "z"):
        out["EI_y"] = material.E * section.Iy
    if bending in ("both", "y"):
        out["EI_z"] = material.E * section.Iz
    if axial:
        out["EA"] = material.E * section.A
    if torsion and material.G is not None:
        out["GJ"] = material.G * section.J
        out["polar_inertia_per_length"] = material.rho * (section.Iy + section.Iz)
    return out


def beam_modes(
    length: float,
    mass_per_length: float | None = None,
    *,
    material: Material | None = None,
    section: Section | None = None,
    EI_y: float | None = None,
    EI_z: float | None = None,
    EA: float | None = None,
    GJ: float | None = None,
    polar_inertia_per_length: float | None = None,
    n_elements: int = 10,
    n_modes: int | Mapping[str, int] = 4,
    plane: str | None = None,
    boundary: str = "cantilever",
    damping_ratio: float | Sequence[float] | np.ndarray = 0.0,
    basis: str = "lumped",
    membrane: str = "condensed",
) -> BeamModes:
    """Modal data of a straight uniform beam from its section properties.

    The beam lies along the body x-axis from the origin to ``x = length`` and
    is discretised into ``n_elements`` equal Euler-Bernoulli frame elements
    with a lumped (diagonal) mass matrix.  The first ``n_modes`` elastic modes
    of the generalised symmetric eigenproblem ``K phi = omega^2 M phi`` are
    returned, mass-normalised.

    Parameters
    ----------
    length : float
        Beam length L [m], > 0.
    mass_per_length : float
        Mass per unit length mu [kg/m], > 0 (or from ``material`` and ``section``).
    material, section : Material and Section, optional
        Together, the defaults of ``mass_per_length``, ``EI_y``, ``EI_z``, ``GJ`` and
        ``polar_inertia_per_length`` by :func:`section_properties` (bending both ways, torsion
        if the material has a shear modulus, no stretch: give ``EA`` for it); the keywords
        given explicitly win, and ``None`` … is not "given".  Bending both ways means that an
        integer ``n_modes`` takes the lowest modes of *both* bending directions (and of
        torsion): a thin strip's out-of-plane modes come first.  Say which directions you
        want with ``plane`` or with a mapping ``n_modes``; :attr:`BeamModes.families` names
        the family of each mode returned.
    EI_y : float or None, optional
        Bending stiffness for deflection along z (``tz``, rotation ``ry``)
        [N m^2].  None suppresses this deformation (``tz`` and ``ry`` are
        constrained to zero).
    EI_z : float or None, optional
        Bending stiffness for deflection along y (``ty``, rotation ``rz``)
        [N m^2].  None suppresses this deformation.
    EA : float or None, optional
        Axial stiffness [N].  None suppresses axial deformation (``tx`` = 0).
    GJ : float or None, optional
        Torsional stiffness [N m^2].  None suppresses torsion (``rx`` = 0).
    polar_inertia_per_length : float or None, optional
        Polar mass moment of inertia per unit length about the beam axis,
        ``mu * r^2`` [kg m].  Default None, i.e. 0.  Torsional modes exist
        only if this is positive; with ``GJ`` given and no polar inertia the
        torsion rotations are massless and are condensed out (they are then
        zero in every mode).
    n_elements : int, optional
        Number of equal elements (nodes: ``n_elements + 1``).  Default 10.
    n_modes : int or mapping, optional
        Number of elastic modes to return, the lowest overall.  Default 4.  A
        mapping selects by family, the lowest of each, e.g.
        ``{"transverse_y": 2, "axial": 1}``: ``"transverse_y"`` deflects along
        the body y axis (stiffness ``EI_z``), ``"transverse_z"`` along z
        (``EI_y``), ``"axial"`` stretches (``EA``), ``"torsion"`` twists
        (``GJ``); a family left out has no modes.  Either way the modes are
        returned in ascending frequency (:data:`MODE_FAMILIES`).
    plane : {"xy", "xz"} or None, optional
        Motion in one plane only: ``"xy"`` keeps the deflection along y (``EI_z``) and the
        stretch (``EA``, if given), ``"xz"`` the deflection along z (``EI_y``) and the
        stretch; the out-of-plane bending and the torsion are suppressed (their stiffnesses
        taken as None, whatever ``material`` and ``section`` give).  Default None: every
        deformation whose stiffness is given.
    boundary : {"cantilever", "free-free"}, optional
        ``"cantilever"`` clamps all six DOFs of node 0 (its rows of the modal
        matrix are zero).  ``"free-free"`` leaves the beam unconstrained; its
        rigid-body modes are discarded, so the returned modes are
        mass-orthogonal to the rigid-body motions.  Default ``"cantilever"``.
    damping_ratio : float or array_like, shape (n_modes,), optional
        Modal damping ratio zeta (scalar, or one per mode), >= 0.  The modal
        damping matrix is ``diag(2 zeta_i omega_i)``.  Default 0.
    basis : {"lumped", "natural", "finite"}, optional
        ``"lumped"`` (default): the modes of the lumped-mass element model
        described here.  ``"natural"``: Damaren & Sharf's natural-mode basis,
        the eigenfunctions of the continuous cantilever (Euler-Bernoulli
        bending ``cosh βx − cos βx − σ (sinh βx − sin βx)`` with
        ``1 + cos βL cosh βL = 0``, stretch and torsion ``sin((2r − 1)πx/2L)``)
        with their closed-form frequencies; the mass is then lumped at the
        ``n_elements + 1`` Gauss-Lobatto points of the beam (ends included), a
        quadrature of the continuous mass integrals, and the modes are
        mass-normalised with it.  Cantilever only.  (The eigenfunctions are
        those of Euler-Bernoulli bending without rotary inertia; with a
        ``polar_inertia_per_length`` the nodes also get the ``Ip/2`` bending-axis
        inertia described below, which couples the bending modes slightly.)
        ``"finite"``: Damaren & Sharf's finite-element basis, the modes of
        ``n_elements`` Euler-Bernoulli frame elements with *consistent* mass
        (Hermite-cubic bending, linear stretch and twist): the mass is lumped
        at 5 Gauss-Lobatto points per element, which integrates the consistent
        mass matrix exactly, and the mode rows at those points are the
        element interpolation.  With ``n_elements=1`` and every mode this is
        the paper's one-element basis.  Cantilever only.
    membrane : {"condensed", "modal"}, optional
        With ``EA``: the quartic membrane energy of the stiffening tensors
        (:func:`geometric_stiffness`).  ``"condensed"`` (default): the axial displacement
        that the stretch modes cannot take is condensed statically, so that bending does not
        lock whatever the stretch basis.  ``"modal"``: Damaren & Sharf's tensors, the
        membrane strain relaxed only through the stretch modes in the basis (too stiff in
        bending unless the stretch basis is large; ``docs/stiffening.md``).

    Returns
    -------
    BeamModes
        Node data and modal matrices; see :class:`BeamModes`.

    Raises
    ------
    ValueError
        On invalid arguments: non-positive ``length`` or ``mass_per_length``,
        non-positive or non-finite stiffness, negative polar inertia, unknown
        ``boundary``, no deformation enabled, non-positive ``n_elements`` or
        ``n_modes``, ``n_modes`` larger than the number of elastic modes of the
        discretisation, or an invalid ``damping_ratio``.
    RuntimeError
        If the free-free rigid-body modes cannot be separated from the elastic
        ones numerically (extremely fine meshes).

    Notes
    -----
    * Node ``j`` lies at ``x_j = j * length / n_elements`` and carries mass
      ``mu * h`` (``mu * h / 2`` at the two end nodes), ``h = length /
      n_elements``, and rotary inertia ``diag(Ip_j, Ip_j/2, Ip_j/2)`` with
      ``Ip_j`` lumped the same way from ``polar_inertia_per_length`` (the
      bending-axis terms ``Ip/2`` are the least that keep the node inertia
      physical, i.e. satisfy the triangle inequality; with no polar inertia
      the beam is Euler-Bernoulli, without rotary inertia).
    * Lumped-mass frequencies converge from below, with an error decreasing
      as ``1 / n_elements^2``.  With 20 elements the first four cantilever
      bending frequencies are within 1 % (the first two within 0.5 %), the
      first three free-free bending frequencies within 2 % and the first
      four clamped-free axial/torsional ones within 1.3 %.  The eigenproblem
      is solved densely and its conditioning grows like ``n_elements^4`` for
      bending, so a few hundred elements is a sensible upper limit.
    * Each mode's sign is fixed so that its largest-magnitude translational
      component (the first one, within a relative 1e-6, in row order) is
      positive; torsional modes use the rotation rows instead.
    """
    name = "beam_modes"
    if (material is None) != (section is None):
        raise ValueError(f"{name}: give material and section together (or neither)")
    if material is not None:
        given = {"mass_per_length": mass_per_length, "EI_y": EI_y, "EI_z": EI_z, "GJ": GJ,
                 "polar_inertia_per_length": polar_inertia_per_length}
        derived = {**section_properties(material, section),
                   **{k: v for k, v in given.items() if v is not None}}
        mass_per_length, EI_y, EI_z = (derived.get(k) for k in ("mass_per_length", "EI_y",
                                                                 "EI_z"))
        GJ, polar_inertia_per_length = derived.get("GJ"), derived.get("polar_inertia_per_length")
    if plane is not None:
        if not isinstance(plane, str) or plane not in PLANE_FAMILIES:
            raise ValueError(f"{name}: plane={plane!r} is not one of "
                             f"{', '.join(map(repr, PLANE_FAMILIES))} (or None)")
        outside = [f for f in _FAMILIES if f not in PLANE_FAMILIES[plane]]
        if isinstance(n_modes, Mapping) and any(n_modes.get(f) for f in outside):
            raise ValueError(f"{name}: n_modes={dict(n_modes)!r} asks for modes out of the "
                             f"plane {plane!r} (its families: "
                             f"{', '.join(PLANE_FAMILIES[plane])})")
        GJ = None
        EI_y, EI_z = (None, EI_z) if plane == "xy" else (EI_y, None)
    L = _positive_float(length, "length", name)
    mu = _positive_float(mass_per_length, "mass_per_length", name)
    ea = _optional_stiffness(EA, "EA", name)
    gj = _optional_stiffness(GJ, "GJ", name)
    ei_y = _optional_stiffness(EI_y, "EI_y", name)
    ei_z = _optional_stiffness(EI_z, "EI_z", name)
    if polar_inertia_per_length is None:
        ip = 0.0
    else:
        ip = _float(polar_inertia_per_length, "polar_inertia_per_length", name)
        if ip < 0.0:
            raise ValueError(
                f"{name}: polar_inertia_per_length={polar_inertia_per_length!r} must be >= 0"
            )
    ne = _positive_int(n_elements, "n_elements", name)
    families = _families(n_modes, name) if isinstance(n_modes, Mapping) else None
    nm = (sum(families.values()) if families is not None
          else _positive_int(n_modes, "n_modes", name))
    if not isinstance(boundary, str) or boundary not in _BOUNDARIES:
        raise ValueError(
            f"{name}: boundary={boundary!r} is not one of {', '.join(map(repr, _BOUNDARIES))}"
        )
    if ea is None and gj is None and ei_y is None and ei_z is None:
        raise ValueError(f"{name}: no deformation enabled; give at least one of EI_y, EI_z, EA, GJ")
    zeta = _damping_ratios(damping_ratio, nm, name)
    membrane = _membrane_form(membrane, name)
    if basis in _CANTILEVER_BASES:
        if boundary != "cantilever":
            raise ValueError(f"{name}: basis={basis!r} has cantilever modes only, got "
                             f"boundary={boundary!r}")
        return _with_section_forces(_CANTILEVER_BASES[basis](
            L, mu, {"transverse_y": ei_z, "transverse_z": ei_y, "axial": ea, "torsion": gj}, ip,
            ne, families, nm, zeta, name, membrane), ea, gj, ei_y, ei_z)
    if basis != "lumped":
        raise ValueError(f"{name}: basis={basis!r} is not one of 'lumped', "
                         f"{', '.join(map(repr, _CANTILEVER_BASES))}")

    nodes, node_masses, node_inertias, K = _lumped_beam(L, mu, ip, ne, ea or 0.0, gj or 0.0,
                                                        ei_y or 0.0, ei_z or 0.0)
    n_nodes, ndof = ne + 1, 6 * (ne + 1)
    mass_diag = np.diag(_lumped_mass_matrix(node_masses, node_inertias)).copy()

    clamped = boundary == "cantilever"
    first_node = 1 if clamped else 0

    # Uncoupled deformation groups: (label, enabled, node DOFs, rigid motions).
    groups = [
        ("bending in x-y (EI_z)", ei_z is not None, (_TY, _RZ), 2),
        ("bending in x-z (EI_y)", ei_y is not None, (_TZ, _RY), 2),
        ("axial (EA)", ea is not None, (_TX,), 1),
        ("torsion (GJ)", gj is not None, (_RX,), 1),
    ]

    eigvals: list[np.ndarray] = []
    vectors: list[np.ndarray] = []
    group_ids: list[np.ndarray] = []
    for gid, (label, enabled, local_dofs, n_rigid) in enumerate(groups):
        if not enabled:
            continue
        dofs = np.array(
            [6 * j + d for j in range(first_node, n_nodes) for d in local_dofs], dtype=int
        )
        massive = dofs[mass_diag[dofs] > 0.0]
        massless = dofs[mass_diag[dofs] == 0.0]
        if massive.size == 0:
            continue  # e.g. torsion without polar inertia: no dynamics
        expected_rigid = 0 if clamped else n_rigid
        lam, phi_full = _group_modes(K, mass_diag, massive, massless, ndof)
        if expected_rigid:
            lam, phi_full = _drop_rigid(lam, phi_full, expected_rigid, label, ne, name)
        eigvals.append(lam)
        vectors.append(phi_full)
        group_ids.append(np.full(lam.size, gid))

    hint = (" (torsion has no modes without polar_inertia_per_length)"
            if gj is not None and ip == 0.0 else "")
    lam_all = np.concatenate([np.zeros(0), *eigvals])
    phi_all = np.concatenate([np.zeros((ndof, 0)), *vectors], axis=1)
    gid_all = np.concatenate([np.zeros(0, dtype=int), *group_ids])
    order = _select_modes(lam_all, gid_all, families, nm, f"{name}: ", ne, "elastic ", "", hint)
    lam_sel = lam_all[order]
    modes = phi_all[:, order]
    for i in range(nm):
        modes[:, i] *= _sign_of(modes[:, i])

    frequencies = np.sqrt(lam_sel)
    stiffness = np.diag(lam_sel)
    damping = np.diag(2.0 * zeta * frequencies)
    K1 = K2 = None
    if ea is not None:
        K1, K2 = geometric_stiffness(modes, nodes[:, 0], ea, ip / mu, membrane=membrane)
    return _with_section_forces(BeamModes(
        nodes=nodes,
        node_masses=node_masses,
        node_inertias=node_inertias,
        modes=modes,
        stiffness=stiffness,
        damping=damping,
        frequencies=frequencies,
        geometric_stiffness_1=K1,
        geometric_stiffness_2=K2,
        axial_modes=np.flatnonzero(gid_all[order] == 2),
        families=_family_names(gid_all[order]),
    ), ea, gj, ei_y, ei_z)


def _with_section_forces(beam: BeamModes, ea: float | None, gj: float | None,
                         ei_y: float | None, ei_z: float | None) -> BeamModes:
    """``beam`` with its :attr:`BeamModes.section_forces`: the first node's rows of each
    segment's ``k_e [Π(e); Π(e + 1)]``, NaN in the rows of the stiffnesses it lacks."""
    n, m = beam.n_nodes, beam.n_modes
    Pi = beam.modes.reshape(n, 6, m)
    out = np.empty((n - 1, 6, m))
    for e in range(n - 1):
        ke = frame_element_stiffness(beam.nodes[e + 1, 0] - beam.nodes[e, 0], EA=ea or 0.0,
                                     GJ=gj or 0.0, EI_y=ei_y or 0.0, EI_z=ei_z or 0.0)
        out[e] = ke[:6] @ Pi[e:e + 2].reshape(12, m)
    for rows, stiffness in (((_RX,), gj), ((_RY, _TZ), ei_y), ((_RZ, _TY), ei_z), ((_TX,), ea)):
        if stiffness is None:
            out[:, list(rows)] = np.nan
    out.setflags(write=False)
    return dataclasses.replace(beam, section_forces=out)


def _lumped_beam(L: float, mu: float, ip: float, ne: int, ea: float, gj: float, ei_y: float,
                 ei_z: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Nodes (n, 3), lumped node masses (n,) and rotary inertias (n, 3, 3), and the assembled
    free-free stiffness (6n × 6n) of ``ne`` equal frame elements along x (see
    :func:`beam_modes`' notes)."""
    n_nodes = ne + 1
    h = L / ne
    nodes = np.zeros((n_nodes, 3))
    nodes[:, 0] = np.linspace(0.0, L, n_nodes)
    share = np.full(n_nodes, h)
    share[0] = share[-1] = 0.5 * h
    node_inertias = np.zeros((n_nodes, 3, 3))
    node_inertias[:, 0, 0] = ip * share
    # cross-section rotary inertia about the bending axes: Ip/2 each, the least that keeps
    # every node inertia physical (triangle inequality I_yy + I_zz >= I_xx)
    node_inertias[:, 1, 1] = node_inertias[:, 2, 2] = 0.5 * ip * share
    K = np.zeros((6 * n_nodes, 6 * n_nodes))
    ke = frame_element_stiffness(h, EA=ea, GJ=gj, EI_y=ei_y, EI_z=ei_z)
    for e in range(ne):
        sl = slice(6 * e, 6 * e + 12)
        K[sl, sl] += ke
    return nodes, mu * share, node_inertias, K


def nodal_beam(
    length: float,
    mass_per_length: float,
    *,
    EI_y: float,
    EI_z: float,
    EA: float,
    GJ: float,
    polar_inertia_per_length: float,
    n_elements: int = 10,
    attach_node: int = 0,
    stiffness_damping: float = 0.0,
) -> dict[str, Any]:
    """The ``flex`` block of a straight uniform beam as a **nodal** body (Rodriguez's
    finite-element body; :mod:`flexdyn.nodal`): its coordinates are the six displacements of
    every node but ``attach_node``, which is rigidly fixed to the joint.

    The beam lies along x from the origin to ``x = length``, ``n_elements`` equal 3D
    Euler–Bernoulli frame elements (:func:`frame_element_stiffness`) with the lumped node
    masses and rotary inertias of :func:`beam_modes` (node inertia ``diag(Ip, Ip/2, Ip/2)``
    times the node's share of the length: every free node needs a rotary inertia, so
    ``polar_inertia_per_length`` must be positive).

    Parameters
    ----------
    length : m;  mass_per_length : kg/m;  EI_y, EI_z : N m² (bending along z / y);
    EA : N;  GJ : N m²;  polar_inertia_per_length : kg m.
    n_elements : number of elements (``n_elements + 1`` nodes).
    attach_node : the node fixed to the joint (0: a cantilever clamped at the origin).
    stiffness_damping : ``β`` (s) of the stiffness-proportional damping ``C = β K``.

    Returns
    -------
    dict
        ``{"nodal": True, "attach_node", "nodes", "node_masses", "node_inertias",
        "nodal_stiffness", "nodal_damping"}`` as numpy arrays (a model file's ``flex`` block).
    """
    name = "nodal_beam"
    L = _positive_float(length, "length", name)
    mu = _positive_float(mass_per_length, "mass_per_length", name)
    stiff = [_positive_float(v, k, name) for v, k in ((EA, "EA"), (GJ, "GJ"), (EI_y, "EI_y"),
                                                       (EI_z, "EI_z"))]
    ip = _positive_float(polar_inertia_per_length, "polar_inertia_per_length", name)
    ne = _positive_int(n_elements, "n_elements", name)
    beta = _float(stiffness_damping, "stiffness_damping", name)
    if beta < 0.0:
        raise ValueError(f"{name}: stiffness_damping={stiffness_damping!r} must be >= 0")
    if not isinstance(attach_node, (int, np.integer)) or not 0 <= attach_node <= ne:
        raise ValueError(f"{name}: attach_node={attach_node!r} must be a node index in "
                         f"[0, {ne}]")
    nodes, masses, inertias, K = _lumped_beam(L, mu, ip, ne, *stiff)
    return {"nodal": True, "attach_node": int(attach_node), "nodes": nodes,
            "node_masses": masses, "node_inertias": inertias, "nodal_stiffness": K,
            "nodal_damping": beta * K}


#: ``β_r L`` of the first cantilever bending modes (``1 + cos βL cosh βL = 0``); higher ones
#: are ``(2r − 1) π / 2`` to double precision
_BETA_L = (1.8751040687119611, 4.6940911329741745, 7.8547574382376126, 10.995540734875467,
           14.137168391046471)


def _bending_shape(r: int, L: float) -> tuple:
    """The cantilever eigenfunction of bending mode ``r`` (0-based) and its first two
    derivatives, as functions of ``x``, and ``β_r``."""
    bl = _BETA_L[r] if r < len(_BETA_L) else (2 * r + 1) * math.pi / 2
    b = bl / L
    sigma = (math.cosh(bl) + math.cos(bl)) / (math.sinh(bl) + math.sin(bl))

    def f(x):
        return np.cosh(b * x) - np.cos(b * x) - sigma * (np.sinh(b * x) - np.sin(b * x))

    def df(x):
        return b * (np.sinh(b * x) + np.sin(b * x) - sigma * (np.cosh(b * x) - np.cos(b * x)))

    return f, df, b


#: Gauss–Lobatto points per element of the finite-element basis: exact for the consistent
#: mass of Hermite cubics (degree 6 ≤ 2·5 − 3)
_FE_POINTS = 5


def _element_interpolation(xi: float, h: float) -> np.ndarray:
    """(6, 12): the displacement ``[rx, ry, rz, tx, ty, tz]`` at ``ξ = x/h`` of a frame
    element from its end dofs (the node layout, first node then second): linear ``tx`` and
    ``rx``, Hermite-cubic ``ty`` (slope ``rz``) and ``tz`` (slope ``−ry``)."""
    H = np.array([1 - 3 * xi**2 + 2 * xi**3, h * (xi - 2 * xi**2 + xi**3),
                  3 * xi**2 - 2 * xi**3, h * (-xi**2 + xi**3)])
    dH = np.array([-6 * xi + 6 * xi**2, h * (1 - 4 * xi + 3 * xi**2), 6 * xi - 6 * xi**2,
                   h * (-2 * xi + 3 * xi**2)]) / h
    N = np.zeros((6, 12))
    for row in (_RX, _TX):
        N[row, row], N[row, 6 + row] = 1 - xi, xi
    for t, r, sign in ((_TY, _RZ, 1.0), (_TZ, _RY, -1.0)):
        cols = [t, r, 6 + t, 6 + r]
        coef = np.array([1.0, sign, 1.0, sign])
        N[t, cols] = H * coef
        N[r, cols] = sign * dH * coef
    return N


def _finite_element_modes(L: float, mu: float, stiffness: dict, ip: float, ne: int,
                          families: dict | None, nm: int, zeta: np.ndarray,
                          name: str, membrane: str) -> BeamModes:
    """:func:`beam_modes` with ``basis="finite"`` (see there)."""
    h = L / ne
    xi = _lobatto_points(_FE_POINTS)
    wq = _lobatto_weights(_FE_POINTS) * h
    n = ne * (_FE_POINTS - 1) + 1
    x = (np.arange(ne)[:, None] * h + xi[None, :-1] * h).ravel()
    x = np.append(x, L)
    node_masses, ip_nodes = np.zeros(n), np.zeros(n)
    N = np.zeros((n, 6, 6 * (ne + 1)))  # point displacements from the global dofs
    for e in range(ne):
        for k in range(_FE_POINTS):
            j = e * (_FE_POINTS - 1) + k
            node_masses[j] += mu * wq[k]
            ip_nodes[j] += ip * wq[k]
            N[j, :, 6 * e:6 * e + 12] = _element_interpolation(xi[k], h)
    node_inertias = np.zeros((n, 3, 3))
    node_inertias[:, 0, 0] = ip_nodes
    node_inertias[:, 1, 1] = node_inertias[:, 2, 2] = 0.5 * ip_nodes
    Nf = N.reshape(6 * n, -1)
    M = Nf.T @ _lumped_mass_matrix(node_masses, node_inertias) @ Nf  # consistent mass
    ke = frame_element_stiffness(h, EA=stiffness["axial"] or 0.0,
                                 GJ=stiffness["torsion"] or 0.0,
                                 EI_y=stiffness["transverse_z"] or 0.0,
                                 EI_z=stiffness["transverse_y"] or 0.0)
    K = np.zeros_like(M)
    for e in range(ne):
        K[6 * e:6 * e + 12, 6 * e:6 * e + 12] += ke
    dofs_of = {"transverse_y": (_TY, _RZ), "transverse_z": (_TZ, _RY), "axial": (_TX,),
               "torsion": (_RX,)}
    lam_all, vec_all, gid_all = [], [], []
    for gid, family in enumerate(_FAMILIES):
        if stiffness[family] is None or (family == "torsion" and ip == 0.0):
            continue
        dofs = np.array([6 * j + d for j in range(1, ne + 1) for d in dofs_of[family]])
        lam, phi = scipy.linalg.eigh(K[np.ix_(dofs, dofs)], M[np.ix_(dofs, dofs)])
        full = np.zeros((K.shape[0], lam.size))
        full[dofs] = phi
        lam_all.append(lam)
        vec_all.append(full)
        gid_all.append(np.full(lam.size, gid))
    lam_all = np.concatenate(lam_all)
    vec_all = np.concatenate(vec_all, axis=1)
    gid_all = np.concatenate(gid_all)
    order = _select_modes(lam_all, gid_all, families, nm, f"{name}: ", ne, "element ",
                          "element ")
    modes = Nf @ vec_all[:, order]  # eigh normalizes to the consistent mass: Πᵀ M_s Π = I
    for i in range(modes.shape[1]):
        modes[:, i] *= _sign_of(modes[:, i])
    frequencies = np.sqrt(lam_all[order])
    nodes = np.zeros((n, 3))
    nodes[:, 0] = x
    K1 = K2 = None
    if stiffness["axial"] is not None:
        K1, K2 = geometric_stiffness(modes, x, stiffness["axial"], ip / mu,
                                     membrane=membrane)
    return BeamModes(nodes=nodes, node_masses=node_masses, node_inertias=node_inertias,
                     modes=modes, stiffness=np.diag(frequencies**2),
                     damping=np.diag(2.0 * zeta[:frequencies.size] * frequencies),
                     frequencies=frequencies, geometric_stiffness_1=K1,
                     geometric_stiffness_2=K2,
                     axial_modes=np.flatnonzero(gid_all[order] == 2),
                     families=_family_names(gid_all[order]))


#: Gauss–Legendre points of the stiffening integrals of the natural modes (smooth integrands)
_NATURAL_QUADRATURE = 64


def _slopes(component: int, derivative):
    """``slopes(x) -> (len(x), 4)`` with ``derivative(x)`` in column ``component`` of
    ``(u', v', w', φ')`` and zeros elsewhere."""

    def slopes(xq: np.ndarray) -> np.ndarray:
        out = np.zeros((xq.size, 4))
        out[:, component] = derivative(xq)
        return out

    return slopes


def _lobatto_points(n: int) -> np.ndarray:
    """The ``n`` Gauss–Lobatto points on [0, 1] (ends included, ``n ≥ 2``)."""
    if n == 2:
        return np.array([0.0, 1.0])
    inner = np.polynomial.legendre.Legendre.basis(n - 1).deriv().roots()
    return 0.5 * (np.concatenate([[-1.0], np.sort(inner.real), [1.0]]) + 1.0)


def _lobatto_weights(n: int) -> np.ndarray:
    """The weights of ``_lobatto_points`` on [0, 1]: ``1 / (n (n − 1) P_{n−1}(x)²)``."""
    t = 2.0 * _lobatto_points(n) - 1.0
    P = np.polynomial.legendre.Legendre.basis(n - 1)(t)
    return 1.0 / (n * (n - 1) * P**2)


def _natural_modes(L: float, mu: float, stiffness: dict, ip: float, ne: int,
                   families: dict | None, nm: int, zeta: np.ndarray, name: str,
                   membrane: str) -> BeamModes:
    """:func:`beam_modes` with ``basis="natural"`` (see there)."""
    n = ne + 1
    x = _lobatto_points(n) * L
    weights = _lobatto_weights(n) * L
    nodes = np.zeros((n, 3))
    nodes[:, 0] = x
    node_masses = mu * weights
    node_inertias = np.zeros((n, 3, 3))
    node_inertias[:, 0, 0] = ip * weights
    node_inertias[:, 1, 1] = node_inertias[:, 2, 2] = 0.5 * ip * weights
    # candidates per family: (ω, family index, node rows (n, 6), slopes(x) -> (4, len(x)):
    # the derivatives of (u, v, w, φ) along the beam)
    candidates = []
    for gid, family in enumerate(_FAMILIES):
        k = stiffness[family]
        count = nm if families is None else families.get(family, 0)
        if k is None or count == 0:
            if families is not None and count:
                raise ValueError(f"{name}: n_modes[{family!r}]={count} needs the stiffness "
                                 "of that family")
            continue
        if family == "torsion" and ip == 0.0:
            if families is not None and count:
                raise ValueError(f"{name}: torsion modes need polar_inertia_per_length")
            continue
        for r in range(count):
            rows = np.zeros((n, 6))
            if family.startswith("transverse"):
                f, df, b = _bending_shape(r, L)
                omega = b * b * math.sqrt(k / mu)
                t, rot, sign = (_TY, _RZ, 1.0) if family == "transverse_y" else (_TZ, _RY, -1.0)
                rows[:, t], rows[:, rot] = f(x), sign * df(x)
                slopes = _slopes(1 if family == "transverse_y" else 2, df)
            else:
                c = (2 * r + 1) * math.pi / (2 * L)
                omega = c * math.sqrt(k / (mu if family == "axial" else ip))
                rows[:, _TX if family == "axial" else _RX] = np.sin(c * x)
                slopes = _slopes(0 if family == "axial" else 3,
                                 lambda xq, c=c: c * np.cos(c * xq))
            candidates.append((omega, gid, rows, slopes))
    if len(candidates) < nm:
        raise ValueError(f"{name}: n_modes={nm} exceeds the {len(candidates)} natural modes "
                         "of the stiffnesses given")
    lam = np.array([c[0] ** 2 for c in candidates])
    gid_all = np.array([c[1] for c in candidates])
    order = _tie_aware_order(lam, gid_all)[:nm]
    modes = np.stack([candidates[k][2].ravel() for k in order], axis=1)
    M = _lumped_mass_matrix(node_masses, node_inertias)
    scale = 1.0 / np.sqrt(np.einsum("im,ij,jm->m", modes, M, modes))
    scale *= [_sign_of(modes[:, i] * scale[i]) for i in range(nm)]
    modes *= scale
    frequencies = np.sqrt(lam[order])
    K1 = K2 = None
    if stiffness["axial"] is not None:
        xq, wq = np.polynomial.legendre.leggauss(_NATURAL_QUADRATURE)
        xq, wq = 0.5 * L * (xq + 1.0), 0.5 * L * wq
        a, b, c, d = np.moveaxis(np.stack([candidates[k][3](xq) * sk for k, sk in
                                           zip(order, scale, strict=True)], axis=2),
                                 1, 0)  # each (P, m)
        K1, K2 = _stiffening_tensors(a, b, c, d, stiffness["axial"] * wq, ip / mu, membrane)
    return BeamModes(nodes=nodes, node_masses=node_masses, node_inertias=node_inertias,
                     modes=modes, stiffness=np.diag(frequencies**2),
                     damping=np.diag(2.0 * zeta * frequencies), frequencies=frequencies,
                     geometric_stiffness_1=K1, geometric_stiffness_2=K2,
                     axial_modes=np.flatnonzero(gid_all[order] == 2),
                     families=_family_names(gid_all[order]))


#: the bases of :func:`beam_modes` besides the lumped elements, by name: the builder of each
#: (cantilever modes only; ``(L, mu, stiffness by family, ip, n_elements, families, nm,
#: zeta, name) -> BeamModes``)
_CANTILEVER_BASES: dict[str, Callable[..., BeamModes]] = {"natural": _natural_modes,
                                                          "finite": _finite_element_modes}


#: Gauss–Legendre points and weights on [0, 1], 5 points: exact to degree 9, so for the
#: quartic (cubic term) and octic (quartic term) integrands of the Hermite elements
_GAUSS_X, _GAUSS_W = (0.5 * (np.polynomial.legendre.leggauss(5)[0] + 1.0),
                      0.5 * np.polynomial.legendre.leggauss(5)[1])


def geometric_stiffness(modes: np.ndarray, x: np.ndarray, EA: float,
                        polar_radius_sq: float = 0.0, *,
                        membrane: str = "condensed") -> tuple[np.ndarray, np.ndarray]:
    """The stiffening tensors of a straight uniform beam along ``x`` (Damaren & Sharf
    Eqs 16–20 for the displacement field of Eq 29, slender-beam form).

    The membrane strain of the beam axis, to second order in the displacements,
    ``ε = u' + g`` with ``g = ½ (v'² + w'²) + ½ r_p² φ'²`` (``u, v, w`` the axial and the
    two transverse displacements, ``φ`` the twist, ``r_p² = I_p / A``), stores the energy
    ``½ ∫ EA ε² dx``.  Its quadratic part ``½ ∫ EA u'² dx`` is in the linear modal stiffness;
    with ``u' = aᵀ η`` and ``g = ½ ηᵀ G η`` (``G = b bᵀ + c cᵀ + r_p² d dᵀ`` from the slopes
    ``v' = bᵀη``, ``w' = cᵀη``, ``φ' = dᵀη``) the rest is

    * the cubic part ``U₃ = ∫ EA u' g dx = K1·η³ / 3!`` with
      ``K1_ijk = ∫ EA (a_i G_jk + a_j G_ik + a_k G_ij) dx``,
    * the quartic part ``U₄ = K2·η⁴ / 4!``: with ``membrane="modal"`` (Damaren & Sharf's)
      ``U₄ = ½ ∫ EA g² dx``, ``K2_ijkl = ∫ EA (G_ij G_kl + G_ik G_jl + G_il G_jk) dx``.
      With ``membrane="condensed"`` (the default) the axial displacement outside the span of
      the stretch modes is condensed statically: it carries no inertia and no load, so it
      takes the value that minimizes the membrane energy, ``u_c' = −(g − P g)``, and
      ``U₄ = ½ ∫ EA (P g)² dx = ½ cᵀ S⁻¹ c`` with ``S = ∫ EA a aᵀ dx`` (the stretch modes'
      axial stiffness), ``c = ∫ EA a g dx`` and ``P g`` the ``EA``-weighted projection of
      ``g`` onto the stretch modes' slopes ``a``: ``K2_ijkl = Y_ijkl + Y_ikjl + Y_iljk``,
      ``Y_ijkl = X_sij (S⁻¹)_st X_tkl``, ``X_sjk = ∫ EA a_s G_jk dx``.

    so the elastic force is ``Ŝ = (K0 + K1(η)/2! + K2(η, η)/3!) η`` (Eq 20) with
    ``K1(η)_ij = K1_ijk η_k`` and ``K2(η, η)_ij = K2_ijkl η_k η_l``.

    Why condensed: the modal form relaxes the membrane strain only through the stretch modes
    in the basis, whose slopes cannot follow the foreshortening ``u' = −g`` of a bent beam
    (every cantilever stretch mode has ``u' = 0`` at the free end, where ``g`` is largest):
    the rest stores ``½ ∫ EA (g − P g)² dx``, and with ``EA L²/EI`` in the thousands the beam
    is too stiff in bending by tens of per cent (membrane locking; ``docs/stiffening.md``).
    The condensed form keeps the coupling ``K1`` of the stretch modes to the bending, through
    which the centrifugal tension stiffens, and converges to the modal form as the stretch
    basis is completed (``P = I``).  Without stretch modes both ``K1`` and the condensed ``K2``
    vanish.  Within each element the slopes follow the element's own interpolation: linear
    ``u`` and ``φ``, Hermite-cubic ``v`` and ``w`` from the nodal translations and rotations
    (``v' = r_z``, ``w' = −r_y``); the integrals are exact (5-point Gauss).

    Parameters
    ----------
    modes : (6n, m) modal matrix, node rows ``[rx, ry, rz, tx, ty, tz]``.
    x : (n,) the nodes' positions along the beam (m), increasing: an element between each
        two neighbours (the nodes of ``beam_modes``' lumped and finite-element bases).
    EA : axial stiffness (N).
    polar_radius_sq : ``I_p / A`` (m²), the polar radius of gyration of the section squared
        (0: no torsion–stretch coupling).
    membrane : ``"condensed"`` (default) or ``"modal"``, the quartic part above
        (:data:`MEMBRANE_FORMS`).

    Returns
    -------
    ``(K1, K2)``, shapes (m, m, m) and (m, m, m, m), fully symmetric (units of the modal
    stiffness per unit modal coordinate and per its square).
    """
    n = modes.shape[0] // 6
    m = modes.shape[1]
    h = np.diff(np.asarray(x, dtype=float))[:, None, None]  # (n − 1, 1, 1) element lengths
    Pi = modes.reshape(n, 6, m)
    xi = _GAUSS_X[None, :, None]
    a = np.broadcast_to((Pi[1:, _TX] - Pi[:-1, _TX])[:, None] / h, (n - 1, xi.size, m))
    d = np.broadcast_to((Pi[1:, _RX] - Pi[:-1, _RX])[:, None] / h, (n - 1, xi.size, m))

    def slope(t: int, r: int, sign: float) -> np.ndarray:
        """(n − 1, 5, m) the derivative of the transverse displacement ``t`` (rotation
        ``r``) at the Gauss points of each element: the Hermite set's derivatives."""
        v1, v2 = Pi[:-1, t][:, None], Pi[1:, t][:, None]
        r1, r2 = sign * Pi[:-1, r][:, None], sign * Pi[1:, r][:, None]
        return ((6 * xi**2 - 6 * xi) * (v1 - v2) / h + (1 - 4 * xi + 3 * xi**2) * r1
                + (3 * xi**2 - 2 * xi) * r2)

    b, c = slope(_TY, _RZ, 1.0), slope(_TZ, _RY, -1.0)
    w = EA * h[:, :, 0] * _GAUSS_W[None, :]
    return _stiffening_tensors(*(s.reshape(-1, m) for s in (a, b, c, d)), w.ravel(),
                               polar_radius_sq, _membrane_form(membrane, "geometric_stiffness"))


#: the quartic membrane energies of :func:`geometric_stiffness`
MEMBRANE_FORMS = ("condensed", "modal")


def _membrane_form(membrane: str, where: str) -> str:
    if not isinstance(membrane, str) or membrane not in MEMBRANE_FORMS:
        raise ValueError(f"{where}: membrane={membrane!r} is not one of "
                         f"{', '.join(map(repr, MEMBRANE_FORMS))}")
    return membrane


def _stiffening_tensors(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray,
                        w: np.ndarray, polar_radius_sq: float,
                        membrane: str) -> tuple[np.ndarray, np.ndarray]:
    """``(K1, K2)`` of :func:`geometric_stiffness` from the slopes ``u' = aᵀη``, ``v' = bᵀη``,
    ``w' = cᵀη``, ``φ' = dᵀη`` at quadrature points (each (P, m)) and the weights ``w``
    (P,) of ``∫ EA · dx``; ``membrane`` the form of the quartic part."""
    G = (np.einsum("pi,pj->pij", b, b) + np.einsum("pi,pj->pij", c, c)
         + polar_radius_sq * np.einsum("pi,pj->pij", d, d))
    X = np.einsum("p,pi,pjk->ijk", w, a, G)
    K1 = X + X.transpose(1, 0, 2) + X.transpose(1, 2, 0)
    if membrane == "modal":
        K2 = (np.einsum("p,pij,pkl->ijkl", w, G, G) + np.einsum("p,pik,pjl->ijkl", w, G, G)
              + np.einsum("p,pil,pjk->ijkl", w, G, G))
        return K1, K2
    S = np.einsum("p,pi,pj->ij", w, a, a)
    s = np.flatnonzero(np.diag(S) > 0.0)  # the modes that stretch
    Y = np.einsum("sij,st,tkl->ijkl", X[s], np.linalg.inv(S[np.ix_(s, s)]), X[s])
    return K1, Y + Y.transpose(0, 2, 1, 3) + Y.transpose(0, 2, 3, 1)


# ----------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------


def _lumped_mass_matrix(node_masses: np.ndarray, node_inertias: np.ndarray) -> np.ndarray:
    n = len(node_masses)
    M = np.zeros((6 * n, 6 * n))
    for j in range(n):
        M[6 * j : 6 * j + 3, 6 * j : 6 * j + 3] = node_inertias[j]
        M[6 * j + 3 : 6 * j + 6, 6 * j + 3 : 6 * j + 6] = node_masses[j] * np.eye(3)
    return M


def _group_modes(
    K: np.ndarray,
    mass_diag: np.ndarray,
    massive: np.ndarray,
    massless: np.ndarray,
    ndof: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Guyan-condense the massless DOFs, solve, recover full 6n-vectors."""
    Kmm = K[np.ix_(massive, massive)]
    if massless.size:
        Kss = K[np.ix_(massless, massless)]
        Ksm = K[np.ix_(massless, massive)]
        # Kss is positive definite: with the massive DOFs fixed the beam
        # cannot move rigidly through its massless rotations alone.
        T = -scipy.linalg.cho_solve(scipy.linalg.cho_factor(Kss), Ksm)
        Kc = Kmm + Ksm.T @ T
    else:
        T = np.zeros((0, massive.size))
        Kc = Kmm
    Kc = 0.5 * (Kc + Kc.T)
    lam, phi = scipy.linalg.eigh(Kc, np.diag(mass_diag[massive]))
    full = np.zeros((ndof, lam.size))
    full[massive, :] = phi
    if massless.size:
        full[massless, :] = T @ phi
    return lam, full


def _drop_rigid(
    lam: np.ndarray,
    phi: np.ndarray,
    expected: int,
    label: str,
    n_elements: int,
    name: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Discard the zero-frequency eigenpairs of an unconstrained group."""
    omega = np.sqrt(np.abs(lam))
    scale = float(np.max(omega)) if lam.size else 0.0
    rigid = omega <= _RIGID_FREQ_REL_TOL * scale
    n_found = int(np.count_nonzero(rigid))
    if n_found != expected:
        raise RuntimeError(
            f"{name}: found {n_found} rigid-body modes for {label} where {expected} were "
            f"expected (n_elements={n_elements}); the elastic and rigid-body eigenvalues "
            "cannot be separated numerically, reduce n_elements"
        )
    keep = ~rigid
    return lam[keep], phi[:, keep]


def _select_modes(lam: np.ndarray, gid: np.ndarray, families: dict | None, nm: int,
                  where: str, ne: int, what: str, family_what: str,
                  hint: str = "") -> np.ndarray:
    """Indices of the selected modes in ascending frequency (``lam`` eigenvalues, ``gid``
    their families' indices): the ``nm`` lowest, or the lowest of each family of
    ``families``; ``ValueError`` when there are not enough."""
    order = _tie_aware_order(lam, gid)
    if families is None:
        if nm > order.size:
            raise ValueError(f"{where}n_modes={nm} exceeds the {order.size} {what}modes "
                             f"available with n_elements={ne}{hint}")
        return order[:nm]
    chosen = []
    for family, count in families.items():
        members = order[gid[order] == _FAMILIES.index(family)]
        if count > members.size:
            raise ValueError(f"{where}n_modes[{family!r}]={count} exceeds the {members.size} "
                             f"{family} {family_what}modes available with n_elements={ne} "
                             f"and the stiffnesses given{hint}")
        chosen.extend(members[:count].tolist())
    return order[np.isin(order, chosen)]


#: The mode families of :func:`beam_modes` (in the order of its groups): deflection along the
#: body y axis (bending stiffness ``EI_z``), deflection along z (``EI_y``), stretch along x
#: (``EA``) and twist about x (``GJ``).
MODE_FAMILIES = ("transverse_y", "transverse_z", "axial", "torsion")
_FAMILIES = MODE_FAMILIES
#: the families of each plane of motion (:func:`beam_modes`' ``plane``)
PLANE_FAMILIES = {"xy": ("transverse_y", "axial"), "xz": ("transverse_z", "axial")}


def _family_names(gids: np.ndarray) -> tuple[str, ...]:
    """The family names of group indices."""
    return tuple(_FAMILIES[int(g)] for g in gids)


def _families(n_modes: Mapping, name: str) -> dict[str, int]:
    """``{family: count}`` of a ``n_modes`` mapping, checked."""
    out = {}
    for family, count in n_modes.items():
        if family not in _FAMILIES:
            raise ValueError(f"{name}: n_modes has unknown family {family!r}; families are "
                             f"{', '.join(map(repr, _FAMILIES))}")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"{name}: n_modes[{family!r}]={count!r} must be an integer >= 0")
        out[family] = int(count)
    if not sum(out.values()):
        raise ValueError(f"{name}: n_modes={dict(n_modes)!r} selects no modes")
    return out


def _tie_aware_order(lam: np.ndarray, gid: np.ndarray) -> np.ndarray:
    """Ascending order; (near-)equal eigenvalues are ordered by group index."""
    order = np.argsort(lam, kind="stable")
    out: list[int] = []
    i = 0
    while i < order.size:
        j = i + 1
        ref = lam[order[i]]
        while j < order.size and lam[order[j]] - ref <= _TIE_REL_TOL * abs(ref):
            j += 1
        cluster = order[i:j]
        out.extend(cluster[np.argsort(gid[cluster], kind="stable")].tolist())
        i = j
    return np.array(out, dtype=int)


def _sign_of(v: np.ndarray) -> float:
    """+1 or -1 so that the largest translational component becomes positive."""
    trans = v.reshape(-1, 6)[:, 3:].ravel()
    vmax = float(np.max(np.abs(v)))
    cand = trans if float(np.max(np.abs(trans))) > 1e-9 * vmax else v
    a = np.abs(cand)
    k = int(np.flatnonzero(a >= (1.0 - 1e-6) * a.max())[0])
    return 1.0 if cand[k] >= 0.0 else -1.0


def _float(value: Any, arg: str, name: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"{name}: {arg}={value!r} must be a real number")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: {arg}={value!r} must be a real number") from None
    if not math.isfinite(x):
        raise ValueError(f"{name}: {arg}={value!r} must be finite")
    return x


def _positive_float(value: Any, arg: str, name: str) -> float:
    x = _float(value, arg, name)
    if x <= 0.0:
        raise ValueError(f"{name}: {arg}={value!r} must be positive")
    return x


def _optional_stiffness(value: Any, arg: str, name: str) -> float | None:
    if value is None:
        return None
    x = _float(value, arg, name)
    if x <= 0.0:
        raise ValueError(
            f"{name}: {arg}={value!r} must be positive (use None to suppress the deformation)"
        )
    return x


def _positive_int(value: Any, arg: str, name: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name}: {arg}={value!r} must be a positive integer")
    try:
        n = operator.index(value)
    except TypeError:
        raise ValueError(f"{name}: {arg}={value!r} must be a positive integer") from None
    if n < 1:
        raise ValueError(f"{name}: {arg}={value!r} must be a positive integer")
    return int(n)


def _damping_ratios(value: Any, n_modes: int, name: str) -> np.ndarray:
    try:
        z = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(
            f"{name}: damping_ratio={value!r} must be a number or {n_modes} numbers"
        ) from None
    if z.ndim == 0:
        z = np.full(n_modes, float(z))
    elif z.shape != (n_modes,):
        raise ValueError(
            f"{name}: damping_ratio has shape {z.shape}; expected a scalar or ({n_modes},)"
        )
    if not np.all(np.isfinite(z)) or np.any(z < 0.0):
        raise ValueError(f"{name}: damping_ratio={value!r} must be finite and >= 0")
    return z


#: 6061-T6-like aluminium (E 69 GPa, ρ 2700 kg/m³, ν 0.33)
ALUMINIUM = Material(E=69e9, rho=2700.0, nu=0.33)
#: structural steel (E 210 GPa, ρ 7850 kg/m³, ν 0.30)
STEEL = Material(E=210e9, rho=7850.0, nu=0.30)
