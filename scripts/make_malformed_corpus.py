#!/usr/bin/python3
"""Write the hostile-model corpus in tests/data/malformed/ (and its README.md).

Each file breaks one rule an ONNX importer or compiler must check; files named valid_* are controls
that must import and run. The generated files are committed; rerun this after changing it:

    /usr/bin/python3 scripts/make_malformed_corpus.py        (Debian's python3-onnx 1.12 + numpy)

The script owns the whole folder: it deletes everything there (files, symlinks, folders) and writes
it again, byte for byte the same on every run. Cases that expose a kiln bug not fixed yet go to
tests/data/malformed_pending/ instead (PENDING below), so that the suite stays green.

Expectations (README column 2): "import error" (kiln::UserError from import_onnx), "valid" (imports
and runs), or "rejected at shape inference" (imports; a later step, shape inference or the run, must
raise the UserError). Column 3 is the class: protobuf, graph, type, shape, attribute, external-data,
control.
"""
import gzip
import os
import random
import shutil
import sys

import numpy as np
from onnx import AttributeProto, TensorProto, TypeProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data")
OUT = os.path.join(DATA, "malformed")
PENDING_OUT = os.path.join(DATA, "malformed_pending")
WEIGHTS = "extdata_weights.bin"  # 16 floats 0..15, beside the extdata_* models
F = TensorProto.FLOAT
I64 = TensorProto.INT64
E, V, S = "import error", "valid", "rejected at shape inference"
CLASSES = ["protobuf", "graph", "type", "shape", "attribute", "external-data", "control"]
PREFIX_CLASS = {"protobuf_": "protobuf", "graph_": "graph", "version_": "graph", "op_": "graph", "type_": "type",
                "shape_": "shape", "attr_": "attribute", "extdata_": "external-data", "valid_": "control"}
# Older files whose prefix does not name their class.
NAME_CLASS = {
    "graph_input_sequence.onnx": "type", "graph_input_string.onnx": "type", "graph_input_no_shape.onnx": "shape",
    "graph_input_negative_dim.onnx": "shape", "graph_input_rank100.onnx": "shape",
    "op_graph_attribute.onnx": "attribute", "node_axes_twice.onnx": "attribute", "node_too_many_inputs.onnx": "graph",
    "tensor_initializer_twice.onnx": "graph",
    **{f"tensor_{n}.onnx": "type" for n in ["string", "uint16", "undefined_dtype", "wrong_typed_field",
                                             "int8_out_of_range", "raw_and_typed", "segment", "no_data"]},
    **{f"tensor_{n}.onnx": "shape" for n in ["raw_length_mismatch", "raw_length_long", "negative_dim",
                                              "dims_overflow", "bytes_overflow", "huge_declared", "rank100",
                                              "typed_count_mismatch"]},
}
# Cases that make kiln fail other than cleanly today (see the report that added them): written to
# tests/data/malformed_pending/ until kiln is fixed, then moved back by deleting the name here.
PENDING = set()  # every case that found a kiln bug has been fixed (see git history for the list)
ENTRIES = {OUT: [], PENDING_OUT: []}  # folder -> [(file, expectation, class, description)]


def vi(name, shape, elem=F):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=13, ir=8, extra_opsets=(), value_info=()):
    g = helper.make_graph(list(nodes), "g", list(inputs), list(outputs), initializer=list(inits),
                          value_info=list(value_info))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset), *extra_opsets])
    m.ir_version = ir
    return m


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=outputs[0] if outputs else op.lower(), **attrs)


def relu_model(**kw):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2, 3])], [vi("y", [2, 3])], **kw)


def add_model(init, opset=13):
    """y = x + <init>; `init` is a TensorProto named 'w' with 6 floats worth of shape."""
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add")], [vi("x", [2, 3])], [vi("y", [2, 3])],
                 inits=[init], opset=opset)


def const(name, values, dtype=None):
    return numpy_helper.from_array(np.array(values, dtype=dtype or np.float32), name)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


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


# --- raw protobuf encoding, for files the onnx helpers cannot write ---
def varint(n):
    n &= (1 << 64) - 1  # negative numbers as 10-byte two's complement, like protobuf
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def key(field, wire_type):
    return varint(field << 3 | wire_type)


def ld(field, payload):
    """A length-delimited field."""
    return key(field, 2) + varint(len(payload)) + payload


def model_bytes(graph_payload, ir=8, opset=13):
    """ModelProto bytes: ir_version (1), graph (7), opset_import (8) as onnx writes them."""
    return key(1, 0) + varint(ir) + ld(7, graph_payload) + ld(8, key(2, 0) + varint(opset))


def class_of(name):
    if name in NAME_CLASS:
        return NAME_CLASS[name]
    for prefix, cls in PREFIX_CLASS.items():
        if name.startswith(prefix):
            return cls
    raise ValueError(f"{name}: no class")


def emit(name, expect, what, m=None, raw=None):
    assert name.endswith(".onnx") and all(name != e[0] for es in ENTRIES.values() for e in es), name
    folder = PENDING_OUT if name in PENDING else OUT
    data = raw if raw is not None else m.SerializeToString()
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)
    ENTRIES[folder].append((name, expect, class_of(name), what))


def clear_folder(folder):
    """Removes everything in `folder` (links themselves, never what they point to)."""
    os.makedirs(folder, exist_ok=True)
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def write_side_files(folder):
    """The external data files and links the extdata_* models point to."""
    with open(os.path.join(folder, WEIGHTS), "wb") as f:
        f.write(np.arange(16, dtype=np.float32).tobytes())
    os.makedirs(os.path.join(folder, "extdata_sub"))
    with open(os.path.join(folder, "extdata_sub", "weights.bin"), "wb") as f:
        f.write(np.arange(6, dtype=np.float32).tobytes())
    open(os.path.join(folder, "extdata_empty.bin"), "wb").close()
    links = {
        "extdata_link_absolute.bin": "/etc/passwd",                 # out of the folder, absolute
        "extdata_link_relative.bin": "../../../CMakeLists.txt",     # out of the folder, relative
        "extdata_link_chain.bin": "extdata_link_relative.bin",      # inside, then out
        "extdata_link_loop_a.bin": "extdata_link_loop_b.bin",       # a loop
        "extdata_link_loop_b.bin": "extdata_link_loop_a.bin",
        "extdata_link_dir": "../fuzz_regressions",                  # a folder outside (not an ancestor)
        "extdata_link_inside.bin": WEIGHTS,                         # inside: allowed
    }
    for link, target in links.items():
        os.symlink(target, os.path.join(folder, link))


def main():
    for folder in ENTRIES:
        clear_folder(folder)
    write_side_files(OUT)
    protobuf_cases()
    version_and_graph_cases()
    tensor_cases()
    extdata_cases()
    operator_and_attribute_cases()
    new_graph_cases()
    type_cases()
    shape_cases()
    attribute_cases()
    operator_cases()
    controls()
    compiled_controls()
    for folder, entries in ENTRIES.items():
        write_readme(folder, entries)
    if not ENTRIES[PENDING_OUT]:
        shutil.rmtree(PENDING_OUT)
    counts = {c: sum(1 for e in ENTRIES[OUT] if e[2] == c) for c in CLASSES}
    print(f"wrote {len(ENTRIES[OUT])} models to {os.path.normpath(OUT)}: "
          + ", ".join(f"{c} {n}" for c, n in counts.items()))
    if ENTRIES[PENDING_OUT]:
        print(f"wrote {len(ENTRIES[PENDING_OUT])} models to {os.path.normpath(PENDING_OUT)}")


def write_readme(folder, entries):
    if not entries:
        return
    pending = folder == PENDING_OUT
    with open(os.path.join(folder, "README.md"), "w") as f:
        f.write("# Hostile ONNX models" + (" that kiln does not handle cleanly yet\n\n" if pending else "\n\n"))
        f.write("Generated by `scripts/make_malformed_corpus.py` (python3-onnx 1.12); do not edit by hand.\n")
        if pending:
            f.write("kiln does not handle these cleanly yet (it accepts them, exits 2, or rejects them only because\n"
                    "malloc fails; PENDING in the script says which). When kiln is fixed, remove the name from\n"
                    "PENDING and the file moves to ../malformed. Same columns as there.\n\n")
        else:
            f.write("Every file breaks one rule; `valid_*` files are controls. `extdata_weights.bin` (16 float32\n"
                    "values 0..15), `extdata_sub/weights.bin` (6 float32 values 0..5), `extdata_empty.bin` (0 bytes)\n"
                    "and the `extdata_link_*` symbolic links (made by the script; some point out of the folder)\n"
                    "are what the `extdata_*` models point to.\n"
                    "Expected: **import error** = kiln::UserError from import_onnx; **valid** = imports and runs;\n"
                    "**rejected at shape inference** = imports, and a later step (shape inference, constant\n"
                    "folding or the run itself) must raise the UserError. `kiln run` must exit 1 with\n"
                    "`kiln: error:` on every file but the controls (tests/malformed_cli.sh).\n\n")
            f.write("| class | files |\n|---|---|\n")
            for c in CLASSES:
                f.write(f"| {c} | {sum(1 for e in entries if e[2] == c)} |\n")
            f.write(f"| total | {len(entries)} |\n\n")
        f.write("| file | expected | class | what |\n|---|---|---|---|\n")
        for name, expect, cls, what in sorted(entries):
            f.write(f"| {name} | {expect} | {cls} | {what} |\n")


def good_add_bytes():
    return add_model(numpy_helper.from_array(np.ones((2, 3), np.float32), "w")).SerializeToString()


# ---------------------------------------------------------------------------------------------------
# protobuf: the bytes are not a well-formed ModelProto
def protobuf_cases():
    rng = random.Random(1234)
    good = good_add_bytes()
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

    # Truncations at several places: inside the first field, inside the weights, exactly between two
    # top-level fields (parses, but the opset imports are gone), and one byte short.
    weights_at = good.index(np.ones(1, np.float32).tobytes())
    opset_at = len(good) - len(ld(8, helper.make_opsetid("", 13).SerializeToString()))
    assert good[opset_at] == 0x42, "opset_import is not the last field"
    emit("protobuf_truncated_1byte.onnx", E, "only the first byte of a valid model (a tag without its value)",
         raw=good[:1])
    emit("protobuf_truncated_in_weights.onnx", E, "a valid model cut inside the initializer's raw_data",
         raw=good[: weights_at + 5])
    emit("protobuf_truncated_field_boundary.onnx", E,
         "a valid model cut exactly before opset_import: parses, but has no default-domain opset", raw=good[:opset_at])
    emit("protobuf_truncated_last_byte.onnx", E, "a valid model without its last byte", raw=good[:-1])
    assert good[:2] == b"\x08\x08"
    body = good[2:]
    emit("protobuf_wire_type_ir_version.onnx", E, "ir_version (field 1) written length-delimited instead of varint",
         raw=ld(1, b"\x08") + body)
    emit("protobuf_wire_type_graph.onnx", E, "graph (field 7) written as a varint instead of a message",
         raw=b"\x08\x08" + key(7, 0) + varint(1) + good[opset_at:])
    relu = relu_model()
    relu.graph.ClearField("node")
    bad_node = ld(1, b"x") + ld(2, b"y") + ld(3, b"relu") + key(4, 0) + varint(7)
    emit("protobuf_wire_type_op_type.onnx", E, "a node whose op_type (field 4) is a varint: the node has no op_type",
         raw=model_bytes(ld(1, bad_node) + relu.graph.SerializeToString()))
    emit("protobuf_varint_11_bytes.onnx", E, "ir_version as an 11-byte varint (protobuf allows 10)",
         raw=b"\x08" + b"\xff" * 10 + b"\x01" + body)
    emit("protobuf_varint_all_ones.onnx", E, "ir_version as a 10-byte varint with every bit set (-1)",
         raw=b"\x08" + b"\xff" * 9 + b"\x01" + body)
    emit("protobuf_length_negative.onnx", E, "a graph field whose length is a 10-byte varint for -1",
         raw=b"\x08\x08" + key(7, 2) + varint(-1) + body[1:])
    inner = key(1, 2) + varint(100) + b"abc"
    emit("protobuf_nested_length_past_parent.onnx", E,
         "a node whose length runs past the end of its graph field (but not of the file)",
         raw=b"\x08\x08" + ld(7, inner) + ld(8, key(2, 0) + varint(13)) + b"\x00" * 120)
    emit("protobuf_group_unclosed.onnx", E, "a valid model followed by a start-group tag that is never closed",
         raw=good + key(50, 3))
    emit("protobuf_group_end_stray.onnx", E, "a valid model followed by an end-group tag with no group open",
         raw=good + key(50, 4))
    emit("protobuf_field_number_zero.onnx", E, "a field with number 0 (invalid tag) before a valid model",
         raw=b"\x00\x01" + good)
    emit("protobuf_wire_type_6.onnx", E, "a field with wire type 6 (reserved)", raw=good + key(5, 6) + b"\x01")
    tensor = ld(1, b"\x02\x80") + key(2, 0) + varint(F) + ld(8, b"w") + ld(9, b"\0" * 24)
    g = add_model(raw_tensor("w", [2, 3], raw=b"\0" * 24)).graph
    g.ClearField("initializer")
    emit("protobuf_packed_dims_truncated.onnx", E, "an initializer whose packed dims end in half a varint",
         raw=model_bytes(ld(5, tensor) + g.SerializeToString()))
    emit("protobuf_gzip.onnx", E, "a valid model compressed with gzip", raw=gzip.compress(good, mtime=0))
    graph_payload = add_model(numpy_helper.from_array(np.ones((2, 3), np.float32), "w")).graph.SerializeToString()
    emit("protobuf_graph_field_twice.onnx", E,
         "the graph field twice: protobuf merges them, so every name is defined twice", raw=good + ld(7, graph_payload))
    emit("protobuf_tensor_as_model.onnx", E, "a serialized TensorProto (an input .pb file) instead of a model",
         raw=numpy_helper.from_array(np.ones((2, 3), np.float32), "x").SerializeToString())
    g = helper.make_graph([node("Relu", ["x"], ["y"])], "g0", [vi("x", [2, 3])], [vi("y", [2, 3])])
    for level in range(1, 120):
        g = helper.make_graph([node("If", ["c"], ["y"], then_branch=g, else_branch=g)] if level == 1 else
                              [node("If", ["c"], ["y"], then_branch=g)], f"g{level}",
                              [vi("c", [], TensorProto.BOOL)], [vi("y", [2, 3])])
    emit("protobuf_deep_subgraphs.onnx", E, "If nodes nested 120 levels deep in then_branch (past the recursion limit)",
         model(g.node, g.input, g.output))


# ---------------------------------------------------------------------------------------------------
# graph: versions, opsets, names, edges, operators and subgraphs (first the original cases)
def version_and_graph_cases():
    emit("version_ir0.onnx", E, "ir_version 0 (missing)", relu_model(ir=0))
    emit("version_ir99.onnx", E, "ir_version 99", relu_model(ir=99))
    emit("version_opset0.onnx", E, "default-domain opset 0 (kiln reads 1 to 28)", relu_model(opset=0))
    emit("version_opset5.onnx", E, "default-domain opset 5: Relu-1 (with consumed_inputs), a version kiln does not read",
         relu_model(opset=5))
    emit("valid_opset6.onnx", V, "default-domain opset 6: Relu-6, read as the newest Relu", relu_model(opset=6))
    emit("valid_opset7.onnx", V, "default-domain opset 7, the oldest from which kiln reads every version",
         relu_model(opset=7))
    emit("version_opset29.onnx", E, "default-domain opset 29 (one past the newest kiln reads)", relu_model(opset=29))
    emit("version_opset99.onnx", E, "default-domain opset 99", relu_model(opset=99))
    m = relu_model()
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    emit("version_no_default_opset.onnx", E, "imports only com.microsoft, no default-domain opset", m)
    emit("version_opset_twice.onnx", E, "the default domain imported twice ('' and 'ai.onnx')",
         relu_model(extra_opsets=[helper.make_opsetid("ai.onnx", 17)]))

    emit("graph_cycle.onnx", E, "two nodes feeding each other",
         model([helper.make_node("Relu", ["b"], ["a"], name="r1"),
                helper.make_node("Add", ["x", "a"], ["b"], name="r2")],
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
    emit("graph_no_outputs.onnx", E, "a graph without outputs",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], []))
    emit("graph_input_no_shape.onnx", E, "a runtime input without a shape (unknown rank)",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", None)], [vi("y", None)]))
    emit("graph_input_sequence.onnx", E, "a runtime input of sequence type",
         model([helper.make_node("Identity", ["x"], ["y"])],
               [helper.make_value_info("x", helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [2])))],
               [vi("y", [2])]))
    emit("graph_input_negative_dim.onnx", E, "a runtime input with dim_value -3",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [2, -3])], [vi("y", [2, 3])]))
    emit("graph_input_string.onnx", E, "a runtime input of string type",
         model([helper.make_node("Identity", ["x"], ["y"])], [vi("x", [2], TensorProto.STRING)],
               [vi("y", [2], TensorProto.STRING)]))
    emit("graph_input_rank100.onnx", E, "a runtime input of rank 100",
         model([helper.make_node("Relu", ["x"], ["y"])], [vi("x", [1] * 100)], [vi("y", [1] * 100)]))


# type and shape of initializers (the original cases)
def tensor_cases():
    good_w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
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
    emit("tensor_rank100.onnx", E, "initializer of rank 100 (all dims 1)",
         add_model(raw_tensor("w", [1] * 100, raw=b"\0" * 4)))
    s = helper.make_tensor("w", TensorProto.STRING, [2], [b"a", b"b"])
    emit("tensor_string.onnx", E, "a string initializer", add_model(s))
    emit("tensor_uint16.onnx", S, "a uint16 initializer added to an f32 input (the types differ)",
         add_model(raw_tensor("w", [2, 3], TensorProto.UINT16, b"\0" * 12)))
    emit("tensor_undefined_dtype.onnx", E, "an initializer with data_type UNDEFINED",
         add_model(raw_tensor("w", [2, 3], TensorProto.UNDEFINED, b"\0" * 24)))
    t = TensorProto(name="w", data_type=F, dims=[2, 3])
    t.float_data.extend([1, 2, 3, 4, 5])
    emit("tensor_typed_count_mismatch.onnx", E, "f32 [2,3] with 5 float_data values", add_model(t))
    emit("tensor_no_data.onnx", E, "f32 [2,3] with no data at all",
         add_model(TensorProto(name="w", data_type=F, dims=[2, 3])))
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
    m = add_model(good_w)
    m.graph.initializer.append(good_w)
    emit("tensor_initializer_twice.onnx", E, "two initializers named 'w'", m)
    t = raw_tensor("w", [2, 3], raw=b"\0" * 24)
    t.segment.begin = 0
    t.segment.end = 6
    emit("tensor_segment.onnx", E, "a segmented tensor", add_model(t))


# ---------------------------------------------------------------------------------------------------
# external data (extdata_weights.bin: 64 bytes; extdata_sub/weights.bin: 24 bytes; extdata_empty.bin: 0)
def extdata_cases():
    def ext(name, what, tensor, expect=E):
        emit(name, expect, what, add_model(tensor))

    def at(location, **kv):
        return ext_tensor("w", [2, 3], location=location, **kv)

    ext("extdata_absolute.onnx", "location /etc/passwd (absolute)", at("/etc/passwd"))
    ext("extdata_dotdot.onnx", "location ../extdata_weights.bin", at("../" + WEIGHTS))
    ext("extdata_dotdot_nested.onnx", "location sub/../../x.bin", at("sub/../../x.bin"))
    ext("extdata_backslash_dotdot.onnx", "location ..\\x.bin (Windows separators)", at("..\\x.bin"))
    ext("extdata_symlink.onnx", "location extdata_link.bin: the test makes it a symlink to a file outside the folder "
        "(absent here: missing file)", at("extdata_link.bin", offset=0, length=24))
    ext("extdata_missing_file.onnx", "location names a file that does not exist", at("no_such.bin"))
    ext("extdata_directory.onnx", "location '.' (a directory, not a regular file)", at("."))
    ext("extdata_no_location.onnx", "external data without a location key",
        ext_tensor("w", [2, 3], offset=0, length=24))
    ext("extdata_past_end.onnx", "offset 48 + length 24 past the 64-byte file", at(WEIGHTS, offset=48, length=24))
    ext("extdata_offset_past_end.onnx", "offset 1000 (no length) past the 64-byte file", at(WEIGHTS, offset=1000))
    ext("extdata_negative_offset.onnx", "offset -8", at(WEIGHTS, offset=-8, length=24))
    ext("extdata_huge_offset.onnx", "offset 2^63-8 (past the end; + length 24 would overflow)",
        at(WEIGHTS, offset=2**63 - 8, length=24))
    ext("extdata_overflow_offset.onnx", "offset 8 + length 2^63-1 overflows int64",
        at(WEIGHTS, offset=8, length=2**63 - 1))
    ext("extdata_offset_too_big.onnx", "offset 2^64 (does not fit int64)", at(WEIGHTS, offset=2**64, length=24))
    ext("extdata_offset_not_number.onnx", "offset '12abc'", at(WEIGHTS, offset="12abc", length=24))
    ext("extdata_length_mismatch.onnx", "length 32 for a 24-byte tensor", at(WEIGHTS, offset=0, length=32))
    ext("extdata_remaining_mismatch.onnx", "no length: the remaining 64 bytes are not the tensor's 24", at(WEIGHTS))
    t = at(WEIGHTS, offset=0, length=24)
    t.raw_data = b"\0" * 24
    ext("extdata_and_raw.onnx", "external data and raw_data both set", t)
    ext("valid_extdata.onnx", "f32 [2,3] from offset 16 of the weights file", at(WEIGHTS, offset=16, length=24), V)
    ext("valid_extdata_unaligned.onnx", "f32 [2,3] from offset 2 (unaligned: copied, not mapped)",
        at(WEIGHTS, offset=2, length=24), V)

    # Links made by the script (write_side_files).
    ext("extdata_link_absolute.onnx", "location extdata_link_absolute.bin, a symlink to /etc/passwd",
        at("extdata_link_absolute.bin", offset=0, length=24))
    ext("extdata_link_relative.onnx", "location extdata_link_relative.bin, a symlink to ../../../CMakeLists.txt",
        at("extdata_link_relative.bin", offset=0, length=24))
    ext("extdata_link_chain.onnx", "a symlink to a symlink inside the folder that points out of it",
        at("extdata_link_chain.bin", offset=0, length=24))
    ext("extdata_link_loop.onnx", "two symlinks pointing at each other",
        at("extdata_link_loop_a.bin", offset=0, length=24))
    ext("extdata_link_dir.onnx", "location extdata_link_dir/README.md through a symlinked folder outside",
        at("extdata_link_dir/README.md", offset=0, length=24))
    ext("extdata_subdir_is_dir.onnx", "location extdata_sub (a folder)", at("extdata_sub"))
    ext("extdata_trailing_slash.onnx", "location extdata_weights.bin/ (a file used as a folder)", at(WEIGHTS + "/"))
    ext("extdata_location_nul.onnx", "location with a NUL byte: extdata_weights.bin\\0../../etc/passwd",
        at(WEIGHTS + "\0../../etc/passwd", offset=0, length=24))
    ext("extdata_location_empty.onnx", "location ''", at("", offset=0, length=24))
    ext("extdata_location_twice.onnx", "two location keys (a good one, then /etc/passwd)",
        _two_locations())
    ext("extdata_dotdot_back_inside.onnx", "location extdata_sub/../extdata_weights.bin ('..' is refused even when "
        "it comes back inside)", at("extdata_sub/../" + WEIGHTS, offset=0, length=24))
    ext("extdata_backslash_absolute.onnx", "location \\etc\\passwd (absolute with Windows separators)",
        at("\\etc\\passwd"))
    ext("extdata_file_uri.onnx", "location file:///etc/passwd (a URI: a relative name that does not exist)",
        at("file:///etc/passwd", offset=0, length=24))
    ext("extdata_home_tilde.onnx", "location ~/.ssh/id_rsa (no shell expansion: a name that does not exist)",
        at("~/.ssh/id_rsa", offset=0, length=24))
    ext("extdata_windows_drive.onnx", "location C:\\weights.bin (a drive path: a name that does not exist)",
        at("C:\\weights.bin", offset=0, length=24))
    ext("extdata_offset_plus_sign.onnx", "offset '+8'", at(WEIGHTS, offset="+8", length=24))
    ext("extdata_offset_hex.onnx", "offset '0x10'", at(WEIGHTS, offset="0x10", length=24))
    ext("extdata_offset_space.onnx", "offset ' 8' (leading space)", at(WEIGHTS, offset=" 8", length=24))
    ext("extdata_length_empty.onnx", "length '' (present, empty)", at(WEIGHTS, offset=0, length=""))
    ext("extdata_length_zero.onnx", "length 0 for a 24-byte tensor", at(WEIGHTS, offset=0, length=0))
    ext("extdata_length_huge.onnx", "length 2^62 (past the end)", at(WEIGHTS, offset=0, length=2**62))
    ext("extdata_empty_file.onnx", "a 0-byte file for a 24-byte tensor", at("extdata_empty.bin"))
    t = ext_tensor("w", [2**62, 4], location=WEIGHTS, offset=0, length=24)
    ext("extdata_dims_overflow.onnx", "external data for dims [2^62, 4] (numel * 4 overflows)", t)
    t = ext_tensor("w", [2, 3], location=WEIGHTS, offset=0, length=24)
    t.data_type = TensorProto.STRING
    ext("extdata_string_dtype.onnx", "a string tensor stored as external data", t)
    emit("extdata_constant_attr_dotdot.onnx", E, "a Constant whose value attribute holds external data at ../x.bin",
         model([node("Constant", [], ["y"], value=ext_tensor("v", [2, 3], location="../x.bin"))], [],
               [vi("y", [2, 3])]))
    emit("extdata_constant_attr_absolute.onnx", E,
         "a Constant whose value attribute holds external data at /etc/passwd",
         model([node("Constant", [], ["y"],
                     value=ext_tensor("v", [2, 3], location="/etc/passwd", offset=0, length=24))],
               [], [vi("y", [2, 3])]))

    ext("valid_extdata_subdir.onnx", "f32 [2,3] from extdata_sub/weights.bin (a file in a subfolder)",
        at("extdata_sub/weights.bin"), V)
    ext("valid_extdata_dot_slash.onnx", "location ./extdata_weights.bin", at("./" + WEIGHTS, offset=0, length=24), V)
    ext("valid_extdata_symlink_inside.onnx", "location extdata_link_inside.bin, a symlink to a file in the folder",
        at("extdata_link_inside.bin", offset=8, length=24), V)
    emit("valid_extdata_constant_attr.onnx", V, "y = x + Constant, the Constant's value from external data",
         model([node("Constant", [], ["c"], value=ext_tensor("v", [2, 3], location=WEIGHTS, offset=24, length=24)),
                node("Add", ["x", "c"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("valid_extdata_zero_size.onnx", V, "y = Concat(x, w) with w f32 [0,3] from a 0-byte file",
         model([node("Concat", ["x", "w"], ["y"], axis=0)], [vi("x", [2, 3])], [vi("y", [2, 3])],
               inits=[ext_tensor("w", [0, 3], location="extdata_empty.bin")]))


def _two_locations():
    t = ext_tensor("w", [2, 3], location=WEIGHTS, offset=0, length=24)
    e = t.external_data.add()
    e.key, e.value = "location", "/etc/passwd"
    return t


# operators and attributes (the original cases)
def operator_and_attribute_cases():
    emit("op_unknown.onnx", E, "default-domain op FooBar",
         model([helper.make_node("FooBar", ["x"], ["y"], name="foo")], [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("op_unknown_domain.onnx", E, "com.microsoft::FusedMatMul",
         model([helper.make_node("FusedMatMul", ["x", "x"], ["y"], domain="com.microsoft")], [vi("x", [3, 3])],
               [vi("y", [3, 3])],
               extra_opsets=[helper.make_opsetid("com.microsoft", 1)]))
    branch = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "b", [], [vi("t", [2, 3])])
    emit("valid_if_subgraph.onnx", V, "an If whose branches (Relu) read x from the outer graph",
         model([helper.make_node("If", ["c"], ["y"], name="if", then_branch=branch, else_branch=branch)],
               [vi("c", [], TensorProto.BOOL), vi("x", [2, 3])], [vi("y", [2, 3])]))
    two_outputs = helper.make_graph([helper.make_node("Relu", ["x"], ["t"])], "b", [], [vi("t", [2, 3]), vi("x", [2, 3])])
    emit("op_if_branch_outputs.onnx", E, "an If whose then_branch has 2 outputs for the node's 1",
         model([helper.make_node("If", ["c"], ["y"], name="if", then_branch=two_outputs, else_branch=branch)],
               [vi("c", [], TensorProto.BOOL), vi("x", [2, 3])], [vi("y", [2, 3])]))
    unknown = helper.make_graph([helper.make_node("Relu", ["nope"], ["t"])], "b", [], [vi("t", [2, 3])])
    emit("op_if_unknown_name.onnx", E, "an If branch reading 'nope', which no enclosing graph defines",
         model([helper.make_node("If", ["c"], ["y"], name="if", then_branch=unknown, else_branch=branch)],
               [vi("c", [], TensorProto.BOOL), vi("x", [2, 3])], [vi("y", [2, 3])]))
    deep = helper.make_graph([helper.make_node("Relu", ["x"], ["o0"])], "leaf", [], [vi("o0", [2, 3])])
    for d in range(1, 21):  # protobuf parses about 30 levels; kiln stops at 16
        deep = helper.make_graph([helper.make_node("If", ["c"], [f"o{d}"], name=f"if{d}", then_branch=deep,
                                                   else_branch=branch)], f"level{d}", [], [vi(f"o{d}", [2, 3])])
    emit("op_if_nested_too_deep.onnx", E, "21 nested Ifs, over kiln's bound of 16 levels of subgraphs",
         model([helper.make_node("If", ["c"], ["y"], name="if", then_branch=deep, else_branch=branch)],
               [vi("c", [], TensorProto.BOOL), vi("x", [2, 3])], [vi("y", [2, 3])]))
    body = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"])], "body",
                             [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL)],
                             [vi("c_out", [], TensorProto.BOOL)])
    emit("op_loop_subgraph.onnx", E, "a Loop node without outputs (Loop makes at least one)",
         model([helper.make_node("Loop", ["n", "c"], [], name="loop", body=body)],
               [vi("n", [], TensorProto.INT64), vi("c", [], TensorProto.BOOL)], [vi("c", [], TensorProto.BOOL)]))
    forever = helper.make_graph([helper.make_node("Identity", ["c_in"], ["c_out"]),
                                 helper.make_node("Neg", ["x_in"], ["x_out"])], "body",
                                [vi("i", [], TensorProto.INT64), vi("c_in", [], TensorProto.BOOL), vi("x_in", [2, 3])],
                                [vi("c_out", [], TensorProto.BOOL), vi("x_out", [2, 3])])
    emit("op_loop_never_ends.onnx", S, "a Loop without a trip count whose body keeps cond true (runs until "
         "max_loop_iterations)",
         model([helper.make_node("Loop", ["", "c", "x"], ["y"], name="loop", body=forever)],
               [vi("x", [2, 3])], [vi("y", [2, 3])], inits=[helper.make_tensor("c", TensorProto.BOOL, [], [True])]))
    emit("op_loop_body_outputs.onnx", E, "a Loop whose body makes 3 outputs for the node's 1 (cond and one carried value)",
         model([helper.make_node("Loop", ["", "c", "x"], ["y"], name="loop",
                                 body=helper.make_graph(list(forever.node), "body", list(forever.input),
                                                        list(forever.output) + [vi("x_in", [2, 3])]))],
               [vi("c", [], TensorProto.BOOL), vi("x", [2, 3])], [vi("y", [2, 3])]))
    slices = helper.make_graph([helper.make_node("Identity", ["s"], ["t"])], "body", [vi("s", [3])], [vi("t", [3])])
    emit("op_scan_axis_out_of_range.onnx", S, "a Scan whose scan_input_axes is 5 for a rank-2 input",
         model([helper.make_node("Scan", ["x"], ["y"], name="scan", body=slices, num_scan_inputs=1,
                                 scan_input_axes=[5])], [vi("x", [2, 3])], [vi("y", [2, 3])], opset=11))
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
         model([helper.make_node("Constant", [], ["y"], value=raw_tensor("v", [-2], raw=b"\0" * 8))], [],
               [vi("y", [2])]))
    emit("attr_tensor_raw_mismatch.onnx", E, "Constant whose value tensor has 3 bytes of raw_data for f32 [2]",
         model([helper.make_node("Constant", [], ["y"], value=raw_tensor("v", [2], raw=b"\0" * 3))], [],
               [vi("y", [2])]))
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(np.array([1.0], np.float32), "v"),
                                       numpy_helper.from_array(np.array([0], np.int64), "i"), [2])
    emit("attr_sparse_tensor.onnx", E, "Constant with a sparse_value attribute",
         model([helper.make_node("Constant", [], ["y"], sparse_value=sparse)], [], [vi("y", [2])]))
    emit("node_axes_twice.onnx", E, "opset-11 Unsqueeze with both an axes attribute and a second input",
         model([helper.make_node("Unsqueeze", ["x", "x"], ["y"], axes=[0])], [vi("x", [2, 3])], [vi("y", [1, 2, 3])],
               opset=11))
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


# ---------------------------------------------------------------------------------------------------
def new_graph_cases():
    x, y = [vi("x", [2, 3])], [vi("y", [2, 3])]
    emit("graph_empty.onnx", E, "a graph with no nodes, inputs or outputs", model([], [], []))
    emit("graph_input_twice.onnx", E, "graph input 'x' listed twice", model([node("Relu", ["x"], ["y"])], x * 2, y))
    emit("graph_input_no_name.onnx", E, "a graph input with an empty name",
         model([node("Relu", ["x"], ["y"])], x + [vi("", [2, 3])], y))
    emit("graph_output_no_name.onnx", E, "a graph output with an empty name",
         model([node("Relu", ["x"], ["y"])], x, [vi("", [2, 3])]))
    emit("graph_initializer_no_name.onnx", E, "an initializer with an empty name",
         model([node("Relu", ["x"], ["y"])], x, y, inits=[const("", [1.0])]))
    emit("graph_node_shadows_initializer.onnx", E, "a node output named like an initializer",
         model([node("Relu", ["x"], ["w"]), node("Neg", ["w"], ["y"])], x, y, inits=[const("w", np.ones((2, 3)))]))
    emit("graph_node_output_twice.onnx", E, "one Split node naming both its outputs 'a'",
         model([node("Split", ["x"], ["a", "a"], axis=1)], [vi("x", [2, 4])], [vi("a", [2, 2])]))
    emit("graph_cycle_three_nodes.onnx", E, "a cycle through three nodes (a -> b -> c -> a)",
         model([node("Add", ["x", "c"], ["a"]), node("Relu", ["a"], ["b"]), node("Neg", ["b"], ["c"])], x,
               [vi("c", [2, 3])]))
    emit("graph_cycle_unused.onnx", E, "a two-node cycle that no output needs",
         model([node("Relu", ["x"], ["y"]), node("Neg", ["q"], ["p"]), node("Neg", ["p"], ["q"])], x, y))
    emit("graph_dangling_unused.onnx", E, "a node no output needs, reading a value nothing produces",
         model([node("Relu", ["x"], ["y"]), node("Neg", ["ghost"], ["z"])], x, y))
    emit("graph_node_too_few_inputs.onnx", S, "Add with one input", model([node("Add", ["x"], ["y"])], x, y))
    emit("graph_node_no_inputs.onnx", S, "Relu with no inputs", model([node("Relu", [], ["y"])], x, y))
    emit("graph_node_too_many_outputs.onnx", S, "Relu with two outputs",
         model([node("Relu", ["x"], ["y", "z"])], x, y))
    emit("graph_node_missing_required_input.onnx", S, "Gemm whose B input is the empty name (omitted)",
         model([node("Gemm", ["x", "", "c"], ["y"])], x, y, inits=[const("c", [0.0])]))
    emit("graph_op_empty.onnx", E, "a node with an empty op_type",
         model([helper.make_node("", ["x"], ["y"], name="n")], x, y))
    emit("graph_op_lowercase.onnx", E, "op 'relu' (operator names are case-sensitive)",
         model([node("relu", ["x"], ["y"])], x, y))
    scan_body = helper.make_graph([node("Identity", ["s"], ["t"])], "body", [vi("s", [3])], [vi("t", [3])])
    emit("valid_scan_subgraph.onnx", V, "a Scan whose body (Identity) stacks the rows of x again",
         model([node("Scan", ["x"], ["y"], body=scan_body, num_scan_inputs=1)], x, y))
    emit("graph_op_ml_domain.onnx", E, "ai.onnx.ml::Normalizer (a domain kiln does not implement)",
         model([node("Normalizer", ["x"], ["y"], domain="ai.onnx.ml", norm="MAX")], x, y,
               extra_opsets=[helper.make_opsetid("ai.onnx.ml", 3)]))
    fn = helper.make_function("local", "MyRelu", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                              [helper.make_opsetid("", 13)])
    m = model([node("MyRelu", ["x"], ["y"], domain="local")], x, y, extra_opsets=[helper.make_opsetid("local", 1)])
    m.functions.append(fn)
    emit("graph_local_function.onnx", E, "a node calling a model-local function (FunctionProto)", m)
    m = relu_model()
    del m.opset_import[:]
    emit("graph_no_opset_import.onnx", E, "no opset_import at all", m)
    emit("graph_opset_negative.onnx", E, "default-domain opset -1", relu_model(opset=-1))
    emit("graph_ir_version_negative.onnx", E, "ir_version -5", relu_model(ir=-5))


# ---------------------------------------------------------------------------------------------------
def type_cases():
    x, y = [vi("x", [2, 3])], [vi("y", [2, 3])]

    def input_of(elem_type, name, what):
        emit(name, E, what, model([node("Relu", ["x"], ["y"])], [vi("x", [2, 3], elem_type)], y))

    input_of(TensorProto.UNDEFINED, "type_input_undefined.onnx", "a runtime input of elem_type 0 (UNDEFINED)")
    input_of(17, "type_input_dtype17.onnx", "a runtime input of elem_type 17 (FLOAT8E4M3FN in newer ONNX)")
    input_of(99, "type_input_dtype99.onnx", "a runtime input of elem_type 99 (no such type)")
    input_of(-1, "type_input_dtype_negative.onnx", "a runtime input of elem_type -1")
    input_of(TensorProto.COMPLEX64, "type_input_complex64.onnx", "a runtime input of complex64")
    tp = TypeProto()
    tp.map_type.key_type = I64
    tp.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(F, [2]))
    emit("type_input_map.onnx", E, "a runtime input of map type",
         model([node("Identity", ["x"], ["y"])], [helper.make_value_info("x", tp)], [vi("y", [2])]))
    emit("type_input_optional.onnx", E, "a runtime input of optional type",
         model([node("Identity", ["x"], ["y"])],
               [helper.make_value_info("x", helper.make_optional_type_proto(helper.make_tensor_type_proto(F, [2])))],
               [vi("y", [2])]))
    emit("type_input_sparse.onnx", E, "a runtime input of sparse tensor type",
         model([node("Identity", ["x"], ["y"])], [helper.make_sparse_tensor_value_info("x", F, [2])], [vi("y", [2])]))
    emit("type_output_sequence.onnx", E, "a graph output declared as a sequence",
         model([node("Relu", ["x"], ["y"])], x,
               [helper.make_value_info("y",
                                       helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, [2, 3])))]))
    emit("type_value_info_string.onnx", E, "value_info declares a node output as a string tensor",
         model([node("Relu", ["x"], ["r"]), node("Neg", ["r"], ["y"])], x, y,
               value_info=[vi("r", [2, 3], TensorProto.STRING)]))
    emit("type_value_info_dtype99.onnx", E, "value_info declares a node output of elem_type 99",
         model([node("Relu", ["x"], ["r"]), node("Neg", ["r"], ["y"])], x, y, value_info=[vi("r", [2, 3], 99)]))
    emit("type_init_dtype99.onnx", E, "an initializer with data_type 99",
         add_model(raw_tensor("w", [2, 3], 99, b"\0" * 24)))
    emit("type_init_dtype17.onnx", E, "an initializer with data_type 17 (FLOAT8E4M3FN in newer ONNX), 6 bytes",
         add_model(raw_tensor("w", [2, 3], 17, b"\0" * 6)))
    emit("type_init_uint32.onnx", S, "a uint32 initializer added to an f32 input",
         add_model(raw_tensor("w", [2, 3], TensorProto.UINT32, b"\0" * 24)))
    t = TensorProto(name="w", data_type=TensorProto.UINT64, dims=[2, 3])
    t.uint64_data.extend([1] * 6)
    emit("type_init_uint64.onnx", S, "a uint64 initializer in uint64_data added to an f32 input", add_model(t))
    t = TensorProto(name="w", data_type=TensorProto.UINT32, dims=[2])
    t.uint64_data.extend([1, 2**32])
    emit("type_uint32_out_of_range.onnx", E, "uint32 initializer with 2^32 in uint64_data",
         model([node("Identity", ["w"], ["y"])], [], [vi("y", [2], TensorProto.UINT32)], inits=[t]))
    t = TensorProto(name="w", data_type=TensorProto.UINT16, dims=[2])
    t.int32_data.extend([1, 70000])
    emit("type_uint16_out_of_range.onnx", E, "uint16 initializer with 70000 in int32_data",
         model([node("Identity", ["w"], ["y"])], [], [vi("y", [2], TensorProto.UINT16)], inits=[t]))
    t = TensorProto(name="w", data_type=TensorProto.UINT64, dims=[2])
    t.uint64_data.extend([1, 2**64 - 1])
    emit("valid_uint64_identity.onnx", V, "a uint64 initializer with 2^64-1 (past int64) through Identity",
         model([node("Identity", ["w"], ["y"])], [], [vi("y", [2], TensorProto.UINT64)], inits=[t]))
    emit("type_init_complex128.onnx", E, "a complex128 initializer",
         add_model(raw_tensor("w", [2, 3], TensorProto.COMPLEX128, b"\0" * 96)))
    t = TensorProto(name="w", data_type=TensorProto.FLOAT16, dims=[2])
    t.int32_data.extend([0x3C00, 70000])
    emit("type_f16_pattern_out_of_range.onnx", E, "f16 initializer with 70000 in int32_data (not a 16-bit pattern)",
         model([node("Identity", ["w"], ["y"])], [], [vi("y", [2], TensorProto.FLOAT16)], inits=[t]))
    t = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[2])
    t.int32_data.extend([1, -1])
    emit("type_uint8_negative.onnx", E, "uint8 initializer with -1 in int32_data",
         model([node("Identity", ["w"], ["y"])], [], [vi("y", [2], TensorProto.UINT8)], inits=[t]))
    t = TensorProto(name="w", data_type=F, dims=[2])
    t.string_data.extend([b"1", b"2"])
    emit("type_string_data_on_float.onnx", E, "f32 initializer whose values are in string_data",
         model([node("Identity", ["w"], ["y"])], [], [vi("y", [2])], inits=[t]))
    t = TensorProto(name="w", data_type=I64, dims=[2])
    t.uint64_data.extend([1, 2])
    emit("type_uint64_data_on_int64.onnx", E, "i64 initializer whose values are in uint64_data",
         model([node("Identity", ["w"], ["y"])], [], [vi("y", [2], I64)], inits=[t]))
    t = TensorProto(name="w", data_type=TensorProto.DOUBLE, dims=[2])
    t.float_data.extend([1, 2])
    emit("type_double_in_float_data.onnx", E, "f64 initializer whose values are in float_data",
         model([node("Identity", ["w"], ["y"])], [], [vi("y", [2], TensorProto.DOUBLE)], inits=[t]))
    m = model([node("Relu", ["x"], ["y"])], x, y)
    m.graph.sparse_initializer.append(helper.make_sparse_tensor(const("sv", [1.0]), i64("si", [0]), [6]))
    emit("type_sparse_initializer.onnx", E, "a sparse initializer", m)
    emit("type_input_initializer_mismatch.onnx", E, "ir-3 style: input 'w' declared int64, its initializer is f32",
         model([node("Add", ["x", "w"], ["y"])], x + [vi("w", [2, 3], I64)], y, inits=[const("w", np.ones((2, 3)))],
               ir=3, opset=11))

    # Operators given element types they do not take: shape inference must refuse them.
    emit("type_matmul_f32_i64.onnx", S, "MatMul of f32 [2,3] by an i64 [3,4] initializer",
         model([node("MatMul", ["x", "w"], ["y"])], x, [vi("y", [2, 4])], inits=[i64("w", np.ones((3, 4)))]))
    emit("type_add_f32_f64.onnx", S, "Add of f32 and f64",
         model([node("Add", ["x", "w"], ["y"])], x, y, inits=[const("w", np.ones((2, 3)), np.float64)]))
    emit("type_where_float_condition.onnx", S, "Where with an f32 condition",
         model([node("Where", ["x", "x", "x"], ["y"])], x, y))
    emit("type_gather_float_indices.onnx", S, "Gather with f32 indices",
         model([node("Gather", ["x", "i"], ["y"])], x, [vi("y", [1, 3])], inits=[const("i", [0.0])]))
    emit("type_and_float.onnx", S, "And of two f32 tensors",
         model([node("And", ["x", "x"], ["y"])], x, [vi("y", [2, 3], TensorProto.BOOL)]))
    emit("type_not_int64.onnx", S, "Not of an i64 tensor",
         model([node("Not", ["x"], ["y"])], [vi("x", [2, 3], I64)], [vi("y", [2, 3], I64)]))
    emit("type_concat_mixed.onnx", S, "Concat of f32 and i64",
         model([node("Concat", ["x", "w"], ["y"], axis=0)], x, [vi("y", [4, 3])], inits=[i64("w", np.ones((2, 3)))]))
    emit("type_layernorm_int64.onnx", S, "LayerNormalization of an i64 tensor",
         model([node("LayerNormalization", ["x", "s"], ["y"])], [vi("x", [2, 3], I64)], [vi("y", [2, 3], I64)],
               inits=[i64("s", [1, 1, 1])], opset=17))
    emit("type_cast_to_string.onnx", S, "Cast to STRING (the output declared without a type)",
         model([node("Cast", ["x"], ["y"], to=TensorProto.STRING)], x, [helper.make_value_info("y", TypeProto())]))
    emit("type_cast_to_99.onnx", S, "Cast to elem_type 99", model([node("Cast", ["x"], ["y"], to=99)], x, y))
    emit("type_reshape_float_shape.onnx", S, "Reshape whose shape input is f32",
         model([node("Reshape", ["x", "s"], ["y"])], x, [vi("y", [3, 2])], inits=[const("s", [3.0, 2.0])]))
    emit("type_softmax_int64.onnx", S, "Softmax of an i64 tensor",
         model([node("Softmax", ["x"], ["y"])], [vi("x", [2, 3], I64)], [vi("y", [2, 3], I64)]))


# ---------------------------------------------------------------------------------------------------
def shape_cases():
    x, y = [vi("x", [2, 3])], [vi("y", [2, 3])]
    emit("shape_input_dims_overflow.onnx", S, "a runtime input [2^62, 2^62] (numel overflows 64 bits)",
         model([node("Relu", ["x"], ["y"])], [vi("x", [2**62, 2**62])], [vi("y", [2**62, 2**62])]))
    emit("shape_input_huge.onnx", S, "a runtime input f32 [2^20, 2^20] (4 TiB, over max_tensor_bytes)",
         model([node("Relu", ["x"], ["y"])], [vi("x", [2**20, 2**20])], [vi("y", [2**20, 2**20])]))
    emit("shape_input_rank17.onnx", E, "a runtime input of rank 17 (max_rank is 16)",
         model([node("Relu", ["x"], ["y"])], [vi("x", [1] * 17)], [vi("y", [1] * 17)]))
    emit("shape_tensor_rank17.onnx", E, "an initializer of rank 17 (max_rank is 16)",
         add_model(raw_tensor("w", [1] * 17, raw=b"\0" * 4)))
    emit("shape_tensor_rank10000.onnx", E, "an initializer listing 10000 dims (20 KB of dims)",
         add_model(raw_tensor("w", [1] * 10000, raw=b"\0" * 4)))
    emit("shape_value_info_negative_dim.onnx", E, "value_info declares a node output with dim -1",
         model([node("Relu", ["x"], ["r"]), node("Neg", ["r"], ["y"])], x, y, value_info=[vi("r", [2, -1])]))
    emit("shape_value_info_rank100.onnx", E, "value_info declares a node output of rank 100",
         model([node("Relu", ["x"], ["r"]), node("Neg", ["r"], ["y"])], x, y, value_info=[vi("r", [1] * 100)]))
    emit("shape_output_negative_dim.onnx", E, "the graph output declared with dim -2",
         model([node("Relu", ["x"], ["y"])], x, [vi("y", [2, -2])]))

    def reshape(name, target, what):
        emit(name, S, what, model([node("Reshape", ["x", "s"], ["y"])], x, [vi("y", None)], inits=[i64("s", target)]))

    reshape("shape_reshape_two_minus1.onnx", [-1, -1], "Reshape [2,3] to [-1, -1]")
    reshape("shape_reshape_negative_target.onnx", [-2, -3], "Reshape [2,3] to [-2, -3]")
    reshape("shape_reshape_count_mismatch.onnx", [4, 4], "Reshape 6 elements to [4, 4]")
    reshape("shape_reshape_minus1_no_fit.onnx", [4, -1], "Reshape 6 elements to [4, -1]")
    reshape("shape_reshape_overflow.onnx", [2**62, 2**62, -1], "Reshape to [2^62, 2^62, -1] (the product of the known "
            "entries overflows)")
    emit("shape_reshape_zero_minus1.onnx", S, "Reshape [0, 3] to [-1, 0] with allowzero=1 (-1 cannot be inferred)",
         model([node("Reshape", ["x", "s"], ["y"], allowzero=1)], [vi("x", [0, 3])], [vi("y", None)],
               inits=[i64("s", [-1, 0])], opset=14))

    def constant_of_shape(name, shape, what):
        emit(name, S, what,
             model([node("ConstantOfShape", ["s"], ["y"])], [], [vi("y", None)], inits=[i64("s", shape)]))

    constant_of_shape("shape_constant_of_shape_huge.onnx", [2**20, 2**20], "ConstantOfShape [2^20, 2^20] f32 (4 TiB)")
    constant_of_shape("shape_constant_of_shape_negative.onnx", [-1, 3], "ConstantOfShape [-1, 3]")
    constant_of_shape("shape_constant_of_shape_overflow.onnx", [2**62, 2**62], "ConstantOfShape [2^62, 2^62]")
    emit("shape_constant_of_shape_runtime_huge.onnx", S,
         "ConstantOfShape of Shape(x) * 2^40: 4 TiB, known only once the input is bound",
         model([node("Shape", ["x"], ["s"]), node("Mul", ["s", "k"], ["t"]), node("ConstantOfShape", ["t"], ["y"])],
               [vi("x", ["batch", 3])], [vi("y", None)], inits=[i64("k", [2**20, 2**20])]))
    emit("shape_expand_huge.onnx", S, "Expand [1,1] to [2^17, 2^17] (64 GiB)",
         model([node("Expand", ["x", "s"], ["y"])], [vi("x", [1, 1])], [vi("y", None)],
               inits=[i64("s", [2**17, 2**17])]))
    emit("shape_expand_incompatible.onnx", S, "Expand [2,3] to [4,3]",
         model([node("Expand", ["x", "s"], ["y"])], x, [vi("y", None)], inits=[i64("s", [4, 3])]))
    emit("shape_tile_overflow.onnx", S, "Tile [2,3] by repeats [2^62, 2^62]",
         model([node("Tile", ["x", "r"], ["y"])], x, [vi("y", None)], inits=[i64("r", [2**62, 2**62])]))
    emit("shape_tile_negative.onnx", S, "Tile [2,3] by repeats [-1, 1]",
         model([node("Tile", ["x", "r"], ["y"])], x, [vi("y", None)], inits=[i64("r", [-1, 1])]))
    emit("shape_range_huge.onnx", S, "Range(0, 2^40, 1) of i64 (8 TiB)",
         model([node("Range", ["a", "b", "c"], ["y"])], [], [vi("y", None, I64)],
               inits=[i64("a", 0), i64("b", 2**40), i64("c", 1)]))
    emit("shape_range_zero_delta.onnx", S, "Range(0, 10, 0)",
         model([node("Range", ["a", "b", "c"], ["y"])], [], [vi("y", None, I64)],
               inits=[i64("a", 0), i64("b", 10), i64("c", 0)]))
    emit("shape_range_nan_limit.onnx", S, "Range(0, NaN, 1) of f32",
         model([node("Range", ["a", "b", "c"], ["y"])], [], [vi("y", None)],
               inits=[const("a", 0.0), const("b", float("nan")), const("c", 1.0)]))
    emit("shape_pad_huge.onnx", S, "Pad [2,3] by 2^40 at the end of dim 1",
         model([node("Pad", ["x", "p"], ["y"])], x, [vi("y", None)], inits=[i64("p", [0, 0, 0, 2**40])]))
    emit("shape_pad_below_zero.onnx", S, "Pad [2,3] by -5 at the end of dim 1 (negative size)",
         model([node("Pad", ["x", "p"], ["y"])], x, [vi("y", None)], inits=[i64("p", [0, 0, 0, -5])]))
    emit("shape_pad_wrong_count.onnx", S, "Pad [2,3] with 3 pad values",
         model([node("Pad", ["x", "p"], ["y"])], x, [vi("y", None)], inits=[i64("p", [0, 0, 1])]))
    emit("shape_concat_rank_mismatch.onnx", S, "Concat of [2,3] and [3]",
         model([node("Concat", ["x", "w"], ["y"], axis=0)], x, [vi("y", None)], inits=[const("w", [1.0, 2.0, 3.0])]))
    emit("shape_concat_dim_mismatch.onnx", S, "Concat on axis 0 of [2,3] and [2,4]",
         model([node("Concat", ["x", "w"], ["y"], axis=0)], x, [vi("y", None)], inits=[const("w", np.ones((2, 4)))]))
    emit("shape_conv_kernel_bigger.onnx", S, "Conv of [1,1,3,3] with a 5x5 kernel and no padding",
         model([node("Conv", ["x", "w"], ["y"])], [vi("x", [1, 1, 3, 3])], [vi("y", None)],
               inits=[const("w", np.ones((1, 1, 5, 5)))]))
    emit("shape_conv_weight_channels.onnx", S, "Conv of 3 channels with weights for 2",
         model([node("Conv", ["x", "w"], ["y"])], [vi("x", [1, 3, 4, 4])], [vi("y", None)],
               inits=[const("w", np.ones((1, 2, 3, 3)))]))
    emit("shape_conv_bias_mismatch.onnx", S, "Conv with 4 filters and a bias of 3",
         model([node("Conv", ["x", "w", "b"], ["y"])], [vi("x", [1, 3, 4, 4])], [vi("y", None)],
               inits=[const("w", np.ones((4, 3, 3, 3))), const("b", np.ones(3))]))
    emit("shape_conv_rank2_input.onnx", S, "Conv of a rank-2 input",
         model([node("Conv", ["x", "w"], ["y"])], x, [vi("y", None)],
                                                                         inits=[const("w", np.ones((1, 1, 1)))]))
    emit("shape_maxpool_kernel_bigger.onnx", S, "MaxPool of [1,1,3,3] with a 5x5 window",
         model([node("MaxPool", ["x"], ["y"], kernel_shape=[5, 5])], [vi("x", [1, 1, 3, 3])], [vi("y", None)]))
    emit("shape_matmul_batch_mismatch.onnx", S, "MatMul of [2,2,3] by [3,3,4] (batch dims 2 and 3)",
         model([node("MatMul", ["x", "w"], ["y"])], [vi("x", [2, 2, 3])], [vi("y", None)],
               inits=[const("w", np.ones((3, 3, 4)))]))
    emit("shape_matmul_scalar.onnx", S, "MatMul of a scalar",
         model([node("MatMul", ["x", "w"], ["y"])], x, [vi("y", None)],
                                                                    inits=[const("w", 2.0)]))
    emit("shape_gemm_inner_mismatch.onnx", S, "Gemm of [2,3] by [4,5]",
         model([node("Gemm", ["x", "w"], ["y"])], x, [vi("y", None)], inits=[const("w", np.ones((4, 5)))]))
    emit("shape_slice_zero_step.onnx", S, "Slice with step 0",
         model([node("Slice", ["x", "s", "e", "a", "t"], ["y"])], x, [vi("y", None)],
               inits=[i64("s", [0]), i64("e", [3]), i64("a", [1]), i64("t", [0])]))
    emit("shape_slice_axis_twice.onnx", S, "Slice naming axis 1 twice",
         model([node("Slice", ["x", "s", "e", "a"], ["y"])], x, [vi("y", None)],
               inits=[i64("s", [0, 0]), i64("e", [1, 1]), i64("a", [1, 1])]))
    emit("shape_slice_starts_ends_count.onnx", S, "Slice with 2 starts and 1 end",
         model([node("Slice", ["x", "s", "e"], ["y"])], x, [vi("y", None)], inits=[i64("s", [0, 0]), i64("e", [1])]))
    emit("shape_gather_index_out_of_range.onnx", S, "Gather index 5 from a dim of 3 (a constant index)",
         model([node("Gather", ["x", "i"], ["y"], axis=1)], x, [vi("y", None)], inits=[i64("i", [0, 5])]))
    emit("shape_gather_index_negative.onnx", S, "Gather index -4 from a dim of 3",
         model([node("Gather", ["x", "i"], ["y"], axis=1)], x, [vi("y", None)], inits=[i64("i", [-4])]))
    emit("shape_gather_index_int64_min.onnx", S, "Gather index -2^63 (negating it overflows)",
         model([node("Gather", ["x", "i"], ["y"])], x, [vi("y", None)], inits=[i64("i", [-(2**63)])]))
    emit("shape_gather_constant_table.onnx", S,
         "Gather index 7 from a constant table of 4 rows (folded at compile time)",
         model([node("Gather", ["w", "i"], ["g"]), node("Add", ["x", "g"], ["y"])], [vi("x", [3])], [vi("y", None)],
               inits=[const("w", np.ones((4, 3))), i64("i", 7)]))
    emit("shape_gatherelements_out_of_range.onnx", S, "GatherElements index 3 on a dim of 3",
         model([node("GatherElements", ["x", "i"], ["y"], axis=1)], x, [vi("y", None)],
               inits=[i64("i", [[0, 3], [1, 2]])]))
    emit("shape_gatherelements_rank_mismatch.onnx", S, "GatherElements with rank-1 indices on a rank-2 input",
         model([node("GatherElements", ["x", "i"], ["y"], axis=1)], x, [vi("y", None)], inits=[i64("i", [0, 1])]))
    emit("shape_split_sizes_mismatch.onnx", S, "Split of a dim of 3 into [1, 1]",
         model([node("Split", ["x", "s"], ["a", "b"], axis=1)], x, [vi("a", None), vi("b", None)],
               inits=[i64("s", [1, 1])]))
    emit("shape_split_negative_size.onnx", S, "Split of a dim of 3 into [4, -1]",
         model([node("Split", ["x", "s"], ["a", "b"], axis=1)], x, [vi("a", None), vi("b", None)],
               inits=[i64("s", [4, -1])]))
    emit("shape_squeeze_not_one.onnx", S, "Squeeze axis 1 of size 3",
         model([node("Squeeze", ["x", "a"], ["y"])], x, [vi("y", None)], inits=[i64("a", [1])]))
    emit("shape_unsqueeze_axes_duplicate.onnx", S, "Unsqueeze with axes [0, 0]",
         model([node("Unsqueeze", ["x", "a"], ["y"])], x, [vi("y", None)], inits=[i64("a", [0, 0])]))
    emit("shape_unsqueeze_axis_out_of_range.onnx", S, "Unsqueeze [2,3] with axis 5",
         model([node("Unsqueeze", ["x", "a"], ["y"])], x, [vi("y", None)], inits=[i64("a", [5])]))
    emit("shape_reduce_axis_out_of_range.onnx", S, "ReduceSum of [2,3] over axis 2",
         model([node("ReduceSum", ["x", "a"], ["y"])], x, [vi("y", None)], inits=[i64("a", [2])]))
    emit("shape_layernorm_scale_mismatch.onnx", S, "LayerNormalization over a dim of 3 with a scale of 4",
         model([node("LayerNormalization", ["x", "s"], ["y"])], x, y, inits=[const("s", np.ones(4))], opset=17))
    emit("shape_batchnorm_param_mismatch.onnx", S, "BatchNormalization of 3 channels with parameters of 2",
         model([node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"])], [vi("x", [1, 3, 2, 2])], [vi("y", None)],
               inits=[const(n, np.ones(2)) for n in "sbmv"]))
    emit("shape_where_broadcast_mismatch.onnx", S, "Where of a [4] condition with [2,3] values",
         model([node("Where", ["c", "x", "x"], ["y"])], x, y, inits=[numpy_helper.from_array(np.ones(4, bool), "c")]))
    emit("shape_symbolic_dim_conflict.onnx", S, "x [batch,3] + w [5,3]: run with --dim batch=2",
         model([node("Add", ["x", "w"], ["y"])], [vi("x", ["batch", 3])], [vi("y", None)],
               inits=[const("w", np.ones((5, 3)))]))
    emit("shape_chain_contradiction.onnx", S,
         "Transpose [2,3] -> [3,2], MatMul by [2,4] -> [3,4], Add of a [3] bias: the mismatch shows only at the end",
         model([node("Transpose", ["x"], ["t"]), node("MatMul", ["t", "w"], ["m"]), node("Relu", ["m"], ["r"]),
                node("Add", ["r", "b"], ["y"])], x, [vi("y", None)],
               inits=[const("w", np.ones((2, 4))), const("b", np.ones(3))]))
    emit("shape_resize_scales_count.onnx", S, "Resize of a rank-4 input with 2 scales",
         model([node("Resize", ["x", "", "s"], ["y"])], [vi("x", [1, 1, 2, 2])], [vi("y", None)],
               inits=[const("s", [2.0, 2.0])]))
    emit("shape_resize_negative_sizes.onnx", S, "Resize to sizes [1,1,-4,4]",
         model([node("Resize", ["x", "", "", "s"], ["y"])], [vi("x", [1, 1, 2, 2])], [vi("y", None)],
               inits=[i64("s", [1, 1, -4, 4])]))
    emit("shape_trilu_rank1.onnx", S, "Trilu of a rank-1 input",
         model([node("Trilu", ["x"], ["y"])], [vi("x", [3])], [vi("y", None)]))


# ---------------------------------------------------------------------------------------------------
def attribute_cases():
    x, y = [vi("x", [2, 3])], [vi("y", None)]

    def one(name, what, n, inputs=x, expect=S, **kw):
        emit(name, expect, what, model([n], inputs, y, **kw))

    one("attr_transpose_perm_duplicate.onnx", "Transpose perm [0, 0]", node("Transpose", ["x"], ["y"], perm=[0, 0]))
    one("attr_transpose_perm_out_of_range.onnx", "Transpose perm [0, 2] of a rank-2 input",
        node("Transpose", ["x"], ["y"], perm=[0, 2]))
    one("attr_transpose_perm_negative.onnx", "Transpose perm [-1, 0]", node("Transpose", ["x"], ["y"], perm=[-1, 0]))
    one("attr_transpose_perm_short.onnx", "Transpose perm [0] of a rank-2 input",
        node("Transpose", ["x"], ["y"], perm=[0]))
    one("attr_transpose_perm_5000.onnx", "Transpose perm of 5000 entries for a rank-2 input",
        node("Transpose", ["x"], ["y"], perm=list(range(5000))))
    one("attr_transpose_perm_strings.onnx", "Transpose perm given as STRINGS",
        node("Transpose", ["x"], ["y"], perm=[b"1", b"0"]))
    one("attr_softmax_axis_out_of_range.onnx", "Softmax axis 2 of a rank-2 input",
        node("Softmax", ["x"], ["y"], axis=2))
    one("attr_softmax_axis_int64_min.onnx", "Softmax axis -2^63", node("Softmax", ["x"], ["y"], axis=-(2**63)))
    one("attr_logsoftmax_axis_out_of_range_opset11.onnx", "opset-11 LogSoftmax axis 3 of a rank-2 input",
        node("LogSoftmax", ["x"], ["y"], axis=3), opset=11)
    one("attr_concat_axis_out_of_range.onnx", "Concat axis -3 of rank-2 inputs",
        node("Concat", ["x", "x"], ["y"], axis=-3))
    one("attr_concat_missing_axis.onnx", "Concat without its required axis", node("Concat", ["x", "x"], ["y"]))
    one("attr_gather_axis_out_of_range.onnx", "Gather axis 2 of a rank-2 input",
        node("Gather", ["x", "i"], ["y"], axis=2),
        inits=[i64("i", [0])])
    one("attr_flatten_axis_out_of_range.onnx", "Flatten axis 3 of a rank-2 input",
        node("Flatten", ["x"], ["y"], axis=3))
    one("attr_split_axis_out_of_range.onnx", "Split axis 2 of a rank-2 input",
        node("Split", ["x"], ["y"], axis=2, num_outputs=1), opset=18)
    one("attr_split_num_outputs_mismatch.onnx", "opset-18 Split with num_outputs 3 and two outputs",
        node("Split", ["x"], ["y", "z"], axis=1, num_outputs=3), opset=18)
    one("attr_split_num_outputs_zero.onnx", "opset-18 Split with num_outputs 0",
        node("Split", ["x"], ["y"], axis=1, num_outputs=0), opset=18)
    one("attr_layernorm_axis_out_of_range.onnx", "LayerNormalization axis 2 of a rank-2 input",
        node("LayerNormalization", ["x", "s"], ["y"], axis=2), inits=[const("s", np.ones(3))], opset=17)
    one("attr_argmax_axis_out_of_range.onnx", "ArgMax axis -3 of a rank-2 input", node("ArgMax", ["x"], ["y"], axis=-3))
    one("attr_reduce_opset11_axes_out_of_range.onnx", "opset-11 ReduceMean axes [7] (an attribute then)",
        node("ReduceMean", ["x"], ["y"], axes=[7]), opset=11)
    one("attr_cast_missing_to.onnx", "Cast without its required 'to'", node("Cast", ["x"], ["y"]))
    one("attr_cast_to_float_kind.onnx", "Cast with 'to' given as a FLOAT", node("Cast", ["x"], ["y"], to=1.0))
    one("attr_leakyrelu_alpha_string.onnx", "LeakyRelu alpha given as a STRING",
        node("LeakyRelu", ["x"], ["y"], alpha=b"0.1"))
    one("attr_maxpool_missing_kernel_shape.onnx", "MaxPool without its required kernel_shape",
        node("MaxPool", ["x"], ["y"]), inputs=[vi("x", [1, 1, 4, 4])])
    one("attr_maxpool_kernel_zero.onnx", "MaxPool kernel_shape [0, 0]",
        node("MaxPool", ["x"], ["y"], kernel_shape=[0, 0]), inputs=[vi("x", [1, 1, 4, 4])])
    one("attr_maxpool_strides_zero.onnx", "MaxPool strides [0, 0]",
        node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[0, 0]), inputs=[vi("x", [1, 1, 4, 4])])
    one("attr_avgpool_kernel_rank_mismatch.onnx", "AveragePool kernel_shape of 3 dims for a 2-D input",
        node("AveragePool", ["x"], ["y"], kernel_shape=[2, 2, 2]), inputs=[vi("x", [1, 1, 4, 4])])

    conv_in = [vi("x", [1, 4, 5, 5])]
    conv_w = [const("w", np.ones((2, 2, 3, 3)))]

    def conv(name, what, **attrs):
        one(name, what, node("Conv", ["x", "w"], ["y"], **attrs), inputs=conv_in, inits=conv_w)

    conv("attr_conv_group_zero.onnx", "Conv group 0", group=0)
    conv("attr_conv_group_negative.onnx", "Conv group -2", group=-2)
    conv("attr_conv_group_not_dividing.onnx", "Conv group 3 for 4 input channels", group=3)
    conv("attr_conv_strides_zero.onnx", "Conv strides [0, 1]", group=2, strides=[0, 1])
    conv("attr_conv_dilations_zero.onnx", "Conv dilations [1, 0]", group=2, dilations=[1, 0])
    conv("attr_conv_negative_pads.onnx", "Conv pads [-1, -1, -1, -1]", group=2, pads=[-1, -1, -1, -1])
    conv("attr_conv_pads_wrong_count.onnx", "Conv with 3 pads for a 2-D input", group=2, pads=[1, 1, 1])
    conv("attr_conv_kernel_shape_mismatch.onnx", "Conv kernel_shape [5, 5] for 3x3 weights", group=2,
         kernel_shape=[5, 5])
    conv("attr_conv_auto_pad_unknown.onnx", "Conv auto_pad 'SOMETIMES'", group=2, auto_pad="SOMETIMES")
    conv("attr_conv_huge_dilation.onnx", "Conv dilations [2^62, 1] (the window size overflows)", group=2,
         dilations=[2**62, 1])
    conv("attr_conv_huge_pads.onnx", "Conv pads of 2^40 (an output of 2^80 elements)", group=2, pads=[2**40] * 4)
    one("attr_resize_mode_unknown.onnx", "Resize mode 'bicubic'",
        node("Resize", ["x", "", "s"], ["y"], mode="bicubic"), inputs=[vi("x", [1, 1, 2, 2])],
        inits=[const("s", [1, 1, 2, 2.0])])
    one("attr_constant_no_value.onnx", "Constant without a value", node("Constant", [], ["y"]), inputs=[])
    one("attr_constant_two_values.onnx", "Constant with both value_float and value_ints",
        node("Constant", [], ["y"], value_float=1.0, value_ints=[1, 2]), inputs=[])
    one("attr_constant_value_string.onnx", "Constant with a value_string",
        node("Constant", [], ["y"], value_string="abc"),
        inputs=[])
    one("attr_constant_of_shape_value_two.onnx", "ConstantOfShape whose value tensor has 2 elements",
        node("ConstantOfShape", ["s"], ["y"], value=const("v", [1.0, 2.0])), inputs=[], inits=[i64("s", [2])])
    one("attr_gemm_alpha_ints.onnx", "Gemm alpha given as INTS", node("Gemm", ["x", "w"], ["y"], alpha=[1, 2]),
        inits=[const("w", np.ones((3, 2)))])

    def raw_attr(name, what, attr):
        n = node("LeakyRelu", ["x"], ["y"])
        n.attribute.append(attr)
        emit(name, E, what, model([n], x, y))

    raw_attr("attr_tensors_kind.onnx", "LeakyRelu alpha of type TENSORS",
             AttributeProto(name="alpha", type=AttributeProto.TENSORS, tensors=[const("t", [1.0])]))
    raw_attr("attr_type_proto_kind.onnx", "LeakyRelu alpha of type TYPE_PROTO",
             AttributeProto(name="alpha", type=AttributeProto.TYPE_PROTO, tp=helper.make_tensor_type_proto(F, [1])))
    a = AttributeProto()
    a.MergeFromString(AttributeProto(name="alpha", f=0.5).SerializeToString() + key(20, 0) + varint(99))
    raw_attr("attr_type_99.onnx", "LeakyRelu alpha of attribute type 99 (not in the enum: protobuf keeps it as an "
             "unknown field)", a)
    raw_attr("attr_no_name.onnx", "an attribute with an empty name",
             AttributeProto(name="", type=AttributeProto.FLOAT, f=0.5))
    raw_attr("attr_graphs_kind.onnx", "LeakyRelu attribute of type GRAPHS",
             AttributeProto(name="alpha", type=AttributeProto.GRAPHS,
                            graphs=[helper.make_graph([], "empty", [], [])]))


# ---------------------------------------------------------------------------------------------------
# controls: valid models, several of them the shapes compiled mode fuses (library calls with post-ops,
# row kernels, pointwise kernels)
def controls():
    good_w = numpy_helper.from_array(np.ones((2, 3), np.float32), "w")
    emit("valid_add.onnx", V, "y = x + w (inline raw_data)", add_model(good_w))
    t = TensorProto(name="w", data_type=F, dims=[2, 3])
    t.float_data.extend([1, 2, 3, 4, 5, 6])
    emit("valid_float_data.onnx", V, "y = x + w (w in float_data)", add_model(t))
    inits = [helper.make_tensor("h", TensorProto.FLOAT16, [2],
                                np.array([1.5, -2], np.float16).view(np.uint16).tolist()),
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
         model([helper.make_node("Neg", ["a"], ["y"], name="second"),
                helper.make_node("Relu", ["x"], ["a"], name="first")],
               [vi("x", [2, 3])], [vi("y", [2, 3])]))
    emit("valid_optional_input.onnx", V, "Clip with the min input omitted (empty name) and max given",
         model([helper.make_node("Clip", ["x", "", "hi"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3])],
               inits=[numpy_helper.from_array(np.array(1.0, np.float32), "hi")]))
    emit("valid_initializer_as_input.onnx", V, "ir_version 3 style: the initializer is also a graph input",
         model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", [2, 3]), vi("w", [2, 3])], [vi("y", [2, 3])],
               inits=[good_w], ir=3, opset=11))
    emit("valid_symbolic_dims.onnx", V,
         "inputs with dim_param and unnamed dims (run with --dim batch=2 --dim _in0_1=3)",
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

    rng = np.random.default_rng(5)

    def w(name, *shape):
        return const(name, rng.standard_normal(shape).astype(np.float32))

    emit("valid_matmul_bias_relu.onnx", V, "MatMul + bias Add + Relu (a library call with fused post-ops)",
         model([node("MatMul", ["x", "w"], ["m"]), node("Add", ["m", "b"], ["a"]), node("Relu", ["a"], ["y"])],
               [vi("x", ["batch", 8, 16])], [vi("y", ["batch", 8, 32])], inits=[w("w", 16, 32), w("b", 32)]))
    emit("valid_gemm_gelu_residual.onnx", V, "Gemm, erf GELU, residual Add (library post-ops)",
         model([node("Gemm", ["x", "w", "b"], ["g"], transB=1), node("Div", ["g", "r2"], ["d"]),
                node("Erf", ["d"], ["e"]),
                node("Add", ["e", "one"], ["e1"]), node("Mul", ["g", "e1"], ["m"]), node("Mul", ["m", "half"], ["h"]),
                node("Add", ["h", "x"], ["y"])],
               [vi("x", [4, 16])], [vi("y", [4, 16])],
               inits=[w("w", 16, 16), w("b", 16), const("r2", np.sqrt(2.0)), const("one", 1.0), const("half", 0.5)]))
    emit("valid_attention_softmax_mask.onnx", V,
         "scores = q k^T * scale + mask; Softmax; @ v (a masked softmax row kernel)",
         model([node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), node("MatMul", ["q", "kt"], ["s"]),
                node("Mul", ["s", "scale"], ["ss"]), node("Add", ["ss", "mask"], ["sm"]),
                node("Softmax", ["sm"], ["p"], axis=-1), node("MatMul", ["p", "v"], ["y"])],
               [vi("q", ["batch", 6, 8]), vi("k", ["batch", 6, 8]), vi("v", ["batch", 6, 8])],
               [vi("y", ["batch", 6, 8])],
               inits=[const("scale", 1 / np.sqrt(8.0)),
                      const("mask", np.where(np.arange(6) < 4, 0.0, -1e9).reshape(1, 1, 6))]))
    emit("valid_layernorm.onnx", V, "LayerNormalization over the last axis with scale and bias (opset 17)",
         model([node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=1e-5)],
               [vi("x", ["batch", 5, 24])], [vi("y", ["batch", 5, 24])], inits=[w("s", 24), w("b", 24)], opset=17))
    emit("valid_layernorm_decomposed.onnx", V,
         "layer norm as exporters write it: ReduceMean, Sub, Pow, Sqrt, Div, Mul, Add",
         model([node("ReduceMean", ["x"], ["mu"], axes=[-1]), node("Sub", ["x", "mu"], ["d"]),
                node("Pow", ["d", "two"], ["d2"]), node("ReduceMean", ["d2"], ["var"], axes=[-1]),
                node("Add", ["var", "eps"], ["ve"]), node("Sqrt", ["ve"], ["sd"]), node("Div", ["d", "sd"], ["n"]),
                node("Mul", ["n", "s"], ["ns"]), node("Add", ["ns", "b"], ["y"])],
               [vi("x", ["batch", 5, 24])], [vi("y", ["batch", 5, 24])],
               inits=[const("two", 2.0), const("eps", 1e-5), w("s", 24), w("b", 24)]))
    emit("valid_transpose_mul.onnx", V, "Transpose then Mul by a broadcast weight (a strided pointwise kernel)",
         model([node("Transpose", ["x"], ["t"], perm=[0, 2, 1]), node("Mul", ["t", "w"], ["m"]),
                node("Tanh", ["m"], ["y"])],
               [vi("x", ["batch", 7, 5])], [vi("y", ["batch", 5, 7])], inits=[w("w", 1, 7)]))
    emit("valid_conv_relu.onnx", V, "Conv with bias, padding and stride, then Relu",
         model([node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[2, 2]), node("Relu", ["c"], ["y"])],
               [vi("x", ["batch", 3, 9, 9])], [vi("y", ["batch", 4, 5, 5])], inits=[w("w", 4, 3, 3, 3), w("b", 4)]))
    emit("valid_conv_batchnorm_add.onnx", V, "Conv, BatchNormalization (folded), residual Add, Relu, GlobalAveragePool",
         model([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                node("BatchNormalization", ["c", "g", "bb", "mu", "var"], ["n"]), node("Add", ["n", "x"], ["a"]),
                node("Relu", ["a"], ["r"]), node("GlobalAveragePool", ["r"], ["y"])],
               [vi("x", ["batch", 4, 6, 6])], [vi("y", ["batch", 4, 1, 1])],
               inits=[w("w", 4, 4, 3, 3), w("g", 4), w("bb", 4), w("mu", 4),
                      const("var", rng.uniform(0.5, 2.0, 4).astype(np.float32))]))
    emit("valid_zero_size_input.onnx", V, "an input [0,3] through Relu, MatMul and a Softmax (a row kernel of 0 rows)",
         model([node("Relu", ["x"], ["r"]), node("MatMul", ["r", "w"], ["m"]), node("Softmax", ["m"], ["y"])],
               [vi("x", [0, 3])], [vi("y", [0, 4])], inits=[w("w", 3, 4)]))
    emit("valid_zero_size_columns.onnx", V, "Softmax, LayerNormalization and ReduceMax over an empty last axis ([2,0])",
         model([node("Softmax", ["x"], ["s"]), node("LayerNormalization", ["x", "g"], ["l"]),
                node("ReduceMax", ["x"], ["r"], axes=[1], keepdims=1)],
               [vi("x", [2, 0])], [vi("s", [2, 0]), vi("l", [2, 0]), vi("r", [2, 1])], inits=[const("g", np.ones(0))],
               opset=17))
    zero_ops = [node("Relu", ["a"], ["r"]), node("MatMul", ["k0", "w0"], ["mm"]),
                node("Gemm", ["k0", "w0", "b0"], ["gm"]),
                node("Conv", ["n0", "cw"], ["cv"]), node("Relu", ["cv"], ["cr"]),
                node("MaxPool", ["n0"], ["mp"], kernel_shape=[2, 2]),
                node("Concat", ["a", "a", "e"], ["cc"], axis=0), node("Expand", ["e", "es"], ["ex"]),
                node("Tile", ["e", "tr"], ["tl"]), node("GlobalAveragePool", ["sp"], ["gp"])]
    emit("valid_zero_size_ops.onnx", V,
         "zero-size tensors through Relu, MatMul/Gemm with K = 0, Conv/MaxPool with batch 0, "
         "Concat, Expand, Tile and a pool over 0x0 pixels",
         model(zero_ops,
               [vi("a", [0, 3]), vi("k0", [2, 0]), vi("n0", [0, 1, 4, 4]), vi("e", [1, 3]), vi("sp", [1, 2, 0, 0])],
               [vi(n, None) for n in ["r", "mm", "gm", "cr", "mp", "cc", "ex", "tl", "gp"]],
               inits=[const("w0", np.ones((0, 4))), const("b0", np.ones(4)), w("cw", 2, 1, 3, 3), i64("es", [0, 3]),
                      i64("tr", [0, 2])]))
    emit("valid_output_is_input.onnx", V, "a graph with no nodes whose output is its input",
         model([], [vi("x", [2, 3])], [vi("x", [2, 3])]))
    emit("valid_output_is_initializer.onnx", V, "a graph output that is an initializer, beside a computed one",
         model([node("Relu", ["x"], ["y"])], [vi("x", [2, 3])], [vi("y", [2, 3]), vi("w", [2, 3])], inits=[good_w]))
    m = model([node("Relu", ["x"], ["y"], domain="ai.onnx")], [vi("x", [2, 3])], [vi("y", [2, 3])])
    m.opset_import[0].domain = "ai.onnx"
    emit("valid_ai_onnx_domain.onnx", V, "the default domain spelled 'ai.onnx' in the opset import and the node", m)
    emit("valid_gather_embedding.onnx", V, "Gather of i64 ids from an embedding table, then Add and Softmax",
         model([node("Gather", ["table", "ids"], ["e"]), node("Add", ["e", "pos"], ["a"]),
                node("Softmax", ["a"], ["y"])],
               [vi("ids", ["batch", 5], I64)], [vi("y", ["batch", 5, 8])], inits=[w("table", 10, 8), w("pos", 5, 8)]))


# ---------------------------------------------------------------------------------------------------
# operators with more parameters (Resize, Pad, pools, ConvTranspose, ranks above max_rank from an op)
def operator_cases():
    x, y = [vi("x", [2, 3])], [vi("y", None)]
    x4 = [vi("x", [1, 1, 2, 2])]

    def one(name, what, nodes, inputs=x, outputs=y, inits=(), opset=18, expect=S):
        emit(name, expect, what,
             model(nodes if isinstance(nodes, list) else [nodes], inputs, outputs, inits=inits, opset=opset))

    def resize(name, what, scales=None, sizes=None, **attrs):
        ins = ["x", "", "s"] if sizes is None else ["x", "", "", "s"]
        init = const("s", scales) if sizes is None else i64("s", sizes)
        one(name, what, node("Resize", ins, ["y"], **attrs), x4, inits=[init])

    resize("attr_resize_coordinate_mode_unknown.onnx", "Resize coordinate_transformation_mode 'bogus'", [1, 1, 2, 2.0],
           coordinate_transformation_mode="bogus")
    resize("attr_resize_nearest_mode_unknown.onnx", "Resize nearest_mode 'bogus'", [1, 1, 2, 2.0], nearest_mode="bogus")
    resize("attr_resize_antialias.onnx", "Resize linear with antialias=1 (not supported)", [1, 1, 0.5, 0.5],
           mode="linear",
           antialias=1)
    resize("attr_resize_crop_without_roi.onnx", "Resize tf_crop_and_resize without the roi input", [1, 1, 2, 2.0],
           mode="linear", coordinate_transformation_mode="tf_crop_and_resize")
    one("attr_resize_axes_duplicate.onnx", "Resize axes [2, 2]", node("Resize", ["x", "", "s"], ["y"], axes=[2, 2]), x4,
        inits=[const("s", [2.0, 2.0])])
    resize("shape_resize_nan_scale.onnx", "Resize scales [1,1,NaN,2]", [1, 1, float("nan"), 2])
    resize("shape_resize_inf_scale.onnx", "Resize scales [1,1,inf,2]", [1, 1, float("inf"), 2])
    resize("shape_resize_negative_scale.onnx", "Resize scales [1,1,-2,2]", [1, 1, -2, 2])
    resize("shape_resize_zero_scale.onnx", "Resize scales [1,1,0,2]", [1, 1, 0, 2])
    resize("shape_resize_huge_scales.onnx", "Resize scales [1,1,1e9,1e9] (an output of 4e18 elements)",
           [1, 1, 1e9, 1e9])
    resize("shape_resize_huge_sizes.onnx", "Resize sizes [1,1,2^40,2^40] (numel overflows)", sizes=[1, 1, 2**40, 2**40])
    one("attr_pad_mode_unknown.onnx", "Pad mode 'wrap2'", node("Pad", ["x", "p"], ["y"], mode="wrap2"),
        inits=[i64("p", [0, 1, 0, 1])])
    one("shape_pad_axes_duplicate.onnx", "Pad with axes [1, 1]", node("Pad", ["x", "p", "", "a"], ["y"]),
        inits=[i64("p", [1, 1, 1, 1]), i64("a", [1, 1])])
    one("shape_pad_edge_empty_axis.onnx", "edge-mode Pad of an empty axis (nothing to repeat)",
        node("Pad", ["x", "p"], ["y"], mode="edge"), [vi("x", [0, 3])], inits=[i64("p", [1, 0, 1, 0])])
    one("shape_pad_reflect_empty_axis.onnx", "reflect-mode Pad of an empty axis",
        node("Pad", ["x", "p"], ["y"], mode="reflect"),
        [vi("x", [2, 0])], inits=[i64("p", [0, 1, 0, 1])])
    one("attr_batchnorm_training_mode.onnx", "BatchNormalization training_mode=2 (0 or 1)",
        node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=2),
        [vi("x", [1, 3, 2, 2])],
        [vi("y", None), vi("rm", None), vi("rv", None)], inits=[const(n, np.ones(3)) for n in "sbmv"], expect=E)
    one("valid_batchnorm_training_mode.onnx", "BatchNormalization training_mode=1: batch statistics, running outputs",
        node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"], training_mode=1),
        [vi("x", [1, 3, 2, 2])],
        [vi("y", None), vi("rm", None), vi("rv", None)], inits=[const(n, np.ones(3)) for n in "sbmv"], expect=V)
    one("attr_conv_transpose_group_not_dividing.onnx", "ConvTranspose group 2 for weights of 1 input channel",
        node("ConvTranspose", ["x", "w"], ["y"], group=2), x4, inits=[const("w", np.ones((1, 1, 3, 3)))])
    one("shape_conv_transpose_huge_stride.onnx", "ConvTranspose strides [2^40, 2^40] (numel overflows)",
        node("ConvTranspose", ["x", "w"], ["y"], strides=[2**40, 2**40]), x4, inits=[const("w", np.ones((1, 1, 3, 3)))])
    one("shape_conv_transpose_negative_output.onnx", "ConvTranspose output_shape [-5, -5]",
        node("ConvTranspose", ["x", "w"], ["y"], output_shape=[-5, -5]), x4, inits=[const("w", np.ones((1, 1, 3, 3)))])
    one("shape_pool_huge_pads.onnx", "MaxPool pads of 2^40 (numel overflows)",
        node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], pads=[2**40] * 4), x4)
    one("attr_maxpool_huge_dilation.onnx", "MaxPool dilations [2^62, 1]",
        node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], dilations=[2**62, 1]), x4)
    for op, what in [("Reshape", "Reshape to 17 dims of 1"), ("Expand", "Expand to 17 dims of 1")]:
        one(f"shape_{op.lower()}_rank17.onnx", what + " (max_rank is 16)", node(op, ["x", "s"], ["y"]), [vi("x", [1])],
            inits=[i64("s", [1] * 17)])
    one("shape_unsqueeze_rank17.onnx", "Unsqueeze of a rank-16 input (max_rank is 16)",
        node("Unsqueeze", ["x", "a"], ["y"]),
        [vi("x", [1] * 16)], inits=[i64("a", [0])])
    one("shape_constant_of_shape_rank17.onnx", "ConstantOfShape of 17 dims (max_rank is 16)",
        node("ConstantOfShape", ["s"], ["y"]),
        [], inits=[i64("s", [1] * 17)])
    one("shape_argmax_empty_axis.onnx", "ArgMax over an empty axis (no index to return)",
        node("ArgMax", ["x"], ["y"], axis=1), [vi("x", [2, 0])], [vi("y", None, I64)])
    one("shape_gather_from_scalar.onnx", "Gather from a scalar", node("Gather", ["x", "i"], ["y"]), [vi("x", [])],
        inits=[i64("i", 0)])
    one("shape_tile_repeats_count.onnx", "Tile of a rank-2 input with 1 repeat", node("Tile", ["x", "r"], ["y"]),
        inits=[i64("r", [2])])
    one("shape_clip_bound_not_scalar.onnx", "Clip with a [2] min", node("Clip", ["x", "lo"], ["y"]),
        inits=[const("lo", [1.0, 2.0])])
    one("shape_range_tiny_delta.onnx", "Range(0, 1, 1e-30) of f32 (1e30 elements)",
        node("Range", ["a", "b", "d"], ["y"]), [],
        inits=[const("a", 0.0), const("b", 1.0), const("d", 1e-30)])
    one("shape_range_inf_limit.onnx", "Range(0, inf, 1) of f32", node("Range", ["a", "b", "d"], ["y"]), [],
        inits=[const("a", 0.0), const("b", float("inf")), const("d", 1.0)])
    one("shape_size_of_huge_input.onnx", "Size of an input [2^31, 2^31] f32 (the input's bytes overflow)",
        [node("Size", ["x"], ["s"]), node("Cast", ["s"], ["y"], to=F)], [vi("x", [2**31, 2**31])])
    one("type_leakyrelu_int64.onnx", "LeakyRelu of an i64 tensor", node("LeakyRelu", ["x"], ["y"]),
        [vi("x", [2, 3], I64)],
        [vi("y", None, I64)])
    one("type_constant_of_shape_string.onnx", "ConstantOfShape whose value is a string tensor",
        node("ConstantOfShape", ["s"], ["y"], value=helper.make_tensor("v", TensorProto.STRING, [1], [b"a"])), [],
        inits=[i64("s", [2])], expect=E)
    one("graph_mean_no_inputs.onnx", "Mean with no inputs", node("Mean", [], ["y"]))


# ---------------------------------------------------------------------------------------------------
# controls for corners the generated kernels must print and compute right: special float constants,
# integer division by zero and INT_MIN / -1, small and half types, extreme slice and Range bounds
def compiled_controls():
    def x_in(shape=(2, 3), elem=F):
        return [vi("x", list(shape), elem)]

    special = [const(n, v) for n, v in [("nan", np.nan), ("inf", np.inf), ("ninf", -np.inf), ("den", 1e-45),
                                        ("negz", -0.0), ("big", 3.4028235e38)]]
    emit("valid_special_constants.onnx", V, "NaN, +-inf, a denormal, -0 and FLT_MAX as constants in one fused chain",
         model([node("Add", ["x", "nan"], ["a"]), node("Mul", ["x", "inf"], ["b"]), node("Max", ["x", "ninf"], ["m"]),
                node("Add", ["m", "den"], ["d"]), node("Mul", ["d", "negz"], ["e"]),
                node("Clip", ["e", "ninf", "inf"], ["f"]),
                node("Sub", ["f", "big"], ["g"]), node("Add", ["g", "a"], ["h"]), node("Add", ["h", "b"], ["y"])],
               x_in(), [vi("y", [2, 3])], inits=special))
    emit("valid_integer_division.onnx", V, "i64 and i32 Div and Mod by 0, and INT_MIN / -1, computed at run time",
         model([node("Div", ["x", "z"], ["q"]), node("Mod", ["x", "z"], ["r"]), node("Mul", ["x", "zero"], ["x0"]),
                node("Add", ["x0", "mn"], ["lo"]), node("Div", ["lo", "m1"], ["q2"]), node("Mod", ["lo", "m1"], ["r2"]),
                node("Mod", ["lo", "m1"], ["r3"], fmod=1), node("Sum", ["q", "r", "q2", "r2", "r3"], ["y"]),
                node("Cast", ["x"], ["x32"], to=TensorProto.INT32), node("Div", ["x32", "z32"], ["q32"]),
                node("Mod", ["x32", "z32"], ["y32"])],
               x_in(elem=I64),
               [vi("y", [2, 3], I64), vi("q32", [2, 3], TensorProto.INT32), vi("y32", [2, 3], TensorProto.INT32)],
               inits=[i64("z", [0, -1, 3]), i64("zero", 0), i64("m1", -1), i64("mn", -(2**63)),
                      numpy_helper.from_array(np.array([0, -1, 2**31 - 1], np.int32), "z32")]))
    emit("valid_small_int_ops.onnx", V, "i8 and u8 arithmetic that wraps, u8 division by 0",
         model([node("Add", ["x", "k"], ["a"]), node("Mul", ["a", "k"], ["y"]), node("Sub", ["u", "ku"], ["b"]),
                node("Div", ["b", "zu"], ["yu"])],
               [vi("x", [2, 3], TensorProto.INT8), vi("u", [2, 3], TensorProto.UINT8)],
               [vi("y", [2, 3], TensorProto.INT8), vi("yu", [2, 3], TensorProto.UINT8)],
               inits=[numpy_helper.from_array(np.array([127, -128, 100], np.int8), "k"),
                      numpy_helper.from_array(np.array([255, 1, 200], np.uint8), "ku"),
                      numpy_helper.from_array(np.array([0, 1, 3], np.uint8), "zu")]))
    emit("valid_cast_chain.onnx", V, "Casts between f32, i8, i64, bool, f16 and f64 in range, inside fused kernels",
         model([node("Mul", ["x", "k"], ["a"]), node("Cast", ["a"], ["b"], to=TensorProto.INT8),
                node("Cast", ["b"], ["c"], to=F), node("Cast", ["a"], ["d"], to=I64), node("Cast", ["d"], ["e"], to=F),
                node("Add", ["c", "e"], ["f"]), node("Cast", ["f"], ["g"], to=TensorProto.BOOL),
                node("Cast", ["g"], ["h"], to=TensorProto.FLOAT16), node("Cast", ["h"], ["i"], to=TensorProto.DOUBLE),
                node("Cast", ["i"], ["y"], to=F)], x_in(), [vi("y", [2, 3])], inits=[const("k", 50.0)]))
    emit("valid_half_types.onnx", V, "f16 and bf16 chains: Add, Mul, Softmax, Relu",
         model([node("Add", ["h", "kh"], ["a"]), node("Mul", ["a", "kh"], ["b"]), node("Softmax", ["b"], ["yh"]),
                node("Add", ["bf", "bf"], ["c"]), node("Relu", ["c"], ["yb"])],
               [vi("h", [2, 3], TensorProto.FLOAT16), vi("bf", [2, 3], TensorProto.BFLOAT16)],
               [vi("yh", [2, 3], TensorProto.FLOAT16), vi("yb", [2, 3], TensorProto.BFLOAT16)],
               inits=[numpy_helper.from_array(np.array([2.5, -3, 6e-8], np.float16), "kh")]))
    emit("valid_softmax_infinities.onnx", V, "Softmax, LogSoftmax and ReduceMax over rows holding -inf, +inf and NaN",
         model([node("Add", ["x", "m"], ["a"]), node("Softmax", ["a"], ["s"]), node("LogSoftmax", ["a"], ["l"]),
                node("ReduceMax", ["a"], ["r"], axes=[-1], keepdims=1), node("Add", ["s", "l"], ["t"]),
                node("Add", ["t", "r"], ["y"])], x_in(), [vi("y", [2, 3])],
               inits=[const("m", [[-np.inf] * 3, [np.inf, 0, np.nan]])], opset=17))
    emit("valid_reductions.onnx", V, "ReduceProd, ReduceMin and ArgMax (select_last_index) feeding an Add",
         model([node("ReduceProd", ["x"], ["a"], axes=[1], keepdims=0),
                node("ReduceMin", ["x"], ["b"], axes=[1], keepdims=0),
                node("ArgMax", ["x"], ["c"], axis=1, keepdims=0, select_last_index=1), node("Cast", ["c"], ["d"], to=F),
                node("Add", ["a", "b"], ["e"]), node("Add", ["e", "d"], ["y"])], x_in(), [vi("y", [2])], opset=17))
    emit("valid_bool_logic.onnx", V, "Greater, Not, Xor, Where and IsNaN in one fused chain",
         model([node("Greater", ["x", "z"], ["c"]), node("Not", ["c"], ["n"]), node("Xor", ["c", "n"], ["o"]),
                node("Where", ["o", "x", "z"], ["w"]), node("IsNaN", ["w"], ["i"]),
                node("Where", ["i", "z", "w"], ["y"])],
               x_in(), [vi("y", [2, 3])], inits=[const("z", 0.0)]))
    emit("valid_extreme_bounds.onnx", V,
         "Slice with INT64_MIN/MAX starts, ends and steps; Range over the whole int64 span; "
         "Trilu with k = INT64_MIN",
         model([node("Slice", ["x", "s1", "e1", "ax", "t1"], ["a"]),
                node("Slice", ["x", "e1", "s1", "ax", "s1"], ["b"]),
                node("Range", ["e1", "s1", "d"], ["r"]), node("Trilu", ["x", "e1"], ["t"])],
               x_in(), [vi("a", [2, 1]), vi("b", [2, 1]), vi("r", [4], I64), vi("t", [2, 3])],
               inits=[i64("s1", 2**63 - 1), i64("e1", -(2**63)), i64("ax", [1]), i64("t1", -(2**63)), i64("d", 2**62)],
               opset=14))  # Trilu exists from opset 14
    emit("valid_pad_modes.onnx", V, "Pad in constant (with a value), reflect and edge modes",
         model([node("Pad", ["x", "p", "cv"], ["a"]), node("Pad", ["x", "p"], ["b"], mode="reflect"),
                node("Pad", ["x", "p"], ["c"], mode="edge")],
               x_in(), [vi("a", [4, 5]), vi("b", [4, 5]), vi("c", [4, 5])],
               inits=[i64("p", [1, 1, 1, 1]), const("cv", 7.0)], opset=18))
    emit("valid_resize_modes.onnx", V, "Resize nearest, linear (half_pixel) and cubic, by scales and by sizes",
         model([node("Resize", ["x", "", "s"], ["a"], mode="nearest"),
                node("Resize", ["x", "", "s"], ["b"], mode="linear", coordinate_transformation_mode="half_pixel"),
                node("Resize", ["x", "", "", "z"], ["c"], mode="cubic")],
               [vi("x", [1, 2, 3, 3])], [vi("a", [1, 2, 6, 6]), vi("b", [1, 2, 6, 6]), vi("c", [1, 2, 5, 4])],
               inits=[const("s", [1, 1, 2, 2.0]), i64("z", [1, 2, 5, 4])]))
    rng = np.random.default_rng(9)
    emit("valid_conv_transpose_pools.onnx", V, "ConvTranspose with stride and output_padding, MaxPool with ceil_mode, "
         "AveragePool with count_include_pad",
         model([node("ConvTranspose", ["x", "w"], ["a"], strides=[2, 2], output_padding=[1, 1], pads=[1, 1, 1, 1]),
                node("MaxPool", ["x"], ["b"], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
                node("AveragePool", ["x"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1)],
               [vi("x", [1, 2, 5, 5])], [vi("a", [1, 3, 10, 10]), vi("b", [1, 2, 3, 3]), vi("c", [1, 2, 5, 5])],
               inits=[const("w", rng.standard_normal((2, 3, 3, 3)))]))
    emit("valid_split_uneven.onnx", V, "opset-18 Split of 3 into num_outputs 4 (1, 1, 1, 0)",
         model([node("Split", ["x"], ["a", "b", "c", "d"], axis=1, num_outputs=4)], x_in(),
               [vi("a", [2, 1]), vi("b", [2, 1]), vi("c", [2, 1]), vi("d", [2, 0])], opset=18))
    emit("valid_layernorm_stats.onnx", V, "LayerNormalization with its Mean and InvStdDev outputs",
         model([node("LayerNormalization", ["x", "s"], ["y", "mean", "inv"])], x_in(),
               [vi("y", [2, 3]), vi("mean", [2, 1]), vi("inv", [2, 1])], inits=[const("s", np.ones(3))], opset=17))
    emit("valid_conv_huge_stride.onnx", V, "a legal but absurd Conv: strides [2^31] on a length-5 input (one output)",
         model([node("Conv", ["x", "w"], ["y"], strides=[2**31])], [vi("x", [1, 1, 5])], [vi("y", [1, 1, 1])],
               inits=[const("w", np.ones((1, 1, 3)))]))


if __name__ == "__main__":
    sys.exit(main())
