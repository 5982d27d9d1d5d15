"""Candidate accumulation orders for one dot product of K products, evaluated in numpy
(float64 holds every fp32 a*b+c exactly for these inputs: values are multiples of 2^-30 below 2^22)."""
from proto import *

def lanes_chain(P, lane_of_k, L):
    """per-lane fp32 FMA chains in k order; returns (L, n_out) (lanes without k are +0)."""
    K = P.shape[1]
    acc = np.zeros((L, P.shape[0]))
    for k in range(K):
        l = lane_of_k[k]
        acc[l] = f32(P[:, k] + acc[l])
    return acc

def pad2(acc):
    L = acc.shape[0]
    L2 = 1 << (L - 1).bit_length()
    if L2 != L:
        acc = np.concatenate([acc, np.zeros((L2 - L,) + acc.shape[1:])])
    return acc

def comb_halving(acc):
    """shared-memory / xor-butterfly tree: lane i += lane i + L/2, then L/4, ... (L power of 2)"""
    acc = pad2(acc)
    L = acc.shape[0]
    while L > 1:
        h = L // 2
        acc = f32(acc[:h] + acc[h:2*h])
        L = h
    return acc[0]

def comb_adjacent(acc):
    """pairs (2i, 2i+1) first (shfl_down offsets 1, 2, 4, ...)"""
    acc = pad2(acc)
    L = acc.shape[0]
    while L > 1:
        acc = f32(acc[0::2] + acc[1::2])
        L = acc.shape[0]
    return acc[0]

def comb_seq(acc):
    s = acc[0]
    for l in range(1, acc.shape[0]):
        s = f32(s + acc[l])
    return s

COMB = {'half': comb_halving, 'adj': comb_adjacent, 'seq': comb_seq}

def strided(P, T, v, comb):
    K = P.shape[1]
    lane = (np.arange(K) // v) % T
    return COMB[comb](lanes_chain(P, lane, T))

def contiguous(P, T, comb):
    K = P.shape[1]
    per = -(-K // T)
    lane = np.arange(K) // per
    return COMB[comb](lanes_chain(P, lane, T))

def twolevel(P, p, T, v, c1, c2):
    """K cut into parts of p consecutive k; in each part T lanes strided by v (lane (j//v)%T of
    the part's j-th k) chained, lanes combined by c1; parts combined by c2."""
    K = P.shape[1]
    S = -(-K // p)
    outs = []
    for s in range(S):
        Q = P[:, s*p:(s+1)*p]
        outs.append(strided(Q, T, v, c1) if T > 1 else lanes_chain(Q, np.zeros(Q.shape[1], int), 1)[0])
    return COMB[c2](np.array(outs)) if S > 1 else outs[0]

def dotgrid(P, G, B, v, cb_in, cb_out, vec_first=False):
    """G blocks of B threads; global thread g chains k with (k//v) % (G*B) == g; each block's
    lanes combined by cb_in; block partials combined by cb_out."""
    K = P.shape[1]
    lane = (np.arange(K) // v) % (G * B)
    acc = lanes_chain(P, lane, G * B)
    parts = np.array([COMB[cb_in](acc[g*B:(g+1)*B]) for g in range(G)])
    return COMB[cb_out](parts)

def strided_chains(P, T, v):
    """(T, n_out): lane t chains k with (k // v) % T == t, in k order (fast path)."""
    n, K = P.shape
    R = -(-K // (T * v))
    Q = np.zeros((n, R * T * v))
    Q[:, :K] = P
    Q = Q.reshape(n, R, T, v)
    acc = np.zeros((n, T))
    for r in range(R):
        for u in range(v):
            idx = r * T * v + np.arange(T) * v + u
            live = idx < K
            acc = np.where(live[None, :], f32(Q[:, r, :, u] + acc), acc)
    return acc.T

def strided(P, T, v, comb):
    return COMB[comb](strided_chains(P, T, v))

def dotgrid(P, G, B, v, cb_in, cb_out):
    acc = strided_chains(P, G * B, v)
    parts = np.array([COMB[cb_in](acc[g*B:(g+1)*B]) for g in range(G)])
    return COMB[cb_out](parts)
