#!/usr/bin/python3
"""The PyTorch peer of ptreg's GPU path: "what a PyTorch user would write", with the
dense n x m pair matrix held in memory, on the same device in the same run.

(A) One EM-ICP iteration: the source (n x 3) moved by the pose, the dense squared
    distances to the target (m = n points, both uniform in the unit cube), the weights
    E = exp(-d^2 / (2 sigma2)), their row sums se, se2 = sum E^2 and E @ X, lambda =
    se / sqrt(se2 + exp(-d0^2 / sigma2)), then the weighted Horn solution (4x4 eigh in
    float64); sigma2 = 0.01 (= d0^2), times 0.9 after each iteration. Reported: seconds per
    iteration (median of --repeat runs of --emicp-iters iterations, after one warm-up)
    and the pair rate n*m / seconds / 1e9 (Gpts/s).
(B) One LDDMM geodesic-shooting objective and its gradient: n landmarks uniform in a
    cube of side 10, sigma 1.5, T = --lddmm-steps time points (T - 1 Euler steps of
    1/(T-1)), dense kernel matrix per step, dp/dt = -dH/dq by torch.autograd.grad of H
    (or the closed form with --lddmm-dhdq explicit); f(p0) = gamma H(q0, p0) + lambda/2
    |q(1) - target|^2 (gamma 1, lambda 500000) and df/dp0 by autograd through the whole
    shooting; f + backward timed together.
--lddmm-study: the study's run end to end (first --lddmm-sizes entry, T = 40,
    torch.optim.LBFGS with 400 iterations, history 10, strong Wolfe), from ptreg's
    default start (target - q0) / sum_j K_ij.

Sizes whose dense matrices do not fit are recorded as {"n": n, "status": "oom"}. On the
CPU an estimate against MemAvailable stands in for the allocator (no OOM killer).

bench/gpu/run.sh calls it as
  python3 bench/peers/torch_pairs.py --json OUT --emicp-sizes 10000,100000,1000000 \\
      --lddmm-sizes 1847,20000,100000 --lddmm-study
"""

import argparse
import gc
import json
import math
import statistics
import sys
import time

try:
    import torch
except ImportError:
    torch = None

GAMMA, LAMBDA, SIGMA = 1.0, 500000.0, 1.5


def is_oom(e):
    s = str(e).lower()
    return isinstance(e, MemoryError) or "out of memory" in s or "can't allocate memory" in s


def guarded(n, dev, est_bytes, fn):
    """fn() or, when its memory runs out, an "oom" record."""
    if dev.type == "cpu" and est_bytes > 0.8 * mem_available():
        return {"n": n, "status": "oom", "error": f"estimated {est_bytes / 2**30:.1f} GiB > available memory"}
    err = None
    try:
        return fn()
    except (MemoryError, RuntimeError) as e:
        if not is_oom(e):
            raise
        err = str(e).strip().splitlines()[0][:200]
    gc.collect()
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return {"n": n, "status": "oom", "error": err}


def mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return float("inf")


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, repeat, dev):
    """Warm-up once, then the median of repeat runs; returns (seconds, last result)."""
    out = fn()
    times = []
    for _ in range(repeat):
        sync(dev)
        t0 = time.perf_counter()
        out = fn()
        sync(dev)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


# ---------------------------------------------------------------- (A) EM-ICP
def horn(p, q, w):
    """R, t minimising sum w |R p + t - q|^2 (Horn's quaternion), in float64."""
    p, q, w = p.double(), q.double(), w.double()
    ws = w.sum()
    cp = (w[:, None] * p).sum(0) / ws
    cq = (w[:, None] * q).sum(0) / ws
    s = ((p - cp) * w[:, None]).T @ (q - cq)
    xx, xy, xz, yx, yy, yz, zx, zy, zz = s.reshape(-1)
    n = torch.stack([xx + yy + zz, yz - zy, zx - xz, xy - yx,
                     yz - zy, xx - yy - zz, xy + yx, zx + xz,
                     zx - xz, xy + yx, yy - xx - zz, yz + zy,
                     xy - yx, zx + xz, yz + zy, zz - xx - yy]).reshape(4, 4)
    a, b, c, d = torch.linalg.eigh(n)[1][:, -1]
    r = torch.stack([a * a + b * b - c * c - d * d, 2 * (b * c - a * d), 2 * (b * d + a * c),
                     2 * (b * c + a * d), a * a - b * b + c * c - d * d, 2 * (c * d - a * b),
                     2 * (b * d - a * c), 2 * (c * d + a * b), a * a - b * b - c * c + d * d]).reshape(3, 3)
    return r, cq - r @ cp


def emicp_iteration(y, x, r, t, sigma2, d02):
    """One E-step on the dense n x m weights (one buffer, updated in place) and Horn's M-step."""
    moved = y @ r.T + t
    e = moved @ x.T                                      # n x m
    e.mul_(-2).add_((moved * moved).sum(1, keepdim=True)).add_((x * x).sum(1))
    e.mul_(-0.5 / sigma2).exp_()
    se = e.sum(1)
    se2 = torch.linalg.vector_norm(e, dim=1).square()
    seb = e @ x
    del e
    c = se2 + math.exp(-d02 / sigma2)
    uniform = c < 1e-6
    lam = torch.where(se > 0, se / c.sqrt(), torch.zeros_like(se))
    lam = torch.where(uniform, torch.ones_like(se), lam)
    xp = seb / torch.where(se > 0, se, torch.ones_like(se))[:, None]
    xp = torch.where(uniform[:, None], x.mean(0).expand_as(xp), xp)
    r64, t64 = horn(y, xp, lam)
    return r64.to(y.dtype), t64.to(y.dtype)


def emicp_run(y, x, iters, sigma2=0.01, factor=0.9):
    r = torch.eye(3, dtype=y.dtype, device=y.device)
    t = torch.zeros(3, dtype=y.dtype, device=y.device)
    d02 = sigma2
    for _ in range(iters):
        r, t = emicp_iteration(y, x, r, t, sigma2, d02)
        sigma2 *= factor
    return r, t


def bench_emicp(n, args, dev, dtype, gen):
    y = torch.rand(n, 3, generator=gen, dtype=torch.float64).to(dev, dtype)
    x = torch.rand(n, 3, generator=gen, dtype=torch.float64).to(dev, dtype)
    sec, _ = timed(lambda: emicp_run(y, x, args.emicp_iters), args.repeat, dev)
    spi = sec / args.emicp_iters
    return {"n": n, "m": n, "iterations": args.emicp_iters, "seconds_per_iteration": spi,
            "gpts": n * n / spi / 1e9}


# ---------------------------------------------------------------- (B) LDDMM
def kernel(q, sigma):
    sq = (q * q).sum(1)
    d2 = (sq[:, None] + sq[None, :] - 2 * (q @ q.T)).clamp_min(0)
    return torch.exp(d2 * (-0.5 / sigma ** 2))


def shoot(q0, p0, steps, dhdq, sigma=SIGMA):
    """Euler shooting over steps time points with the dense kernel: (H(q0, p0), q(1))."""
    h, s = 1.0 / (steps - 1), 1.0 / sigma ** 2
    q, p, h0 = q0.detach().requires_grad_(dhdq == "autograd"), p0, None
    for _ in range(steps - 1):
        k = kernel(q, sigma)
        kp = k @ p
        ham = 0.5 * (p * kp).sum()
        h0 = ham if h0 is None else h0
        if dhdq == "autograd":
            dp = -torch.autograd.grad(ham, q, create_graph=True)[0]
        else:
            a = k * (p @ p.T)
            dp = s * (a.sum(1, keepdim=True) * q - a @ q)
        q, p = q + h * kp, p + h * dp
    return h0, q


def objective(q0, p0, target, steps, dhdq, gamma=GAMMA, lam=LAMBDA):
    """f(p0) = gamma H(q0, p0) + lam/2 |q(1) - target|^2."""
    h0, q1 = shoot(q0, p0, steps, dhdq)
    return gamma * h0 + 0.5 * lam * ((q1 - target) ** 2).sum()


def lddmm_data(n, dev, dtype, gen):
    q0 = 10 * torch.rand(n, 3, generator=gen, dtype=torch.float64)
    target = q0 + 0.3 * torch.randn(n, 3, generator=gen, dtype=torch.float64)
    p0 = 0.01 * torch.randn(n, 3, generator=gen, dtype=torch.float64)
    return q0.to(dev, dtype), target.to(dev, dtype), p0.to(dev, dtype)


def value_and_grad(q0, p0, target, steps, dhdq):
    p0.grad = None
    f = objective(q0, p0, target, steps, dhdq)
    f.backward()
    return f


def bench_lddmm(n, args, dev, dtype, gen):
    q0, target, p0 = lddmm_data(n, dev, dtype, gen)
    p0.requires_grad_()
    sec, f = timed(lambda: value_and_grad(q0, p0, target, args.lddmm_steps, args.lddmm_dhdq), args.repeat, dev)
    return {"n": n, "steps": args.lddmm_steps, "integrator": "euler", "dhdq": args.lddmm_dhdq,
            "seconds": sec, "objective": f.item()}


def lddmm_study(n, args, dev, dtype, gen, steps=40, max_iter=400):
    q0, target, _ = lddmm_data(n, dev, dtype, gen)
    p0 = ((target - q0) / kernel(q0, SIGMA).sum(1, keepdim=True)).requires_grad_()
    value_and_grad(q0, p0, target, steps, args.lddmm_dhdq)   # warm-up
    tol = 1e-6 * max(1.0, p0.detach().norm().item())
    opt = torch.optim.LBFGS([p0], lr=1, max_iter=max_iter, history_size=10, line_search_fn="strong_wolfe",
                            tolerance_grad=tol, tolerance_change=1e-10)
    f0 = objective(q0, p0, target, steps, args.lddmm_dhdq).item()
    sync(dev)
    t0 = time.perf_counter()
    opt.step(lambda: value_and_grad(q0, p0, target, steps, args.lddmm_dhdq))
    sync(dev)
    sec = time.perf_counter() - t0
    st = opt.state[p0]
    h0, q1 = shoot(q0, p0, steps, args.lddmm_dhdq)
    f1 = (GAMMA * h0 + 0.5 * LAMBDA * ((q1 - target) ** 2).sum()).item()
    return {"n": n, "steps": steps, "integrator": "euler", "dhdq": args.lddmm_dhdq, "max_iter": max_iter,
            "seconds": sec, "iterations": st.get("n_iter"), "evaluations": st.get("func_evals"),
            "initial_objective": f0, "objective": f1,
            "rms_residual": (q1.detach() - target).square().sum(1).mean().sqrt().item()}


def sizes(s):
    return [int(v) for v in s.split(",") if v.strip()]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto")
    ap.add_argument("--emicp-sizes", type=sizes, default=sizes("10000,100000"))
    ap.add_argument("--emicp-iters", type=int, default=3)
    ap.add_argument("--lddmm-sizes", type=sizes, default=sizes("1847,20000"))
    ap.add_argument("--lddmm-steps", type=int, default=40, help="time points T (T - 1 Euler steps)")
    ap.add_argument("--lddmm-dhdq", choices=("autograd", "explicit"), default="autograd")
    ap.add_argument("--lddmm-study", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    ap.add_argument("--json")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if torch is None:
        print("torch not installed: skipped")
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"skipped": "torch not installed"}, f)
        return
    if a.lddmm_steps < 2 or a.emicp_iters < 1 or a.repeat < 1:
        sys.exit("torch_pairs: --lddmm-steps >= 2, --emicp-iters >= 1 and --repeat >= 1 needed")
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_pairs: --device cuda but torch sees no CUDA device")
    dev = torch.device("cuda" if a.device == "cuda" or (a.device == "auto" and torch.cuda.is_available()) else "cpu")
    dtype = getattr(torch, a.dtype)
    item = torch.finfo(dtype).bits // 8
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    out = {"torch": torch.__version__, "device": name, "dtype": a.dtype, "threads": torch.get_num_threads(),
           "emicp": [], "lddmm_eval": []}
    sys.stdout.reconfigure(line_buffering=True)  # run.sh may stop it: what ran stays printed

    def save():  # after every record, for the same reason
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)

    print(f"torch {torch.__version__} on {name} ({a.dtype})")
    for n in a.emicp_sizes:
        gen = torch.Generator().manual_seed(a.seed)
        r = guarded(n, dev, 1.5 * n * n * item, lambda: bench_emicp(n, a, dev, dtype, gen))
        out["emicp"].append(r)
        save()
        print(f"  emicp n=m={n:>9}: " + (f"{r['seconds_per_iteration'] * 1e3:10.2f} ms/iteration "
                                          f"{r['gpts']:8.3f} Gpts/s" if "status" not in r else "oom"))
    for n in a.lddmm_sizes:
        gen = torch.Generator().manual_seed(a.seed)
        est = 6 * (a.lddmm_steps - 1) * n * n * item
        r = guarded(n, dev, est, lambda: bench_lddmm(n, a, dev, dtype, gen))
        out["lddmm_eval"].append(r)
        save()
        print(f"  lddmm f+grad n={n:>7} T={a.lddmm_steps}: " +
              (f"{r['seconds'] * 1e3:10.2f} ms  f={r['objective']:.6g}" if "status" not in r else "oom"))
    if a.lddmm_study and a.lddmm_sizes:
        n = a.lddmm_sizes[0]
        gen = torch.Generator().manual_seed(a.seed)
        r = guarded(n, dev, 6 * 39 * n * n * item, lambda: lddmm_study(n, a, dev, dtype, gen))
        out["lddmm_study"] = r
        print(f"  lddmm study n={n} T=40: " + (
            f"{r['seconds']:.2f} s, {r['iterations']} iterations, {r['evaluations']} evaluations, "
            f"f {r['initial_objective']:.6g} -> {r['objective']:.6g}, rms residual {r['rms_residual']:.3g}"
            if "status" not in r else "oom"))
    save()


if __name__ == "__main__":
    main()
