"""Compiled kernels of the engine (numba, ``cache=True``): joint kernels by code, body kernels
by kind (rigid, full, ruthless) filling the per-state blocks, and generic sweeps that do not
know which body kernel filled them.

The packed model arrives as two flat buffers ``(ib, fb)`` (:mod:`flexdyn.engine.pack`) and
:func:`unpack` takes named views of them; each call allocates one workspace
(:func:`workspace`) whose fields carry the names of the reference's per-state terms, so the
sweeps allocate nothing per body.  Every array is padded: a modal-size block of body ``i``
occupies ``[:m_i + 6]`` with the modal entries first.

Only the entries (decorated ``_E``: :func:`terms`, :func:`forward_articulated`,
:func:`forward_composite`, :func:`inverse`, :func:`mass`, :func:`batch`, :func:`hybrid`,
:func:`derivative_articulated`, :func:`derivative_composite`, the rigid tree's
:func:`forward_rigid_tree`, :func:`batch_rigid_tree` and :func:`derivative_rigid_tree`, and
:func:`workspace`) may be called from Python; the stages and helpers run inside compiled code
only (they have no CPython wrapper, which saves compile time).  The sweeps and helpers
(``_J``) allocate nothing and count no references: numba would otherwise add and drop a
reference, each an atomic operation, for every block view such as ``w.P[i]``, which costs
more than the arithmetic of a rigid body's step.  What allocates (``_JA``, ``_E``) counts
references as usual; a ``_J`` function returns no array, since its caller would release a
reference it never took.

The equations are those of the reference tier, step for step: position terms
(:func:`flexdyn.terms.position_terms`), velocity terms (:func:`flexdyn.terms.velocity_terms`,
Eqs 11, 25, 37), Newton–Euler (Eq 44), the composite-body mass matrix (Eqs 47, 50), the
articulated-body forward dynamics (Eqs 51, 58) and, by the same filter and smoother with a
mask of prescribed accelerations, hybrid dynamics (:mod:`flexdyn.hybrid`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from ..chain import QUATERNION_TOL
from ..joint_forces import N_FORCE_PARAMS, conservative_force, passive_force, potential, saturated
from ..joints import JOINT_PARAMS, SINGULARITY_TOL
from ..linalg import MASS_MATRIX_RTOL, PIVOT_FLOOR, PIVOT_RTOL
from ..scalar_kernels import quat_rot
from . import caching, notice
from .pack import EXACT, FULL, HEAD_OFFSETS, HEADER, INT_FIELDS, RIGID, RUTHLESS, PackedModel

caching.install()  # the engine's cache keyed by all its sources, before anything compiles
notice.install()  # a line on standard error while an entry compiles for long

# Compile cost: numba links a callee's code into each caller and optimizes the whole again, so
# thin orchestration levels are inlined at numba's IR level (_JI), and functions called only
# from compiled code get no CPython wrapper (_J, _JA); entries called from Python use _E.
# Small helpers that take the packed model or the workspace are inlined too (_JI): a call
# would copy their dozens of array headers.  _J: no allocation and no reference counting
# (module notes); _JA: helpers that allocate.  numba passes an unset _nrt from caller to
# callee, so the decorators that allocate set it explicitly.
_J = numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, _nrt=False)
_JA = numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, _nrt=True)
_JI = numba.njit(cache=True, nogil=True, no_cpython_wrapper=True, inline="always")
_E = numba.njit(cache=True, nogil=True, _nrt=True)
# integer columns of the per-body table (pack.INT_FIELDS)
_PARENT, _M, _NJ, _NQJ, _QS, _US, _JCODE, _KIND, _CN, _PN, _NN, _AT, _GS, _TK, _JF = range(15)
_NI = len(INT_FIELDS)
_NH = len(HEADER)
(_FIXED, _REVOLUTE, _PRISMATIC, _SCREW, _CYLINDRICAL, _UNIVERSAL, _SPHERICAL, _FREE,
 _PRODUCT) = range(9)
assert _NI == 15 and _NH == 6
#: statuses of the entries besides −1 (done) and a body index (singular inertia)
INVALID, OVERFLOW = -2, -3


# ----------------------------------------------------------------------------------------------
# the packed model and the workspace
# ----------------------------------------------------------------------------------------------
def _view(buf, start, shape, owned: bool):
    """The signature and code generator of :func:`view` (``owned``) and
    :func:`borrowed_view`, or None for arguments they do not take."""
    if not (isinstance(buf, types.Array) and buf.ndim == 1 and buf.layout == "C"
            and isinstance(start, types.Integer) and isinstance(shape, types.BaseTuple)
            and all(isinstance(n, types.Integer) for n in shape)):
        return None
    ndim = len(shape)
    result = types.Array(buf.dtype, ndim, "C")

    def codegen(context, builder, sig, args):
        source = make_array(sig.args[0])(context, builder, args[0])
        dims = [context.cast(builder, n, t, types.intp)
                for n, t in zip(cgutils.unpack_tuple(builder, args[2]), sig.args[2],
                                strict=True)]
        strides, step = [None] * ndim, source.itemsize
        for k in range(ndim - 1, -1, -1):  # C order: the last index fastest
            strides[k] = step
            step = builder.mul(step, dims[k])
        data = builder.gep(source.data, [context.cast(builder, args[1], sig.args[1],
                                                      types.intp)])
        out = make_array(result)(context, builder)
        if owned:
            populate_array(out, data=data, shape=dims, strides=strides,
                           itemsize=source.itemsize, meminfo=source.meminfo,
                           parent=source.parent)
            return impl_ret_borrowed(context, builder, result, out._getvalue())
        populate_array(out, data=data, shape=dims, strides=strides,
                       itemsize=source.itemsize, meminfo=None, parent=None)
        return out._getvalue()

    return result(buf, start, shape), codegen


@intrinsic
def view(typingctx, buf, start, shape):
    """``buf[start:start + prod(shape)].reshape(shape)`` for a C-contiguous vector ``buf``:
    the C-contiguous array of that shape on ``buf``'s memory, its header written directly.
    numba's ``reshape`` calls a helper per view (13 ns; :func:`unpack` and
    :func:`workspace` take about seventy views per call) and compiles an error path with
    string formatting into every caller.  No bounds check: the offsets come from
    :func:`flexdyn.engine.pack.pack` and :func:`workspace`, whose sizes the field tables
    fix."""
    return _view(buf, start, shape, owned=True)


@intrinsic
def borrowed_view(typingctx, buf, start, shape):
    """:func:`view` that holds no reference to ``buf``'s memory, so that neither making it nor
    dropping it counts references (an atomic operation each): for a buffer that the caller
    keeps alive while the view is used, such as the packed model an entry receives."""
    return _view(buf, start, shape, owned=False)


@_JA
def unpack(ib, fb):
    """Named views of the flat buffers (the shapes of :data:`flexdyn.engine.pack.FIELDS`, in
    its order), borrowed (:func:`borrowed_view`): the entries receive ``ib`` and ``fb`` from
    their caller, who holds them for the whole call."""
    n, M, N, G = ib[0], ib[1], ib[2], ib[5]
    o = ib[_NH:_NH + HEAD_OFFSETS]
    return PackedModel(
        ints=borrowed_view(ib, _NH + HEAD_OFFSETS, (n, _NI)),
        jparam=borrowed_view(fb, o[0], (n, JOINT_PARAMS)),
        place_R=borrowed_view(fb, o[1], (n, 3, 3)),
        place_p=borrowed_view(fb, o[2], (n, 3)),
        cplace_R=borrowed_view(fb, o[3], (n, 3, 3)),
        cplace_p=borrowed_view(fb, o[4], (n, 3)),
        l0=borrowed_view(fb, o[5], (n, N, 3)),
        node_m=borrowed_view(fb, o[6], (n, N)),
        node_I=borrowed_view(fb, o[7], (n, N, 3, 3)),
        Pi_r=borrowed_view(fb, o[8], (n, N, 3, M)),
        Pi_t=borrowed_view(fb, o[9], (n, N, 3, M)),
        M_rigid=borrowed_view(fb, o[10], (n, 6, 6)),
        M_m0=borrowed_view(fb, o[11], (n, M + 6, M + 6)),
        K=borrowed_view(fb, o[12], (n, M, M)),
        C=borrowed_view(fb, o[13], (n, M, M)),
        T_Jc_R=borrowed_view(fb, o[14], (n, 3, 3)),
        T_Jc_p=borrowed_view(fb, o[15], (n, 3)),
        X_joint0=borrowed_view(fb, o[16], (n, 6, 6)),
        Q0=borrowed_view(fb, o[17], (n, 6, M)),
        A0=borrowed_view(fb, o[18], (n, M + 6, 6)),
        T_t_R=borrowed_view(fb, o[19], (n, 3, 3)),
        T_t_p=borrowed_view(fb, o[20], (n, 3)),
        B_quad=borrowed_view(fb, o[21], (n, M, 6, 6)),
        gravity=borrowed_view(fb, o[22], (3,)),
        K1=borrowed_view(fb, o[23], (n, G, G, G)),
        K2=borrowed_view(fb, o[24], (n, G, G, G, G)),
        gs_rows=borrowed_view(fb, o[25], (n, G)),
        jforce=borrowed_view(fb, o[26], (n, 6, N_FORCE_PARAMS)),
    )


class Work(NamedTuple):
    """The per-call workspace: the per-state terms under the reference's names, the sweeps'
    per-body arrays and small scratch blocks (``s`` = M + 6)."""

    fR: np.ndarray  # (n, N, 3, 3) node rotations
    fp: np.ndarray  # (n, N, 3) node positions
    fE: np.ndarray  # (n, N, 6, M) node maps E
    fth: np.ndarray  # (n, N, 3) node rotation vectors θ
    phi: np.ndarray  # (n, 6, 6) φ(p, i)
    A: np.ndarray  # (n, s, 6) A(i)
    Hcal: np.ndarray  # (n, s, s) ℋ(i), rows nj + m
    M_m: np.ndarray  # (n, s, s)
    Q: np.ndarray  # (n, 6, M)
    X_joint: np.ndarray  # (n, 6, 6)
    R_nc: np.ndarray  # (n, 3, 3) pose of the own attach node
    p_nc: np.ndarray  # (n, 3)
    S: np.ndarray  # (n, 6, 6) joint motion subspace, nu_j columns
    V_m: np.ndarray  # (n, s)
    V_nl: np.ndarray  # (n, s) the velocities in the products (ruthless: no modal rates)
    a_m: np.ndarray  # (n, s)
    bias: np.ndarray  # (n, s) b_m + [Kη + Cη̇; 0] − [0; f_ext]
    u_nl: np.ndarray  # (nu,)
    P: np.ndarray  # (n, s, s) articulated (or composite) inertias
    G: np.ndarray  # (n, s, s) Kalman gains
    innov: np.ndarray  # (n, s) D⁻¹ ε
    z: np.ndarray  # (n, s) residual forces z (accumulated from the children)
    alpha: np.ndarray  # (n, s) modal accelerations
    f: np.ndarray  # (n, s) modal forces
    t_PH: np.ndarray  # (s, s) scratch
    t_D: np.ndarray  # (s, s)
    t_L: np.ndarray  # (s, s)
    t_Li: np.ndarray  # (s, s)
    t_X: np.ndarray  # (s, s)
    t_Y: np.ndarray  # (s, s)
    t_EY: np.ndarray  # (s, 6) E_t* φ X φᵀ of a child on a node (_attach_congruence)
    t_v: np.ndarray  # (s,)
    t_66: np.ndarray  # (2, 6, 6)
    t_33: np.ndarray  # (3, 3, 3)
    t_3: np.ndarray  # (3, 3)
    t_6: np.ndarray  # (8, 6)
    t_tip: np.ndarray  # (4, 3) scratch of the tip kinematics (_node_twist_rate)
    tau_e: np.ndarray  # (nu,) the generalized force with the joint forces, sat(τ) + τ_J
    R_phi: np.ndarray  # (n, 3, 3) the pose (R, p) of F_i in its parent's attach frame, of
    p_phi: np.ndarray  # (n, 3)    which φ(i) = [[R, p̃ R], [0, R]]
    R_t: np.ndarray  # (n, 3, 3) the pose of the parent's attach node t, of which
    p_t: np.ndarray  # (n, 3)    A(i) = [E_t*; φ(t)]
    q_n: np.ndarray  # (nq,) q with unit quaternions
    flat: np.ndarray  # the whole buffer


@_E
def workspace(ib):
    """One allocation, carved into the fields of :class:`Work`."""
    n, M, N, nu, nq = ib[0], ib[1], ib[2], ib[3], ib[4]
    s = M + 6
    sizes = (n * N * 9, n * N * 3, n * N * 6 * M, n * N * 3, n * 36, n * s * 6, n * s * s,
             n * s * s, n * 6 * M, n * 36, n * 9, n * 3, n * 36,
             n * s, n * s, n * s, n * s, nu,
             n * s * s, n * s * s, n * s, n * s, n * s, n * s,
             s * s, s * s, s * s, s * s, s * s, s * s, s * 6, s, 72, 27, 9, 48, 12, nu,
             n * 9, n * 3, n * 9, n * 3)
    total = 0
    for k in sizes:
        total += k
    buf = np.empty(nq + total)
    q_n, w = buf[:nq], buf[nq:]  # w is zeroed by each state's computation
    o = np.zeros(len(sizes) + 1, dtype=np.int64)
    for k in range(len(sizes)):
        o[k + 1] = o[k] + sizes[k]
    return Work(
        view(w, o[0], (n, N, 3, 3)), view(w, o[1], (n, N, 3)),
        view(w, o[2], (n, N, 6, M)), view(w, o[3], (n, N, 3)),
        view(w, o[4], (n, 6, 6)), view(w, o[5], (n, s, 6)),
        view(w, o[6], (n, s, s)), view(w, o[7], (n, s, s)),
        view(w, o[8], (n, 6, M)), view(w, o[9], (n, 6, 6)),
        view(w, o[10], (n, 3, 3)), view(w, o[11], (n, 3)),
        view(w, o[12], (n, 6, 6)),
        view(w, o[13], (n, s)), view(w, o[14], (n, s)),
        view(w, o[15], (n, s)), view(w, o[16], (n, s)),
        w[o[17]:o[18]],
        view(w, o[18], (n, s, s)), view(w, o[19], (n, s, s)),
        view(w, o[20], (n, s)), view(w, o[21], (n, s)),
        view(w, o[22], (n, s)), view(w, o[23], (n, s)),
        view(w, o[24], (s, s)), view(w, o[25], (s, s)),
        view(w, o[26], (s, s)), view(w, o[27], (s, s)),
        view(w, o[28], (s, s)), view(w, o[29], (s, s)),
        view(w, o[30], (s, 6)), w[o[31]:o[32]],
        view(w, o[32], (2, 6, 6)), view(w, o[33], (3, 3, 3)),
        view(w, o[34], (3, 3)), view(w, o[35], (8, 6)),
        view(w, o[36], (4, 3)), w[o[37]:o[38]],
        view(w, o[38], (n, 3, 3)), view(w, o[39], (n, 3)),
        view(w, o[40], (n, 3, 3)), view(w, o[41], (n, 3)), q_n, w,
    )


# ----------------------------------------------------------------------------------------------
# small algebra (plain loops into given outputs: no allocation, no BLAS call per block)
# ----------------------------------------------------------------------------------------------
@_J
def _copy(src, dst):
    """``dst[...] = src`` for arrays of one shape and 1 to 3 dimensions, entry by entry.
    numba's assignment of an array to a slice checks the shapes with an error message
    formatted in compiled code, whose compile (string formatting for each number of
    dimensions) is slow.  numba replaces ``dst.ndim`` by its value and prunes the other
    branches; plain loops, because ``np.ndindex`` is slower on small blocks."""
    if dst.ndim == 1:
        for r in range(dst.shape[0]):
            dst[r] = src[r]
    elif dst.ndim == 2:
        for r in range(dst.shape[0]):
            for c in range(dst.shape[1]):
                dst[r, c] = src[r, c]
    else:
        for i in range(dst.shape[0]):
            for r in range(dst.shape[1]):
                for c in range(dst.shape[2]):
                    dst[i, r, c] = src[i, r, c]


@_J
def _mv(a, x, out, acc):
    """``out (+)= a x``."""
    for i in range(a.shape[0]):
        s = out[i] if acc else 0.0
        for t in range(a.shape[1]):
            s += a[i, t] * x[t]
        out[i] = s


@_J
def _mtv(a, x, out, acc):
    """``out (+)= aᵀ x``."""
    if not acc:
        out[:] = 0.0
    for t in range(a.shape[0]):
        xt = x[t]
        for j in range(a.shape[1]):
            out[j] += a[t, j] * xt


@_J
def _mv6(a, x, out, acc):
    """``out (+)= a x`` for ``a`` (6 × 6) (fixed bounds, so the loops unroll)."""
    for i in range(6):
        s = out[i] if acc else 0.0
        for t in range(6):
            s += a[i, t] * x[t]
        out[i] = s


@_J
def _compose3(R1, p1, R2, p2, R, p):
    """``(R, p) = (R1, p1) ∘ (R2, p2)``: ``R = R1 R2``, ``p = R1 p2 + p1`` (3 × 3 loops of
    fixed size)."""
    for r in range(3):
        for c in range(3):
            R[r, c] = R1[r, 0] * R2[0, c] + R1[r, 1] * R2[1, c] + R1[r, 2] * R2[2, c]
        p[r] = R1[r, 0] * p2[0] + R1[r, 1] * p2[1] + R1[r, 2] * p2[2] + p1[r]


@_J
def _mm(a, b, out):
    """``out = a b``."""
    out[:, :] = 0.0
    for i in range(a.shape[0]):
        for t in range(a.shape[1]):
            x = a[i, t]
            for j in range(b.shape[1]):
                out[i, j] += x * b[t, j]


@_J
def _mmt(a, b, out, acc):
    """``out (+)= a bᵀ``."""
    for i in range(a.shape[0]):
        for j in range(b.shape[0]):
            s = out[i, j] if acc else 0.0
            for t in range(a.shape[1]):
                s += a[i, t] * b[j, t]
            out[i, j] = s


@_J
def _phi_congruence(phi, X, out, T):
    """``out += φ X φᵀ`` for 6 × 6 blocks (fixed bounds, so the loops unroll); ``T`` scratch."""
    for r in range(6):
        for c in range(6):
            t = 0.0
            for k in range(6):
                t += phi[r, k] * X[k, c]
            T[r, c] = t
    for r in range(6):
        for c in range(6):
            t = 0.0
            for k in range(6):
                t += T[r, k] * phi[c, k]
            out[r, c] += t


@_J
def _pose_congruence(R, p, X, out, T):
    """``out += φ X φᵀ`` for ``φ = [[R, p̃ R], [0, R]]`` from its pose ``(R, p)`` and a
    symmetric ``X = [[A, B], [Bᵀ, C]]`` (6 × 6; its lower left block is not read): with
    ``A' = R A Rᵀ``, ``B' = R B Rᵀ``, ``C' = R C Rᵀ`` and ``E = B' + p̃ C'``, the blocks
    ``[[A' + p̃ B'ᵀ − E p̃, E], [Eᵀ, C']]``, about 200 flops against the 432 of
    ``_phi_congruence``; ``T`` (3, 3, 3) scratch."""
    A, B, E = T[0], T[1], T[2]
    for r in range(3):  # A Rᵀ, B Rᵀ, C Rᵀ
        for c in range(3):
            A[r, c] = X[r, 0] * R[c, 0] + X[r, 1] * R[c, 1] + X[r, 2] * R[c, 2]
            B[r, c] = X[r, 3] * R[c, 0] + X[r, 4] * R[c, 1] + X[r, 5] * R[c, 2]
            E[r, c] = X[3 + r, 3] * R[c, 0] + X[3 + r, 4] * R[c, 1] + X[3 + r, 5] * R[c, 2]
    p0, p1, p2 = p[0], p[1], p[2]
    for c in range(3):  # column c of A', B', C' (R times column c), then of E
        a0 = R[0, 0] * A[0, c] + R[0, 1] * A[1, c] + R[0, 2] * A[2, c]
        a1 = R[1, 0] * A[0, c] + R[1, 1] * A[1, c] + R[1, 2] * A[2, c]
        a2 = R[2, 0] * A[0, c] + R[2, 1] * A[1, c] + R[2, 2] * A[2, c]
        b0 = R[0, 0] * B[0, c] + R[0, 1] * B[1, c] + R[0, 2] * B[2, c]
        b1 = R[1, 0] * B[0, c] + R[1, 1] * B[1, c] + R[1, 2] * B[2, c]
        b2 = R[2, 0] * B[0, c] + R[2, 1] * B[1, c] + R[2, 2] * B[2, c]
        c0 = R[0, 0] * E[0, c] + R[0, 1] * E[1, c] + R[0, 2] * E[2, c]
        c1 = R[1, 0] * E[0, c] + R[1, 1] * E[1, c] + R[1, 2] * E[2, c]
        c2 = R[2, 0] * E[0, c] + R[2, 1] * E[1, c] + R[2, 2] * E[2, c]
        e0 = b0 + p1 * c2 - p2 * c1
        e1 = b1 + p2 * c0 - p0 * c2
        e2 = b2 + p0 * c1 - p1 * c0
        A[0, c], A[1, c], A[2, c] = a0, a1, a2
        B[0, c], B[1, c], B[2, c] = b0, b1, b2
        E[0, c], E[1, c], E[2, c] = e0, e1, e2
        out[3, 3 + c] += c0
        out[4, 3 + c] += c1
        out[5, 3 + c] += c2
        for r in range(3):
            out[r, 3 + c] += E[r, c]
            out[3 + c, r] += E[r, c]
    for c in range(3):  # A' + p̃ B'ᵀ: column c of p̃ B'ᵀ is p × B'[c, :]
        b0, b1, b2 = B[c, 0], B[c, 1], B[c, 2]
        out[0, c] += A[0, c] + p1 * b2 - p2 * b1
        out[1, c] += A[1, c] + p2 * b0 - p0 * b2
        out[2, c] += A[2, c] + p0 * b1 - p1 * b0
    for r in range(3):  # − E p̃: row r of E p̃ is E[r, :] × p
        e0, e1, e2 = E[r, 0], E[r, 1], E[r, 2]
        out[r, 0] -= e1 * p2 - e2 * p1
        out[r, 1] -= e2 * p0 - e0 * p2
        out[r, 2] -= e0 * p1 - e1 * p0


@_J
def _cross_motion(V, W, out, acc):
    """``out (+)= V × W`` (twists)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    a0, a1, a2, b0, b1, b2 = W[0], W[1], W[2], W[3], W[4], W[5]
    if not acc:
        out[:] = 0.0
    out[0] += w1 * a2 - w2 * a1
    out[1] += w2 * a0 - w0 * a2
    out[2] += w0 * a1 - w1 * a0
    out[3] += w1 * b2 - w2 * b1 + v1 * a2 - v2 * a1
    out[4] += w2 * b0 - w0 * b2 + v2 * a0 - v0 * a2
    out[5] += w0 * b1 - w1 * b0 + v0 * a1 - v1 * a0


@_J
def _cross_force(V, f, out, acc):
    """``out (+)= V ×* f`` (twist, wrench)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    n0, n1, n2, f0, f1, f2 = f[0], f[1], f[2], f[3], f[4], f[5]
    if not acc:
        out[:] = 0.0
    out[0] += w1 * n2 - w2 * n1 + v1 * f2 - v2 * f1
    out[1] += w2 * n0 - w0 * n2 + v2 * f0 - v0 * f2
    out[2] += w0 * n1 - w1 * n0 + v0 * f1 - v1 * f0
    out[3] += w1 * f2 - w2 * f1
    out[4] += w2 * f0 - w0 * f2
    out[5] += w0 * f1 - w1 * f0


@_J
def _phi(R, p, out):
    """``φ = [[R, p̃ R], [0, R]]`` (moves forces from the frame to its parent)."""
    for r in range(3):
        for c in range(3):
            out[r, c] = R[r, c]
            out[3 + r, 3 + c] = R[r, c]
            out[3 + r, c] = 0.0
    for c in range(3):
        out[0, 3 + c] = p[1] * R[2, c] - p[2] * R[1, c]
        out[1, 3 + c] = p[2] * R[0, c] - p[0] * R[2, c]
        out[2, 3 + c] = p[0] * R[1, c] - p[1] * R[0, c]


@_J
def _motion_to_parent(R, p, out):
    """``[[R, 0], [p̃ R, R]]`` (moves twists from the frame to its parent)."""
    for r in range(3):
        for c in range(3):
            out[r, c] = R[r, c]
            out[3 + r, 3 + c] = R[r, c]
            out[r, 3 + c] = 0.0
    for c in range(3):
        out[3, c] = p[1] * R[2, c] - p[2] * R[1, c]
        out[4, c] = p[2] * R[0, c] - p[0] * R[2, c]
        out[5, c] = p[0] * R[1, c] - p[1] * R[0, c]


# ----------------------------------------------------------------------------------------------
# SO(3) maps (spatial.so3_maps): power series for |θ|² < 1, closed forms beyond
# ----------------------------------------------------------------------------------------------
def _series_coefficients(off: int, n: int = 12) -> np.ndarray:
    """``(−1)^k / (2k + off + 1)!`` for ``k < n``: the power series of ``a, b, c``."""
    return np.array([(-1.0) ** k / math.factorial(2 * k + off + 1) for k in range(n)])


_A_SERIES, _B_SERIES, _C_SERIES = (_series_coefficients(off) for off in range(3))


@_J
def _horner(coef, s):
    """``Σ_k coef[k] s^k`` and its derivative in ``s``."""
    n = coef.shape[0]
    v, dv = coef[n - 1], 0.0
    for k in range(n - 2, -1, -1):
        dv = dv * s + v
        v = v * s + coef[k]
    return v, dv


@_J
def _so3_coefficients(s):
    """``a, b, c`` and their derivatives in ``s = |θ|²`` (see spatial._exp_coefficients):
    12 terms of the power series for ``s < 1``, the closed forms beyond."""
    if s < 1.0:
        a, da = _horner(_A_SERIES, s)
        b, db = _horner(_B_SERIES, s)
        c, dc = _horner(_C_SERIES, s)
        return a, b, c, da, db, dc
    t = math.sqrt(s)
    sn, co = math.sin(t), math.cos(t)
    a = sn / t
    b = (1.0 - co) / s
    c = (t - sn) / (s * t)
    return a, b, c, (co - a) / (2.0 * s), (a - 2.0 * b) / (2.0 * s), (b - 3.0 * c) / (2.0 * s)


# ----------------------------------------------------------------------------------------------
# tip kinematics (flexdyn.tip_kinematics): R(θ), the rotation rows of E = J(θ) Π_r and J̇(θ) θ̇
# by the code of the model's option, dispatched in _tip_frame and _tip_rate only
# ----------------------------------------------------------------------------------------------
_EXPONENTIAL, _NEGLECT, _EULER_123, _EULER_321 = range(4)


@_J
def _exp_frame(theta, Pi_r, m, R, E):
    """``R = exp(θ̃) = I + a θ̃ + b θ̃²`` and ``E[:3] = J_r(θ) Π_r`` with
    ``J_r = I − b θ̃ + c θ̃²`` and ``θ̃² = θθᵀ − |θ|² I``."""
    t0, t1, t2 = theta[0], theta[1], theta[2]
    s = t0 * t0 + t1 * t1 + t2 * t2
    a, b, c, _, _, _ = _so3_coefficients(s)
    for r in range(3):
        for q in range(3):
            R[r, q] = theta[r] * theta[q] * b
        R[r, r] += 1.0 - b * s
    R[0, 1] -= a * t2
    R[1, 0] += a * t2
    R[0, 2] += a * t1
    R[2, 0] -= a * t1
    R[1, 2] -= a * t0
    R[2, 1] += a * t0
    for k in range(m):
        x0, x1, x2 = Pi_r[0, k], Pi_r[1, k], Pi_r[2, k]
        d = t0 * x0 + t1 * x1 + t2 * x2
        E[0, k] = x0 - b * (t1 * x2 - t2 * x1) + c * (t0 * d - s * x0)
        E[1, k] = x1 - b * (t2 * x0 - t0 * x2) + c * (t1 * d - s * x1)
        E[2, k] = x2 - b * (t0 * x1 - t1 * x0) + c * (t2 * d - s * x2)


@_J
def _exp_rate(theta, d0, d1, d2, out):
    """``out[:3] = J̇_r(θ) θ̇`` for ``θ̇ = (d0, d1, d2)``.  With ``θ̃θ̇ = θ × θ̇``,
    ``θ̃̇θ̇ = 0``: ``J̇_r θ̇ = −ḃ θ × θ̇ + ċ θ × (θ × θ̇) + c θ̇ × (θ × θ̇)``,
    ``ḃ = b' 2θ·θ̇``."""
    t0, t1, t2 = theta[0], theta[1], theta[2]
    s = t0 * t0 + t1 * t1 + t2 * t2
    _, b, c, _, db, dc = _so3_coefficients(s)
    dt2 = 2.0 * (t0 * d0 + t1 * d1 + t2 * d2)
    cb, cc = db * dt2, dc * dt2
    x0, x1, x2 = t1 * d2 - t2 * d1, t2 * d0 - t0 * d2, t0 * d1 - t1 * d0  # θ × θ̇
    out[0] = -cb * x0 + cc * (t1 * x2 - t2 * x1) + c * (d1 * x2 - d2 * x1)
    out[1] = -cb * x1 + cc * (t2 * x0 - t0 * x2) + c * (d2 * x0 - d0 * x2)
    out[2] = -cb * x2 + cc * (t0 * x1 - t1 * x0) + c * (d0 * x1 - d1 * x0)


@_J
def _elementary(k, co, si, r, q):
    """Entry ``(r, q)`` of the rotation about coordinate axis ``k`` by the angle of cosine
    ``co`` and sine ``si``."""
    if r == q:
        return 1.0 if r == k else co
    if r == (k + 1) % 3 and q == (k + 2) % 3:
        return -si
    if r == (k + 2) % 3 and q == (k + 1) % 3:
        return si
    return 0.0


@_J
def _euler_columns(a, b, c, theta, R):
    """``R = R_b(θ_b) R_c(θ_c)`` (3 × 3, overwritten) and the columns of ``J``
    (tip_kinematics.euler_maps): returns ``u_a = (R_b R_c)ᵀ e_a`` and ``u_b = R_cᵀ e_b``
    (6 scalars), with the cosine and sine of ``θ_a``."""
    cb, sb = math.cos(theta[b]), math.sin(theta[b])
    cc, sc = math.cos(theta[c]), math.sin(theta[c])
    for r in range(3):
        for q in range(3):
            x = 0.0
            for t in range(3):
                x += _elementary(b, cb, sb, r, t) * _elementary(c, cc, sc, t, q)
            R[r, q] = x
    return (R[a, 0], R[a, 1], R[a, 2], _elementary(c, cc, sc, b, 0),
            _elementary(c, cc, sc, b, 1), _elementary(c, cc, sc, b, 2),
            math.cos(theta[a]), math.sin(theta[a]))


@_J
def _euler_frame(a, b, c, theta, Pi_r, m, R, E):
    """``R = R_a R_b R_c`` and ``E[:3] = J Π_r`` with ``J = [u_a, u_b, e_c]`` in the columns
    ``a, b, c`` (tip_kinematics.euler_maps)."""
    ua0, ua1, ua2, ub0, ub1, ub2, ca, sa = _euler_columns(a, b, c, theta, R)
    i1, i2 = (a + 1) % 3, (a + 2) % 3  # R ← R_a R: rows i1, i2 turn
    for q in range(3):
        r1, r2 = R[i1, q], R[i2, q]
        R[i1, q] = ca * r1 - sa * r2
        R[i2, q] = sa * r1 + ca * r2
    for k in range(m):
        xa, xb = Pi_r[a, k], Pi_r[b, k]
        E[0, k] = ua0 * xa + ub0 * xb
        E[1, k] = ua1 * xa + ub1 * xb
        E[2, k] = ua2 * xa + ub2 * xb
        E[c, k] += Pi_r[c, k]


@_J
def _euler_rate(a, b, c, theta, d, out, R):
    """``out[:3] = J̇ θ̇ = θ̇_c (θ̇_a u_a + θ̇_b u_b) × e_c + θ̇_a θ̇_b u_a × u_b``
    (tip_kinematics.euler_rate) for ``θ̇ = d`` (3,); ``R`` (3 × 3) scratch."""
    ua0, ua1, ua2, ub0, ub1, ub2, _, _ = _euler_columns(a, b, c, theta, R)
    da, db, dc = d[a], d[b], d[c]
    v0, v1, v2 = da * ua0 + db * ub0, da * ua1 + db * ub1, da * ua2 + db * ub2
    ab = da * db
    out[0] = ab * (ua1 * ub2 - ua2 * ub1)
    out[1] = ab * (ua2 * ub0 - ua0 * ub2)
    out[2] = ab * (ua0 * ub1 - ua1 * ub0)
    c1, c2 = (c + 1) % 3, (c + 2) % 3  # v × e_c = v_c2 e_c1 − v_c1 e_c2
    v = (v0, v1, v2)
    out[c1] += dc * v[c2]
    out[c2] -= dc * v[c1]


@_J
def _tip_frame(code, theta, Pi_r, m, R, E):
    """The node rotation ``R(θ)`` and the rotation rows ``E[:3] = J(θ) Π_r`` of the tip
    kinematics ``code``."""
    if code == _EXPONENTIAL:
        _exp_frame(theta, Pi_r, m, R, E)
    elif code == _NEGLECT:
        for r in range(3):
            for q in range(3):
                R[r, q] = 1.0 if r == q else 0.0
            for k in range(m):
                E[r, k] = 0.0
    elif code == _EULER_123:
        _euler_frame(0, 1, 2, theta, Pi_r, m, R, E)
    else:
        _euler_frame(2, 1, 0, theta, Pi_r, m, R, E)


@_J
def _tip_rate(code, theta, d, out, R):
    """``out[:3] = J̇(θ) θ̇`` (``θ̇ = d`` (3,)) of the tip kinematics ``code``; ``R`` (3 × 3)
    scratch."""
    if code == _EXPONENTIAL:
        _exp_rate(theta, d[0], d[1], d[2], out)
    elif code == _NEGLECT:
        out[0] = out[1] = out[2] = 0.0
    elif code == _EULER_123:
        _euler_rate(0, 1, 2, theta, d, out, R)
    else:
        _euler_rate(2, 1, 0, theta, d, out, R)


@_J
def _node_frame(code, Pi_r, Pi_t, l0, eta, m, R, p, E, theta):
    """Node frame at ``η``: ``θ = Π_r η``, ``p = l0 + Π_t η``, ``R(θ)`` and
    ``E = [J(θ) Π_r; Rᵀ Π_t]`` (6 × m) of the tip kinematics ``code`` (``_tip_frame``)."""
    for r in range(3):
        th = 0.0
        pr = l0[r]
        for k in range(m):
            th += Pi_r[r, k] * eta[k]
            pr += Pi_t[r, k] * eta[k]
        theta[r] = th
        p[r] = pr
    _tip_frame(code, theta, Pi_r, m, R, E)
    for k in range(m):
        for r in range(3):
            E[3 + r, k] = R[0, r] * Pi_t[0, k] + R[1, r] * Pi_t[1, k] + R[2, r] * Pi_t[2, k]


@_J
def _node_twist_rate(code, theta, Pi_r, E, etad, m, out, w, t):
    """``out = Ė_j η̇ = [J̇(θ) θ̇; −(E_r η̇) × (E_t η̇)]`` with ``θ̇ = Π_r η̇``
    (Body.node_twist_rate; ``_tip_rate``), and ``w = E_j η̇`` (6,); ``t`` (4, 3)
    scratch."""
    d = t[0]
    d[0] = d[1] = d[2] = 0.0
    for k in range(m):
        d[0] += Pi_r[0, k] * etad[k]
        d[1] += Pi_r[1, k] * etad[k]
        d[2] += Pi_r[2, k] * etad[k]
    for r in range(6):
        x = 0.0
        for k in range(m):
            x += E[r, k] * etad[k]
        w[r] = x
    _tip_rate(code, theta, d, out, t[1:4])
    out[3] = -(w[1] * w[5] - w[2] * w[4])
    out[4] = -(w[2] * w[3] - w[0] * w[5])
    out[5] = -(w[0] * w[4] - w[1] * w[3])


@_J
def _node_twist(R, p, E, m, etad, V, out):
    """``out = B_j [η̇; V] = E_j η̇ + [Rᵀ ω; Rᵀ (v + ω × p)]`` (6,): the twist of node ``j``
    in its own frame from the body's twist ``V = [ω; v]`` and modal rates."""
    w0, w1, w2 = V[0], V[1], V[2]
    v0 = V[3] + w1 * p[2] - w2 * p[1]
    v1 = V[4] + w2 * p[0] - w0 * p[2]
    v2 = V[5] + w0 * p[1] - w1 * p[0]
    for r in range(3):
        out[r] = R[0, r] * w0 + R[1, r] * w1 + R[2, r] * w2
        out[3 + r] = R[0, r] * v0 + R[1, r] * v1 + R[2, r] * v2
    for r in range(6):
        x = out[r]
        for k in range(m):
            x += E[r, k] * etad[k]
        out[r] = x


@_J
def _node_wrench(R, p, E, m, y, out):
    """``out += B_jᵀ y = [E_jᵀ y; R n + p × R f; R f]`` (m + 6,): a wrench ``y = [n; f]`` at
    node ``j`` (its frame) as modal and rigid forces of the body."""
    for k in range(m):
        x = 0.0
        for r in range(6):
            x += E[r, k] * y[r]
        out[k] += x
    n0 = R[0, 0] * y[0] + R[0, 1] * y[1] + R[0, 2] * y[2]
    n1 = R[1, 0] * y[0] + R[1, 1] * y[1] + R[1, 2] * y[2]
    n2 = R[2, 0] * y[0] + R[2, 1] * y[1] + R[2, 2] * y[2]
    f0 = R[0, 0] * y[3] + R[0, 1] * y[4] + R[0, 2] * y[5]
    f1 = R[1, 0] * y[3] + R[1, 1] * y[4] + R[1, 2] * y[5]
    f2 = R[2, 0] * y[3] + R[2, 1] * y[4] + R[2, 2] * y[5]
    out[m] += n0 + p[1] * f2 - p[2] * f1
    out[m + 1] += n1 + p[2] * f0 - p[0] * f2
    out[m + 2] += n2 + p[0] * f1 - p[1] * f0
    out[m + 3] += f0
    out[m + 4] += f1
    out[m + 5] += f2


# ----------------------------------------------------------------------------------------------
# joint kernels by code
# ----------------------------------------------------------------------------------------------
@_J
def _axis_angle(ax, th, R):
    """``exp(th ã) = I + sin th ã + (1 − cos th) ã²`` (any axis length, as the reference)."""
    s, c1 = math.sin(th), 1.0 - math.cos(th)
    a0, a1, a2 = ax[0], ax[1], ax[2]
    aa = a0 * a0 + a1 * a1 + a2 * a2
    R[0, 0] = 1.0 + c1 * (a0 * a0 - aa)
    R[1, 1] = 1.0 + c1 * (a1 * a1 - aa)
    R[2, 2] = 1.0 + c1 * (a2 * a2 - aa)
    R[0, 1] = -s * a2 + c1 * a0 * a1
    R[1, 0] = s * a2 + c1 * a0 * a1
    R[0, 2] = s * a1 + c1 * a0 * a2
    R[2, 0] = -s * a1 + c1 * a0 * a2
    R[1, 2] = -s * a0 + c1 * a1 * a2
    R[2, 1] = s * a0 + c1 * a1 * a2


_quat_rot = _J(quat_rot)


@_J
def _joint(code, jp, qj, R, p, S, R1, R2):
    """Transform ``(R, p)`` of ``J_c`` in ``J_p`` and motion subspace ``S`` (6 × nu_j);
    ``R1``, ``R2`` (3 × 3) scratch."""
    for r in range(3):
        p[r] = 0.0
        for c in range(3):
            R[r, c] = 1.0 if r == c else 0.0
    S[:, :] = 0.0
    if code == _REVOLUTE or code == _SCREW or code == _CYLINDRICAL:
        _axis_angle(jp, qj[0], R)
        for r in range(3):
            S[r, 0] = jp[r]
        if code == _SCREW:
            for r in range(3):
                p[r] = jp[6] * qj[0] * jp[r]
                S[3 + r, 0] = jp[6] * jp[r]
        elif code == _CYLINDRICAL:
            for r in range(3):
                p[r] = qj[1] * jp[r]
                S[3 + r, 1] = jp[r]
    elif code == _PRISMATIC:
        for r in range(3):
            p[r] = qj[0] * jp[r]
            S[3 + r, 0] = jp[r]
    elif code == _UNIVERSAL:
        _axis_angle(jp[:3], qj[0], R1)
        _axis_angle(jp[3:6], qj[1], R2)
        _mm(R1, R2, R)
        for r in range(3):
            S[r, 0] = R2[0, r] * jp[0] + R2[1, r] * jp[1] + R2[2, r] * jp[2]
            S[r, 1] = jp[3 + r]
    elif code == _SPHERICAL or code == _FREE:
        _quat_rot(qj[0], qj[1], qj[2], qj[3], R)
        for r in range(3):
            S[r, r] = 1.0
        if code == _FREE:
            for r in range(3):
                p[r] = qj[4 + r]
                S[3 + r, 3 + r] = 1.0
    elif code == _PRODUCT:
        _product_joint(jp, qj, R, p, S)


# A product joint (flexdyn.joints.ProductJoint, Kwatny & Blankenship Props 1-3): jp holds its
# n columns h_c (jp[6c:6c+6], the product order of Eq 15, column 0 innermost), the speed basis
# s_c (jp[36+6c:42+6c]), the index in q of each ε_c (jp[72+c]) and, where a factor starts,
# det(H_iᵀ H_i) > 0 of its columns (jp[78+c]; 0 elsewhere).
@_J
def _rot_vec(w0, w1, w2, s, c1, x0, x1, x2):
    """``exp(e ω̃) x = x + sin e ω × x + (1 − cos e) ω × (ω × x)`` (``s = sin e``,
    ``c1 = 1 − cos e``)."""
    a0, a1, a2 = w1 * x2 - w2 * x1, w2 * x0 - w0 * x2, w0 * x1 - w1 * x0
    b0, b1, b2 = w1 * a2 - w2 * a1, w2 * a0 - w0 * a2, w0 * a1 - w1 * a0
    return x0 + s * a0 + c1 * b0, x1 + s * a1 + c1 * b1, x2 + s * a2 + c1 * b2


@_J
def _screw_apply(h, e, R, p):
    """``U ← exp(ĥ e) U`` for the pose ``(R, p)`` of ``U`` (Prop 1, Eq 12): rotation
    ``exp(e ω̃)``, translation ``(e I + (1 − cos e) ω̃ + (e − sin e) ω̃²) v``."""
    w0, w1, w2, v0, v1, v2 = h[0], h[1], h[2], h[3], h[4], h[5]
    s, c1 = math.sin(e), 1.0 - math.cos(e)
    for c in range(3):
        R[0, c], R[1, c], R[2, c] = _rot_vec(w0, w1, w2, s, c1, R[0, c], R[1, c], R[2, c])
    y0, y1, y2 = _rot_vec(w0, w1, w2, s, c1, p[0], p[1], p[2])
    a0, a1, a2 = w1 * v2 - w2 * v1, w2 * v0 - w0 * v2, w0 * v1 - w1 * v0
    b0, b1, b2 = w1 * a2 - w2 * a1, w2 * a0 - w0 * a2, w0 * a1 - w1 * a0
    d = e - s
    p[0] = y0 + e * v0 + c1 * a0 + d * b0
    p[1] = y1 + e * v1 + c1 * a1 + d * b1
    p[2] = y2 + e * v2 + c1 * a2 + d * b2


@_J
def _ad_inverse_col(R, p, h, S, col):
    """``S[:, col] = Ad_{U⁻¹} h = [Rᵀ ω; Rᵀ (v + ω × p)]`` for the pose ``(R, p)`` of U."""
    w0, w1, w2 = h[0], h[1], h[2]
    v0 = h[3] + w1 * p[2] - w2 * p[1]
    v1 = h[4] + w2 * p[0] - w0 * p[2]
    v2 = h[5] + w0 * p[1] - w1 * p[0]
    for r in range(3):
        S[r, col] = R[0, r] * w0 + R[1, r] * w1 + R[2, r] * w2
        S[3 + r, col] = R[0, r] * v0 + R[1, r] * v1 + R[2, r] * v2


@_J
def _block_end(jp, c, n):
    """The end of the factor that starts at column ``c``."""
    e = c + 1
    while e < n and jp[78 + e] == 0.0:
        e += 1
    return e


@_J
def _product_joint(jp, qj, R, p, S):
    """``λ(ε)`` (Eq 15) into ``(R, p)`` (the identity on entry) and ``H*`` (Eq 28) into
    ``S``: block ``i`` is ``Ad_{U⁻¹}`` of the speed basis, ``U`` the factors inside."""
    n = qj.shape[0]
    for c in range(n):
        if jp[78 + c] != 0.0:
            for k in range(c, _block_end(jp, c, n)):
                _ad_inverse_col(R, p, jp[36 + 6 * k:42 + 6 * k], S, k)
        _screw_apply(jp[6 * c:6 * c + 6], qj[int(jp[72 + c])], R, p)


@_J
def _product_rate(jp, S, beta, n, out, W):
    """``out += Ḣ* β = Σ_i (S'_i β_i) × W_i``, ``W_i`` the twist of the factors inside factor
    ``i`` (:class:`flexdyn.joints.ProductJoint`); ``W`` (3 × 3) scratch, rows 0–1."""
    W[0, :] = 0.0
    W[1, :] = 0.0
    c = 0
    while c < n:
        e = _block_end(jp, c, n)
        t0 = t1 = t2 = t3 = t4 = t5 = 0.0
        for k in range(c, e):
            b = beta[k]
            t0 += S[0, k] * b
            t1 += S[1, k] * b
            t2 += S[2, k] * b
            t3 += S[3, k] * b
            t4 += S[4, k] * b
            t5 += S[5, k] * b
        a0, a1, a2, l0, l1, l2 = W[0, 0], W[0, 1], W[0, 2], W[1, 0], W[1, 1], W[1, 2]
        out[0] += t1 * a2 - t2 * a1
        out[1] += t2 * a0 - t0 * a2
        out[2] += t0 * a1 - t1 * a0
        out[3] += t1 * l2 - t2 * l1 + t4 * a2 - t5 * a1
        out[4] += t2 * l0 - t0 * l2 + t5 * a0 - t3 * a2
        out[5] += t0 * l1 - t1 * l0 + t3 * a1 - t4 * a0
        W[0, 0], W[0, 1], W[0, 2] = a0 + t0, a1 + t1, a2 + t2
        W[1, 0], W[1, 1], W[1, 2] = l0 + t3, l1 + t4, l2 + t5
        c = e


@_JA
def _product_qdot(jp, qj, uj, out):
    """``q̇ = Γ(q) β`` of a product joint: per factor ``ε̇_i = (B_iᵀ B_i)⁻¹ B_iᵀ S_i β_i``
    (Prop 2, Eqs 19 and 25), by Gaussian elimination with partial pivoting; NaN for a factor
    whose singularity measure ``μ`` is below :data:`~flexdyn.joints.SINGULARITY_TOL` (where
    the reference raises :class:`flexdyn.joints.JointSingularityError`)."""
    n = qj.shape[0]
    B = np.zeros((6, 6))
    N = np.zeros((6, 7))
    R = np.zeros((3, 3))
    p = np.zeros(3)
    t = np.zeros(6)
    c = 0
    while c < n:
        e = _block_end(jp, c, n)
        r = e - c
        for a in range(3):
            p[a] = 0.0
            for b in range(3):
                R[a, b] = 1.0 if a == b else 0.0
        for k in range(c, e):
            _ad_inverse_col(R, p, jp[6 * k:6 * k + 6], B, k - c)
            _screw_apply(jp[6 * k:6 * k + 6], qj[int(jp[72 + k])], R, p)
        for a in range(6):
            s = 0.0
            for k in range(c, e):
                s += jp[36 + 6 * k + a] * uj[k]
            t[a] = s
        for a in range(r):
            for b in range(r):
                s = 0.0
                for k in range(6):
                    s += B[k, a] * B[k, b]
                N[a, b] = s
            s = 0.0
            for k in range(6):
                s += B[k, a] * t[k]
            N[a, r] = s
        det = 1.0
        for a in range(r):  # elimination; det(BᵀB) from the pivots
            piv = a
            for b in range(a + 1, r):
                if abs(N[b, a]) > abs(N[piv, a]):
                    piv = b
            if piv != a:
                for k in range(r + 1):
                    N[a, k], N[piv, k] = N[piv, k], N[a, k]
            det *= N[a, a]
            if det == 0.0:
                break
            for b in range(a + 1, r):
                f = N[b, a] / N[a, a]
                for k in range(a, r + 1):
                    N[b, k] -= f * N[a, k]
        if math.sqrt(abs(det) / jp[78 + c]) < SINGULARITY_TOL:  # μ of the factor
            for a in range(r):
                out[int(jp[72 + c + a])] = math.nan
        else:
            for a in range(r - 1, -1, -1):  # back substitution: ε̇_{c+a}
                s = N[a, r]
                for k in range(a + 1, r):
                    s -= N[a, k] * N[k, r]
                N[a, r] = s / N[a, a]
                out[int(jp[72 + c + a])] = N[a, r]
        c = e


@_J
def _joint_rate(code, jp, qj, beta, out, R2):
    """``out += Ḣ* β`` (6,) of the universal joint; ``R2`` scratch (product joints:
    ``_product_rate``)."""
    if code == _UNIVERSAL:
        _axis_angle(jp[3:6], qj[1], R2)
        a0 = R2[0, 0] * jp[0] + R2[1, 0] * jp[1] + R2[2, 0] * jp[2]
        a1 = R2[0, 1] * jp[0] + R2[1, 1] * jp[1] + R2[2, 1] * jp[2]
        a2 = R2[0, 2] * jp[0] + R2[1, 2] * jp[1] + R2[2, 2] * jp[2]
        b = beta[0] * beta[1]
        out[0] += b * (a1 * jp[5] - a2 * jp[4])
        out[1] += b * (a2 * jp[3] - a0 * jp[5])
        out[2] += b * (a0 * jp[4] - a1 * jp[3])


# ----------------------------------------------------------------------------------------------
# per-state terms (terms.position_terms, terms.velocity_terms)
# ----------------------------------------------------------------------------------------------
@_J
def position_terms(pm, q, w):
    """Eqs 12–17 and 23 for every body, base to tip (:func:`flexdyn.terms.position_terms`),
    into ``w``: node frames (fR, fp, fE, fth), φ and its pose (R_phi, p_phi), A, ℋ, M_m, Q,
    X_joint, the pose of each body's own attach node (R_nc, p_nc) and of its parent's
    (R_t, p_t), and the joint subspaces S."""
    ints = pm.ints
    _copy(pm.M_m0, w.M_m)  # the constant terms, in bulk; the full kernel overwrites its own
    _copy(pm.X_joint0, w.X_joint)
    _copy(pm.Q0, w.Q)
    _copy(pm.A0, w.A)
    _copy(pm.T_t_R, w.R_t)
    _copy(pm.T_t_p, w.p_t)
    Rj, R1 = w.t_33[0], w.t_33[1]
    pj, p1 = w.t_3[0], w.t_3[1]
    for i in range(ints.shape[0]):
        m, nj, kind = ints[i, _M], ints[i, _NJ], ints[i, _KIND]
        R2, p2 = w.R_phi[i], w.p_phi[i]
        qs, nqj = ints[i, _QS], ints[i, _NQJ]
        if kind == FULL:
            _full_body_frames(pm, i, q[qs + nqj:qs + nqj + m], w)
            R_Jc, p_Jc = w.t_66[0, :3, :3], w.t_66[0, 3, :3]
            _full_joint_side(pm, i, w, R_Jc, p_Jc)
        else:
            R_Jc, p_Jc = pm.T_Jc_R[i], pm.T_Jc_p[i]
        # T_parent = placement ∘ joint(q) ∘ T_Jc,i;  φ(i) = T_parent.phi()
        _joint(ints[i, _JCODE], pm.jparam[i], q[qs:qs + nqj], Rj, pj, w.S[i], R1, R2)
        _compose3(pm.place_R[i], pm.place_p[i], Rj, pj, R1, p1)
        _compose3(R1, p1, R_Jc, p_Jc, R2, p2)
        _phi(R2, p2, w.phi[i])
        # ℋ(i) = [[0, H_F], [I, Qᵀ]],  H_F* = X S
        H, X, S = w.Hcal[i], w.X_joint[i], w.S[i]
        H[:nj + m, :m] = 0.0
        for r in range(nj):
            for c in range(6):
                s = 0.0
                for t in range(6):
                    s += X[c, t] * S[t, r]
                H[r, m + c] = s
        for k in range(m):
            H[nj + k, k] = 1.0
            for c in range(6):
                H[nj + k, m + c] = w.Q[i, c, k]
        pa = ints[i, _PARENT]
        if pa >= 0:
            if ints[pa, _KIND] == FULL and ints[i, _PN] >= 0:
                _full_attach_map(pm, i, pa, w)


@_JI
def _full_body_frames(pm, i, eta, w):
    """The full model's node frames at ``η`` and Eq 23 (``M_m``)."""
    m, nn = pm.ints[i, _M], pm.ints[i, _NN]
    for j in range(nn):
        _node_frame(pm.ints[i, _TK], pm.Pi_r[i, j], pm.Pi_t[i, j], pm.l0[i, j], eta, m,
                    w.fR[i, j], w.fp[i, j], w.fE[i, j], w.fth[i, j])
    _modal_mass(m, nn, pm.node_m[i], pm.node_I[i], pm.M_rigid[i], w.fR[i], w.fp[i],
                w.fE[i], w.t_X[:6, :m], w.M_m[i])


@_J
def _rotate_node_twist(R, p, x, out):
    """``out = X_nc x = [R x_r; p × R x_r + R x_t]`` (6,): a twist in node frame ``(R, p)``
    expressed in the body frame (``X_nc = [[R, 0], [p̃ R, R]]``)."""
    for r in range(3):
        out[r] = R[r, 0] * x[0] + R[r, 1] * x[1] + R[r, 2] * x[2]
    for r in range(3):
        out[3 + r] = R[r, 0] * x[3] + R[r, 1] * x[4] + R[r, 2] * x[5]
    out[3] += p[1] * out[2] - p[2] * out[1]
    out[4] += p[2] * out[0] - p[0] * out[2]
    out[5] += p[0] * out[1] - p[1] * out[0]


@_JI
def _full_joint_side(pm, i, w, R_Jc, p_Jc):
    """F_i in J_c (``child_placement ∘ T_nc⁻¹``), ``X`` (twists J_c → F_i) and
    ``Q = −X_nc E_c`` of the full model."""
    m, cn = pm.ints[i, _M], pm.ints[i, _CN]
    R_nc, p_nc = w.R_nc[i], w.p_nc[i]
    if cn >= 0:
        _copy(w.fR[i, cn], R_nc)
        _copy(w.fp[i, cn], p_nc)
    else:
        R_nc[:, :] = 0.0
        p_nc[:] = 0.0
        for r in range(3):
            R_nc[r, r] = 1.0
    cR, cp = pm.cplace_R[i], pm.cplace_p[i]
    for r in range(3):
        for c in range(3):
            R_Jc[r, c] = cR[r, 0] * R_nc[c, 0] + cR[r, 1] * R_nc[c, 1] + cR[r, 2] * R_nc[c, 2]
    for r in range(3):
        p_Jc[r] = cp[r] - (R_Jc[r, 0] * p_nc[0] + R_Jc[r, 1] * p_nc[1] + R_Jc[r, 2] * p_nc[2])
    p_F = w.t_3[0]  # origin of J_c in F_i: −R_Jcᵀ p_Jc
    for r in range(3):
        p_F[r] = -(R_Jc[0, r] * p_Jc[0] + R_Jc[1, r] * p_Jc[1] + R_Jc[2, r] * p_Jc[2])
    _motion_to_parent(R_Jc.T, p_F, w.X_joint[i])
    if cn >= 0:
        E, col = w.fE[i, cn], w.t_6[4]
        for k in range(m):
            _rotate_node_twist(R_nc, p_nc, E[:, k], col)
            for r in range(6):
                w.Q[i, r, k] = -col[r]


@_JI
def _full_attach_map(pm, i, pa, w):
    """``A(i) = [E_tᵀ; φ(p, t_i)]`` of a full parent's attach node, and its pose."""
    mp, pn = pm.ints[pa, _M], pm.ints[i, _PN]
    A = w.A[i]
    for r in range(mp):
        for c in range(6):
            A[r, c] = w.fE[pa, pn, c, r]
    _phi(w.fR[pa, pn], w.fp[pa, pn], A[mp:mp + 6])
    _copy(w.fR[pa, pn], w.R_t[i])
    _copy(w.fp[pa, pn], w.p_t[i])


@_J
def _modal_mass(m, nn, node_m, node_I, M_rigid, fR, fp, fE, ME, out):
    """Eq 23: ``M_m = Σ_j B_jᵀ M_s(j) B_j + [[0, 0], [0, M_rigid]]`` with
    ``B_j = [E_j, φ*(k, j)]`` and ``M_s(j) = diag(I_j, m_j 1)``, by blocks: ``E_jᵀ M_s E_j``,
    ``φ(k, j) M_s E_j`` and the node's rigid inertia
    ``[[R I Rᵀ + m (|p|² 1 − p pᵀ), m p̃], [−m p̃, m 1]]``; ``ME`` (6 × m) scratch."""
    s = m + 6
    out[:s, :s] = 0.0
    for j in range(nn):
        R, p, E, I, mj = fR[j], fp[j], fE[j], node_I[j], node_m[j]
        for k in range(m):
            for r in range(3):
                ME[r, k] = I[r, 0] * E[0, k] + I[r, 1] * E[1, k] + I[r, 2] * E[2, k]
                ME[3 + r, k] = mj * E[3 + r, k]
            for c in range(k, m):
                x = 0.0
                for r in range(6):
                    x += E[r, c] * ME[r, k]
                out[k, c] += x
            _node_wrench(R, p, E, 0, ME[:, k], out[k, m:s])
        p0, p1, p2 = p[0], p[1], p[2]
        pp = p0 * p0 + p1 * p1 + p2 * p2
        for r in range(3):
            T0 = R[r, 0] * I[0, 0] + R[r, 1] * I[1, 0] + R[r, 2] * I[2, 0]
            T1 = R[r, 0] * I[0, 1] + R[r, 1] * I[1, 1] + R[r, 2] * I[2, 1]
            T2 = R[r, 0] * I[0, 2] + R[r, 1] * I[1, 2] + R[r, 2] * I[2, 2]
            for c in range(r, 3):
                out[m + r, m + c] += (T0 * R[c, 0] + T1 * R[c, 1] + T2 * R[c, 2]
                                      - mj * p[r] * p[c])
            out[m + r, m + r] += mj * pp
            out[m + 3 + r, m + 3 + r] += mj
        out[m, m + 4] -= mj * p2
        out[m, m + 5] += mj * p1
        out[m + 1, m + 3] += mj * p2
        out[m + 1, m + 5] -= mj * p0
        out[m + 2, m + 3] -= mj * p1
        out[m + 2, m + 4] += mj * p0
    for r in range(6):
        for c in range(r, 6):
            out[m + r, m + c] += M_rigid[r, c]
    for r in range(s):
        for c in range(r + 1, s):
            out[c, r] = out[r, c]


# The helpers called per body take plain arrays: passing the packed model or the workspace
# (tuples of dozens of arrays) into a call that is not inlined copies all their headers.
@_J
def _from_parent(ints, A, i, X, out):
    """``out = Aᵀ(i) X(p)`` (6,): the twist or acceleration of the parent's attach frame."""
    pa = ints[i, _PARENT]
    mp = ints[pa, _M]
    if ints[i, _AT] == 1:
        for r in range(6):
            out[r] = X[pa, mp + r]
    else:
        _mtv(A[i, :mp + 6], X[pa, :mp + 6], out, False)


@_J
def _to_parent(ints, A, phi, i, f6, Y, t):
    """``Y(p) += A(i) φ(i) f6``: a wrench at F_i into the parent's modal forces; ``t`` (6,)
    scratch."""
    pa = ints[i, _PARENT]
    mp = ints[pa, _M]
    _mv(phi[i], f6, t, False)
    if ints[i, _AT] == 1:
        for r in range(6):
            Y[pa, mp + r] += t[r]
    else:
        _mv(A[i, :mp + 6], t, Y[pa, :mp + 6], True)


@_JI
def _modal_velocities(ints, Hcal, phi, A, u, Vm, t):
    """Eq 11: ``V_m(i) = Φ*(p, i) V_m(p) + ℋ*(i) χ(i)``."""
    for i in range(ints.shape[0]):
        m, nj, us = ints[i, _M], ints[i, _NJ], ints[i, _US]
        _mtv(Hcal[i, :nj + m, :m + 6], u[us:us + nj + m], Vm[i, :m + 6], False)
        if ints[i, _PARENT] >= 0:
            _from_parent(ints, A, i, Vm, t)
            _mtv(phi[i], t, Vm[i, m:m + 6], True)


@_J
def velocity_terms(pm, q, u, fext, w):
    """Eqs 11, 25, 37 and the elastic forces (:func:`flexdyn.terms.velocity_terms`) into
    ``w.V_m``, ``w.a_m`` and ``w.bias = b_m + [K η + C η̇; 0] − [0; f_ext]``; the ruthless
    kernel lets no modal rate into the velocity products (Eq B1)."""
    ints = pm.ints
    n = ints.shape[0]
    w.a_m[:] = 0.0  # accumulated below
    w.bias[:] = 0.0
    _modal_velocities(ints, w.Hcal, w.phi, w.A, u, w.V_m, w.t_6[0])
    _copy(u, w.u_nl)
    ruthless = False
    for i in range(n):
        if ints[i, _KIND] == RUTHLESS and ints[i, _M] > 0:
            s = ints[i, _US] + ints[i, _NJ]
            w.u_nl[s:s + ints[i, _M]] = 0.0
            ruthless = True
    V_nl = w.V_m
    if ruthless:
        V_nl = w.V_nl
        _modal_velocities(ints, w.Hcal, w.phi, w.A, w.u_nl, V_nl, w.t_6[0])
    HFb, tmp, V_rel = w.t_6[0], w.t_6[1], w.t_6[2]
    for i in range(n):
        m, nj, us, kind = ints[i, _M], ints[i, _NJ], ints[i, _US], ints[i, _KIND]
        qs, nqj = ints[i, _QS], ints[i, _NQJ]
        beta = w.u_nl[us:us + nj]
        etad = w.u_nl[us + nj:us + nj + m]
        V = V_nl[i, m:m + 6]
        aV = w.a_m[i, m:m + 6]
        pa, pn = ints[i, _PARENT], ints[i, _PN]
        if pa >= 0 and pn >= 0 and ints[pa, _KIND] == FULL and ints[pa, _M] > 0:
            _full_parent_rate(pm, w, i, V_nl, aV)
        if nj > 0:  # (V − Q η̇) × H_F* β  +  X Ḣ* β
            H = w.Hcal[i]
            for c in range(6):
                s = 0.0
                for r in range(nj):
                    s += H[r, m + c] * beta[r]
                HFb[c] = s
                s = V[c]
                for k in range(m):
                    s -= w.Q[i, c, k] * etad[k]
                V_rel[c] = s
            _cross_motion(V_rel, HFb, aV, True)
            code = ints[i, _JCODE]
            if code == _UNIVERSAL or (code == _PRODUCT and _block_end(pm.jparam[i], 0, nj) < nj):
                tmp[:] = 0.0
                if code == _UNIVERSAL:
                    _joint_rate(code, pm.jparam[i], q[qs:qs + nqj], beta, tmp, w.t_33[0])
                else:
                    _product_rate(pm.jparam[i], w.S[i], beta, nj, tmp, w.t_33[0])
                _mv(w.X_joint[i], tmp, aV, True)
        if kind == FULL and ints[i, _CN] >= 0 and m > 0:
            _full_own_rate(pm, w, i, etad, V, aV)
        if kind == FULL:
            _full_modal_bias(ints[i, _TK], m, ints[i, _NN], pm.node_m[i], pm.node_I[i],
                             pm.M_rigid[i], pm.Pi_r[i], w.fR[i], w.fp[i], w.fE[i], w.fth[i],
                             etad, V, w.t_6[4:8], w.t_tip, w.bias[i])
        else:
            _modal_bias(kind, m, pm.M_m0[i], pm.B_quad[i], V, w.t_6[3], w.bias[i])
        eta = q[qs + nqj:qs + nqj + m]
        etad_true = u[us + nj:us + nj + m]
        b = w.bias[i]
        for r in range(m):
            s = b[r]
            for k in range(m):
                s += pm.K[i, r, k] * eta[k] + pm.C[i, r, k] * etad_true[k]
            b[r] = s
        if ints[i, _GS] > 0:
            _geometric_force(pm, i, m, eta, b)
        for r in range(6):
            b[m + r] -= fext[i, r]


@_JI
def _geometric_force(pm, i, m, eta, b):
    """``b[:m] += rows · (K1(η) η / 2 [+ K2(η, η) η / 6 for the exact model])``: the geometric
    part of Damaren & Sharf's Eq 20 (:mod:`flexdyn.stiffening`)."""
    K1, K2, rows = pm.K1[i], pm.K2[i], pm.gs_rows[i]
    exact = pm.ints[i, _GS] == EXACT
    for r in range(m):
        if rows[r] == 0.0:
            continue
        s = 0.0
        for j in range(m):
            for k in range(m):
                ejk = eta[j] * eta[k]
                t = 0.5 * K1[r, j, k]
                if exact:
                    for c in range(m):
                        t += K2[r, j, k, c] * eta[c] / 6.0
                s += t * ejk
        b[r] += s


@_JI
def geometric_tangent(pm, i, m, eta, out):
    """``out[r, l] += ∂/∂η_l`` of ``_geometric_force``'s term (m × m):
    ``rows_r (K1_rlk + K1_rkl) η_k / 2``, for the exact model plus
    ``rows_r (K2_rljk + K2_rjlk + K2_rjkl) η_j η_k / 6`` (the tangent stiffness of Damaren &
    Sharf's Eq 20 less ``K0``)."""
    K1, K2, rows = pm.K1[i], pm.K2[i], pm.gs_rows[i]
    exact = pm.ints[i, _GS] == EXACT
    for r in range(m):
        if rows[r] == 0.0:
            continue
        for c in range(m):
            t = 0.0
            for k in range(m):
                t += 0.5 * (K1[r, c, k] + K1[r, k, c]) * eta[k]
                if exact:
                    for j in range(m):
                        t += ((K2[r, c, j, k] + K2[r, j, c, k] + K2[r, j, k, c])
                              * eta[j] * eta[k] / 6.0)
            out[r, c] += rows[r] * t


@_J
def strain_energy(pm, i, m, eta):
    """``½ ηᵀ K η`` of body ``i`` with the geometric terms of its model: ``+ K1·η³/3!`` for
    the consistent and exact models, ``+ K2·η⁴/4!`` for the exact one."""
    K = pm.K[i]
    energy = 0.0
    for r in range(m):
        for c in range(m):
            energy += 0.5 * eta[r] * K[r, c] * eta[c]
    if pm.ints[i, _GS] > 0:
        exact = pm.ints[i, _GS] == EXACT
        for r in range(m):
            for j in range(m):
                for k in range(m):
                    e3 = eta[r] * eta[j] * eta[k]
                    energy += pm.K1[i, r, j, k] * e3 / 6.0
                    if exact:
                        for c in range(m):
                            energy += pm.K2[i, r, j, k, c] * e3 * eta[c] / 24.0
    return energy


@_JI
def _full_parent_rate(pm, w, i, V_nl, aV):
    """``aV += φᵀ(Ė_t η̇_p + V_t × E_t η̇_p)`` for a body on a full parent's node."""
    pa, pn = pm.ints[i, _PARENT], pm.ints[i, _PN]
    mp = pm.ints[pa, _M]
    s = pm.ints[pa, _US] + pm.ints[pa, _NJ]
    V_t, w_t, eps = w.t_6[4], w.t_6[5], w.t_6[6]
    _mtv(w.A[i, :mp + 6], V_nl[pa, :mp + 6], V_t, False)
    _node_twist_rate(pm.ints[pa, _TK], w.fth[pa, pn], pm.Pi_r[pa, pn], w.fE[pa, pn],
                     w.u_nl[s:s + mp], mp, eps, w_t, w.t_tip)
    _cross_motion(V_t, w_t, eps, True)
    _mtv(w.phi[i], eps, aV, True)


@_JI
def _full_own_rate(pm, w, i, etad, V, aV):
    """``aV += V × Q η̇ − X_nc Ė_c η̇`` of a full body on its own attach node."""
    m, cn = pm.ints[i, _M], pm.ints[i, _CN]
    eps, w_c, Xe, Qe = w.t_6[4], w.t_6[5], w.t_6[6], w.t_6[7]
    _node_twist_rate(pm.ints[i, _TK], w.fth[i, cn], pm.Pi_r[i, cn], w.fE[i, cn], etad, m,
                     eps, w_c, w.t_tip)
    _rotate_node_twist(w.R_nc[i], w.p_nc[i], eps, Xe)
    _mv(w.Q[i, :, :m], etad, Qe, False)
    _cross_motion(V, Qe, aV, True)
    for r in range(6):
        aV[r] -= Xe[r]


@_J
def _modal_bias(kind, m, M_m0, B_quad, V, MV, out):
    """``b_m`` (Eq 37) of the rigid and ruthless body kernels into ``out`` (zero on entry):
    ``V ×* M V``, or ``[Vᵀ B_μ V; V ×* M⁰_rr V]`` (Eq B1); ``MV`` (6,) scratch."""
    if kind == RUTHLESS:
        for k in range(m):
            B = B_quad[k]
            s = 0.0
            for r in range(6):
                for c in range(6):
                    s += V[r] * B[r, c] * V[c]
            out[k] = s
    _mv(M_m0[m:m + 6, m:m + 6], V, MV, False)
    _cross_force(V, MV, out[m:m + 6], False)


@_J
def _full_modal_bias(tk, m, nn, node_m, node_I, M_rigid, Pi_r, fR, fp, fE, fth, etad, V, t,
                     t_tip, out):
    """The full model's ``b_m``: ``V ×* M_rigid V`` plus ``Σ_j B_jᵀ (M_s a_j + V_j ×* M_s V_j)``
    over the nodes, with the node twist ``V_j = B_j [η̇; V]`` and its velocity-dependent
    acceleration ``a_j = Ė_j η̇ + V_j × E_j η̇`` (tip kinematics ``tk``); ``t`` (4, 6) and
    ``t_tip`` (4, 3) scratch."""
    Vs, acc, wj, y = t[0], t[1], t[2], t[3]
    _mv(M_rigid, V, y, False)
    _cross_force(V, y, out[m:m + 6], False)
    for j in range(nn):
        R, p, E = fR[j], fp[j], fE[j]
        _node_twist(R, p, E, m, etad, V, Vs)
        _node_twist_rate(tk, fth[j], Pi_r[j], E, etad, m, acc, wj, t_tip)
        _cross_motion(Vs, wj, acc, True)
        I, mj = node_I[j], node_m[j]
        for r in range(3):  # M_s V_j, then y = M_s a_j + V_j ×* M_s V_j
            wj[r] = I[r, 0] * Vs[0] + I[r, 1] * Vs[1] + I[r, 2] * Vs[2]
            wj[3 + r] = mj * Vs[3 + r]
        _cross_force(Vs, wj, y, False)
        for r in range(3):
            y[r] += I[r, 0] * acc[0] + I[r, 1] * acc[1] + I[r, 2] * acc[2]
            y[3 + r] += mj * acc[3 + r]
        _node_wrench(R, p, E, m, y, out)


# ----------------------------------------------------------------------------------------------
# generic sweeps
# ----------------------------------------------------------------------------------------------
@_JI
def _gravity_acceleration(pm, out):
    """``a_g = [0; −g]``: the base accelerates upward instead of gravity pulling down."""
    for r in range(3):
        out[r] = 0.0
        out[3 + r] = -pm.gravity[r]


@_J
def _parent_acceleration(ints, A, phi, alpha, i, a_g, out, t):
    """``Φ*(p, i)`` applied to the parent's modal acceleration (or to ``a_g`` at a root):
    ``out = φᵀ(i) Aᵀ(i) α(p)`` (6,); ``t`` (6,) scratch."""
    if ints[i, _PARENT] >= 0:
        _from_parent(ints, A, i, alpha, t)
        _mtv(phi[i], t, out, False)
    else:
        _mtv(phi[i], a_g, out, False)


@_J
def rnea(pm, w, udot, gravity, T):
    """Eq 44: ``T = ℋ f_m`` with ``f_m = Σ_c Φ f_m(c) + M_m α_m + bias``
    (:func:`flexdyn.newton_euler.rnea`), from the terms in ``w``."""
    ints = pm.ints
    n = ints.shape[0]
    a_g = w.t_6[2]
    if gravity:
        _gravity_acceleration(pm, a_g)
    else:
        a_g[:] = 0.0
    for i in range(n):  # base-to-tip, Eq 24
        m, nj, us = ints[i, _M], ints[i, _NJ], ints[i, _US]
        s = m + 6
        al = w.alpha[i, :s]
        al[:m] = 0.0
        _parent_acceleration(ints, w.A, w.phi, w.alpha, i, a_g, al[m:], w.t_6[1])
        for r in range(6):
            al[m + r] += w.a_m[i, m + r]
        _mtv(w.Hcal[i, :nj + m, :s], udot[us:us + nj + m], al, True)
        fi = w.f[i, :s]
        _copy(w.bias[i, :s], fi)
        _mv(w.M_m[i, :s, :s], al, fi, True)
    for i in range(n - 1, -1, -1):  # tip-to-base, Eqs 36, 41
        m, nj, us = ints[i, _M], ints[i, _NJ], ints[i, _US]
        _mv(w.Hcal[i, :nj + m, :m + 6], w.f[i, :m + 6], T[us:us + nj + m], False)
        if ints[i, _PARENT] >= 0:
            _to_parent(ints, w.A, w.phi, i, w.f[i, m:m + 6], w.f, w.t_6[3])


@_J
def _attach_congruence(Et, R_t, p_t, R, p, X, out, T, Y, EY):
    """``out += A φ X φᵀ Aᵀ`` ((m + 6) × (m + 6)) for ``A = [E_t*; φ(t)]`` (Eqs 12, 14: the
    parent's attach node ``t`` of pose ``(R_t, p_t)``, ``Et`` = ``E_t*`` (m × 6)), φ of pose
    ``(R, p)`` and a symmetric ``X``: with ``Y = φ X φᵀ`` (``_pose_congruence``) the blocks
    ``[[E_t* Y E_t, E_t* Y φ(t)ᵀ], [φ(t) Y E_t, φ(t) Y φ(t)ᵀ]]``, the modal block by its
    upper triangle: about 720 flops for m = 4 against 1320 for forming ``A φ`` and its
    congruence.  ``T`` (3, 3, 3), ``Y`` (6 × 6) and ``EY`` ((m + 1) × 6) scratch."""
    m = Et.shape[0]
    Y[:, :] = 0.0
    _pose_congruence(R, p, X, Y, T)
    _pose_congruence(R_t, p_t, Y, out[m:, m:], T)
    col = EY[m]
    for k in range(m):
        row = EY[k]  # E_t* Y, row k
        for c in range(6):
            x = 0.0
            for r in range(6):
                x += Et[k, r] * Y[r, c]
            row[c] = x
        for c in range(k, m):
            x = 0.0
            for r in range(6):
                x += row[r] * Et[c, r]
            out[k, c] += x
            if c > k:
                out[c, k] += x
        col[:] = 0.0
        _node_wrench(R_t, p_t, Y, 0, row, col)  # φ(t) Y E_t, column k
        for r in range(6):
            out[m + r, k] += col[r]
            out[k, m + r] += col[r]


@_J
def _child_inertia(ints, A, R_t, p_t, R_phi, p_phi, P, i, X, T, Y, EY):
    """``P(p) += A φ X φᵀ Aᵀ``: a child's symmetric 6 × 6 inertia ``X`` at F_i into its
    parent's, from φ's pose (``_pose_congruence``) where ``A`` is trivial, else with
    ``A``'s structure (``_attach_congruence``); ``T`` (3, 3, 3), ``Y`` (6 × 6) and ``EY``
    ((M + 1) × 6) scratch."""
    pa = ints[i, _PARENT]
    mp = ints[pa, _M]
    if ints[i, _AT] == 1:
        _pose_congruence(R_phi[i], p_phi[i], X, P[pa, mp:mp + 6, mp:mp + 6], T)
    else:
        _attach_congruence(A[i, :mp], R_t[i], p_t[i], R_phi[i], p_phi[i], X,
                           P[pa, :mp + 6, :mp + 6], T, Y, EY[:mp + 1])


@_J
def composite_inertias(pm, w):
    """Eq 47: ``R(i) = M_m(i) + Σ_c A φ R_rr(c) φᵀ Aᵀ`` into ``w.P``."""
    ints = pm.ints
    _copy(w.M_m, w.P)
    for i in range(ints.shape[0] - 1, -1, -1):
        pa = ints[i, _PARENT]
        if pa >= 0:
            m = ints[i, _M]
            _copy(w.P[i, m:m + 6, m:m + 6], w.t_66[0])
            _child_inertia(ints, w.A, w.R_t, w.p_t, w.R_phi, w.p_phi, w.P, i, w.t_66[0],
                           w.t_33, w.t_66[1], w.t_EY)


@_J
def crba(pm, w, Mass):
    """Eqs 47, 50: composite inertias and the mass matrix (:func:`flexdyn.composite_body.crba`)
    into ``Mass`` (nu × nu)."""
    ints = pm.ints
    composite_inertias(pm, w)
    Mass[:, :] = 0.0  # blocks of bodies on different branches stay zero
    for i in range(ints.shape[0]):
        m, nj, us = ints[i, _M], ints[i, _NJ], ints[i, _US]
        k, s = nj + m, m + 6
        H = w.Hcal[i, :k, :s]
        X = w.t_X[:s, :k]
        _mmt(w.P[i, :s, :s], H, X, False)
        _mm(H, X, Mass[us:us + k, us:us + k])
        b, j = i, ints[i, _PARENT]
        while j >= 0:  # X ← A φ X_rr up the path; M(j, i) = ℋ(j) X
            mb, mj, njj, usj = ints[b, _M], ints[j, _M], ints[j, _NJ], ints[j, _US]
            Y = w.t_Y[:6, :k]
            _mm(w.phi[b], X[mb:mb + 6], Y)
            X = w.t_X[:mj + 6, :k]
            if ints[b, _AT] == 1:
                X[:mj] = 0.0
                _copy(Y, X[mj:])
            else:
                _mm(w.A[b, :mj + 6], Y, X)
            blk = Mass[usj:usj + njj + mj, us:us + k]
            _mm(w.Hcal[j, :njj + mj, :mj + 6], X, blk)
            _copy(blk.T, Mass[us:us + k, usj:usj + njj + mj])
            b, j = j, ints[j, _PARENT]


@_J
def cholesky_solve(Mass, b, x):
    """``M x = b`` by Cholesky into ``x``; False when a squared pivot is at most
    ``MASS_MATRIX_RTOL · M_kk`` (:func:`flexdyn.linalg.cholesky_solve`); ``Mass`` is
    overwritten by its factor."""
    if not cholesky_factor(Mass, MASS_MATRIX_RTOL):
        return False
    cholesky_substitute(Mass, b, x)
    return True


@_J
def cholesky_factor(A, rtol):
    """``A = L Lᵀ`` in place (``L`` in the lower triangle; the upper one is left as it
    was); False when a squared pivot is at most ``rtol · A_kk`` (``MASS_MATRIX_RTOL`` for a
    mass matrix)."""
    n = A.shape[0]
    L = A
    for j in range(n):
        s = L[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > rtol * abs(L[j, j]):
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            s = L[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@_J
def cholesky_substitute(L, b, x):
    """``x = (L Lᵀ)⁻¹ b`` with the factor of :func:`cholesky_factor` (``x`` may be ``b``)."""
    n = L.shape[0]
    _copy(b, x)
    for i in range(n):
        for k in range(i):
            x[i] -= L[i, k] * x[k]
        x[i] /= L[i, i]
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            x[i] -= L[k, i] * x[k]
        x[i] /= L[i, i]


@_J
def lu_factor(A, piv):
    """``P A = L U`` in place by Gaussian elimination with partial pivoting (LAPACK
    ``getrf``): ``L`` (unit diagonal) below and ``U`` on and above the diagonal of ``A``,
    the row swaps in ``piv`` (int, k); False when a pivot is zero."""
    k = A.shape[0]
    for j in range(k):
        p = j
        for r in range(j + 1, k):
            if abs(A[r, j]) > abs(A[p, j]):
                p = r
        piv[j] = p
        if A[p, j] == 0.0:
            return False
        if p != j:
            for c in range(k):
                A[j, c], A[p, c] = A[p, c], A[j, c]
        for r in range(j + 1, k):
            f = A[r, j] / A[j, j]
            A[r, j] = f
            for c in range(j + 1, k):
                A[r, c] -= f * A[j, c]
    return True


@_J
def lu_substitute(A, piv, B):
    """``B = A⁻¹ B`` (k × r right-hand sides) in place with the factors of
    :func:`lu_factor`: the row swaps, then ``L`` forward and ``U`` backward (LAPACK
    ``getrs``), row by row."""
    k, n = A.shape[0], B.shape[1]
    for j in range(k):
        p = piv[j]
        if p != j:
            for c in range(n):
                B[j, c], B[p, c] = B[p, c], B[j, c]
    for j in range(k):
        for r in range(j + 1, k):
            f = A[r, j]
            for c in range(n):
                B[r, c] -= f * B[j, c]
    for j in range(k - 1, -1, -1):
        for t in range(j + 1, k):
            f = A[j, t]
            for c in range(n):
                B[j, c] -= f * B[t, c]
        d = A[j, j]
        for c in range(n):
            B[j, c] /= d


@_J
def _inertia_scale(P, H, skip=None):
    """``max|P| · max_r ‖H_r‖²`` (:func:`flexdyn.linalg.inertia_scale`); 0 for an empty
    ``H``.  ``skip`` (optional, (rows,) or empty): rows ``r`` with ``skip[r] ≠ 0`` are left
    out (the prescribed rows of hybrid dynamics)."""
    if H.shape[0] == 0 or H.shape[1] == 0:
        return 0.0
    hmax = 0.0
    for r in range(H.shape[0]):
        if skip is not None:
            if skip.shape[0] > 0 and skip[r] != 0.0:
                continue
        h = 0.0
        for c in range(H.shape[1]):
            h += H[r, c] * H[r, c]
        hmax = max(hmax, h)
    pmax = 0.0
    for r in range(P.shape[0]):
        for c in range(P.shape[1]):
            pmax = max(pmax, abs(P[r, c]))
    return pmax * hmax


@_J
def _spd_inverse(D, scale, L, Dinv):
    """``Dinv = D⁻¹`` by Cholesky with the reference's singularity test
    (:func:`flexdyn.linalg.spd_inverse`): a squared pivot at most
    ``max(PIVOT_RTOL · max diag D, PIVOT_FLOOR · scale)`` fails (False); ``L`` scratch."""
    k = D.shape[0]
    dmax = 0.0
    for j in range(k):
        dmax = max(dmax, abs(D[j, j]))
    tol = max(PIVOT_RTOL * dmax, PIVOT_FLOOR * scale, 2.2250738585072014e-308)
    for j in range(k):
        s = D[j, j]
        for r in range(j):
            s -= L[j, r] * L[j, r]
        if not s > tol:
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, k):
            s = D[i, j]
            for r in range(j):
                s -= L[i, r] * L[j, r]
            L[i, j] = s / d
    for c in range(k):  # L⁻¹ into the upper triangle of Dinv (transposed), then Dinv = L⁻ᵀL⁻¹
        for r in range(k):
            Dinv[r, c] = 0.0
    for c in range(k):
        Dinv[c, c] = 1.0 / L[c, c]
        for r in range(c + 1, k):
            s = 0.0
            for t in range(c, r):
                s -= L[r, t] * Dinv[c, t]
            Dinv[c, r] = s / L[r, r]
    for r in range(k):  # (L⁻ᵀ L⁻¹)[r, c] = Σ_t Li[t, r] Li[t, c], Li[t, r] = Dinv[r, t]
        for c in range(r, k):
            s = 0.0
            for t in range(c, k):
                s += Dinv[r, t] * Dinv[c, t]
            L[r, c] = s
    for r in range(k):
        for c in range(r, k):
            Dinv[r, c] = L[r, c]
            Dinv[c, r] = L[r, c]
    return True


@_J
def articulated_inertias(pm, w, tau, prescribed, udot_known):
    """Eq 51 and the filter, tip to base: ``P``, ``D⁻¹``, ``G``, ``ν = D⁻¹ ε`` into ``w``,
    each body's ``z⁺`` and ``τ̄ P`` passed to its parent; the index of the first body whose
    ``D`` is singular, or −1.  A rigid body on a one-dof joint takes a step with fixed
    6 × 6 blocks (``_rigid_one_dof_step``), any other body the general step
    (``_articulated_step``).

    Hybrid dynamics (:mod:`flexdyn.hybrid`): ``prescribed`` (nu,) is 1.0 where the
    acceleration is given by ``udot_known`` (nu,) and 0.0 where the force ``tau`` is; None
    (both None) or empty: every entry free (Eq 51).  A body with prescribed rows ``K`` takes
    ``_prescribed_step``: the general step with its mask (the rows ``K`` of ``ℋ`` are
    kept out of ``D``, ``G`` and ``τ̄ P``), its known accelerations entering the filter as
    ``a_m + ℋ_K* χ̇_K`` (in ``w.alpha``, which the smoother overwrites), and ``ν`` holding
    ``χ̇_K`` on the rows ``K``: with ``G``'s columns ``K`` zero,
    :func:`articulated_accelerations` returns them as given.  With None, numba prunes the
    hybrid branch: forward dynamics passes None and compiles no hybrid step."""
    ints = pm.ints
    _copy(w.M_m, w.P)  # the children's inertias are added to their parents' below
    w.z[:] = 0.0
    zp, Pr = w.t_6[0], w.t_66[0]
    for i in range(ints.shape[0] - 1, -1, -1):
        m, nj, us, pa = ints[i, _M], ints[i, _NJ], ints[i, _US], ints[i, _PARENT]
        k, s = nj + m, m + 6
        if prescribed is not None and _any(prescribed[us:us + k]):
            ok = _prescribed_step(w.P[i, :s, :s], w.Hcal[i, :k, :s], m, nj, w.a_m[i, :s],
                                  w.bias[i, :s], tau[us:us + k], w.z[i, :s], w.G[i, :s, :k],
                                  w.innov[i, :k], w.t_PH[:s, :k], w.t_D[:k, :k],
                                  w.t_L[:k, :k], w.t_Li[:k, :k], w.t_v[:k], zp, Pr,
                                  prescribed[us:us + k], udot_known[us:us + k],
                                  w.alpha[i, :s])
        elif m == 0 and nj == 1:
            ok = _rigid_one_dof_step(w.P[i, :6, :6], w.Hcal[i, 0, :6], w.a_m[i, :6],
                                     w.bias[i, :6], tau[us], w.z[i, :6], w.G[i, :6, 0],
                                     w.innov[i, :1], w.t_6[1], zp, Pr)
        else:
            ok = _articulated_step(w.P[i, :s, :s], w.Hcal[i, :k, :s], m, nj, w.a_m[i, :s],
                                   w.bias[i, :s], tau[us:us + k], w.z[i, :s], w.G[i, :s, :k],
                                   w.innov[i, :k], w.t_PH[:s, :k], w.t_D[:k, :k],
                                   w.t_L[:k, :k], w.t_Li[:k, :k], w.t_v[:k], zp, Pr, None)
        if not ok:
            return i
        if pa >= 0:
            _to_parent(ints, w.A, w.phi, i, zp, w.z, w.t_6[3])
            _child_inertia(ints, w.A, w.R_t, w.p_t, w.R_phi, w.p_phi, w.P, i, Pr, w.t_33,
                           w.t_66[1], w.t_EY)
    return -1


@_J
def _prescribed_step(P, H, m, nj, a_m, b, tau, z, G, innov, PH, D, L, Dinv, eps, zp, Pr,
                     known, udot, a):
    """``_articulated_step`` of a body with prescribed rows ``K`` (``known[r] ≠ 0``,
    accelerations ``udot`` (k,)): with ``a = a_m + ℋ_K* χ̇_K`` (``_prescribed_acceleration``,
    into ``a`` (s,)) and the mask ``known``, then ``ν`` = ``χ̇_K`` on the rows ``K``."""
    _prescribed_acceleration(H, known, udot, a_m, a)
    if not _articulated_step(P, H, m, nj, a, b, tau, z, G, innov, PH, D, L, Dinv, eps, zp, Pr,
                             known):
        return False
    for r in range(known.shape[0]):
        if known[r] != 0.0:
            innov[r] = udot[r]
    return True


@_J
def _any(x):
    """Whether some entry of the vector ``x`` is nonzero."""
    for v in x:
        if v != 0.0:
            return True
    return False


@_J
def _prescribed_acceleration(H, known, udot, a_m, out):
    """``out = a_m + ℋ_K* χ̇_K`` (s,): the accelerations of the prescribed rows ``K``
    (``known[r] ≠ 0``) of ``ℋ`` (k × s) enter the filter like the velocity-product
    accelerations ``a_m`` (:mod:`flexdyn.hybrid`)."""
    _copy(a_m, out)
    for r in range(H.shape[0]):
        if known[r] != 0.0:
            x = udot[r]
            for c in range(H.shape[1]):
                out[c] += H[r, c] * x


@_J
def _articulated_step(P, H, m, nj, a, b, tau, z, G, innov, PH, D, L, Dinv, eps, zp, Pr, known):
    """Eq 51 and the filter for one body with ``P`` (s × s) its articulated inertia and ``z``
    (s,) the children's forces: ``D = ℋ P ℋ*``, ``G = P ℋ* D⁻¹``, ``z += P a + b``,
    ``ε = T − ℋ z``, ``ν = D⁻¹ ε`` into ``innov``; the rigid rows of ``z⁺ = z + G ε`` into
    ``zp`` and the rigid block of ``τ̄ P = P − G (P ℋ*)ᵀ``, symmetrized, into ``Pr``; False
    when ``D`` is singular (``_spd_inverse``).  ``PH``, ``D``, ``L``, ``Dinv``, ``eps``
    scratch.

    ``known`` (k,) or None: the rows ``r`` with ``known[r] ≠ 0`` are prescribed (hybrid
    dynamics) and kept out of the reduction by ``ℋ̃`` = ``ℋ`` with those rows zeroed:
    ``P ℋ̃*`` has zero columns ``K`` and ``D̃ = ℋ̃ P ℋ̃* + d 1_K`` (``_keep_out``) is
    ``D_F`` beside ``d`` on the rows ``K``, so ``G̃ = P ℋ̃* D̃⁻¹ = [G_F, 0]`` and
    ``τ̄ P = P − G_F (P ℋ_F*)ᵀ``: exactly the free rows' reduction, with the free rows'
    singularity test (the inertia scale over the free rows; ``d`` = the largest free
    diagonal entry).  ``ν`` on the rows ``K`` is meaningless (the caller sets it)."""
    k, s = H.shape[0], P.shape[0]
    _P_Hcal_t(P, H, m, nj, PH)
    if known is not None:
        for c in range(k):
            if known[c] != 0.0:
                PH[:, c] = 0.0
    _Hcal_X(H, PH, m, nj, D)
    if known is not None:
        _keep_out(D, known)
    if not _spd_inverse(D, _inertia_scale(P, H, known), L, Dinv):
        return False
    _mm(PH, Dinv, G)
    _mv(P, a, z, True)  # z = Σ_c Φ z⁺(c) + P a + b
    for r in range(s):
        z[r] += b[r]
    _copy(tau, eps)
    _sub_mv(H, z, eps)
    _mv(Dinv, eps, innov, False)
    for r in range(6):
        t = z[m + r]
        for c in range(k):
            t += G[m + r, c] * eps[c]
        zp[r] = t
    for r in range(6):
        for c in range(6):
            t = P[m + r, m + c]
            for j in range(k):
                t -= G[m + r, j] * PH[m + c, j]
            Pr[r, c] = t
    _symmetrize(Pr)
    return True


@_J
def _keep_out(D, known):
    """``D`` (k × k) with the rows and columns ``r`` of ``known[r] ≠ 0`` replaced by
    ``d`` on the diagonal, ``d`` the largest diagonal entry of the other rows (1 if there
    are none): block-diagonal up to the order of the rows, so its Cholesky factor is the
    free block's and ``_spd_inverse``'s tolerance is the free block's."""
    k = D.shape[0]
    d = 0.0
    for r in range(k):
        if known[r] == 0.0:
            d = max(d, abs(D[r, r]))
    if not d > 0.0:
        d = 1.0
    for r in range(k):
        if known[r] != 0.0:
            for c in range(k):
                D[r, c] = 0.0
                D[c, r] = 0.0
            D[r, r] = d


@_J
def _rigid_one_dof_step(P, h, a, b, tau, z, G, innov, PH, zp, Pr):
    """``_articulated_step`` of a rigid body (``m = 0``, ``s = 6``) on a one-dof joint
    (``ℋ = h``, one row; ``D`` a scalar), with fixed 6 × 6 loops; the same singularity test
    (a pivot at most ``max(PIVOT_RTOL · D, PIVOT_FLOOR · max|P| |h|²)``); ``PH`` (6,)
    scratch."""
    D = 0.0
    hh = 0.0
    pmax = 0.0
    for r in range(6):
        t = 0.0
        for c in range(6):
            t += P[r, c] * h[c]
            pmax = max(pmax, abs(P[r, c]))
        PH[r] = t
        D += h[r] * t
        hh += h[r] * h[r]
    if not D > max(PIVOT_RTOL * abs(D), PIVOT_FLOOR * pmax * hh, 2.2250738585072014e-308):
        return False
    Dinv = 1.0 / D
    eps = tau
    for r in range(6):
        t = b[r]
        for c in range(6):
            t += P[r, c] * a[c]
        z[r] += t
        eps -= h[r] * z[r]
    innov[0] = Dinv * eps
    for r in range(6):
        G[r] = PH[r] * Dinv
        zp[r] = z[r] + G[r] * eps
        for c in range(6):
            Pr[r, c] = P[r, c] - G[r] * PH[c]
    _symmetrize(Pr)
    return True


@_J
def _symmetrize(X):
    """``X ← (X + Xᵀ) / 2`` for a square block (:func:`flexdyn.linalg.sym`)."""
    for r in range(X.shape[0]):
        for c in range(r + 1, X.shape[0]):
            t = 0.5 * (X[r, c] + X[c, r])
            X[r, c] = t
            X[c, r] = t


@_J
def _P_Hcal_t(P, H, m, nj, out):
    """``out = P ℋᵀ`` (s × k) using the structure ``ℋ = [[0, H_F], [1, Qᵀ]]``: the columns
    are ``P[:, m:] ℋ[r, m:]ᵀ``, plus ``P[:, r − nj]`` for the modal rows (6 s k products
    instead of s² k)."""
    s, k = P.shape[0], H.shape[0]
    for r in range(s):
        p0, p1, p2 = P[r, m], P[r, m + 1], P[r, m + 2]
        p3, p4, p5 = P[r, m + 3], P[r, m + 4], P[r, m + 5]
        for c in range(k):
            out[r, c] = (p0 * H[c, m] + p1 * H[c, m + 1] + p2 * H[c, m + 2]
                         + p3 * H[c, m + 3] + p4 * H[c, m + 4] + p5 * H[c, m + 5])
        for c in range(m):
            out[r, nj + c] += P[r, c]


@_J
def _Hcal_X(H, X, m, nj, out):
    """``out = ℋ X`` ((k × c) from X (s × c)) using the structure of ℋ (see
    ``_P_Hcal_t``)."""
    k = H.shape[0]
    for r in range(k):
        h0, h1, h2 = H[r, m], H[r, m + 1], H[r, m + 2]
        h3, h4, h5 = H[r, m + 3], H[r, m + 4], H[r, m + 5]
        for c in range(X.shape[1]):
            out[r, c] = (h0 * X[m, c] + h1 * X[m + 1, c] + h2 * X[m + 2, c]
                         + h3 * X[m + 3, c] + h4 * X[m + 4, c] + h5 * X[m + 5, c])
    for r in range(m):
        for c in range(X.shape[1]):
            out[nj + r, c] += X[r, c]


@_J
def _sub_mv(a, x, out):
    """``out −= a x``."""
    for i in range(a.shape[0]):
        s = out[i]
        for t in range(a.shape[1]):
            s -= a[i, t] * x[t]
        out[i] = s


@_J
def articulated_accelerations(pm, w, udot):
    """Eq 58, base to tip: ``χ = ν − Gᵀ a⁺``, ``α = a⁺ + ℋ* χ + a`` into ``udot``."""
    ints = pm.ints
    a_g = w.t_6[2]
    _gravity_acceleration(pm, a_g)
    for i in range(ints.shape[0]):
        m, nj, us = ints[i, _M], ints[i, _NJ], ints[i, _US]
        k, s = nj + m, m + 6
        al = w.alpha[i, :s]
        al[:m] = 0.0
        _parent_acceleration(ints, w.A, w.phi, w.alpha, i, a_g, al[m:], w.t_6[1])
        if m == 0 and nj == 1:
            udot[us] = _rigid_one_dof_acceleration(w.G[i, :6, 0], w.Hcal[i, 0, :6],
                                                   w.a_m[i, :6], w.innov[i, 0], al)
            continue
        chi = udot[us:us + k]
        _copy(w.innov[i, :k], chi)
        _sub_mtv(w.G[i, :s, :k], al, chi)
        _mtv(w.Hcal[i, :k, :s], chi, al, True)
        for r in range(6):
            al[m + r] += w.a_m[i, m + r]


@_J
def _rigid_one_dof_acceleration(G, h, a, nu, al):
    """Eq 58 for a rigid body on a one-dof joint, with fixed loops: ``χ = ν − Gᵀ a⁺``
    (returned) and ``α = a⁺ + h χ + a`` into ``al`` (6,), which holds ``a⁺`` on entry."""
    chi = nu - (G[0] * al[0] + G[1] * al[1] + G[2] * al[2] + G[3] * al[3] + G[4] * al[4]
                + G[5] * al[5])
    for r in range(6):
        al[r] += h[r] * chi + a[r]
    return chi


# ----------------------------------------------------------------------------------------------
# rigid trees on one-dof joints: the same terms, filter and smoother with ℋ(i) = h (one row)
# and φ(i) applied from the body's pose, in three sweeps of fixed-size loops (a rigid tree has
# no modes, M = 0, so every body's blocks are the workspace's whole 6-wide rows, contiguous)
# ----------------------------------------------------------------------------------------------
#: joint kernels whose motion subspace ``S`` is one constant column in ``J_c``
RIGID_TREE_JOINTS = (_REVOLUTE, _PRISMATIC, _SCREW)


def is_rigid_tree(ib: np.ndarray) -> bool:
    """Whether the packed model ``ib`` is a tree of rigid bodies (the body kernel
    :data:`flexdyn.engine.pack.RIGID`) on revolute, prismatic or screw joints, each attached
    to its parent's body frame (``at`` = 1): the class that :func:`forward_rigid_tree` and
    its siblings serve."""
    n = int(ib[0])
    ints = ib[_NH + HEAD_OFFSETS:_NH + HEAD_OFFSETS + n * _NI].reshape(n, _NI)
    return bool(n > 0 and np.all(ints[:, _KIND] == RIGID) and np.all(ints[:, _NJ] == 1)
                and np.all(np.isin(ints[:, _JCODE], RIGID_TREE_JOINTS))
                and np.all((ints[:, _PARENT] < 0) | (ints[:, _AT] == 1)))


@_J
def rigid_tree_terms(pm, w, q, u, fext):
    """The position and velocity terms of a rigid tree on one-dof joints in one sweep, base
    to tip, into the fields of the general sweeps (:func:`position_terms`,
    :func:`velocity_terms`) that the filter and smoother read: the pose ``(R, p)`` of
    ``F_i`` in its parent's frame (``R_phi``, ``p_phi``: placement ∘ joint(θ) ∘ ``T_Jc``,
    Eqs 12–17, the joint by its kernel ``_joint``), from which the sweeps apply ``φ(i)``
    (its 6 × 6 matrix is not formed); ``S``; ``ℋ(i) = h = X_joint S``;
    Eq 11 ``V(i) = φ*(i) V(p) + h β`` with ``φ*(i) V = [Rᵀ ω; Rᵀ (v + ω × p)]``; Eq 25
    ``a(i) = V(i) × h β``; Eq 37 ``b(i) = V ×* M V − f_ext(i)``; and the filter's start
    ``P(i) = M(i)``, ``z(i) = 0``."""
    ints = pm.ints
    Rj, R1, R2, pj, p1 = w.t_33[0], w.t_33[1], w.t_33[2], w.t_3[0], w.t_3[1]
    hb, MV = w.t_6[1], w.t_6[2]
    for i in range(ints.shape[0]):
        qs, us, pa = ints[i, _QS], ints[i, _US], ints[i, _PARENT]
        R, p, S = w.R_phi[i], w.p_phi[i], w.S[i]
        _joint(ints[i, _JCODE], pm.jparam[i], q[qs:qs + 1], Rj, pj, S, R1, R2)
        _compose3(pm.place_R[i], pm.place_p[i], Rj, pj, R1, p1)
        _compose3(R1, p1, pm.T_Jc_R[i], pm.T_Jc_p[i], R, p)
        h, X, V = w.Hcal[i, 0], pm.X_joint0[i], w.V_m[i]
        for r in range(6):
            h[r] = (X[r, 0] * S[0, 0] + X[r, 1] * S[1, 0] + X[r, 2] * S[2, 0]
                    + X[r, 3] * S[3, 0] + X[r, 4] * S[4, 0] + X[r, 5] * S[5, 0])
        if pa >= 0:  # φ*(i) V(p): a node's twist without modes (m = 0)
            _node_twist(R, p, X, 0, hb, w.V_m[pa], V)
        else:
            V[:] = 0.0
        beta = u[us]
        for r in range(6):
            hb[r] = h[r] * beta
            V[r] += hb[r]
        _cross_motion(V, hb, w.a_m[i], False)
        M = pm.M_m0[i]
        _mv6(M, V, MV, False)
        b = w.bias[i]
        _cross_force(V, MV, b, False)
        for r in range(6):
            b[r] -= fext[i, r]
        _copy(M, w.P[i])
        w.z[i] = 0.0


@_J
def rigid_tree_inertias(pm, w, tau):
    """Eq 51 and the filter of a rigid tree on one-dof joints, tip to base, after
    :func:`rigid_tree_terms` (:func:`articulated_inertias` with every body taking
    ``_rigid_one_dof_step``): the index of the first body whose ``D`` is singular, or −1."""
    ints = pm.ints
    zp, Pr, PH = w.t_6[3], w.t_66[0], w.t_6[4]
    for i in range(ints.shape[0] - 1, -1, -1):
        if not _rigid_one_dof_step(w.P[i], w.Hcal[i, 0], w.a_m[i], w.bias[i],
                                   tau[ints[i, _US]], w.z[i], w.G[i, :, 0], w.innov[i, :1],
                                   PH, zp, Pr):
            return i
        pa = ints[i, _PARENT]
        if pa >= 0:
            R, p = w.R_phi[i], w.p_phi[i]
            _node_wrench(R, p, Pr, 0, zp, w.z[pa])  # z(p) += φ(i) z⁺(i) (no modes: m = 0)
            _pose_congruence(R, p, Pr, w.P[pa], w.t_33)
    return -1


@_J
def rigid_tree_accelerations(pm, w, udot):
    """Eq 58 of a rigid tree on one-dof joints, base to tip (:func:`articulated_accelerations`
    with every body taking ``_rigid_one_dof_acceleration``)."""
    ints = pm.ints
    a_g = w.t_6[2]
    _gravity_acceleration(pm, a_g)
    for i in range(ints.shape[0]):
        pa, al = ints[i, _PARENT], w.alpha[i]
        _node_twist(w.R_phi[i], w.p_phi[i], pm.X_joint0[i], 0, al,
                    a_g if pa < 0 else w.alpha[pa], al)  # φ*(i) α(p): no modes (m = 0)
        udot[ints[i, _US]] = _rigid_one_dof_acceleration(w.G[i, :, 0], w.Hcal[i, 0], w.a_m[i],
                                                         w.innov[i, 0], al)


@_JI
def _forward_rigid_tree(pm, w, q, u, tau, fext, udot):
    """:func:`_forward_articulated` of a rigid tree on one-dof joints
    (:func:`is_rigid_tree`): the same statuses and results to round-off."""
    rigid_tree_terms(pm, w, q, u, fext)
    status = rigid_tree_inertias(pm, w, applied_forces(pm, w, q, u, tau))
    if status < 0:
        rigid_tree_accelerations(pm, w, udot)
    return status


@_J
def prescribed_loads(pm, w, prescribed, udot_known, tau, T):
    """The loads of hybrid dynamics after its smoother (:mod:`flexdyn.hybrid`): ``T`` (nu,)
    is ``τ`` on the free rows and ``T_K = ℋ_K(i) f(i)`` on the prescribed rows ``K`` of each
    body, with ``f(i) = P(i) α(i) + Σ_c Φ(i, c) z⁺(c) + b_m(i)`` the force on the body's
    subtree through its joint (Eq 36), formed from the filter's
    ``z(i) = Σ_c Φ(i, c) z⁺(c) + P(i) (a_m + ℋ_K* χ̇_K) + b_m`` as
    ``f = z + P (α − a_m − ℋ_K* χ̇_K)`` into ``w.f`` (those bodies only)."""
    ints = pm.ints
    _copy(tau, T)
    for i in range(ints.shape[0]):
        m, nj, us = ints[i, _M], ints[i, _NJ], ints[i, _US]
        k, s = nj + m, m + 6
        known = prescribed[us:us + k]
        if not _any(known):
            continue
        H, t, f = w.Hcal[i, :k, :s], w.t_v[:s], w.f[i, :s]
        _prescribed_acceleration(H, known, udot_known[us:us + k], w.a_m[i, :s], t)
        for r in range(s):
            t[r] = w.alpha[i, r] - t[r]
        _copy(w.z[i, :s], f)
        _mv(w.P[i, :s, :s], t, f, True)
        for r in range(k):
            if known[r] != 0.0:
                x = 0.0
                for c in range(s):
                    x += H[r, c] * f[c]
                T[us + r] = x


# ----------------------------------------------------------------------------------------------
# joint forces (flexdyn.joint_forces): springs, dampers, friction, limits, torque limits
# ----------------------------------------------------------------------------------------------
_passive_force = _J(passive_force)
_conservative_force = _J(conservative_force)
_joint_potential = _J(potential)
_saturated = _J(saturated)


@_JI
def add_passive_forces(pm, q, u, sign, out):
    """``out += sign · τ_J(q, u)`` (nu,) (:func:`flexdyn.joint_forces.passive_forces`)."""
    ints = pm.ints
    for i in range(ints.shape[0]):
        if ints[i, _JF] != 0:
            qs, us = ints[i, _QS], ints[i, _US]
            for k in range(ints[i, _NJ]):
                out[us + k] += sign * _passive_force(pm.jforce[i, k], q[qs + k], u[us + k])


@_JI
def motor_torques(pm, tau, out):
    """``sat(τ)`` into ``out`` (nu,): every joint's entries of ``τ`` within its torque limit
    (:func:`flexdyn.joint_forces.motor_torques`)."""
    ints = pm.ints
    _copy(tau, out)
    for i in range(ints.shape[0]):
        if ints[i, _JF] != 0:
            us = ints[i, _US]
            for k in range(ints[i, _NJ]):
                out[us + k] = _saturated(pm.jforce[i, k], tau[us + k])


@_JI
def applied_forces(pm, w, q, u, tau):
    """``sat(τ) + τ_J(q, u)`` into ``w.tau_e`` (returned): the generalized force of the
    equations of motion (:func:`flexdyn.joint_forces.applied_forces`)."""
    motor_torques(pm, tau, w.tau_e)
    add_passive_forces(pm, q, u, 1.0, w.tau_e)
    return w.tau_e


@_J
def joint_potential(pm, q):
    """``Σ V_J`` (J) of the joint springs and limits
    (:func:`flexdyn.joint_forces.joint_potential`)."""
    V, ints = 0.0, pm.ints
    for i in range(ints.shape[0]):
        if ints[i, _JF] != 0:
            for k in range(ints[i, _NJ]):
                V += _joint_potential(pm.jforce[i, k], q[ints[i, _QS] + k])
    return V


@_J
def _sub_mtv(a, x, out):
    """``out −= aᵀ x``."""
    for t in range(a.shape[0]):
        xt = x[t]
        for j in range(a.shape[1]):
            out[j] -= a[t, j] * xt


# ----------------------------------------------------------------------------------------------
# entry points: one compiled call per operation (one crossing of the Python boundary), and
# one for a share of a batch; all release the GIL
# ----------------------------------------------------------------------------------------------
@_E
def terms(ib, fb, q, u, fext):
    """The workspace after the position and velocity terms (for inspection)."""
    pm, w = unpack(ib, fb), workspace(ib)
    w.flat[:] = 0.0  # the padding too, for inspection
    _terms(pm, w, q, u, fext)
    return w


@_JI
def _terms(pm, w, q, u, fext):
    position_terms(pm, q, w)
    velocity_terms(pm, q, u, fext, w)


@_JI
def _forward_articulated(pm, w, q, u, tau, fext, udot):
    """Terms, then Eqs 51/58 into ``udot``: −1, or the index of the body whose ``D`` is
    singular."""
    _terms(pm, w, q, u, fext)
    tau_e = applied_forces(pm, w, q, u, tau)
    status = articulated_inertias(pm, w, tau_e, None, None)
    if status < 0:
        articulated_accelerations(pm, w, udot)
    return status


@_JI
def _forward_composite(pm, w, q, u, tau, fext, udot):
    """Terms, then Eq 46 (mass matrix, bias by Newton–Euler, Cholesky) into ``udot``:
    −1, or 0 when the mass matrix is singular."""
    _terms(pm, w, q, u, fext)
    nu = tau.shape[0]
    C = np.zeros(nu)
    rnea(pm, w, np.zeros(nu), True, C)
    Mass = np.zeros((nu, nu))
    crba(pm, w, Mass)
    return -1 if cholesky_solve(Mass, applied_forces(pm, w, q, u, tau) - C, udot) else 0


@_JI
def _inverse(pm, w, q, u, udot, fext, tau):
    """Terms, then Eq 44 into ``tau``, less the joint forces ``τ_J`` (the motor forces)."""
    _terms(pm, w, q, u, fext)
    rnea(pm, w, udot, True, tau)
    add_passive_forces(pm, q, u, -1.0, tau)
    return -1


@_JI
def _mass(pm, w, q, Mass):
    """Position terms, then Eqs 47/50 into ``Mass``."""
    position_terms(pm, q, w)
    crba(pm, w, Mass)
    return -1


@_JI
def _valid_state(pm, q, u, x, fext, q_n):
    """Whether every entry of ``q``, ``u``, ``x``, ``fext`` is finite and every joint
    quaternion is off unit norm by at most ``QUATERNION_TOL``; ``q_n`` is ``q`` with the
    quaternions normalised (as :meth:`flexdyn.chain.Model.check_state`)."""
    if not (_finite(q) and _finite(u) and _finite(x) and _finite(fext.ravel())):
        return False
    _copy(q, q_n)
    ints = pm.ints
    for i in range(ints.shape[0]):
        code = ints[i, _JCODE]
        if code == _SPHERICAL or code == _FREE:
            s = ints[i, _QS]
            n2 = q[s] ** 2 + q[s + 1] ** 2 + q[s + 2] ** 2 + q[s + 3] ** 2
            norm = math.sqrt(n2)
            if norm == 0.0 or abs(norm - 1.0) > QUATERNION_TOL:
                return False
            for k in range(4):
                q_n[s + k] = q[s + k] / norm
    return True


@_J
def _finite(x):
    """Whether every entry of the vector ``x`` is finite (no temporary array)."""
    for v in x:
        if not math.isfinite(v):
            return False
    return True


@_JA
def _finite_result(out):
    """−1 when every entry of ``out`` is finite, else :data:`OVERFLOW`."""
    return -1 if _finite(out.ravel()) else OVERFLOW


@_E
def forward_articulated(ib, fb, q, u, tau, fext, udot):
    """``_forward_articulated`` of one state, validated (:data:`INVALID`,
    :data:`OVERFLOW`)."""
    pm, w = unpack(ib, fb), workspace(ib)
    if not _valid_state(pm, q, u, tau, fext, w.q_n):
        return INVALID
    status = _forward_articulated(pm, w, w.q_n, u, tau, fext, udot)
    return status if status >= 0 else _finite_result(udot)


@_E
def forward_rigid_tree(ib, fb, q, u, tau, fext, udot):
    """:func:`forward_articulated` of a rigid tree on one-dof joints (:func:`is_rigid_tree`,
    whose coordinates hold no quaternion): ``_forward_rigid_tree`` of one state, validated."""
    pm, w = unpack(ib, fb), workspace(ib)
    if not (_finite(q) and _finite(u) and _finite(tau) and _finite(fext.ravel())):
        return INVALID
    status = _forward_rigid_tree(pm, w, q, u, tau, fext, udot)
    return status if status >= 0 else _finite_result(udot)


@_E
def forward_composite(ib, fb, q, u, tau, fext, udot):
    """``_forward_composite`` of one state, validated."""
    pm, w = unpack(ib, fb), workspace(ib)
    if not _valid_state(pm, q, u, tau, fext, w.q_n):
        return INVALID
    status = _forward_composite(pm, w, w.q_n, u, tau, fext, udot)
    return status if status >= 0 else _finite_result(udot)


@_E
def inverse(ib, fb, q, u, udot, fext, tau):
    """``_inverse`` of one state, validated."""
    pm, w = unpack(ib, fb), workspace(ib)
    if not _valid_state(pm, q, u, udot, fext, w.q_n):
        return INVALID
    _inverse(pm, w, w.q_n, u, udot, fext, tau)
    return _finite_result(tau)


@_E
def mass(ib, fb, q, Mass):
    """``_mass`` of one state, validated."""
    pm, w = unpack(ib, fb), workspace(ib)
    none = np.zeros(0)
    if not _valid_state(pm, q, none, none, np.zeros((0, 6)), w.q_n):
        return INVALID
    _mass(pm, w, w.q_n, Mass)
    return _finite_result(Mass)


@_E
def hybrid(ib, fb, t, n_threads, q, u, tau, udot_known, prescribed, fext, udot, T, status):
    """Hybrid dynamics (:mod:`flexdyn.hybrid`) of the states ``t, t + n_threads, …`` of
    ``q`` (B, nq), ``u``, ``tau``, ``udot_known`` (B, nu), ``fext`` (B, n, 6), with the mask
    ``prescribed`` (nu,) shared by all (1.0 where the acceleration is given, 0.0 where the
    force is): ``u̇`` into ``udot`` and ``T`` into ``T`` (B, nu), ``status`` (B,) as the other
    entries (the body index of a singular free-part ``D``).  Per state: the terms, the
    filter of :func:`articulated_inertias` with the mask, the smoother of Eq 58
    (:func:`articulated_accelerations`, which returns the prescribed ``χ̇_K`` as given) and
    :func:`prescribed_loads`.  O(N); releases the GIL."""
    pm, w = unpack(ib, fb), workspace(ib)
    for b in range(t, q.shape[0], n_threads):
        if not (_valid_state(pm, q[b], u[b], tau[b], fext[b], w.q_n)
                and _finite(udot_known[b])):
            status[b] = INVALID
            continue
        _terms(pm, w, w.q_n, u[b], fext[b])
        tau_e = applied_forces(pm, w, w.q_n, u[b], tau[b])
        s = articulated_inertias(pm, w, tau_e, prescribed, udot_known[b])
        if s < 0:
            articulated_accelerations(pm, w, udot[b])
            prescribed_loads(pm, w, prescribed, udot_known[b], tau_e, T[b])
            add_passive_forces(pm, w.q_n, u[b], -1.0, T[b])  # sat(τ) free, motor prescribed
            s = _finite_result(udot[b])
            if s == -1:
                s = _finite_result(T[b])
        status[b] = s


#: operation codes of :func:`batch`
ARTICULATED, COMPOSITE, INVERSE, MASS = range(4)


@_E
def batch(ib, fb, op, t, n_threads, q, u, x, fext, out, status):
    """Operation ``op`` on the states ``t, t + n_threads, …`` of the leading axis of ``q``,
    ``u``, ``x`` (τ or u̇), ``fext``, into ``out`` (B, nu) (B, nu·nu for :data:`MASS`) and
    ``status`` (B,), in one workspace.  It releases the GIL: ``n_threads`` Python threads
    share a batch."""
    pm, w = unpack(ib, fb), workspace(ib)
    nu = ib[3]
    for b in range(t, q.shape[0], n_threads):
        if op == ARTICULATED:
            status[b] = _forward_articulated(pm, w, q[b], u[b], x[b], fext[b], out[b])
        elif op == COMPOSITE:
            status[b] = _forward_composite(pm, w, q[b], u[b], x[b], fext[b], out[b])
        elif op == INVERSE:
            status[b] = _inverse(pm, w, q[b], u[b], x[b], fext[b], out[b])
        else:
            status[b] = _mass(pm, w, q[b], out[b].reshape((nu, nu)))


@_E
def batch_rigid_tree(ib, fb, t, n_threads, q, u, x, fext, out, status):
    """:func:`batch`'s :data:`ARTICULATED` of a rigid tree on one-dof joints
    (:func:`is_rigid_tree`) by ``_forward_rigid_tree``."""
    pm, w = unpack(ib, fb), workspace(ib)
    for b in range(t, q.shape[0], n_threads):
        status[b] = _forward_rigid_tree(pm, w, q[b], u[b], x[b], fext[b], out[b])


# ----------------------------------------------------------------------------------------------
# the state derivative of simulation: ẋ = [Γ(q) u; u̇] in one compiled call
# ----------------------------------------------------------------------------------------------
@_J
def _unit_quaternions(ints, q, q_n):
    """``q_n = q`` with every joint quaternion scaled to unit length
    (:meth:`flexdyn.chain.Model.normalize_configuration`); False for a zero quaternion."""
    _copy(q, q_n)
    for i in range(ints.shape[0]):
        code = ints[i, _JCODE]
        if code == _SPHERICAL or code == _FREE:
            s = ints[i, _QS]
            norm = math.sqrt(q[s] ** 2 + q[s + 1] ** 2 + q[s + 2] ** 2 + q[s + 3] ** 2)
            if norm == 0.0:
                return False
            for k in range(4):
                q_n[s + k] = q[s + k] / norm
    return True


@_J
def _qdot(ints, jparam, q, u, out, R):
    """The kinematic equation ``q̇ = Γ(q) u`` (nq,) (:meth:`flexdyn.chain.Model.qdot`):
    ``q̇ = β`` for joints whose coordinates are their speeds, ``q̇ = ½ q ⊗ [0; ω]`` for a
    quaternion, ``ṗ = R(q) v`` for a free joint's position, Eqs 19/25 for a product joint
    (``_product_qdot``), ``η̇`` for the modal coordinates; ``R`` (3 × 3) scratch."""
    for i in range(ints.shape[0]):
        code, qs, us = ints[i, _JCODE], ints[i, _QS], ints[i, _US]
        nqj, nj, m = ints[i, _NQJ], ints[i, _NJ], ints[i, _M]
        if code == _PRODUCT:
            _product_qdot(jparam[i], q[qs:qs + nqj], u[us:us + nj], out[qs:qs + nqj])
        elif code == _SPHERICAL or code == _FREE:
            qw, qx, qy, qz = q[qs], q[qs + 1], q[qs + 2], q[qs + 3]
            w0, w1, w2 = u[us], u[us + 1], u[us + 2]
            out[qs] = -0.5 * (qx * w0 + qy * w1 + qz * w2)
            out[qs + 1] = 0.5 * (qw * w0 + qy * w2 - qz * w1)
            out[qs + 2] = 0.5 * (qw * w1 + qz * w0 - qx * w2)
            out[qs + 3] = 0.5 * (qw * w2 + qx * w1 - qy * w0)
            if code == _FREE:
                _quat_rot(qw, qx, qy, qz, R)
                _mv(R, u[us + 3:us + 6], out[qs + 4:qs + 7], False)
        else:
            for k in range(nqj):
                out[qs + k] = u[us + k]
        for k in range(m):
            out[qs + nqj + k] = u[us + nj + k]


@_J
def _power(pm, w, q, u, tau, fext, out):
    """The integrands of the energy balance (:mod:`flexdyn.simulate`): ``out[0] = sat(τ)·u``,
    ``out[1] = Σ_i f_ext(i)·V(i)`` (the body twists of Eq 11), ``out[2] = Σ_i η̇ᵀ C η̇`` plus
    the joint forces' dissipation (:func:`flexdyn.joint_forces.joint_dissipation`)."""
    ints = pm.ints
    p_tau = 0.0
    for k in range(u.shape[0]):
        p_tau += tau[k] * u[k]
    p_ext = 0.0
    p_d = 0.0
    for i in range(ints.shape[0]):
        if ints[i, _JF] != 0:
            qs, us = ints[i, _QS], ints[i, _US]
            for k in range(ints[i, _NJ]):
                c, x, v = pm.jforce[i, k], q[qs + k], u[us + k]
                p_tau += (_saturated(c, tau[us + k]) - tau[us + k]) * v
                p_d += (_conservative_force(c, x) - _passive_force(c, x, v)) * v
        m, s = ints[i, _M], ints[i, _US] + ints[i, _NJ]
        for r in range(6):
            p_ext += fext[i, r] * w.V_m[i, m + r]
        for r in range(m):
            t = 0.0
            for k in range(m):
                t += pm.C[i, r, k] * u[s + k]
            p_d += u[s + r] * t
    out[0] = p_tau
    out[1] = p_ext
    out[2] = p_d


@_JI
def _derivative_inputs(pm, w, x, tau, fext):
    """Whether ``x = [q; u]``, ``τ`` and ``f_ext`` are finite and no joint quaternion is
    zero; ``w.q_n`` is ``q`` with the quaternions scaled to unit length (no tolerance: an
    integrator lets their norm drift)."""
    nq = w.q_n.shape[0]
    return (_finite(x[:nq + w.u_nl.shape[0]]) and _finite(tau) and _finite(fext.ravel())
            and _unit_quaternions(pm.ints, x[:nq], w.q_n))


@_JI
def _derivative_outputs(pm, w, x, tau, fext, xdot, status):
    """After forward dynamics that ended with ``status``: ``q̇ = Γ(q) u`` into ``xdot[:nq]``
    and the energy-balance integrands into ``xdot[nq + nu:nq + nu + 3]`` when ``xdot`` has
    room for them; −1 or :data:`OVERFLOW` (``status`` itself when it is a body index)."""
    if status >= 0:
        return status
    nq, nu = w.q_n.shape[0], w.u_nl.shape[0]
    u = x[nq:nq + nu]
    _qdot(pm.ints, pm.jparam, w.q_n, u, xdot[:nq], w.t_33[0])
    if xdot.shape[0] >= nq + nu + 3:
        _power(pm, w, w.q_n, u, tau, fext, xdot[nq + nu:nq + nu + 3])
    return _finite_result(xdot)


@_E
def derivative_articulated(ib, fb, x, tau, fext, xdot):
    """``ẋ = [Γ(q) u; u̇]`` of ``x = [q; u]`` (nq + nu,) into ``xdot`` (nq + nu,), u̇ by
    Eqs 51/58, with the energy-balance integrands (``_power``) in
    ``xdot[nq + nu:nq + nu + 3]`` when ``xdot`` has room for them.  Quaternions are scaled to
    unit length without a tolerance.  Status as the other entries: −1, :data:`INVALID` (a
    non-finite input or a zero quaternion), :data:`OVERFLOW` or the index of a body whose
    ``D`` is singular."""
    pm, w, u, udot = unpack(ib, fb), workspace(ib), x[ib[4]:ib[4] + ib[3]], xdot[ib[4]:]
    if not _derivative_inputs(pm, w, x, tau, fext):
        return INVALID
    return _derivative_outputs(pm, w, x, tau, fext, xdot, _forward_articulated(
        pm, w, w.q_n, u, tau, fext, udot[:ib[3]]))


@_E
def derivative_rigid_tree(ib, fb, x, tau, fext, xdot):
    """:func:`derivative_articulated` of a rigid tree on one-dof joints
    (:func:`is_rigid_tree`), u̇ by ``_forward_rigid_tree``."""
    pm, w, nq, nu = unpack(ib, fb), workspace(ib), ib[4], ib[3]
    if not _derivative_inputs(pm, w, x, tau, fext):
        return INVALID
    status = _forward_rigid_tree(pm, w, w.q_n, x[nq:nq + nu], tau, fext, xdot[nq:nq + nu])
    return _derivative_outputs(pm, w, x, tau, fext, xdot, status)


@_E
def derivative_composite(ib, fb, x, tau, fext, xdot):
    """:func:`derivative_articulated` with u̇ by Eq 46 (status 0 for a singular mass
    matrix)."""
    pm, w = unpack(ib, fb), workspace(ib)
    if not _derivative_inputs(pm, w, x, tau, fext):
        return INVALID
    status = _forward_composite(pm, w, w.q_n, x[ib[4]:ib[4] + ib[3]], tau, fext,
                                xdot[ib[4]:ib[4] + ib[3]])
    return _derivative_outputs(pm, w, x, tau, fext, xdot, status)


@_JA
def state_derivative(ib, fb, method, x, tau, fext, xdot):
    """:func:`derivative_articulated` (``method`` :data:`ARTICULATED`) or
    :func:`derivative_composite` (:data:`COMPOSITE`), for the C entry
    (:mod:`flexdyn.engine.ccall`); each entry alone compiles only its method."""
    if method == COMPOSITE:
        return derivative_composite(ib, fb, x, tau, fext, xdot)
    return derivative_articulated(ib, fb, x, tau, fext, xdot)
