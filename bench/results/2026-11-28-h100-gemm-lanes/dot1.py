from orders import *
import sys
which, t = sys.argv[1], sys.argv[2]
meta, ents = load(which, t)
seed = meta['info']['seed']
for e, w in ents:
    o = meta['outs'][-1] if t in ('bf16','fp16') else 'fp32'
    ks = e['kernels'][o]
    if 'dot_kernel' not in ks[0]: continue
    M,N,K = e['M'],e['N'],e['K']
    a, b = inputs(t, seed, e['i'], M, N, K)
    r, c = pick(M, N, 16)
    P = prods(t, a, b, r, c)
    wc = want_codes(w, o, M, N, r, c)
    good = []
    for G in range(1, 129):
        if (G-1)*128 >= K and G > 1: break
        for v in (1, 2, 4):
            for ci in ('half', 'adj'):
                for co in ('half', 'seq', 'adj'):
                    x = dotgrid(P, G, 128, v, ci, co)
                    if (bits(x) == wc).all(): good.append((G, v, ci, co))
    print(M, N, K, ks[0][:60], good[:8], len(good), flush=True)
