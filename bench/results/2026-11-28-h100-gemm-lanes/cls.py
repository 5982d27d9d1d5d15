"""Narrow candidates per family, on all outputs (or up to 256) of each shape."""
from orders import *
import sys
which, t, key, nout = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
meta, ents = load(which, t)
seed = meta['info']['seed']
for e, w in ents:
    o = 'fp32'
    ks = e['kernels'][o]
    if key not in ks[0]: continue
    M,N,K = e['M'],e['N'],e['K']
    a, b = inputs(t, seed, e['i'], M, N, K)
    r, c = pick(M, N, nout)
    P = prods('fp32' if t == 'tf32' else t, a, b, r, c)
    wc = want_codes(w, o, M, N, r, c)
    good = []
    for T in (2, 4, 8, 16, 32, 64, 128):
        for v in sorted(set([1, -(-K // T)])):
            for cb in ('half', 'seq'):
                x = strided(P, T, v, cb)
                if (bits(x) == wc).all(): good.append((T, 'auto' if v == -(-K//T) and v > 1 else v, cb))
    tp = re.search(r'<(.*?), cublas', ks[0]).group(1)[-60:]
    print(M, N, K, tp, len(ks), len(r), good[:6], flush=True)
