// demhpc GPU step: the kernels (issue 34; docs/ARCHITECTURE.md "GPU step"). Each kernel is
// the body of one thread; DEM_KERNEL makes it a CUDA kernel (NVRTC) or a host loop over the
// thread indices (src/gpu/host.cpp). No kernel uses shared memory or block synchronisation,
// so the host loop runs exactly the device's arithmetic. Every result is independent of the
// thread schedule: atomics only count (cells, exports, flags), and whatever they order is
// sorted afterwards (the particles of a cell by gid) or read as a set (exports).
#include "dem.h"

#ifdef DEM_GPU
#define DEM_KERNEL_ATTR(name, attr)                                                        \
    __device__ __forceinline__ void name##_body(const DemParams& p, uint32_t tid);         \
    extern "C" __global__ attr void name(const __grid_constant__ DemParams p,              \
                                         uint32_t count) {                                 \
        uint32_t tid = blockIdx.x * blockDim.x + threadIdx.x;                              \
        if (tid < count) name##_body(p, tid);                                              \
    }                                                                                      \
    __device__ __forceinline__ void name##_body(const DemParams& p, uint32_t tid)
#else
#define DEM_KERNEL_ATTR(name, attr)                                        \
    static void name##_body(const DemParams& p, uint32_t tid);             \
    extern "C" void dem_host_##name(const DemParams* p, uint32_t count) {  \
        for (uint32_t tid = 0; tid < count; ++tid) name##_body(*p, tid);   \
    }                                                                      \
    static void name##_body(const DemParams& p, uint32_t tid)
#endif
#define DEM_KERNEL(name) DEM_KERNEL_ATTR(name, )

// The step kernel's launch bounds (NVRTC -DDEM_STEP_MIN_BLOCKS=k: at least k blocks of
// DEM_STEP_THREADS per multiprocessor, which caps its registers); none by default.
#if defined(DEM_GPU) && defined(DEM_STEP_MIN_BLOCKS)
#ifndef DEM_STEP_THREADS
#define DEM_STEP_THREADS 128
#endif
#define DEM_STEP_BOUNDS __launch_bounds__(DEM_STEP_THREADS, DEM_STEP_MIN_BLOCKS)
#else
#define DEM_STEP_BOUNDS
#endif

DEM_FN void fail(const DemParams& p, uint32_t bit, uint32_t i) {
    dem_atomic_or(&p.flags[DEM_F_ERROR], bit);
    dem_atomic_min(&p.flags[DEM_F_BAD], i);
}

// The cell of position x: its three indices, clamped into the grid.
DEM_FN void cell_coords(const DemParams& p, V3 x, int32_t c[3]) {
    double xa[3] = {x.x, x.y, x.z};
    for (int a = 0; a < 3; ++a) {
        double f = floor((xa[a] - p.cell_lo[a]) * p.cell_inv[a]);
        int32_t k = f < 0.0 ? 0 : (int32_t)fmin0(f, (double)(p.dims[a] - 1));
        c[a] = k;
    }
}

// ---------------------------------------------------------------------------------------
// Rebuild (ARCHITECTURE.md "GPU step"): prep -> scan of the cell counts -> scatter -> sort
// each cell by gid -> gather into cell order -> neighbour lists -> carry the histories.

// Blow-up checks (sim.rs local_failure, Domain::find_escaped), periodic wrap (Domain::wrap_one),
// the particle's cell, counted.
DEM_KERNEL(k_prep) {
    uint32_t i = tid;
    D4 x4 = p.pos_in[i];
    D4 v4 = p.vel_in[i];
    p.cell_of[i] = 0;
    if (!(dem_finite(x4.x) && dem_finite(x4.y) && dem_finite(x4.z) && dem_finite(v4.x) && dem_finite(v4.y) &&
          dem_finite(v4.z))) {
        fail(p, DEM_E_NONFINITE, i);
        return;
    }
    D4 r4 = p.ref[i];
    if (norm2(sub(xyz(x4), xyz(r4))) > p.halo2) fail(p, DEM_E_MOVED, i);
    double x[3] = {x4.x, x4.y, x4.z};
    int32_t* wrap = p.wrap_in + 4 * (size_t)i;
    for (int a = 0; a < 3; ++a) {
        if (p.periodic[a]) {
            while (x[a] >= p.hi[a]) {
                x[a] -= p.len[a];
                wrap[a] += 1;
            }
            while (x[a] < p.lo[a]) {
                x[a] += p.len[a];
                wrap[a] -= 1;
            }
        } else if (x[a] < p.lo[a] || x[a] > p.hi[a]) {
            fail(p, DEM_E_ESCAPED, i);
        }
    }
    x4.x = x[0];
    x4.y = x[1];
    x4.z = x[2];
    p.pos_in[i] = x4;
    int32_t c[3];
    cell_coords(p, v3(x[0], x[1], x[2]), c);
    uint32_t cell = (uint32_t)c[0] + p.dims[0] * ((uint32_t)c[1] + p.dims[1] * (uint32_t)c[2]);
    p.cell_of[i] = cell;
    dem_atomic_add(&p.cell_count[cell], 1u);
}

// Exclusive prefix sums of scan_data in chunks of scan_chunk (one thread per chunk), the
// chunk totals to scan_sums; the host scans those and adds them back (k_scan_add).
DEM_KERNEL(k_scan_local) {
    uint32_t base = tid * p.scan_chunk;
    uint32_t end = base + p.scan_chunk < p.scan_n ? base + p.scan_chunk : p.scan_n;
    uint32_t sum = 0;
    for (uint32_t e = base; e < end; ++e) {
        uint32_t v = p.scan_data[e];
        p.scan_data[e] = sum;
        sum += v;
    }
    p.scan_sums[tid] = sum;
}

DEM_KERNEL(k_scan_add) { p.scan_data[tid] += p.scan_sums[tid / p.scan_chunk]; }

// Each particle into its cell's range (cell_count reset to 0 is the fill cursor).
DEM_KERNEL(k_scatter) {
    uint32_t c = p.cell_of[tid];
    uint32_t slot = dem_atomic_add(&p.cell_count[c], 1u);
    p.order[p.cell_start[c] + slot] = tid;
}

// The particles of cell tid in gid order (insertion sort: a cell holds a few particles), so
// that the order of the atomics above leaves no trace.
DEM_KERNEL(k_sort_cells) {
    uint32_t s = p.cell_start[tid], e = p.cell_start[tid + 1];
    for (uint32_t k = s + 1; k < e; ++k) {
        uint32_t o = p.order[k];
        uint64_t g = p.gid_in[o];
        uint32_t m = k;
        while (m > s && p.gid_in[p.order[m - 1]] > g) {
            p.order[m] = p.order[m - 1];
            --m;
        }
        p.order[m] = o;
    }
}

// Particle tid of the new order from its old index: every per-particle array, the wall
// histories; the reference positions of the Verlet trigger.
DEM_KERNEL(k_gather) {
    uint32_t i = tid, o = p.order[i];
    p.inv[o] = i;
    D4 x = p.pos_in[o];
    p.pos_out[i] = x;
    p.ref[i] = x;
    p.vel_out[i] = p.vel_in[o];
    p.ang_out[i] = p.ang_in[o];
    p.ori_out[i] = p.ori_in[o];
    p.gid_out[i] = p.gid_in[o];
    p.info_out[i] = p.info_in[o];
    p.tag_out[i] = p.tag_in[o];
    for (int a = 0; a < 4; ++a) p.wrap_out[4 * (size_t)i + a] = p.wrap_in[4 * (size_t)o + a];
    size_t wn = (size_t)p.n_walls * p.n;
    for (uint32_t w = 0; w < p.n_walls; ++w) {
        size_t s = (size_t)w * p.n;
        p.wact_out[s + i] = p.wact_in[s + o];
        for (int c = 0; c < 6; ++c) p.whist_out[c * wn + s + i] = p.whist_in[c * wn + s + o];
    }
}

// Neighbour list of particle tid (particles in cell order, positions wrapped): every particle
// of the 27 cells around whose gap is below the skin, with the image code of the copy met
// (periodic axes) and whether tid is particle 1 (lower gid). Both particles of a pair list it
// (the same branch vector, negated: the same test).
DEM_KERNEL(k_build) {
    uint32_t i = tid;
    D4 x4 = p.pos_in[i];
    V3 x = xyz(x4);
    uint64_t gi = p.gid_in[i];
    int32_t c[3];
    cell_coords(p, x, c);
    uint32_t count = 0;
    for (int dz = -1; dz <= 1; ++dz)
        for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
                int32_t d[3] = {dx, dy, dz}, cc[3], img[3];
                bool skip = false;
                for (int a = 0; a < 3; ++a) {
                    int32_t k = c[a] + d[a], dim = (int32_t)p.dims[a];
                    img[a] = 0;
                    if (k < 0 || k >= dim) {
                        if (!p.periodic[a]) {
                            skip = true;
                        } else if (k < 0) {
                            k += dim;
                            img[a] = -1;
                        } else {
                            k -= dim;
                            img[a] = 1;
                        }
                    }
                    cc[a] = k;
                }
                if (skip) continue;
                uint32_t code = (uint32_t)((img[0] + 1) + 3 * (img[1] + 1) + 9 * (img[2] + 1));
                uint32_t cell =
                    (uint32_t)cc[0] + p.dims[0] * ((uint32_t)cc[1] + p.dims[1] * (uint32_t)cc[2]);
                V3 s = v3(p.shift[code][0], p.shift[code][1], p.shift[code][2]);
                for (uint32_t j = p.cell_start[cell]; j < p.cell_start[cell + 1]; ++j) {
                    if (j == i) continue;
                    D4 y4 = p.pos_in[j];
                    V3 l = sub(xyz(y4), x);
                    if (code != DEM_CENTRE) l = add(l, s);
                    double reach = x4.w + y4.w + p.skin;
                    if (norm2(l) >= reach * reach) continue;
                    if (count < p.cap_out) {
                        size_t slot = (size_t)count * p.n + i;
                        p.nbr_out[slot] = j;
                        uint32_t p1 = gi < p.gid_in[j] ? DEM_P1 : 0u;
                        p.meta_out[slot] = (uint8_t)((code << DEM_CODE_SHIFT) | p1);
                    }
                    ++count;
                }
            }
    p.nn_out[i] = count < p.cap_out ? count : p.cap_out;
    if (count > p.cap_out) dem_atomic_max(&p.flags[DEM_F_MAXNBR], count);
}

// The contacts of particle tid's old list find their slot in the new one (partner by its new
// index) and bring their history; one not found any more is counted (it was more than the
// skin apart: the history of a pair that separated).
DEM_KERNEL(k_carry) {
    uint32_t i = tid, o = p.order[i];
    uint32_t n_old = p.nn_in[o], n_new = p.nn_out[i];
    size_t old_stride = (size_t)p.cap_in * p.n, new_stride = (size_t)p.cap_out * p.n;
    int comps = p.store_phys ? 10 : 6;
    for (uint32_t k = 0; k < n_old; ++k) {
        size_t so = (size_t)k * p.n + o;
        if (!(p.meta_in[so] & DEM_ACTIVE)) continue;
        uint32_t nj = p.inv[p.nbr_in[so]];
        bool found = false;
        for (uint32_t m = 0; m < n_new; ++m) {
            size_t sn = (size_t)m * p.n + i;
            if (p.nbr_out[sn] != nj) continue;
            p.meta_out[sn] |= (uint8_t)DEM_ACTIVE;
            for (int c = 0; c < comps; ++c)
                p.hist_out[c * new_stride + sn] = p.hist_in[c * old_stride + so];
            found = true;
            break;
        }
        if (!found) dem_atomic_add(&p.flags[DEM_F_LOST], 1u);
    }
}

// ---------------------------------------------------------------------------------------
// The step: contacts (walls in wall order, then the neighbour list) and the leapfrog of
// particle tid in one pass. Positions and velocities are read from _in (time t, t - dt/2)
// and written to _out, so no thread sees another's update; each pair is computed by both of
// its particles, in the orientation of the CPU path (particle 1 = lower gid), so the two
// copies of its history stay identical and the forces are exactly opposite.
DEM_KERNEL_ATTR(k_step, DEM_STEP_BOUNDS) {
    uint32_t i = tid, n = p.n;
    D4 x4 = p.pos_in[i], v4 = p.vel_in[i], w4 = p.ang_in[i];
    V3 xi = xyz(x4), vi = xyz(v4), wi = xyz(w4);
    double ri = x4.w, mi = v4.w, ii = w4.w;
    uint32_t info = p.info_in[i];
    uint32_t mat = info & 0xffffu, blocked = info >> 16;
    double sum_fc = 0.0, n_c = 0.0;
    // plane walls (contact/mod.rs wall_pair, wall_contact): the wall is particle 1
    V3 fw = zero3(), tw = zero3();
    size_t wn = (size_t)p.n_walls * n;
    for (uint32_t w = 0; w < p.n_walls; ++w) {
        const DemWall& W = p.walls[w];
        V3 wnorm = v3(W.n[0], W.n[1], W.n[2]);
        size_t s = (size_t)w * n + i;
        double u_n = dot(sub(xi, v3(W.p[0], W.p[1], W.p[2])), wnorm) - ri;
        bool act = p.wact_in[s] != 0;
        if (u_n > 0.0) {
            if (act) p.wact_in[s] = 0;
            continue;
        }
        V3 hist = zero3(), n_old = wnorm;
        if (act) {
            hist = v3(p.whist_in[s], p.whist_in[wn + s], p.whist_in[2 * wn + s]);
            n_old = v3(p.whist_in[3 * wn + s], p.whist_in[4 * wn + s], p.whist_in[5 * wn + s]);
        } else {
            p.wact_in[s] = 1;
        }
        Phys ph = wall_phys(p, W.mat, mat, ri, mi);
        V3 v12 = relative_velocity(v3(W.v[0], W.v[1], W.v[2]), zero3(), 0.0, vi, wi, ri, wnorm);
        double twist = dot(wnorm, add(zero3(), wi));
        LawOut o = law_step(p, ph, hist, n_old, wnorm, u_n, v12, twist, ri);
        p.whist_in[s] = o.hist.x;
        p.whist_in[wn + s] = o.hist.y;
        p.whist_in[2 * wn + s] = o.hist.z;
        p.whist_in[3 * wn + s] = wnorm.x;
        p.whist_in[4 * wn + s] = wnorm.y;
        p.whist_in[5 * wn + s] = wnorm.z;
        fw = add(fw, neg(o.f));
        tw = add(tw, mul(cross(wnorm, o.f), ri));
        if (p.record) {
            p.wrec[s] = o.f.x;
            p.wrec[wn + s] = o.f.y;
            p.wrec[2 * wn + s] = o.f.z;
            sum_fc += sqrt(norm2(o.f));
            n_c += 1.0;
        }
    }
    // sphere pairs (contact/batch.rs kernel, start_contact, scatter)
    V3 fp = zero3(), tp = zero3();
    uint32_t nn = p.nn_in[i];
    size_t hs = (size_t)p.cap_in * n;
    // the next candidate's index, metadata and position are loaded while this one is
    // computed (the loop is latency-bound: two dependent loads per candidate)
    uint32_t j_next = 0, meta_next = 0;
    D4 y_next = x4;
    if (nn > 0) {
        j_next = ldg32(&p.nbr_in[i]);
        meta_next = p.meta_in[i];
        y_next = ldg4(&p.pos_in[j_next]);
    }
    for (uint32_t k = 0; k < nn; ++k) {
        size_t s = (size_t)k * n + i;
        uint32_t j = j_next;
        uint32_t meta = meta_next;
        D4 y4 = y_next;
        if (k + 1 < nn) {
            j_next = ldg32(&p.nbr_in[s + n]);
            meta_next = p.meta_in[s + n];
            y_next = ldg4(&p.pos_in[j_next]);
        }
        uint32_t code = meta >> DEM_CODE_SHIFT;
        V3 l = sub(xyz(y4), xi);
        if (code != DEM_CENTRE) l = add(l, v3(p.shift[code][0], p.shift[code][1], p.shift[code][2]));
        double d2 = norm2(l);
        double rj = y4.w;
        double reach = ri + rj;
        bool act = (meta & DEM_ACTIVE) != 0;
        if (!act && !(d2 < reach * reach)) continue;
        bool first = (meta & DEM_P1) != 0;
        D4 vj4 = ldg4(&p.vel_in[j]), wj4 = ldg4(&p.ang_in[j]);
        uint32_t matj = ldg32(&p.info_in[j]) & 0xffffu;
        // particle 1 and 2 as the CPU path orders them
        V3 lc = first ? l : neg(l);
        double r1 = first ? ri : rj, r2 = first ? rj : ri;
        double m1 = first ? mi : vj4.w, m2 = first ? vj4.w : mi;
        V3 v1 = first ? vi : xyz(vj4), v2 = first ? xyz(vj4) : vi;
        V3 w1 = first ? wi : xyz(wj4), w2 = first ? xyz(wj4) : wi;
        uint32_t mat1 = first ? mat : matj, mat2 = first ? matj : mat;
        V3 hist = zero3(), n_old = zero3();
        if (act) {
            hist = v3(p.hist_in[s], p.hist_in[hs + s], p.hist_in[2 * hs + s]);
            n_old = v3(p.hist_in[3 * hs + s], p.hist_in[4 * hs + s], p.hist_in[5 * hs + s]);
        }
        double d = sqrt(d2);
        V3 nrm = divs(lc, d);
        double u_n = d - (r1 + r2);
        V3 v12 = relative_velocity(v1, w1, r1, v2, w2, r2, nrm);
        double twist = dot(nrm, add(w1, w2));
        // the pair constants: mixed at the contact's start (batch.rs start_contact), kept in
        // the history with store_phys, else mixed again (the same bits)
        Phys ph;
        if (p.store_phys && act) {
            ph.kn = p.hist_in[6 * hs + s];
            ph.ks = p.hist_in[7 * hs + s];
            ph.tan_phi = p.hist_in[8 * hs + s];
            ph.cn = p.hist_in[9 * hs + s];
        } else {
            ph = mix_phys(p, mat1, mat2, r1, r2, m1 * m2 / (m1 + m2));
            if (p.store_phys) {
                p.hist_in[6 * hs + s] = ph.kn;
                p.hist_in[7 * hs + s] = ph.ks;
                p.hist_in[8 * hs + s] = ph.tan_phi;
                p.hist_in[9 * hs + s] = ph.cn;
            }
        }
        double r_eff = r1 * r2 / (r1 + r2);
        LawOut o = law_step(p, ph, hist, n_old, nrm, u_n, v12, twist, r_eff);
        if (u_n > 0.0) {
            // apart: the contact ends (digest A6), nothing acts
            if (act) p.meta_in[s] = (uint8_t)(meta & ~DEM_ACTIVE);
            continue;
        }
        if (!act) p.meta_in[s] = (uint8_t)(meta | DEM_ACTIVE);
        p.hist_in[s] = o.hist.x;
        p.hist_in[hs + s] = o.hist.y;
        p.hist_in[2 * hs + s] = o.hist.z;
        p.hist_in[3 * hs + s] = nrm.x;
        p.hist_in[4 * hs + s] = nrm.y;
        p.hist_in[5 * hs + s] = nrm.z;
        // torques T1 = d1 n x F, T2 = d2 n x F (digest A6, erratum A13 row 5)
        V3 nxf = cross(nrm, o.f);
        if (first) {
            fp = add(fp, o.f);
            tp = add(tp, mul(nxf, r1));
            if (p.record) {
                sum_fc += sqrt(norm2(o.f));
                n_c += 1.0;
            }
        } else {
            fp = add(fp, neg(o.f));
            tp = add(tp, mul(nxf, r2));
        }
    }
    // the force gather (forces.rs take_block: walls, then the pairs) and gravity
    V3 f = add(fw, fp), t = add(tw, tp);
    V3 g = v3(p.g[0], p.g[1], p.g[2]);
    V3 gu = v3(-0.0, -0.0, -0.0);
    V3 f_total;
    if (p.damp_gravity) {
        f = add(f, mul(g, mi));
        f_total = f;
    } else {
        gu = g;
        f_total = add(f, mul(g, mi));
    }
    if (p.record) {
        D4 rf, rt;
        rf.x = f_total.x;
        rf.y = f_total.y;
        rf.z = f_total.z;
        rf.w = 0.0;
        rt.x = t.x;
        rt.y = t.y;
        rt.z = t.z;
        rt.w = 0.0;
        p.rec_f[i] = rf;
        p.rec_t[i] = rt;
        p.rec_c[2 * (size_t)i] = sum_fc;
        p.rec_c[2 * (size_t)i + 1] = n_c;
    }
    D4 q = p.ori_in[i];
    leapfrog(&xi, &vi, &wi, &q, f, t, mi, ii, blocked, p.dt, p.lambda, gu);
    p.ori_in[i] = q;
    x4.x = xi.x;
    x4.y = xi.y;
    x4.z = xi.z;
    v4.x = vi.x;
    v4.y = vi.y;
    v4.z = vi.z;
    w4.x = wi.x;
    w4.y = wi.y;
    w4.z = wi.z;
    p.pos_out[i] = x4;
    p.vel_out[i] = v4;
    p.ang_out[i] = w4;
    // Verlet trigger: a pair's gap shrinks by at most twice the largest displacement
    // (thesis eq. 2.10-2.12); NaN counts as a move (the rebuild's k_prep reports it)
    if (!(norm2(sub(xi, xyz(p.ref[i]))) <= p.lim2)) dem_atomic_or(&p.flags[DEM_F_REBUILD], 1u);
}

// ---------------------------------------------------------------------------------------
// Series statistics (sim.rs Simulation::stats) over a chunk of stats_chunk particles per
// thread, in particle order: [ke_t, ke_r, sum |F| over free particles, their count,
// sum |F_c|, contacts, largest overlap / smaller radius, particles, then the force on each
// wall]. Positions and velocities are the current ones (_in after the step's swap).
DEM_KERNEL(k_stats) {
    uint32_t n = p.n, base = tid * p.stats_chunk;
    uint32_t end = base + p.stats_chunk < n ? base + p.stats_chunk : n;
    double ke_t = 0.0, ke_r = 0.0, f_free = 0.0, n_free = 0.0, f_c = 0.0, n_c = 0.0, ov = 0.0;
    double* out = p.stats_out + (size_t)tid * (DEM_STATS_FIXED + 3 * p.n_walls);
    for (uint32_t w = 0; w < 3 * p.n_walls; ++w) out[DEM_STATS_FIXED + w] = 0.0;
    size_t hs = (size_t)p.cap_in * n, wn = (size_t)p.n_walls * n;
    for (uint32_t i = base; i < end; ++i) {
        D4 x4 = p.pos_in[i], v4 = p.vel_in[i], w4 = p.ang_in[i];
        ke_t += 0.5 * v4.w * norm2(xyz(v4));
        ke_r += 0.5 * w4.w * norm2(xyz(w4));
        if ((p.info_in[i] >> 16) != DEM_BLOCK_ALL) {
            f_free += sqrt(norm2(xyz(p.rec_f[i])));
            n_free += 1.0;
        }
        f_c += p.rec_c[2 * (size_t)i];
        n_c += p.rec_c[2 * (size_t)i + 1];
        for (uint32_t k = 0; k < p.nn_in[i]; ++k) {
            size_t s = (size_t)k * n + i;
            uint32_t meta = p.meta_in[s];
            if ((meta & (DEM_ACTIVE | DEM_P1)) != (DEM_ACTIVE | DEM_P1)) continue;
            D4 y4 = p.pos_in[p.nbr_in[s]];
            uint32_t code = meta >> DEM_CODE_SHIFT;
            V3 l = sub(xyz(y4), xyz(x4));
            if (code != DEM_CENTRE)
                l = add(l, v3(p.shift[code][0], p.shift[code][1], p.shift[code][2]));
            double o = x4.w + y4.w - sqrt(norm2(l));
            ov = fmax0(ov, o / fmin0(x4.w, y4.w));
        }
        for (uint32_t w = 0; w < p.n_walls; ++w) {
            size_t s = (size_t)w * n + i;
            if (!p.wact_in[s]) continue;
            const DemWall& W = p.walls[w];
            V3 wnorm = v3(W.n[0], W.n[1], W.n[2]);
            double gap = dot(sub(xyz(x4), v3(W.p[0], W.p[1], W.p[2])), wnorm) - x4.w;
            ov = fmax0(ov, -gap / x4.w);
            for (int a = 0; a < 3; ++a) out[DEM_STATS_FIXED + 3 * w + a] += p.wrec[a * wn + s];
        }
        (void)hs;
    }
    out[0] = ke_t;
    out[1] = ke_r;
    out[2] = f_free;
    out[3] = n_free;
    out[4] = f_c;
    out[5] = n_c;
    out[6] = ov;
    out[7] = (double)(end > base ? end - base : 0);
}

// ---------------------------------------------------------------------------------------
// Contacts to and from the host (checkpoints, snapshots, a CPU state taken over): each
// sphere contact once, by its particle 1, as (gid1, gid2) and 10 numbers: the shear history,
// the normal of the last step and the pair constants (contact/store.rs FrictState).

DEM_FN void export_state(double* dst, V3 hist, V3 n_old, Phys ph) {
    dst[0] = hist.x;
    dst[1] = hist.y;
    dst[2] = hist.z;
    dst[3] = n_old.x;
    dst[4] = n_old.y;
    dst[5] = n_old.z;
    dst[6] = ph.kn;
    dst[7] = ph.ks;
    dst[8] = ph.tan_phi;
    dst[9] = ph.cn;
}

// count (flags[COUNT], flags[COUNT + 2]) or write (xkey, xstate; xwkey, xwstate) the contacts
DEM_FN void export_contacts(const DemParams& p, uint32_t i, bool write) {
    uint32_t n = p.n;
    size_t hs = (size_t)p.cap_in * n, wn = (size_t)p.n_walls * n;
    D4 x4 = p.pos_in[i], v4 = p.vel_in[i];
    uint32_t mat = p.info_in[i] & 0xffffu;
    for (uint32_t k = 0; k < p.nn_in[i]; ++k) {
        size_t s = (size_t)k * n + i;
        uint32_t meta = p.meta_in[s];
        if ((meta & (DEM_ACTIVE | DEM_P1)) != (DEM_ACTIVE | DEM_P1)) continue;
        uint32_t idx = dem_atomic_add(&p.flags[DEM_F_COUNT], 1u);
        if (!write) continue;
        uint32_t j = p.nbr_in[s];
        D4 y4 = p.pos_in[j], u4 = p.vel_in[j];
        p.xkey_a[idx] = p.gid_in[i];
        p.xkey_b[idx] = p.gid_in[j];
        V3 hist = v3(p.hist_in[s], p.hist_in[hs + s], p.hist_in[2 * hs + s]);
        V3 n_old = v3(p.hist_in[3 * hs + s], p.hist_in[4 * hs + s], p.hist_in[5 * hs + s]);
        Phys ph = mix_phys(p, mat, p.info_in[j] & 0xffffu, x4.w, y4.w,
                           v4.w * u4.w / (v4.w + u4.w));
        export_state(p.xstate + 10 * (size_t)idx, hist, n_old, ph);
    }
    for (uint32_t w = 0; w < p.n_walls; ++w) {
        size_t s = (size_t)w * n + i;
        if (!p.wact_in[s]) continue;
        uint32_t idx = dem_atomic_add(&p.flags[DEM_F_COUNT + 2], 1u);
        if (!write) continue;
        p.xwkey_a[idx] = p.gid_in[i];
        p.xwkey_b[idx] = w;
        V3 hist = v3(p.whist_in[s], p.whist_in[wn + s], p.whist_in[2 * wn + s]);
        V3 n_old = v3(p.whist_in[3 * wn + s], p.whist_in[4 * wn + s], p.whist_in[5 * wn + s]);
        Phys ph = wall_phys(p, p.walls[w].mat, mat, x4.w, v4.w);
        export_state(p.xwstate + 10 * (size_t)idx, hist, n_old, ph);
    }
}

DEM_KERNEL(k_export_count) { export_contacts(p, tid, false); }
DEM_KERNEL(k_export) { export_contacts(p, tid, true); }

// index of key (a, b) in the sorted keys ka, kb of length n, or n
DEM_FN uint32_t find_key(const uint64_t* ka, const uint64_t* kb, uint32_t n, uint64_t a,
                         uint64_t b) {
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        bool less = ka[mid] < a || (ka[mid] == a && kb[mid] < b);
        if (less)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ka[lo] == a && kb[lo] == b ? lo : n;
}

// The host's contacts (sorted keys) into particle tid's slots, both copies of each pair.
DEM_KERNEL(k_import) {
    uint32_t i = tid, n = p.n;
    size_t hs = (size_t)p.cap_in * n, wn = (size_t)p.n_walls * n;
    uint64_t gi = p.gid_in[i];
    for (uint32_t k = 0; k < p.nn_in[i]; ++k) {
        size_t s = (size_t)k * n + i;
        uint64_t gj = p.gid_in[p.nbr_in[s]];
        uint64_t a = gi < gj ? gi : gj, b = gi < gj ? gj : gi;
        uint32_t at = find_key(p.xkey_a, p.xkey_b, p.n_keys, a, b);
        if (at == p.n_keys) continue;
        const double* st = p.xstate + 10 * (size_t)at;
        p.meta_in[s] |= (uint8_t)DEM_ACTIVE;
        for (int c = 0; c < (p.store_phys ? 10 : 6); ++c) p.hist_in[c * hs + s] = st[c];
    }
    for (uint32_t w = 0; w < p.n_walls; ++w) {
        uint32_t at = find_key(p.xwkey_a, p.xwkey_b, p.n_wkeys, gi, w);
        if (at == p.n_wkeys) continue;
        size_t s = (size_t)w * n + i;
        const double* st = p.xwstate + 10 * (size_t)at;
        p.wact_in[s] = 1;
        for (int c = 0; c < 6; ++c) p.whist_in[c * wn + s] = st[c];
    }
}
