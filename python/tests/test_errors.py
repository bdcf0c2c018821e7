"""Each library status arrives as its rnnc.Error subclass, carrying
rnnc_last_error()'s text; bad Python-side inputs are refused before any
pointer reaches the library."""
import numpy as np
import pytest

import rnnc


def check_detail(e, *words):
    assert isinstance(e.value, rnnc.Error)
    assert e.value.detail and all(w in e.value.detail for w in words), e.value.detail
    assert e.value.status == type(e.value).status
    assert e.value.status_name in str(e.value)


def test_parse_error_has_file_line_col(tmp_path):
    p = tmp_path / "bad.cell"
    p.write_text("cell a {\n  input x[I]\n  bogus\n}\n")
    with pytest.raises(rnnc.ParseError) as e:
        rnnc.Cell.load_file(p)
    check_detail(e, "expected")
    assert (e.value.file, e.value.line, e.value.col) == (str(p), 3, 8)
    with pytest.raises(rnnc.ParseError) as e:
        rnnc.CellRNN("cell b {\n input x[I]\n state h[H]\n next h = nope(h)\n}", 2, 3,
                     cell_name=None)
    assert e.value.file == "<string>" and e.value.line == 4
    assert isinstance(e.value, ValueError)


def test_shape_error_from_builder_and_inputs():
    b = rnnc.CellBuilder("bad")
    x = b.input("x", "I")
    h = b.state("h", "H")
    with pytest.raises(rnnc.ShapeError) as e:
        b.add(x, h)  # I and H differ
    check_detail(e)
    m = rnnc.LSTM(3, 4, backend="interp")
    with pytest.raises(rnnc.ShapeError, match="input size 5"):
        m(np.ones((2, 1, 5), np.float32))
    with pytest.raises(rnnc.ShapeError, match="initial state 'c'"):
        m(np.ones((2, 1, 3), np.float32), (np.zeros((1, 1, 4), np.float32),
                                            np.zeros((1, 2, 4), np.float32)))
    with pytest.raises(rnnc.ShapeError, match="lengths"):
        m(np.ones((2, 3, 3), np.float32), lengths=[1, 2])


def test_shape_error_from_library_lengths():
    m = rnnc.GRU(2, 3, backend="interp")
    with pytest.raises(rnnc.ShapeError) as e:
        m(np.ones((4, 2, 2), np.float32), lengths=[4, 9])  # 9 > T: the library's check
    check_detail(e, "lengths[1]")


def test_not_found_and_invalid_argument():
    with pytest.raises(rnnc.NotFoundError) as e:
        rnnc.Cell.builtin("no_such_cell")
    check_detail(e, "no_such_cell")
    assert isinstance(e.value, LookupError)
    with pytest.raises(rnnc.InvalidArgumentError) as e:
        rnnc.LSTM(3, 4, proj_size=4, backend="interp")  # proj_size must be < hidden_size
    check_detail(e, "proj_size")
    with pytest.raises(rnnc.InvalidArgumentError):
        rnnc.Model("lstm", 3, 4, backend="no_such_backend")


def test_unsupported_and_not_built():
    # half precision runs on the host backends (converted)
    m = rnnc.LSTM(3, 4, dtype="float16", backend="interp")
    y, _ = m(np.ones((2, 1, 3), np.float16))
    assert y.dtype == np.float16 and y.shape == (2, 1, 4)
    # A GPU backend here is either missing at build time or has no device.
    if not rnnc.backend_available("fused"):
        with pytest.raises((rnnc.NotBuiltError, rnnc.NoDeviceError)) as e:
            rnnc.LSTM(3, 4, backend="fused")
        check_detail(e)


def test_backward_without_backend_support_or_forward(rng):
    m = rnnc.Model("lstm", 3, 4, backend="interp")
    m.set_weights({n: rng.standard_normal(s).astype(np.float32) for n, s in m.weights})
    with pytest.raises(rnnc.StateError):
        m.backward(np.ones((2, 1, 4), np.float32))
    m.forward(rng.standard_normal((2, 1, 3)).astype(np.float32), training=True)
    try:
        dx, _ = m.backward(np.ones((2, 1, 4), np.float32))
    except rnnc.UnsupportedError as e:  # until the interpreter has a backward
        assert "backward" in e.detail
    else:
        assert dx.shape == (2, 1, 3) and np.all(np.isfinite(dx))


def test_file_and_format_errors(tmp_path):
    with pytest.raises(rnnc.FileError) as e:
        rnnc.load_file(tmp_path / "missing.safetensors")
    check_detail(e, "missing.safetensors")
    assert isinstance(e.value, OSError)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json at all}")
    with pytest.raises(rnnc.FormatError) as e:
        rnnc.load_file(bad)
    check_detail(e, "bad.safetensors")
    with pytest.raises(rnnc.FileError):
        rnnc.save_file({"a": np.ones(2, np.float32)}, tmp_path / "no" / "dir" / "a.safetensors")


def test_every_status_has_a_class():
    for s in range(1, 17):
        cls = rnnc.errors.BY_STATUS[s]
        assert issubclass(cls, rnnc.Error) and cls.status == s
        assert cls("x").status_name not in ("", "error")
