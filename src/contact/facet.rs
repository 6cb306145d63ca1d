//! Sphere–triangle contacts of the meshes (issue 21), in the wall pair list: a facet's pair key
//! is (gid, n_walls + facet index), so that migration and checkpoints carry its history as a
//! wall contact's. The list is kept in key order ([`FacetPairs::build`]), so the facet pairs
//! of one sphere with one mesh form a contiguous *group*, which one task runs in full:
//!
//! 1. geometry of every pair (closest point, feature: `mesh::geom`, Ericson §5.1.5);
//! 2. **one contact per sphere per smooth surface**: among the group's touching pairs, an
//!    edge or vertex contact whose closest point lies in the plane of a triangle with a face
//!    contact is dropped (it is the face's own boundary: a coplanar seam, the rim of a convex
//!    bend), and of contacts whose closest points coincide (a shared edge or vertex reached
//!    from several triangles) only the first in facet order is kept — the rule of Hu et al.
//!    and of LIGGGHTS' inactive edges/corners (`surface_mesh_I.h`: edges between coplanar
//!    neighbours do not collide), stated on the contact points instead of a precomputed
//!    topology, so unwelded STL triangles need no vertex matching;
//! 3. **history across triangles**: a contact kept this step that was not in contact the step
//!    before takes the shear history of a pair of its group that was in contact and is not
//!    any more — on the same smooth surface: last normal within 30° of the new one and contact
//!    points less than a radius apart (the one whose normal is closest) — so a sphere rolling
//!    or sliding over a seam or a bend keeps its shear spring (LIGGGHTS copies the history to
//!    the neighbour triangle the same way), while a sphere leaving one wall of a corner for the
//!    other starts afresh, as with plane walls;
//! 4. the frictional law of the scene on the stored history (`FrictLaw::apply`, as plane
//!    walls; the mesh is particle 1, mixed as a wall: `wall_phys`), with the wall velocity
//!    of the contact point v + ω × (q − centre) and the mesh's spin in the twist and rolling
//!    terms.
//!
//! No allocation, lock or hash look-up per contact: the per-pair scratch ([`Hit`]) is sized at
//! the rebuild.

use super::geom as cgeom;
use super::store::{FrictState, PairList, PairWork, Shared};
use crate::forces::SlotWriter;
use crate::material::MixTable;
use crate::mesh::geom::{sphere_contact, Feature};
use crate::mesh::MeshSet;
use crate::particles::Particles;
use crate::V3;
use rayon::prelude::*;

/// Geometry of one sphere–facet pair at the current step.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hit {
    /// Closest point of the triangle (the contact point).
    pub q: V3,
    /// Unit normal from the triangle to the sphere's centre.
    pub n: V3,
    /// u_N = distance − r (negative in overlap).
    pub u_n: f64,
    pub feature: Feature,
    /// The pair is a contact this step (after the one-contact rules).
    pub keep: bool,
    /// The pair was a contact the step before.
    was: bool,
}

/// Contact points within this fraction of the sphere's radius coincide (and an edge/vertex
/// contact this close to a face contact's plane lies in it).
const SAME_POINT: f64 = 1e-6;

/// A history passes between contacts whose normals make less than 30° (cos 30°).
const SAME_SURFACE_COS: f64 = 0.866_025_403_784_438_6;

/// The facet groups of the wall pair list and the per-pair scratch.
#[derive(Clone, Debug, Default)]
pub struct FacetPairs {
    /// Pair ranges [a, b) of one sphere's facet pairs with one mesh.
    groups: Vec<(u32, u32)>,
    /// Per wall pair (facet pairs only meaningful): geometry of the last step.
    pub hit: Vec<Hit>,
    /// Scratch of [`Self::build`]: the key order of the pairs.
    order: Vec<u32>,
}

impl FacetPairs {
    /// At a rebuild, after the wall pairs' merge: put the wall pair list in key order (a
    /// sphere's pairs together, facets after planes, in facet order) and find the groups.
    /// Nothing to do without meshes (plane walls keep the merge's order and bits).
    pub fn build(&mut self, pairs: &mut PairList, n_walls: usize, meshes: &MeshSet) {
        self.groups.clear();
        if meshes.is_empty() {
            return;
        }
        if !pairs.key.is_sorted() {
            self.order.clear();
            self.order.extend(0..pairs.len() as u32);
            self.order.sort_unstable_by_key(|&k| pairs.key[k as usize]);
            pairs.permute(&self.order);
        }
        self.hit.clear();
        self.hit.resize(pairs.len(), Hit::default());
        let mesh_of = |k: usize| meshes.mesh_of[pairs.j[k] as usize - n_walls];
        let mut k = 0;
        while k < pairs.len() {
            if (pairs.j[k] as usize) < n_walls {
                k += 1;
                continue;
            }
            let (a, i, m) = (k, pairs.i[k], mesh_of(k));
            while k < pairs.len() && pairs.i[k] == i && mesh_of(k) == m {
                k += 1;
            }
            self.groups.push((a as u32, k as u32));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

/// The facet pairs of one step (after the plane walls' loop, which skips them). `slots[k]`:
/// the wall slot of pair k.
#[allow(clippy::too_many_arguments)]
pub fn facet_pairs(
    pairs: &mut PairList,
    fp: &mut FacetPairs,
    slots: &[u32],
    out: SlotWriter,
    ps: &Particles,
    meshes: &MeshSet,
    n_walls: usize,
    mix: &MixTable,
    dt: f64,
) {
    if fp.groups.is_empty() {
        return;
    }
    // the moment histories (EPSD; without it zeros that nothing reads)
    debug_assert_eq!(
        pairs.roll.len(),
        pairs.len(),
        "PairList::roll is sized with the list"
    );
    let (act, st, roll, hit) = (
        Shared::new(&mut pairs.active),
        Shared::new(&mut pairs.state),
        Shared::new(&mut pairs.roll),
        Shared::new(&mut fp.hit),
    );
    // energy tracking's per-pair work (`PairList::work`; empty when not tracking)
    let work = Shared::new(&mut pairs.work);
    let j = &pairs.j[..];
    let i_of = &pairs.i[..];
    fp.groups.par_chunks(256).for_each(|gs| {
        for &(a, b) in gs {
            let (a, n) = (a as usize, (b - a) as usize);
            // SAFETY: groups are disjoint pair ranges, each run by one task.
            let g = unsafe {
                Group {
                    act: act.slice(a, n),
                    st: st.slice(a, n),
                    roll: roll.slice(a, n),
                    hit: hit.slice(a, n),
                    work: match work.len() {
                        0 => &mut [],
                        _ => work.slice(a, n),
                    },
                    tri: &j[a..a + n],
                    slots: &slots[a..a + n],
                }
            };
            g.run(i_of[a] as usize, ps, meshes, n_walls, mix, dt, out);
        }
    });
}

/// One sphere's pairs with one mesh.
struct Group<'a> {
    act: &'a mut [bool],
    st: &'a mut [FrictState],
    /// Rolling-moment histories (EPSD; zeros otherwise).
    roll: &'a mut [V3],
    hit: &'a mut [Hit],
    /// Energy tracking's per-pair work (empty when not tracking).
    work: &'a mut [PairWork],
    tri: &'a [u32],
    slots: &'a [u32],
}

impl Group<'_> {
    #[allow(clippy::too_many_arguments)]
    fn run(
        mut self,
        i: usize,
        ps: &Particles,
        meshes: &MeshSet,
        n_walls: usize,
        mix: &MixTable,
        dt: f64,
        out: SlotWriter,
    ) {
        let (c, r) = (ps.pos[i], ps.radius[i]);
        for (k, h) in self.hit.iter_mut().enumerate() {
            let t = self.tri[k] as usize - n_walls;
            let (v, nf) = (&meshes.tri[t], meshes.normal[t]);
            let ht = (c - v[0]).dot(&nf);
            if ht.abs() > r {
                // apart: the plane is nearer than the triangle (most candidates); the foot on
                // the plane stands in for the contact point of a history donor
                *h = Hit {
                    q: c - nf * ht,
                    n: if ht < 0.0 { -nf } else { nf },
                    u_n: ht.abs() - r,
                    feature: Feature::Face,
                    keep: false,
                    was: self.act[k],
                };
                continue;
            }
            let (q, n, u_n, feature) = sphere_contact(c, r, v[0], v[1], v[2], nf);
            *h = Hit {
                q,
                n,
                u_n,
                feature,
                keep: u_n <= 0.0,
                was: self.act[k],
            };
        }
        self.one_contact_per_surface(meshes, n_walls, r);
        self.carry_histories(r);
        let m = meshes.mesh_of[self.tri[0] as usize - n_walls] as usize;
        for k in 0..self.hit.len() {
            let h = self.hit[k];
            if !h.keep {
                super::end_wall_contact(&mut self.act[k], &mut self.roll[k]);
                if h.was {
                    out.wall(self.slots[k], V3::zeros(), V3::zeros()); // its slot held a force
                }
                continue;
            }
            if !self.act[k] {
                let pm = mix.get(meshes.meshes[m].material, ps.material[i]);
                let (a, s, m_roll) = (&mut self.act[k], &mut self.st[k], &mut self.roll[k]);
                super::start_wall_contact(a, s, m_roll, pm, ps, i, h.n);
            }
            let (f, t2) = facet_law(
                &mut self.st[k],
                &mut self.roll[k],
                &h,
                ps,
                i,
                meshes,
                m,
                mix,
                dt,
                self.work.get_mut(k),
            );
            out.wall(self.slots[k], f, t2);
        }
    }

    /// Step 2 of the module doc: drop edge/vertex contacts in the plane of a face contact,
    /// then later duplicates of a contact point.
    fn one_contact_per_surface(&mut self, meshes: &MeshSet, n_walls: usize, r: f64) {
        let tol = SAME_POINT * r;
        let hit = &mut *self.hit;
        for k in 0..hit.len() {
            if !hit[k].keep || hit[k].feature == Feature::Face {
                continue;
            }
            let in_face_plane = (0..hit.len()).any(|f| {
                let t = self.tri[f] as usize - n_walls;
                hit[f].keep
                    && hit[f].feature == Feature::Face
                    && (hit[k].q - meshes.tri[t][0]).dot(&meshes.normal[t]).abs() <= tol
            });
            if in_face_plane {
                hit[k].keep = false;
            }
        }
        for k in 1..hit.len() {
            if hit[k].keep && (0..k).any(|l| hit[l].keep && (hit[k].q - hit[l].q).norm() <= tol) {
                hit[k].keep = false;
            }
        }
    }

    /// Step 3 of the module doc: a new contact inherits the history of a contact of the group
    /// that ended this step on the same smooth surface (normals within 30°, contact points
    /// within `r`; the one whose last normal is closest to the new normal); each ended contact
    /// gives its history once.
    fn carry_histories(&mut self, r: f64) {
        for k in 0..self.hit.len() {
            let h = self.hit[k];
            if !h.keep || h.was {
                continue;
            }
            let mut best: Option<(f64, usize)> = None;
            for d in 0..self.hit.len() {
                let dh = &self.hit[d];
                if dh.was && !dh.keep && self.act[d] {
                    let c = self.st[d].n_old.dot(&h.n);
                    let near = (dh.q - h.q).norm_squared() < r * r;
                    if near && c >= SAME_SURFACE_COS && best.is_none_or(|(b, _)| c > b) {
                        best = Some((c, d));
                    }
                }
            }
            if let Some((_, d)) = best {
                self.st[k] = self.st[d];
                self.roll[k] = self.roll[d];
                self.act[k] = true;
                self.act[d] = false; // given away (its slot is zeroed as it is not kept)
            }
        }
    }
}

/// The scene's frictional law on one facet contact: the force on the mesh and the torque on
/// the sphere (as `wall_pair`, with the wall velocity and spin of the contact point; R* = r,
/// the mesh a sphere of infinite radius; the EPSD moment history `m_roll`).
#[allow(clippy::too_many_arguments)]
#[inline]
fn facet_law(
    st: &mut FrictState,
    m_roll: &mut V3,
    h: &Hit,
    ps: &Particles,
    i: usize,
    meshes: &MeshSet,
    m: usize,
    mix: &MixTable,
    dt: f64,
    work: Option<&mut PairWork>,
) -> (V3, V3) {
    let (n, r) = (h.n, ps.radius[i]);
    let (w1, w2) = (meshes.angvel(m), ps.angvel[i]);
    let v_wall = meshes.point_velocity(m, h.q);
    let v12 = cgeom::relative_velocity(v_wall, V3::zeros(), 0.0, ps.vel[i], w2, r, n);
    let energy = work.map(|w| (-v_wall, w));
    super::wall_contact(st, m_roll, n, h.u_n, v12, (w1, w2), ps, i, mix, dt, energy)
}
