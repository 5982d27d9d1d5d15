from common import *

def f32(x):
    return x.astype(np.float32).astype(np.float64)

def prods(t, a, b, rows, cols):
    """products (n_out, K) in float64 (exact) for output pairs (rows[i], cols[i])."""
    A = values(t, a); B = values(t, b)
    if t == 'tf32':
        A = tf32_rne(A); B = tf32_rne(B)
    return A[rows] * B[cols]

def tf32_rne(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0xFFF + ((u >> 13) & 1)) >> 13) << 13
    return r.astype(np.uint32).view(np.float32).astype(np.float64)

def chunk_scan(P, Ps):
    """fp32-seq:chunk=Pc for every Pc in Ps; P (n_out, K) products. returns (len(Ps), n_out) float64"""
    K = P.shape[1]
    Ps = np.asarray(Ps)[:, None]
    ch = np.zeros((Ps.shape[0], P.shape[0]))
    red = np.zeros_like(ch)
    for k in range(K):
        if k:
            m = (k % Ps == 0)
            if m.any():
                red = np.where(m, f32(red + ch), red)
                ch = np.where(m, 0.0, ch)
        ch = f32(P[:, k][None, :] + ch)
    return f32(red + ch)

def bits(x):
    return x.astype(np.float32).view(np.uint32)

def want_codes(want, o, M, N, rows, cols):
    return want[o].reshape(M, N)[rows, cols]

def pick(M, N, n, seed=0):
    rng = np.random.default_rng(seed)
    idx = rng.choice(M * N, size=min(n, M * N), replace=False)
    return idx // N, idx % N
