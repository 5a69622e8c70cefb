"""Borrowed arrays: the kernel's arrays, passed to its helpers without reference counts.

numba counts references to every array that enters a compiled call or is bound to a new name
(an atomic increment and decrement of the array's ``meminfo`` through the non-inlined
``NRT_incref``/``NRT_decref``), inlined helpers included, and its pruning pass removes them only
in simple control flow (not across a loop with an early exit). The lattice kernel calls its
helpers per ideal pair (tens of millions of calls per solve, a few nanoseconds of work each),
where those counts cost more than the work (``scripts/bench_kernel_calls.py``).

:func:`borrow` returns the same array (data, shape, strides) typed :class:`BorrowedArray`, a
numpy array type whose data model owns no reference: numba emits no reference count for it at
all, and every array operation (indexing, ``shape``, slicing) works as on the array. Invariant:
a borrowed array must not outlive the array it was taken from and never leaves compiled code (it
owns nothing; it cannot be returned to Python). The kernel borrows its arrays at the top of
:func:`~placement.exact.lattice_search.lattice_dp`, which holds the originals until it returns.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.core.datamodel.models import ArrayModel
from numba.extending import intrinsic, register_model


class BorrowedArray(types.Array):
    """A numpy array type whose values hold no reference to their memory (see the module docstring)."""

    def __init__(self, dtype, ndim, layout, readonly=False, aligned=True):
        name = f"borrowed({dtype}, {ndim}d, {layout})"
        super().__init__(dtype, ndim, layout, readonly=readonly, name=name, aligned=aligned)


@register_model(BorrowedArray)
class BorrowedArrayModel(ArrayModel):
    """The array's layout, with no member numba counts references of."""

    def traverse(self, builder):
        return []

    def has_nrt_meminfo(self) -> bool:
        return False


def _borrowed_type(ty):
    if isinstance(ty, types.Array) and not isinstance(ty, BorrowedArray):
        return BorrowedArray(ty.dtype, ty.ndim, ty.layout, readonly=not ty.mutable, aligned=ty.aligned)
    return ty


def _borrowed_value(context, builder, ty, value):
    out = _borrowed_type(ty)
    if out is ty:
        return value
    src = context.make_array(ty)(context, builder, value=value)
    view = context.make_array(out)(context, builder)
    view.meminfo = cgutils.get_null_value(view.meminfo.type)
    view.parent = cgutils.get_null_value(view.parent.type)
    view.nitems = src.nitems
    view.itemsize = src.itemsize
    view.data = src.data
    view.shape = src.shape
    view.strides = src.strides
    return view._getvalue()


@intrinsic
def borrow(typingctx, arr):
    """The array ``arr``, typed :class:`BorrowedArray` (no reference counts, no ``meminfo``)."""
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        return _borrowed_value(context, builder, arr, args[0])

    return _borrowed_type(arr)(arr), codegen


@intrinsic
def borrow_all(typingctx, tup):
    """The tuple (or named tuple) ``tup`` with each of its arrays borrowed; other fields as they are."""
    if not isinstance(tup, types.BaseTuple):
        return None
    fields = [_borrowed_type(ty) for ty in tup.types]
    if isinstance(tup, types.BaseNamedTuple):
        out = types.NamedTuple(fields, tup.instance_class)
    else:
        out = types.Tuple(fields)

    def codegen(context, builder, sig, args):
        values = [
            _borrowed_value(context, builder, ty, builder.extract_value(args[0], k)) for k, ty in enumerate(tup.types)
        ]
        return context.make_tuple(builder, out, values)

    return out(tup), codegen
