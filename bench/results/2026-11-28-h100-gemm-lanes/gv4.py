from orders import *
import sys
which, t = sys.argv[1], sys.argv[2]
meta, ents = load(which, t)
seed = meta['info']['seed']
for e, w in ents:
    o = meta['outs'][-1] if t in ('bf16','fp16') else 'fp32'
    ks = e['kernels'][o]
    if 'gemvx' not in ks[0] or ', 6, false' in ks[0]: continue
    M,N,K = e['M'],e['N'],e['K']
    if K < 400: continue
    a, b = inputs(t, seed, e['i'], M, N, K)
    r, c = pick(M, N, 16)
    P = prods(t, a, b, r, c)
    wc = want_codes(w, o, M, N, r, c)
    good = []
    if len(ks) == 1:
        for v in range(1, -(-K//32) + 1):
            x = strided(P, 32, v, 'half')
            if (bits(x) == wc).all(): good.append(v)
    else:
        # split parts of p; each part strided 32 v=1 (or contiguous), sequential reduce
        for S in range(2, 65):
            for p in sorted(set([-(-K // S), -(-K//S + 3)//4*4, -(-K//S + 7)//8*8, -(-K//S+31)//32*32])):
                for v in ('1', 'c'):
                    outs = []
                    for s in range(0, K, p):
                        Q = P[:, s:s+p]
                        outs.append(strided(Q, 32, 1 if v == '1' else -(-Q.shape[1]//32), 'half'))
                    x = comb_seq(np.array(outs))
                    if (bits(x) == wc).all(): good.append((S, p, v))
    print(M, N, K, len(ks), good[:12], flush=True)
