//! Operator fusion: planning ([`plan`]), rewriting a block into outlined
//! `meta.fused` kernels ([`fuse_block`]) and rendering plans for
//! `jitc explain` ([`render`]).
//!
//! The `meta-fuse` pass (`transforms/fuse.rs`) and `jitc explain` both go
//! through [`prepare_block`] and [`plan_block`], so what `explain` shows is
//! what the pass does.

pub mod plan;
pub mod render;

use crate::rewrite::{
    Mapping, clone_op, erase, is_dense_splat, key, mapped, move_before, op_key, owner_key, replace_uses,
    replace_uses_in, users,
};
use jitc_dialect::{emit_error, ops::tensor_type};
use melior::{
    Context,
    dialect::func,
    ir::{
        Attribute, Block, BlockLike, BlockRef, Identifier, Location, OperationRef, Region, RegionLike, Type,
        Value, ValueLike,
        attribute::{DenseI64ArrayAttribute, FlatSymbolRefAttribute, StringAttribute, TypeAttribute},
        operation::{OperationLike, OperationMutLike},
        r#type::{DimSize, FunctionType, ShapedTypeLike},
    },
};
pub use plan::{Blocked, DEFAULT_FANOUT_LIMIT, Node, NodeKind, Options, Plan, ValueUse};
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};

use jitc_dialect::verify::op_name as name_of;

/// The op of `position` (a block's ops by identity) that defines `value`.
fn producer_in(position: &HashMap<usize, usize>, value: Value) -> Option<usize> {
    position.get(&owner_key(value)?).copied()
}

/// Whether `op` is a splat `arith.constant` tensor.
fn is_splat_constant(op: OperationRef) -> bool {
    name_of(op) == "arith.constant"
        && op.result(0).is_ok_and(|r| tensor_type(r.into()).is_some())
        && op.attribute("value").is_ok_and(is_dense_splat)
}

/// What `op` is to the fuser.
pub fn kind_of(op: OperationRef) -> NodeKind {
    match name_of(op).as_str() {
        "meta.reindex" => NodeKind::Reindex,
        "meta.reindex_reduce" => NodeKind::Reduce,
        "meta.unary" | "meta.binary" | "meta.ternary" => NodeKind::Elementwise,
        _ if is_splat_constant(op) => NodeKind::Constant,
        _ => NodeKind::Opaque,
    }
}

fn shape(value: Value) -> Vec<i64> {
    tensor_type(value)
        .map(|t| {
            (0..t.rank())
                .map(|d| match t.dim_size(d) {
                    Ok(DimSize::Static(n)) => n as i64,
                    _ => -1,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Bytes of a value, with [`plan::DYNAMIC_DIM_ESTIMATE`] per `?`.
pub fn bytes_of(value: Value) -> u64 {
    let Some(tensor) = tensor_type(value) else {
        return 8;
    };
    let width =
        jitc_dialect::kinds::ElementType::from_type(tensor.element()).map_or(8, |e| e.byte_width()) as u64;
    (0..tensor.rank()).fold(width, |bytes, d| {
        bytes.saturating_mul(match tensor.dim_size(d) {
            Ok(DimSize::Static(n)) => n,
            _ => plan::DYNAMIC_DIM_ESTIMATE,
        })
    })
}

/// Whether `op` is a reduce-add of a product of two reindexes (see
/// [`Node::contraction`]).
fn is_contraction(op: OperationRef) -> bool {
    fn kind(op: OperationRef) -> Option<String> {
        op.attribute("kind")
            .ok()
            .and_then(jitc_dialect::ops::string_attribute)
            .map(str::to_owned)
    }
    if name_of(op) != "meta.reindex_reduce" || kind(op).as_deref() != Some("add") {
        return false;
    }
    let Some(product) = op.operand(0).ok().and_then(crate::rewrite::defining_op) else {
        return false;
    };
    name_of(product) == "meta.binary"
        && kind(product).as_deref() == Some("mul")
        && product.operand_count() == 2
        && (0..2).all(|i| {
            product
                .operand(i)
                .ok()
                .and_then(crate::rewrite::defining_op)
                .is_some_and(|r| name_of(r) == "meta.reindex")
        })
}

fn node_of(index: usize, op: OperationRef, labels: bool) -> Node {
    let kind = kind_of(op);
    let contraction = is_contraction(op);
    let domain = match kind {
        NodeKind::Reduce => op.operand(0).map(shape).unwrap_or_default(),
        NodeKind::Opaque => Vec::new(),
        _ => op.result(0).map(|r| shape(r.into())).unwrap_or_default(),
    };
    if !labels {
        return Node {
            kind,
            label: String::new(),
            domain,
            stop_fuse: op.has_attribute("stop_fuse"),
            contraction,
        };
    }
    let detail = op
        .attribute("kind")
        .ok()
        .and_then(jitc_dialect::ops::string_attribute)
        .map(|k| format!(" \"{k}\""))
        .unwrap_or_default();
    let result = op
        .result(0)
        .map(|r| format!(" : {}", r.r#type()))
        .unwrap_or_default();
    Node {
        kind,
        label: format!("#{index} {}{detail}{result}", name_of(op)),
        domain,
        stop_fuse: op.has_attribute("stop_fuse"),
        contraction,
    }
}

/// The ops of `block` before its terminator, in order.
pub fn block_ops<'c, 'a>(block: BlockRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut ops = Vec::new();
    let mut next = block.first_operation();
    while let Some(op) = next {
        next = op.next_in_block();
        if next.is_some() || !is_terminator(op) {
            ops.push(op);
        }
    }
    ops
}

/// Every op of `block`, its terminator included: the nodes of a plan (the
/// terminator is where values leave the block).
pub fn all_ops<'c, 'a>(block: BlockRef<'c, 'a>) -> Vec<OperationRef<'c, 'a>> {
    let mut ops = block_ops(block);
    ops.extend(block.terminator().filter(|t| is_terminator(*t)));
    ops
}

fn is_terminator(op: OperationRef) -> bool {
    matches!(
        name_of(op).as_str(),
        "func.return" | "scf.yield" | "scf.condition"
    )
}

/// Every operand of `op` and of the ops nested in its regions, with whether
/// it comes from inside `op`.
fn operands_within<'c, 'a>(op: OperationRef<'c, 'a>) -> Vec<Value<'c, 'a>> {
    let mut operands: Vec<Value> = op.operands().collect();
    if op.region_count() == 0 {
        return operands;
    }
    let mut inner = HashSet::new();
    let mut nested_operands = Vec::new();
    for nested in jitc_dialect::verify::collect_ops(op).into_iter().skip(1) {
        inner.insert(op_key(nested));
        insert_block_arguments(nested, &mut inner);
        nested_operands.extend(nested.operands());
    }
    insert_block_arguments(op, &mut inner);
    for value in nested_operands {
        let defined_inside =
            inner.contains(&key(value)) || owner_key(value).is_some_and(|owner| inner.contains(&owner));
        if !defined_inside {
            operands.push(value);
        }
    }
    operands
}

/// The fuser's view of `ops` (one block): its nodes and the values that
/// fusable ops use.
pub fn extract(ops: &[OperationRef], options: Options) -> (Vec<Node>, Vec<ValueUse>) {
    let position: HashMap<usize, usize> = ops.iter().enumerate().map(|(i, op)| (op_key(*op), i)).collect();
    let nodes: Vec<Node> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| node_of(i, *op, options.labels))
        .collect();
    let mut values: Vec<ValueUse> = Vec::new();
    let mut value_index: HashMap<usize, usize> = HashMap::new();
    for (i, op) in ops.iter().enumerate() {
        for operand in operands_within(*op) {
            let producer = producer_in(&position, operand);
            let v = *value_index.entry(key(operand)).or_insert_with(|| {
                values.push(ValueUse {
                    producer,
                    consumers: Vec::new(),
                    bytes: bytes_of(operand),
                });
                values.len() - 1
            });
            // Ops come in order, so a consumer already listed is the last
            // one (an op reading a value twice): checking the last keeps
            // this linear in the uses of a value with many consumers.
            if values[v].consumers.last() != Some(&i) {
                values[v].consumers.push(i);
            }
        }
    }
    // A value between opaque ops alone costs nothing whatever is fused,
    // but it is still a path: without it, rule 3 would not see that a
    // fusable op reaches another through a chain of loops or calls (a
    // merge of the two would make a cycle no order can satisfy).
    for v in &mut values {
        let fusable = v.producer.is_some_and(|p| nodes[p].kind.fusable())
            || v.consumers.iter().any(|&c| nodes[c].kind.fusable());
        if !fusable {
            v.bytes = 0;
        }
    }
    // Ops with effects keep their order ([`reorder`] chains them), and that
    // order is a path too: a group that feeds a guard cannot also hold an
    // op that reads a loop after the guard. Each effect gets a free edge
    // to the next.
    if let Some(block) = ops.first().and_then(|op| op.block()) {
        let kernels = module_kernels(block);
        let effects: Vec<usize> = (0..ops.len())
            .filter(|&i| !reorderable(ops[i], &kernels))
            .collect();
        for pair in effects.windows(2) {
            values.push(ValueUse {
                producer: Some(pair[0]),
                consumers: vec![pair[1]],
                bytes: 0,
            });
        }
    }
    (nodes, values)
}

/// Adds the arguments of every block of `op`'s regions to `keys`.
fn insert_block_arguments(op: OperationRef, keys: &mut HashSet<usize>) {
    for region in op.regions() {
        let mut block = region.first_block();
        while let Some(b) = block {
            keys.extend(
                (0..b.argument_count())
                    .filter_map(|i| b.argument(i).ok())
                    .map(|a| key(a.into())),
            );
            block = b.next_in_region();
        }
    }
}

/// Builds the fuser's view of `ops` (one block) and plans it.
pub fn plan_block(ops: &[OperationRef], options: Options) -> Plan {
    let (nodes, values) = extract(ops, options);
    plan::plan(nodes, &values, options)
}

/// Duplicates every reindex and splat constant used by several fusable ops
/// of the block into one copy per user, so that a broadcast is recomputed
/// inside each consumer's group rather than materialized (DESIGN.md).
/// Returns the sets of copies.
pub fn prepare_block(block: BlockRef) -> Vec<Vec<usize>> {
    let mut copies = Vec::new();
    for op in block_ops(block) {
        let kind = kind_of(op);
        if !matches!(kind, NodeKind::Reindex | NodeKind::Constant) || op.has_attribute("stop_fuse") {
            continue;
        }
        let Ok(result) = op.result(0) else { continue };
        let mut fusable: Vec<OperationRef> = Vec::new();
        let mut seen: HashSet<usize> = HashSet::new();
        for user in users(result.into()) {
            let same_block = user.block().is_some_and(|b| b == block);
            if same_block && kind_of(user).fusable() && seen.insert(op_key(user)) {
                fusable.push(user);
            }
        }
        if fusable.len() < 2 {
            continue;
        }
        let mut set = vec![op_key(op)];
        for user in fusable.into_iter().skip(1) {
            let copy = block.insert_operation_before(user, clone_op(op));
            let new: Value = copy.result(0).expect("a copy has the original's result").into();
            replace_uses_in(user, result.into(), new);
            set.push(op_key(copy));
        }
        copies.push(set);
    }
    copies
}

/// Whether `op` can stop a run by itself, so that the interpreter reports
/// an error even when nothing reads its result: an integer `div` or `mod`
/// (division by zero), and any op with a dynamic shape or index operands
/// (sizes that disagree at run time, affine arithmetic on symbols). An op
/// of static shapes whose maps the verifier checked cannot.
pub(crate) fn may_trap(op: OperationRef) -> bool {
    let dynamic =
        op.operands()
            .chain(op.results().map(Into::into))
            .any(|v| match jitc_dialect::ops::tensor_type(v) {
                Some(t) => crate::rewrite::dims(t).iter().any(|&d| d < 0),
                None => true,
            });
    if dynamic {
        return true;
    }
    let Some(binary) = jitc_dialect::ops::BinaryOp::cast(op) else {
        return false;
    };
    let integer = binary
        .lhs()
        .and_then(|v| jitc_dialect::ops::tensor_type(v))
        .and_then(|t| {
            jitc_dialect::kinds::ElementType::from_type(melior::ir::r#type::ShapedTypeLike::element(&t))
        })
        .is_some_and(|e| !e.is_float());
    integer
        && matches!(
            binary.kind(),
            Some(jitc_dialect::kinds::BinaryKind::Div | jitc_dialect::kinds::BinaryKind::Mod)
        )
}

/// Rejoins copies from [`prepare_block`] that ended up alone in their
/// groups: one of them serves every such user. Returns whether any was
/// erased (the block must then be planned again).
fn rejoin_lone_copies(ops: &[OperationRef], plan: &Plan, copies: &[Vec<usize>]) -> bool {
    let position: HashMap<usize, usize> = ops.iter().enumerate().map(|(i, op)| (op_key(*op), i)).collect();
    let mut erased = false;
    for set in copies {
        let lone: Vec<usize> = set
            .iter()
            .filter_map(|k| position.get(k).copied())
            .filter(|&i| plan.group_of[i].is_some_and(|g| plan.groups[g].len() == 1))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if lone.len() < 2 {
            continue;
        }
        let keep: Value = ops[lone[0]].result(0).expect("a copy has a result").into();
        for &i in &lone[1..] {
            let old: Value = ops[i].result(0).expect("a copy has a result").into();
            // The erased copy has no uses left and is not touched again.
            replace_uses(old, keep);
            erase(ops[i]);
            erased = true;
        }
    }
    erased
}

/// Plans `block` as `meta-fuse` does, duplication of shared broadcasts
/// included. The block is changed only by that duplication.
pub fn prepare_and_plan(block: BlockRef, options: Options) -> Plan {
    let copies = prepare_block(block);
    let plan = plan_block(&all_ops(block), options);
    if rejoin_lone_copies(&all_ops(block), &plan, &copies) {
        return plan_block(&all_ops(block), options);
    }
    plan
}

/// Symbol names already taken in a module, and the next kernel number to
/// try for each function.
pub struct Symbols(HashSet<String>, HashMap<String, usize>);

impl Symbols {
    /// The names of the ops directly in `module_body`.
    pub fn of(module_body: BlockRef) -> Self {
        Self(
            block_ops(module_body)
                .into_iter()
                .chain(module_body.terminator())
                .filter_map(|op| {
                    op.attribute("sym_name")
                        .ok()
                        .and_then(jitc_dialect::ops::string_attribute)
                })
                .map(str::to_owned)
                .collect(),
            HashMap::new(),
        )
    }

    fn fresh(&mut self, base: &str) -> String {
        let next = self.1.entry(base.to_owned()).or_insert(0);
        loop {
            let name = format!("{base}_fused_{next}");
            *next += 1;
            if self.0.insert(name.clone()) {
                return name;
            }
        }
    }
}

/// Fuses `block`: plans it and outlines every group into a private
/// `meta.fused` kernel appended to `module_body`, called with `func.call`.
/// Returns the plan, or `None` after emitting an error.
pub fn fuse_block<'c>(
    context: &'c Context,
    module_body: BlockRef<'c, '_>,
    symbols: &mut Symbols,
    function_name: &str,
    block: BlockRef<'c, '_>,
    options: Options,
) -> Option<Plan> {
    let plan = prepare_and_plan(block, options);
    let ops = all_ops(block);
    for members in &plan.groups {
        let member_ops: Vec<OperationRef> = members.iter().map(|&i| ops[i]).collect();
        let domain = plan.nodes[members[0]].domain.clone();
        if !outline(
            context,
            module_body,
            symbols,
            function_name,
            block,
            &member_ops,
            &domain,
        ) {
            return None;
        }
    }
    if !reorder(block) {
        emit_error(
            block
                .parent_operation()
                .map_or(Location::unknown(context), |op| op.location()),
            "internal compiler error: meta-fuse left a block it cannot order",
        );
        return None;
    }
    Some(plan)
}

fn outline<'c>(
    context: &'c Context,
    module_body: BlockRef<'c, '_>,
    symbols: &mut Symbols,
    function_name: &str,
    block: BlockRef<'c, '_>,
    members: &[OperationRef<'c, '_>],
    domain: &[i64],
) -> bool {
    let member_keys: HashSet<usize> = members.iter().map(|op| op_key(*op)).collect();
    let mut inputs: Vec<Value> = Vec::new();
    let mut outputs: Vec<Value> = Vec::new();
    for op in members {
        for operand in op.operands() {
            let internal = owner_key(operand).is_some_and(|owner| member_keys.contains(&owner));
            if !internal && !inputs.contains(&operand) {
                inputs.push(operand);
            }
        }
        for result in op.results() {
            let value: Value = result.into();
            if users(value)
                .iter()
                .any(|user| !member_keys.contains(&op_key(*user)))
            {
                outputs.push(value);
            }
        }
    }
    if outputs.is_empty() && !members.iter().any(|op| may_trap(*op)) {
        // Nothing outside the group reads what it computes (a reindex left
        // dead by specialization, say) and none of its ops can stop the
        // run: they go, and no kernel that returns nothing is made. (An
        // integer division may divide by zero, which the interpreter
        // reports even when the quotient is unused: such a group stays.)
        for op in members.iter().rev() {
            // Users come after producers in `members`; erased in reverse,
            // each op's results have no users left, and none is touched
            // again.
            erase(*op);
        }
        return true;
    }
    let location = members
        .last()
        .map_or(Location::unknown(context), |op| op.location());
    let input_types: Vec<Type> = inputs.iter().map(|v| v.r#type()).collect();
    let output_types: Vec<Type> = outputs.iter().map(|v| v.r#type()).collect();

    let body = Block::new(&input_types.iter().map(|t| (*t, location)).collect::<Vec<_>>());
    let mut mapping = Mapping::new();
    for (i, input) in inputs.iter().enumerate() {
        mapping.insert(
            key(*input),
            body.argument(i).expect("one argument per input").to_raw(),
        );
    }
    for op in members {
        let mut copy = clone_op(*op);
        for i in 0..copy.operand_count() {
            let operand = copy.operand(i).expect("index below the operand count");
            if mapping.contains_key(&key(operand)) {
                copy.set_operand(i, mapped(&mapping, operand));
            }
        }
        let copy = body.append_operation(copy);
        for (old, new) in op.results().zip(copy.results()) {
            mapping.insert(key(old.into()), new.to_raw());
        }
    }
    // SAFETY: every output was mapped to a live value of the kernel body.
    let returned: Vec<Value> = outputs.iter().map(|v| mapped(&mapping, *v)).collect();
    body.append_operation(func::r#return(&returned, location));
    let region = Region::new();
    region.append_block(body);

    let name = symbols.fresh(function_name);
    let function_type = FunctionType::new(context, &input_types, &output_types);
    let kernel = func::func(
        context,
        StringAttribute::new(context, &name),
        TypeAttribute::new(function_type.into()),
        region,
        &[
            (
                Identifier::new(context, "sym_visibility"),
                StringAttribute::new(context, "private").into(),
            ),
            (Identifier::new(context, "meta.fused"), Attribute::unit(context)),
            (
                Identifier::new(context, "meta.domain"),
                DenseI64ArrayAttribute::new(context, domain).into(),
            ),
        ],
        location,
    );
    module_body.append_operation(kernel);

    let call = func::call(
        context,
        FlatSymbolRefAttribute::new(context, &name),
        &inputs,
        &output_types,
        location,
    );
    let Some(last) = members.last() else { return false };
    let call = block.insert_operation_before(*last, call);
    for (i, output) in outputs.iter().enumerate() {
        let Ok(new) = call.result(i) else { return false };
        replace_uses(*output, new.into());
    }
    for op in members.iter().rev() {
        // The members' results are used only by members erased before
        // them (reverse order); none is touched again.
        erase(*op);
    }
    true
}

/// Whether `op` may move past other effectful ops: pure meta and arith ops,
/// tensor queries and calls of fused kernels.
fn reorderable(op: OperationRef, kernels: &HashSet<String>) -> bool {
    let name = name_of(op);
    let name = name.as_str();
    jitc_dialect::ops::is_pure_meta_op(op)
        || name.starts_with("arith.")
        || name.starts_with("tensor.")
        || (name == "func.call"
            && op
                .attribute("callee")
                .ok()
                .and_then(|a| FlatSymbolRefAttribute::try_from(a).ok())
                .is_some_and(|callee| kernels.contains(callee.value())))
}

/// The names of the `meta.fused` kernels of the module that holds `block`,
/// however deep in nested regions (`scf.if`, `scf.for`) the block is.
fn module_kernels(block: BlockRef) -> HashSet<String> {
    let mut module = block.parent_operation();
    while let Some(op) = module
        && name_of(op) != "builtin.module"
    {
        module = op.parent_operation();
    }
    module
        .and_then(|m| m.region(0).ok())
        .and_then(|r| r.first_block())
        .map(|body| {
            block_ops(body)
                .into_iter()
                .filter(|op| op.has_attribute("meta.fused"))
                .filter_map(|op| {
                    op.attribute("sym_name")
                        .ok()
                        .and_then(jitc_dialect::ops::string_attribute)
                })
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Puts the block's ops in an order where every value is defined before
/// its uses, keeping the original order wherever possible and never
/// swapping two ops with effects. Returns false if no such order exists.
fn reorder(block: BlockRef) -> bool {
    let ops = block_ops(block);
    let position: HashMap<usize, usize> = ops.iter().enumerate().map(|(i, op)| (op_key(*op), i)).collect();
    let kernels = module_kernels(block);
    let mut dependencies: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
    let mut in_order = true;
    let mut last_effect: Option<usize> = None;
    for (i, op) in ops.iter().enumerate() {
        for operand in operands_within(*op) {
            let producer = producer_in(&position, operand);
            if let Some(p) = producer.filter(|&p| p != i) {
                in_order &= p < i;
                dependencies[i].push(p);
            }
        }
        if !reorderable(*op, &kernels) {
            dependencies[i].extend(last_effect);
            last_effect = Some(i);
        }
    }
    if in_order {
        return true;
    }
    let mut waiting: Vec<usize> = dependencies.iter().map(Vec::len).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); ops.len()];
    for (i, deps) in dependencies.iter().enumerate() {
        for &d in deps {
            dependents[d].push(i);
        }
    }
    let mut ready: BinaryHeap<std::cmp::Reverse<usize>> = (0..ops.len())
        .filter(|&i| waiting[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(ops.len());
    while let Some(std::cmp::Reverse(i)) = ready.pop() {
        order.push(i);
        for &d in &dependents[i] {
            waiting[d] -= 1;
            if waiting[d] == 0 {
                ready.push(std::cmp::Reverse(d));
            }
        }
    }
    if order.len() != ops.len() {
        return false;
    }
    let Some(terminator) = block.terminator() else {
        return false;
    };
    for i in order {
        move_before(ops[i], terminator);
    }
    true
}
