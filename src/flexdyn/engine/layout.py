"""The packed model and the workspace: named views of the flat buffers ``(ib, fb)``
(:mod:`flexdyn.engine.pack`) and of one workspace allocation per call, whose fields carry the
names of the reference's per-state terms, so the sweeps allocate nothing per body.  Every
array is padded: a modal-size block of body ``i`` occupies ``[:m_i + 6]`` with the modal
entries first.  The columns of the per-body table and the joint codes are taken from the
field table (:data:`flexdyn.engine.pack.INT_FIELDS`) and the joint registry
(:data:`flexdyn.joints.JOINT_KINDS`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba.core import cgutils, types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

from ..joint_forces import N_FORCE_PARAMS
from ..joints import JOINT_KINDS, JOINT_PARAMS, ProductJoint
from .jit import entry_point, helper, inlined
from .pack import HEAD_OFFSETS, HEADER, INT_FIELDS, PackedModel

__all__ = ["AT", "CN", "CYLINDRICAL", "FIXED", "FREE", "GS", "INVALID", "JCODE", "JF", "KIND",
           "MI", "MODES", "NJ", "NN", "NQJ", "N_HEADER", "N_INT_FIELDS", "OVERFLOW", "PARENT", "PN",
           "PRISMATIC", "PRODUCT", "QS", "REVOLUTE", "SCREW", "SPHERICAL", "TK", "UNIVERSAL", "US",
           "Work", "borrowed_view", "carve", "unpack", "view", "workspace", "workspace_length"]


#: the columns of the per-body table (:data:`flexdyn.engine.pack.INT_FIELDS`)
(PARENT, MODES, NJ, NQJ, QS, US, JCODE, KIND, CN, PN, NN, AT, GS, TK, JF, MI) = (
    INT_FIELDS.index(name) for name in ("parent", "m", "nj", "nqj", "qs", "us", "jcode", "kind",
                                        "cn", "pn", "nn", "at", "gs", "tk", "jf", "mi"))
N_INT_FIELDS = len(INT_FIELDS)
N_HEADER = len(HEADER)
#: the joint codes (:attr:`flexdyn.joints.Joint.code`)
(FIXED, REVOLUTE, PRISMATIC, SCREW, CYLINDRICAL, UNIVERSAL, SPHERICAL, FREE) = (
    JOINT_KINDS[kind].code for kind in ("fixed", "revolute", "prismatic", "screw", "cylindrical",
                                        "universal", "spherical", "free"))
PRODUCT = ProductJoint.code
#: statuses of the entries besides −1 (done) and a body index (singular inertia)
INVALID, OVERFLOW = -2, -3


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


@inlined
def unpack(ib, fb):
    """Named views of the flat buffers (the shapes of :data:`flexdyn.engine.pack.FIELDS`, in
    its order), borrowed (``borrowed_view``): the entries receive ``ib`` and ``fb`` from
    their caller, who holds them for the whole call.  Inlined: returned from a call, its
    dozens of array headers would be copied."""
    n, M, N, G, I = ib[0], ib[1], ib[2], ib[5], ib[6]  # noqa: E741 (the field table's letter)
    o = ib[N_HEADER:N_HEADER + HEAD_OFFSETS]
    return PackedModel(
        ints=borrowed_view(ib, N_HEADER + HEAD_OFFSETS, (n, N_INT_FIELDS)),
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
        inv0=borrowed_view(fb, o[26], (n, I + 6, I + 6)),
        inv1=borrowed_view(fb, o[27], (n, I, 3, I + 6)),
        inv2=borrowed_view(fb, o[28], (n, I, I, 3, 3)),
        jforce=borrowed_view(fb, o[29], (n, 6, N_FORCE_PARAMS)),
        ib=ib,
        fb=fb,
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
    t_EY: np.ndarray  # (s, 6) E_t* φ X φᵀ of a child on a node (attach_congruence)
    t_v: np.ndarray  # (s,)
    t_66: np.ndarray  # (2, 6, 6)
    t_33: np.ndarray  # (3, 3, 3)
    t_3: np.ndarray  # (3, 3)
    t_6: np.ndarray  # (8, 6)
    t_tip: np.ndarray  # (4, 3) scratch of the tip kinematics (node_twist_rate)
    tau_e: np.ndarray  # (nu,) the generalized force with the joint forces, sat(τ) + τ_J
    R_phi: np.ndarray  # (n, 3, 3) the pose (R, p) of F_i in its parent's attach frame, of
    p_phi: np.ndarray  # (n, 3)    which φ(i) = [[R, p̃ R], [0, R]]
    R_t: np.ndarray  # (n, 3, 3) the pose of the parent's attach node t, of which
    p_t: np.ndarray  # (n, 3)    A(i) = [E_t*; φ(t)]
    q_n: np.ndarray  # (nq,) q with unit quaternions
    flat: np.ndarray  # the buffer after q_n
    buf: np.ndarray  # the whole buffer, q_n first (the stages carve it again)


@intrinsic
def prefix_sums(typingctx, lengths):
    """``(0, l0, l0 + l1, …, Σ l)`` of a homogeneous tuple of integers ``lengths``: the
    offsets of consecutive fields, as one chain of additions (a loop over a tuple indexes it
    at run time)."""
    if not (isinstance(lengths, types.UniTuple) and isinstance(lengths.dtype, types.Integer)):
        return None
    result = types.UniTuple(lengths.dtype, len(lengths) + 1)

    def codegen(context, builder, sig, args):
        total = context.get_constant(lengths.dtype, 0)
        sums = [total]
        for length in cgutils.unpack_tuple(builder, args[0]):
            total = builder.add(total, length)
            sums.append(total)
        return context.make_tuple(builder, result, sums)

    return result(lengths), codegen


@inlined
def _offsets(ib):
    """The offsets of the fields of :class:`Work` after ``q_n`` (and ``flat``), in its order,
    and the end of the last."""
    n, M, N, nu = ib[0], ib[1], ib[2], ib[3]
    s = M + 6
    return prefix_sums((
        n * N * 9, n * N * 3, n * N * 6 * M, n * N * 3, n * 36, n * s * 6, n * s * s,
        n * s * s, n * 6 * M, n * 36, n * 9, n * 3, n * 36,
        n * s, n * s, n * s, n * s, nu,
        n * s * s, n * s * s, n * s, n * s, n * s, n * s,
        s * s, s * s, s * s, s * s, s * s, s * s, s * 6, s, 72, 27, 9, 48, 12, nu,
        n * 9, n * 3, n * 9, n * 3))


@helper
def workspace_length(ib):
    """The length of the buffer that :func:`carve` divides: ``nq`` and the fields."""
    return ib[4] + _offsets(ib)[-1]


@inlined
def carve(ib, buf):
    """The fields of :class:`Work` as views of ``buf`` (at least :func:`workspace_length`
    long): ``q_n`` first, then the others in order.  Allocates nothing, so an entry may take
    its workspace from its caller (:mod:`flexdyn.engine.export`).  Inlined, so that in a
    :data:`~flexdyn.engine.jit.helper` that receives ``buf`` from its caller (who holds it)
    the views count no references: an entry that makes its workspace by
    :func:`workspace` counts two atomic operations per view and call."""
    n, M, N, nq = ib[0], ib[1], ib[2], ib[4]
    s, o = M + 6, _offsets(ib)
    q_n, w = buf[:nq], buf[nq:]  # w is zeroed by each state's computation
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
        view(w, o[40], (n, 3, 3)), view(w, o[41], (n, 3)), q_n, w, buf,
    )


@entry_point
def workspace(ib):
    """One allocation, carved into the fields of :class:`Work`."""
    return carve(ib, np.empty(workspace_length(ib)))
