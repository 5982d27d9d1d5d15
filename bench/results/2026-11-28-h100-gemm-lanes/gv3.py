from orders import *
import sys
which, t, key = sys.argv[1], sys.argv[2], sys.argv[3]
meta, ents = load(which, t)
seed = meta['info']['seed']
res = []
for e, w in ents:
    o = meta['outs'][-1] if t in ('bf16','fp16') else 'fp32'
    ks = e['kernels'][o]
    if key not in ks[0]: continue
    M,N,K = e['M'],e['N'],e['K']
    a, b = inputs(t, seed, e['i'], M, N, K)
    r, c = pick(M, N, 16)
    P = prods(t, a, b, r, c)
    wc = want_codes(w, o, M, N, r, c)
    good = []
    for T in (2, 4, 8, 16, 32, 64, 128):
        vs = sorted(set([1, 2, 4, 8, -(-K // T)]))
        for v in vs:
            if v > -(-K // T): continue
            for cb in ('half', 'adj', 'seq'):
                x = strided(P, T, v, cb)
                if (bits(x) == wc).all(): good.append((T, v, cb))
    flag = re.search(r'float, float, float, float, (\w+), (\w+), (\w+), (\w+), (\d+)', ks[0]).groups()
    print(M, N, K, flag, len(ks), good[:12], flush=True)
