from proto import *
import sys
which, t = sys.argv[1], sys.argv[2]
meta, ents = load(which, t)
seed = meta['info']['seed']
res = []
for e, w in ents:
    ks = e['kernels']['fp32']
    if not ('simt_sgemm' in ks[0] or 'xmma' in ks[0] or 's1688' in ks[0]): continue
    M,N,K = e['M'],e['N'],e['K']
    a, b = inputs(t, seed, e['i'], M, N, K)
    r, c = pick(M, N, 16)
    P = prods(t, a, b, r, c)
    wc = want_codes(w, 'fp32', M, N, r, c)
    Ps = [p for p in range(1, K + 1) if K <= 2048 or p % 4 == 0 or p == K]
    out = bits(chunk_scan(P, Ps))
    ok = [Ps[j] for j in range(len(Ps)) if (out[j] == wc).all()]
    res.append(dict(i=e['i'], M=M, N=N, K=K, kernels=ks, ok=ok[:50]))
    print(M, N, K, ks[0][:70], len(ks), ok[:8], flush=True)
json.dump(res, open('survey_%s_%s.json' % (which, t), 'w'))
