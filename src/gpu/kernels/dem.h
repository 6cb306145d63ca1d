// demhpc GPU step: types, parameters and the physics shared by every kernel (issue 34;
// docs/ARCHITECTURE.md "GPU step").
//
// One source, two compilers: NVRTC compiles it for the GPU (`src/gpu/cuda.rs`), and the C++
// compiler of the build (build.rs, `cc`) compiles the same text for the host, where each kernel
// is a loop over its thread indices (`src/gpu/host.cpp`). CI runs the host build against the
// CPU path, so a GPU only confirms speed and device behaviour.
//
// Floating point: every function below performs the IEEE operations of the Rust function it
// names, in the same order (no fused multiply–add: NVRTC runs with --fmad=false, the host
// build with -ffp-contract=off), so one contact's result has the bits of the CPU path's.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define DEM_GPU 1
#define DEM_FN __device__ __forceinline__
typedef unsigned char uint8_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
#else
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#define DEM_FN static inline
#endif

// ---------------------------------------------------------------------------------------
// Layout shared with src/gpu/params.rs (checked by a unit test through dem_host_layout).

#define DEM_MAX_WALLS 16
#define DEM_MIX_ROW 8
// the image code of "no shift": (0 + 1) + 3 (0 + 1) + 9 (0 + 1)
#define DEM_CENTRE 13
// meta bits of a neighbour slot
#define DEM_ACTIVE 1u
#define DEM_P1 2u
#define DEM_CODE_SHIFT 2
// laws (src/gpu/params.rs `Law`)
#define DEM_LAW_CUNDALL 0u
#define DEM_LAW_HERTZ 1u
#define DEM_LAW_HOOKE 2u
// flags[] words
#define DEM_F_REBUILD 0
#define DEM_F_ERROR 1
#define DEM_F_BAD 2
#define DEM_F_MAXNBR 3
#define DEM_F_COUNT 4
#define DEM_F_LOST 5
// error bits
#define DEM_E_NONFINITE 1u
#define DEM_E_ESCAPED 2u
#define DEM_E_MOVED 4u
// blocked DOFs (particles.rs BLOCK_ALL)
#define DEM_BLOCK_ALL 63u
// stats record per chunk: [ke_t, ke_r, Σ|F| free, n free, Σ|F_c|, n contacts, max overlap, n,
// then 3 per wall]
#define DEM_STATS_FIXED 8

// 32-byte aligned, so that the GPU loads one in two 16-byte transactions
#ifdef DEM_GPU
struct __align__(32) D4 {
#else
struct alignas(32) D4 {
#endif
    double x, y, z, w;
};

struct DemWall {
    double p[3];  // a point of the plane now
    double n[3];  // unit normal towards the spheres
    double v[3];  // velocity
    uint32_t mat;
    uint32_t pad;
};

struct DemParams {
    // particles: _in read, _out written (swapped by the host)
    D4* pos_in;  // x, y, z, radius
    D4* pos_out;
    D4* vel_in;  // v at t - dt/2, mass
    D4* vel_out;
    D4* ang_in;  // omega at t - dt/2, inertia
    D4* ang_out;
    D4* ori_in;  // orientation quaternion (i, j, k, w): nalgebra's coordinate order
    D4* ori_out;
    uint64_t* gid_in;
    uint64_t* gid_out;
    uint32_t* info_in;  // material | blocked << 16
    uint32_t* info_out;
    uint32_t* tag_in;
    uint32_t* tag_out;
    int32_t* wrap_in;  // 4 per particle: periodic crossings x, y, z, unused
    int32_t* wrap_out;
    D4* ref;    // positions at the last rebuild (Verlet trigger)
    D4* rec_f;  // total force of the last recorded step
    D4* rec_t;  // total torque of the last recorded step
    double* rec_c;  // 2 per particle: sum |F_c| of its contacts as particle 1 and with walls, count
    // neighbour lists (full: each pair in both particles' lists), slot-major [cap][n]
    uint32_t* nbr_in;
    uint32_t* nbr_out;
    uint8_t* meta_in;
    uint8_t* meta_out;
    uint32_t* nn_in;
    uint32_t* nn_out;
    double* hist_in;  // [6 or 10][cap][n]: shear history (3), normal of the last step (3),
                      // with store_phys the pair constants kn, ks, tan phi, cn
    double* hist_out;
    // wall contacts, [W][n]
    uint8_t* wact_in;
    uint8_t* wact_out;
    double* whist_in;  // [6][W][n]
    double* whist_out;
    double* wrec;  // [3][W][n]: force on the wall (recorded steps)
    // rebuild scratch
    uint32_t* cell_of;
    uint32_t* cell_count;
    uint32_t* cell_start;  // [ncells + 1]
    uint32_t* order;       // new index -> old index
    uint32_t* inv;         // old index -> new index
    uint32_t* scan_data;
    uint32_t* scan_sums;
    uint32_t* flags;
    const double* mix;  // [n_mat][n_mat][DEM_MIX_ROW]
    double* stats_out;
    // contacts crossing the host boundary: keys (gid1, gid2) or (gid, wall), 10 doubles each
    // (shear history, normal, pair constants kn, ks, tan phi, cn)
    uint64_t* xkey_a;
    uint64_t* xkey_b;
    double* xstate;
    uint64_t* xwkey_a;
    uint64_t* xwkey_b;
    double* xwstate;
    // scalars
    double dt;
    double lambda;  // Cundall damping
    double g[3];
    double skin;
    double lim2;   // squared displacement that triggers a rebuild: (skin / 2)^2
    double halo2;  // squared displacement refused as a blow-up
    double hooke_gn;
    double hooke_gt;
    double surface_energy;
    double lo[3];
    double hi[3];
    double len[3];
    double cell_lo[3];
    double cell_inv[3];
    double shift[27][3];
    uint32_t n;
    uint32_t n_walls;
    uint32_t law;
    uint32_t record;
    uint32_t damp_gravity;
    uint32_t hooke_total;
    uint32_t periodic[3];
    uint32_t dims[3];
    uint32_t n_cells;
    uint32_t cap_in;
    uint32_t cap_out;
    uint32_t n_mat;
    uint32_t scan_n;
    uint32_t scan_chunk;
    uint32_t stats_chunk;
    uint32_t n_keys;
    uint32_t n_wkeys;
    uint32_t store_phys;  // histories hold the pair constants too (10 numbers, else 6)
    DemWall walls[DEM_MAX_WALLS];
};

// A read through the read-only data cache, for what a kernel reads and never writes (the
// neighbours' state in k_step): two 16-byte loads of a 32-byte record.
#ifdef DEM_GPU
DEM_FN D4 ldg4(const D4* a) {
    const double2* q = reinterpret_cast<const double2*>(a);
    double2 u = __ldg(q), v = __ldg(q + 1);
    D4 r;
    r.x = u.x;
    r.y = u.y;
    r.z = v.x;
    r.w = v.y;
    return r;
}
DEM_FN uint32_t ldg32(const uint32_t* a) { return __ldg(a); }
#else
DEM_FN D4 ldg4(const D4* a) { return *a; }
DEM_FN uint32_t ldg32(const uint32_t* a) { return *a; }
#endif

// ---------------------------------------------------------------------------------------
// Atomics: the host build runs one thread index at a time.

#ifdef DEM_GPU
DEM_FN uint32_t dem_atomic_add(uint32_t* a, uint32_t v) { return atomicAdd(a, v); }
DEM_FN void dem_atomic_max(uint32_t* a, uint32_t v) { atomicMax(a, v); }
DEM_FN void dem_atomic_min(uint32_t* a, uint32_t v) { atomicMin(a, v); }
DEM_FN void dem_atomic_or(uint32_t* a, uint32_t v) { atomicOr(a, v); }
#else
DEM_FN uint32_t dem_atomic_add(uint32_t* a, uint32_t v) {
    uint32_t old = *a;
    *a = old + v;
    return old;
}
DEM_FN void dem_atomic_max(uint32_t* a, uint32_t v) { *a = *a > v ? *a : v; }
DEM_FN void dem_atomic_min(uint32_t* a, uint32_t v) { *a = *a < v ? *a : v; }
DEM_FN void dem_atomic_or(uint32_t* a, uint32_t v) { *a |= v; }
#endif

// ---------------------------------------------------------------------------------------
// 3-vectors with nalgebra's operation order (Vector3<f64>).

struct V3 {
    double x, y, z;
};

DEM_FN V3 v3(double x, double y, double z) {
    V3 r;
    r.x = x;
    r.y = y;
    r.z = z;
    return r;
}
DEM_FN V3 zero3() { return v3(0.0, 0.0, 0.0); }
DEM_FN V3 add(V3 a, V3 b) { return v3(a.x + b.x, a.y + b.y, a.z + b.z); }
DEM_FN V3 sub(V3 a, V3 b) { return v3(a.x - b.x, a.y - b.y, a.z - b.z); }
DEM_FN V3 neg(V3 a) { return v3(-a.x, -a.y, -a.z); }
DEM_FN V3 mul(V3 a, double s) { return v3(a.x * s, a.y * s, a.z * s); }
DEM_FN V3 divs(V3 a, double s) { return v3(a.x / s, a.y / s, a.z / s); }
// dot and |.|^2: (x + y) + z (nalgebra's 3-vector dot)
DEM_FN double dot(V3 a, V3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
DEM_FN double norm2(V3 a) { return a.x * a.x + a.y * a.y + a.z * a.z; }
DEM_FN V3 cross(V3 a, V3 b) {
    return v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
DEM_FN V3 sel(bool c, V3 a, V3 b) { return c ? a : b; }
DEM_FN V3 xyz(D4 a) { return v3(a.x, a.y, a.z); }
DEM_FN bool dem_finite(double x) { return x - x == 0.0; }
// Rust's f64::max / min for the operands met here (no NaN)
DEM_FN double fmax0(double a, double b) { return a > b ? a : b; }
DEM_FN double fmin0(double a, double b) { return a < b ? a : b; }

// ---------------------------------------------------------------------------------------
// Contact geometry (src/contact/geom.rs).

// relative_velocity: (v2 - (w2 x n) d2) - (v1 + (w1 x n) d1), digest A4.3 step 2
DEM_FN V3 relative_velocity(V3 v1, V3 w1, double d1, V3 v2, V3 w2, double d2, V3 n) {
    return sub(sub(v2, mul(cross(w2, n), d2)), add(v1, mul(cross(w1, n), d1)));
}

// rotate_shear: thesis §2.3.2.1 eq. 2.30-2.33 (tilt and mean twist), re-projected and rescaled
DEM_FN V3 rotate_shear(V3 u, V3 n_old, V3 n, double twist, double dt) {
    double len0 = norm2(u);
    V3 axis = add(cross(n_old, n), mul(n, 0.5 * dt * twist));
    V3 r = sub(u, cross(u, axis));
    r = sub(r, mul(n, dot(n, r)));
    double len1 = norm2(r);
    double s = sqrt(len0 / len1);
    return mul(r, len1 > 0.0 ? s : 1.0);
}

// ---------------------------------------------------------------------------------------
// Pair constants (src/material.rs PairMix::phys): one row per ordered material pair,
// [tan phi, law constants...] (src/gpu/params.rs `mix_rows`).

struct Phys {
    double kn, ks, tan_phi, cn;
};

DEM_FN double series(double a, double b) { return a + b == 0.0 ? 0.0 : a * b / (a + b); }

// r2 = INFINITY for a Hertz wall (a sphere of infinite radius); m_eff the reduced mass
DEM_FN Phys mix_phys(const DemParams& p, uint32_t ma, uint32_t mb, double r1, double r2,
                     double m_eff) {
    const double* row = p.mix + ((size_t)ma * p.n_mat + mb) * DEM_MIX_ROW;
    Phys ph;
    ph.tan_phi = row[0];
    if (p.law == DEM_LAW_CUNDALL) {
        // Yade Ip2_FrictMat_FrictMat_FrictPhys: K = 2 E r per sphere in series (digest A3.1)
        double k1 = row[1] * r1, k2 = row[2] * r2;
        ph.kn = series(k1, k2);
        ph.ks = series(k1 * row[3], k2 * row[4]);
        ph.cn = row[5] >= 0.0 ? row[5] * sqrt(m_eff * ph.kn) : 0.0;
    } else if (p.law == DEM_LAW_HERTZ) {
        // contact/law/hertz.rs: kn = (4/3) E* sqrt(R*), ks = 8 G* sqrt(R*), cn = alpha sqrt(kn m*)
        double sr = sqrt(1.0 / (1.0 / r1 + 1.0 / r2));
        ph.kn = 4.0 / 3.0 * row[1] * sr;
        ph.ks = 8.0 * row[2] * sr;
        ph.cn = row[3] >= 0.0 ? row[3] * sqrt(ph.kn * m_eff) : 0.0;
    } else {
        // LAMMPS hooke/history: constant kn, kt; cn carries m*
        ph.kn = row[1];
        ph.ks = row[2];
        ph.cn = m_eff;
    }
    return ph;
}

DEM_FN Phys wall_phys(const DemParams& p, uint32_t wall_mat, uint32_t mat, double r, double m) {
    double inf = 1.0 / 0.0;
    return mix_phys(p, wall_mat, mat, r, p.law == DEM_LAW_HERTZ ? inf : r, m);
}

// ---------------------------------------------------------------------------------------
// Laws (src/contact/law/*.rs, FrictLaw::step): force on particle 1 and the new shear history.

struct LawOut {
    V3 f, hist;
};

// Cundall-Strack, thesis eq. 2.45-2.49 (linear.rs)
DEM_FN LawOut cundall_strack(Phys ph, V3 fs, V3 n_old, V3 n, double u_n, V3 v12, double twist,
                             double dt) {
    double vn = dot(n, v12);
    V3 vt = sub(v12, mul(n, vn));
    fs = add(rotate_shear(fs, n_old, n, twist, dt), mul(vt, ph.ks * dt));
    double fn_el = ph.kn * u_n;
    double max_fs = fabs(fn_el) * ph.tan_phi;
    double fs2 = norm2(fs);
    double slip = max_fs / sqrt(fs2);
    fs = mul(fs, fs2 > max_fs * max_fs ? slip : 1.0);
    LawOut o;
    o.f = add(mul(n, fn_el + ph.cn * vn), fs);
    o.hist = fs;
    return o;
}

// LAMMPS gran/hooke/history (hooke.rs)
DEM_FN LawOut hooke(const DemParams& p, Phys ph, V3 xi, V3 n, double u_n, V3 v12, double dt) {
    double m_eff = ph.cn;
    double vn = dot(n, v12);
    V3 vt = sub(v12, mul(n, vn));
    xi = add(xi, mul(vt, dt));
    xi = sub(xi, mul(n, dot(n, xi)));
    double fn_el = ph.kn * u_n;
    double f_n = fn_el + m_eff * p.hooke_gn * vn;
    V3 damp_t = mul(vt, m_eff * p.hooke_gt);
    V3 ft = add(mul(xi, ph.ks), damp_t);
    double max_ft = ph.tan_phi * fabs(p.hooke_total ? f_n : fn_el);
    double ft2 = norm2(ft);
    bool slip = ft2 > max_ft * max_ft;
    double ratio = max_ft / sqrt(ft2);
    ft = mul(ft, slip ? ratio : 1.0);
    V3 d = divs(damp_t, ph.ks);
    V3 xi_slip = sub(mul(add(xi, d), ratio), d);
    LawOut o;
    o.hist = sel(slip, xi_slip, xi);
    o.f = add(mul(n, f_n), ft);
    return o;
}

// Hertz-Mindlin with Tsuji damping and DMT adhesion (hertz.rs, Trial::of and step)
DEM_FN LawOut hertz(const DemParams& p, Phys ph, V3 xi, V3 n_old, V3 n, double u_n, V3 v12,
                    double twist, double dt, double r_eff) {
    double delta = fmax0(-u_n, 0.0);
    double sd = sqrt(delta);
    double vn = dot(n, v12);
    V3 vt = sub(v12, mul(n, vn));
    V3 old = rotate_shear(xi, n_old, n, twist, dt);
    xi = add(old, mul(vt, dt));
    double g_n = ph.cn * sqrt(sd);
    double f_el = ph.kn * delta * sd;
    double f_adh = 4.0 * 3.141592653589793 * r_eff * p.surface_energy;
    double f_n = fmin0(g_n * vn - f_el, 0.0) + f_adh;
    double g_t = g_n * sqrt(ph.ks / (1.5 * ph.kn));
    double s_t = ph.ks * sd;
    V3 ft = add(mul(xi, s_t), mul(vt, g_t));
    double ft2 = norm2(ft);
    double max_ft = fabs(fmin0(f_n, 0.0)) * ph.tan_phi;
    bool slip = ft2 > max_ft * max_ft;
    double ratio = max_ft / sqrt(ft2);
    ft = mul(ft, slip ? ratio : 1.0);
    LawOut o;
    o.hist = sel(slip, mul(xi, ratio), xi);
    o.f = add(mul(n, f_n), ft);
    return o;
}

DEM_FN LawOut law_step(const DemParams& p, Phys ph, V3 hist, V3 n_old, V3 n, double u_n, V3 v12,
                       double twist, double r_eff) {
    if (p.law == DEM_LAW_CUNDALL) return cundall_strack(ph, hist, n_old, n, u_n, v12, twist, p.dt);
    if (p.law == DEM_LAW_HERTZ) return hertz(p, ph, hist, n_old, n, u_n, v12, twist, p.dt, r_eff);
    return hooke(p, ph, hist, n, u_n, v12, p.dt);
}

// ---------------------------------------------------------------------------------------
// Leapfrog step (src/integrate.rs step_core, leapfrog_one; thesis eq. 2.50-2.62).

// Cundall damping: a (1 - lambda sign(a (v + dt a / 2))), as two selects
DEM_FN double damp(double a, double v, double dt, double lambda) {
    double s = a * (v + 0.5 * dt * a);
    double up = s > 0.0 ? 1.0 - lambda : 1.0;
    return a * (s < 0.0 ? 1.0 + lambda : up);
}

// quaternion (i, j, k, w) product a * b (nalgebra's Mul for Quaternion)
DEM_FN D4 qmul(D4 a, D4 b) {
    D4 r;
    r.w = a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z;
    r.x = a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y;
    r.y = a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x;
    r.z = a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w;
    return r;
}

// rotate_by: q <- (c, s theta) q, then one Newton step towards unit length; |q|^2 in
// nalgebra's 4-vector order (i^2 + k^2) + (j^2 + w^2)
DEM_FN D4 rotate_by(D4 q, V3 theta, double c, double s) {
    D4 dq;
    dq.w = c;
    dq.x = s * theta.x;
    dq.y = s * theta.y;
    dq.z = s * theta.z;
    D4 r = qmul(dq, q);
    double n2 = (r.x * r.x + r.z * r.z) + (r.y * r.y + r.w * r.w);
    double f = 1.5 - 0.5 * n2;
    D4 o;
    o.x = r.x * f;
    o.y = r.y * f;
    o.z = r.z * f;
    o.w = r.w * f;
    return o;
}

#define DEM_SMALL_ANGLE2 1e-6

// integrate.rs `rotate`: exact rotation by theta = omega dt
DEM_FN D4 rotate_q(D4 q, V3 theta) {
    double t2 = norm2(theta);
    double c, s;
    if (t2 < DEM_SMALL_ANGLE2) {
        c = 1.0 + t2 * (-0.125 + t2 * (1.0 / 384.0));
        s = 0.5 + t2 * (-1.0 / 48.0 + t2 * (1.0 / 3840.0));
    } else {
        double t = sqrt(t2);
        c = cos(0.5 * t);
        s = sin(0.5 * t) / t;
    }
    return rotate_by(q, theta, c, s);
}

// One particle's leapfrog step: force f and torque t (gravity already in f when damped with
// it; else gu = g added after the damping), blocked DOFs keep their velocity.
DEM_FN void leapfrog(V3* x, V3* v, V3* w, D4* q, V3 f, V3 t, double m, double inertia,
                     uint32_t blocked, double dt, double lambda, V3 gu) {
    double inv_m = 1.0 / m, inv_i = 1.0 / inertia;
    double fa[3] = {f.x, f.y, f.z}, ta[3] = {t.x, t.y, t.z}, ga[3] = {gu.x, gu.y, gu.z};
    double va[3] = {v->x, v->y, v->z}, wa[3] = {w->x, w->y, w->z};
    for (int a = 0; a < 3; ++a) {
        double vn = va[a] + dt * (damp(fa[a] * inv_m, va[a], dt, lambda) + ga[a]);
        va[a] = (blocked & (1u << a)) == 0 ? vn : va[a];
        double wn = wa[a] + dt * damp(ta[a] * inv_i, wa[a], dt, lambda);
        wa[a] = (blocked & (8u << a)) == 0 ? wn : wa[a];
    }
    *v = v3(va[0], va[1], va[2]);
    *w = v3(wa[0], wa[1], wa[2]);
    *x = add(*x, mul(*v, dt));
    // a particle that does not spin keeps its orientation (integrate.rs step_core)
    bool spinning = (w->x != 0.0) | (w->y != 0.0) | (w->z != 0.0);
    if (spinning) *q = rotate_q(*q, mul(*w, dt));
}
