//! `meta-merge`: merges the traces of one function into one graph, as
//! Terra's GraphGenerator does (`papers/terra-supplement.txt`, Algorithm 1):
//! what the traces share is staged once, and the parts where they went
//! different ways become the cases of `scf.index_switch` ops (an `scf.if`
//! where the two cases are the two ways of one branch), selected at run
//! time by the same conditions the traces branched on.
//!
//! **Input.** Functions carrying `meta.trace = "<name>"` are traces of
//! `@<name>`, in module order; each is a straight-line speculative program
//! with the same function type. A branch a trace took is a `meta.guard`
//! carrying the unit attribute `meta.decision`: its operand is the branch's
//! condition as it went, either the condition itself (it went true) or a
//! `"meta.unary"` `not` of it that also carries `meta.decision` (it went
//! false). So each trace, run alone, is JANUS's single-path graph: its
//! guards fail when a call would take another path.
//!
//! ```mlir
//! func.func @f_0(%x: tensor<4xf32>) -> tensor<4xf32> attributes {meta.trace = "f"} {
//!   %s = "meta.reindex_reduce"(%x) {...} : ... loc("m.py":3:0)
//!   %c = "meta.binary"(%s, %zero) {kind = "gt"} : ... loc("m.py":3:0)
//!   "meta.guard"(%c) {id = 1 : i64, reason = "branch at m.py:3 goes true", meta.decision} : ... loc("m.py":3:0)
//!   ...
//! ```
//!
//! **Output.** One function `@<name>` in place of the traces: ops common to
//! every trace once, at top level; a branch the traces took both ways
//! selects the next `scf.index_switch` case (or is an `scf.if`); a branch
//! they all took one way stays a guard (on the condition, or its `not`);
//! other guards are kept. Values that flow out of a case are results of
//! its switch (a case that does not compute one yields the value it had
//! before, or zeros when it had none and no path through that case reads
//! it).
//!
//! Algorithm:
//! 1. **Trace graph.** An op of a trace is a node, identified by its name,
//!    its attributes (a guard's `id`, and a decision's `reason`, aside),
//!    its result types, its location and how many times the trace ran
//!    that op before (the occurrence, standing in for Terra's loop
//!    counters). Consecutive ops of a trace give an edge, from `start` and
//!    to `end`. The graph must be acyclic, and only a branch taken both
//!    ways may have two successors; anything else means the traces differ
//!    without a branch between them, and is an error.
//!
//!    **1b. Way nodes** (before the edges). A branch taken both ways may
//!    decide which value a later op reads without running ops of its own
//!    (`h = a if c else b`, `a` and `b` computed before it), and then no
//!    path of the graph tells the values apart (step 3 fails), or its two
//!    ways may run the same op next (two edges in one). Right after such
//!    a branch each trace gets a way node for the way it went, which runs
//!    no op: it passes on the values such readers read on that way (one
//!    per value: readers of one value on every trace share it), and they
//!    read it instead. A reader goes through a branch that every trace
//!    running it runs between the last producer of what it reads and
//!    itself, and that those traces took both ways: the first that decides
//!    its value (traces that went one way read one value), else the last,
//!    whose way nodes then go through an earlier branch in the next round
//!    (nested and successive picks). A trace that runs the branch but not
//!    the reader passes on a value that a trace of its way reads there
//!    (unread on its path). Readers no branch can route are left to step
//!    3. The two way nodes are the branch's two ways (usually an `scf.if`
//!    whose regions yield the values).
//! 2. **Case assignment** (Algorithm 1): from the edges out of `start`,
//!    repeatedly make one switch-case: for each node the current edges
//!    point to, a case whose basic block is the longest linear chain from
//!    it (when no edge outside the current ones points to it), or an empty
//!    case that passes its control edges on to the next switch-case. One
//!    change: an edge to `end` stays current (in an empty case of every
//!    later switch-case) until no other edge is, since traces may end
//!    after different ops; Algorithm 1 drops it, and a case alone in a
//!    later switch-case would then run on the ended paths too.
//! 3. **Values.** Operand `j` of node `v` reads, in each trace, some earlier
//!    op's result or an argument; those producers form the operand's slot.
//!    A slot is a variable: each producer writes it when it runs, and the
//!    node reads it. That is right when, on every trace, no other producer
//!    of the slot runs between the one the node reads and the node, which
//!    is checked (an error otherwise).
//! 4. **Emission.** Walk the switch-cases in order with the number of the
//!    control edge taken so far (an `index`): a switch-case of one case is
//!    emitted in place; one of several is an `scf.index_switch` on the case
//!    its edges select, yielding the slots its cases write and the next
//!    edge: a constant, or, after a branch taken both ways, a select on its
//!    condition. A switch-case of two cases, each entered by one way of the
//!    branch that ended the block emitted just before it, is an `scf.if` on
//!    that branch's condition instead (AutoGraph's staged `if`), with the
//!    same results. The return reads the return's slots.
//! 5. **Only traced paths.** Beside the edge goes a bit mask of the traces
//!    whose paths hold every edge taken so far; after each branch taken
//!    both ways a guard checks that some trace is left (none where the
//!    mask is known when the pass runs, before the first such branch on a
//!    path and inside an `scf.if`'s ways, and each way has traces). A call
//!    that went
//!    one trace's way at one branch and another's at the next (a path no
//!    trace took, whose values were never computed together) fails that
//!    guard, as a single trace fails its decision: the frontend falls
//!    back. At most 62 traces merge.
//!
//! The traces are erased. Values of dynamic shape cannot cross a case (a
//! case that does not compute one would have to yield a placeholder), and
//! are reported.

use crate::{
    pass::{OptionKind, Options, PassInfo, PassOption},
    rewrite::{Builder, GuardIds, clone_op, constant_int, erase, set_operands},
};
use jitc_dialect::{
    emit_error,
    ops::{GuardOp, UnaryOp, set_attribute, string_attribute},
    verify::op_name,
};
use melior::{
    Context,
    ir::{
        Attribute, Block, BlockLike, BlockRef, Identifier, Location, OperationRef, Region, RegionLike, Type,
        TypeLike, Value, ValueLike,
        attribute::{DenseI64ArrayAttribute, FloatAttribute, IntegerAttribute, StringAttribute},
        operation::{Operation, OperationBuilder, OperationLike},
        r#type::{IntegerType, RankedTensorType, ShapedTypeLike},
    },
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The `meta-merge` pass.
pub struct Merge;

/// The attribute naming the function a trace is a trace of.
pub const TRACE_ATTRIBUTE: &str = "meta.trace";

/// The attribute marking a guard (and the `not` before it) as a branch a
/// trace took.
pub const DECISION_ATTRIBUTE: &str = "meta.decision";

impl Merge {
    /// Registry entry.
    pub const INFO: PassInfo = PassInfo {
        argument: "meta-merge",
        name: "Merge",
        summary: "Merge the traces of a function (meta.trace) into one graph with scf.if/scf.index_switch (Terra)",
        options: &[PassOption {
            name: "function",
            description: "merge only the traces of this function (default: every traced function)",
            default: "",
            kind: OptionKind::Text,
        }],
        source_file: "compiler/src/transforms/merge.rs",
        source: include_str!("merge.rs"),
        run: Self::run,
    };

    /// Runs the pass on a module.
    pub fn run(root: OperationRef, options: &Options) -> bool {
        let only = options.get("function").filter(|f| !f.is_empty());
        let Some(body) = root.region(0).ok().and_then(|r| r.first_block()) else {
            return true;
        };
        // The traces of each function, in module order.
        let mut groups: BTreeMap<String, Vec<OperationRef>> = BTreeMap::new();
        let mut next = body.first_operation();
        while let Some(op) = next {
            next = op.next_in_block();
            if op_name(op) != "func.func" {
                continue;
            }
            let Some(name) = op.attribute(TRACE_ATTRIBUTE).ok().and_then(string_attribute) else {
                continue;
            };
            if only.is_none_or(|f| f == name) {
                groups.entry(name.to_owned()).or_default().push(op);
            }
        }
        crate::rewrite::with_context(root, |context| {
            if let Some(function) = only
                && groups.is_empty()
            {
                // Not at the module: its location is line 0 of the file.
                emit_error(
                    Location::unknown(context),
                    &format!("meta-merge: no function carries {TRACE_ATTRIBUTE} = \"{function}\""),
                );
                return false;
            }
            let mut ok = true;
            for (name, traces) in groups {
                match merge(context, body, &name, &traces) {
                    Ok(()) => {
                        for trace in traces {
                            // The traces are not used again.
                            erase(trace);
                        }
                    }
                    Err((location, message)) => {
                        emit_error(location, &format!("meta-merge: the traces of @{name} {message}"));
                        ok = false;
                    }
                }
            }
            ok
        })
    }
}

type Failure<'c> = (Location<'c>, String);

/// Where a value of a trace comes from: argument `k`, or result `r` of node
/// `v` (the same node in every trace that runs it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Source {
    Argument(usize),
    Result(usize, usize),
}

/// Who reads a slot: operand `j` of a node, or of the return.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Reader {
    Node(usize, usize),
    Return(usize),
}

/// A trace graph's pseudo nodes.
const START: usize = usize::MAX;
const END: usize = usize::MAX - 1;

/// One trace, read.
struct Trace {
    /// Its nodes, in order.
    nodes: Vec<usize>,
    /// Each node's place in `nodes`.
    position: HashMap<usize, usize>,
    /// What each node's operands read (a decision: its condition).
    reads: HashMap<usize, Vec<Source>>,
    /// The way each decision went.
    taken: HashMap<usize, bool>,
    /// What the return reads.
    returns: Vec<Source>,
}

/// A node of the trace graph.
struct Node<'c, 'a> {
    /// The op, as the first trace that runs it has it (a way node: its
    /// branch's).
    op: OperationRef<'c, 'a>,
    /// A branch (a `meta.guard` with `meta.decision`).
    decision: bool,
    /// A way node (step 1b): no op; it passes on values of these types,
    /// its operands, as its results.
    carry: Option<Vec<Type<'c>>>,
}

impl<'c> Node<'c, '_> {
    fn result_count(&self) -> usize {
        self.carry
            .as_ref()
            .map_or_else(|| self.op.result_count(), Vec::len)
    }

    fn result_type(&self, r: usize) -> Option<Type<'c>> {
        match &self.carry {
            Some(types) => types.get(r).copied(),
            None => self.op.result(r).ok().map(|r| r.r#type()),
        }
    }
}

fn merge<'c, 'a>(
    context: &'c Context,
    module: BlockRef<'c, 'a>,
    name: &str,
    traces: &[OperationRef<'c, 'a>],
) -> Result<(), Failure<'c>> {
    let first = traces[0];
    let here = |message: String| (first.location(), message);
    let function_type = first
        .attribute("function_type")
        .map_err(|_| here("have no type".into()))?;
    for trace in traces {
        if trace.attribute("function_type").ok() != Some(function_type) {
            return Err((trace.location(), "have different function types".into()));
        }
    }
    if module_has_function(module, name) {
        return Err(here(format!("cannot be merged: @{name} already exists")));
    }

    // 1. The trace graph.
    // The traces on a path are a bit mask (step 5), one bit per trace.
    if traces.len() > 62 {
        return Err(here(format!("are {} traces; at most 62 merge", traces.len())));
    }
    let mut keys: HashMap<String, usize> = HashMap::new();
    let mut nodes: Vec<Node> = Vec::new();
    let mut read_traces = Vec::new();
    for trace in traces {
        read_traces.push(read_trace(*trace, &mut keys, &mut nodes)?);
    }
    let argument_types: Vec<Type<'c>> = match first_block(first) {
        Some(entry) => (0..entry.argument_count())
            .filter_map(|k| entry.argument(k).ok().map(|a| a.r#type()))
            .collect(),
        None => Vec::new(),
    };
    // 1b. Way nodes.
    route_through_ways(&mut read_traces, &mut nodes, &argument_types);
    // The edges, each with the traces whose paths hold it.
    let mut edge_mask: BTreeMap<(usize, usize), i64> = BTreeMap::new();
    // The way each decision's out-edges go.
    let mut ways: HashMap<(usize, usize), bool> = HashMap::new();
    for (t, trace) in read_traces.iter().enumerate() {
        let mut previous = START;
        for &v in trace.nodes.iter().chain(std::iter::once(&END)) {
            *edge_mask.entry((previous, v)).or_default() |= 1 << t;
            if let Some(&way) = trace.taken.get(&previous)
                && let Some(other) = ways.insert((previous, v), way)
                && other != way
            {
                let op = nodes[previous].op;
                return Err((
                    op.location(),
                    "took this branch both ways without running different ops after it, and no way node \
                     could tell its ways apart"
                        .into(),
                ));
            }
            previous = v;
        }
    }
    let edges: BTreeSet<(usize, usize)> = edge_mask.keys().copied().collect();
    let successors =
        |v: usize| -> Vec<usize> { edges.range((v, 0)..=(v, usize::MAX)).map(|&(_, y)| y).collect() };
    let mut predecessors: HashMap<usize, Vec<usize>> = HashMap::new();
    for &(x, y) in &edges {
        predecessors.entry(y).or_default().push(x);
    }
    if successors(START).len() > 1 {
        let first_op = read_traces[0]
            .nodes
            .first()
            .map_or(first.location(), |&v| nodes[v].op.location());
        return Err((first_op, "begin with different ops, before any branch".into()));
    }
    for (v, node) in nodes.iter().enumerate() {
        let out = successors(v);
        let two_ways = node.decision
            && out.len() == 2
            && ways.contains_key(&(v, out[0]))
            && ways.get(&(v, out[0])) != ways.get(&(v, out[1]));
        if out.len() > 1 && node.decision && !two_ways {
            return Err((
                node.op.location(),
                "took this branch the same way and then ran different ops (two ops that should be told \
                 apart share a location?)"
                    .into(),
            ));
        }
        if out.len() > 1 && !two_ways {
            return Err((
                node.op.location(),
                "differ after this op without a branch between them (a trace must run the same ops until \
                 it branches)"
                    .into(),
            ));
        }
    }
    topological_order(nodes.len(), &edges).ok_or_else(|| here("run ops in different orders".into()))?;

    // 2. Case assignment (Algorithm 1).
    let switches = assign_cases(&edges, &successors, &predecessors);

    // 3. Slots.
    let slots = slots_of(&read_traces);
    check_slots(&slots, &read_traces, &nodes, first.location())?;
    // The slots each producer writes.
    let mut writes: HashMap<Source, Vec<Reader>> = HashMap::new();
    for (&reader, sources) in &slots {
        for &source in sources {
            writes.entry(source).or_default().push(reader);
        }
    }
    // The variables: readers of the same producers.
    let mut by_sources: BTreeMap<&BTreeSet<Source>, Vec<Reader>> = BTreeMap::new();
    for (reader, sources) in &slots {
        by_sources.entry(sources).or_default().push(*reader);
    }
    let variables: Vec<Vec<Reader>> = by_sources.into_values().collect();
    let variable_of: HashMap<Reader, usize> = variables
        .iter()
        .enumerate()
        .flat_map(|(k, readers)| readers.iter().map(move |&r| (r, k)))
        .collect();
    let slot_type = |reader: Reader| slot_type(&slots, reader, &nodes, &argument_types);

    // 4. Emission, into a copy of the first trace emptied of its ops.
    let copy = clone_op(first);
    let merged = module.insert_operation_before(first, copy);
    set_attribute(merged, "sym_name", StringAttribute::new(context, name).into());
    crate::rewrite::remove_attribute(merged, TRACE_ATTRIBUTE);
    let entry = first_block(merged).ok_or_else(|| here("have no body".into()))?;
    let mut old: Vec<OperationRef> = Vec::new();
    let mut next = entry.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        old.push(op);
    }
    for op in old.into_iter().rev() {
        // Each op is erased once, users (later ops) first.
        erase(op);
    }
    let mut ids = GuardIds::of(merged);
    let location = first.location();
    let top = Builder::at_end(context, entry, location);
    let mut values: HashMap<Reader, Value<'c, 'a>> = HashMap::new();
    for (reader, sources) in &slots {
        if let Some(Source::Argument(k)) = sources.iter().find(|s| matches!(s, Source::Argument(_))) {
            let argument = entry.argument(*k).map_err(|e| here(e.to_string()))?;
            values.insert(*reader, argument.into());
        }
    }
    let edge_id: HashMap<(usize, usize), i64> =
        edges.iter().enumerate().map(|(k, &e)| (e, k as i64)).collect();
    // The one edge out of `start` (checked above).
    let start_edge = *edges
        .range((START, 0)..=(START, usize::MAX))
        .next()
        .ok_or_else(|| here("are empty".into()))?;
    let mut edge = top
        .index(edge_id[&start_edge])
        .ok_or_else(|| here("could not be built".into()))?;
    // The traces whose paths hold every edge taken so far, as a bit mask:
    // a path that mixes ways no one trace took is not what any trace
    // computed, and fails a guard where it leaves them all.
    let mut mask = top
        .index((1i64 << traces.len()) - 1)
        .ok_or_else(|| here("could not be built".into()))?;
    let emitter = Emitter {
        nodes: &nodes,
        writes: &writes,
        edge_id: &edge_id,
        edge_mask: &edge_mask,
        ways: &ways,
        successors: &successors,
    };
    // The branch taken both ways that chose `edge`, while it still does.
    let mut branch: Option<TwoWays> = None;
    for switch in &switches {
        if switch.len() == 1 {
            let case = &switch[0];
            let mut local = values.clone();
            let ended;
            (edge, mask, ended) =
                emitter.emit_block(&top, &case.block, &mut local, (edge, mask), &mut ids)?;
            values = local;
            if !case.block.is_empty() {
                branch = ended;
            }
            continue;
        }
        // Two cases, each entered by one way of the branch that chose the
        // edge: an `scf.if` on its condition (then: the true way's case).
        let if_form = branch.take().and_then(|b| {
            let one = |k: usize, e| switch[k].control == [e];
            if one(0, b.when_true) && one(1, b.when_false) {
                Some((b.condition, 0, 1, b.masks))
            } else if one(1, b.when_true) && one(0, b.when_false) {
                Some((b.condition, 1, 0, b.masks))
            } else {
                None
            }
        });
        // Where the traces on each way are known, each region starts with
        // its mask as a constant.
        let region_masks = if_form.and_then(|(_, _, _, masks)| masks);
        // The slots some case writes and a later op reads (not one of this
        // switch's cases, which exclude each other): results of the
        // switch, then the edge.
        let here_nodes: BTreeSet<usize> = switch.iter().flat_map(|c| c.block.iter().copied()).collect();
        let mut written: BTreeSet<usize> = BTreeSet::new();
        for &v in &here_nodes {
            for r in 0..nodes[v].result_count() {
                for reader in writes.get(&Source::Result(v, r)).into_iter().flatten() {
                    if !matches!(reader, Reader::Node(u, _) if here_nodes.contains(u)) {
                        written.insert(variable_of[reader]);
                    }
                }
            }
        }
        // Slots read from the same producers are one variable: one result.
        let written: Vec<&Vec<Reader>> = written.into_iter().map(|k| &variables[k]).collect();
        let mut types = Vec::new();
        for readers in &written {
            types.push(slot_type(readers[0]).ok_or_else(|| here("have a value of no type".into()))?);
        }
        // The edge and the mask.
        types.push(Type::index(context));
        types.push(Type::index(context));
        // Region r runs case `order[r]` (`None`: the switch's default,
        // which no trace reaches).
        let (op, order) = match if_form {
            Some((condition, then, otherwise, _)) => {
                let regions = vec![Region::new(), Region::new()];
                for region in &regions {
                    region.append_block(Block::new(&[]));
                }
                let op = OperationBuilder::new("scf.if", location)
                    .add_operands(&[condition])
                    .add_results(&types)
                    .add_regions_vec(regions)
                    .build()
                    .map_err(|e| here(format!("could not be built: {e}")))?;
                (op, vec![Some(then), Some(otherwise)])
            }
            None => switch_op(context, &top, location, switch, &edge_id, edge, &types)
                .ok_or_else(|| here("could not be built".into()))?,
        };
        let op = entry.append_operation(op);
        for (r, case) in order.into_iter().enumerate() {
            let block = op
                .region(r)
                .ok()
                .and_then(|r| r.first_block())
                .ok_or_else(|| here("lost a case".into()))?;
            let at = Builder::at_end(context, block, location);
            let mut local = values.clone();
            let mask = match region_masks {
                Some((then, otherwise)) => at
                    .index(if r == 0 { then } else { otherwise })
                    .ok_or_else(|| here("could not be built".into()))?,
                None => mask,
            };
            let (next, next_mask) = match case {
                None => (edge, mask),
                Some(k) => {
                    let (next, next_mask, _) =
                        emitter.emit_block(&at, &switch[k].block, &mut local, (edge, mask), &mut ids)?;
                    (next, next_mask)
                }
            };
            let mut yields = Vec::new();
            for (readers, &r#type) in written.iter().zip(&types[..written.len()]) {
                let value = match readers.iter().find_map(|reader| local.get(reader)) {
                    Some(value) => *value,
                    None => zero(&at, r#type).ok_or_else(|| {
                        here(format!(
                            "pass a value of type {} from a branch; only static shapes can",
                            r#type
                        ))
                    })?,
                };
                yields.push(value);
            }
            yields.push(next);
            yields.push(next_mask);
            at.op("scf.yield", &yields, &[], &[])
                .ok_or_else(|| here("could not be built".into()))?;
        }
        for (k, readers) in written.iter().enumerate() {
            let result: Value = op.result(k).map_err(|e| here(e.to_string()))?.into();
            for &reader in readers.iter() {
                values.insert(reader, result);
            }
        }
        edge = op.result(written.len()).map_err(|e| here(e.to_string()))?.into();
        mask = op
            .result(written.len() + 1)
            .map_err(|e| here(e.to_string()))?
            .into();
    }
    let returns = (0..read_traces[0].returns.len())
        .map(|j| {
            values
                .get(&Reader::Return(j))
                .copied()
                .ok_or_else(|| here("return a value no path computes".into()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    top.op("func.return", &returns, &[], &[])
        .ok_or_else(|| here("could not be built".into()))?;
    Ok(())
}

/// A branch taken both ways that ended an emitted block: its condition
/// (an `i1`) and the edges of its true and false ways.
#[derive(Clone, Copy)]
struct TwoWays<'c, 'a> {
    condition: Value<'c, 'a>,
    when_true: (usize, usize),
    when_false: (usize, usize),
    /// The traces on the path after each way, where known when the pass
    /// runs (the mask before the branch was a constant).
    masks: Option<(i64, i64)>,
}

/// The `scf.index_switch` of a switch-case of several cases, on the case
/// the control `edge` selects (built at `top`, not inserted), and the case
/// each of its regions runs: the default (which no trace reaches), then
/// case k in region k + 1.
fn switch_op<'c, 'a>(
    context: &'c Context,
    top: &Builder<'c, 'a>,
    location: Location<'c>,
    switch: &[Case],
    edge_id: &HashMap<(usize, usize), i64>,
    edge: Value<'c, 'a>,
    types: &[Type<'c>],
) -> Option<(Operation<'c>, Vec<Option<usize>>)> {
    let mut selector = top.index(-1)?;
    for (k, case) in switch.iter().enumerate() {
        for e in &case.control {
            let id = top.index(edge_id[e])?;
            let same = top.compare("arith.cmpi", 0, edge, id)?;
            let value = top.index(k as i64)?;
            selector = top.select(same, value, selector)?;
        }
    }
    let regions: Vec<Region> = (0..=switch.len())
        .map(|_| {
            let region = Region::new();
            region.append_block(Block::new(&[]));
            region
        })
        .collect();
    let cases: Vec<i64> = (0..switch.len() as i64).collect();
    let op = OperationBuilder::new("scf.index_switch", location)
        .add_operands(&[selector])
        .add_results(types)
        .add_attributes(&[(
            Identifier::new(context, "cases"),
            DenseI64ArrayAttribute::new(context, &cases).into(),
        )])
        .add_regions_vec(regions)
        .build()
        .ok()?;
    Some((
        op,
        std::iter::once(None).chain((0..switch.len()).map(Some)).collect(),
    ))
}

fn module_has_function(module: BlockRef, name: &str) -> bool {
    let mut next = module.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if op_name(op) == "func.func"
            && op.attribute("sym_name").ok().and_then(string_attribute) == Some(name)
        {
            return true;
        }
    }
    false
}

fn first_block<'c, 'a>(function: OperationRef<'c, 'a>) -> Option<BlockRef<'c, 'a>> {
    function.region(0).ok()?.first_block()
}

/// Reads one trace's ops into nodes (adding new ones to `nodes`).
fn read_trace<'c, 'a>(
    trace: OperationRef<'c, 'a>,
    keys: &mut HashMap<String, usize>,
    nodes: &mut Vec<Node<'c, 'a>>,
) -> Result<Trace, Failure<'c>> {
    let at = |op: OperationRef<'c, 'a>, message: &str| (op.location(), message.to_owned());
    let entry = first_block(trace).ok_or_else(|| at(trace, "include a declaration, with no body"))?;
    if entry.next_in_region().is_some() {
        return Err(at(
            trace,
            "hold more than one block; a trace is straight-line code",
        ));
    }
    let mut read = Trace {
        nodes: Vec::new(),
        position: HashMap::new(),
        reads: HashMap::new(),
        taken: HashMap::new(),
        returns: Vec::new(),
    };
    let mut sources: HashMap<usize, Source> = HashMap::new();
    for k in 0..entry.argument_count() {
        if let Ok(argument) = entry.argument(k) {
            sources.insert(crate::rewrite::key(argument.into()), Source::Argument(k));
        }
    }
    let mut occurrences: HashMap<String, usize> = HashMap::new();
    let source_of = |value: Value, sources: &HashMap<usize, Source>, op: OperationRef<'c, 'a>| {
        sources
            .get(&crate::rewrite::key(value))
            .copied()
            .ok_or_else(|| at(op, "read a value defined outside the trace"))
    };
    let mut next = entry.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        let name = op_name(op);
        if op.region_count() > 0 {
            return Err(at(op, "hold an op with regions; a trace is straight-line code"));
        }
        if op.successor_count() > 0 {
            return Err(at(
                op,
                "hold a branch to another block; a trace is straight-line code",
            ));
        }
        if name == "func.return" {
            for operand in op.operands() {
                read.returns.push(source_of(operand, &sources, op)?);
            }
            continue;
        }
        let decision = GuardOp::cast(op).is_some() && op.attribute(DECISION_ATTRIBUTE).is_ok();
        if is_decision_not(op) {
            // Read with its guard.
            continue;
        }
        let mut operands: Vec<Value> = op.operands().collect();
        let mut taken = true;
        if decision
            && let Some(not) = operands.first().and_then(|v| crate::rewrite::defining_op(*v))
            && is_decision_not(not)
        {
            operands = not.operands().collect();
            taken = false;
        }
        let key = node_key(op, decision);
        let count = occurrences.entry(key.clone()).or_default();
        let key = format!("{key}#{count}");
        *count += 1;
        let v = *keys.entry(key).or_insert_with(|| {
            nodes.push(Node {
                op,
                decision,
                carry: None,
            });
            nodes.len() - 1
        });
        let reads = operands
            .iter()
            .map(|operand| source_of(*operand, &sources, op))
            .collect::<Result<Vec<_>, _>>()?;
        read.position.insert(v, read.nodes.len());
        read.nodes.push(v);
        read.reads.insert(v, reads);
        if decision {
            read.taken.insert(v, taken);
        }
        for (r, result) in op.results().enumerate() {
            sources.insert(crate::rewrite::key(result.into()), Source::Result(v, r));
        }
    }
    Ok(read)
}

/// A `not` that a decision guard reads: it carries `meta.decision`.
fn is_decision_not(op: OperationRef) -> bool {
    UnaryOp::cast(op).is_some_and(|u| u.kind().is_some_and(|k| k.name() == "not"))
        && op.attribute(DECISION_ATTRIBUTE).is_ok()
}

/// What makes two ops of different traces one node (the occurrence is
/// added by the caller).
fn node_key(op: OperationRef, decision: bool) -> String {
    let mut attributes: Vec<String> = op
        .attributes()
        .filter(|(name, _)| {
            let name = name.as_string_ref().as_str().unwrap_or("");
            let guard_id = name == "id" && GuardOp::cast(op).is_some();
            let decision_reason = decision && name == "reason";
            !guard_id && !decision_reason
        })
        .map(|(name, value)| format!("{}={value}", name.as_string_ref().as_str().unwrap_or("")))
        .collect();
    attributes.sort();
    let results: Vec<String> = op.results().map(|r| r.r#type().to_string()).collect();
    // The operands' types (and so their number): a decision's is its
    // condition's, read through the `not` of a branch that went false.
    let operands: Vec<String> = if decision {
        vec!["tensor<i1>".to_owned()]
    } else {
        op.operands().map(|v| v.r#type().to_string()).collect()
    };
    format!(
        "{}|{}|({})->({})|{}",
        op_name(op),
        attributes.join(","),
        operands.join(","),
        results.join(","),
        op.location()
    )
}

/// Nodes in an order every edge respects; `None` on a cycle.
fn topological_order(count: usize, edges: &BTreeSet<(usize, usize)>) -> Option<Vec<usize>> {
    let mut indegree = vec![0usize; count];
    for &(x, y) in edges {
        if x < count && y < count {
            indegree[y] += 1;
        }
    }
    let mut ready: Vec<usize> = (0..count).filter(|&v| indegree[v] == 0).collect();
    let mut order = Vec::with_capacity(count);
    while let Some(v) = ready.pop() {
        order.push(v);
        for &(_, y) in edges.range((v, 0)..=(v, usize::MAX)) {
            if y < count {
                indegree[y] -= 1;
                if indegree[y] == 0 {
                    ready.push(y);
                }
            }
        }
    }
    (order.len() == count).then_some(order)
}

/// One case of a switch-case: its basic block (a linear chain, maybe
/// empty) and the control edges that select it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Case {
    block: Vec<usize>,
    control: Vec<(usize, usize)>,
}

/// Terra's case assignment (Algorithm 1): the ordered switch-cases.
fn assign_cases(
    edges: &BTreeSet<(usize, usize)>,
    successors: &dyn Fn(usize) -> Vec<usize>,
    predecessors: &HashMap<usize, Vec<usize>>,
) -> Vec<Vec<Case>> {
    let indegree = |v: usize| predecessors.get(&v).map_or(0, Vec::len);
    let mut switches = Vec::new();
    // Unlike Algorithm 1, edges to `end` stay current: a trace that ended
    // passes every later switch-case through an empty case, so that a case
    // alone in its switch-case still runs only on the paths it is on.
    let mut next_edges: BTreeSet<(usize, usize)> =
        edges.range((START, 0)..=(START, usize::MAX)).copied().collect();
    while next_edges.iter().any(|&(_, y)| y != END) {
        let mut switch = Vec::new();
        let mut new_next = BTreeSet::new();
        let targets: BTreeSet<usize> = next_edges.iter().map(|&(_, y)| y).collect();
        for v in targets {
            let control: Vec<(usize, usize)> = next_edges.iter().copied().filter(|&(_, y)| y == v).collect();
            if v == END {
                new_next.extend(control.iter().copied());
                switch.push(Case {
                    block: Vec::new(),
                    control,
                });
                continue;
            }
            // Incoming edges of `v` that are not current.
            let waiting = predecessors
                .get(&v)
                .into_iter()
                .flatten()
                .filter(|&&x| !next_edges.contains(&(x, v)))
                .count();
            let mut block = Vec::new();
            if waiting == 0 {
                let mut v = v;
                block.push(v);
                loop {
                    let out = successors(v);
                    if out.len() == 1 && out[0] != END && indegree(out[0]) == 1 {
                        v = out[0];
                        block.push(v);
                    } else {
                        break;
                    }
                }
                new_next.extend(successors(v).into_iter().map(|y| (v, y)));
            } else {
                new_next.extend(control.iter().copied());
            }
            switch.push(Case { block, control });
        }
        switches.push(switch);
        next_edges = new_next;
    }
    switches
}

/// The producers each reader reads, over all traces.
fn slots_of(traces: &[Trace]) -> BTreeMap<Reader, BTreeSet<Source>> {
    let mut slots: BTreeMap<Reader, BTreeSet<Source>> = BTreeMap::new();
    for trace in traces {
        for (&v, reads) in &trace.reads {
            for (j, &source) in reads.iter().enumerate() {
                slots.entry(Reader::Node(v, j)).or_default().insert(source);
            }
        }
        for (j, &source) in trace.returns.iter().enumerate() {
            slots.entry(Reader::Return(j)).or_default().insert(source);
        }
    }
    slots
}

/// Checks that every slot can be a variable (see the module's docs).
fn check_slots<'c>(
    slots: &BTreeMap<Reader, BTreeSet<Source>>,
    traces: &[Trace],
    nodes: &[Node<'c, '_>],
    fallback: Location<'c>,
) -> Result<(), Failure<'c>> {
    for (&reader, sources) in slots {
        if conflicts(reader, sources, traces) {
            let location = match reader {
                Reader::Node(v, _) => nodes[v].op.location(),
                Reader::Return(_) => fallback,
            };
            return Err((
                location,
                "read different values here in a way one graph cannot merge (a value one trace reads is \
                 overwritten by another's before this op)"
                    .to_owned(),
            ));
        }
    }
    Ok(())
}

/// Where `reader` is in `trace`: the position of its node (the end, for
/// the return), or `None` when the trace does not run it.
fn reader_position(reader: Reader, trace: &Trace) -> Option<usize> {
    match reader {
        Reader::Node(v, _) => trace.position.get(&v).copied(),
        Reader::Return(_) => Some(trace.nodes.len()),
    }
}

/// What `reader` reads in `trace` (which runs it).
fn read_of(reader: Reader, trace: &Trace) -> Source {
    match reader {
        Reader::Node(v, j) => trace.reads[&v][j],
        Reader::Return(j) => trace.returns[j],
    }
}

/// Whether the slot of `reader` (read from `sources`) cannot be a
/// variable: on some trace another of its producers runs between the one
/// the reader reads and the reader.
fn conflicts(reader: Reader, sources: &BTreeSet<Source>, traces: &[Trace]) -> bool {
    if sources
        .iter()
        .filter(|s| matches!(s, Source::Argument(_)))
        .count()
        > 1
    {
        return true;
    }
    // Two results of one op: the variable would hold the last one
    // written on every path.
    let producers: Vec<usize> = sources
        .iter()
        .filter_map(|s| match s {
            Source::Result(p, _) => Some(*p),
            Source::Argument(_) => None,
        })
        .collect();
    if producers.windows(2).any(|w| w[0] == w[1]) {
        return true;
    }
    for trace in traces {
        let Some(end) = reader_position(reader, trace) else {
            continue;
        };
        let read = read_of(reader, trace);
        let begin = match read {
            Source::Argument(_) => 0,
            Source::Result(p, _) => trace.position[&p] + 1,
        };
        // No other producer of the slot runs in between.
        for &v in &trace.nodes[begin..end] {
            let other = sources
                .iter()
                .any(|&s| matches!(s, Source::Result(p, _) if p == v) && s != read);
            if other {
                return true;
            }
        }
    }
    false
}

/// Step 1b: a value later ops read that a branch taken both ways decides
/// (`h = a if c else b`, `a` and `b` computed before it, so no trace graph
/// path tells them apart), or a branch taken both ways whose ways run the
/// same ops next. Right after such a branch each trace gets a *way node*
/// for the way it went: it passes on, as its results, the values those
/// readers read on that way, and the readers read it instead. Its two way
/// nodes make the branch's two ways (an `scf.if` whose regions yield
/// those values). A reader whose slot cannot be one variable is routed
/// through a branch that every trace running it runs between the last
/// producer it reads and itself, and that those traces took both ways:
/// the first that decides its value (the traces that went one way read
/// one value), else the last, and rounds repeat (at most
/// [`WAY_ROUNDS`]) for the way nodes' own operands, so that nested and
/// successive picks route through each branch in turn. A trace that runs
/// the branch but not the reader passes on a value another trace of its
/// way reads there (unread on its path); a reader for which none is
/// computed on it yet is left to `check_slots`.
fn route_through_ways<'c, 'a>(
    traces: &mut [Trace],
    nodes: &mut Vec<Node<'c, 'a>>,
    argument_types: &[Type<'c>],
) {
    let mut ways_of: BTreeMap<usize, BTreeSet<bool>> = BTreeMap::new();
    for trace in traces.iter() {
        for (&d, &way) in &trace.taken {
            ways_of.entry(d).or_default().insert(way);
        }
    }
    let both: BTreeSet<usize> = ways_of
        .into_iter()
        .filter(|(_, ways)| ways.len() == 2)
        .map(|(d, _)| d)
        .collect();
    if both.is_empty() {
        return;
    }
    // The way nodes each branch has, in order.
    let mut made: BTreeMap<usize, BTreeSet<usize>> = BTreeMap::new();
    for round in 0..WAY_ROUNDS {
        // For each branch, the readers routed through it, each with what
        // it passes on in each trace that runs the branch.
        let mut plans: BTreeMap<usize, Vec<Route>> = BTreeMap::new();
        if round == 0 {
            // Branches whose two ways run the same op next need way nodes
            // even when they route nothing.
            for &d in &both {
                let next = |way: bool| -> BTreeSet<usize> {
                    traces
                        .iter()
                        .filter(|t| t.taken.get(&d) == Some(&way))
                        .map(|t| t.nodes.get(t.position[&d] + 1).copied().unwrap_or(END))
                        .collect()
                };
                if !next(true).is_disjoint(&next(false)) {
                    plans.entry(d).or_default();
                }
            }
        }
        let slots = slots_of(traces);
        for (&reader, sources) in &slots {
            if conflicts(reader, sources, traces)
                && let Some((d, passed)) = route(reader, sources, traces, &both)
            {
                plans.entry(d).or_default().push((reader, passed));
            }
        }
        if plans.is_empty() {
            return;
        }
        for (d, routed) in plans {
            let ways = made.entry(d).or_default();
            add_way_nodes(d, &routed, traces, nodes, ways, &slots, argument_types);
        }
    }
}

/// A reader routed through a branch, and what each trace running the
/// branch passes on for it (by trace).
type Route = (Reader, BTreeMap<usize, Source>);

/// Rounds of [`route_through_ways`]: how many branches deep a value may be
/// picked.
const WAY_ROUNDS: usize = 8;

/// The branch `reader` goes through and what each trace running that
/// branch passes on for it (see [`route_through_ways`]).
fn route(
    reader: Reader,
    sources: &BTreeSet<Source>,
    traces: &[Trace],
    both: &BTreeSet<usize>,
) -> Option<(usize, BTreeMap<usize, Source>)> {
    let running: Vec<usize> = (0..traces.len())
        .filter(|&t| reader_position(reader, &traces[t]).is_some())
        .collect();
    // The branches each running trace runs between the last producer of
    // the slot before the reader and the reader, in common, in the first
    // running trace's order.
    let mut common: Option<BTreeSet<usize>> = None;
    for &t in &running {
        let trace = &traces[t];
        let end = reader_position(reader, trace)?;
        let last = sources
            .iter()
            .filter_map(|s| match s {
                Source::Result(p, _) => trace.position.get(p).copied().filter(|&p| p < end),
                Source::Argument(_) => None,
            })
            .max();
        let begin = last.map_or(0, |p| p + 1);
        let here: BTreeSet<usize> = trace.nodes[begin..end]
            .iter()
            .copied()
            .filter(|v| both.contains(v))
            .collect();
        common = Some(match common {
            Some(c) => c.intersection(&here).copied().collect(),
            None => here,
        });
    }
    let first = &traces[*running.first()?];
    let mut candidates: Vec<usize> = common?.into_iter().collect();
    candidates.sort_by_key(|d| first.position[d]);
    // Taken both ways by the traces that run the reader.
    candidates.retain(|d| {
        let ways: BTreeSet<bool> = running
            .iter()
            .filter_map(|&t| traces[t].taken.get(d).copied())
            .collect();
        ways.len() == 2
    });
    let read_on = |d: usize, way: bool| -> BTreeSet<Source> {
        running
            .iter()
            .filter(|&&t| traces[t].taken.get(&d) == Some(&way))
            .map(|&t| read_of(reader, &traces[t]))
            .collect()
    };
    let decides = |d: &usize| read_on(*d, true).len() == 1 && read_on(*d, false).len() == 1;
    let d = candidates
        .iter()
        .copied()
        .find(decides)
        .or_else(|| candidates.last().copied())?;
    // What each trace running the branch passes on: what it reads, or,
    // when it does not run the reader after the branch, a value a trace
    // of its way reads there that it computed before the branch.
    let mut passed = BTreeMap::new();
    for (t, trace) in traces.iter().enumerate() {
        let (Some(&at), Some(&way)) = (trace.position.get(&d), trace.taken.get(&d)) else {
            continue;
        };
        if reader_position(reader, trace).is_some_and(|end| end > at) {
            passed.insert(t, read_of(reader, trace));
            continue;
        }
        let computed = |s: &Source| match s {
            Source::Argument(_) => true,
            Source::Result(p, _) => trace.position.get(p).is_some_and(|&p| p < at),
        };
        let stand_in = running
            .iter()
            .filter(|&&r| traces[r].taken.get(&d) == Some(&way))
            .map(|&r| read_of(reader, &traces[r]))
            .find(computed)?;
        passed.insert(t, stand_in);
    }
    Some((d, passed))
}

/// Adds a pair of way nodes after branch `d` (after the way nodes it
/// already has, `ways`) in every trace that runs it, passing on what
/// `routed` says, and points the routed readers at them. Readers that pass
/// on the same values on every trace share one value.
fn add_way_nodes<'c, 'a>(
    d: usize,
    routed: &[Route],
    traces: &mut [Trace],
    nodes: &mut Vec<Node<'c, 'a>>,
    ways: &mut BTreeSet<usize>,
    slots: &BTreeMap<Reader, BTreeSet<Source>>,
    argument_types: &[Type<'c>],
) {
    let mut carried: Vec<(&BTreeMap<usize, Source>, Reader)> = Vec::new();
    let mut share = Vec::with_capacity(routed.len());
    for (reader, passed) in routed {
        share.push(match carried.iter().position(|(p, _)| *p == passed) {
            Some(m) => m,
            None => {
                carried.push((passed, *reader));
                carried.len() - 1
            }
        });
    }
    let types: Vec<Type<'c>> = carried
        .iter()
        .filter_map(|(_, reader)| slot_type(slots, *reader, nodes, argument_types))
        .collect();
    if types.len() != carried.len() {
        return;
    }
    let op = nodes[d].op;
    let mut way_node = |nodes: &mut Vec<Node<'c, 'a>>| {
        nodes.push(Node {
            op,
            decision: false,
            carry: Some(types.clone()),
        });
        ways.insert(nodes.len() - 1);
        nodes.len() - 1
    };
    let (on_true, on_false) = (way_node(nodes), way_node(nodes));
    for (t, trace) in traces.iter_mut().enumerate() {
        let (Some(&at), Some(&way)) = (trace.position.get(&d), trace.taken.get(&d)) else {
            continue;
        };
        let w = if way { on_true } else { on_false };
        // After the branch and the way nodes it has.
        let mut after = at + 1;
        while trace
            .nodes
            .get(after)
            .is_some_and(|v| ways.contains(v) && *v != w)
        {
            after += 1;
        }
        let reads = carried
            .iter()
            .map(|(passed, _)| passed.get(&t).copied())
            .collect::<Option<Vec<_>>>();
        let Some(reads) = reads else {
            // Not planned for this trace (cannot happen: a plan covers
            // every trace that runs its branch).
            continue;
        };
        for ((reader, passed), &m) in routed.iter().zip(&share) {
            if reader_position(*reader, trace).is_none_or(|end| end <= at) || !passed.contains_key(&t) {
                continue;
            }
            match *reader {
                Reader::Node(v, j) => {
                    if let Some(reads) = trace.reads.get_mut(&v) {
                        reads[j] = Source::Result(w, m);
                    }
                }
                Reader::Return(j) => trace.returns[j] = Source::Result(w, m),
            }
        }
        trace.reads.insert(w, reads);
        trace.nodes.insert(after, w);
        trace.position = trace.nodes.iter().enumerate().map(|(p, &v)| (v, p)).collect();
    }
}

/// The type of what `reader` reads (any of its slot's producers: they
/// agree).
fn slot_type<'c>(
    slots: &BTreeMap<Reader, BTreeSet<Source>>,
    reader: Reader,
    nodes: &[Node<'c, '_>],
    argument_types: &[Type<'c>],
) -> Option<Type<'c>> {
    match *slots.get(&reader)?.iter().next()? {
        Source::Argument(k) => argument_types.get(k).copied(),
        Source::Result(v, r) => nodes[v].result_type(r),
    }
}

/// What emitting a block needs to know of the graph.
struct Emitter<'g, 'c, 'a> {
    nodes: &'g [Node<'c, 'a>],
    writes: &'g HashMap<Source, Vec<Reader>>,
    edge_id: &'g HashMap<(usize, usize), i64>,
    edge_mask: &'g BTreeMap<(usize, usize), i64>,
    ways: &'g HashMap<(usize, usize), bool>,
    successors: &'g dyn Fn(usize) -> Vec<usize>,
}

impl<'c, 'a> Emitter<'_, 'c, 'a> {
    /// Emits `block`'s nodes at `at`, reading and writing the slots in
    /// `values`; returns the number of the edge taken out of it and the
    /// mask of traces still on the path (`edge` and `mask` as they were
    /// when it is empty). After a branch taken both ways, a guard checks
    /// that some trace went the way this call went.
    fn emit_block(
        &self,
        at: &Builder<'c, 'a>,
        block: &[usize],
        values: &mut HashMap<Reader, Value<'c, 'a>>,
        (edge, mask): (Value<'c, 'a>, Value<'c, 'a>),
        ids: &mut GuardIds,
    ) -> Result<(Value<'c, 'a>, Value<'c, 'a>, Option<TwoWays<'c, 'a>>), Failure<'c>> {
        let Some(&last) = block.last() else {
            return Ok((edge, mask, None));
        };
        let mut condition = None;
        for &v in block {
            let node = &self.nodes[v];
            let fail = |message: &str| (node.op.location(), format!("could not be merged: {message}"));
            if node.carry.is_some() {
                // A way node: what its readers read on this way.
                for m in 0..node.result_count() {
                    let value = values
                        .get(&Reader::Node(v, m))
                        .copied()
                        .ok_or_else(|| fail("a value a branch decides is not computed on this path"))?;
                    for &reader in self.writes.get(&Source::Result(v, m)).into_iter().flatten() {
                        values.insert(reader, value);
                    }
                }
                continue;
            }
            let operands = (0..node.op.operand_count())
                .map(|j| values.get(&Reader::Node(v, j)).copied())
                .collect::<Option<Vec<_>>>();
            // A decision's operand is its condition, read as slot 0.
            let operands = match operands {
                Some(operands) => operands,
                None if node.decision => vec![
                    values
                        .get(&Reader::Node(v, 0))
                        .copied()
                        .ok_or_else(|| fail("its condition is not computed"))?,
                ],
                None => return Err(fail("an operand is not computed on this path")),
            };
            if node.decision {
                let out = (self.successors)(v);
                let raw = operands[0];
                if out.len() == 2 {
                    condition = Some(raw);
                    continue;
                }
                // Every trace went one way: a guard that it still does.
                let way = self.ways.get(&(v, out[0])).copied().unwrap_or(true);
                let at_node = at.at(node.op.location());
                let checked = if way {
                    raw
                } else {
                    not(&at_node, raw).ok_or_else(|| fail("a not"))?
                };
                let reason = node
                    .op
                    .attribute("reason")
                    .ok()
                    .and_then(string_attribute)
                    .unwrap_or("branch");
                let guard = GuardOp::build(at.context(), node.op.location(), checked, ids.fresh(), reason)
                    .map_err(|e| fail(&e.to_string()))?;
                at.insert(guard);
                continue;
            }
            let op = at.insert(clone_op(node.op));
            set_operands(op, &operands);
            if GuardOp::cast(op).is_some() {
                let i64_type = IntegerType::new(at.context(), 64).into();
                set_attribute(op, "id", IntegerAttribute::new(i64_type, ids.fresh()).into());
            }
            for r in 0..op.result_count() {
                let result: Value = op.result(r).map_err(|e| fail(&e.to_string()))?.into();
                for &reader in self.writes.get(&Source::Result(v, r)).into_iter().flatten() {
                    values.insert(reader, result);
                }
            }
        }
        let out = (self.successors)(last);
        let fail = |message: &str| {
            (
                self.nodes[last].op.location(),
                format!("could not be merged: {message}"),
            )
        };
        match (out.as_slice(), condition) {
            // Every trace on the path goes on this way.
            ([y], _) => Ok((
                at.index(self.edge_id[&(last, *y)])
                    .ok_or_else(|| fail("an edge"))?,
                mask,
                None,
            )),
            ([a, b], Some(condition)) => {
                let (when_true, when_false) = if self.ways.get(&(last, *a)) == Some(&true) {
                    (*a, *b)
                } else {
                    (*b, *a)
                };
                let t = at
                    .index(self.edge_id[&(last, when_true)])
                    .ok_or_else(|| fail("an edge"))?;
                let f = at
                    .index(self.edge_id[&(last, when_false)])
                    .ok_or_else(|| fail("an edge"))?;
                let scalar = at.extract(condition).ok_or_else(|| fail("a condition"))?;
                let next = at.select(scalar, t, f).ok_or_else(|| fail("a select"))?;
                // A mask known here (no branch taken both ways before, or
                // an scf.if's way) that has traces on both ways needs no
                // guard.
                let (traced_t, traced_f) = (
                    self.edge_mask[&(last, when_true)],
                    self.edge_mask[&(last, when_false)],
                );
                let known = constant_int(mask);
                let branch = TwoWays {
                    condition: scalar,
                    when_true: (last, when_true),
                    when_false: (last, when_false),
                    masks: known.map(|m| (m & traced_t, m & traced_f)),
                };
                if let Some(known) = known
                    && known & traced_t != 0
                    && known & traced_f != 0
                {
                    let mask_t = at.index(known & traced_t).ok_or_else(|| fail("a mask"))?;
                    let mask_f = at.index(known & traced_f).ok_or_else(|| fail("a mask"))?;
                    let mask = at
                        .select(scalar, mask_t, mask_f)
                        .ok_or_else(|| fail("a select"))?;
                    return Ok((next, mask, Some(branch)));
                }
                let mask_t = at.index(traced_t).ok_or_else(|| fail("a mask"))?;
                let mask_f = at.index(traced_f).ok_or_else(|| fail("a mask"))?;
                let way = at
                    .select(scalar, mask_t, mask_f)
                    .ok_or_else(|| fail("a select"))?;
                let mask = at.arith("arith.andi", mask, way).ok_or_else(|| fail("a mask"))?;
                let zero = at.index(0).ok_or_else(|| fail("a mask"))?;
                let traced = at
                    .compare("arith.cmpi", 1, mask, zero)
                    .ok_or_else(|| fail("a mask"))?;
                let traced = at.tensor_of(traced).ok_or_else(|| fail("a guard"))?;
                let reason = format!(
                    "the path through {} was not traced (each way of each branch was, not this mix of them)",
                    place(self.nodes[last].op.location())
                );
                let guard = GuardOp::build(
                    at.context(),
                    self.nodes[last].op.location(),
                    traced,
                    ids.fresh(),
                    &reason,
                )
                .map_err(|e| fail(&e.to_string()))?;
                at.insert(guard);
                Ok((next, mask, Some(branch)))
            }
            _ => Err(fail("a block ends without one way on")),
        }
    }
}

/// A location as a reader writes it: `m.py:4:0`, not `loc("m.py":4:0)`.
fn place(location: Location) -> String {
    let text = location.to_string();
    text.strip_prefix("loc(")
        .and_then(|t| t.strip_suffix(')'))
        .unwrap_or(&text)
        .replace('"', "")
}

/// `meta.unary` `not` of a rank-0 `i1` tensor.
fn not<'c, 'a>(at: &Builder<'c, 'a>, condition: Value<'c, '_>) -> Option<Value<'c, 'a>> {
    let kind = StringAttribute::new(at.context(), "not").into();
    at.op(
        UnaryOp::NAME,
        &[condition],
        &[condition.r#type()],
        &[("kind", kind)],
    )?
    .result(0)
    .ok()
    .map(Into::into)
}

/// Zeros of `r#type` (a static tensor, an index or a scalar).
fn zero<'c, 'a>(at: &Builder<'c, 'a>, r#type: Type<'c>) -> Option<Value<'c, 'a>> {
    let zero_of = |element: Type<'c>| -> Attribute<'c> {
        if element.is_index() || element.is_integer() {
            IntegerAttribute::new(element, 0).into()
        } else {
            FloatAttribute::new(at.context(), element, 0.0).into()
        }
    };
    match RankedTensorType::try_from(r#type) {
        Ok(tensor) if tensor.has_static_shape() => at.splat(r#type, zero_of(tensor.element())),
        Ok(_) => None,
        Err(_) => at.constant(zero_of(r#type)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Graph = (BTreeSet<(usize, usize)>, HashMap<usize, Vec<usize>>);

    fn graph(edges: &[(usize, usize)]) -> Graph {
        let edges: BTreeSet<(usize, usize)> = edges.iter().copied().collect();
        let mut predecessors: HashMap<usize, Vec<usize>> = HashMap::new();
        for &(x, y) in &edges {
            predecessors.entry(y).or_default().push(x);
        }
        (edges, predecessors)
    }

    /// The switch-cases of a graph, and their blocks numbered from 1.
    fn cases_of(
        edges: &BTreeSet<(usize, usize)>,
        predecessors: &HashMap<usize, Vec<usize>>,
    ) -> (Vec<Vec<Case>>, Vec<Vec<Vec<usize>>>) {
        let successors =
            |v: usize| -> Vec<usize> { edges.range((v, 0)..=(v, usize::MAX)).map(|&(_, y)| y).collect() };
        let switches = assign_cases(edges, &successors, predecessors);
        let blocks = switches
            .iter()
            .map(|s| {
                s.iter()
                    .map(|c| c.block.iter().map(|v| v + 1).collect())
                    .collect()
            })
            .collect();
        (switches, blocks)
    }

    #[test]
    fn case_assignment_of_the_figure_2_shape() {
        // Three traces: 1 2 3 4 6 8 9 | 1 2 3 5 6 8 9 | 1 7 8 9 (1 and 3
        // branch); nodes are numbered from 0 as 1..9 minus one.
        let n = |k: usize| k - 1;
        let (edges, predecessors) = graph(&[
            (START, n(1)),
            (n(1), n(2)),
            (n(1), n(7)),
            (n(2), n(3)),
            (n(3), n(4)),
            (n(3), n(5)),
            (n(4), n(6)),
            (n(5), n(6)),
            (n(6), n(8)),
            (n(7), n(8)),
            (n(8), n(9)),
            (n(9), END),
        ]);
        let (switches, blocks) = cases_of(&edges, &predecessors);
        assert_eq!(
            blocks,
            vec![
                vec![vec![1]],
                vec![vec![2, 3], vec![7]],
                vec![vec![4], vec![5], vec![]],
                vec![vec![6], vec![]],
                vec![vec![8, 9]],
            ]
        );
        // The empty cases pass node 7's edge on; node 6's case has two
        // control edges.
        assert_eq!(switches[2][2].control, vec![(n(7), n(8))]);
        assert_eq!(switches[3][0].control, vec![(n(4), n(6)), (n(5), n(6))]);
        assert_eq!(switches[4][0].control, vec![(n(6), n(8)), (n(7), n(8))]);
    }

    /// The supplement's own Figure 2 shape, as far as its text states it:
    /// node 1 has three ways (b, c, d), node 8 three incoming edges (g, h,
    /// i), and i is passed on through an empty case while g and h are not
    /// yet current. (The nodes between are reconstructed; the figure is not
    /// in the text.) Traces built from Python branches cannot give a node
    /// three successors, so `test/Transforms/merge-figure2.mlir` writes node
    /// 1 as two decisions; the case assignment itself has no such limit.
    #[test]
    fn case_assignment_of_a_three_way_node_as_in_figure_2() {
        let n = |k: usize| k - 1;
        let (edges, predecessors) = graph(&[
            (START, n(1)),
            (n(1), n(2)), // b
            (n(1), n(5)), // c
            (n(1), n(7)), // d
            (n(2), n(3)), // e
            (n(2), n(4)), // f
            (n(5), n(6)),
            (n(6), n(4)),
            (n(3), n(8)), // g
            (n(4), n(8)), // h
            (n(7), n(8)), // i
            (n(8), n(9)),
            (n(9), END),
        ]);
        let (switches, blocks) = cases_of(&edges, &predecessors);
        assert_eq!(
            blocks,
            vec![
                vec![vec![1]],
                vec![vec![2], vec![5, 6], vec![7]],
                vec![vec![3], vec![4], vec![]],
                vec![vec![8, 9]],
            ]
        );
        assert_eq!(switches[0][0].control, vec![(START, n(1))]);
        // Node 4's case is entered by f and by the chain 5 6; i is passed on.
        assert_eq!(switches[2][1].control, vec![(n(2), n(4)), (n(6), n(4))]);
        assert_eq!(switches[2][2].control, vec![(n(7), n(8))]);
        assert_eq!(
            switches[3][0].control,
            vec![(n(3), n(8)), (n(4), n(8)), (n(7), n(8))]
        );
    }
}
