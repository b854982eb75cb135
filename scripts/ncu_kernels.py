#!/usr/bin/env python3
"""Groups the kernels of one run from an `ncu --csv --page raw` log (scripts/device_run.sh with
KILN_DEVICE_NCU=1 writes one per model) by kernel name: count, time each and in all, DRAM bytes each,
grid and block. The log must hold the metrics gpu__time_duration.sum and dram__bytes.sum.

usage: scripts/ncu_kernels.py NCU.csv [KERNELS_PER_RUN]
KERNELS_PER_RUN: how many of the last kernels are one run (kiln's "kernels per run"; default: read from
kiln's own output in the same log)."""
import collections
import csv
import io
import re
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    text = open(sys.argv[1], encoding='utf-8', errors='replace').read()
    if len(sys.argv) == 3:
        per_run = int(sys.argv[2])
    else:
        m = re.search(r'kernels per run: (\d+)', text)
        if not m:
            sys.exit('no "kernels per run" in the log: pass KERNELS_PER_RUN')
        per_run = int(m.group(1))
    start = text.find('"ID","Process ID"')
    if start < 0:
        sys.exit('no ncu CSV table in ' + sys.argv[1])
    rows = list(csv.reader(io.StringIO(text[start:])))
    header, units = rows[0], rows[1]
    data = [r for r in rows[2:] if len(r) == len(header)]
    col = {name: header.index(name) for name in ('Kernel Name', 'gpu__time_duration.sum', 'dram__bytes.sum',
                                                 'Grid Size', 'Block Size')}
    number = lambda s: float(s.replace(',', ''))
    scale = {'ns': 1e-3, 'usecond': 1, 'us': 1, 'msecond': 1e3, 'ms': 1e3}[units[col['gpu__time_duration.sum']]]
    byte_scale = {'byte': 1, 'Kbyte': 1e3, 'Mbyte': 1e6, 'Gbyte': 1e9}[units[col['dram__bytes.sum']]]
    run = data[-per_run:]
    groups = collections.OrderedDict()
    for r in run:
        name = re.sub(r'\(.*', '', r[col['Kernel Name']])[:60]
        g = groups.setdefault(name, {'count': 0, 'us': 0.0, 'bytes': 0.0, 'shape': r[col['Grid Size']] + ' x ' + r[col['Block Size']]})
        g['count'] += 1
        g['us'] += number(r[col['gpu__time_duration.sum']]) * scale
        g['bytes'] += number(r[col['dram__bytes.sum']]) * byte_scale
    total = sum(g['us'] for g in groups.values())
    print(f'{len(run)} kernels (the last {per_run} of {len(data)} profiled), {total:.1f} us in all')
    print(f'{"kernel":60s} {"count":>5s} {"us each":>8s} {"us all":>8s} {"MB each":>8s}  grid x block')
    for name, g in sorted(groups.items(), key=lambda kv: -kv[1]['us']):
        print(f'{name:60s} {g["count"]:5d} {g["us"] / g["count"]:8.2f} {g["us"]:8.1f} {g["bytes"] / g["count"] / 1e6:8.2f}  {g["shape"]}')


if __name__ == '__main__':
    main()
