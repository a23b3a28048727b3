"""Named outputs of a state: what a controller, a co-simulation master or an FMU reads.

An output specification is a string:

- a name of the state layout (``docs/model-format.md``): a coordinate (``"link1.theta"``,
  ``"hub.qw"``, ``"boom.eta[0]"``) or a speed (``"link1.theta_dot"``) — one value;
- ``"<body>.position"`` — the inertial position of the body frame's origin (m), three values
  ``.x .y .z``; ``"<body>.rotation"`` — its rotation matrix to the inertial frame, nine
  values ``.r11 … .r33`` (row by row);
- ``"<body>.tip"`` or ``"<body>.node[j]"`` — the inertial position of the body's last node
  or node ``j`` (negative counts from the end), deformed (m), three values;
- either followed by ``".deflection"`` — the node's elastic displacement in the body frame
  (m), three values.

:class:`Outputs` evaluates a list of them at ``(q, u)`` with one kinematics pass, real or
complex (complex-step derivatives pass through).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .chain import Model, state_layout
from .terms import DEFAULT_FIDELITY, PositionTerms, check_fidelity, state_terms

__all__ = ["Outputs"]

_NODE = re.compile(r"^(?P<body>.+?)\.(?:tip|node\[(?P<node>-?\d+)\])(?P<defl>\.deflection)?$")
_FRAME = re.compile(r"^(?P<body>.+?)\.(?P<what>position|rotation)$")
_ROTATION = tuple(f"r{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3))

#: one output: ``(names, f(q, u, pos) -> values)``; ``pos`` is None unless it needs geometry
_Output = tuple[list[str], Callable[[np.ndarray, np.ndarray, Any], np.ndarray], bool]


def _body(model: Model, spec: str, name: str) -> int:
    if name not in model.names:
        raise ValueError(f"output {spec!r}: no body {name!r}; bodies are {list(model.names)}")
    return model.body_index(name)


def _node_output(model: Model, spec: str, match: re.Match) -> _Output:
    i = _body(model, spec, match["body"])
    body = model.bodies[i]
    if body.n_nodes == 0:
        raise ValueError(f"output {spec!r}: body {body.name!r} has no nodes")
    j = -1 if match["node"] is None else int(match["node"])
    if not -body.n_nodes <= j < body.n_nodes:
        raise ValueError(f"output {spec!r}: node {j} out of range for body {body.name!r} with "
                         f"{body.n_nodes} nodes")
    j %= body.n_nodes
    stem = f"{body.name}.node[{j}]"
    if match["defl"]:
        return ([f"{stem}.deflection.{c}" for c in "xyz"],
                lambda q, u, pos: pos.frames[i].p[j] - body.nodes[j], True)
    return ([f"{stem}.{c}" for c in "xyz"],
            lambda q, u, pos: pos.pose[i].apply(pos.frames[i].p[j]), True)


def _frame_output(model: Model, spec: str, match: re.Match) -> _Output:
    i = _body(model, spec, match["body"])
    name = model.names[i]
    if match["what"] == "position":
        return [f"{name}.position.{c}" for c in "xyz"], lambda q, u, pos: pos.pose[i].p, True
    return ([f"{name}.rotation.{c}" for c in _ROTATION],
            lambda q, u, pos: pos.pose[i].R.reshape(9), True)


class Outputs:
    """The outputs ``specs`` of ``model`` (module docstring): :attr:`names` (ny values) and
    ``outputs(q, u) -> (ny,)``.  ``ValueError`` naming an unknown specification, body or
    node."""

    def __init__(self, model: Model, specs: Sequence[str], fidelity: str = DEFAULT_FIDELITY):
        check_fidelity(fidelity)
        if isinstance(specs, str):
            specs = [specs]
        self.model, self.fidelity = model, fidelity
        layout = state_layout(model)
        q_index = {e.name: e.index for e in layout["q"]}
        u_index = {e.name: e.index for e in layout["u"]}
        self.names: list[str] = []
        self._parts: list[_Output] = []
        for spec in specs:
            if not isinstance(spec, str):
                raise ValueError(f"outputs: each output is a name (str), got {spec!r}")
            if spec in q_index:
                k = q_index[spec]
                part: _Output = ([spec], lambda q, u, pos, k=k: q[k:k + 1], False)
            elif spec in u_index:
                k = u_index[spec]
                part = ([spec], lambda q, u, pos, k=k: u[k:k + 1], False)
            elif (match := _NODE.match(spec)) is not None and match["body"] in model.names:
                part = _node_output(model, spec, match)
            elif (match := _FRAME.match(spec)) is not None:
                part = _frame_output(model, spec, match)
            else:
                raise ValueError(f"unknown output {spec!r}; an output is a state-layout name, "
                                 "'<body>.position', '<body>.rotation', '<body>.tip' or "
                                 "'<body>.node[j]' (either of the last two optionally followed "
                                 "by '.deflection')")
            self.names += part[0]
            self._parts.append(part)
        self._geometry = any(p[2] for p in self._parts)

    def __len__(self) -> int:
        return len(self.names)

    def __call__(self, q: np.ndarray, u: np.ndarray | None = None,
                 pos: PositionTerms | None = None) -> np.ndarray:
        """The outputs (ny,) at ``q`` (nq,), ``u`` (nu,; None: zero); ``pos`` the position
        terms at ``q`` if already computed."""
        u = np.zeros(self.model.nu) if u is None else u
        if self._geometry and pos is None:
            pos = state_terms(self.model, q, None, self.fidelity)[0]
        if not self._parts:
            return np.zeros(0)
        return np.concatenate([np.asarray(f(q, u, pos)).ravel() for _, f, _ in self._parts])
