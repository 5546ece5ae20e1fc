#!/usr/bin/env python3
"""The exact builder's kernel durations per level, from an ncu CSV
(docs/benchmarks.md, "Before and after"):

    ncu --metrics gpu__time_duration.sum --csv -k regex:ex_ \\
        build/tests/bench_gpu_kd SCENE > ncu.csv      # with RT_BENCH_RUNS=1 and friends
    tests/bench/ncu_levels.py ncu.csv

Takes the last build in the file (from its last ex_start), starts a level at
each types scan, and prints a row per level (us) and the totals per kernel.
ncu runs the kernels one at a time: the durations add up to more than a
build, whose launches overlap."""
import csv
import sys
from collections import OrderedDict


def short(name):
    """ex_scan<ExTypeCount, ...> -> scan:TypeCount; other kernels as named."""
    name = name.split('(')[0].replace('void ', '')
    if name.startswith('ex_scan<'):
        return 'scan:' + name[len('ex_scan<'):].split(',')[0].replace('Ex', '')
    return name


def main(path):
    rows, header = [], None
    with open(path, newline='') as f:
        for r in csv.reader(f):
            if 'Kernel Name' in r and 'Metric Value' in r:
                header = r
            elif header and len(r) == len(header):
                rows.append(dict(zip(header, r)))
    if not rows:
        sys.exit(f'{path}: no ncu rows (Kernel Name, Metric Value)')
    scale = {'nsecond': 1e-3, 'usecond': 1.0, 'msecond': 1e3}.get(rows[0].get('Metric Unit', 'nsecond'), 1e-3)
    seq = [(short(r['Kernel Name']), float(r['Metric Value'].replace(',', '')) * scale) for r in rows]
    starts = [i for i, (n, _) in enumerate(seq) if n == 'ex_start']
    seq = seq[starts[-1]:] if starts else seq
    levels, totals = [], OrderedDict()
    for n, us in seq:
        if n == 'scan:TypeCount':
            levels.append(OrderedDict())
        if levels:
            levels[-1][n] = levels[-1].get(n, 0.0) + us
        totals[n] = totals.get(n, 0.0) + us
    names = list(OrderedDict((n, 1) for lv in levels for n in lv))
    print('| level | ' + ' | '.join(names) + ' | level us |')
    print('|---' * (len(names) + 2) + '|')
    for i, lv in enumerate(levels):
        print(f'| {i} | ' + ' | '.join(f'{lv.get(n, 0.0):.1f}' for n in names) + f' | {sum(lv.values()):.1f} |')
    print(f'\n{len(seq)} kernels, {sum(totals.values()) / 1e3:.3f} ms in all:')
    for n, us in sorted(totals.items(), key=lambda x: -x[1]):
        print(f'  {n:32s} {us / 1e3:8.3f} ms')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
