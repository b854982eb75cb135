#!/usr/bin/python3
"""Regenerates the seed corpora under fuzz/corpus/ (docs/FUZZING.md). Needs numpy and onnx (1.12).

  fuzz/make_seeds.py [--conf /tmp/conf/out/node] [--gen-ir build-fuzz/fuzz/gen_ir_seeds]

fuzz_npy and the hand-made TensorProtos need nothing else; the ONNX models, test tensors and IR texts
are picked from the ONNX node conformance cases (one case per op family first, then more, round
robin) and, for IR, printed by gen_ir_seeds (built with `ninja -C build-fuzz gen_ir_seeds`).
"""
import argparse, collections, glob, io, os, shutil, subprocess, sys, tempfile

import numpy as np
from numpy.lib import format as npf

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, 'fuzz', 'corpus')


def round_robin(cases, limit):
    """Up to `limit` case folders, cycling over op families (test_add_bcast -> 'add')."""
    groups = collections.OrderedDict()
    for c in sorted(cases):
        groups.setdefault(os.path.basename(c)[5:].split('_')[0], []).append(c)
    out, i = [], 0
    while len(out) < limit and any(i < len(v) for v in groups.values()):
        out += [v[i] for v in groups.values() if i < len(v)][:limit - len(out)]
        i += 1
    return out


def npy_seeds():
    out = os.path.join(CORPUS, 'fuzz_npy')
    os.makedirs(out, exist_ok=True)

    def save(name, arr, version=None):
        b = io.BytesIO()
        npf.write_array(b, arr, version=version, allow_pickle=False)
        raw(name, b.getvalue())
        return b.getvalue()

    def raw(name, data):
        with open(os.path.join(out, name + '.npy'), 'wb') as f:
            f.write(data)

    rng = np.random.default_rng(0)
    for dt in ['<f2', '<f4', '<f8', '<i8', '<i4', '|i1', '|u1', '|b1']:
        tag = dt[1:]
        base = (rng.standard_normal(6) * 100).astype(dt) if dt[1] != 'b' else np.array([0, 1, 1, 0, 1, 0], bool)
        save(f'{tag}_2x3', base.reshape(2, 3))
        save(f'{tag}_scalar', base[0].reshape(()))
        save(f'{tag}_empty', base[:0])
        save(f'{tag}_1x0x4', np.zeros((1, 0, 4), dt))
    save('f4_specials', np.array([np.nan, np.inf, -np.inf, -0.0, 1e-45], '<f4'))
    save('f4_rank5', np.arange(32, dtype='<f4').reshape(1, 2, 2, 2, 4))
    save('f4_v2', np.arange(4, dtype='<f4'), version=(2, 0))
    save('f4_v3', np.arange(4, dtype='<f4'), version=(3, 0))
    # Rejected on purpose: each one reaches one error path.
    save('reject_fortran', np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3)))
    save('reject_big_endian', np.arange(3, dtype='>f4'))
    save('reject_u2', np.arange(3, dtype='<u2'))
    save('reject_structured', np.zeros(2, dtype=[('a', '<f4'), ('b', '<i4')]))
    b = io.BytesIO()
    npf.write_array(b, np.arange(6, dtype='<f4').reshape(2, 3))
    good = b.getvalue()
    raw('reject_truncated_data', good[:-3])
    raw('reject_trailing_byte', good + b'\0')
    raw('reject_bad_version', good[:6] + b'\x04\x00' + good[8:])

    def v1(d):
        return b'\x93NUMPY\x01\x00' + len(d).to_bytes(2, 'little') + d

    raw('py2_long_dims', v1(b"{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 1L), }\n") + b'\0' * 8)
    raw('double_quotes', v1(b'{"descr": "<i4", "shape": (1,), "fortran_order": False}\n') + b'\1\0\0\0')
    raw('reject_bool_2', v1(b"{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }\n") + b'\1\2')
    raw('reject_huge_dims', v1(b"{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n"))
    raw('reject_dup_key', v1(b"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (), }\n") + b'\0' * 4)
    raw('reject_one_no_comma', v1(b"{'descr': '<f4', 'fortran_order': False, 'shape': (1), }\n") + b'\0' * 4)
    raw('reject_header_past_end', b'\x93NUMPY\x02\x00\xff\xff\xff\x7f{')


def tensor_pb_extras():
    """TensorProtos the conformance data lacks: typed fields, external data into the harness's
    data.bin (4096 bytes), and the contradictions the converter must reject."""
    import onnx
    from onnx import TensorProto as TP, helper
    out = os.path.join(CORPUS, 'fuzz_tensor_pb')
    os.makedirs(out, exist_ok=True)

    def save(name, t):
        with open(os.path.join(out, 'made_' + name + '.pb'), 'wb') as f:
            f.write(t.SerializeToString())

    def external(name, dtype, dims, **kv):
        t = TP(name=name, data_type=dtype, dims=dims, data_location=TP.EXTERNAL)
        for k, v in kv.items():
            t.external_data.add(key=k, value=str(v))
        save(name, t)

    save('f32_typed', helper.make_tensor('f', TP.FLOAT, [2, 2], [1.0, float('nan'), float('inf'), -0.0]))
    save('f64_typed', helper.make_tensor('d', TP.DOUBLE, [3], [1e300, -1e-300, 0.5]))
    save('i64_typed', helper.make_tensor('l', TP.INT64, [2], [-(2 ** 63), 2 ** 63 - 1]))
    save('i8_typed', helper.make_tensor('b', TP.INT8, [3], [-128, 0, 127]))
    save('u8_typed', helper.make_tensor('u', TP.UINT8, [2], [0, 255]))
    save('bool_typed', helper.make_tensor('z', TP.BOOL, [3], [True, False, True]))
    save('f16_bits', TP(name='h', data_type=TP.FLOAT16, dims=[2], int32_data=[0x3c00, -1]))
    save('bf16_bits', TP(name='bf', data_type=TP.BFLOAT16, dims=[2], int32_data=[0x3f80, 0xff80]))
    save('scalar_raw', TP(name='s', data_type=TP.INT32, raw_data=b'\x07\0\0\0'))
    save('empty_dim', TP(name='e', data_type=TP.FLOAT, dims=[0, 5], raw_data=b''))
    external('ext_whole', TP.FLOAT, [1024], location='data.bin')
    external('ext_offset', TP.INT64, [4], location='data.bin', offset=64, length=32)
    external('ext_unaligned', TP.INT32, [3], location='data.bin', offset=3, length=12)
    external('ext_past_end', TP.FLOAT, [8], location='data.bin', offset=4090)
    external('ext_dotdot', TP.FLOAT, [1], location='../data.bin')
    external('ext_missing', TP.FLOAT, [1], location='nope.bin')
    save('reject_u8_300', TP(name='x', data_type=TP.UINT8, dims=[1], int32_data=[300]))
    save('reject_count', TP(name='x', data_type=TP.FLOAT, dims=[3], float_data=[1.0]))
    save('reject_wrong_field', TP(name='x', data_type=TP.FLOAT, dims=[1], int64_data=[1]))
    save('reject_raw_size', TP(name='x', data_type=TP.INT64, dims=[2], raw_data=b'\0' * 15))
    save('reject_string', helper.make_tensor('x', TP.STRING, [1], [b'hi']))
    save('reject_huge', TP(name='x', data_type=TP.DOUBLE, dims=[2 ** 31, 2 ** 31]))
    save('reject_negative_dim', TP(name='x', data_type=TP.FLOAT, dims=[-1], raw_data=b''))


def conformance_seeds(conf, gen_ir):
    cases = [c for c in glob.glob(os.path.join(conf, 'test_*')) if os.path.exists(os.path.join(c, 'model.onnx'))]
    onnx_dir = os.path.join(CORPUS, 'fuzz_onnx_import')
    os.makedirs(onnx_dir, exist_ok=True)
    for c in round_robin(cases, 200):
        shutil.copy(os.path.join(c, 'model.onnx'), os.path.join(onnx_dir, f'conf_{os.path.basename(c)[5:]}.onnx'))
    for f in glob.glob(os.path.join(ROOT, 'tests/data/malformed/*.onnx')):
        shutil.copy(f, os.path.join(onnx_dir, 'malformed_' + os.path.basename(f)))
    shutil.copy(os.path.join(ROOT, 'tests/data/zoo/resnet18.onnx'), os.path.join(onnx_dir, 'zoo_resnet18.onnx'))

    pb_dir = os.path.join(CORPUS, 'fuzz_tensor_pb')
    os.makedirs(pb_dir, exist_ok=True)
    picked = 0
    for c in round_robin(cases, 400):
        for p in sorted(glob.glob(os.path.join(c, 'test_data_set_0', '*.pb'))):
            if os.path.getsize(p) <= 16384 and picked < 300:
                shutil.copy(p, os.path.join(pb_dir, f'{os.path.basename(c)[5:]}_{os.path.basename(p)}'))
                picked += 1

    if not gen_ir:
        return
    ir_dir = os.path.join(CORPUS, 'fuzz_ir_parser')
    os.makedirs(ir_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, ASAN_OPTIONS='detect_leaks=0')
        subprocess.run([gen_ir, tmp] + [os.path.join(c, 'model.onnx') for c in sorted(cases)], check=True, env=env)
        written = sorted(os.listdir(tmp))
        for n in written:
            if n.startswith('builder_'):
                shutil.copy(os.path.join(tmp, n), ir_dir)
        onnx_texts = [os.path.join(tmp, n) for n in written if n.startswith('onnx_test_')]
        # the same family round robin, on the printed texts (onnx_test_add_bcast.ir -> 'add')
        groups = collections.OrderedDict()
        for p in onnx_texts:
            groups.setdefault(os.path.basename(p)[10:].split('_')[0], []).append(p)
        chosen, i = [], 0
        while len(chosen) < 150 and any(i < len(v) for v in groups.values()):
            chosen += [v[i] for v in groups.values() if i < len(v)][:150 - len(chosen)]
            i += 1
        for p in chosen:
            shutil.copy(p, ir_dir)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--conf', default='/tmp/conf/out/node', help='ONNX node conformance cases')
    ap.add_argument('--gen-ir', default=os.path.join(ROOT, 'build-fuzz/fuzz/gen_ir_seeds'))
    args = ap.parse_args()
    npy_seeds()
    tensor_pb_extras()
    if os.path.isdir(args.conf):
        conformance_seeds(args.conf, args.gen_ir if os.path.exists(args.gen_ir) else None)
    else:
        print(f'{args.conf} is missing: the ONNX, TensorProto and IR seeds were left as they are', file=sys.stderr)


if __name__ == '__main__':
    main()
