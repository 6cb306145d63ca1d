//! The communicator of a run: either a single process (`Serial`, unit tests and one-rank runs
//! without `mpirun`) or real MPI through rsmpi on a Cartesian communicator. Everything the rest
//! of the code needs from MPI is a method here — neighbour exchange along one axis, reductions,
//! gathers to rank 0, a personalised all-to-all, abort — so physics modules never see MPI
//! (ARCHITECTURE.md "Modules").
//!
//! Messages are `f64` slices (gids and integers travel as bit patterns, see `halo.rs`), so one
//! MPI datatype serves every message and buffers are reused across steps.

use mpi::collective::SystemOperation;
use mpi::datatype::{Partition, PartitionMut};
use mpi::topology::{CartesianCommunicator, Communicator, SimpleCommunicator};
use mpi::traits::*;
use mpi::Count;

/// Tag of messages travelling towards higher coordinates (received from the lower neighbour).
const TAG_UP: i32 = 11;
/// Tag of messages travelling towards lower coordinates.
const TAG_DOWN: i32 = 12;

pub enum Comm {
    /// One process, no MPI calls: a periodic axis is its own neighbour.
    Serial,
    Mpi(MpiComm),
}

pub struct MpiComm {
    world: SimpleCommunicator,
    cart: CartesianCommunicator,
    /// Lower and upper neighbour rank (in `cart`) along each axis; `None` at an open boundary.
    nbr: [[Option<i32>; 2]; 3],
    rank: i32,
    coords: [usize; 3],
}

// SAFETY: MPI is initialised with `Threading::Serialized` (mpi_env.rs), and the code calls MPI
// from one thread at a time (the thread running the step loop); the communicator handles are
// plain process-wide identifiers that may move between threads.
unsafe impl Send for Comm {}
unsafe impl Sync for Comm {}

impl Comm {
    /// The world communicator arranged as a `dims` Cartesian grid (ranks not reordered, so the
    /// layout is the same on every machine). Must be called after MPI initialisation, by every
    /// rank, with the same arguments.
    pub fn cartesian(dims: [usize; 3], periodic: [bool; 3]) -> Option<Comm> {
        let world = SimpleCommunicator::world();
        let d: Vec<Count> = dims.iter().map(|&x| x as Count).collect();
        let cart = world.create_cartesian_communicator(&d, &periodic, false)?;
        let layout = cart.get_layout();
        let mut nbr = [[None; 2]; 3];
        for (a, n) in nbr.iter_mut().enumerate() {
            let (lo, hi) = cart.shift(a as Count, 1);
            *n = [lo, hi];
        }
        let coords = [
            layout.coords[0] as usize,
            layout.coords[1] as usize,
            layout.coords[2] as usize,
        ];
        let rank = cart.rank();
        Some(Comm::Mpi(MpiComm {
            world,
            cart,
            nbr,
            rank,
            coords,
        }))
    }

    /// Another Cartesian grid over the same processes (collective: every rank calls it with the
    /// same arguments), e.g. for a set-up step decomposed differently from the run (a dense
    /// packing over its own shape). Ranks are not reordered, so rank r is the same process in
    /// both. One process: itself, for a 1×1×1 grid only.
    pub fn regrid(&self, dims: [usize; 3], periodic: [bool; 3]) -> Option<Comm> {
        match self {
            Comm::Serial => (dims == [1; 3]).then_some(Comm::Serial),
            Comm::Mpi(_) => Comm::cartesian(dims, periodic),
        }
    }

    /// Number of ranks in the world communicator (1 when MPI is not initialised: call only
    /// after `MpiEnv::init`).
    pub fn world_size() -> usize {
        SimpleCommunicator::world().size() as usize
    }

    /// This process' rank in the world communicator.
    pub fn world_rank() -> usize {
        SimpleCommunicator::world().rank() as usize
    }

    /// True on every rank if `x` is true on some rank, over the world communicator: for the
    /// start-up checks that must agree before a run's communicator exists (collective: every
    /// rank calls it at the same point, after `MpiEnv::init`).
    pub fn world_any(x: bool) -> bool {
        Self::world_max_u64(x as u64) > 0
    }

    /// Global minimum of an integer over the world communicator (start-up; collective).
    pub fn world_min_u64(x: u64) -> u64 {
        u64::MAX - Self::world_max_u64(u64::MAX - x)
    }

    fn world_max_u64(x: u64) -> u64 {
        let world = SimpleCommunicator::world();
        if world.size() == 1 {
            return x;
        }
        let mut v = [x];
        reduce_in_place(&world, &mut v, SystemOperation::max());
        v[0]
    }

    /// Number of world ranks on this rank's node: those that share memory with it
    /// (`MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)`, whatever the launcher; start-up,
    /// collective).
    pub fn world_node_size() -> usize {
        let world = SimpleCommunicator::world();
        if world.size() == 1 {
            return 1;
        }
        world.split_shared(world.rank()).size() as usize
    }

    pub fn rank(&self) -> usize {
        match self {
            Comm::Serial => 0,
            Comm::Mpi(m) => m.rank as usize,
        }
    }

    pub fn size(&self) -> usize {
        match self {
            Comm::Serial => 1,
            Comm::Mpi(m) => m.cart.size() as usize,
        }
    }

    pub fn is_root(&self) -> bool {
        self.rank() == 0
    }

    /// The rank at grid coordinates `c` (0 without MPI): row-major, the order MPI_Cart_rank
    /// gives a grid created without reordering (rsmpi's `coordinates_to_rank` refuses a zero
    /// coordinate on an open axis, a bug).
    pub fn rank_at(&self, c: [usize; 3]) -> usize {
        match self {
            Comm::Serial => 0,
            Comm::Mpi(m) => {
                let d = m.cart.get_layout().dims;
                (c[0] * d[1] as usize + c[1]) * d[2] as usize + c[2]
            }
        }
    }

    /// This rank's coordinates in the rank grid.
    pub fn coords(&self) -> [usize; 3] {
        match self {
            Comm::Serial => [0; 3],
            Comm::Mpi(m) => m.coords,
        }
    }

    /// Exchange with both neighbours along `axis`: `down` goes to the lower neighbour, `up` to
    /// the upper one; `from_lo` receives what the lower neighbour sent up, `from_hi` what the
    /// upper one sent down. `has` says which neighbours exist ([lower, upper]); a missing
    /// neighbour (open boundary) leaves its receive buffer empty. With one rank along a
    /// periodic axis the rank is its own neighbour. Non-blocking sends and receives; the
    /// buffers keep their capacity across calls.
    pub fn exchange(
        &self,
        axis: usize,
        has: [bool; 2],
        down: &[f64],
        up: &[f64],
        from_lo: &mut Vec<f64>,
        from_hi: &mut Vec<f64>,
    ) {
        from_lo.clear();
        from_hi.clear();
        match self {
            Comm::Serial => {
                // Single rank, periodic axis: my lower neighbour is me, so what I receive from
                // below is what I sent up.
                if has[0] {
                    from_lo.extend_from_slice(up);
                }
                if has[1] {
                    from_hi.extend_from_slice(down);
                }
            }
            Comm::Mpi(m) => m.exchange(axis, down, up, from_lo, from_hi),
        }
    }

    /// [`Self::exchange`] when both sides know the message sizes (the ghost refresh: the send
    /// and receive lists are fixed between rebuilds): `from_lo` and `from_hi` come sized to what
    /// the neighbours send, and the size messages of `exchange` are skipped — one round of
    /// messages per axis instead of two (issue 19, "a lean exchange").
    pub fn exchange_sized(
        &self,
        axis: usize,
        has: [bool; 2],
        down: &[f64],
        up: &[f64],
        from_lo: &mut [f64],
        from_hi: &mut [f64],
    ) {
        match self {
            Comm::Serial => {
                if has[0] {
                    from_lo.copy_from_slice(up);
                }
                if has[1] {
                    from_hi.copy_from_slice(down);
                }
            }
            Comm::Mpi(m) => {
                let [lo, hi] = m.nbr[axis];
                let at = |r: i32| m.cart.process_at_rank(r);
                mpi::request::scope(|scope| {
                    let r1 =
                        lo.map(|r| at(r).immediate_receive_into_with_tag(scope, from_lo, TAG_UP));
                    let r2 =
                        hi.map(|r| at(r).immediate_receive_into_with_tag(scope, from_hi, TAG_DOWN));
                    let s1 = lo.map(|r| at(r).immediate_send_with_tag(scope, down, TAG_DOWN));
                    let s2 = hi.map(|r| at(r).immediate_send_with_tag(scope, up, TAG_UP));
                    r1.map(|r| r.wait());
                    r2.map(|r| r.wait());
                    s1.map(|r| r.wait());
                    s2.map(|r| r.wait());
                });
            }
        }
    }

    /// Global maximum.
    pub fn max_f64(&self, x: f64) -> f64 {
        self.reduce_one(x, SystemOperation::max())
    }

    /// One value reduced over all ranks with `op`.
    fn reduce_one<T: Equivalence + Copy + Default>(&self, x: T, op: SystemOperation) -> T {
        let mut v = [x];
        if let Comm::Mpi(m) = self {
            reduce_in_place(&m.world, &mut v, op);
        }
        v[0]
    }

    /// Element-wise global maximum, in place (one message for several flags or maxima).
    pub fn max_f64s(&self, v: &mut [f64]) {
        if let Comm::Mpi(m) = self {
            reduce_in_place(&m.world, v, SystemOperation::max());
        }
    }

    /// Global minimum.
    pub fn min_f64(&self, x: f64) -> f64 {
        -self.max_f64(-x)
    }

    /// Element-wise global sum, in place (rank order of summation is MPI's: not reproducible
    /// across rank counts; see `ExactSum` for that).
    pub fn sum_f64s(&self, v: &mut [f64]) {
        if let Comm::Mpi(m) = self {
            reduce_in_place(&m.world, v, SystemOperation::sum());
        }
    }

    /// Element-wise global sum of integers, in place (exact).
    pub fn sum_i64s(&self, v: &mut [i64]) {
        if let Comm::Mpi(m) = self {
            reduce_in_place(&m.world, v, SystemOperation::sum());
        }
    }

    /// Global exact sums, in place: every rank gets the same bits whatever the rank count
    /// (the limbs are integers; a NaN/inf anywhere makes the sum NaN/inf everywhere).
    pub fn sum_exact(&self, sums: &mut [super::exact::ExactSum]) {
        use super::exact::LIMBS;
        if let Comm::Serial = self {
            return;
        }
        // One integer allreduce: every sum's limbs, then how many ranks hold a special value
        // (NaN/inf) per sum; the specials travel only when some rank has one. Small (per-step)
        // reductions are staged on the stack.
        let n = sums.len() * (LIMBS + 1);
        let mut stack = [0i64; 4 * (LIMBS + 1)];
        let mut heap = Vec::new();
        let flat: &mut [i64] = if n <= stack.len() {
            &mut stack[..n]
        } else {
            heap.resize(n, 0);
            &mut heap
        };
        let (limbs, specials) = flat.split_at_mut(sums.len() * LIMBS);
        for (k, s) in sums.iter_mut().enumerate() {
            limbs[k * LIMBS..(k + 1) * LIMBS].copy_from_slice(s.limbs_mut());
            specials[k] = s.special().is_some() as i64;
        }
        self.sum_i64s(flat);
        let (limbs, specials) = flat.split_at(sums.len() * LIMBS);
        if specials.iter().any(|&c| c > 0) {
            let mut sp: Vec<f64> = sums.iter().map(|s| s.special().unwrap_or(0.0)).collect();
            self.sum_f64s(&mut sp);
            for (s, (&v, &c)) in sums.iter_mut().zip(sp.iter().zip(specials)) {
                s.set_special((c > 0).then_some(v));
            }
        }
        for (k, s) in sums.iter_mut().enumerate() {
            s.limbs_mut()
                .copy_from_slice(&limbs[k * LIMBS..(k + 1) * LIMBS]);
            s.normalise();
        }
    }

    pub fn sum_u64(&self, x: u64) -> u64 {
        let mut v = [x as i64];
        self.sum_i64s(&mut v);
        v[0] as u64
    }

    /// Global minimum of an integer (exact).
    pub fn min_u64(&self, x: u64) -> u64 {
        self.reduce_one(x, SystemOperation::min())
    }

    /// Global maximum of an integer (exact).
    pub fn max_u64(&self, x: u64) -> u64 {
        self.reduce_one(x, SystemOperation::max())
    }

    /// Exclusive prefix sum over ranks (0 on rank 0).
    pub fn exscan_u64(&self, x: u64) -> u64 {
        match self {
            Comm::Serial => 0,
            Comm::Mpi(m) => {
                let mut y: u64 = 0;
                m.world
                    .exclusive_scan_into(&x, &mut y, SystemOperation::sum());
                if m.rank == 0 {
                    0
                } else {
                    y
                }
            }
        }
    }

    /// True on every rank if `x` is true on some rank.
    pub fn any(&self, x: bool) -> bool {
        self.max_f64(x as u8 as f64) > 0.0
    }

    /// Turn a result that may have failed on some ranks only into one every rank agrees on
    /// (one reduction, and one broadcast when something failed): `Ok` everywhere if no rank
    /// failed, else [`Error::Agreed`] everywhere, with the message and exit code of the lowest
    /// failing rank. Every rank of the communicator must call it at the same point. A single
    /// process returns its result unchanged.
    pub fn agree<T>(&self, local: crate::error::Result<T>) -> crate::error::Result<T> {
        use crate::error::Error;
        let Comm::Mpi(m) = self else {
            return local;
        };
        let me = if local.is_err() {
            self.rank() as u64
        } else {
            u64::MAX
        };
        let first = self.min_u64(me);
        if first == u64::MAX {
            return local;
        }
        let (code, mut msg) = match &local {
            Err(e) if first == self.rank() as u64 => (e.exit_code(), e.to_string().into_bytes()),
            _ => (0, Vec::new()),
        };
        let root = m.world.process_at_rank(first as i32);
        let mut c = code as i64;
        root.broadcast_into(&mut c);
        let mut n = msg.len() as u64;
        root.broadcast_into(&mut n);
        msg.resize(n as usize, 0);
        root.broadcast_into(&mut msg[..]);
        Err(Error::Agreed {
            code: c as i32,
            msg: String::from_utf8_lossy(&msg).into_owned(),
        })
    }

    /// Every rank's `v` (the same length on every rank), concatenated in rank order.
    pub fn all_gather_u64s(&self, v: &[u64]) -> Vec<u64> {
        match self {
            Comm::Serial => v.to_vec(),
            Comm::Mpi(m) => {
                let mut out = vec![0u64; v.len() * m.world.size() as usize];
                m.world.all_gather_into(v, &mut out[..]);
                out
            }
        }
    }

    /// Every rank's `v` (any length per rank), concatenated in rank order: the lengths are
    /// gathered first, then every list padded to the longest (two all-gathers; for the short
    /// lists of the flow engines, `engines/`).
    pub fn all_gather_varlen_u64s(&self, v: &[u64]) -> Vec<u64> {
        if let Comm::Serial = self {
            return v.to_vec();
        }
        let lens = self.all_gather_u64s(&[v.len() as u64]);
        let longest = lens.iter().copied().max().unwrap_or(0) as usize;
        if longest == 0 {
            return Vec::new();
        }
        let mut padded = v.to_vec();
        padded.resize(longest, 0);
        let all = self.all_gather_u64s(&padded);
        all.chunks(longest)
            .zip(&lens)
            .flat_map(|(c, &n)| c[..n as usize].iter().copied())
            .collect()
    }

    /// Census of global ids spread over the ranks (distributed: each gid is sent to the rank
    /// `gid mod P`, O(owned + wanted) per rank): returns, the same on every rank, the smallest
    /// gid owned by more than one rank (or twice by one), and the smallest gid in some rank's
    /// `wanted` list that no rank owns. Used to validate a checkpoint on restart.
    pub fn gid_census(&self, owned: &[u64], wanted: &[u64]) -> (Option<u64>, Option<u64>) {
        let p = self.size();
        // records: (gid bits, 0 = owned / 1 = wanted), counting-sorted by destination rank
        let mut counts = vec![0usize; p];
        for &g in owned.iter().chain(wanted) {
            counts[(g % p as u64) as usize] += 2;
        }
        let mut at = exclusive_sums(&counts);
        let mut send = vec![0.0; 2 * (owned.len() + wanted.len())];
        for (kind, list) in [(0.0, owned), (1.0, wanted)] {
            for &g in list {
                let d = (g % p as u64) as usize;
                send[at[d]] = f64::from_bits(g);
                send[at[d] + 1] = kind;
                at[d] += 2;
            }
        }
        let mut recv = Vec::new();
        self.all_to_all_f64s(&send, &counts, &mut recv);
        let mut mine: Vec<u64> = Vec::new();
        let mut asked: Vec<u64> = Vec::new();
        for r in recv.chunks_exact(2) {
            if r[1] == 0.0 {
                mine.push(r[0].to_bits());
            } else {
                asked.push(r[0].to_bits());
            }
        }
        mine.sort_unstable();
        let dup = mine.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]);
        let missing = asked
            .iter()
            .filter(|g| mine.binary_search(g).is_err())
            .min()
            .copied();
        let some = |x: Option<u64>| self.min_u64(x.unwrap_or(u64::MAX));
        let (dup, missing) = (some(dup), some(missing));
        (
            (dup != u64::MAX).then_some(dup),
            (missing != u64::MAX).then_some(missing),
        )
    }

    /// Gather variable-length slices on rank 0, concatenated in rank order (None elsewhere).
    pub fn gather_f64s(&self, v: &[f64]) -> Option<Vec<f64>> {
        match self {
            Comm::Serial => Some(v.to_vec()),
            Comm::Mpi(m) => {
                let root = m.world.process_at_rank(0);
                let n = v.len() as Count;
                if m.rank == 0 {
                    let mut counts = vec![0 as Count; m.world.size() as usize];
                    root.gather_into_root(&n, &mut counts[..]);
                    let displs: Vec<Count> = counts
                        .iter()
                        .scan(0, |acc, &c| {
                            let d = *acc;
                            *acc += c;
                            Some(d)
                        })
                        .collect();
                    let total: Count = counts.iter().sum();
                    let mut buf = vec![0.0; total as usize];
                    {
                        let mut part = PartitionMut::new(&mut buf[..], counts, &displs[..]);
                        root.gather_varcount_into_root(v, &mut part);
                    }
                    Some(buf)
                } else {
                    root.gather_into(&n);
                    root.gather_varcount_into(v);
                    None
                }
            }
        }
    }

    /// Personalised all-to-all with variable counts: `send` holds the messages for ranks 0, 1,
    /// … back to back, `counts[r]` values for rank r; `recv` gets the messages from ranks 0, 1,
    /// … concatenated (its capacity is kept). Serial: `recv` is a copy of `send`.
    pub fn all_to_all_f64s(&self, send: &[f64], counts: &[usize], recv: &mut Vec<f64>) {
        recv.clear();
        match self {
            Comm::Serial => recv.extend_from_slice(send),
            Comm::Mpi(m) => {
                let p = m.world.size() as usize;
                assert_eq!(counts.len(), p, "all_to_all_f64s: one count per rank");
                let count = |c: usize| {
                    Count::try_from(c).expect("all_to_all_f64s: message over 2³¹ values")
                };
                let sc: Vec<Count> = counts.iter().map(|&c| count(c)).collect();
                let mut rc = vec![0 as Count; p];
                m.world.all_to_all_into(&sc[..], &mut rc[..]);
                let displs = |c: &[Count]| -> Vec<Count> {
                    c.iter()
                        .scan(0usize, |acc, &n| {
                            let d = *acc;
                            *acc += n as usize;
                            Some(count(d))
                        })
                        .collect()
                };
                let (sd, rd) = (displs(&sc), displs(&rc));
                recv.resize(rc.iter().map(|&c| c as usize).sum(), 0.0);
                let part = Partition::new(send, &sc[..], &sd[..]);
                let mut rpart = PartitionMut::new(&mut recv[..], &rc[..], &rd[..]);
                m.world.all_to_all_varcount_into(&part, &mut rpart);
            }
        }
    }

    /// Broadcast a string from rank 0 (e.g. an error message decided there).
    pub fn broadcast_bytes(&self, bytes: &mut Vec<u8>) {
        if let Comm::Mpi(m) = self {
            let root = m.world.process_at_rank(0);
            let mut n = bytes.len() as u64;
            root.broadcast_into(&mut n);
            bytes.resize(n as usize, 0);
            root.broadcast_into(&mut bytes[..]);
        }
    }

    pub fn barrier(&self) {
        if let Comm::Mpi(m) = self {
            m.world.barrier();
        }
    }

    /// Abort every rank of the job (a rank that failed alone must not leave the others hanging
    /// in a collective).
    pub fn abort(&self, code: i32) -> ! {
        match self {
            Comm::Serial => std::process::exit(code),
            Comm::Mpi(m) => m.world.abort(code),
        }
    }

    /// The raw world communicator handle for MPI-IO in `io/` (parallel HDF5 duplicates it);
    /// `None` without MPI.
    pub fn raw_world(&self) -> Option<mpi::ffi::MPI_Comm> {
        match self {
            Comm::Serial => None,
            Comm::Mpi(m) => Some(m.world.as_raw()),
        }
    }
}

impl MpiComm {
    fn exchange(
        &self,
        axis: usize,
        down: &[f64],
        up: &[f64],
        from_lo: &mut Vec<f64>,
        from_hi: &mut Vec<f64>,
    ) {
        let [lo, hi] = self.nbr[axis];
        let at = |r: i32| self.cart.process_at_rank(r);
        // Sizes first, then the payloads; both phases non-blocking, no allocation.
        let (n_down, n_up) = (down.len() as u64, up.len() as u64);
        let (mut m_lo, mut m_hi) = (0u64, 0u64);
        mpi::request::scope(|scope| {
            let r1 = lo.map(|r| at(r).immediate_receive_into_with_tag(scope, &mut m_lo, TAG_UP));
            let r2 = hi.map(|r| at(r).immediate_receive_into_with_tag(scope, &mut m_hi, TAG_DOWN));
            let s1 = lo.map(|r| at(r).immediate_send_with_tag(scope, &n_down, TAG_DOWN));
            let s2 = hi.map(|r| at(r).immediate_send_with_tag(scope, &n_up, TAG_UP));
            r1.map(|r| r.wait());
            r2.map(|r| r.wait());
            s1.map(|r| r.wait());
            s2.map(|r| r.wait());
        });
        from_lo.resize(m_lo as usize, 0.0);
        from_hi.resize(m_hi as usize, 0.0);
        mpi::request::scope(|scope| {
            let (bl, bh) = (&mut from_lo[..], &mut from_hi[..]);
            let r1 = lo.map(|r| at(r).immediate_receive_into_with_tag(scope, bl, TAG_UP));
            let r2 = hi.map(|r| at(r).immediate_receive_into_with_tag(scope, bh, TAG_DOWN));
            let s1 = lo.map(|r| at(r).immediate_send_with_tag(scope, down, TAG_DOWN));
            let s2 = hi.map(|r| at(r).immediate_send_with_tag(scope, up, TAG_UP));
            r1.map(|r| r.wait());
            r2.map(|r| r.wait());
            s1.map(|r| r.wait());
            s2.map(|r| r.wait());
        });
    }
}

/// Where each rank's message starts in a buffer of messages back to back: the exclusive
/// prefix sums of `counts` (counting sorts by destination rank).
pub fn exclusive_sums(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |acc, &c| {
            let d = *acc;
            *acc += c;
            Some(d)
        })
        .collect()
}

/// Allreduce `v` in place. MPI needs distinct send and receive buffers: small ones (the
/// per-step flags and exact sums) are staged on the stack, so the step loop does not allocate.
fn reduce_in_place<T>(world: &SimpleCommunicator, v: &mut [T], op: SystemOperation)
where
    T: Equivalence + Copy + Default,
{
    const STACK: usize = 4 * (super::exact::LIMBS + 1);
    if v.len() <= STACK {
        let mut send = [T::default(); STACK];
        send[..v.len()].copy_from_slice(v);
        world.all_reduce_into(&send[..v.len()], v, op);
    } else {
        let send = v.to_vec();
        world.all_reduce_into(&send[..], v, op);
    }
}
