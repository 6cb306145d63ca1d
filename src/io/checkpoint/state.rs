//! The rank's state a checkpoint holds, both ways: [`CheckpointState`], what [`super::write`]
//! takes (built by `Simulation::checkpoint_state`), and [`Restored`], what
//! [`super::read_local`] returns (taken by `Simulation::restore`). Neither names the
//! simulation: `sim` fills and empties them, this module lays them out.

use crate::contact::store::ContactState;
use crate::contact::Wall;
use crate::particles::Particles;
use crate::V3;

/// The root attributes that the run gives (the same on every rank): what
/// [`super::CheckpointInfo`] holds but the row counts (summed over the ranks by `write`), the
/// rank count (the communicator's) and the scene text and file (the caller's).
#[derive(Clone, Debug, Default)]
pub struct Header {
    pub step: u64,
    pub time: f64,
    pub dt: f64,
    pub reproducible: bool,
    /// The rank grid.
    pub grid: [u64; 3],
    /// The box over which open axes were cut (see `Simulation::decomp_bbox`).
    pub bbox_lo: V3,
    pub bbox_hi: V3,
    pub need_rebuild: bool,
    pub n_rebuilds: u64,
    /// Engine and controller state (RON; empty when the scene has none).
    pub engines: String,
    /// The rank grid's cut planes per axis (`dims + 1` each, ±∞ at open ends).
    pub cuts: [Vec<f64>; 3],
}

/// One rank's state as its checkpoint stores it: the root attributes' values ([`Header`]) and
/// this rank's rows of every dataset, flat as the file holds them (a vector as x, y, z; a
/// quaternion as w, i, j, k; a contact history as `ContactState::pack` gives it, its rolling
/// moment apart). Built by [`CheckpointState::new`] from the owned particles, then
/// `push_contact`, `push_leading`, `push_wall_contact` and `set_walls`.
#[derive(Clone, Debug, Default)]
pub struct CheckpointState {
    pub header: Header,
    pub(super) gid: Vec<u64>,
    pub(super) pos: Vec<f64>,
    pub(super) vel: Vec<f64>,
    pub(super) angvel: Vec<f64>,
    pub(super) ori: Vec<f64>,
    pub(super) radius: Vec<f64>,
    pub(super) mass: Vec<f64>,
    pub(super) inertia: Vec<f64>,
    pub(super) material: Vec<u16>,
    pub(super) blocked: Vec<u8>,
    pub(super) wrap: Vec<i32>,
    pub(super) tag: Vec<u16>,
    pub(super) ref_pos: Vec<f64>,
    /// The bounding box (lo, hi) of the `ref_pos` rows (+∞, −∞ when there are none): this
    /// rank's row of `index/ref_box`.
    pub(super) ref_box: Vec<f64>,
    pub(super) c_gid1: Vec<u64>,
    pub(super) c_gid2: Vec<u64>,
    pub(super) c_image: Vec<i32>,
    pub(super) c_state: Vec<f64>,
    pub(super) c_roll: Vec<f64>,
    pub(super) w_gid: Vec<u64>,
    pub(super) w_wall: Vec<u64>,
    pub(super) w_state: Vec<f64>,
    pub(super) w_roll: Vec<f64>,
    pub(super) lead_gid1: Vec<u64>,
    pub(super) lead_gid2: Vec<u64>,
    /// Walls (replicated on every rank: written by rank 0's block only): point, normal (a
    /// plane's; another shape's direction, `Wall::direction`), vel, ref_point as flat rows.
    pub(super) walls: [Vec<f64>; 4],
    pub(super) n_walls: u64,
}

/// A list of vectors as flat rows (x, y, z each).
fn flat(v: impl IntoIterator<Item = V3>) -> Vec<f64> {
    v.into_iter().flat_map(|x| [x.x, x.y, x.z]).collect()
}

impl CheckpointState {
    /// The state of `header` with the owned particles of `ps` (its first `n_owned`), whose
    /// positions at the last neighbour rebuild are `reference` (aligned with them), and no
    /// contacts or walls yet.
    pub fn new(header: Header, ps: &Particles, reference: &[V3]) -> Self {
        let n = ps.n_owned;
        let (lo, hi) = reference.iter().fold(
            (V3::repeat(f64::INFINITY), V3::repeat(f64::NEG_INFINITY)),
            |(lo, hi), x| (lo.inf(x), hi.sup(x)),
        );
        CheckpointState {
            header,
            gid: ps.gid[..n].to_vec(),
            pos: flat(ps.pos[..n].iter().copied()),
            vel: flat(ps.vel[..n].iter().copied()),
            angvel: flat(ps.angvel[..n].iter().copied()),
            ori: ps.ori[..n]
                .iter()
                .flat_map(|q| [q.w, q.i, q.j, q.k])
                .collect(),
            radius: ps.radius[..n].to_vec(),
            mass: ps.mass[..n].to_vec(),
            inertia: ps.inertia[..n].to_vec(),
            material: ps.material[..n].to_vec(),
            blocked: ps.blocked[..n].to_vec(),
            wrap: ps.wrap[..n].iter().flatten().copied().collect(),
            tag: ps.tag[..n].to_vec(),
            ref_pos: flat(reference.iter().copied()),
            ref_box: [lo.as_slice(), hi.as_slice()].concat(),
            ..Default::default()
        }
    }

    /// Add a contact between particles `key` (gids, the first owned here), particle 2 seen in
    /// periodic image `image` relative to particle 1, with history `st`.
    pub fn push_contact(&mut self, key: (u64, u64), image: [i32; 3], st: &ContactState) {
        self.c_gid1.push(key.0);
        self.c_gid2.push(key.1);
        self.c_image.extend_from_slice(&image);
        st.pack(&mut self.c_state);
        self.c_roll.extend_from_slice(st.roll.as_slice());
    }

    /// Add a pair that was touching at the last neighbour rebuild (`leading/`).
    pub fn push_leading(&mut self, key: (u64, u64)) {
        self.lead_gid1.push(key.0);
        self.lead_gid2.push(key.1);
    }

    /// Add a wall contact: `key` is (the sphere's gid, the wall or facet index), `st` its
    /// history.
    pub fn push_wall_contact(&mut self, key: (u64, u64), st: &ContactState) {
        self.w_gid.push(key.0);
        self.w_wall.push(key.1);
        st.pack(&mut self.w_state);
        self.w_roll.extend_from_slice(st.roll.as_slice());
    }

    /// The walls and their points at the last neighbour rebuild (`reference`, aligned).
    pub fn set_walls(&mut self, walls: &[Wall], reference: &[V3]) {
        self.walls = [
            flat(walls.iter().map(|w| w.point)),
            flat(walls.iter().map(|w| w.direction())),
            flat(walls.iter().map(|w| w.vel)),
            flat(reference.iter().copied()),
        ];
        self.n_walls = walls.len() as u64;
    }
}

/// One rank's share of a checkpoint, as `io::checkpoint` reads it.
#[derive(Clone, Debug, Default)]
pub struct Restored {
    pub step: u64,
    pub time: f64,
    pub need_rebuild: bool,
    pub n_rebuilds: u64,
    pub wall_point: Vec<V3>,
    pub wall_vel: Vec<V3>,
    pub wall_ref: Vec<V3>,
    /// Owned particles at their current positions.
    pub particles: Particles,
    /// Their positions at the last neighbour rebuild (aligned with `particles`).
    pub reference: Vec<V3>,
    /// Contacts (key, history) touching an owned particle.
    pub contacts: Vec<((u64, u64), ContactState)>,
    pub wall_contacts: Vec<((u64, u64), ContactState)>,
    /// Keys of the pairs that were touching at the last rebuild (they lead the pair order).
    pub leading: Vec<(u64, u64)>,
    /// Engine state (text; empty = none).
    pub engines: String,
}
