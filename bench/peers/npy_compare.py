"""Element-wise comparison of a peer's array with exmy's, shared by the peer diff scripts:
bit patterns, NaNs compared as a class, and the largest difference (ulps for floats)."""
import numpy as np


def ulps(a, b):
    a = a.astype(np.float32).view(np.int32).astype(np.int64)
    b = b.astype(np.float32).view(np.int32).astype(np.int64)
    a = np.where(a < 0, -(a & 0x7FFFFFFF), a)
    b = np.where(b < 0, -(b & 0x7FFFFFFF), b)
    return np.abs(a - b)


def differ(a, b):
    if a.dtype.kind == "f":
        na, nb = np.isnan(a), np.isnan(b)
        same = (a.view(np.uint32 if a.dtype == np.float32 else np.uint16) ==
                b.view(np.uint32 if b.dtype == np.float32 else np.uint16)) | (na & nb)
        d = ~same
        mu = int(ulps(a[d & ~na & ~nb], b[d & ~na & ~nb]).max()) if (d & ~na & ~nb).any() else 0
        return int(d.sum()), mu
    d = a != b
    return int(d.sum()), int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max()) if d.any() else 0
