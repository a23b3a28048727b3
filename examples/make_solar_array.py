"""Write ``solar_array.npz``: the finite-element model of a spacecraft's solar-array panel, as a
finite-element tool would export it, for ``08_solar_array_panel.py``.

The panel is a grid of thin-walled aluminium tubes (30 mm × 1 mm, with the solar cells'
mass smeared onto them: 0.5 kg/m in all), 2 m long (x, away from the spacecraft) and 1 m
wide (y), 9 × 5 nodes, every member one Euler–Bernoulli frame element with its consistent
mass matrix (:func:`flexdyn.beam.frame_element_stiffness`,
:func:`flexdyn.beam.frame_element_mass`), 45 nodes and 270 degrees of freedom in the
finite-element order ``[tx, ty, tz, rx, ry, rz]`` per node.  Node 2 (the middle of the root
edge, at the origin) is where the panel is fixed to the spacecraft.

Usage: ``python examples/make_solar_array.py`` (writes ``examples/solar_array.npz``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.linalg

from flexdyn.beam import (
    ALUMINIUM,
    frame_element_mass,
    frame_element_stiffness,
    section_properties,
    tube,
)
from flexdyn.fe import Component

LENGTH, WIDTH, NX, NY = 2.0, 1.0, 9, 5
MASS_PER_LENGTH = 0.5  # kg/m: the tube and the cells' share
#: flexdyn's node rows [rx, ry, rz, tx, ty, tz] in the finite-element order [t; r]
FE_ORDER = np.r_[3, 4, 5, 0, 1, 2, 9, 10, 11, 6, 7, 8]


def solar_array() -> Component:
    """The panel (module docstring)."""
    x, y = np.meshgrid(np.linspace(0.0, LENGTH, NX), np.linspace(-WIDTH / 2, WIDTH / 2, NY),
                       indexing="ij")
    nodes = np.column_stack([x.ravel(), y.ravel(), np.zeros(x.size)])  # node i*NY + j
    members = ([(i * NY + j, (i + 1) * NY + j) for i in range(NX - 1) for j in range(NY)]
               + [(i * NY + j, i * NY + j + 1) for i in range(NX) for j in range(NY - 1)])
    props = section_properties(ALUMINIUM, tube(0.015, 0.001), axial=True)
    polar = props["polar_inertia_per_length"]
    n_dof = 6 * len(nodes)
    K, M = np.zeros((n_dof, n_dof)), np.zeros((n_dof, n_dof))
    for a, b in members:
        d = nodes[b] - nodes[a]
        h = float(np.linalg.norm(d))
        ex = d / h
        R = np.column_stack([ex, np.cross([0.0, 0.0, 1.0], ex), [0.0, 0.0, 1.0]])
        T = scipy.linalg.block_diag(R, R, R, R)
        ke = frame_element_stiffness(h, EA=props["EA"], GJ=props["GJ"], EI_y=props["EI_y"],
                                     EI_z=props["EI_z"])[np.ix_(FE_ORDER, FE_ORDER)]
        me = frame_element_mass(h, MASS_PER_LENGTH, polar)[np.ix_(FE_ORDER, FE_ORDER)]
        dofs = np.r_[6 * a:6 * a + 6, 6 * b:6 * b + 6]
        K[np.ix_(dofs, dofs)] += T @ ke @ T.T
        M[np.ix_(dofs, dofs)] += T @ me @ T.T
    return Component(nodes - nodes[NY // 2], M, K, name="solar_array")


if __name__ == "__main__":
    path = Path(__file__).resolve().parent / "solar_array.npz"
    panel = solar_array()
    panel.save(path)
    print(panel.info())
    print(f"written to {path} ({path.stat().st_size} bytes)")
