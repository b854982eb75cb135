#!/usr/bin/python3
"""Write the hostile-model corpus in tests/data/malformed/ (and its README.md).

Each file breaks one rule an ONNX importer must check; files named valid_* are controls that must
import. The generated files are committed; rerun this after changing it:

    /usr/bin/python3 scripts/make_malformed_corpus.py        (Debian's python3-onnx 1.12 + numpy)

Expectations (README column 2): "import error" (kiln::UserError from import_onnx), "valid" (imports),
or "rejected at shape inference" (imports; a later pass must raise the UserError).
"""
import os
import random
import struct
import sys

import numpy as np
from onnx import AttributeProto, TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "malformed")
WEIGHTS = "extdata_weights.bin"  # 16 floats 0..15, beside the extdata_* models
F = TensorProto.FLOAT
ENTRIES = []  # (file, expectation, description)


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=13, ir=8, extra_opsets=(), value_info=()):
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), initializer=list(inits),
                          value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), *extra_opsets])
    m.ir_version = ir
    return m


def relu_model(**kw):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2, 3])], [vi("y", [2, 3])], **kw)


def add_model(init, opset=13):
    """y = x + <init>; `init` is a TensorProto named 'w' with 6 floats worth of shape."""
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", [2, 3])], [vi("y", [2, 3])],
                 inits=[init], opset=opset)


def raw_tensor(name, dims, data_type=F, raw=b""):
    t = TensorProto(name=name, data_type=data_type, dims=dims)
    t.raw_data = raw
    return t


def ext_tensor(name, dims, **kv):
    t = TensorProto(name=name, data_type=F, dims=dims, data_location=TensorProto.EXTERNAL)
    for k, v in kv.items():
        e = t.external_data.add()
        e.key, e.value = k, str(v)
    return t


def emit(name, expect, what, m=None, raw=None):
    path = os.path.join(OUT, name)
    data = raw if raw is not None else m.SerializeToString()
    with open(path, "wb") as f:
        f.write(data)
    ENTRIES.append((name, expect, what))


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".onnx"):
            os.remove(os.path.join(OUT, old))
    with open(os.path.join(OUT, WEIGHTS), "wb") as f:
        f.write(np.arange(16, dtype=np.float32).tobytes())
    rng = random.Random(1234)
    good_w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    good = add_model(good_w).SerializeToString()
    E, V, S = "import error", "valid", "rejected at shape inference"

    # --- protobuf framing ---
    emit("protobuf_empty.onnx", E, "an empty file", raw=b"")
    emit("protobuf_truncated.onnx", E, "a valid model cut in the middle of a field", raw=good[: len(good) * 2 // 3])
    emit("protobuf_random_bytes.onnx", E, "4 KiB of random bytes", raw=bytes(rng.randrange(256) for _ in range(4096)))
    emit("protobuf_trailing_garbage.onnx", E, "a valid model followed by bytes that do not parse",
         raw=good + b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01")
    emit("protobuf_trailing_unknown_field.onnx", E, "a valid model followed by a well-formed unknown field 99",
         raw=good + bytes([0x98, 0x06, 0x2a]))
    emit("protobuf_text_format.onnx", E, "the protobuf text format instead of binary",
         raw=b'ir_version: 8\ngraph { name: "g" }\nopset_import { version: 13 }\n')
    emit("protobuf_length_past_end.onnx", E, "a graph field whose length prefix runs past the end of the file",
         raw=bytes([0x08, 0x08, 0x3a, 0xff, 0xff, 0xff, 0x7f]) + b"\x00" * 16)
    deep = helper.make_tensor_type_proto(F, [1])
    for _ in range(200):
        deep = helper.make_sequence_type_proto(deep)
    emit("protobuf_deep_nesting.onnx", E, "a type nested 200 levels deep (past protobuf's recursion limit)",
         model([], [helper.make_value_info("x", deep)], [vi("x", [1])]))
    m = helper.make_model(helper.make_graph([], "g", [], []), opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    m.ClearField("graph")
    emit("protobuf_no_graph.onnx", E, "a ModelProto without a graph", m)

    # --- versions ---
    emit("version_ir0.onnx", E, "ir_version 0 (missing)", relu_model(ir=0))
    emit("version_ir99.onnx", E, "ir_version 99", relu_model(ir=99))
    emit("version_opset5.onnx", E, "default-domain opset 5", relu_model(opset=5))
    emit("version_opset10.onnx", E, "default-domain opset 10 (Resize 10 and older forms)", relu_model(opset=10))
    emit("version_opset99.onnx", E, "default-domain opset 99", relu_model(opset=99))
    m = relu_model()
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    emit("version_no_default_opset.onnx", E, "imports only com.microsoft, no default-domain opset", m)
    emit("version_opset_twice.onnx", E, "the default domain imported twice ('' and 'ai.onnx')",
         relu_model(extra_opsets=[helper.make_opsetid("ai.onnx", 17)]))

    # --- initializer tensors ---
    emit("tensor_raw_length_mismatch.onnx", E, "f32 [2,3] with 20 bytes of raw_data (24 needed)",
         add_model(raw_tensor("w", [2, 3], raw=b"\0" * 20)))
    emit("tensor_raw_length_long.onnx", E, "f32 [2,3] with 28 bytes of raw_data (24 needed)",
         add_model(raw_tensor("w", [2, 3], raw=b"\0" * 28)))
    emit("tensor_negative_dim.onnx", E, "initializer dims [-1, 6]", add_model(raw_tensor("w", [-1, 6], raw=b"\0" * 24)))
    emit("tensor_dims_overflow.onnx", E, "initializer dims [2^62, 2^62]: numel overflows 64 bits",
         add_model(raw_tensor("w", [2**62, 2**62], raw=b"\0" * 24)))
    emit("tensor_bytes_overflow.onnx", E, "initializer dims [2^61, 2]: numel fits, numel * 4 bytes overflows",
         add_model(raw_tensor("w", [2**61, 2], raw=b"\0" * 24)))
    emit("tensor_huge_declared.onnx", E, "initializer dims [2^20, 2^20] f32 (4 TiB) with 24 bytes of data",
         add_model(raw_tensor("w", [2**20, 2**20], raw=b"\0" * 24)))
    emit("tensor_rank100.onnx", E, "initializer of rank 100 (all dims 1)", add_model(raw_tensor("w", [1] * 100, raw=b"\0" * 4)))
    s = helper.make_tensor("w", TensorProto.STRING, [2], [b"a", b"b"])
    emit("tensor_string.onnx", E, "a string initializer", add_model(s))
    emit("tensor_uint16.onnx", E, "a uint16 initializer (dtype kiln does not support)",
         add_model(raw_tensor("w", [2, 3], TensorProto.UINT16, b"\0" * 12)))
    emit("tensor_undefined_dtype.onnx", E, "an initializer with data_type UNDEFINED",
         add_model(raw_tensor("w", [2, 3], TensorProto.UNDEFINED, b"\0" * 24)))
    t = TensorProto(name="w", data_type=F, dims=[2, 3])
    t.float_data.extend([1, 2, 3, 4, 5])
    emit("tensor_typed_count_mismatch.onnx", E, "f32 [2,3] with 5 float_data values", add_model(t))
    emit("tensor_no_data.onnx", E, "f32 [2,3] with no data at all", add_model(TensorProto(name="w", data_type=F, dims=[2, 3])))
    t = TensorProto(name="w", data_type=F, dims=[2, 3])
    t.int64_data.extend([1] * 6)
    emit("tensor_wrong_typed_field.onnx", E, "f32 tensor whose values are in int64_data", add_model(t))
    t = raw_tensor("w", [2, 3], raw=b"\0" * 24)
    t.float_data.extend([1] * 6)
    emit("tensor_raw_and_typed.onnx", E, "both raw_data and float_data set", add_model(t))
    t = TensorProto(name="w", data_type=TensorProto.INT8, dims=[2])
    t.int32_data.extend([1, 300])
    emit("tensor_int8_out_of_range.onnx", E, "int8 tensor with 300 in int32_data",
         model([helper.make_node("Identity", ["w"], ["y"])], [], [vi("y", [2], TensorProto.INT8)], inits=[t]))
    emit("tensor_initializer_twice.onnx", E, "two initializers named 'w'", _with_extra_init(add_model(good_w), good_w))
    emit("tensor_segment.onnx", E, "a segmented tensor", add_model(_segmented()))

    # --- external data (extdata_weights.bin: 64 bytes) ---
    def ext(name, what, tensor, expect=E):
        emit(name, expect, what, add_model(tensor))
    ext("extdata_absolute.onnx", "location /etc/passwd (absolute)", ext_tensor("w", [2, 3], location="/etc/passwd"))
    ext("extdata_dotdot.onnx", "location ../extdata_weights.bin", ext_tensor("w", [2, 3], location="../" + WEIGHTS))
    ext("extdata_dotdot_nested.onnx", "location sub/../../x.bin", ext_tensor("w", [2, 3], location="sub/../../x.bin"))
    ext("extdata_backslash_dotdot.onnx", "location ..\\x.bin (Windows separators)", ext_tensor("w", [2, 3], location="..\\x.bin"))
    ext("extdata_symlink.onnx", "location extdata_link.bin: the test makes it a symlink to a file outside the folder "
        "(absent here: missing file)", ext_tensor("w", [2, 3], location="extdata_link.bin", offset=0, length=24))
    ext("extdata_missing_file.onnx", "location names a file that does not exist", ext_tensor("w", [2, 3], location="no_such.bin"))
    ext("extdata_directory.onnx", "location '.' (a directory, not a regular file)", ext_tensor("w", [2, 3], location="."))
    ext("extdata_no_location.onnx", "external data without a location key", ext_tensor("w", [2, 3], offset=0, length=24))
    ext("extdata_past_end.onnx", "offset 48 + length 24 past the 64-byte file",
        ext_tensor("w", [2, 3], location=WEIGHTS, offset=48, length=24))
    ext("extdata_offset_past_end.onnx", "offset 1000 (no length) past the 64-byte file",
        ext_tensor("w", [2, 3], location=WEIGHTS, offset=1000))
    ext("extdata_negative_offset.onnx", "offset -8", ext_tensor("w", [2, 3], location=WEIGHTS, offset=-8, length=24))
    ext("extdata_huge_offset.onnx", "offset 2^63-8 (past the end; + length 24 would overflow)",
        ext_tensor("w", [2, 3], location=WEIGHTS, offset=2**63 - 8, length=24))
    ext("extdata_overflow_offset.onnx", "offset 8 + length 2^63-1 overflows int64",
        ext_tensor("w", [2, 3], location=WEIGHTS, offset=8, length=2**63 - 1))
    ext("extdata_offset_too_big.onnx", "offset 2^64 (does not fit int64)", ext_tensor("w", [2, 3], location=WEIGHTS, offset=2**64, length=24))
    ext("extdata_offset_not_number.onnx", "offset '12abc'", ext_tensor("w", [2, 3], location=WEIGHTS, offset="12abc", length=24))
    ext("extdata_length_mismatch.onnx", "length 32 for a 24-byte tensor", ext_tensor("w", [2, 3], location=WEIGHTS, offset=0, length=32))
    ext("extdata_remaining_mismatch.onnx", "no length: the remaining 64 bytes are not the tensor's 24",
        ext_tensor("w", [2, 3], location=WEIGHTS))
    t = ext_tensor("w", [2, 3], location=WEIGHTS, offset=0, length=24)
    t.raw_data = b"\0" * 24
    ext("extdata_and_raw.onnx", "external data and raw_data both set", t)
    ext("valid_extdata.onnx", "f32 [2,3] from offset 16 of the weights file", ext_tensor("w", [2, 3], location=WEIGHTS, offset=16, length=24), V)
    ext("valid_extdata_unaligned.onnx", "f32 [2,3] from offset 2 (unaligned: copied, not mapped)",
        ext_tensor("w", [2, 3], location=WEIGHTS, offset=2, length=24), V)

    # --- graph structure ---
    emit("graph_cycle.onnx", E, "two nodes feeding each other",
         model([helper.make_node("Relu", ["b"], ["a"], name="r1"), helper.make_node("Add", ["x", "a"], ["b"], name="r2")],
               [vi("x", [2, 3])], [vi("b", [2, 3])]))
    emit("graph_self_cycle.onnx", E, "a node that consumes its own output",
         model([helper.make_node("Add", ["x", "y"], ["y"], name="add")], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("graph_dangling_input.onnx", E, "a node input that nothing produces",
         model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add")], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("graph_missing_output.onnx", E, "a graph output that nothing produces",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("z", [2, 3])]))
    emit("graph_duplicate_output.onnx", E, "two nodes produce the same value name 'y'",
         model([helper.make_node("Relu", ["x"], ["y"], name="a"), helper.make_node("Neg", ["x"], ["y"], name="b")],
               [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("graph_output_listed_twice.onnx", E, "graph output 'y' listed twice",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3]), vi("y", [2, 3])]))
    emit("graph_node_shadows_input.onnx", E, "a node output named like the graph input",
         model([helper.make_node("Relu", ["x"], ["x"])], [vi("x", [2, 3])], [vi("x", [2, 3])]))
    emit("graph_no_outputs.onnx", E, "a graph without outputs", model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], []))
    emit("graph_input_no_shape.onnx", E, "a runtime input without a shape (unknown rank)",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", None)], [vi("y", None)]))
    emit("graph_input_sequence.onnx", E, "a runtime input of sequence type",
         model([helper.make_node("Identity", ["x"], ["y"])],
               [helper.make_value_info("x", helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [2])))],
               [vi("y", [2])]))
    emit("graph_input_negative_dim.onnx", E, "a runtime input with dim_value -3",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, -3])], [vi("y", [2, 3])]))
    emit("graph_input_string.onnx", E, "a runtime input of string type",
         model([helper.make_node("Identity", ["x"], ["y"])], [vi("x", [2], TensorProto.STRING)], [vi("y", [2], TensorProto.STRING)]))
    emit("graph_input_rank100.onnx", E, "a runtime input of rank 100",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1] * 100)], [vi("y", [1] * 100)]))

    # --- operators and attributes ---
    emit("op_unknown.onnx", E, "default-domain op FooBar",
         model([helper.make_node("FooBar", ["x"], ["y"], name="foo")], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("op_unknown_domain.onnx", E, "com.microsoft::FusedMatMul",
         model([helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain="com.microsoft")], [vi("x", [3, 3])], [vi("y", [3, 3])],
               extra_opsets=[helper.make_opsetid("com.microsoft", 1)]))
    branch = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "b", [], [vi("t", [2, 3])])
    emit("op_if_subgraph.onnx", E, "an If node with then/else subgraphs",
         model([helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch, else_branch=branch)],
               [vi("c", [], TensorProto.BOOL), vi("x", [2, 3])], [vi("y", [2, 3])]))
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
                             [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL)], [vi("c_out", [], TensorProto.BOOL)])
    emit("op_loop_subgraph.onnx", E, "a Loop node",
         model([helper.make_node("Loop", ["n", "c"], [], name="loop", body=body)],
               [vi("n", [], TensorProto.INT64), vi("c", [], TensorProto.BOOL)], [vi("c", [], TensorProto.BOOL)]))
    emit("op_graph_attribute.onnx", E, "a Relu node with a GRAPH attribute",
         model([helper.make_node("Relu", ["x"], ["y"], body=branch)], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("attr_wrong_type.onnx", E, "opset-11 Softmax with a FLOAT axis (read by the importer's rewrite)",
         model([helper.make_node("Softmax", ["x"], ["y"], axis=1.0)], [vi("x", [2, 3])], [vi("y", [2, 3])], opset=11))
    a = helper.make_attribute("alpha", 0.5)
    a.ints.extend([1, 2])
    n = helper.make_node("LeakyRelu", ["x"], ["y"])
    n.attribute.append(a)
    emit("attr_declared_mismatch.onnx", E, "attribute declared FLOAT that also holds INTS",
         model([n], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    n = helper.make_node("LeakyRelu", ["x"], ["y"])
    n.attribute.append(AttributeProto(name="alpha", f=0.5))
    emit("attr_undefined_type.onnx", E, "attribute without a type", model([n], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    n = helper.make_node("LeakyRelu", ["x"], ["y"])
    n.attribute.append(AttributeProto(name="alpha", type=AttributeProto.FLOAT, ref_attr_name="outer"))
    emit("attr_ref_attr_name.onnx", E, "attribute referring to a function attribute",
         model([n], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    n = helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.5)
    n.attribute.append(helper.make_attribute("alpha", 0.25))
    emit("attr_duplicate.onnx", E, "the same attribute twice", model([n], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("attr_tensor_negative_dim.onnx", E, "Constant whose value tensor has dims [-2]",
         model([helper.make_node("Constant", [], ["y"], value=raw_tensor("v", [-2], raw=b"\0" * 8))], [], [vi("y", [2])]))
    emit("attr_tensor_raw_mismatch.onnx", E, "Constant whose value tensor has 3 bytes of raw_data for f32 [2]",
         model([helper.make_node("Constant", [], ["y"], value=raw_tensor("v", [2], raw=b"\0" * 3))], [], [vi("y", [2])]))
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0], np.float32), "v"),
                                       numpy_helper.from_array(np.array([0], np.int64), "i"), [2])
    emit("attr_sparse_tensor.onnx", E, "Constant with a sparse_value attribute",
         model([helper.make_node("Constant", [], ["y"], sparse_value=sparse)], [], [vi("y", [2])]))
    emit("node_axes_twice.onnx", E, "opset-11 Unsqueeze with both an axes attribute and a second input",
         model([helper.make_node("Unsqueeze", ["x", "x"], ["y"], axes=[0])], [vi("x", [2, 3])], [vi("y", [1, 2, 3])], opset=11))
    emit("attr_wrong_kind_transpose.onnx", S, "Transpose whose perm is FLOATS",
         model([helper.make_node("Transpose", ["x"], ["y"], perm=[1.0, 0.0])], [vi("x", [2, 3])], [vi("y", [3, 2])]))
    emit("node_too_many_inputs.onnx", S, "Relu with three inputs",
         model([helper.make_node("Relu", ["x", "x", "x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("shape_matmul_mismatch.onnx", S, "MatMul of [2,3] by [4,5]",
         model([helper.make_node("MatMul", ["x", "w"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 5])],
               inits=[numpy_helper.from_array(np.ones((4, 5), np.float32), "w")]))
    emit("shape_add_broadcast_mismatch.onnx", S, "Add of [2,3] and [4]",
         model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])],
               inits=[numpy_helper.from_array(np.ones((4,), np.float32), "w")]))

    # --- controls ---
    emit("valid_add.onnx", V, "y = x + w (inline raw_data)", add_model(good_w))
    t = TensorProto(name="w", data_type=F, dims=[2, 3])
    t.float_data.extend([1, 2, 3, 4, 5, 6])
    emit("valid_float_data.onnx", V, "y = x + w (w in float_data)", add_model(t))
    inits = [helper.make_tensor("h", TensorProto.FLOAT16, [2], np.array([1.5, -2], np.float16).view(np.uint16).tolist()),
             helper.make_tensor("b", TensorProto.BOOL, [3], [True, False, True]),
             helper.make_tensor("i8", TensorProto.INT8, [2], [-5, 7]),
             helper.make_tensor("u8", TensorProto.UINT8, [2], [200, 3]),
             helper.make_tensor("d", TensorProto.DOUBLE, [2], [0.25, 1e300]),
             helper.make_tensor("i64", TensorProto.INT64, [2], [-(2**40), 5]),
             helper.make_tensor("i32", TensorProto.INT32, [1], [-7]),
             helper.make_tensor("bf", TensorProto.BFLOAT16, [1], [0x3fc0]),
             TensorProto(name="empty", data_type=F, dims=[0, 3])]
    emit("valid_typed_fields.onnx", V, "initializers of every dtype in typed fields, and a zero-size one",
         model([helper.make_node("Identity", [t.name], [t.name + "_out"]) for t in inits], [],
               [helper.make_tensor_value_info(t.name + "_out", t.data_type, list(t.dims)) for t in inits], inits=inits))
    emit("valid_unsorted_nodes.onnx", V, "nodes listed consumers first (the importer sorts them)",
         model([helper.make_node("Neg", ["a"], ["y"], name="second"), helper.make_node("Relu", ["x"], ["a"], name="first")],
               [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("valid_optional_input.onnx", V, "Clip with the min input omitted (empty name) and max given",
         model([helper.make_node("Clip", ["x", "", "hi"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])],
               inits=[numpy_helper.from_array(np.array(1.0, np.float32), "hi")]))
    emit("valid_initializer_as_input.onnx", V, "ir_version 3 style: the initializer is also a graph input",
         model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2, 3]), vi("w", [2, 3])], [vi("y", [2, 3])],
               inits=[good_w], ir=3, opset=11))
    emit("valid_symbolic_dims.onnx", V, "inputs with dim_param and unnamed dims (run with --dim batch=2 --dim _in0_1=3)",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", ["batch", None, 4])], [vi("y", ["batch", None, 4])]))
    nodes = [helper.make_node("Unsqueeze", ["x"], ["u"], axes=[0]),
             helper.make_node("ReduceSum", ["u"], ["r"], axes=[0], keepdims=0),
             helper.make_node("ReduceMean", ["r"], ["m"], axes=[1], keepdims=1),
             helper.make_node("Split", ["x"], ["s0", "s1"], axis=1, split=[1, 2]),
             helper.make_node("Softmax", ["x3"], ["sm"], axis=1),
             helper.make_node("LogSoftmax", ["x"], ["lsm"], axis=1)]
    emit("valid_opset11_forms.onnx", V, "opset 11: axes/split attributes, Softmax over a middle axis and the last axis",
         model(nodes, [vi("x", [2, 3]), vi("x3", [2, 3, 4])],
               [vi("m", [2, 1]), vi("s0", [2, 1]), vi("s1", [2, 2]), vi("sm", [2, 3, 4]), vi("lsm", [2, 3])], opset=11))

    with open(os.path.join(OUT, "README.md"), "w") as f:
        f.write("# Hostile ONNX models\n\n"
                "Generated by `scripts/make_malformed_corpus.py` (python3-onnx 1.12); do not edit by hand.\n"
                "Every file breaks one rule; `valid_*` files are controls. `extdata_weights.bin` (16 float32\n"
                "values 0..15) is the external data file the `extdata_*` models point to.\n"
                "Expected: **import error** = kiln::UserError from import_onnx; **valid** = imports (and runs);\n"
                "**rejected at shape inference** = imports, and shape inference must raise the UserError.\n\n"
                "| file | expected | what |\n|---|---|---|\n")
        for name, expect, what in sorted(ENTRIES):
            f.write(f"| {name} | {expect} | {what} |\n")
    print(f"wrote {len(ENTRIES)} models to {os.path.normpath(OUT)}")


def _with_extra_init(m, t):
    m.graph.initializer.append(t)
    return m


def _segmented():
    t = raw_tensor("w", [2, 3], raw=b"\0" * 24)
    t.segment.begin = 0
    t.segment.end = 6
    return t


if __name__ == "__main__":
    sys.exit(main())
