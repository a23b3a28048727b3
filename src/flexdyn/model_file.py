"""Reading, validating and writing flexdyn model descriptions (model file format, version 1).

A model description is a tree of rigid and flexible bodies joined by joints; the file format is
specified in ``model-format.md``.  This module turns a *raw* description (as read from JSON/YAML,
or built in Python from lists or numpy arrays) into a *normalised* dictionary with every default
filled in and every array converted to a read-only ``float64`` numpy array, and back.

Every malformed input is rejected with a single :class:`ValueError`
(:class:`ModelFileError`) that lists every problem found, each message naming the body (index
and name) and the offending key, e.g.::

    bodies[1] "link2": flex.modes has 17 rows, expected 6 × 3 nodes = 18

A body's ``beam`` block (a straight uniform beam: geometry, material, section, modes per
direction) is turned into its ``flex`` data by :func:`flexdyn.beam.beam_modes`; the
normalised body keeps the block (what :func:`to_plain_dict` writes back) beside the
generated data.

Normalised structure
--------------------
::

    {"name": str, "gravity": (3,), "tip_kinematics": str,
     "bodies": [{"name": str, "parent": int (-1 for ground),
                 "joint": {"type": str, "axis": (3,) or None, "axes": (2, 3) or None,
                           "pitch": float, "map": (6, r) or None,
                           "factors": tuple of (6, r_i) or None, "sequence": str or None,
                           "parent_node": int or None,
                           "child_node": int or None,
                           "placement": {"rotation": (3, 3), "translation": (3,)},
                           "child_placement": {"rotation": (3, 3), "translation": (3,)}},
                 "rigid": {"mass": float, "com": (3,), "inertia": (3, 3)},
                 "flex": {"nodes": (n, 3), "node_masses": (n,), "node_inertias": (n, 3, 3),
                          "modes": (6n, m), "stiffness": (m, m), "damping": (m, m)}
                         or, for a nodal body, {"nodes", "node_masses", "node_inertias",
                          "nodal": True, "attach_node": int, "nodal_stiffness": (6n, 6n),
                          "nodal_damping": (6n, 6n)},
                 "beam": the normalised beam block (plain numbers and lists) or None}, ...],
     "constraints": [{"name": str, "type": str, "body": int, "node": int or None,
                      "point": (3,) or None, "other_body": int (-1 for ground),
                      "other_node": int or None, "other_point": (3,) or None,
                      <the kind's keys>: (3,) or (3, 3)}, ...]}
"""

from __future__ import annotations

import collections
import copy
import difflib
import itertools
import json
import numbers
import os
import reprlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy

from .beam import (
    ALUMINIUM,
    MEMBRANE_FORMS,
    MODE_FAMILIES,
    PLANE_FAMILIES,
    STEEL,
    BeamModes,
    Material,
    Section,
    beam_modes,
    circle,
    rectangle,
    section_properties,
    tube,
)
from .constraints import CONSTRAINT_KINDS
from .files import read_text, write_atomically
from .joint_forces import FORCE_KEYS
from .joints import EULER_SEQUENCES, JOINT_DIMENSIONS, JOINT_KINDS, is_subalgebra
from .tip_kinematics import DEFAULT_TIP_KINEMATICS, TIP_KINEMATICS, check_tip_kinematics

__all__ = [
    "JOINT_TYPES",
    "MATERIALS",
    "ModelFileError",
    "beam_nodes",
    "beam_summary",
    "json_schema",
    "normalize_model_dict",
    "read_model_dict",
    "to_plain_dict",
    "write_model_dict",
]

FORMAT_NAME = "flexdyn-model"
FORMAT_VERSION = 1

#: Joint types and the number of joint coordinates / speeds, ``(nq, nu)`` (``None`` where
#: the joint block sets them: ``map``, ``compound``).
JOINT_TYPES: dict[str, tuple[int | None, int | None]] = JOINT_DIMENSIONS
#: joint kinds that take each kind-specific key (from the joint registry)
_AXIS_TYPES, _AXES_TYPES, _PITCH_TYPES, _MAP_TYPES, _FACTORS_TYPES, _SEQUENCE_TYPES = (
    tuple(k for k, cls in JOINT_KINDS.items() if key in cls.file_keys)
    for key in ("axis", "axes", "pitch", "map", "factors", "sequence")
)

_TOP_KEYS = ("$schema", "format", "version", "name", "gravity", "tip_kinematics", "bodies",
             "constraints")
_BODY_KEYS = ("name", "parent", "joint", "rigid", "flex", "beam")
_JOINT_KEYS = (
    "type",
    "axis",
    "axes",
    "pitch",
    "map",
    "factors",
    "sequence",
    "parent_node",
    "child_node",
    "placement",
    "child_placement",
    "forces",
)
#: keys of a ``constraints`` entry: the endpoints, then every closure kind's own keys
_ENDPOINT_KEYS = ("name", "type", "body", "node", "point", "other_body", "other_node",
                  "other_point")
_CONSTRAINT_KEYS = (*_ENDPOINT_KEYS,
                    *dict.fromkeys(k for kind in CONSTRAINT_KINDS.values() for k in kind.keys))
_ROTATION_KEYS = ("rotation", "axis_angle", "quaternion", "euler")
_PLACEMENT_KEYS = (*_ROTATION_KEYS, "translation")
_RIGID_KEYS = ("mass", "com", "inertia")
_INVARIANT_KEYS = ("inertia_invariants_0", "inertia_invariants_1", "inertia_invariants_2")
_FLEX_KEYS = ("nodes", "node_masses", "node_inertias", "modes", "stiffness", "damping",
              "geometric_stiffness_1", "geometric_stiffness_2", "axial_modes", *_INVARIANT_KEYS,
              "nodal", "attach_node", "nodal_stiffness", "nodal_damping")
#: the keys of a modal flex block that a nodal one (``"nodal": true``) does not take
_MODAL_ONLY_KEYS = ("modes", "stiffness", "damping", "geometric_stiffness_1",
                    "geometric_stiffness_2", "axial_modes", *_INVARIANT_KEYS)

#: Tolerance of the unit-length, orthonormality, symmetry and triangle-inequality checks.
TOL = 1e-9
#: A symmetric matrix ``A`` is positive semi-definite when the smallest eigenvalue of its
#: Jacobi-scaled form ``B = D⁻¹ A D⁻¹`` is at least ``−PSD_RTOL · max|eigenvalue of B|`` (a
#: few hundred round-off units), ``D² = diag(max(A_ii, PSD_RTOL · max_j A_jj))``: ``B`` has
#: the signs of ``A``'s eigenvalues (Sylvester) but every coordinate at its own scale, so a
#: negative eigenvalue cannot hide below the round-off of another coordinate's large one.
PSD_RTOL = 1e-13
#: Characters a body name may not contain: the state-layout separator and control characters.
_NAME_FORBIDDEN = "." + "".join(map(chr, range(32))) + "\x7f"
#: Deepest nesting of lists and objects read from a file (a model file needs 7).
MAX_NESTING = 32
#: Most nodes a YAML document may expand to.
MAX_YAML_NODES = 10_000_000
#: Most values (numbers, strings, lists, objects) a JSON model file may hold: each costs a
#: Python object while it is read, so the limit bounds the time and memory of reading
#: (``benchmarks/bench_hostile_files.py``).  Checked on the text before it is parsed (values
#: are separated by commas).  A dense nodal stiffness of 800 nodes has 23 M numbers;
#: models that large are built in Python (:func:`flexdyn.beam.nodal_beam`), not read.
MAX_JSON_VALUES = 4_000_000
#: Most values a YAML model file may hold (YAML is parsed in Python, a hundred times slower
#: than JSON: YAML is meant for written models, JSON for generated data).  Checked on the
#: text before it is parsed (values are separated by commas or line breaks).
MAX_YAML_VALUES = 200_000
#: Most nodes a YAML document's aliases may add to the nodes it writes out: an alias bomb of
#: a kilobyte expands to millions (each costing a Python object), a model file that repeats
#: a block by an alias adds a few.
MAX_YAML_ALIAS_NODES = 100_000

_Shape = tuple[int | None, ...]
#: ``repr`` of values in messages, cut at a few levels and items
_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxdict = 3, 4, 4, 4
_REPR.maxstring = _REPR.maxother = 40


# ---------------------------------------------------------------------------------------------
# generic helpers
# ---------------------------------------------------------------------------------------------


def _describe(value: Any) -> str:
    """Return a short description of ``value`` for error messages (numpy scalars as plain
    numbers)."""
    if isinstance(value, np.generic):
        value = value.item()
    text = _REPR.repr(value)  # bounded: deep or self-referential lists cost nothing
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def _fmt_shape(shape: Sequence[int | None]) -> str:
    """Format a shape for messages, writing free dimensions as ``any``."""
    parts = ["any" if s is None else str(s) for s in shape]
    return "(" + ", ".join(parts) + ("," if len(parts) == 1 else "") + ")"


def _mapping(path: str, value: Any, allowed: Sequence[str] | None = None,
             report: _Report | None = None) -> Mapping:
    """Check that ``value`` is a mapping whose keys are all in ``allowed``; with a
    ``report``, each unknown key is added to it and the others are still parsed."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{path} must be an object (dict), got {_describe(value)}")
    for key in value:
        if allowed is not None and key not in allowed:
            message = (f"{path} has unknown key {key!r}{_suggest(key, allowed)}; allowed "
                       f"keys: {', '.join(allowed)}")
            if report is None:
                raise ValueError(message)
            report.errors.append(message)
    return value


class _Report:
    """The problems found in a model description, one message each: ``check(parse, ...)``
    runs one independent check and keeps its ``ValueError``'s message, so that every
    problem of a file is reported at once (:class:`ModelFileError`)."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def check(self, parse: Callable[..., Any], *args: Any) -> Any:
        """``parse(*args)``, or None with its message (or messages) kept."""
        try:
            return parse(*args)
        except ModelFileError as exc:
            self.errors.extend(exc.errors)
        except ValueError as exc:
            self.errors.append(str(exc))
        return None

    def raise_any(self) -> None:
        """Raise :class:`ModelFileError` with every message kept, if any."""
        if self.errors:
            raise ModelFileError(self.errors)


def _suggest(word: Any, choices: Sequence[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of ``choices`` to ``word``, or ``""``."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _required(path: str, mapping: Mapping, key: str) -> Any:
    """Return ``mapping[key]``, which must be present and not ``None``."""
    if mapping.get(key) is None:
        raise ValueError(f"{path} is missing the required key {key!r}")
    return mapping[key]


def _is_int(value: Any) -> bool:
    """Return whether ``value`` is an integer (booleans excluded)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    """Return whether ``value`` is a real number (booleans excluded)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _numbers(path: str, value: Any) -> np.ndarray:
    """``value`` — a number, a (nested) list of numbers or a numeric numpy array — as an
    array (float64, or the numeric array itself).  The leaves are checked in one vectorized
    pass over an object array (no Python recursion: deep and self-referential lists are
    named errors, and a million numbers cost a fraction of a second)."""
    if isinstance(value, np.ndarray) and value.dtype.kind != "O":
        if value.dtype.kind not in "iuf":
            raise ValueError(f"{path} must be numeric, got an array of dtype {value.dtype}")
        return value
    if not isinstance(value, (list, tuple, np.ndarray)):
        if not _is_real(value):
            raise ValueError(f"{path} must be a number or a list of numbers, got "
                             f"{_describe(value)}")
        try:
            return np.array(float(value))
        except OverflowError:
            raise ValueError(f"{path} holds a number too large for a float") from None
    try:
        leaves = np.array(value, dtype=object)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{path} is not a regular array (ragged nested lists?): {exc}") from None
    if leaves.ndim > MAX_NESTING:
        raise ValueError(f"{path} holds lists nested deeper than {MAX_NESTING} levels (a "
                         "list that contains itself?)")
    kinds = np.frompyfunc(type, 1, 1)(leaves)
    bad = {t for t in set(np.ravel(kinds).tolist()) if not _is_real_type(t)}
    if bad:
        if list in bad or tuple in bad:  # ragged: name the entry whose length is the odd one
            sizes = np.frompyfunc(lambda v: len(v) if isinstance(v, (list, tuple)) else -1,
                                  1, 1)(leaves).astype(np.int64)
            values, counts = np.unique(sizes, return_counts=True)
            odd = tuple(int(i) for i in np.argwhere(sizes != values[np.argmax(counts)])[0])
            raise ValueError(f"{path} is not a regular array (ragged nested lists?): its entry "
                             f"{''.join(f'[{i}]' for i in odd)} is "
                             + ("a number" if sizes[odd] < 0 else f"a list of {sizes[odd]}")
                             + " where most are " + ("numbers" if values[np.argmax(counts)] < 0
                                                     else f"lists of {values[np.argmax(counts)]}"))
        first = tuple(int(i) for i in np.argwhere(np.frompyfunc(
            lambda t: t in bad, 1, 1)(kinds).astype(bool))[0])
        leaf = leaves[first]
        where = path + "".join(f"[{i}]" for i in first)
        if isinstance(leaf, np.ndarray):
            raise ValueError(f"{where} must be numeric, got an array of dtype {leaf.dtype}")
        raise ValueError(f"{where} must be a number or a list of numbers, got "
                         f"{_describe(leaf)}")
    try:
        return leaves.astype(np.float64)
    except OverflowError:
        raise ValueError(f"{path} holds a number too large for a float") from None


def _is_real_type(t: type) -> bool:
    """Whether values of type ``t`` are real numbers (booleans excluded)."""
    return issubclass(t, numbers.Real) and not issubclass(t, (bool, np.bool_))


def _check_finite(path: str, arr: np.ndarray) -> None:
    """Raise if ``arr`` contains NaN or infinity, naming the first bad index."""
    bad = np.argwhere(~np.isfinite(arr))
    if bad.size:
        idx = tuple(int(i) for i in bad[0])
        where = f" at index {list(idx)}" if idx else ""
        raise ValueError(f"{path} contains a non-finite number ({float(arr[idx])!r}){where}")


def _array(
    path: str,
    value: Any,
    shape: _Shape,
    dims: Sequence[str | None] | None = None,
) -> np.ndarray:
    """Convert ``value`` to a finite, read-only ``float64`` array of a given shape."""
    arr = np.array(_numbers(path, value), dtype=np.float64)
    if arr.size == 0 and arr.ndim != len(shape):
        arr = arr.reshape(tuple(0 if s is None else s for s in shape))
    if arr.ndim != len(shape):
        got = "a number" if arr.ndim == 0 else f"shape {_fmt_shape(arr.shape)}"
        raise ValueError(
            f"{path} must be a {len(shape)}-D array of shape {_fmt_shape(shape)}, got {got}"
        )
    names = ("rows", "columns") if len(shape) == 2 else ("entries",) * len(shape)
    for axis, (got_n, want_n) in enumerate(zip(arr.shape, shape, strict=True)):
        if want_n is None or got_n == want_n:
            continue
        why = dims[axis] if dims is not None else None
        if why is not None:
            raise ValueError(f"{path} has {got_n} {names[axis]}, expected {why} = {want_n}")
        raise ValueError(f"{path} has shape {_fmt_shape(arr.shape)}, expected {_fmt_shape(shape)}")
    _check_finite(path, arr)
    arr.setflags(write=False)
    return arr


def _optional_array(path: str, value: Any, shape: tuple[int, ...]) -> np.ndarray:
    """Like ``_array``, but ``None`` gives a read-only array of zeros."""
    if value is None:
        arr = np.zeros(shape)
        arr.setflags(write=False)
        return arr
    return _array(path, value, shape)


def _scalar(path: str, value: Any, default: float | None = None) -> float:
    """Convert ``value`` to a finite Python float."""
    if value is None and default is not None:
        return default
    if not _is_real(value):
        raise ValueError(f"{path} must be a number, got {_describe(value)}")
    try:
        out = float(value)
    except OverflowError:
        raise ValueError(f"{path} is too large for a float") from None
    if not np.isfinite(out):
        raise ValueError(f"{path} must be a finite number, got {out!r}")
    return out


def _index(path: str, value: Any, count: int, what: str) -> int | None:
    """Check an optional index into a list of ``count`` items."""
    if value is None:
        return None
    if not _is_int(value):
        raise ValueError(f"{path} must be an integer node index or null, got {_describe(value)}")
    if not 0 <= int(value) < count:
        raise ValueError(f"{path} = {int(value)} is out of range: {what} has {count} nodes")
    return int(value)


def _scale(mat: np.ndarray) -> float:
    """Return the largest absolute entry of ``mat`` (the scale of relative tolerances)."""
    return float(np.max(np.abs(mat))) if mat.size else 0.0


def _check_sym_psd(path: str, mat: np.ndarray) -> np.ndarray:
    """Check that a square matrix is symmetric positive semi-definite (relative tol ``TOL``)."""
    if mat.size == 0:
        return np.zeros(0)
    scale = _scale(mat)
    asym = float(np.max(np.abs(mat - mat.T)))
    if asym > TOL * scale:
        raise ValueError(f"{path} is not symmetric (max |A - Aᵀ| = {asym:.3g})")
    sym = 0.5 * (mat + mat.T)
    eig = _extreme_eigenvalues(sym)
    if eig[0] >= 0.0:
        return eig
    diag = np.diagonal(sym)
    d = np.sqrt(np.maximum(diag, PSD_RTOL * max(float(np.max(diag)), 0.0)))
    d[d == 0.0] = 1.0  # a zero matrix, or every diagonal entry <= 0: A's own scale
    scaled = _extreme_eigenvalues(sym / d[:, None] / d[None, :])
    if scaled[0] < -PSD_RTOL * max(abs(scaled[0]), abs(scaled[-1])):
        raise ValueError(f"{path} is not positive semi-definite (smallest eigenvalue {eig[0]:.6g}"
                         f"; {scaled[0]:.3g} relative to the scale of its coordinates)")
    return eig


def _extreme_eigenvalues(sym: np.ndarray) -> np.ndarray:
    """The eigenvalues of a symmetric matrix in ascending order — only the smallest and the
    largest for a large banded one (a finite-element stiffness: LAPACK's banded solver,
    O(n b²) instead of O(n³))."""
    n = sym.shape[0]
    rows, cols = np.nonzero(sym)
    b = int(np.max(np.abs(rows - cols), initial=0))
    if n < 200 or b > n // 8:
        return np.linalg.eigvalsh(sym)
    band = np.zeros((b + 1, n))
    for k in range(b + 1):
        band[k, :n - k] = np.diagonal(sym, -k)
    return np.concatenate([scipy.linalg.eigvals_banded(band, lower=True, select="i",
                                                       select_range=(i, i))
                           for i in (0, n - 1)])


def _check_inertia(path: str, inertia: np.ndarray) -> None:
    """Check a 3×3 inertia tensor: symmetric PSD and satisfying the triangle inequality."""
    eig = _check_sym_psd(path, inertia)
    if eig[0] + eig[1] < eig[2] - TOL * _scale(inertia):
        raise ValueError(
            f"{path} violates the triangle inequality of principal moments: "
            f"{eig[0]:.6g} + {eig[1]:.6g} < {eig[2]:.6g}"
        )


def _unit(path: str, vec: np.ndarray) -> None:
    """Check that a vector has unit length (tolerance ``TOL``)."""
    norm = float(np.linalg.norm(vec))
    if norm == 0.0:
        raise ValueError(f"{path} is the zero vector, expected a unit vector")
    if abs(norm - 1.0) > TOL:
        raise ValueError(f"{path} has norm {norm!r}, expected a unit vector (norm 1)")


def _rotation(path: str, value: Any) -> np.ndarray:
    """Parse a rotation matrix, checking orthonormality and ``det = +1``."""
    if value is None:
        rot = np.eye(3)
        rot.setflags(write=False)
        return rot
    return _checked_rotation(path, _array(path, value, (3, 3)))


def _checked_rotation(path: str, rot: np.ndarray) -> np.ndarray:
    """``rot`` if it is a rotation (finite, orthonormal, ``det = +1``), else ``ValueError``
    naming ``path``; every form of a placement's rotation ends here."""
    if not np.all(np.isfinite(rot)):
        raise ValueError(f"{path} gives a rotation that is not finite")
    with np.errstate(over="ignore", invalid="ignore"):  # entries near the float limit: inf
        err = float(np.max(np.abs(rot.T @ rot - np.eye(3))))
    if err > TOL:
        raise ValueError(
            f"{path} is not orthonormal (max |RᵀR - I| = {err:.3g} > {TOL:g}); write it to "
            "full precision, or give the rotation as axis_angle, quaternion or euler instead")
    det = float(np.linalg.det(rot))
    if det < 0.0:
        raise ValueError(f"{path} has determinant {det:.6g}; a rotation needs det = +1")
    return rot


# ---------------------------------------------------------------------------------------------
# the parts of a body
# ---------------------------------------------------------------------------------------------


def _placement(path: str, value: Any) -> dict[str, np.ndarray]:
    """Parse a placement (rigid transform), defaulting to the identity."""
    value = _mapping(path, {} if value is None else value, _PLACEMENT_KEYS)
    given = [k for k in _ROTATION_KEYS if value.get(k) is not None]
    if len(given) > 1:
        raise ValueError(f"{path} gives the rotation twice ({', '.join(given)}); use one")
    key = given[0] if given else "rotation"
    return {
        "rotation": _ROTATION_FORMS[key](f"{path}.{key}", value.get(key)),
        "translation": _optional_array(f"{path}.translation", value.get("translation"), (3,)),
    }


def _frozen_rotation(R: np.ndarray) -> np.ndarray:
    R = np.array(R, dtype=float)
    R.setflags(write=False)
    return R


def _axis_angle(path: str, value: Any) -> np.ndarray:
    """``[x, y, z, angle]``: rotation by ``angle`` (rad) about the axis ``(x, y, z)`` (any
    non-zero length)."""
    from scipy.spatial.transform import Rotation

    a = _array(path, value, (4,), ("axis x, y, z and angle",))
    axis = _scaled(a[:3])  # scale first: the norm of [1e200, 1e200, 0] overflows
    norm = float(np.linalg.norm(axis))
    if norm == 0.0:
        raise ValueError(f"{path} has a zero axis")
    # the quaternion [sin(a/2) n, cos(a/2)]: numpy's sine and cosine reduce any finite angle
    # exactly, where the rotation vector n a of a huge angle overflows
    half = 0.5 * float(a[3])
    return _checked_rotation(path, _frozen_rotation(Rotation.from_quat(
        np.append(np.sin(half) * axis / norm, np.cos(half))).as_matrix()))


def _quaternion(path: str, value: Any) -> np.ndarray:
    """``[w, x, y, z]`` of any non-zero length (normalised)."""
    from scipy.spatial.transform import Rotation

    q = _array(path, value, (4,), ("w, x, y, z",))
    if not np.any(q):
        raise ValueError(f"{path} is zero")
    # scaled first: the norm of [1e200, 1e200, 0, 0] overflows, that of 1e-200 underflows
    return _checked_rotation(path, _frozen_rotation(
        Rotation.from_quat(np.roll(_scaled(q), -1)).as_matrix()))


def _euler(path: str, value: Any) -> np.ndarray:
    """``{"sequence": "ZYX", "angles": [a, b, c]}``: successive rotations (rad) about the
    axes of ``sequence`` — upper case intrinsic (about the turned axes), lower case extrinsic."""
    from scipy.spatial.transform import Rotation

    value = _mapping(path, value, ("sequence", "angles"))
    seq = _required(path, value, "sequence")
    if not (isinstance(seq, str) and len(seq) == 3
            and (set(seq) <= set("xyz") or set(seq) <= set("XYZ"))
            and seq[0] != seq[1] and seq[1] != seq[2]):
        raise ValueError(f"{path}.sequence must be three axes like 'ZYX' (intrinsic) or 'xyz' "
                         f"(extrinsic) with no axis twice in a row, got {_describe(seq)}")
    angles = _array(f"{path}.angles", _required(path, value, "angles"), (3,))
    return _checked_rotation(path, _frozen_rotation(Rotation.from_euler(seq, angles).as_matrix()))


def _scaled(v: np.ndarray) -> np.ndarray:
    """``v / max |v|`` (``v`` when zero): same direction, a norm between 1 and √n."""
    top = float(np.max(np.abs(v)))
    return v / top if top > 0.0 else v


_ROTATION_FORMS = {"rotation": _rotation, "axis_angle": _axis_angle,
                   "quaternion": _quaternion, "euler": _euler}


def _rigid(where: str, value: Any, report: _Report) -> dict[str, Any] | None:
    """Parse the ``rigid`` block of a body, each key on its own (problems go to ``report``;
    None if any)."""
    path = f"{where}: rigid"
    value = _mapping(path, {} if value is None else value, _RIGID_KEYS, report)
    mass = report.check(_mass, f"{path}.mass", value.get("mass"))
    inertia = report.check(_inertia, f"{path}.inertia", value.get("inertia"))
    com = report.check(_optional_array, f"{path}.com", value.get("com"), (3,))
    if mass is None or inertia is None or com is None:
        return None
    return {"mass": mass, "com": com, "inertia": inertia}


def _mass(path: str, value: Any) -> float:
    """A mass ``>= 0`` (kg; default 0)."""
    mass = _scalar(path, value, default=0.0)
    if mass < 0.0:
        raise ValueError(f"{path} is negative ({mass!r}); masses must be >= 0")
    return mass


def _inertia(path: str, value: Any) -> np.ndarray:
    """An inertia tensor (3, 3), zero by default (:func:`_check_inertia`)."""
    inertia = _optional_array(path, value, (3, 3))
    _check_inertia(path, inertia)
    return inertia


def _flex(where: str, value: Any, report: _Report | None = None) -> dict[str, np.ndarray]:
    """Parse the ``flex`` block of a body (unknown keys go to ``report``)."""
    path = f"{where}: flex"
    value = _mapping(path, {} if value is None else value, _FLEX_KEYS, report)
    _odd_node_count(path, value)
    if value:
        nodes = _array(f"{path}.nodes", _required(path, value, "nodes"), (None, 3))
        raw_masses = _required(path, value, "node_masses")
    else:
        nodes, raw_masses = _array(f"{path}.nodes", [], (None, 3)), []
    n = nodes.shape[0]
    masses = _array(f"{path}.node_masses", raw_masses, (n,), (f"one per node, {n} nodes",))
    negative = np.flatnonzero(masses < 0.0)
    if negative.size:
        j = int(negative[0])
        raise ValueError(
            f"{path}.node_masses[{j}] is negative ({float(masses[j]):.6g}); masses must be >= 0"
        )
    inertias = _optional_array(f"{path}.node_inertias", value.get("node_inertias"), (n, 3, 3))
    for j in range(n):
        _check_inertia(f"{path}.node_inertias[{j}]", inertias[j])
    nodal = value.get("nodal", False)
    if not isinstance(nodal, bool):
        raise ValueError(f"{path}.nodal must be true or false, got {_describe(nodal)}")
    if nodal:
        return {"nodes": nodes, "node_masses": masses, "node_inertias": inertias,
                **_nodal(path, value, masses, inertias)}
    for key in ("attach_node", "nodal_stiffness", "nodal_damping"):
        if value.get(key) is not None:
            raise ValueError(f"{path}.{key} belongs to a nodal body: give flex.nodal = true")

    has_modes, has_stiffness = value.get("modes") is not None, value.get("stiffness") is not None
    if has_modes != has_stiffness:
        given, missing = ("modes", "stiffness") if has_modes else ("stiffness", "modes")
        raise ValueError(f"{path}.{given} is given without flex.{missing}")
    stiffness = _array(f"{path}.stiffness", value.get("stiffness", []), (None, None))
    m = stiffness.shape[0]
    if stiffness.shape[1] != m:
        raise ValueError(f"{path}.stiffness must be square, got shape {stiffness.shape}")
    _check_sym_psd(f"{path}.stiffness", stiffness)
    modes = _array(
        f"{path}.modes",
        value.get("modes", []),
        (6 * n, m),
        (f"6 × {n} nodes", "the size of flex.stiffness"),
    )
    damping = _optional_array(f"{path}.damping", value.get("damping"), (m, m))
    _check_sym_psd(f"{path}.damping", damping)
    return {
        "nodes": nodes,
        "node_masses": masses,
        "node_inertias": inertias,
        "modes": modes,
        "stiffness": stiffness,
        "damping": damping,
        **_stiffening(path, value, m),
        **_invariants(path, value, m),
    }


def _invariants(path: str, value: Mapping, m: int) -> dict[str, np.ndarray]:
    """The optional inertia invariants of a consistent mass (:class:`flexdyn.body.
    InertiaInvariants`): ``inertia_invariants_0`` ((m + 6) × (m + 6), symmetric positive
    semi-definite), ``inertia_invariants_1`` (m × 3 × (m + 6)) and ``inertia_invariants_2``
    (m × m × 3 × 3, ``[k, l] = [l, k]ᵀ``), all three or none."""
    given = [key for key in _INVARIANT_KEYS if value.get(key) is not None]
    if not given:
        return {}
    if len(given) < 3:
        missing = [key for key in _INVARIANT_KEYS if key not in given]
        raise ValueError(f"{path}.{given[0]} is given without flex.{missing[0]} (the three "
                         "inertia invariants go together)")
    modes = ("the number of modes",)
    out = {
        "inertia_invariants_0": _array(f"{path}.inertia_invariants_0",
                                       value["inertia_invariants_0"], (m + 6, m + 6),
                                       ("the number of modes + 6",) * 2),
        "inertia_invariants_1": _array(f"{path}.inertia_invariants_1",
                                       value["inertia_invariants_1"], (m, 3, m + 6),
                                       (*modes, None, "the number of modes + 6")),
        "inertia_invariants_2": _array(f"{path}.inertia_invariants_2",
                                       value["inertia_invariants_2"], (m, m, 3, 3),
                                       (*modes, *modes, None, None)),
    }
    _check_sym_psd(f"{path}.inertia_invariants_0", out["inertia_invariants_0"])
    I2 = out["inertia_invariants_2"]
    asym = float(np.max(np.abs(I2 - I2.transpose(1, 0, 3, 2)), initial=0.0))
    if asym > TOL * _scale(I2):
        raise ValueError(f"{path}.inertia_invariants_2[k, l] must equal the transpose of "
                         f"[l, k] (max difference {asym:.3g})")
    return out


def _odd_node_count(path: str, value: Mapping) -> None:
    """When ``nodes`` disagrees with the other per-node entries of a flex block and those
    agree, blame ``nodes`` (a row dropped from it is not ``node_masses``'s fault)."""
    counts: dict[str, int] = {}
    for key, per_node in (("nodes", 1), ("node_masses", 1), ("node_inertias", 1),
                          ("modes", 6), ("nodal_stiffness", 6)):
        entry = value.get(key)
        if isinstance(entry, (Sequence, np.ndarray)) and not isinstance(entry, str) and (
                len(entry) % per_node == 0):
            counts[key] = len(entry) // per_node
    tally = collections.Counter(counts.values()).most_common()
    if len(tally) < 2 or tally[0][1] == tally[1][1]:
        return
    n = tally[0][0]
    if counts.get("nodes", n) == n:
        return  # the others are measured against nodes, and their messages say so
    odd = [f"flex.{key} describes {c} nodes" for key, c in counts.items() if c != n]
    agree = [f"flex.{key}" for key, c in counts.items() if c == n]
    raise ValueError(f"{path}: {'; '.join(odd)}, but {', '.join(agree)} describe {n} (one "
                     "node too many or too few there?)")


def _nodal(path: str, value: Mapping, masses: np.ndarray,
           inertias: np.ndarray) -> dict[str, Any]:
    """The nodal part of a nodal flex block (Rodriguez's finite-element body, Sec 2): the
    ``attach_node`` rigidly fixed to the joint, the ``nodal_stiffness`` (6n × 6n, symmetric
    PSD, node by node ``[rx, ry, rz, tx, ty, tz]``) and the optional ``nodal_damping``; every
    other node must have a positive definite spatial inertia (its six coordinates carry
    inertia only through it)."""
    for key in _MODAL_ONLY_KEYS:
        if value.get(key) is not None:
            raise ValueError(f"{path}.{key} is not used by a nodal body (flex.nodal = true): its "
                             "coordinates are the node displacements, with flex.nodal_stiffness")
    n = masses.shape[0]
    if n < 2:
        raise ValueError(f"{path}: a nodal body needs at least 2 nodes (the attach node and a "
                         f"free one), got {n}")
    attach = int(_index(f"{path}.attach_node", _required(path, value, "attach_node"), n,
                        "the body"))
    for j in range(n):
        if j != attach and (masses[j] <= 0.0 or np.linalg.eigvalsh(inertias[j])[0] <= 0.0):
            raise ValueError(
                f"{path}: node {j} of a nodal body needs a positive mass and positive definite "
                f"flex.node_inertias[{j}]: its rotation and translation coordinates have no "
                "other inertia (lumped mass)")
    dims = (f"6 × {n} nodes",) * 2
    K = _array(f"{path}.nodal_stiffness", _required(path, value, "nodal_stiffness"),
               (6 * n, 6 * n), dims)
    _check_sym_psd(f"{path}.nodal_stiffness", K)
    raw_damping = value.get("nodal_damping")
    C = (_optional_array(f"{path}.nodal_damping", None, (6 * n, 6 * n)) if raw_damping is None
         else _array(f"{path}.nodal_damping", raw_damping, (6 * n, 6 * n), dims))
    _check_sym_psd(f"{path}.nodal_damping", C)
    return {"nodal": True, "attach_node": attach, "nodal_stiffness": K, "nodal_damping": C}


def _stiffening(path: str, value: Mapping, m: int) -> dict[str, np.ndarray]:
    """The optional stiffening data of a flex block: ``geometric_stiffness_1`` (m, m, m) and
    ``geometric_stiffness_2`` (m, m, m, m), both or neither, fully symmetric, and
    ``axial_modes`` (mode indices, only with them)."""
    K1, K2 = value.get("geometric_stiffness_1"), value.get("geometric_stiffness_2")
    if K1 is None and K2 is None:
        if value.get("axial_modes") is not None:
            raise ValueError(f"{path}.axial_modes is given without flex.geometric_stiffness_1")
        return {}
    if (K1 is None) != (K2 is None):
        given, missing = (("geometric_stiffness_1", "geometric_stiffness_2") if K2 is None
                          else ("geometric_stiffness_2", "geometric_stiffness_1"))
        raise ValueError(f"{path}.{given} is given without flex.{missing}")
    out = {"geometric_stiffness_1": _array(f"{path}.geometric_stiffness_1", K1, (m, m, m),
                                           ("the number of modes",) * 3),
           "geometric_stiffness_2": _array(f"{path}.geometric_stiffness_2", K2, (m, m, m, m),
                                           ("the number of modes",) * 4)}
    for key, tensor in out.items():
        scale = _scale(tensor)
        for axes in itertools.permutations(range(tensor.ndim)):
            asym = float(np.max(np.abs(tensor - tensor.transpose(axes)), initial=0.0))
            if asym > TOL * scale:
                raise ValueError(f"{path}.{key} is not symmetric in all its indices (max "
                                 f"difference under the index permutation {axes}: "
                                 f"{asym:.3g})")
    axial = value.get("axial_modes", [])
    _numbers(f"{path}.axial_modes", axial)  # numbers only; a few, so numpy infers ints
    indices = np.array(axial)
    if indices.ndim != 1 or (indices.size and not np.issubdtype(indices.dtype, np.integer)) \
            or np.any(indices < 0) or np.any(indices >= m) \
            or np.unique(indices).size != indices.size:
        raise ValueError(f"{path}.axial_modes must be a list of distinct mode indices in "
                         f"[0, {m}), got {axial!r}")
    out["axial_modes"] = indices.astype(np.int64)
    out["axial_modes"].setflags(write=False)
    return out


def _joint_map(path: str, value: Any) -> np.ndarray:
    """A joint map ``H`` (6 × r, 1 ≤ r ≤ 6, columns ``[ω; v]``): every column non-zero with a
    unit or zero rotation part, the columns linearly independent."""
    H = _array(path, value, (6, None), ("a twist [ω; v] per column", None))
    r = H.shape[1]
    if not 1 <= r <= 6:
        raise ValueError(f"{path} has {r} columns, expected 1 to 6 (one per degree of freedom)")
    for k in range(r):
        if not np.any(H[:, k]):
            raise ValueError(f"{path} column {k} is zero")
        w = float(np.linalg.norm(H[:3, k]))
        if w != 0.0 and abs(w - 1.0) > TOL:
            raise ValueError(f"{path} column {k} has a rotation part of norm {w!r}, expected a "
                             "unit vector (a revolute or screw column) or zero (a prismatic one)")
    if np.linalg.matrix_rank(H, tol=1e-9) < r:
        raise ValueError(f"{path} has linearly dependent columns; a joint map needs one "
                         "independent column per degree of freedom")
    return H


def _joint_factors(path: str, value: Any) -> tuple[np.ndarray, ...]:
    """The factors of a compound joint: a non-empty list of joint maps, each spanning a
    subalgebra of se(3), with at most 6 independent columns in all."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence) or not value:
        raise ValueError(f"{path} must be a non-empty list of joint maps (6 × r_i), "
                         f"got {_describe(value)}")
    factors = tuple(_joint_map(f"{path}[{k}]", F) for k, F in enumerate(value))
    for k, F in enumerate(factors):
        if not is_subalgebra(F):
            raise ValueError(f"{path}[{k}] does not span a subalgebra of se(3) (the cross "
                             "products of its columns leave their span), so it has no constant "
                             "joint map: split it into factors of one column")
    _joint_map(path, np.hstack(factors))
    return factors


def _typed_option(path: str, value: Any, jtype: str, types: Sequence[str]) -> bool:
    """Check presence of a type-specific joint key; return whether it must be parsed."""
    if jtype in types:
        if value is None:
            raise ValueError(f"{path} is required for a {jtype} joint")
        return True
    if value is not None:
        raise ValueError(f"{path} is not allowed for a {jtype} joint (only for {', '.join(types)})")
    return False


def _joint(
    where: str, value: Any, parent: int, parent_nodes: int, own_nodes: int, parent_label: str,
    report: _Report,
) -> dict[str, Any] | None:
    """Parse the ``joint`` block of a body (unknown keys and the placements' problems go to
    ``report``; None if a placement failed)."""
    path = f"{where}: joint"
    value = _mapping(path, value, _JOINT_KEYS, report)
    placements = {key: report.check(_placement, f"{path}.{key}", value.get(key))
                  for key in ("placement", "child_placement")}
    jtype = _required(path, value, "type")
    if not isinstance(jtype, str) or jtype not in JOINT_TYPES:
        raise ValueError(
            f"{path}.type must be one of {', '.join(JOINT_TYPES)}, got {_describe(jtype)}"
            f"{_suggest(jtype, JOINT_TYPES)}"
        )
    axis = axes = None
    if _typed_option(f"{path}.axis", value.get("axis"), jtype, _AXIS_TYPES):
        axis = _array(f"{path}.axis", value["axis"], (3,))
        _unit(f"{path}.axis", axis)
    if _typed_option(f"{path}.axes", value.get("axes"), jtype, _AXES_TYPES):
        axes = _array(f"{path}.axes", value["axes"], (2, 3))
        for k in range(2):
            _unit(f"{path}.axes[{k}]", axes[k])
        if np.linalg.norm(np.cross(axes[0], axes[1])) <= TOL:
            raise ValueError(f"{path}.axes are parallel; a universal joint needs two distinct axes")
    raw_pitch = value.get("pitch")
    if jtype not in _PITCH_TYPES and _is_real(raw_pitch) and raw_pitch == 0:
        raw_pitch = None  # an explicit zero pitch is harmless (normalisation writes 0.0)
    pitch = 0.0
    if _typed_option(f"{path}.pitch", raw_pitch, jtype, _PITCH_TYPES):
        pitch = _scalar(f"{path}.pitch", raw_pitch)
    jmap = factors = sequence = None
    if _typed_option(f"{path}.map", value.get("map"), jtype, _MAP_TYPES):
        jmap = _joint_map(f"{path}.map", value["map"])
    if _typed_option(f"{path}.factors", value.get("factors"), jtype, _FACTORS_TYPES):
        factors = _joint_factors(f"{path}.factors", value["factors"])
    if _typed_option(f"{path}.sequence", value.get("sequence"), jtype, _SEQUENCE_TYPES):
        sequence = value["sequence"]
        if not isinstance(sequence, str) or sequence not in EULER_SEQUENCES:
            raise ValueError(f"{path}.sequence must be one of {', '.join(EULER_SEQUENCES)} "
                             f"(Euler angles about x, y, z), got {_describe(sequence)}")
    if parent < 0 and value.get("parent_node") is not None:
        raise ValueError(
            f"{path}.parent_node must be null for a body jointed to the ground, "
            f"got {_describe(value['parent_node'])}"
        )
    out = {
        "type": jtype,
        "axis": axis,
        "axes": axes,
        "pitch": pitch,
        "map": jmap,
        "factors": factors,
        "sequence": sequence,
        "parent_node": _index(
            f"{path}.parent_node", value.get("parent_node"), parent_nodes, parent_label
        ),
        "child_node": _index(f"{path}.child_node", value.get("child_node"), own_nodes, "the body"),
        **placements,
        "forces": None,
    }
    if value.get("forces") is not None:
        out["forces"] = _joint_forces(f"{path}.forces", value["forces"], out)
    return None if None in placements.values() else out


def _joint_forces(path: str, value: Any, joint: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Parse a joint's ``forces`` block (:mod:`flexdyn.joint_forces`): each key a number or
    one per joint speed, returned as arrays (nu_j,) of the keys given."""
    value = _mapping(path, value, FORCE_KEYS)
    cls = JOINT_KINDS[joint["type"]]
    j = cls(**{k: joint[k] for k in cls.file_keys})
    if j.nu == 0 or not j.rates or j.nq != j.nu:
        raise ValueError(
            f"{path}: joint forces act on joints whose speeds are the rates of their "
            f"coordinates (revolute, prismatic, screw, cylindrical, universal, ...); a "
            f"{joint['type']} joint's are not")
    out: dict[str, np.ndarray] = {}
    for key in FORCE_KEYS:
        raw = value.get(key)
        if raw is None:
            continue
        arr = _array(f"{path}.{key}", [raw] * j.nu if _is_real(raw) else raw, (j.nu,),
                     (f"the joint's number of speeds ({joint['type']})",))
        if key in _NONNEGATIVE_FORCE_KEYS and np.any(arr < 0):
            raise ValueError(f"{path}.{key} must be ≥ 0, got {_describe(raw)}")
        if key in ("smoothing", "torque_limit") and np.any(arr <= 0):
            raise ValueError(f"{path}.{key} must be > 0, got {_describe(raw)}")
        out[key] = arr
    lower, upper = out.get("lower"), out.get("upper")
    if lower is not None and upper is not None and np.any(lower >= upper):
        raise ValueError(f"{path}: lower must be below upper, got lower = "
                         f"{_describe(lower.tolist())}, upper = {_describe(upper.tolist())}")
    if (lower is not None or upper is not None) and not np.all(
            out.get("limit_stiffness", np.zeros(1)) > 0):
        raise ValueError(f"{path}: a joint limit (lower, upper) needs limit_stiffness > 0 "
                         "(N m/rad or N/m)")
    return out


#: keys of a ``forces`` block that must not be negative
_NONNEGATIVE_FORCE_KEYS = ("stiffness", "damping", "coulomb", "limit_stiffness", "limit_damping")


# ---------------------------------------------------------------------------------------------
# beam blocks
# ---------------------------------------------------------------------------------------------
_BEAM_KEYS = ("start", "end", "length", "axis", "y_axis", "material", "section", "modes",
              "elements", "basis", "boundary", "membrane", "damping_ratio", "stiffening")
_MATERIAL_KEYS = ("E", "G", "nu", "rho")
#: the keys of each section shape (``shape`` absent: the properties themselves)
_SECTION_SHAPES = {"rectangle": ("size_y", "size_z"), "tube": ("outer_radius", "wall"),
                   "circle": ("radius",), None: ("A", "Iy", "Iz", "J")}
_SECTION_KEYS = ("shape", *dict.fromkeys(k for keys in _SECTION_SHAPES.values() for k in keys))
_MODE_KEYS = (*MODE_FAMILIES, "plane", "count")
#: built-in materials of a beam block, by name
MATERIALS = {"aluminium": ALUMINIUM, "steel": STEEL}
_BEAM_DEFAULTS = {"start": [0.0, 0.0, 0.0], "elements": 10, "basis": "lumped",
                  "boundary": "cantilever", "membrane": "condensed", "damping_ratio": 0.0,
                  "stiffening": False}


def _positive(path: str, value: Any) -> float:
    """A finite number > 0."""
    x = _scalar(path, value)
    if x <= 0.0:
        raise ValueError(f"{path} must be positive, got {x!r}")
    return x


def _direction(path: str, value: Any) -> np.ndarray:
    """A non-zero 3-vector of any finite length, as a unit vector (scaled first: the norm of
    ``[1e200, 1e200, 0]`` overflows)."""
    v = _scaled(_array(path, value, (3,)))
    if not np.any(v):
        raise ValueError(f"{path} is the zero vector, expected a direction")
    return v / np.linalg.norm(v)


def _beam_material(path: str, value: Any) -> tuple[Any, Material]:
    """A beam block's ``material``: the name of a built-in (:data:`MATERIALS`) or
    ``{"E", "rho", "G" or "nu"}``; returns (its normalised form, the :class:`Material`)."""
    if isinstance(value, str):
        if value not in MATERIALS:
            raise ValueError(f"{path} {value!r} is not a built-in material "
                             f"({', '.join(MATERIALS)}){_suggest(value, list(MATERIALS))}; "
                             "or give {E, rho, G or nu}")
        return value, MATERIALS[value]
    value = _mapping(path, value, _MATERIAL_KEYS)
    out = {key: _positive(f"{path}.{key}", _required(path, value, key)) for key in ("E", "rho")}
    if value.get("G") is not None and value.get("nu") is not None:
        raise ValueError(f"{path} gives G and nu; give one (G = E / (2 (1 + nu)))")
    for key in ("G", "nu"):
        if value.get(key) is not None:
            out[key] = _scalar(f"{path}.{key}", value[key])
    try:
        return out, Material(**out)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def _beam_section(path: str, value: Any) -> tuple[dict[str, Any], Section]:
    """A beam block's ``section``: ``{"shape": "rectangle", "size_y", "size_z"}`` (the sides
    along the section's y and z axes), ``{"shape": "tube", "outer_radius", "wall"}``,
    ``{"shape": "circle", "radius"}`` or ``{"A", "Iy", "Iz", "J"}`` (SI units)."""
    value = _mapping(path, value, _SECTION_KEYS)
    shape = value.get("shape")
    if shape not in _SECTION_SHAPES:
        raise ValueError(f"{path}.shape must be one of "
                         f"{', '.join(s for s in _SECTION_SHAPES if s)} (or absent: A, Iy, Iz, "
                         f"J given), got {_describe(shape)}"
                         f"{_suggest(shape, [s for s in _SECTION_SHAPES if s])}")
    keys = _SECTION_SHAPES[shape]
    stray = [k for k in value if k != "shape" and k not in keys]
    if stray:
        raise ValueError(f"{path}.{stray[0]} does not belong to a "
                         f"{'section given by its properties' if shape is None else shape} "
                         f"(its keys: {', '.join(keys)})")
    sizes = {k: _positive(f"{path}.{k}", _required(path, value, k)) for k in keys}
    make = {"rectangle": rectangle, "tube": tube, "circle": circle, None: Section}[shape]
    try:
        section = make(**sizes)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
    return ({} if shape is None else {"shape": shape}) | sizes, section


def _beam_modes_choice(path: str, value: Any) -> dict[str, Any]:
    """A beam block's ``modes``: a count per family (:data:`flexdyn.beam.MODE_FAMILIES`) or
    ``{"plane": "xy" or "xz", "count": n}`` (the ``n`` lowest modes of motion in that plane
    of the beam's axes)."""
    value = _mapping(path, value, _MODE_KEYS)
    if value.get("plane") is not None or value.get("count") is not None:
        families = [k for k in MODE_FAMILIES if value.get(k) is not None]
        if families:
            raise ValueError(f"{path} gives both a plane and counts per family "
                             f"({', '.join(families)}); use one")
        plane = _required(path, value, "plane")
        if plane not in PLANE_FAMILIES:
            raise ValueError(f"{path}.plane must be one of {', '.join(PLANE_FAMILIES)}, got "
                             f"{_describe(plane)}")
        count = _required(path, value, "count")
        if not _is_int(count) or count < 1:
            raise ValueError(f"{path}.count must be an integer >= 1, got {_describe(count)}")
        return {"plane": plane, "count": int(count)}
    out = {}
    for family in MODE_FAMILIES:
        count = value.get(family, 0)
        if not _is_int(count) or count < 0:
            raise ValueError(f"{path}.{family} must be an integer >= 0, got {_describe(count)}")
        out[family] = int(count)
    if not any(out.values()):
        raise ValueError(f"{path} selects no modes; give a count per family "
                         f"({', '.join(MODE_FAMILIES)}) or {{plane, count}}")
    return out


def _beam_frame(path: str, value: Mapping) -> tuple[dict[str, Any], np.ndarray, np.ndarray,
                                                    float]:
    """A beam block's geometry: ``start`` and ``end``, or ``start``, ``length`` and ``axis``
    (default x), and the section's ``y_axis`` (perpendicular to the beam; default the body y
    axis made perpendicular to it, or z for a beam along y).  Returns (the normalised keys,
    start, the rotation whose columns are the beam's x, y, z axes, the length)."""
    start = _optional_array(f"{path}.start", value.get("start"), (3,))
    out: dict[str, Any] = {"start": start.tolist()}
    if value.get("end") is not None:
        for key in ("length", "axis"):
            if value.get(key) is not None:
                raise ValueError(f"{path} gives end and {key}; give end, or length and axis")
        end = _array(f"{path}.end", value["end"], (3,))
        # difference of scaled points: end − start overflows for points near the float limit
        top = max(_scale(start), _scale(end))
        delta = end / top - start / top
        length = float(np.linalg.norm(delta)) * top
        if not np.isfinite(length) or length <= 0.0:
            raise ValueError(f"{path}: end equals start (or the length overflows); a beam "
                             "needs a positive length")
        x = delta / np.linalg.norm(delta)
        out["end"] = end.tolist()
    else:
        length = _positive(f"{path}.length", _required(path, value, "length"))
        x = (np.array([1.0, 0.0, 0.0]) if value.get("axis") is None
             else _direction(f"{path}.axis", value["axis"]))
        out["length"] = length
        if value.get("axis") is not None:
            out["axis"] = _array(f"{path}.axis", value["axis"], (3,)).tolist()
    if value.get("y_axis") is not None:
        y = _direction(f"{path}.y_axis", value["y_axis"])
        if abs(float(x @ y)) > TOL:
            raise ValueError(f"{path}.y_axis is not perpendicular to the beam (cosine "
                             f"{float(x @ y):.3g}); the section's y axis lies across it")
        out["y_axis"] = _array(f"{path}.y_axis", value["y_axis"], (3,)).tolist()
    else:
        guess = np.eye(3)[1] if abs(x[1]) < 0.9 else np.eye(3)[2]
        y = guess - (guess @ x) * x
        y /= np.linalg.norm(y)
    y = y - (y @ x) * x
    y /= np.linalg.norm(y)
    return out, start, np.column_stack([x, y, np.cross(x, y)]), length


def _beam(path: str, value: Any) -> tuple[dict[str, Any], BeamModes]:
    """Parse a body's ``beam`` block (``docs/flexible-bodies.md``): the normalised block
    (every default filled in; what :func:`to_plain_dict` writes back) and its modal data from
    :func:`flexdyn.beam.beam_modes`, placed in the body frame."""
    value = _mapping(path, value, _BEAM_KEYS)
    spec, start, rotation, length = _beam_frame(path, value)
    material_spec, material = _beam_material(f"{path}.material",
                                             _required(path, value, "material"))
    section_spec, section = _beam_section(f"{path}.section", _required(path, value, "section"))
    modes = _beam_modes_choice(f"{path}.modes", _required(path, value, "modes"))
    elements = value.get("elements", _BEAM_DEFAULTS["elements"])
    if not _is_int(elements) or elements < 1:
        raise ValueError(f"{path}.elements must be an integer >= 1, got {_describe(elements)}")
    options = {}
    for key, choices in (("basis", ("lumped", "natural", "finite")),
                         ("boundary", ("cantilever", "free-free")),
                         ("membrane", MEMBRANE_FORMS)):
        options[key] = value.get(key, _BEAM_DEFAULTS[key])
        if options[key] not in choices:
            raise ValueError(f"{path}.{key} must be one of {', '.join(choices)}, got "
                             f"{_describe(options[key])}{_suggest(options[key], choices)}")
    stiffening = value.get("stiffening", False)
    if not isinstance(stiffening, bool):
        raise ValueError(f"{path}.stiffening must be true or false, got {_describe(stiffening)}")
    n = sum(modes.values()) if "plane" not in modes else modes["count"]
    raw_zeta = value.get("damping_ratio", 0.0)
    zeta = (_scalar(f"{path}.damping_ratio", raw_zeta) if _is_real(raw_zeta) else
            _array(f"{path}.damping_ratio", raw_zeta, (n,), ("one per mode",)))
    if np.any(np.asarray(zeta) < 0.0):
        raise ValueError(f"{path}.damping_ratio must be >= 0, got {_describe(raw_zeta)}")
    counts = ({f: int(f in PLANE_FAMILIES[modes["plane"]]) for f in MODE_FAMILIES}
              if "plane" in modes else modes)
    props = section_properties(material, section, axial=True)
    # the section's rotary inertia always (the body's mass); a stiffness only where modes
    # are asked for (the other deformations are held: beam_modes' None)
    kwargs: dict[str, Any] = {
        "mass_per_length": props["mass_per_length"],
        "polar_inertia_per_length": material.rho * (section.Iy + section.Iz),
        "EI_z": props["EI_z"] if counts["transverse_y"] else None,
        "EI_y": props["EI_y"] if counts["transverse_z"] else None,
        "EA": props["EA"] if counts["axial"] or stiffening else None}
    if counts["torsion"]:
        if material.G is None:
            raise ValueError(f"{path}.modes asks for torsion modes; the material needs a shear "
                             "modulus G (or Poisson's ratio nu)")
        kwargs["GJ"] = props["GJ"]
    try:
        beam = beam_modes(length, **kwargs, n_elements=int(elements),
                          n_modes=modes["count"] if "plane" in modes else modes,
                          plane=modes.get("plane"), boundary=options["boundary"],
                          basis=options["basis"], membrane=options["membrane"],
                          damping_ratio=zeta)
    except ValueError as exc:
        message = str(exc).removeprefix("beam_modes: ")  # in the block's words
        for word, key in (("n_modes", "modes"), ("n_elements", "elements")):
            message = message.replace(word, key)
        raise ValueError(f"{path}: {message}") from None
    spec.update(material=material_spec, section=section_spec, modes=modes,
                elements=int(elements), **options,
                damping_ratio=zeta if isinstance(zeta, float) else zeta.tolist(),
                stiffening=stiffening)
    return spec, beam.placed(start, rotation)


def beam_summary(d: Mapping) -> list[str]:
    """One line per body with a ``beam`` block of the model ``d`` (raw, plain or normalised):
    its length, material and section, and the frequencies (Hz) of its modes with their
    families, after a heading; ``[]`` when no body has one.  The command line's ``info``
    prints it."""
    lines = []
    for body in d.get("bodies", ()):
        if not isinstance(body, Mapping) or body.get("beam") is None:
            continue
        spec, beam = _beam(f'body "{body.get("name")}": beam', body["beam"])
        length = spec.get("length") or float(np.linalg.norm(
            np.subtract(spec["end"], spec["start"])))
        material = (spec["material"] if isinstance(spec["material"], str)
                    else f"E = {spec['material']['E']:.4g} Pa")
        section = spec["section"].get("shape", "section")
        freqs = ", ".join(f"{w / (2 * np.pi):.6g} ({family})"
                          for w, family in zip(beam.frequencies, beam.families, strict=True))
        lines.append(f"  {body.get('name')}: beam of {length:.6g} m, {material}, {section}, "
                     f"{spec['elements']} elements ({spec['basis']}, {spec['boundary']}): "
                     f"{freqs} Hz")
    return ["beam blocks (flexdyn.beam.beam_modes; Hz, family):", *lines] if lines else []


def beam_nodes(block: Mapping, what: str = "beam") -> np.ndarray:
    """The nodes (n, 3) in the body frame of the beam ``block`` (a body's ``beam``);
    ``ValueError`` naming ``what`` if the block is invalid."""
    return _beam(what, block)[1].nodes


# ---------------------------------------------------------------------------------------------
# the model
# ---------------------------------------------------------------------------------------------


def _body_names(bodies: Sequence[Any], report: _Report) -> list[str | None]:
    """Check the body list's entries and names (non-empty, unique) and report each body's
    unknown keys; return the names (None for an entry without a valid one)."""
    index: dict[str, int] = {}
    names: list[str | None] = []
    for i, body in enumerate(bodies):
        names.append(report.check(_body_name, i, body, index))
        if isinstance(body, Mapping):
            label = f'bodies[{i}]' + ("" if names[-1] is None else f' "{names[-1]}"')
            _mapping(label + ":", body, _BODY_KEYS, report)
    return names


def _body_name(i: int, body: Any, index: dict[str, int]) -> str:
    """The name of ``bodies[i]``, added to ``index`` (name → first index)."""
    body = _mapping(f"bodies[{i}]", body)
    name = _required(f"bodies[{i}]", body, "name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"bodies[{i}]: name must be a non-empty string, got {_describe(name)}")
    bad = [c for c in name if c in _NAME_FORBIDDEN]
    if bad:
        raise ValueError(f"bodies[{i}]: name {name!r} contains {bad[0]!r}; names may not "
                         "contain '.' (the state-layout separator) or control characters")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"bodies[{i}]: name {name!r} is not valid Unicode (a lone "
                         "surrogate?)") from None
    if name in index:
        raise ValueError(
            f'bodies[{i}] "{name}": name is a duplicate of bodies[{index[name]}]; '
            "body names must be unique"
        )
    index[name] = i
    return name


def _parent(where: str, value: Any, i: int, names: dict[str, int]) -> int:
    """Resolve a body's ``parent`` to the index of an earlier body (-1 for ground)."""
    path = f"{where}: parent"
    if value is None:
        return -1
    if isinstance(value, str):
        index = names.get(value)
        if index is None:
            raise ValueError(
                f'{path} "{value}" does not exist; known bodies: '
                + ", ".join(f'"{n}"' for n in names)
            )
    elif _is_int(value):
        index = int(value)
        if not -1 <= index < len(names):
            raise ValueError(f"{path} index {index} is out of range (-1 … {len(names) - 1})")
        if index == -1:
            return -1
    else:
        raise ValueError(f"{path} must be a body name or null, got {_describe(value)}")
    if index == i:
        raise ValueError(f"{path} refers to the body itself")
    if index > i:
        raise ValueError(
            f'{path} "{value}" comes later in the list (bodies[{index}]); '
            "parents must be listed before their children"
        )
    return index


def _header(d: Any, report: _Report) -> tuple[str, np.ndarray, str, Sequence[Any]]:
    """Check the top level of a model description: its name, gravity, tip kinematics and
    list of bodies, each on its own (problems go to ``report``); raises when there is no
    list of bodies to check."""
    d = _mapping("model", d, _TOP_KEYS, report)
    report.check(_format_version, d)
    name = report.check(_model_name, d.get("name"))
    gravity = report.check(_optional_array, "model: gravity", d.get("gravity"), (3,))
    tip = d.get("tip_kinematics")
    tip = DEFAULT_TIP_KINEMATICS if tip is None else report.check(
        check_tip_kinematics, "model: tip_kinematics", tip)
    bodies = report.check(_body_list, d)
    if bodies is None:
        report.raise_any()
    return name, gravity, tip, bodies


def _format_version(d: Mapping) -> None:
    """Check the optional ``format`` and ``version``."""
    fmt = d.get("format")
    if fmt is not None and fmt != FORMAT_NAME:
        raise ValueError(f"model: format must be {FORMAT_NAME!r}, got {_describe(fmt)}")
    version = d.get("version")
    if version is not None and not (_is_int(version) and version == FORMAT_VERSION):
        raise ValueError(f"model: version must be {FORMAT_VERSION}, got {_describe(version)}")


def _model_name(name: Any) -> str:
    """The model's name (default ``""``)."""
    if name is None:
        return ""
    if not isinstance(name, str):
        raise ValueError(f"model: name must be a string, got {_describe(name)}")
    return name


def _body_list(d: Mapping) -> Sequence[Any]:
    """The non-empty list of bodies."""
    bodies = _required("model", d, "bodies")
    if isinstance(bodies, (str, bytes, Mapping)) or not isinstance(bodies, Sequence):
        raise ValueError(f"model: bodies must be a list of bodies, got {_describe(bodies)}")
    if not bodies:
        raise ValueError("model: bodies is empty; a model needs at least one body")
    return bodies


# ---------------------------------------------------------------------------------------------
# JSON Schema
# ---------------------------------------------------------------------------------------------
#: where the published schema lives (package data) and its identifier
SCHEMA_FILE = "model.schema.json"
SCHEMA_ID = "https://flexdyn.org/schemas/model-1.schema.json"


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the model-file format, from the same key lists and
    registries as the validator: every file the validator accepts passes it; it checks
    structure (keys, types, shapes of small vectors, names of joint, closure and tip-kinematics
    kinds) — sizes that depend on each other, symmetry and definiteness are the validator's.
    ``format`` and ``version`` are optional.  Shipped as ``flexdyn/model.schema.json``."""
    number = {"type": "number"}
    vec = lambda n: {"type": "array", "items": number, "minItems": n, "maxItems": n}  # noqa: E731
    matrix = {"type": "array", "items": {"type": "array", "items": number}}
    mat33 = {"type": "array", "items": vec(3), "minItems": 3, "maxItems": 3}
    node = {"type": ["integer", "null"]}
    body_ref = {"type": ["string", "integer", "null"]}

    def block(properties: dict, keys: Sequence[str], required: Sequence[str] = ()) -> dict:
        assert set(properties) == set(keys), set(keys) ^ set(properties)
        return {"type": "object", "properties": properties, "required": list(required),
                "additionalProperties": False}

    placement = block({"rotation": mat33, "axis_angle": vec(4), "quaternion": vec(4),
                       "euler": {"type": "object", "properties": {
                           "sequence": {"type": "string"}, "angles": vec(3)},
                           "required": ["sequence", "angles"], "additionalProperties": False},
                       "translation": vec(3)}, _PLACEMENT_KEYS)
    joint = block({"type": {"enum": list(JOINT_TYPES)}, "axis": vec(3),
                   "axes": {"type": "array", "items": vec(3), "minItems": 2, "maxItems": 2},
                   "pitch": number, "map": matrix,
                   "factors": {"type": "array", "items": matrix},
                   "sequence": {"enum": list(EULER_SEQUENCES)}, "parent_node": node,
                   "child_node": node, "placement": {"$ref": "#/$defs/placement"},
                   "child_placement": {"$ref": "#/$defs/placement"},
                   "forces": {"oneOf": [{"$ref": "#/$defs/forces"}, {"type": "null"}]}},
                  _JOINT_KEYS, ["type"])
    per_speed = {"oneOf": [number, {"type": "array", "items": number, "minItems": 1}]}
    forces = block(dict.fromkeys(FORCE_KEYS, per_speed), FORCE_KEYS)
    rigid = block({"mass": {"type": "number", "minimum": 0}, "com": vec(3), "inertia": mat33},
                  _RIGID_KEYS)
    flex = block({"nodes": {"type": "array", "items": vec(3)},
                  "node_masses": {"type": "array", "items": {"type": "number", "minimum": 0}},
                  "node_inertias": {"type": ["array", "null"], "items": mat33},
                  "modes": matrix, "stiffness": matrix, "damping": {"type": ["array", "null"]},
                  "geometric_stiffness_1": {"type": ["array", "null"]},
                  "geometric_stiffness_2": {"type": ["array", "null"]},
                  "axial_modes": {"type": ["array", "null"], "items": {"type": "integer"}},
                  **dict.fromkeys(_INVARIANT_KEYS, {"type": ["array", "null"]}),
                  "nodal": {"type": "boolean"}, "attach_node": {"type": "integer"},
                  "nodal_stiffness": matrix, "nodal_damping": {"type": ["array", "null"]}},
                 _FLEX_KEYS)
    flex["anyOf"] = [{"maxProperties": 0}, {"required": ["nodes", "node_masses"]}]
    body = block({"name": {"type": "string", "minLength": 1, "pattern": r"^[^.\x00-\x1f]*$"},
                  "parent": body_ref, "joint": {"$ref": "#/$defs/joint"},
                  "rigid": {"oneOf": [{"$ref": "#/$defs/rigid"}, {"type": "null"}]},
                  "flex": {"oneOf": [{"$ref": "#/$defs/flex"}, {"type": "null"}]},
                  "beam": {"oneOf": [{"$ref": "#/$defs/beam"}, {"type": "null"}]}},
                 _BODY_KEYS, ["name", "joint"])
    positive = {"type": "number", "exclusiveMinimum": 0}
    count = {"type": "integer", "minimum": 0}
    material = block({"E": positive, "G": positive, "nu": number, "rho": positive},
                     _MATERIAL_KEYS, ["E", "rho"])
    section = {"oneOf": [block({"shape": {"const": shape}, **dict.fromkeys(keys, positive)},
                               ("shape", *keys), ["shape", *keys]) if shape else
                         block(dict.fromkeys(keys, positive), keys, keys)
                         for shape, keys in _SECTION_SHAPES.items()]}
    modes = {"oneOf": [block(dict.fromkeys(MODE_FAMILIES, count), MODE_FAMILIES),
                       block({"plane": {"enum": list(PLANE_FAMILIES)},
                              "count": {"type": "integer", "minimum": 1}},
                             ("plane", "count"), ["plane", "count"])]}
    beam = block({"start": vec(3), "end": vec(3), "length": positive, "axis": vec(3),
                  "y_axis": vec(3),
                  "material": {"oneOf": [{"enum": list(MATERIALS)}, material]},
                  "section": section, "modes": modes,
                  "elements": {"type": "integer", "minimum": 1},
                  "basis": {"enum": ["lumped", "natural", "finite"]},
                  "boundary": {"enum": ["cantilever", "free-free"]},
                  "membrane": {"enum": list(MEMBRANE_FORMS)},
                  "damping_ratio": {"oneOf": [{"type": "number", "minimum": 0},
                                              {"type": "array", "items": {
                                                  "type": "number", "minimum": 0}}]},
                  "stiffening": {"type": "boolean"}},
                 _BEAM_KEYS, ["material", "section", "modes"])
    beam["oneOf"] = [{"required": ["end"], "not": {"anyOf": [{"required": ["length"]},
                                                             {"required": ["axis"]}]}},
                     {"required": ["length"], "not": {"required": ["end"]}}]
    forms = {"unit": vec(3), "rotation": mat33}
    kind_keys = {k: forms[form] for kind in CONSTRAINT_KINDS.values()
                 for k, (form, _) in kind.keys.items()}
    constraint = block({"name": {"type": "string"}, "type": {"enum": list(CONSTRAINT_KINDS)},
                        "body": body_ref, "node": node,
                        "point": {"oneOf": [vec(3), {"type": "null"}]}, "other_body": body_ref,
                        "other_node": node, "other_point": {"oneOf": [vec(3), {"type": "null"}]},
                        **kind_keys}, _CONSTRAINT_KEYS, ["name", "type", "body"])
    top = block({"$schema": {"type": "string"}, "format": {"const": FORMAT_NAME},
                 "version": {"const": FORMAT_VERSION},
                 "name": {"type": "string"}, "gravity": vec(3),
                 "tip_kinematics": {"enum": list(TIP_KINEMATICS)},
                 "bodies": {"type": "array", "items": {"$ref": "#/$defs/body"}, "minItems": 1},
                 "constraints": {"type": "array", "items": {"$ref": "#/$defs/constraint"}}},
                _TOP_KEYS, ["bodies"])
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "flexdyn model file",
            "description": "A tree of rigid and flexible bodies (docs/model-format.md).",
            **top, "$defs": {"placement": placement, "joint": joint, "forces": forces,
                             "rigid": rigid, "flex": flex, "beam": beam, "body": body,
                             "constraint": constraint}}


#: the node count of a block that failed validation (any node index passes)
_UNKNOWN_COUNT = 1 << 40


class ModelFileError(ValueError):
    """Every problem found in a model description, one message each (naming the body and
    key) in :attr:`~flexdyn.model_file.ModelFileError.errors`; the exception's message lists
    them all."""

    def __init__(self, errors: Sequence[str]):
        self.errors = list(errors)
        text = (self.errors[0] if len(self.errors) == 1 else
                f"{len(self.errors)} problems in the model:\n" + "\n".join(
                    f"  - {e}" for e in self.errors))
        super().__init__(text)


def normalize_model_dict(d: Mapping) -> dict:
    """Validate a raw model description and return its normalised form.

    Parameters
    ----------
    d : Mapping
        The model as read from a file (:func:`read_model_dict`) or built in Python; arrays may
        be nested lists or numpy arrays.  Normalised dicts are accepted too (the operation is
        idempotent); there ``parent`` may be a body index (-1 for ground) instead of a name.

    Returns
    -------
    dict
        ``{"name", "gravity", "tip_kinematics", "bodies"}`` with every default filled in and
        every array a read-only ``float64`` numpy array (see the module docstring for the full
        structure).

    Raises
    ------
    ModelFileError
        A ``ValueError`` naming the body (index and name) and key of every problem found:
        each body's parent, rigid, flex and joint blocks are checked even when another has failed (a
        body whose parent failed is checked once the parent is right).
    """
    report = _Report()
    name, gravity, tip, raw_bodies = _header(d, report)
    names = _body_names(raw_bodies, report)
    name_index = {n: i for i, n in enumerate(names) if n is not None}
    labels = [f"bodies[{i}]" + ("" if n is None else f' "{n}"') for i, n in enumerate(names)]
    children = [0] * len(names)
    bodies: list[dict[str, Any] | None] = []
    checked = report.check

    def joint_of(i: int, raw: Mapping, parent: int, parent_nodes: int, own_nodes: int,
                 parent_label: str) -> dict[str, Any] | None:
        return _joint(labels[i], _required(labels[i] + ":", raw, "joint"), parent,
                      parent_nodes, own_nodes, parent_label, report)

    for i, raw in enumerate(raw_bodies):
        if not isinstance(raw, Mapping):
            bodies.append(None)  # reported with its name
            continue
        parent = checked(_parent, labels[i], raw.get("parent"), i, name_index)
        beam, flex = None, None
        if raw.get("beam") is not None:
            generated = checked(_beam, f"{labels[i]}: beam", raw["beam"])
            if generated is not None:
                beam = generated[0]
                flex = checked(_beam_flex, labels[i], generated[1], raw.get("flex"))
        else:
            flex = checked(_flex, labels[i], raw.get("flex"), report)
        rigid = checked(_rigid, labels[i], raw.get("rigid"), report)
        parent_body = bodies[parent] if parent is not None and parent >= 0 else None
        if parent is not None and parent >= 0:
            children[parent] += 1
        # a parent or flex block that failed leaves its node count unknown: any node index
        # passes here, and is checked once that block is right
        if parent is None:  # unknown: checked as a body with any number of nodes
            parent_nodes, parent_label = _UNKNOWN_COUNT, "its parent"
        elif parent < 0:
            parent_nodes, parent_label = 0, "the ground"
        else:
            parent_nodes = (_UNKNOWN_COUNT if parent_body is None
                            else parent_body["flex"]["nodes"].shape[0])
            parent_label = labels[parent]
        own_nodes = _UNKNOWN_COUNT if flex is None else flex["nodes"].shape[0]
        joint = checked(joint_of, i, raw, 0 if parent is None else parent, parent_nodes,
                        own_nodes, parent_label)
        if joint is not None and flex is not None and flex.get("nodal") and joint[
                "child_node"] not in (
                None, flex["attach_node"]):
            report.errors.append(
                f"{labels[i]}: joint.child_node = {joint['child_node']} must be null or the "
                f"nodal body's flex.attach_node = {flex['attach_node']} (the node rigidly fixed "
                "to the joint)")
            joint = None
        ok = all(x is not None for x in (names[i], parent, flex, rigid, joint))
        bodies.append({"name": names[i], "parent": parent, "joint": joint, "rigid": rigid,
                       "flex": flex, "beam": beam} if ok else None)
    for i, body in enumerate(bodies):
        if body is None:
            continue
        invariants = body["flex"].get("inertia_invariants_0")
        total = (body["rigid"]["mass"] + float(np.sum(body["flex"]["node_masses"]))
                 + (0.0 if invariants is None else float(invariants[-1, -1])))
        inertia = float(np.sum(np.abs(body["rigid"]["inertia"]))
                        + np.sum(np.abs(body["flex"]["node_inertias"]))
                        + (0.0 if invariants is None else np.sum(np.abs(invariants))))
        if total == 0.0 and inertia == 0.0 and children[i] == 0:
            report.errors.append(
                f"{labels[i]}: has no mass, no rotary inertia and no children; a body without "
                "inertia must carry other bodies (rigid.mass + sum of flex.node_masses is 0)"
            )
    constraints = _constraints(d.get("constraints"), names, name_index, bodies, report)
    report.raise_any()
    return {"name": name, "gravity": gravity, "tip_kinematics": tip, "bodies": bodies,
            "constraints": constraints}


def _beam_flex(label: str, beam: BeamModes, given: Any) -> dict[str, Any]:
    """The flex block of a body's beam: its generated modal data; a ``flex`` block given
    beside the beam must be that data (a normalised model read again), else it is an
    error."""
    data = {"nodes": beam.nodes, "node_masses": beam.node_masses,
            "node_inertias": beam.node_inertias, "modes": beam.modes,
            "stiffness": beam.stiffness, "damping": beam.damping}
    if beam.geometric_stiffness_1 is not None:
        data.update(geometric_stiffness_1=beam.geometric_stiffness_1,
                    geometric_stiffness_2=beam.geometric_stiffness_2,
                    axial_modes=beam.axial_modes)
    flex = _flex(label, data)
    if given is not None and not (isinstance(given, Mapping) and set(given) == set(flex) and all(
            _is_exactly(given[k], flex[k]) for k in flex)):
        raise ValueError(f"{label}: gives beam and flex; give one (the beam block generates "
                         "the flex data)")
    return flex


# ---------------------------------------------------------------------------------------------
# loop closures
# ---------------------------------------------------------------------------------------------


def _closure_body(path: str, value: Any, names: dict[str, int], ground: bool) -> int:
    """Resolve an endpoint's body (a name, or an index in normalised dicts); -1 for the
    ground where ``ground`` allows null."""
    if value is None and ground:
        return -1
    if isinstance(value, str) and value in names:
        return names[value]
    if _is_int(value) and (-1 if ground else 0) <= int(value) < len(names):
        return int(value)
    raise ValueError(f"{path} must be the name of a body{' or null (the ground)' if ground else ''}"
                     f", got {_describe(value)}; known bodies: "
                     + ", ".join(f'"{n}"' for n in names))


def _endpoint(path: str, entry: Mapping, prefix: str, body: int, bodies: Sequence[Mapping],
              labels: Sequence[str]) -> tuple[int | None, np.ndarray | None]:
    """``(node, point)`` of one endpoint: exactly one of ``node`` (an index into the body's
    nodes; not on the ground) and ``point`` (3,)."""
    node_key, point_key = f"{prefix}node", f"{prefix}point"
    node, point = entry.get(node_key), entry.get(point_key)
    if (node is None) == (point is None):
        raise ValueError(f"{path} needs exactly one of {node_key!r} (a node index) and "
                         f"{point_key!r} (a point [x, y, z])")
    if node is not None:
        if body < 0:
            raise ValueError(f"{path}.{node_key}: the ground has no nodes; give {point_key!r} "
                             "in inertial coordinates")
        n_nodes = (_UNKNOWN_COUNT if bodies[body] is None  # checked once the body is right
                   else bodies[body]["flex"]["nodes"].shape[0])
        return _index(f"{path}.{node_key}", node, n_nodes, labels[body]), None
    return None, _array(f"{path}.{point_key}", point, (3,))


def _constraints(raw: Any, names: Sequence[str | None], name_index: dict[str, int],
                 bodies: Sequence[Mapping | None], report: _Report) -> list[dict[str, Any]]:
    """Parse the top-level ``constraints`` list (loop closures, ``docs/model-format.md``),
    each entry on its own (problems go to ``report``); a body that failed leaves its node
    count unknown."""
    if raw is None:
        return []
    if isinstance(raw, (str, bytes, Mapping)) or not isinstance(raw, Sequence):
        report.errors.append(f"model: constraints must be a list of closures, got "
                             f"{_describe(raw)}")
        return []
    labels = [f'body "{n}"' for n in names]
    seen: dict[str, int] = {}
    out = [report.check(_closure_entry, k, entry, names, name_index, bodies, labels, seen)
           for k, entry in enumerate(raw)]
    return [c for c in out if c is not None]


def _closure_entry(k: int, entry: Any, names: Sequence[str | None], name_index: dict[str, int],
                   bodies: Sequence[Mapping | None], labels: Sequence[str],
                   seen: dict[str, int]) -> dict[str, Any]:
    """The normalised ``constraints[k]`` (``seen``: the names of the entries before it)."""
    path = f"constraints[{k}]"
    entry = _mapping(path, entry)
    cname = _required(path, entry, "name")
    if not isinstance(cname, str) or not cname:
        raise ValueError(f"{path}: name must be a non-empty string, got {_describe(cname)}")
    if cname in seen:
        raise ValueError(f'{path} "{cname}": name is a duplicate of constraints[{seen[cname]}]')
    seen[cname] = k
    path = f'{path} "{cname}"'
    _mapping(path, entry, _CONSTRAINT_KEYS)
    ctype = _required(path, entry, "type")
    kind = CONSTRAINT_KINDS.get(ctype) if isinstance(ctype, str) else None
    if kind is None:
        raise ValueError(f"{path}: type must be one of {', '.join(CONSTRAINT_KINDS)}, got "
                         f"{_describe(ctype)}{_suggest(ctype, list(CONSTRAINT_KINDS))}")
    body = _closure_body(f"{path}: body", _required(path, entry, "body"), name_index, False)
    other = _closure_body(f"{path}: other_body", entry.get("other_body"), name_index, True)
    if other == body:
        raise ValueError(f"{path}: body and other_body are the same body "
                         f'"{names[body]}"; a closure joins two bodies (or one and the ground)')
    node, point = _endpoint(path, entry, "", body, bodies, labels)
    other_node, other_point = _endpoint(path, entry, "other_", other, bodies, labels)
    params: dict[str, Any] = {}
    for key in _CONSTRAINT_KEYS[len(_ENDPOINT_KEYS):]:
        value = entry.get(key)
        if key not in kind.keys:
            if value is not None:
                owners = [t for t, kd in CONSTRAINT_KINDS.items() if key in kd.keys]
                raise ValueError(f"{path}.{key} is not allowed for a {ctype} closure (only "
                                 f"for {', '.join(owners)})")
            continue
        form, required = kind.keys[key]
        if value is None:
            if required:
                raise ValueError(f"{path}.{key} is required for a {ctype} closure")
            continue
        if form == "unit":
            params[key] = _array(f"{path}.{key}", value, (3,))
            _unit(f"{path}.{key}", params[key])
        else:
            params[key] = _rotation(f"{path}.{key}", value)
    for key, default in kind.defaults.items():
        params.setdefault(key, default(params))
    return {"name": cname, "type": ctype, "body": body, "node": node, "point": point,
            "other_body": other, "other_node": other_node, "other_point": other_point,
            **params}


# ---------------------------------------------------------------------------------------------
# back to the file format
# ---------------------------------------------------------------------------------------------


def _is_exactly(value: Any, reference: Any) -> bool:
    """Return whether ``value`` equals ``reference`` bit for bit (so ``-0.0 != 0.0``)."""
    a = np.asarray(value, dtype=np.float64)
    b = np.asarray(reference, dtype=np.float64)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _plain_placement(placement: Mapping) -> dict[str, Any]:
    """Return a placement as lists."""
    return {
        "translation": placement["translation"].tolist(),
        "rotation": placement["rotation"].tolist(),
    }


def _plain_joint(joint: Mapping) -> dict[str, Any]:
    """Return a normalised joint in the file format, leaving out defaults."""
    out: dict[str, Any] = {"type": joint["type"]}
    for key in ("axis", "axes"):
        if joint[key] is not None:
            out[key] = joint[key].tolist()
    if joint["type"] in _PITCH_TYPES:
        out["pitch"] = float(joint["pitch"])
    if joint.get("map") is not None:
        out["map"] = joint["map"].tolist()
    if joint.get("factors") is not None:
        out["factors"] = [F.tolist() for F in joint["factors"]]
    if joint.get("sequence") is not None:
        out["sequence"] = joint["sequence"]
    out["parent_node"] = joint["parent_node"]
    out["child_node"] = joint["child_node"]
    if joint.get("forces") is not None:
        out["forces"] = {k: v.tolist() for k, v in joint["forces"].items()}
    for key in ("placement", "child_placement"):
        p = joint[key]
        identity = _is_exactly(p["rotation"], np.eye(3))
        if not (identity and _is_exactly(p["translation"], np.zeros(3))):
            out[key] = _plain_placement(p)
    return out


def _plain_flex(flex: Mapping) -> dict[str, Any] | None:
    """Return a normalised flex block in the file format, or ``None`` when it is empty."""
    n = flex["nodes"].shape[0]
    m = 0 if flex.get("nodal") else flex["stiffness"].shape[0]
    if n == 0 and m == 0:
        return None
    inertias = flex["node_inertias"]
    out: dict[str, Any] = {
        "nodes": flex["nodes"].tolist(),
        "node_masses": flex["node_masses"].tolist(),
        "node_inertias": None if _is_exactly(inertias, np.zeros((n, 3, 3))) else inertias.tolist(),
    }
    if flex.get("nodal"):
        out.update(nodal=True, attach_node=flex["attach_node"],
                   nodal_stiffness=flex["nodal_stiffness"].tolist())
        if not _is_exactly(flex["nodal_damping"], np.zeros((6 * n, 6 * n))):
            out["nodal_damping"] = flex["nodal_damping"].tolist()
    if m:
        out["modes"] = flex["modes"].tolist()
        out["stiffness"] = flex["stiffness"].tolist()
        if not _is_exactly(flex["damping"], np.zeros((m, m))):
            out["damping"] = flex["damping"].tolist()
        if "geometric_stiffness_1" in flex:
            out["geometric_stiffness_1"] = flex["geometric_stiffness_1"].tolist()
            out["geometric_stiffness_2"] = flex["geometric_stiffness_2"].tolist()
            out["axial_modes"] = flex["axial_modes"].tolist()
    for key in _INVARIANT_KEYS:
        if key in flex:
            out[key] = flex[key].tolist()
    return out


def to_plain_dict(nd: dict) -> dict:
    """Convert a normalised model back to a JSON-ready dict in the file format.

    Defaults (identity placements, zero node inertias and damping, empty flex blocks) are left
    out, but only when they hold bit for bit, so that
    ``normalize_model_dict(to_plain_dict(nd))`` equals ``nd`` exactly.

    Parameters
    ----------
    nd : dict
        A model returned by :func:`normalize_model_dict`.

    Returns
    -------
    dict
        Nested dicts, lists, floats, ints, strings and ``None`` only.
    """
    names = [body["name"] for body in nd["bodies"]]
    bodies = []
    for body in nd["bodies"]:
        rigid = body["rigid"]
        out: dict[str, Any] = {
            "name": body["name"],
            "parent": None if body["parent"] < 0 else names[body["parent"]],
            "joint": _plain_joint(body["joint"]),
        }
        if not (
            _is_exactly(rigid["mass"], 0.0)
            and _is_exactly(rigid["com"], np.zeros(3))
            and _is_exactly(rigid["inertia"], np.zeros((3, 3)))
        ):
            out["rigid"] = {
                "mass": float(rigid["mass"]),
                "com": rigid["com"].tolist(),
                "inertia": rigid["inertia"].tolist(),
            }
        if body.get("beam") is not None:
            out["beam"] = copy.deepcopy(body["beam"])  # the block, not its generated data
        else:
            flex = _plain_flex(body["flex"])
            if flex is not None:
                out["flex"] = flex
        bodies.append(out)
    tip = nd["tip_kinematics"]
    out = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "name": nd["name"],
        "gravity": nd["gravity"].tolist(),
        **({} if tip == DEFAULT_TIP_KINEMATICS else {"tip_kinematics": tip}),
        "bodies": bodies,
    }
    if nd["constraints"]:
        out["constraints"] = [_plain_constraint(c, names) for c in nd["constraints"]]
    return out


def _plain_constraint(c: Mapping, names: Sequence[str]) -> dict[str, Any]:
    """A normalised closure in the file format (every key written, nulls left out)."""
    out: dict[str, Any] = {}
    for key, value in c.items():
        if key in ("body", "other_body"):
            value = None if value < 0 else names[value]
        elif isinstance(value, np.ndarray):
            value = value.tolist()
        if value is not None:
            out[key] = value
    return out


# ---------------------------------------------------------------------------------------------
# files
# ---------------------------------------------------------------------------------------------


def _jsonable(obj: Any, path: str = "model") -> Any:
    """Convert numpy arrays/scalars, tuples and mappings to plain JSON types."""
    if isinstance(obj, Mapping):
        for key in obj:
            if not isinstance(key, str):
                raise ValueError(f"{path}: key {key!r} is not a string")
        return {key: _jsonable(val, f"{path}.{key}") for key, val in obj.items()}
    if isinstance(obj, np.ndarray):
        return _jsonable(obj.tolist(), path)
    if isinstance(obj, (list, tuple)):
        return [_jsonable(val, f"{path}[{i}]") for i, val in enumerate(obj)]
    if isinstance(obj, np.generic):
        return obj.item()
    if obj is None or isinstance(obj, (str, int, float)):
        return obj
    raise ValueError(f"{path}: cannot write a value of type {type(obj).__name__}")


def _dumps(obj: Any, indent: int = 0) -> str:
    """Format plain JSON data, one matrix row or vector per line."""
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(obj, dict) and obj:
        items = [f"{inner}{_dumps(k)}: {_dumps(v, indent + 2)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(v, (list, dict)) for v in obj):
        items = [inner + _dumps(v, indent + 2) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    if isinstance(obj, list):
        return "[" + ", ".join(_dumps(v) for v in obj) + "]"
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


def write_model_dict(d: Mapping, path: str | os.PathLike, *, overwrite: bool = True
                     ) -> None:
    """Write a model description as pretty-printed JSON.

    Floats are written in their shortest round-trip form, so reading the file back gives
    bit-identical numbers.

    Parameters
    ----------
    d : Mapping
        A raw model (e.g. from :func:`to_plain_dict`); numpy arrays and scalars are converted.
        A normalised model can be written too, but :func:`to_plain_dict` gives a cleaner file.
    path : str or os.PathLike
        Destination; YAML suffixes (``.yaml``/``.yml``) are rejected.
    overwrite : bool
        Replace an existing file (the default); False: ``FileExistsError`` instead.

    Raises
    ------
    ValueError
        For a YAML destination, non-string keys, unsupported values or non-finite numbers.
    """
    path = Path(path)
    if path.suffix.lower() in (".yaml", ".yml"):
        raise ValueError(f"{path}: model files are written as JSON only; use a .json path")
    try:
        data = (_dumps(_jsonable(d)) + "\n").encode("utf-8")
    except (ValueError, UnicodeEncodeError) as exc:
        raise ValueError(f"{path}: cannot write model: {exc}") from None
    write_atomically(path, lambda fh: fh.write(data), binary=True, overwrite=overwrite)


def _nesting(value: Any) -> int:
    """Depth of nested lists and dicts in ``value`` (0 for a leaf), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            v = list(v.values())
        if isinstance(v, list):
            deepest = max(deepest, d + 1)
            if d + 1 > MAX_NESTING:
                return d + 1
            stack.extend((item, d + 1) for item in v)
    return deepest


def _bracket_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in ``text``, brackets inside strings included (so an
    upper bound of a JSON document's nesting), in a few vectorized passes."""
    codes = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    depth = deepest = 0
    for start in range(0, codes.size, 1 << 22):  # in slices: a few MB of temporaries
        c = codes[start:start + (1 << 22)]
        steps = ((c == ord("[")).view(np.int8) + (c == ord("{")).view(np.int8)
                 - (c == ord("]")).view(np.int8) - (c == ord("}")).view(np.int8))
        run = np.cumsum(steps, dtype=np.int64) + depth
        deepest, depth = max(deepest, int(run.max())), int(run[-1])
    return deepest


def _load_yaml(yaml: Any, text: str, path: Path) -> Any:
    """Parse YAML safely: duplicate keys are rejected, aliases may not expand the document
    beyond :data:`MAX_YAML_NODES` nodes or :data:`MAX_NESTING` levels, nor add more than
    :data:`MAX_YAML_ALIAS_NODES` nodes to those it writes out (checked on the composed node
    graph, each shared node once, before anything is built)."""

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml's parser if built
        def construct_mapping(self, node, deep=False):
            keys = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # '<<: *base': merged by SafeLoader, the keys given here win
                if not isinstance(key_node, yaml.ScalarNode):
                    kind = "list" if isinstance(key_node, yaml.SequenceNode) else "mapping"
                    raise ValueError(f"{path}: a mapping key must be a plain value (a name), "
                                     f"got a {kind} (line {key_node.start_mark.line + 1})")
                key = self.construct_object(key_node, deep=True)
                if key in keys:
                    raise ValueError(f"{path}: duplicate key {key!r} (line "
                                     f"{key_node.start_mark.line + 1})")
                keys.add(key)
            return super().construct_mapping(node, deep)

    loader = Loader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise ValueError(f"{path}: nesting deeper than {MAX_NESTING} levels") from None
        if node is None:
            return None
        size: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, depth)
        order, stack = [], [node]
        while stack:  # post-order over the node graph, each shared (aliased) node once
            n = stack.pop()
            if id(n) in size:
                continue
            size[id(n)] = (0, 0)
            order.append(n)
            children = _yaml_children(yaml, n)
            stack.extend(c for c in children if id(c) not in size)
        for n in reversed(order):
            kids = [size[id(c)] for c in _yaml_children(yaml, n)]
            total = 1 + sum(k[0] for k in kids)
            depth = 1 + max((k[1] for k in kids), default=0)
            if total > MAX_YAML_NODES or depth > MAX_NESTING + 1:
                raise ValueError(f"{path}: the YAML document expands to more than "
                                 f"{MAX_YAML_NODES} nodes or {MAX_NESTING} levels "
                                 "(aliases?)")
            size[id(n)] = (total, depth)
        added = size[id(node)][0] - len(order)
        if added > MAX_YAML_ALIAS_NODES:
            raise ValueError(f"{path}: the YAML document's aliases add {added} nodes to its "
                             f"{len(order)} (at most {MAX_YAML_ALIAS_NODES}): an alias bomb?")
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: invalid YAML: {exc}") from None
    finally:
        loader.dispose()


def _yaml_children(yaml: Any, node: Any) -> list:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """Build a JSON object, rejecting duplicate keys."""
    out: dict[str, Any] = {}
    for key, val in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r} in a JSON object")
        out[key] = val
    return out


def _import_yaml() -> Any:
    """Return the ``yaml`` module, or ``None`` when PyYAML is not installed."""
    try:
        import yaml
    except ImportError:
        return None
    return yaml


def _check_value_count(path: Path, separators: int, limit: int, what: str) -> None:
    """Refuse a file whose text separates more values than ``limit``, before parsing it."""
    if separators >= limit:
        raise ValueError(f"{path}: the file holds {separators} {what}, more values than the "
                         f"{limit} a {path.suffix.lstrip('.').upper()} model file may hold "
                         "(flexdyn.model_file.MAX_JSON_VALUES, MAX_YAML_VALUES); build "
                         "models this large in Python")


def read_model_dict(path: str | os.PathLike) -> dict:
    """Read a raw model description from a JSON or YAML file.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.json`` file, or a ``.yaml``/``.yml`` file when PyYAML is installed.

    Returns
    -------
    dict
        The raw (not yet validated) description; pass it to :func:`normalize_model_dict`.

    Raises
    ------
    ValueError
        For an unsupported suffix, YAML without PyYAML, a syntax error, duplicate JSON keys or a
        top level that is not an object.
    OSError
        If the file cannot be read.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        text = read_text(path)
        _check_value_count(path, text.count(","), MAX_JSON_VALUES, "commas")
        try:
            data = json.loads(text, object_pairs_hook=_unique_keys)
        except RecursionError:
            raise ValueError(f"{path}: nesting deeper than {MAX_NESTING} levels") from None
        except ValueError as exc:
            raise ValueError(f"{path}: invalid JSON: {exc}") from None
    elif suffix in (".yaml", ".yml"):
        yaml = _import_yaml()
        if yaml is None:
            raise ValueError(
                f"{path}: reading YAML model files needs PyYAML (pip install pyyaml); "
                "or convert the file to JSON"
            )
        text = read_text(path)
        _check_value_count(path, text.count(",") + text.count("\n"), MAX_YAML_VALUES,
                           "commas and line breaks")
        data = _load_yaml(yaml, text, path)
    else:
        raise ValueError(
            f"{path}: unsupported model file type {suffix!r}; use .json, .yaml or .yml"
        )
    # YAML's depth is checked on the composed graph; JSON's on its brackets (vectorized),
    # and only where strings may have added some, object by object
    if suffix == ".json" and _bracket_depth(text) > MAX_NESTING:
        depth = _nesting(data)
        if depth > MAX_NESTING:
            raise ValueError(f"{path}: nesting deeper than {MAX_NESTING} levels ({depth})")
    if not isinstance(data, dict):
        raise ValueError(f"{path}: the top level must be an object, got {type(data).__name__}")
    return data
