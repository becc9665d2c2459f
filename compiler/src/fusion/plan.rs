//! Planning fusion on one block: Jittor's greedy edge contraction (§4.1)
//! over a petgraph DAG, with the rules that keep every group one loop nest.
//!
//! Cost model: a group boundary is crossed once per value and consuming
//! group, so `C = Σ w(v) × |{consumer groups of v other than v's own}|`,
//! with `w(v)` the bytes of `v` (each `?` dimension counted as
//! [`DYNAMIC_DIM_ESTIMATE`]). With one op per group this is Jittor's edge
//! sum (all byte counts saturate at `u64::MAX`, so no shape overflows the
//! model); counting a value once per group also rewards groups that read a
//! shared input together (sibling merges).
//!
//! Rule 2 holds in the plan; on the CPU, kernels it keeps apart that share
//! their rows are then run one block of rows at a time (`lower::rows`,
//! "row chains"), so a reduction's consumers read its input while it is
//! still in cache.
//!
//! jitc's rules past the paper's (`Options::contractions_apart`,
//! `meta-fuse{rules=jitc}`, which the compilers run):
//! - two groups that each hold a contraction, a reduce-add of a product of
//!   two reindexes, never merge as siblings. The CPU runs a contraction as
//!   register tiles of one output; the unrolled IndRNN's 16 input
//!   projections, siblings through the weight they share, became one loop
//!   nest of 16 outputs, 40 times slower than 16 tiled kernels;
//! - a sibling merge of two reindexes saves at most what the smaller one
//!   writes, not the whole shared value: two steps' rows of a batched
//!   contraction (`meta-batch`) are slices of one value, and merging them
//!   only made one step's kernel copy the other's row.
//!
//! Algorithm:
//! 1. nodes are the block's ops in order; edges are def-use pairs, with uses
//!    inside nested regions charged to the op that owns the region. Since
//!    a definition precedes its uses, block order is topological;
//! 2. candidates are producer→consumer edges between fusable ops, and pairs
//!    of fusable ops reading one value (siblings) with equal static
//!    domains; each saves the bytes of its value when merged;
//! 3. candidates are taken heaviest first (edges before siblings on ties,
//!    then program order). A merge is refused by rule 1 (a reindex never
//!    absorbs its producer), rule 2 (a reindex_reduce never absorbs its
//!    consumer), `stop_fuse`, the fan-out limit, the size limits, or rule
//!    3: a path between the two groups through a third one would make a
//!    cycle. Rules 1 and 2 are checked for every edge the merge would make
//!    internal, not only the candidate's. The size limits (jitc's, both
//!    rule sets) bound the merged group's ops ([`Options::max_ops`]) and
//!    its kernel's buffers ([`Options::max_buffers`]): the values read
//!    from outside it and the values it makes that something outside it
//!    reads, counted over its members only when a running bound (each
//!    member's reads and results) passes the limit;
//! 4. rule 3 is a depth-first search over group successor lists, pruned by
//!    a topological order of the groups: a group ordered after the target
//!    cannot reach it. Block position is not such an order once groups
//!    interleave (a path may enter a group at a late op and leave it from
//!    an early one), so the order is kept per group and repaired on every
//!    merge by Pearce and Kelly's method: between the two merged groups,
//!    the groups that reach the later one move before the merged group and
//!    the groups the earlier one reaches move after it, reusing their
//!    numbers. Union-find keeps groups, and successor and predecessor
//!    lists are merged small into large.

use petgraph::{graph::DiGraph, unionfind::UnionFind};

use std::collections::{HashMap, HashSet};

/// Bytes assumed for each `?` dimension when weighing an edge.
pub const DYNAMIC_DIM_ESTIMATE: u64 = 64;

/// Default for the fan-out limit: a value with more consumers stays
/// materialized (Jittor's default).
pub const DEFAULT_FANOUT_LIMIT: usize = 16;

/// Default for the most ops (splat constants aside) a group may hold.
/// LLVM's optimization and code generation grow faster than linearly with
/// a function's size: on one kernel of a chain of element-wise ops, each
/// with a scalar argument of its own, they took 3.3 s for 3,000 ops and
/// 13.7 s for 6,000 (every scalar is live across the loop). Cutting a
/// chain every 256 ops costs one store and one load per element for 256
/// ops of arithmetic.
pub const DEFAULT_MAX_OPS: usize = 256;

/// Default for the most buffers (arguments and results) a group's kernel
/// may take. A GPU kernel's parameters fit in 4 KiB before CUDA 12.1, 8
/// bytes a pointer: `ptxas` refused a kernel of 3,000 buffers. 128 take 1
/// KiB, which leaves room for the status record, the scratch memory and
/// the sizes of most dynamic dimensions (`lower::legal` checks the whole
/// count, and a kernel over it runs in the interpreter).
pub const DEFAULT_MAX_BUFFERS: usize = 128;

/// What an op is to the fuser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// `meta.reindex`: may only start a group.
    Reindex,
    /// `meta.reindex_reduce`: may only end a group.
    Reduce,
    /// `meta.unary`, `meta.binary`, `meta.ternary`.
    Elementwise,
    /// A splat `arith.constant` tensor, recomputed wherever it is used.
    Constant,
    /// Anything else: never fused.
    Opaque,
}

impl NodeKind {
    /// Whether ops of this kind go into groups.
    pub fn fusable(self) -> bool {
        self != Self::Opaque
    }
}

/// One op of the block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Its kind.
    pub kind: NodeKind,
    /// A readable label, e.g. `#3 meta.binary "add" : tensor<4xf32>`.
    pub label: String,
    /// The iteration domain it would bring to a group; `-1` is a dynamic
    /// extent. Empty for opaque ops.
    pub domain: Vec<i64>,
    /// Carries the `stop_fuse` attribute.
    pub stop_fuse: bool,
    /// A reduce-add of a product of two reindexes: the kernel its group
    /// becomes is a contraction, which the CPU runs as register tiles of
    /// one output (schedule rule 6).
    pub contraction: bool,
}

/// A value that fusable ops use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueUse {
    /// The node that defines it, if it is defined in the block.
    pub producer: Option<usize>,
    /// The nodes that use it, in block order, without repeats.
    pub consumers: Vec<usize>,
    /// Its size in bytes.
    pub bytes: u64,
}

/// Why an edge was not fused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    /// Rule 1: a reindex never fuses with its producer.
    Rule1,
    /// Rule 2: a reindex_reduce never fuses with its consumer.
    Rule2,
    /// Rule 3: the merge would create a cycle between groups.
    Rule3,
    /// One end carries `stop_fuse`.
    StopFuse,
    /// The value has more consumers than the fan-out limit.
    FanOut,
    /// One end is not a fusable op.
    NotFusable,
    /// The merged group would hold more than [`Options::max_ops`] ops.
    MaxOps,
    /// The merged group's kernel would take more than
    /// [`Options::max_buffers`] arguments and results.
    MaxBuffers,
}

impl Blocked {
    /// How `jitc explain` states the reason.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Rule1 => "rule 1: a reindex never fuses with its producer",
            Self::Rule2 => "rule 2: a reindex_reduce never fuses with its consumer",
            Self::Rule3 => "rule 3: fusing would create a cycle between groups",
            Self::StopFuse => "stop_fuse",
            Self::FanOut => "fan-out limit: the value stays materialized",
            Self::NotFusable => "not a fusable op",
            Self::MaxOps => "size limit: the kernel would hold more ops than meta-fuse's max-ops",
            Self::MaxBuffers => "size limit: the kernel would take more buffers than meta-fuse's max-buffers",
        }
    }
}

/// A producer→consumer edge and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edge {
    /// Producer node.
    pub from: usize,
    /// Consumer node.
    pub to: usize,
    /// Bytes of the value.
    pub bytes: u64,
    /// `None` when fused, else why not.
    pub blocked: Option<Blocked>,
}

/// The fuser's decision for one block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The block's ops.
    pub nodes: Vec<Node>,
    /// Producer→consumer edges in block order of the consumer.
    pub edges: Vec<Edge>,
    /// Groups of fusable nodes, each in block order, ordered by last node
    /// (the order their kernels run in).
    pub groups: Vec<Vec<usize>>,
    /// The group of each node, `None` for opaque ones.
    pub group_of: Vec<Option<usize>>,
    /// Merges of groups that read one value but have no edge between them.
    pub sibling_merges: Vec<(usize, usize, u64)>,
    /// Bytes crossing group boundaries before fusion (one op per group).
    pub cost_before: u64,
    /// Bytes crossing group boundaries after.
    pub cost_after: u64,
    /// Bytes entering and leaving each group (each value counted once).
    pub traffic: Vec<(u64, u64)>,
}

/// Fuser options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// A value with more consumers than this stays materialized.
    pub fanout_limit: usize,
    /// Whether nodes get readable labels (for `jitc explain`); printing
    /// types costs time the pass does not need to spend.
    pub labels: bool,
    /// jitc's rules past Jittor's (`meta-fuse{rules=jitc}`, what the
    /// compilers run): two groups that each hold a contraction (a
    /// reduce-add of a product of two reindexes) never merge as siblings,
    /// since the CPU runs a contraction as register tiles of one output,
    /// and a sibling merge of two reindexes weighs what the smaller one
    /// writes (see the module doc). Off, the plan is the paper's.
    pub contractions_apart: bool,
    /// A group holds at most this many ops, splat constants aside
    /// ([`DEFAULT_MAX_OPS`]).
    pub max_ops: usize,
    /// A group's kernel takes at most this many arguments and results
    /// together ([`DEFAULT_MAX_BUFFERS`]).
    pub max_buffers: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            fanout_limit: DEFAULT_FANOUT_LIMIT,
            labels: true,
            contractions_apart: false,
            max_ops: DEFAULT_MAX_OPS,
            max_buffers: DEFAULT_MAX_BUFFERS,
        }
    }
}

enum Candidate {
    Edge {
        value: usize,
        from: usize,
        to: usize,
    },
    /// `bytes`: what merging saves (the weight it is taken by).
    Sibling {
        value: usize,
        a: usize,
        b: usize,
        bytes: u64,
    },
}

struct Groups {
    sets: UnionFind<usize>,
    /// A topological order of the groups (per root): every edge between
    /// groups goes from a lower to a higher number.
    topo: Vec<usize>,
    successors: Vec<Vec<usize>>,
    predecessors: Vec<Vec<usize>>,
    /// Members that constrain merges: reindexes (no producer may join) and
    /// reductions (no consumer may join), per group root.
    guarded: Vec<Vec<usize>>,
    /// Members, per group root.
    members: Vec<Vec<usize>>,
    /// Members that are not splat constants, per group root.
    ops: Vec<usize>,
    /// An upper bound of the group's buffers, per root: the values its
    /// members read and make, counted with repeats.
    buffer_bound: Vec<usize>,
    seen: Vec<u32>,
    epoch: u32,
}

/// The values each node reads and makes, for counting a group's buffers.
struct Uses<'v> {
    values: &'v [ValueUse],
    reads: Vec<Vec<usize>>,
    makes: Vec<Vec<usize>>,
}

impl<'v> Uses<'v> {
    fn new(values: &'v [ValueUse], n: usize) -> Self {
        let mut reads = vec![Vec::new(); n];
        let mut makes = vec![Vec::new(); n];
        for (v, value) in values.iter().enumerate() {
            if let Some(p) = value.producer {
                makes[p].push(v);
            }
            for &c in &value.consumers {
                reads[c].push(v);
            }
        }
        Self { values, reads, makes }
    }
}

impl Groups {
    fn root(&self, node: usize) -> usize {
        self.sets.find(node)
    }

    /// Whether a path leaves group `a` and reaches group `b` through another
    /// group.
    fn indirect_path(&mut self, a: usize, b: usize) -> bool {
        self.epoch += 1;
        let (a, b) = (self.root(a), self.root(b));
        let limit = self.topo[b];
        let mut stack: Vec<usize> = self.successors[a].clone();
        while let Some(node) = stack.pop() {
            let g = self.root(node);
            // Direct edges from `a` into `b` are fine; only paths through a
            // third group count, and those arrive from `g != a`.
            if g == a || g == b || self.seen[g] == self.epoch {
                continue;
            }
            self.seen[g] = self.epoch;
            // A group ordered after `b` cannot reach it.
            if self.topo[g] > limit {
                continue;
            }
            for &next in &self.successors[g] {
                if self.root(next) == b {
                    return true;
                }
                stack.push(next);
            }
        }
        false
    }

    /// The groups reachable from group `start` along successors
    /// (`forward`) or predecessors whose order number lies strictly between
    /// `low` and `high`. Paths to them only pass through such groups, so
    /// the search stops at any other.
    fn between(&mut self, start: usize, forward: bool, low: usize, high: usize) -> Vec<usize> {
        self.epoch += 1;
        fn list(groups: &Groups, forward: bool, g: usize) -> &[usize] {
            if forward {
                &groups.successors[g]
            } else {
                &groups.predecessors[g]
            }
        }
        let mut stack: Vec<usize> = list(self, forward, start).to_vec();
        let mut found = Vec::new();
        while let Some(node) = stack.pop() {
            let g = self.root(node);
            if g == start || self.seen[g] == self.epoch {
                continue;
            }
            self.seen[g] = self.epoch;
            if self.topo[g] <= low || self.topo[g] >= high {
                continue;
            }
            found.push(g);
            stack.extend_from_slice(list(self, forward, g));
        }
        found
    }

    /// Merges the groups of `a` and `b`, which no indirect path joins, and
    /// keeps `topo` a topological order (Pearce and Kelly's reordering):
    /// between the two, the groups that reach the later one move before
    /// the merged group and the groups the earlier one reaches move after
    /// it, reusing their order numbers.
    fn merge(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.root(a), self.root(b));
        if ra == rb {
            return;
        }
        let (early, late) = if self.topo[ra] < self.topo[rb] {
            (ra, rb)
        } else {
            (rb, ra)
        };
        let (low, high) = (self.topo[early], self.topo[late]);
        let mut forward = self.between(early, true, low, high);
        let mut backward = self.between(late, false, low, high);
        debug_assert!(
            forward.iter().all(|g| !backward.contains(g)),
            "merged groups joined by an indirect path"
        );
        forward.sort_by_key(|&g| self.topo[g]);
        backward.sort_by_key(|&g| self.topo[g]);
        let mut numbers: Vec<usize> = backward
            .iter()
            .chain(&forward)
            .map(|&g| self.topo[g])
            .chain([low, high])
            .collect();
        numbers.sort_unstable();

        self.sets.union(ra, rb);
        let root = self.root(ra);
        let other = if root == ra { rb } else { ra };
        for (g, number) in backward.iter().zip(&numbers) {
            self.topo[*g] = *number;
        }
        self.topo[root] = numbers[backward.len()];
        for (g, number) in forward.iter().zip(&numbers[backward.len() + 2..]) {
            self.topo[*g] = *number;
        }
        for lists in [&mut self.successors, &mut self.predecessors] {
            let mut moved = std::mem::take(&mut lists[other]);
            let mut kept = std::mem::take(&mut lists[root]);
            if kept.len() < moved.len() {
                std::mem::swap(&mut kept, &mut moved);
            }
            kept.extend(moved);
            kept.retain(|&n| self.sets.find(n) != root);
            kept.sort_unstable();
            kept.dedup();
            lists[root] = kept;
        }
        let moved = std::mem::take(&mut self.guarded[other]);
        self.guarded[root].extend(moved);
        let mut moved = std::mem::take(&mut self.members[other]);
        if self.members[root].len() < moved.len() {
            std::mem::swap(&mut self.members[root], &mut moved);
        }
        self.members[root].extend(moved);
        self.ops[root] += self.ops[other];
        self.buffer_bound[root] += self.buffer_bound[other];
    }

    /// The size limits for merging the groups of `a` and `b`: the ops the
    /// merged group would hold, and the buffers its kernel would take (the
    /// values read from outside it, splat constants included, and the
    /// values it makes that something outside it reads).
    fn too_big(&self, a: usize, b: usize, uses: &Uses, options: Options) -> Option<Blocked> {
        let (ra, rb) = (self.root(a), self.root(b));
        if self.ops[ra] + self.ops[rb] > options.max_ops {
            return Some(Blocked::MaxOps);
        }
        // Most merges are far below the limit: count only when the bound
        // says it might be reached.
        if self.buffer_bound[ra] + self.buffer_bound[rb] <= options.max_buffers {
            return None;
        }
        let inside = |n: usize| {
            let r = self.root(n);
            r == ra || r == rb
        };
        let mut inputs: HashSet<usize> = HashSet::new();
        let mut outputs = 0;
        // Constants read nothing, but one that something outside reads
        // (a return, a loop's initial value) is a result of the kernel.
        for &m in self.members[ra].iter().chain(&self.members[rb]) {
            inputs.extend(
                uses.reads[m]
                    .iter()
                    .filter(|&&v| uses.values[v].producer.is_none_or(|p| !inside(p))),
            );
            outputs += uses.makes[m]
                .iter()
                .filter(|&&v| uses.values[v].consumers.iter().any(|&c| !inside(c)))
                .count();
        }
        (inputs.len() + outputs > options.max_buffers).then_some(Blocked::MaxBuffers)
    }

    /// Rules 1 and 2 for a whole merge: no edge between the two groups may
    /// end at a reindex or start at a reduction, whichever edge the merge
    /// came through.
    fn rule_broken(
        &self,
        a: usize,
        b: usize,
        nodes: &[Node],
        graph: &DiGraph<usize, usize>,
        indices: &[petgraph::graph::NodeIndex],
    ) -> Option<Blocked> {
        let (ra, rb) = (self.root(a), self.root(b));
        for (mine, theirs) in [(ra, rb), (rb, ra)] {
            for &node in &self.guarded[mine] {
                let (direction, rule) = match nodes[node].kind {
                    NodeKind::Reindex => (petgraph::Direction::Incoming, Blocked::Rule1),
                    _ => (petgraph::Direction::Outgoing, Blocked::Rule2),
                };
                if graph
                    .neighbors_directed(indices[node], direction)
                    .any(|other| self.root(graph[other]) == theirs)
                {
                    return Some(rule);
                }
            }
        }
        None
    }
}

/// Plans fusion for a block given its nodes and the values fusable ops use.
pub fn plan(nodes: Vec<Node>, values: &[ValueUse], options: Options) -> Plan {
    let n = nodes.len();
    let mut graph: DiGraph<usize, usize> = DiGraph::with_capacity(n, values.len());
    let indices: Vec<_> = (0..n).map(|i| graph.add_node(i)).collect();
    for (v, value) in values.iter().enumerate() {
        if let Some(p) = value.producer {
            for &c in &value.consumers {
                graph.add_edge(indices[p], indices[c], v);
            }
        }
    }
    let uses = Uses::new(values, n);
    let mut groups = Groups {
        sets: UnionFind::new(n),
        // Block order is topological: a definition precedes its uses.
        topo: (0..n).collect(),
        successors: (0..n)
            .map(|i| graph.neighbors(indices[i]).map(|s| graph[s]).collect::<Vec<_>>())
            .collect(),
        predecessors: (0..n)
            .map(|i| {
                graph
                    .neighbors_directed(indices[i], petgraph::Direction::Incoming)
                    .map(|s| graph[s])
                    .collect::<Vec<_>>()
            })
            .collect(),
        guarded: (0..n)
            .map(|i| {
                if matches!(nodes[i].kind, NodeKind::Reindex | NodeKind::Reduce) {
                    vec![i]
                } else {
                    Vec::new()
                }
            })
            .collect(),
        members: (0..n).map(|i| vec![i]).collect(),
        ops: (0..n)
            .map(|i| usize::from(nodes[i].kind != NodeKind::Constant))
            .collect(),
        buffer_bound: (0..n)
            .map(|i| uses.reads[i].len() + uses.makes[i].len())
            .collect(),
        seen: vec![0; n],
        epoch: 0,
    };

    // Under jitc's rules, two reindexes of one value save at most what the
    // smaller one reads, which is no more than it writes (module doc).
    let written: HashMap<usize, u64> = values
        .iter()
        .filter_map(|v| v.producer.map(|p| (p, v.bytes)))
        .collect();
    let sibling_bytes = |v: usize, a: usize, b: usize| {
        let bytes = values[v].bytes;
        if !options.contractions_apart
            || nodes[a].kind != NodeKind::Reindex
            || nodes[b].kind != NodeKind::Reindex
        {
            return bytes;
        }
        [a, b]
            .iter()
            .filter_map(|n| written.get(n))
            .fold(bytes, |least, &w| least.min(w))
    };
    let mut candidates = Vec::new();
    for (v, value) in values.iter().enumerate() {
        let fusable: Vec<usize> = value
            .consumers
            .iter()
            .copied()
            .filter(|&c| nodes[c].kind.fusable())
            .collect();
        if let Some(p) = value.producer
            && nodes[p].kind.fusable()
        {
            for &c in &fusable {
                candidates.push(Candidate::Edge {
                    value: v,
                    from: p,
                    to: c,
                });
            }
        }
        if fusable.len() <= options.fanout_limit {
            for pair in fusable.windows(2) {
                candidates.push(Candidate::Sibling {
                    value: v,
                    a: pair[0],
                    b: pair[1],
                    bytes: sibling_bytes(v, pair[0], pair[1]),
                });
            }
        }
    }
    candidates.sort_by_key(|c| match *c {
        Candidate::Edge { value, to, .. } => (std::cmp::Reverse(values[value].bytes), 0, to),
        Candidate::Sibling { bytes, b, .. } => (std::cmp::Reverse(bytes), 1, b),
    });

    let mut blocked: HashMap<(usize, usize), Blocked> = HashMap::new();
    let mut sibling_merges = Vec::new();
    for candidate in candidates {
        match candidate {
            Candidate::Edge { value, from, to } => {
                if groups.root(from) == groups.root(to) {
                    continue;
                }
                let reason = if nodes[to].kind == NodeKind::Reindex {
                    Some(Blocked::Rule1)
                } else if nodes[from].kind == NodeKind::Reduce {
                    Some(Blocked::Rule2)
                } else if nodes[from].stop_fuse || nodes[to].stop_fuse {
                    Some(Blocked::StopFuse)
                } else if values[value].consumers.len() > options.fanout_limit
                    && nodes[from].kind != NodeKind::Constant
                {
                    Some(Blocked::FanOut)
                } else if let Some(rule) = groups.rule_broken(from, to, &nodes, &graph, &indices) {
                    Some(rule)
                } else if let Some(limit) = groups.too_big(from, to, &uses, options) {
                    Some(limit)
                } else if groups.indirect_path(from, to) {
                    Some(Blocked::Rule3)
                } else {
                    None
                };
                match reason {
                    Some(reason) => {
                        blocked.entry((from, to)).or_insert(reason);
                    }
                    None => groups.merge(from, to),
                }
            }
            Candidate::Sibling { value, a, b, .. } => {
                let (ga, gb) = (groups.root(a), groups.root(b));
                let same_domain =
                    nodes[a].domain == nodes[b].domain && nodes[a].domain.iter().all(|&d| d >= 0);
                // Two contractions in one kernel would lose their tiles:
                // the unrolled IndRNN's 16 input projections, siblings
                // through the weight they share, ran as one loop nest of 16
                // outputs, 40 times slower than 16 tiled kernels.
                let contracts =
                    |g: usize| (0..nodes.len()).any(|n| nodes[n].contraction && groups.root(n) == g);
                if ga == gb
                    || !same_domain
                    || (options.contractions_apart && contracts(ga) && contracts(gb))
                    || nodes[a].stop_fuse
                    || nodes[b].stop_fuse
                    || groups.rule_broken(a, b, &nodes, &graph, &indices).is_some()
                    || groups.too_big(a, b, &uses, options).is_some()
                    || groups.indirect_path(a, b)
                    || groups.indirect_path(b, a)
                {
                    continue;
                }
                groups.merge(a, b);
                sibling_merges.push((a, b, values[value].bytes));
            }
        }
    }

    // Groups; opaque nodes belong to none, and
    // neither do constants left alone: they stay plain constants.
    let mut group_of = vec![None; n];
    let mut by_root: HashMap<usize, usize> = HashMap::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut computes: HashMap<usize, bool> = HashMap::new();
    for (i, node) in nodes.iter().enumerate() {
        if node.kind.fusable() && node.kind != NodeKind::Constant {
            computes.insert(groups.root(i), true);
        }
    }
    for (i, node) in nodes.iter().enumerate() {
        if !node.kind.fusable() || !computes.contains_key(&groups.root(i)) {
            continue;
        }
        let root = groups.root(i);
        let g = *by_root.entry(root).or_insert_with(|| {
            members.push(Vec::new());
            members.len() - 1
        });
        members[g].push(i);
        group_of[i] = Some(g);
    }

    // Number groups in the order they run: by their last op.
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by_key(|&g| members[g].last().copied());
    let mut renumber = vec![0; members.len()];
    for (new, &old) in order.iter().enumerate() {
        renumber[old] = new;
    }
    let members: Vec<Vec<usize>> = order.iter().map(|&g| std::mem::take(&mut members[g])).collect();
    let group_of: Vec<Option<usize>> = group_of.into_iter().map(|g| g.map(|g| renumber[g])).collect();

    let mut edges = Vec::new();
    for value in values {
        let Some(p) = value.producer else { continue };
        for &c in &value.consumers {
            let fused = group_of[p].is_some() && group_of[p] == group_of[c];
            let reason = if fused {
                None
            } else if group_of[p].is_none()
                && nodes[p].kind == NodeKind::Constant
                && nodes[c].kind == NodeKind::Reindex
            {
                Some(Blocked::Rule1)
            } else if group_of[p].is_none() || group_of[c].is_none() {
                Some(Blocked::NotFusable)
            } else {
                Some(blocked.get(&(p, c)).copied().unwrap_or(Blocked::Rule3))
            };
            edges.push(Edge {
                from: p,
                to: c,
                bytes: value.bytes,
                blocked: reason,
            });
        }
    }
    edges.sort_by_key(|e| (e.to, e.from));

    let cost = |group_of: &dyn Fn(usize) -> Option<usize>| -> u64 {
        values
            .iter()
            .map(|value| {
                let own = value.producer.and_then(group_of);
                // A set, not a list: a value read by many groups (a wide
                // fan-out) stays linear in its consumers.
                let mut seen: HashSet<usize> = HashSet::new();
                let mut total = 0;
                for &c in &value.consumers {
                    let g = group_of(c);
                    if g.is_some() && g == own {
                        continue;
                    }
                    // Opaque consumers each read the value themselves.
                    if g.is_none_or(|g| seen.insert(g)) {
                        total = u64::saturating_add(total, value.bytes);
                    }
                }
                total
            })
            .fold(0, u64::saturating_add)
    };
    let singleton = |i: usize| (nodes[i].kind.fusable() && nodes[i].kind != NodeKind::Constant).then_some(i);
    let cost_before = cost(&singleton);
    let grouped = |i: usize| group_of[i];
    let cost_after = cost(&grouped);
    let mut traffic = vec![(0u64, 0u64); members.len()];
    for value in values {
        let own = value.producer.and_then(|p| group_of[p]);
        let mut readers: Vec<usize> = value
            .consumers
            .iter()
            .filter_map(|&c| group_of[c])
            .filter(|&g| Some(g) != own)
            .collect();
        readers.sort_unstable();
        readers.dedup();
        for g in readers {
            traffic[g].0 = traffic[g].0.saturating_add(value.bytes);
        }
        if let Some(g) = own
            && value.consumers.iter().any(|&c| group_of[c] != Some(g))
        {
            traffic[g].1 = traffic[g].1.saturating_add(value.bytes);
        }
    }
    Plan {
        nodes,
        edges,
        groups: members,
        group_of,
        sibling_merges,
        cost_before,
        cost_after,
        traffic,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(kind: NodeKind, domain: &[i64]) -> Node {
        Node {
            kind,
            label: String::new(),
            domain: domain.to_vec(),
            stop_fuse: false,
            contraction: false,
        }
    }

    fn value(producer: Option<usize>, consumers: &[usize], bytes: u64) -> ValueUse {
        ValueUse {
            producer,
            consumers: consumers.to_vec(),
            bytes,
        }
    }

    #[test]
    fn chain_fuses_into_one_group() {
        let nodes = vec![node(NodeKind::Elementwise, &[4]); 3];
        let values = [
            value(None, &[0], 16),
            value(Some(0), &[1], 16),
            value(Some(1), &[2], 16),
        ];
        let plan = plan(nodes, &values, Options::default());
        assert_eq!(plan.groups, vec![vec![0, 1, 2]]);
        assert_eq!((plan.cost_before, plan.cost_after), (48, 16));
    }

    #[test]
    fn diamond_does_not_fuse_around_a_stopped_op() {
        let mut nodes = vec![node(NodeKind::Elementwise, &[4]); 3];
        nodes[1].stop_fuse = true;
        let values = [value(Some(0), &[1, 2], 16), value(Some(1), &[2], 16)];
        let plan = plan(nodes, &values, Options::default());
        assert_eq!(plan.groups, vec![vec![0], vec![1], vec![2]]);
        assert_eq!(
            plan.edges
                .iter()
                .find(|e| e.from == 0 && e.to == 2)
                .unwrap()
                .blocked,
            Some(Blocked::Rule3)
        );
    }

    #[test]
    fn rules_one_and_two() {
        let nodes = vec![
            node(NodeKind::Elementwise, &[4]),
            node(NodeKind::Reindex, &[3, 4]),
            node(NodeKind::Reduce, &[3, 4]),
            node(NodeKind::Elementwise, &[3]),
        ];
        let values = [
            value(Some(0), &[1], 16),
            value(Some(1), &[2], 48),
            value(Some(2), &[3], 12),
        ];
        let plan = plan(nodes, &values, Options::default());
        assert_eq!(plan.groups, vec![vec![0], vec![1, 2], vec![3]]);
        let reasons: Vec<_> = plan.edges.iter().map(|e| e.blocked).collect();
        assert_eq!(reasons, vec![Some(Blocked::Rule1), None, Some(Blocked::Rule2)]);
    }

    #[test]
    fn fanout_limit_keeps_values_materialized() {
        let nodes = vec![node(NodeKind::Elementwise, &[4]); 4];
        let values = [value(Some(0), &[1, 2, 3], 16)];
        let plan = plan(
            nodes,
            &values,
            Options {
                fanout_limit: 2,
                labels: false,
                ..Options::default()
            },
        );
        assert_eq!(plan.groups.len(), 4);
        assert!(plan.edges.iter().all(|e| e.blocked == Some(Blocked::FanOut)));
    }

    /// A chain of `n` element-wise ops, each also reading an argument of
    /// its own: node `i` reads value `i` (the chain) and value `n + i`.
    fn chain_with_arguments(n: usize) -> (Vec<Node>, Vec<ValueUse>) {
        let nodes = vec![node(NodeKind::Elementwise, &[4]); n];
        let mut values = vec![value(None, &[0], 16)];
        values.extend((1..n).map(|i| value(Some(i - 1), &[i], 16)));
        values.extend((0..n).map(|i| value(None, &[i], 16)));
        (nodes, values)
    }

    #[test]
    fn size_limits_cut_a_long_chain() {
        let (nodes, values) = chain_with_arguments(10);
        let options = |max_ops, max_buffers| Options {
            max_ops,
            max_buffers,
            ..Options::default()
        };
        let plan_of = |o: Options| plan(nodes.clone(), &values, o);

        let whole = plan_of(Options::default());
        assert_eq!(whole.groups.len(), 1);

        let ops = plan_of(options(4, 128));
        assert_eq!(ops.groups, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]);
        let cut = ops.edges.iter().find(|e| e.from == 3 && e.to == 4).unwrap();
        assert_eq!(cut.blocked, Some(Blocked::MaxOps));

        // Each group: the chain's value in, one argument per op, one result
        // out (the last group's result goes to no one, so it is not one).
        let buffers = plan_of(options(256, 6));
        assert_eq!(
            buffers.groups,
            vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]
        );
        let cut = buffers.edges.iter().find(|e| e.from == 3 && e.to == 4).unwrap();
        assert_eq!(cut.blocked, Some(Blocked::MaxBuffers));
        for group in &buffers.groups {
            assert!(group.len() + 2 <= 6, "{group:?} takes more than 6 buffers");
        }
    }

    /// The buffers of each group of `plan`: values its members read that
    /// are made outside it, and values they make that something outside
    /// it reads (what `outline` makes arguments and results).
    fn buffers(plan: &Plan, values: &[ValueUse]) -> Vec<usize> {
        (0..plan.groups.len())
            .map(|g| {
                let inside = |n: usize| plan.group_of[n] == Some(g);
                values
                    .iter()
                    .filter(|v| {
                        let read = v.consumers.iter().any(|&c| inside(c)) && !v.producer.is_some_and(inside);
                        let made = v.producer.is_some_and(inside) && v.consumers.iter().any(|&c| !inside(c));
                        read || made
                    })
                    .count()
            })
            .collect()
    }

    #[test]
    fn constants_something_else_reads_count_as_results() {
        // Constant `2i` and op `2i + 1`, the op adding the constant to the
        // chain; every constant is also returned (node `2n`, opaque).
        let n = 12;
        let mut nodes = Vec::new();
        for _ in 0..n {
            nodes.push(node(NodeKind::Constant, &[4]));
            nodes.push(node(NodeKind::Elementwise, &[4]));
        }
        nodes.push(node(NodeKind::Opaque, &[]));
        let ret = 2 * n;
        let mut values = vec![value(None, &[1], 16)];
        for i in 0..n {
            values.push(value(Some(2 * i), &[2 * i + 1, ret], 16));
            let next = if i + 1 < n { 2 * i + 3 } else { ret };
            values.push(value(Some(2 * i + 1), &[next], 16));
        }
        let options = Options {
            max_buffers: 8,
            ..Options::default()
        };
        let plan = plan(nodes, &values, options);
        assert!(plan.groups.len() > 1, "{:?}", plan.groups);
        for (group, count) in plan.groups.iter().zip(buffers(&plan, &values)) {
            assert!(count <= 8, "{group:?} takes {count} buffers");
        }
    }

    #[test]
    fn buffers_read_twice_count_once() {
        // Ten ops reading one shared argument: two buffers in all.
        let nodes = vec![node(NodeKind::Elementwise, &[4]); 10];
        let mut values = vec![value(None, &(0..10).collect::<Vec<_>>(), 16)];
        values.extend((1..10).map(|i| value(Some(i - 1), &[i], 16)));
        let options = Options {
            max_buffers: 3,
            fanout_limit: 16,
            ..Options::default()
        };
        assert_eq!(plan(nodes, &values, options).groups.len(), 1);
    }

    #[test]
    fn siblings_with_equal_domains_share_their_input() {
        let nodes = vec![
            node(NodeKind::Reduce, &[2, 3]),
            node(NodeKind::Elementwise, &[2, 3]),
            node(NodeKind::Reduce, &[2, 3]),
        ];
        let values = [value(None, &[0, 1], 24), value(Some(1), &[2], 24)];
        let plan = plan(nodes, &values, Options::default());
        assert_eq!(plan.groups, vec![vec![0, 1, 2]]);
        assert_eq!(plan.sibling_merges.len(), 1);
    }

    #[test]
    fn contractions_stay_apart_under_jitcs_rules_only() {
        // Two contractions reading one weight: siblings.
        let contraction = Node {
            contraction: true,
            ..node(NodeKind::Reduce, &[4, 8, 6])
        };
        let nodes = vec![contraction.clone(), contraction];
        let values = [value(None, &[0, 1], 192)];
        let paper = plan(nodes.clone(), &values, Options::default());
        assert_eq!(paper.groups, vec![vec![0, 1]], "the paper's rules merge them");
        let jitc = plan(
            nodes,
            &values,
            Options {
                contractions_apart: true,
                ..Options::default()
            },
        );
        assert_eq!(jitc.groups, vec![vec![0], vec![1]]);
        assert!(jitc.sibling_merges.is_empty());
    }
}
