"""The Python module `kiln` (src/python/kiln_module.cpp): sessions, numpy in and out, errors."""
import os
import subprocess
import threading

import numpy as np
import pytest

import kiln

SOURCE = os.environ["KILN_SOURCE_DIR"]
ADD = os.path.join(SOURCE, "tests", "data", "malformed", "valid_add.onnx")  # y = x + 1, x: f32[2,3]
SYMBOLIC = os.path.join(SOURCE, "tests", "data", "malformed", "valid_symbolic_dims.onnx")


def test_version_and_settings():
    assert kiln.__version__.count(".") == 2
    table = {s["name"]: s for s in kiln.settings()}
    assert table["autotune"]["default"] == "fast"
    assert table["autotune"]["accepted"] == "one of: off fast max"
    assert table["threads"]["env"] == "KILN_THREADS"


@pytest.mark.parametrize("mode", ["compiled", "eager", "reference"])
def test_run_matches_numpy(mode):
    s = kiln.Session(ADD, mode=mode)
    assert [i["name"] for i in s.inputs] == ["x"]
    # The fp64 oracle widens float inputs (given f32, they are widened on the way in).
    assert s.inputs[0]["dtype"] == ("f64" if mode == "reference" else "f32")
    assert s.inputs[0]["dims"] == ["2", "3"]
    x = np.array([[0.5, -1, np.inf], [np.nan, -0.0, 3]], dtype=np.float32)
    y = s.run({"x": x})["y"]
    assert y.shape == (2, 3)
    assert y.dtype == (np.float64 if mode == "reference" else np.float32)
    np.testing.assert_array_equal(y, (x.astype(np.float64) + 1).astype(y.dtype))


def test_inputs_are_read_in_place_or_converted():
    s = kiln.Session(ADD, settings={"autotune": "off"})
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(s.run({"x": x})["y"], x + 1)
    # Not C-contiguous: a contiguous copy is made, the values are the same.
    xt = np.arange(6, dtype=np.float32).reshape(3, 2).T
    np.testing.assert_array_equal(s.run({"x": xt})["y"], xt + 1)
    # A list is turned into an array by numpy (float64 here: the wrong dtype for this model).
    with pytest.raises(kiln.UserError, match="dtype"):
        s.run({"x": [[1, 2, 3], [4, 5, 6]]})


def test_read_only_and_foreign_byte_order_inputs():
    s = kiln.Session(ADD)
    x = np.broadcast_to(np.float32(2), (2, 3))  # read-only, not contiguous
    np.testing.assert_array_equal(s.run({"x": x})["y"], np.full((2, 3), 3, np.float32))
    frozen = np.ones((2, 3), np.float32)
    frozen.setflags(write=False)
    np.testing.assert_array_equal(s.run({"x": frozen})["y"], frozen + 1)
    with pytest.raises(kiln.UserError, match="byte order"):
        s.run({"x": np.ones((2, 3), dtype=">f4")})


def test_an_output_that_is_an_input_is_a_copy(tmp_path):
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [x, y])
    path = str(tmp_path / "passthrough.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    s = kiln.Session(path)
    given = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    out = s.run({"x": given})
    assert not np.shares_memory(out["x"], given)
    given[:] = 0
    np.testing.assert_array_equal(out["x"], [[1, -2, 3], [-4, 5, -6]])
    np.testing.assert_array_equal(out["y"], [[1, 0, 3], [0, 5, 0]])


def test_outputs_outlive_the_session():
    s = kiln.Session(ADD)
    y = s.run({"x": np.ones((2, 3), np.float32)})["y"]
    del s
    np.testing.assert_array_equal(y, np.full((2, 3), 2, np.float32))


def test_symbolic_dims():
    s = kiln.Session(SYMBOLIC, dims={"batch": 2, "_in0_1": 3})
    feeds = {}
    for i in s.inputs:
        shape = [int(d) if d.isdigit() else {"batch": 2, "_in0_1": 3}[d] for d in i["dims"]]
        feeds[i["name"]] = np.ones(shape, dtype=np.float32)
    out = s.run(feeds)
    assert len(out) == len(s.outputs)


def test_errors_are_python_exceptions():
    with pytest.raises(kiln.UserError, match="nonexistent"):
        kiln.Session("/nonexistent/model.onnx")
    with pytest.raises(kiln.UserError, match="not one of off, fast, max"):
        kiln.Session(ADD, settings={"autotune": "maybe"})
    with pytest.raises(kiln.UserError, match="mode must be"):
        kiln.Session(ADD, mode="fast")
    s = kiln.Session(ADD)
    with pytest.raises(kiln.UserError, match="input 'x'"):
        s.run({"x": np.ones((3, 3), np.float32)})
    with pytest.raises(kiln.UserError):
        s.run({})
    assert issubclass(kiln.UnsupportedError, kiln.UserError)
    assert issubclass(kiln.UserError, ValueError)


def test_runs_from_threads():
    s = kiln.Session(ADD)
    results = {}

    def work(t):
        results[t] = s.run({"x": np.full((2, 3), t, np.float32)})["y"]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for t in range(4):
        np.testing.assert_array_equal(results[t], np.full((2, 3), t + 1, np.float32))


def test_a_saved_model_loads_and_a_damaged_one_is_refused(tmp_path):
    # kiln compile -o writes it (the module has no compile-to-file call); Session(path) tells it from ONNX.
    saved = tmp_path / "add.kiln"
    env = dict(os.environ, KILN_CACHE_DIR=str(tmp_path / "cache"))
    subprocess.run([os.environ["KILN_BINARY"], "compile", ADD, "-o", str(saved)], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    s = kiln.Session(str(saved))
    x = np.array([[0.5, -1, np.inf], [np.nan, -0.0, 3]], dtype=np.float32)
    np.testing.assert_array_equal(s.run({"x": x})["y"], x + 1)
    damaged = bytearray(saved.read_bytes())
    damaged[len(damaged) // 2] ^= 0x10
    (tmp_path / "damaged.kiln").write_bytes(bytes(damaged))
    with pytest.raises(kiln.UserError, match="damaged"):
        kiln.Session(str(tmp_path / "damaged.kiln"))
