#!/usr/bin/env python3
"""Runs collectives through a framework that loads NCCL by name and checks every element against NumPy.

    frameworks_check.py jax  [-n NDEV] [--elems N]   psum, all_gather, psum_scatter, all_to_all, ppermute (pmap)
    frameworks_check.py cupy [-n NDEV] [--elems N]   cupy.cuda.nccl all-reduce (sum), one communicator per GPU
    frameworks_check.py which                         which file dlopen("libnccl.so.2") gives this process

One process drives NDEV GPUs (default: all visible). Inputs are whole numbers below 2**24, distinct per device
and element, so float32 sums are exact and a wrong peer, offset or stale buffer shows. Prints one line per check
(PASS/FAIL), then the NCCL files mapped into the process and the one a by-name dlopen resolves to; exits 1 on a
failed check. tools/gpu/frameworks_check.sh runs it under Braid and checks the log for Braid's banner.
"""
import argparse
import ctypes
import os
import sys

try:
    import numpy as np
except ImportError:  # "which" and -h need no NumPy; the checks do
    np = None


def nccl_files():
    """Every mapped file whose name starts with libnccl or libbraid: the NCCL libraries in this process."""
    seen = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            if len(parts) == 6:
                path = parts[5].strip()
                base = os.path.basename(path)
                if (base.startswith("libnccl") or base.startswith("libbraid")) and path not in seen:
                    seen.append(path)
    return seen


def file_of(addr):
    """The mapped file that holds address addr."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split(None, 5)
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if lo <= addr < hi:
                return parts[5].strip() if len(parts) == 6 else "(anonymous)"
    return "(unmapped)"


def which_nccl():
    """The file that a dlopen of libnccl.so.2 by name (what XLA and CuPy do) resolves ncclAllReduce to."""
    try:
        lib = ctypes.CDLL("libnccl.so.2")
    except OSError as e:
        return "not loadable: %s" % e
    addr = ctypes.cast(lib.ncclAllReduce, ctypes.c_void_p).value
    return file_of(addr)


def inputs(ndev, elems):
    """ndev rows of elems whole numbers, distinct per row and element."""
    idx = np.arange(elems, dtype=np.int64)
    rows = [((idx * 7 + 13 * d) % 4093 + 1000 * (d + 1)) for d in range(ndev)]
    return np.stack(rows).astype(np.float32)


class Checker:
    def __init__(self):
        self.failed = 0

    def check(self, name, got, want):
        got = np.asarray(got)
        ok = got.shape == want.shape and np.array_equal(got, want)
        if ok:
            print("PASS %-14s %s, every element equal" % (name, "x".join(map(str, want.shape))))
        else:
            self.failed += 1
            if got.shape != want.shape:
                print("FAIL %-14s shape %s, expected %s" % (name, got.shape, want.shape))
            else:
                bad = np.argwhere(got != want)
                first = tuple(bad[0])
                print("FAIL %-14s %d of %d elements differ; first at %s: %r, expected %r"
                      % (name, len(bad), want.size, first, got[first], want[first]))
        sys.stdout.flush()


def run_jax(ndev, elems, chk):
    import jax
    from jax import lax

    devs = jax.local_devices()[:ndev]
    n = len(devs)
    print("jax %s on %d of %d devices: %s" % (jax.__version__, n, jax.local_device_count(),
                                              ", ".join(str(d) for d in devs)))
    elems -= elems % (n * n)  # psum_scatter and all_to_all split each row into n (then n) equal parts
    x = inputs(n, elems)
    part = elems // n

    def pm(fn):
        return jax.pmap(fn, axis_name="i", devices=devs)

    total = x.sum(axis=0)
    chk.check("psum", pm(lambda v: lax.psum(v, "i"))(x), np.broadcast_to(total, x.shape))
    chk.check("all_gather", pm(lambda v: lax.all_gather(v, "i"))(x), np.broadcast_to(x, (n,) + x.shape))
    chk.check("psum_scatter", pm(lambda v: lax.psum_scatter(v, "i", tiled=True))(x), total.reshape(n, part))
    # Device d sends its part j to device j; device j's result holds, in place d, device d's part j.
    a2a = pm(lambda v: lax.all_to_all(v.reshape(n, part), "i", 0, 0))(x)
    chk.check("all_to_all", a2a, x.reshape(n, n, part).transpose(1, 0, 2))
    perm = [(d, (d + 1) % n) for d in range(n)]
    chk.check("ppermute", pm(lambda v: lax.ppermute(v, "i", perm))(x), np.roll(x, 1, axis=0))


def run_cupy(ndev, elems, chk):
    import cupy
    from cupy.cuda import nccl

    n = min(ndev, cupy.cuda.runtime.getDeviceCount())
    print("cupy %s, cupy.cuda.nccl version %d, %d devices" % (cupy.__version__, nccl.get_version(), n))
    x = inputs(n, elems)
    comms = nccl.NcclCommunicator.initAll(list(range(n)))
    send, recv = [], []
    for d in range(n):
        with cupy.cuda.Device(d):
            send.append(cupy.asarray(x[d]))
            recv.append(cupy.full(elems, -1.0, dtype=cupy.float32))  # poisoned
    nccl.groupStart()
    for d in range(n):
        with cupy.cuda.Device(d):
            comms[d].allReduce(send[d].data.ptr, recv[d].data.ptr, elems, nccl.NCCL_FLOAT32, nccl.NCCL_SUM,
                               cupy.cuda.Stream.null.ptr)
    nccl.groupEnd()
    got = []
    for d in range(n):
        with cupy.cuda.Device(d):
            cupy.cuda.Stream.null.synchronize()
            got.append(cupy.asnumpy(recv[d]))
    chk.check("allreduce", np.stack(got), np.broadcast_to(x.sum(axis=0), x.shape))
    for c in comms:
        c.destroy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["jax", "cupy", "which"])
    ap.add_argument("-n", "--devices", type=int, default=64, help="GPUs to use (default: all visible)")
    ap.add_argument("--elems", type=int, default=1 << 20, help="elements per device (default 1M)")
    args = ap.parse_args()
    chk = Checker()
    if args.what == "jax":
        run_jax(args.devices, args.elems, chk)
    elif args.what == "cupy":
        run_cupy(args.devices, args.elems, chk)
    print("NCCL files mapped: %s" % (", ".join(nccl_files()) or "none"))
    print("dlopen(\"libnccl.so.2\") gives: %s" % which_nccl())
    return 1 if chk.failed else 0


if __name__ == "__main__":
    sys.exit(main())
