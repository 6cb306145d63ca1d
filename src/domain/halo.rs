//! Particle traffic between subdomains (ARCHITECTURE.md "Ownership", "Cross-rank contacts"):
//!
//! * **Migration** at rebuild steps: owned particles whose centre left the subdomain go to the
//!   neighbour that owns them now, in three sweeps (x, y, z; what arrives is forwarded by the
//!   next sweep). Each carries the history of its active contacts: the new owner holds the pair
//!   already when the partner was its own particle, but not when both were ghosts there (it
//!   kept no ghost–ghost pairs), so histories travel with the particle, as LAMMPS' `fix
//!   neigh/history` does. Copies of a history are bit-identical on every rank that holds them.
//! * **Ghosts** at rebuild steps: every particle within `halo` of a face with a neighbour is
//!   copied there, in three sweeps forwarding earlier ghosts, so edges and corners need 6
//!   messages, not 26. A copy keeps the owner's exact coordinates plus an integer periodic image
//!   offset (never shifted coordinates), so both ranks compute a cross-rank contact
//!   bit-identically (digest A11.2). A single rank along a periodic axis is its own neighbour:
//!   serial periodicity is the same code path.
//! * **Refresh** between rebuilds: only kinematics (position, velocity, angular velocity,
//!   orientation) travel, in the order the ghosts were made, into reused buffers.

use super::comm::Comm;
use super::decomp::Decomp;
use super::Domain;
use crate::contact::store::{ContactState, PairList};
use crate::error::{Error, Result};
use crate::particles::{Particle, Particles};
use crate::{Quat, V3};

/// `f64`s per particle record.
const P_F64: usize = 26;
/// `f64`s per kinematics record: position, velocity, angular velocity. A ghost's orientation
/// is not refreshed: no law of a sphere reads it (it is the owner's at the last rebuild).
const K_F64: usize = 9;
/// `f64`s per contact record: key + state.
const C_F64: usize = 2 + ContactState::N_ALL;

fn pack_particle(p: &Particle, out: &mut Vec<f64>) {
    let q = p.ori.into_inner();
    out.push(f64::from_bits(p.gid));
    out.extend_from_slice(p.pos.as_slice());
    out.extend_from_slice(p.vel.as_slice());
    out.extend_from_slice(p.angvel.as_slice());
    out.extend_from_slice(&[q.w, q.i, q.j, q.k]);
    out.extend_from_slice(&[p.radius, p.mass, p.inertia]);
    out.extend_from_slice(&[p.material as f64, p.blocked as f64]);
    out.extend(p.image.iter().map(|&c| c as f64));
    out.extend(p.wrap.iter().map(|&c| c as f64));
    out.push(p.tag as f64);
}

/// The copy of particle k sent in direction d (0 lower, 1 upper) of sweep `a`: its image offset
/// moves by the periodic wrap of that face, if any.
fn image_of(ps: &Particles, k: usize, a: usize, d: usize, dec: &Decomp) -> Particle {
    let mut p = ps.get(k);
    p.image[a] += dec.image_shift(a, d);
    p
}

fn unpack_particle(v: &[f64]) -> Particle {
    let v3 = |k: usize| V3::new(v[k], v[k + 1], v[k + 2]);
    let i3 = |k: usize| [v[k] as i32, v[k + 1] as i32, v[k + 2] as i32];
    Particle {
        gid: v[0].to_bits(),
        pos: v3(1),
        vel: v3(4),
        angvel: v3(7),
        ori: Quat::new_unchecked(nalgebra::Quaternion::new(v[10], v[11], v[12], v[13])),
        radius: v[14],
        mass: v[15],
        inertia: v[16],
        material: v[17] as u16,
        blocked: v[18] as u8,
        image: i3(19),
        wrap: i3(22),
        tag: v[25] as u16,
    }
}

fn pack_kinematics(ps: &Particles, i: usize, out: &mut Vec<f64>) {
    out.extend_from_slice(ps.pos[i].as_slice());
    out.extend_from_slice(ps.vel[i].as_slice());
    out.extend_from_slice(ps.angvel[i].as_slice());
}

fn unpack_kinematics(ps: &mut Particles, i: usize, v: &[f64]) {
    ps.pos[i] = V3::new(v[0], v[1], v[2]);
    ps.vel[i] = V3::new(v[3], v[4], v[5]);
    ps.angvel[i] = V3::new(v[6], v[7], v[8]);
}

/// Communication counters since the last reset (for the timing report and the benchmark).
#[derive(Clone, Copy, Debug, Default)]
pub struct TrafficStats {
    /// Bytes of ghost and migration messages (a subdomain that is its own periodic neighbour
    /// refreshes its ghosts by copying: nothing is sent).
    pub bytes_sent: u64,
    /// Point-to-point messages sent (sizes and payloads).
    pub messages: u64,
    pub particles_migrated: u64,
}

/// Send lists and receive ranges of the ghost layer, and reused message buffers.
#[derive(Clone, Default)]
pub struct Halo {
    /// Local indices copied to the [lower, upper] neighbour in each axis' sweep.
    send: [[Vec<u32>; 2]; 3],
    /// Ghost index ranges (start, count) received from the [lower, upper] neighbour.
    recv: [[(usize, usize); 2]; 3],
    down: Vec<f64>,
    up: Vec<f64>,
    from_lo: Vec<f64>,
    from_hi: Vec<f64>,
    /// (gid, direction) of the particles leaving in the current sweep, sorted by gid.
    leaving: Vec<(u64, u8)>,
    /// Contact histories that arrived with migrants, not yet absorbed: (key, state, wall?).
    incoming: Vec<((u64, u64), ContactState, bool)>,
    pub traffic: TrafficStats,
}

impl Halo {
    /// Move owned particles to the ranks that own them now, with their contact histories
    /// (rebuild steps; ghosts must have been dropped, positions wrapped into the cell). The
    /// histories are added to `pairs` / `walls` for the next merge. Message layout per
    /// direction: `[n_p, particles…, n_c, sphere contacts…, n_w, wall contacts…]`.
    #[allow(clippy::too_many_arguments)]
    pub fn migrate(
        &mut self,
        comm: &Comm,
        dec: &Decomp,
        domain: &Domain,
        ps: &mut Particles,
        pairs: &mut PairList,
        walls: &mut PairList,
        step: u64,
    ) -> Result<()> {
        debug_assert_eq!(ps.n_ghosts(), 0);
        self.incoming.clear();
        let mut err = None;
        for a in 0..3 {
            if dec.dims[a] == 1 {
                continue;
            }
            self.down.clear();
            self.up.clear();
            self.down.push(0.0);
            self.up.push(0.0);
            self.leaving.clear();
            let mut keep = 0;
            // Particles leaving along a are packed, the rest compacted in order.
            for i in 0..ps.n_owned {
                let t = dec.coord_of(a, domain.frame_of(ps, i)[a]);
                let dir = if t == dec.coords[a] {
                    None
                } else {
                    let d = dec.direction_to(a, t);
                    if d.is_none() && err.is_none() {
                        err = Some(format!(
                            "particle gid {} jumped over a whole subdomain (rank {}, step \
                             {step}, pos {:?})",
                            ps.gid[i],
                            comm.rank(),
                            ps.pos[i].as_slice()
                        ));
                    }
                    d
                };
                match dir {
                    Some(d) => {
                        let p = ps.get(i);
                        self.leaving.push((p.gid, d as u8));
                        let buf = if d == 0 { &mut self.down } else { &mut self.up };
                        buf[0] += 1.0;
                        pack_particle(&p, buf);
                    }
                    None => {
                        if keep != i {
                            let p = ps.get(i);
                            ps.set(keep, &p);
                        }
                        keep += 1;
                    }
                }
            }
            ps.truncate(keep);
            self.traffic.particles_migrated += self.leaving.len() as u64;
            self.leaving.sort_unstable();
            self.pack_histories(pairs, false);
            self.pack_histories(walls, true);
            self.send_recv(comm, dec, a);
            let (lo_buf, hi_buf) = (
                std::mem::take(&mut self.from_lo),
                std::mem::take(&mut self.from_hi),
            );
            self.unpack_migrants(&lo_buf, ps);
            self.unpack_migrants(&hi_buf, ps);
            (self.from_lo, self.from_hi) = (lo_buf, hi_buf);
        }
        if comm.any(err.is_some()) {
            return Err(err.map(Error::Runtime).unwrap_or(Error::Peer {
                rank: comm.rank(),
                step,
            }));
        }
        for (key, st, wall) in self.incoming.drain(..) {
            if wall {
                walls.absorb(key, st);
            } else {
                pairs.absorb(key, st);
            }
        }
        Ok(())
    }

    /// Send every owned particle to the rank that owns it under `dec` (one all-to-all, any
    /// distance): the start-up's balanced cuts may move a particle across several subdomains.
    /// Only without contact histories (a fresh start); owned particles end up in the order of
    /// the sending ranks, each rank's in its own order.
    pub fn redistribute(&mut self, comm: &Comm, dec: &Decomp, ps: &mut Particles) {
        debug_assert_eq!(ps.n_ghosts(), 0);
        let p = comm.size();
        let dest: Vec<usize> = (0..ps.n_owned)
            .map(|i| {
                let x = ps.pos[i];
                comm.rank_at([0, 1, 2].map(|a| dec.coord_of(a, x[a])))
            })
            .collect();
        let mut counts = vec![0usize; p];
        for &d in &dest {
            counts[d] += P_F64;
        }
        let mut at = super::comm::exclusive_sums(&counts);
        let mut send = vec![0.0; ps.n_owned * P_F64];
        let mut rec = Vec::with_capacity(P_F64);
        for (i, &d) in dest.iter().enumerate() {
            rec.clear();
            pack_particle(&ps.get(i), &mut rec);
            send[at[d]..at[d] + P_F64].copy_from_slice(&rec);
            at[d] += P_F64;
        }
        self.traffic.bytes_sent += 8 * (send.len() - counts[comm.rank()]) as u64;
        let mut recv = Vec::new();
        comm.all_to_all_f64s(&send, &counts, &mut recv);
        ps.truncate(0);
        for r in recv.chunks_exact(P_F64) {
            ps.push_owned(&unpack_particle(r));
        }
    }

    /// Direction (0 down, 1 up) in which gid `g` leaves, if it does.
    fn leaving_dir(&self, g: u64) -> Option<usize> {
        self.leaving
            .binary_search_by_key(&g, |&(x, _)| x)
            .ok()
            .map(|k| self.leaving[k].1 as usize)
    }

    /// Append `[n, records…]` of the active contacts of leaving particles to each direction's
    /// message: from the store, and from histories that arrived in an earlier sweep (forwarded).
    fn pack_histories(&mut self, list: &PairList, wall: bool) {
        let sides = if wall { 1 } else { 2 };
        let at = [self.down.len(), self.up.len()];
        self.down.push(0.0);
        self.up.push(0.0);
        let stored = (0..list.len())
            .filter(|&k| list.active[k])
            .map(|k| (list.key[k], list.record(k)));
        let arrived = self
            .incoming
            .iter()
            .filter(|r| r.2 == wall)
            .map(|r| (r.0, r.1));
        let recs: Vec<_> = stored.chain(arrived).collect();
        for (key, st) in recs {
            for g in [key.0, key.1].into_iter().take(sides) {
                if let Some(d) = self.leaving_dir(g) {
                    let buf = if d == 0 { &mut self.down } else { &mut self.up };
                    buf[at[d]] += 1.0;
                    buf.push(f64::from_bits(key.0));
                    buf.push(f64::from_bits(key.1));
                    st.pack_all(buf);
                }
            }
        }
    }

    fn send_recv(&mut self, comm: &Comm, dec: &Decomp, a: usize) {
        self.traffic.bytes_sent += 8 * (self.down.len() + self.up.len()) as u64;
        // a size message and a payload to each neighbour
        self.traffic.messages += 2 * dec.has_neighbours(a).iter().filter(|&&h| h).count() as u64;
        comm.exchange(
            a,
            dec.has_neighbours(a),
            &self.down,
            &self.up,
            &mut self.from_lo,
            &mut self.from_hi,
        );
    }

    /// Unpack one migration message (see [`Halo::migrate`] for the layout).
    fn unpack_migrants(&mut self, buf: &[f64], ps: &mut Particles) {
        if buf.is_empty() {
            return;
        }
        let np = buf[0] as usize;
        let mut o = 1;
        for _ in 0..np {
            ps.push_owned(&unpack_particle(&buf[o..o + P_F64]));
            o += P_F64;
        }
        for wall in [false, true] {
            let nc = buf[o] as usize;
            o += 1;
            for _ in 0..nc {
                let key = (buf[o].to_bits(), buf[o + 1].to_bits());
                let st = ContactState::unpack_all(&buf[o + 2..o + C_F64]);
                self.incoming.push((key, st, wall));
                o += C_F64;
            }
        }
    }

    /// Copy every particle within `halo` of a face to that neighbour (three sweeps, forwarding
    /// earlier ghosts), recording what went where for [`Halo::refresh`].
    pub fn build_ghosts(
        &mut self,
        comm: &Comm,
        dec: &Decomp,
        ps: &mut Particles,
        domain: &Domain,
        halo: f64,
    ) {
        for a in 0..3 {
            if dec.dims[a] == 1 && !dec.periodic[a] {
                self.recv[a] = [(ps.len(), 0); 2];
                continue;
            }
            self.select_sends(a, dec, ps, domain, halo);
            if dec.dims[a] == 1 {
                // Its own neighbour on both sides: the images are copied straight from their
                // sources, without message buffers, in the order the messages would give.
                for d in 0..2 {
                    self.recv[a][d] = (ps.len(), self.send[a][1 - d].len());
                    for g in 0..self.send[a][1 - d].len() {
                        ps.push(&image_of(
                            ps,
                            self.send[a][1 - d][g] as usize,
                            a,
                            1 - d,
                            dec,
                        ));
                    }
                }
                continue;
            }
            for d in 0..2 {
                let buf = if d == 0 { &mut self.down } else { &mut self.up };
                buf.clear();
                buf.push(self.send[a][d].len() as f64);
                for &k in &self.send[a][d] {
                    pack_particle(&image_of(ps, k as usize, a, d, dec), buf);
                }
            }
            self.send_recv(comm, dec, a);
            for d in 0..2 {
                let buf = if d == 0 { &self.from_lo } else { &self.from_hi };
                let start = ps.len();
                let n = if buf.is_empty() { 0 } else { buf[0] as usize };
                for r in buf[1.min(buf.len())..].chunks_exact(P_F64).take(n) {
                    ps.push(&unpack_particle(r));
                }
                self.recv[a][d] = (start, n);
            }
        }
    }

    /// The send lists of sweep `a`: every particle (owned or forwarded ghost) within `halo` of
    /// the face to a neighbour, in index order, per direction.
    /// Positions are compared in the decomposition's frame ([`Domain::frame_of`]), where a
    /// deformed cell's faces are planes of constant coordinate and the halo's real width is
    /// [`crate::cell::Cell::frame_distance`].
    fn select_sends(&mut self, a: usize, dec: &Decomp, ps: &Particles, domain: &Domain, halo: f64) {
        let has = dec.has_neighbours(a);
        let (lo, hi) = dec.bounds(a);
        let halo = domain.cell.frame_distance(a, halo);
        let [down, up] = &mut self.send[a];
        down.clear();
        up.clear();
        for k in 0..ps.len() {
            let x = domain.frame_of(ps, k)[a];
            if has[0] && x < lo + halo {
                down.push(k as u32);
            }
            if has[1] && x >= hi - halo {
                up.push(k as u32);
            }
        }
    }

    /// (ghost index, source index) of the ghosts made along periodic axis `a` where the
    /// subdomain is its own neighbour: recv[a][d] holds what was sent the other way,
    /// send[a][1 − d] (what goes up comes back from below).
    fn own_images(&self, a: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..2).flat_map(move |d| {
            let (start, n) = self.recv[a][d];
            assert_eq!(n, self.send[a][1 - d].len());
            self.send[a][1 - d]
                .iter()
                .enumerate()
                .map(move |(g, &k)| (start + g, k as usize))
        })
    }

    /// For each ghost (index `n_owned + g`), the local index of the owned particle it is a
    /// periodic image of, if it is one (a subdomain that is its own neighbour along a periodic
    /// axis; corner images too), else [`crate::particles::NO_ORIGIN`] (a copy of another rank's particle).
    pub fn self_origins(&self, dec: &Decomp, ps: &Particles, origin: &mut Vec<u32>) {
        let n_owned = ps.n_owned;
        origin.clear();
        origin.resize(ps.len() - n_owned, crate::particles::NO_ORIGIN);
        for a in (0..3).filter(|&a| dec.dims[a] == 1 && dec.periodic[a]) {
            for (t, k) in self.own_images(a) {
                origin[t - n_owned] = match k < n_owned {
                    true => k as u32,
                    false => origin[k - n_owned],
                };
            }
        }
    }

    /// Refresh the ghosts' kinematics from their owners (every step between rebuilds; a single
    /// subdomain, whose pairs refer to its ghosts' origins, needs none: `Simulation`).
    pub fn refresh(&mut self, comm: &Comm, dec: &Decomp, ps: &mut Particles) {
        for a in 0..3 {
            if dec.dims[a] == 1 {
                if dec.periodic[a] {
                    self.refresh_own_images(a, ps);
                }
                continue;
            }
            self.down.clear();
            self.up.clear();
            for &k in &self.send[a][0] {
                pack_kinematics(ps, k as usize, &mut self.down);
            }
            for &k in &self.send[a][1] {
                pack_kinematics(ps, k as usize, &mut self.up);
            }
            // the sizes are known on both sides since the rebuild: one round of messages
            self.traffic.bytes_sent += 8 * (self.down.len() + self.up.len()) as u64;
            self.traffic.messages += dec.has_neighbours(a).iter().filter(|&&h| h).count() as u64;
            self.from_lo.resize(self.recv[a][0].1 * K_F64, 0.0);
            self.from_hi.resize(self.recv[a][1].1 * K_F64, 0.0);
            comm.exchange_sized(
                a,
                dec.has_neighbours(a),
                &self.down,
                &self.up,
                &mut self.from_lo,
                &mut self.from_hi,
            );
            for d in 0..2 {
                let (start, n) = self.recv[a][d];
                let buf = if d == 0 { &self.from_lo } else { &self.from_hi };
                debug_assert_eq!(buf.len(), n * K_F64);
                for (g, r) in buf.chunks_exact(K_F64).enumerate() {
                    unpack_kinematics(ps, start + g, r);
                }
            }
        }
    }

    /// [`Halo::refresh`] along a periodic axis `a` with a single subdomain, which is its own
    /// neighbour on both sides (one process, or a rank grid one wide along `a`): each ghost is
    /// copied straight from its source — what goes up comes back from below — without message
    /// buffers or a send to itself (chute: 5 500 ghosts per step). Ghosts forwarded by an
    /// earlier axis' sweep are already fresh, as in the message path.
    fn refresh_own_images(&mut self, a: usize, ps: &mut Particles) {
        for (t, k) in self.own_images(a) {
            ps.pos[t] = ps.pos[k];
            ps.vel[t] = ps.vel[k];
            ps.angvel[t] = ps.angvel[k];
        }
    }
}
