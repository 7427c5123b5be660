#!/usr/bin/python3
"""Batched registration (ptreg batch) against its baselines, on the same pairs
files in one run: 10^4, 10^5, 10^6 neighborhoods of 12 and 32 atoms against a
motif of the same size (rotation only, the whole schedule: 66 iterations),
pairs per second and the EM-ICP study's rate (n m iterations / s); a loop of
single-pair ptreg_emicp calls (--engine loop) and the NumPy peer vectorised
across pairs (bench/peers/batch_numpy.py) on the same pairs; MPI with 2 ranks
against 1 (1 thread each, the same bits); and the orientation accuracy curve
on the synthetic polycrystal (bench/apt_accuracy.py).

    /usr/bin/python3 bench/batch_bench.py --ptreg build/ptreg [--sizes 1e4,1e5,1e6]
        [--points 12,32] [--repeat 3] [--baseline-pairs 10000] [--skip-mpi] [--skip-accuracy]

Targets (issue 14, 2 cores): >= 100k pairs/s for 12-atom neighborhoods (whole
schedule), >= 10x the single-call loop; MPI 2 ranks >= 1.8x one rank."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PY = '/usr/bin/python3'


def run_json(cmd, env=None):
    res = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads(res.stdout)


def make_pairs(work, pairs, points, shared, seed):
    path = os.path.join(work, f'p{pairs}_{points}_{"s" if shared else "t"}.ptpairs')
    if not os.path.exists(path):
        cmd = [PY, os.path.join(HERE, 'batch_pairs.py'), '--pairs', str(pairs), '--points', str(points),
               '--noise', '0.01', '--max-angle', '30', '--seed', str(seed), '-o', path]
        if shared:
            cmd.append('--shared-target')
        else:
            cmd += ['--translation', '0.1']
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return path


def ptreg_pairs(ptreg, path, extra, threads=None):
    cmd = [ptreg, 'batch', '--pairs', path, '--tol', '0', '--json'] + extra
    if threads:
        cmd += ['--threads', str(threads)]
    return run_json(cmd)


def lanes_rate(args, work, pairs, points):
    """The lanes engine, median of --repeat runs interleaved over the sizes by the caller."""
    path = make_pairs(work, pairs, points, True, 1)
    r = ptreg_pairs(args.ptreg, path, ['--rotation-only'])
    return r


def numpy_peer(path, rotation_only):
    cmd = [PY, os.path.join(HERE, 'peers', 'batch_numpy.py'), path]
    if rotation_only:
        cmd.append('--rotation-only')
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def baselines(args, work, points):
    """Lanes, the ptreg_emicp loop and NumPy on the same pairs, with translation
    (ptreg_emicp always frees it), pairs with their own targets."""
    n = args.baseline_pairs
    path = make_pairs(work, n, points, False, 2)
    out = {'points': points, 'pairs': n}
    lanes, loop, peer = [], [], []
    for _ in range(args.repeat):
        lanes.append(ptreg_pairs(args.ptreg, path, [])['pairs_per_s'])
        loop.append(ptreg_pairs(args.ptreg, path, ['--engine', 'loop'])['pairs_per_s'])
        if points <= args.numpy_max_points:
            peer.append(numpy_peer(path, False)['pairs_per_s'])
    out['lanes_pairs_per_s'] = statistics.median(lanes)
    out['loop_pairs_per_s'] = statistics.median(loop)
    out['numpy_pairs_per_s'] = statistics.median(peer) if peer else None
    return out


def mpi_case(args, work):
    """Pairs and atoms, 1 rank against 2, 1 thread each: the same bits, the speed-up."""
    mpirun = shutil.which('mpirun')
    if not mpirun or 'mpi: yes' not in subprocess.run([args.ptreg, '--version'], capture_output=True,
                                                      text=True).stdout:
        return None
    launch = [mpirun, '--oversubscribe', '--allow-run-as-root', '-n', '2']
    path = make_pairs(work, args.mpi_pairs, 12, True, 3)
    pos = os.path.join(work, 'mpi.pos')
    subprocess.run([args.ptreg, 'synth', '--shape', 'apt-polycrystal', '-o', pos, '--box', '20,20,40',
                    '--efficiency', '0.6', '--noise', '0.02'], check=True, stdout=subprocess.DEVNULL)
    cases = {'pairs': ['--pairs', path, '--rotation-only', '--tol', '0'], 'atoms': [pos]}
    result = {}
    for name, inputs in cases.items():
        one, two = [], []
        for k in range(args.repeat):
            out1, out2 = os.path.join(work, f'{name}1.npy'), os.path.join(work, f'{name}2.npy')
            for outs, runner, times in ((out1, [], one), (out2, launch, two)):
                t0 = os.times().elapsed
                r = run_json(runner + [args.ptreg, 'batch'] + inputs + ['-o', outs, '--threads', '1', '--json'])
                times.append((r['register_ms'], (os.times().elapsed - t0) * 1e3, r))
            same = open(out1, 'rb').read() == open(out2, 'rb').read()
        reg1 = statistics.median(t[0] for t in one)
        reg2 = statistics.median(t[0] for t in two)
        wall1 = statistics.median(t[1] for t in one)
        wall2 = statistics.median(t[1] for t in two)
        result[name] = {'items': one[0][2].get('pairs', one[0][2].get('atoms')), 'register_ms_1': reg1,
                        'register_ms_2': reg2, 'speedup_register': reg1 / reg2, 'wall_ms_1': wall1,
                        'wall_ms_2': wall2, 'speedup_wall': wall1 / wall2, 'same_bits': same}
    return result


def accuracy(args):
    cmd = [PY, os.path.join(HERE, 'apt_accuracy.py'), '--ptreg', args.ptreg, '--noise', args.accuracy_noise,
           '--efficiency', args.accuracy_efficiency, '--', '--motif-points', '18', '--grain-radius', '1']
    res = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith('{')]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--ptreg', default='build/ptreg')
    ap.add_argument('--sizes', default='1e4,1e5,1e6')
    ap.add_argument('--points', default='12,32')
    ap.add_argument('--repeat', type=int, default=3)
    ap.add_argument('--baseline-pairs', type=int, default=10000)
    ap.add_argument('--numpy-max-points', type=int, default=32)
    ap.add_argument('--mpi-pairs', type=int, default=100000)
    ap.add_argument('--accuracy-noise', default='0,0.02,0.05,0.08')
    ap.add_argument('--accuracy-efficiency', default='0.4,0.6,1')
    ap.add_argument('--skip-mpi', action='store_true')
    ap.add_argument('--skip-accuracy', action='store_true')
    ap.add_argument('--work', help='keep the generated files here')
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix='ptreg_batch_bench_')
    os.makedirs(work, exist_ok=True)
    sizes = [int(float(s)) for s in args.sizes.split(',')]
    points = [int(p) for p in args.points.split(',')]
    report = {'threads': os.cpu_count(), 'lanes': [], 'baselines': []}
    # interleaved repeats: every size once per round
    runs = {}
    for _ in range(args.repeat):
        for k in points:
            for n in sizes:
                runs.setdefault((n, k), []).append(lanes_rate(args, work, n, k))
    for (n, k), rs in sorted(runs.items(), key=lambda x: (x[0][1], x[0][0])):
        row = {'pairs': n, 'points': k, 'iterations': rs[0]['iterations_mean'],
               'pairs_per_s': statistics.median(r['pairs_per_s'] for r in rs),
               'gpts': statistics.median(r['gpts'] for r in rs), 'isa': rs[0]['isa'],
               'runs': [round(r['pairs_per_s']) for r in rs]}
        report['lanes'].append(row)
        print(json.dumps(row), flush=True)
    for k in points:
        b = baselines(args, work, k)
        b['vs_loop'] = b['lanes_pairs_per_s'] / b['loop_pairs_per_s']
        b['vs_numpy'] = b['lanes_pairs_per_s'] / b['numpy_pairs_per_s'] if b['numpy_pairs_per_s'] else None
        report['baselines'].append(b)
        print(json.dumps(b), flush=True)
    if not args.skip_mpi:
        report['mpi'] = mpi_case(args, work)
        print(json.dumps(report['mpi']), flush=True)
    if not args.skip_accuracy:
        report['accuracy'] = accuracy(args)
        for r in report['accuracy']:
            print(json.dumps(r), flush=True)
    lanes12 = [r for r in report['lanes'] if r['points'] == 12]
    loop12 = [b for b in report['baselines'] if b['points'] == 12]
    print('\ntargets:')
    if lanes12:
        print(f"  12-atom pairs/s (whole schedule): {min(r['pairs_per_s'] for r in lanes12):.0f} at worst "
              f"(target >= 100000)")
    if loop12:
        print(f"  lanes / single-call loop (12 atoms): {loop12[0]['vs_loop']:.1f}x (target >= 10x)")
    if report.get('mpi'):
        for name, m in report['mpi'].items():
            print(f"  MPI 2 ranks / 1 ({name}): registration {m['speedup_register']:.2f}x, wall "
                  f"{m['speedup_wall']:.2f}x, same bits: {m['same_bits']} (target >= 1.8x)")
    with open(os.path.join(work, 'batch_bench.json'), 'w') as f:
        json.dump(report, f, indent=1)
    print(f'\nreport: {os.path.join(work, "batch_bench.json")}')


if __name__ == '__main__':
    sys.exit(main())
