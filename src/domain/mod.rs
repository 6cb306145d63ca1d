//! The simulation domain of one rank: its box, periodic axes, and the ghost images that realise
//! periodicity (thesis §2.6 / digest A11 done the MPI way: ghosts with integer image offsets
//! instead of the periodic insertion sort). Ghosts are built in three sweeps (x, then y, then z,
//! each sweep also copying the ghosts made by the previous ones), so edges and corners are
//! covered; the MPI decomposition extends exactly this with neighbour ranks. The only place
//! that will call rsmpi (see [`mpi_env`]).

pub mod balance;
pub mod comm;
pub mod decomp;
pub mod exact;
pub mod halo;
pub mod mpi_env;

use crate::cell::Cell;
use crate::error::{Error, Result};
use crate::particles::Particles;
use crate::V3;

/// Home images of this many cells on some axis move a deformed cell's particle home
/// ([`Domain::wrap_owned`]).
pub const REHOME: i32 = 3;

/// Simulation box; periodic axes form the periodic cell, which starts as the box `lo..hi` and
/// may deform (issue 23, [`Cell`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Domain {
    pub lo: V3,
    pub hi: V3,
    pub periodic: [bool; 3],
    /// The periodic cell's current shape (the box `lo..hi` until it deforms).
    pub cell: Cell,
}

impl Domain {
    /// The box `lo..hi` with the given periodic axes, its cell not deformed.
    pub fn new(lo: V3, hi: V3, periodic: [bool; 3]) -> Self {
        Domain {
            lo,
            hi,
            periodic,
            cell: Cell::boxed(lo, hi),
        }
    }

    /// Change the box (before any deformation; replication): the cell follows.
    pub fn set_box(&mut self, lo: V3, hi: V3) {
        (self.lo, self.hi) = (lo, hi);
        self.cell = Cell::boxed(lo, hi);
    }

    /// The decomposition frame position of particle copy `k` (its coordinates with its image
    /// offset, [`Cell::frame_image`]): the coordinates the rank grid's cuts divide.
    #[inline]
    pub fn frame_of(&self, ps: &Particles, k: usize) -> V3 {
        self.cell
            .frame_image(&ps.pos[k], ps.image[k], self.periodic)
    }

    /// Edge lengths of the box (the periodic cell's along periodic axes).
    pub fn size(&self) -> V3 {
        self.hi - self.lo
    }

    pub fn any_periodic(&self) -> bool {
        self.periodic.iter().any(|&p| p)
    }

    /// Refuse a periodic cell too small for its halo: a particle would meet two images of the
    /// same partner (digest A11.3, "halo width < half the cell").
    pub fn check_halo(&self, halo: f64) -> Result<()> {
        for a in 0..3 {
            let l = self.cell.face_distance(a);
            if self.periodic[a] && l < 2.0 * halo {
                return Err(Error::Input(format!(
                    "periodic cell along {} is {:.6e} m, less than twice the halo {:.6e} m \
                     (2·max radius + skin): enlarge the cell or reduce the skin",
                    ["x", "y", "z"][a],
                    l,
                    halo
                )));
            }
        }
        Ok(())
    }

    /// Wrap owned particles that left the periodic cell back into it, counting the wraps. A
    /// deformed cell moves no position (Yade's rule, digest A11.2): each owned particle gets
    /// its home image instead ([`Cell::home`]), the offset that brings it into the cell — until
    /// that offset reaches [`REHOME`] cells on some axis (a long simple shear carries the top
    /// layers many cells along): then the particle is moved home by H h, a lattice translation
    /// (its velocity, a fluctuation, is periodic), so that image differences, hence the pairs'
    /// shift codes, stay few. Decided per particle from its own position: the same on every
    /// rank count.
    pub fn wrap_owned(&self, ps: &mut Particles) {
        if self.cell.deformed {
            for i in 0..ps.n_owned {
                let h = self.cell.home(&ps.pos[i], self.periodic);
                if h.iter().any(|c| c.abs() >= REHOME) {
                    ps.pos[i] += self.cell.shift(h);
                    ps.image[i] = self.cell.home(&ps.pos[i], self.periodic);
                } else {
                    ps.image[i] = h;
                }
            }
            return;
        }
        for i in 0..ps.n_owned {
            self.wrap_one(&mut ps.pos[i], &mut ps.wrap[i]);
        }
    }

    /// Wrap one position into the periodic cell, counting the cell crossings in `wrap`.
    pub fn wrap_one(&self, x: &mut V3, wrap: &mut [i32; 3]) {
        let l = self.size();
        for a in 0..3 {
            if !self.periodic[a] {
                continue;
            }
            while x[a] >= self.hi[a] {
                x[a] -= l[a];
                wrap[a] += 1;
            }
            while x[a] < self.lo[a] {
                x[a] += l[a];
                wrap[a] -= 1;
            }
        }
    }

    /// First owned particle that is not finite or lies outside the box along a non-periodic
    /// axis: (local index, message).
    pub fn find_escaped(&self, ps: &Particles) -> Option<(usize, String)> {
        for i in 0..ps.n_owned {
            let x = ps.pos[i];
            if !(x.iter().all(|c| c.is_finite()) && ps.vel[i].iter().all(|c| c.is_finite())) {
                return Some((
                    i,
                    format!("non-finite state (pos {x:?}, vel {:?})", ps.vel[i]),
                ));
            }
            for a in 0..3 {
                if !self.periodic[a] && (x[a] < self.lo[a] || x[a] > self.hi[a]) {
                    return Some((
                        i,
                        format!(
                            "left the domain along {} (pos {:?}, domain {:?} .. {:?})",
                            ["x", "y", "z"][a],
                            x.as_slice(),
                            self.lo.as_slice(),
                            self.hi.as_slice()
                        ),
                    ));
                }
            }
        }
        None
    }

    /// Append periodic ghost images of every particle within `halo` of a periodic face, on a
    /// single rank (the one-rank case of [`halo::Halo::build_ghosts`]). Returns each ghost's
    /// origin ([`halo::Halo::self_origins`]).
    pub fn build_ghosts(&self, ps: &mut Particles, halo: f64) -> Vec<u32> {
        let dec = decomp::Decomp::serial(self);
        let mut h = halo::Halo::default();
        h.build_ghosts(&comm::Comm::Serial, &dec, ps, self, halo);
        let mut origin = Vec::new();
        h.self_origins(&dec, ps, &mut origin);
        origin
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::particles::Particle;

    #[test]
    fn corner_particle_gets_seven_images() {
        let d = Domain::new(V3::zeros(), V3::repeat(10.0), [true; 3]);
        let mut ps = Particles::default();
        ps.push_owned(&Particle::sphere(0, V3::repeat(0.5), 0.5, 1.0, 0));
        ps.push_owned(&Particle::sphere(1, V3::repeat(5.0), 0.5, 1.0, 0));
        d.build_ghosts(&mut ps, 1.5);
        assert_eq!(ps.n_ghosts(), 7);
        let mut imgs: Vec<_> = ps.image[2..].to_vec();
        imgs.sort();
        assert!(imgs.contains(&[1, 1, 1]));
        assert!(ps.gid[2..].iter().all(|&g| g == 0));
    }

    #[test]
    fn deformed_cell_keeps_positions_and_rehomes_far_ones() {
        // a sheared cell: home images instead of wrapping, a move home from 3 cells away
        let mut d = Domain::new(V3::zeros(), V3::repeat(1.0), [true; 3]);
        let mut h = d.cell.h;
        h[(0, 2)] = 0.3;
        d.cell.set_h(h);
        let mut ps = Particles::default();
        ps.push_owned(&Particle::sphere(0, V3::new(2.5, 0.5, 0.5), 0.1, 1.0, 0));
        ps.push_owned(&Particle::sphere(1, V3::new(4.2, -0.4, 0.5), 0.1, 1.0, 0));
        let x0 = ps.pos[0];
        d.wrap_owned(&mut ps);
        assert_eq!(ps.pos[0], x0, "a particle two cells out keeps its position");
        assert_eq!(ps.image[0], [-2, 0, 0]);
        // the second was 4 cells out along x (s_x = 4.2 − 0.3·0.5 = 4.05): moved home
        let s = d.cell.reduced(&ps.pos[1]);
        assert!((0..3).all(|a| (0.0..1.0).contains(&s[a])), "{s:?}");
        assert_eq!(ps.image[1], [0, 0, 0]);
        assert!((ps.pos[1] - V3::new(0.2, 0.6, 0.5)).norm() < 1e-15);
    }

    #[test]
    fn wrap_counts_cell_crossings() {
        let d = Domain::new(V3::zeros(), V3::new(10.0, 10.0, 10.0), [true, false, false]);
        let mut ps = Particles::default();
        ps.push_owned(&Particle::sphere(0, V3::new(-0.5, 3.0, 3.0), 0.5, 1.0, 0));
        d.wrap_owned(&mut ps);
        assert_eq!(ps.wrap[0], [-1, 0, 0]);
        assert!((ps.pos[0].x - 9.5).abs() < 1e-14);
        assert!((ps.unwrapped(0, &d.size()).x + 0.5).abs() < 1e-14);
    }
}
