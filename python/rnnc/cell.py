"""Cells: built-in, from .cell files or text, or built op by op (CellBuilder)."""
import ctypes
import os

from ._lib import DumpDesc, c_int, c_void_p, lib, text
from .errors import check, InvalidArgumentError

NONE = -1  # RNNC_NONE
_HOIST = {"all": 0, "matmul": 1, "none": 2}
_MATH = {"ffma": 0, "tf32": 1, "3xtf32": 2}
_DUMP_DTYPE = {"f32": 0, "float32": 0, "f16": 1, "float16": 1, "bf16": 5, "bfloat16": 5}


def _b(s):
    return None if s is None else s.encode()


class Cell:
    """One time step of a recurrent cell (an rnnc_cell handle)."""

    def __init__(self, handle):
        self._h = handle

    def __del__(self):
        if getattr(self, "_h", None):
            lib.rnnc_cell_destroy(self._h)
            self._h = None

    @staticmethod
    def _make(fn, *args):
        h = c_void_p()
        check(fn(ctypes.byref(h), *args))
        return Cell(h)

    @classmethod
    def builtin(cls, name, attrs=None):
        return cls._make(lib.rnnc_cell_builtin, _b(name), _b(attrs))

    @classmethod
    def load_file(cls, path, cell_name=None, attrs=None):
        return cls._make(lib.rnnc_cell_load_file, os.fsencode(path), _b(cell_name), _b(attrs))

    @classmethod
    def parse(cls, source, label="<string>", cell_name=None, attrs=None):
        data = source.encode()
        return cls._make(lib.rnnc_cell_parse, data, len(data), _b(label), _b(cell_name),
                         _b(attrs))

    @classmethod
    def get(cls, cell, attrs=None, cell_name=None):
        """A Cell from what a user may hand over: a Cell or CellBuilder, a
        built-in name, a path to a .cell file, or .cell text."""
        if isinstance(cell, CellBuilder):
            cell = cell.build()
        if isinstance(cell, Cell):
            if attrs is not None or cell_name is not None:
                raise InvalidArgumentError("attrs and cell_name apply to names, paths and text")
            return cell
        if not isinstance(cell, (str, os.PathLike)):
            raise InvalidArgumentError(f"a cell is a name, a path, .cell text or a Cell, "
                                       f"not {type(cell).__name__}")
        s = os.fspath(cell)
        if "{" in s:
            return cls.parse(s, cell_name=cell_name, attrs=attrs)
        if s.endswith(".cell") or os.sep in s:
            return cls.load_file(s, cell_name=cell_name, attrs=attrs)
        if cell_name is not None:
            raise InvalidArgumentError("cell_name picks a cell of a file or text, not of a name")
        return cls.builtin(s, attrs)

    @property
    def name(self):
        return text(lib.rnnc_cell_name(self._h))

    @property
    def states(self):
        return [text(lib.rnnc_cell_state_name(self._h, i))
                for i in range(lib.rnnc_cell_state_count(self._h))]

    @property
    def params(self):
        return [text(lib.rnnc_cell_param_name(self._h, i))
                for i in range(lib.rnnc_cell_param_count(self._h))]

    def _string(self, fn, *args):
        p = c_void_p()
        check(fn(self._h, *args, ctypes.byref(p)))
        try:
            return text(ctypes.string_at(p.value))
        finally:
            lib.rnnc_free(p)

    @property
    def text(self):
        """The canonical .cell text (it parses to an equal cell)."""
        return self._string(lib.rnnc_cell_print)

    def dump(self, stage="ir", input_size=0, hidden_size=0, proj_size=0, batch=1, hoist="all",
             math="ffma", dtype="f32", sm=0, tuning=None):
        """A stage of the pipeline as text: ir, opt, schedule, cuda, llvm, backward, train
        (the fused backward's kernels; sizes are needed from schedule on, except
        for backward); cuda is the source generated for
        the math mode, dtype and GPU architecture (sm=80 for sm_80; 0: sm_90)
        and the step kernel's tuning as the autotuner logs it
        ("ut=0 bt=32 nt=512"), or any of its fields in any order ("nt=512
        op=1"); fields left out, and None, the generator's own."""
        d = DumpDesc(input_size, hidden_size, proj_size, batch, _HOIST[hoist], _MATH[math],
                     _DUMP_DTYPE[dtype], sm, tuning.encode() if tuning else None)
        return self._string(lib.rnnc_cell_dump_desc, stage.encode(), ctypes.byref(d))

    def verify(self):
        check(lib.rnnc_cell_verify(self._h))

    def clone(self):
        return Cell._make(lib.rnnc_cell_clone, self._h)

    def __reduce__(self):
        """Copies and pickles go through the .cell text (the handle is never shared)."""
        return (Cell.parse, (self.text, self.name))

    def __eq__(self, other):
        return isinstance(other, Cell) and bool(lib.rnnc_cell_equal(self._h, other._h))

    __hash__ = None

    def __repr__(self):
        return f"rnnc.Cell({self.name!r}, states={self.states}, params={self.params})"


def builtin_names():
    names, arr, i = [], lib.rnnc_cell_builtin_names(), 0
    while arr[i]:
        names.append(text(arr[i]))
        i += 1
    return names


class Value:
    """A node of a cell being built; arithmetic operators build ops."""

    __slots__ = ("builder", "id")

    def __init__(self, builder, vid):
        self.builder, self.id = builder, vid

    def _other(self, v):
        return v if isinstance(v, Value) else self.builder.const(float(v))

    def __add__(self, o):
        return self.builder.add(self, self._other(o))

    def __radd__(self, o):
        return self.builder.add(self._other(o), self)

    def __sub__(self, o):
        return self.builder.sub(self, self._other(o))

    def __rsub__(self, o):
        return self.builder.sub(self._other(o), self)

    def __mul__(self, o):
        return self.builder.mul(self, self._other(o))

    def __rmul__(self, o):
        return self.builder.mul(self._other(o), self)

    def __truediv__(self, o):
        return self.builder.div(self, self._other(o))

    def __rtruediv__(self, o):
        return self.builder.div(self._other(o), self)

    def __neg__(self):
        return self.builder.neg(self)

    def __matmul__(self, w):
        return self.builder.linear(self, w)

    def __repr__(self):
        return f"rnnc.Value({self.id})"


class CellBuilder:
    """The C builder (rnnc_cell_create, rnnc_linear, ...) with its ops as methods.

        b = rnnc.CellBuilder("my_rnn")
        x, h = b.input("x", "I"), b.state("h", "H")
        w_ih, w_hh = b.param("weight_ih", "H", "I"), b.param("weight_hh", "H", "H")
        bias = b.param("bias", None, "H")
        h_next = b.tanh(b.linear(x, w_ih) + bias + b.linear(h, w_hh))
        b.set_next(h, h_next); b.set_output(h_next)
        cell = b.build()
    """

    def __init__(self, name):
        self._cell = Cell._make(lib.rnnc_cell_create, name.encode())

    def _new(self, fn, *args):
        out = c_int()
        check(fn(self._cell._h, *args, ctypes.byref(out)))
        return Value(self, out.value)

    @staticmethod
    def _id(v):
        if v is None:
            return NONE
        if not isinstance(v, Value):
            raise InvalidArgumentError(f"expected an rnnc.Value, got {type(v).__name__}")
        return v.id

    # declarations
    def input(self, name, dim):
        return self._new(lib.rnnc_cell_input, name.encode(), dim.encode())

    def state(self, name, dim):
        return self._new(lib.rnnc_cell_state, name.encode(), dim.encode())

    def param(self, name, rows, cols, optional=False):
        """A matrix [rows, cols], or a vector [cols] when rows is None."""
        fn = lib.rnnc_cell_param_optional if optional else lib.rnnc_cell_param
        return self._new(fn, name.encode(), _b(rows), cols.encode())

    def const(self, v):
        return self._new(lib.rnnc_cell_const, float(v))

    # ops
    def linear(self, x, w):
        return self._new(lib.rnnc_linear, self._id(x), self._id(w))

    def add(self, a, b):
        return self._new(lib.rnnc_add, self._id(a), self._id(b))

    def sub(self, a, b):
        return self._new(lib.rnnc_sub, self._id(a), self._id(b))

    def mul(self, a, b):
        return self._new(lib.rnnc_mul, self._id(a), self._id(b))

    def div(self, a, b):
        return self._new(lib.rnnc_div, self._id(a), self._id(b))

    def concat(self, a, b):
        return self._new(lib.rnnc_concat, self._id(a), self._id(b))

    def chunk(self, x, parts, index=None):
        """Piece `index` of `parts` equal pieces; all of them as a list when index is None."""
        if index is None:
            return [self.chunk(x, parts, i) for i in range(parts)]
        return self._new(lib.rnnc_chunk, self._id(x), parts, index)

    def layernorm(self, x, eps=1e-5, gamma=None, beta=None):
        return self._new(lib.rnnc_layernorm, self._id(x), float(eps), self._id(gamma),
                         self._id(beta))

    def dropout(self, x, p):
        return self._new(lib.rnnc_dropout, self._id(x), float(p))

    def set_next(self, state, value):
        check(lib.rnnc_cell_set_next(self._cell._h, self._id(state), self._id(value)))

    def set_output(self, value):
        check(lib.rnnc_cell_set_output(self._cell._h, self._id(value)))

    def build(self):
        """The finished cell (verified); the builder may go on to make others."""
        self._cell.verify()
        return self._cell.clone()

    @property
    def text(self):
        return self._cell.text


def _unary(op):
    fn = getattr(lib, "rnnc_" + op)

    def method(self, a):
        return self._new(fn, self._id(a))
    method.__name__ = op
    return method


for _op in ("neg", "sigmoid", "tanh", "relu", "exp", "log", "sqrt", "rsqrt", "sum", "mean"):
    setattr(CellBuilder, _op, _unary(_op))
