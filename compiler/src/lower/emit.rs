//! A small IR builder for lowering: ops appended to one block, with the
//! constants and comparisons lowering needs. Every op goes through
//! `OperationBuilder`, so a malformed op is an error, never a panic.

use crate::Error;
use melior::{
    Context,
    ir::{
        Attribute, Block, BlockLike, BlockRef, Identifier, Location, Region, RegionLike, Type, Value,
        ValueLike,
        attribute::{FloatAttribute, IntegerAttribute, StringAttribute},
        operation::OperationBuilder,
        r#type::IntegerType,
    },
};

/// An `scf.for` being built: an emitter for its body, the induction
/// variable, the carried values inside the body and the loop's results
/// after it.
pub type Loop<'c, 'a> = (
    Emitter<'c, 'a>,
    Value<'c, 'a>,
    Vec<Value<'c, 'a>>,
    Vec<Value<'c, 'a>>,
);

/// Appends ops to a block.
#[derive(Clone, Copy)]
pub struct Emitter<'c, 'a> {
    /// The context.
    pub context: &'c Context,
    /// Where the ops come from.
    pub location: Location<'c>,
    /// Where they go.
    pub block: BlockRef<'c, 'a>,
    /// The alias scopes its element accesses carry, when the kernel being
    /// built writes no buffer it reads (`super::access`); `None` leaves
    /// every access unmarked.
    pub scopes: Option<Scopes<'c>>,
}

/// The two alias scopes of a kernel's element accesses (LLVM's
/// `!alias.scope` and `!noalias`), one domain: loads of its arguments and
/// everything it writes. A kernel writes no argument's buffer (the runtime
/// allocates the results), except the one argument a nest written in place
/// writes (`super::inplace`: the runtime donates a buffer nothing else
/// holds, so no other argument is that buffer), whose loads are left
/// unmarked. So the two scopes never alias, and LLVM may hoist a load that
/// no iteration changes out of a loop that stores, and vectorize without
/// checking at run time that the buffers are apart. Each kernel has scopes
/// of its own (distinct attributes): a row chain's stages write and read
/// the same scratch as different kernels, so were they ever inlined into
/// one function (they are `noinline` today), one stage's writes must not
/// be taken for apart from the next one's reads.
#[derive(Clone, Copy)]
pub struct Scopes<'c> {
    /// `[#arguments]`.
    arguments: Attribute<'c>,
    /// `[#writes]`.
    writes: Attribute<'c>,
    /// The argument whose buffer the nest writes in place, if any.
    written: Option<usize>,
}

impl<'c> Scopes<'c> {
    /// Two new scopes, in `context`, distinct from every other kernel's.
    /// (Each in a domain of its own: a load's scope is in the store's
    /// `noalias` list, so the two do not alias, whatever the domains.)
    pub fn new(context: &'c Context) -> Result<Self, Error> {
        // Every parse makes new distinct attributes.
        let scope = |name: &str| {
            Attribute::parse(
                context,
                &format!(
                    "[#llvm.alias_scope<id = distinct[1]<>, domain = #llvm.alias_scope_domain<id = distinct[0]<>, \
                     description = \"jitc kernel\">, description = \"jitc {name}\">]"
                ),
            )
            .ok_or_else(|| failed("an alias scope"))
        };
        Ok(Self {
            arguments: scope("arguments")?,
            writes: scope("writes")?,
            written: None,
        })
    }

    /// The scopes of a nest that writes argument `argument`'s buffer.
    pub fn written_in_place(self, argument: usize) -> Self {
        Self {
            written: Some(argument),
            ..self
        }
    }
}

/// The body of a new function taking `parameters`: its region, and an
/// emitter at its entry block (with alias scopes of its own when
/// `scoped`). The caller makes the function of the region and appends it
/// to a module, which then owns the block for as long as it lives.
pub fn function_body<'c, 'a>(
    context: &'c Context,
    location: Location<'c>,
    parameters: &[Type<'c>],
    scoped: bool,
) -> Result<(Region<'c>, Emitter<'c, 'a>), Error> {
    let region = Region::new();
    let entry = region.append_block(Block::new(
        &parameters.iter().map(|t| (*t, location)).collect::<Vec<_>>(),
    ));
    // SAFETY: the block belongs to `region`, which becomes a function of a
    // module that outlives every use of the emitter.
    let block = unsafe { BlockRef::from_raw(entry.to_raw()) };
    let scopes = if scoped { Some(Scopes::new(context)?) } else { None };
    Ok((
        region,
        Emitter {
            context,
            location,
            block,
            scopes,
        },
    ))
}

fn failed(name: &str) -> Error {
    Error::Lowering(format!("building '{name}' failed"))
}

/// A lowering error: `message` says what was missing or malformed.
pub(super) fn error(message: impl Into<String>) -> Error {
    Error::Lowering(message.into())
}

impl<'c, 'a> Emitter<'c, 'a> {
    /// The alias-scope attributes of a load of argument `argument`'s
    /// element ([`Scopes`]): none without scopes, or for the argument a
    /// nest writes in place.
    pub fn argument_scopes(&self, argument: usize) -> Vec<(&'static str, Attribute<'c>)> {
        match self.scopes {
            Some(scopes) if scopes.written != Some(argument) => {
                vec![
                    ("alias_scopes", scopes.arguments),
                    ("noalias_scopes", scopes.writes),
                ]
            }
            _ => Vec::new(),
        }
    }

    /// The alias-scope attributes of a store or an atomic ([`Scopes`]):
    /// none without scopes.
    pub fn write_scopes(&self) -> Vec<(&'static str, Attribute<'c>)> {
        match self.scopes {
            Some(scopes) => vec![
                ("alias_scopes", scopes.writes),
                ("noalias_scopes", scopes.arguments),
            ],
            None => Vec::new(),
        }
    }

    /// The `syncscope` attribute of jitc's atomics and fences: `"device"`.
    /// Their memory is touched by one call's threads on one device (a
    /// status record, which the host reads only after the call, or a split
    /// reduction's counters), so the device's scope is enough. On the GPU
    /// that makes `atom.gpu` and `fence.sc.gpu` rather than `.sys`: a
    /// system-scoped atomic on mapped host memory (where the status
    /// records live) is not allowed on a GPU attached over PCIe (an H200
    /// under compute-sanitizer reported it), and a system-scoped fence
    /// waits for the whole system. x86 ignores the scope.
    pub fn device_scope(&self) -> (&'static str, Attribute<'c>) {
        ("syncscope", StringAttribute::new(self.context, "device").into())
    }

    /// Appends `name` with `operands`, `results` and `attributes`; returns
    /// its first result, if any.
    pub fn op(
        &self,
        name: &str,
        operands: &[Value<'c, '_>],
        results: &[Type<'c>],
        attributes: &[(&str, Attribute<'c>)],
    ) -> Result<Option<Value<'c, 'a>>, Error> {
        let attributes: Vec<(Identifier, Attribute)> = attributes
            .iter()
            .map(|(n, a)| (Identifier::new(self.context, n), *a))
            .collect();
        let op = OperationBuilder::new(name, self.location)
            .add_operands(operands)
            .add_results(results)
            .add_attributes(&attributes)
            .build()
            .map_err(|_| failed(name))?;
        let op = self.block.append_operation(op);
        Ok(jitc_dialect::ops::result_at(&op, 0))
    }

    /// Appends an op without attributes and returns all its results, one
    /// of each of `results` types.
    pub fn values(
        &self,
        name: &str,
        operands: &[Value<'c, '_>],
        results: &[Type<'c>],
    ) -> Result<Vec<Value<'c, 'a>>, Error> {
        let op = OperationBuilder::new(name, self.location)
            .add_operands(operands)
            .add_results(results)
            .build()
            .map_err(|_| failed(name))?;
        let op = self.block.append_operation(op);
        (0..results.len())
            .map(|i| op.result(i).map(Into::into).map_err(|_| failed(name)))
            .collect()
    }

    /// Appends an op with exactly one result of `result` type.
    pub fn value(
        &self,
        name: &str,
        operands: &[Value<'c, '_>],
        result: Type<'c>,
    ) -> Result<Value<'c, 'a>, Error> {
        self.op(name, operands, &[result], &[])?
            .ok_or_else(|| failed(name))
    }

    /// [`Self::value`] of an `arith` float op carrying the fast-math
    /// `flags` (`"contract"`, `"afn"`, `"reassoc"`: what goes between the
    /// brackets of `#arith.fastmath<...>`).
    pub fn value_with_flags(
        &self,
        name: &str,
        operands: &[Value<'c, '_>],
        result: Type<'c>,
        flags: &str,
    ) -> Result<Value<'c, 'a>, Error> {
        let flags = Attribute::parse(self.context, &format!("#arith.fastmath<{flags}>"))
            .ok_or_else(|| error(format!("the fast-math flags '{flags}' do not parse")))?;
        self.op(name, operands, &[result], &[("fastmath", flags)])?
            .ok_or_else(|| failed(name))
    }

    /// `arith.constant` of an integer or index type.
    pub fn int(&self, r#type: Type<'c>, value: i64) -> Result<Value<'c, 'a>, Error> {
        let attribute = IntegerAttribute::new(r#type, value).into();
        self.op("arith.constant", &[], &[r#type], &[("value", attribute)])?
            .ok_or_else(|| failed("arith.constant"))
    }

    /// `arith.constant` of type `index`.
    pub fn index(&self, value: i64) -> Result<Value<'c, 'a>, Error> {
        self.int(Type::index(self.context), value)
    }

    /// `arith.constant` of a float type.
    pub fn float(&self, r#type: Type<'c>, value: f64) -> Result<Value<'c, 'a>, Error> {
        let attribute = FloatAttribute::new(self.context, r#type, value).into();
        self.op("arith.constant", &[], &[r#type], &[("value", attribute)])?
            .ok_or_else(|| failed("arith.constant"))
    }

    /// `arith.cmpi` with a predicate number (`eq` 0, `ne` 1, `slt` 2, `sle`
    /// 3, `sgt` 4, `sge` 5, `ult` 6, `ule` 7, `ugt` 8, `uge` 9).
    pub fn cmpi(&self, predicate: i64, a: Value<'c, '_>, b: Value<'c, '_>) -> Result<Value<'c, 'a>, Error> {
        let attribute = IntegerAttribute::new(IntegerType::new(self.context, 64).into(), predicate).into();
        self.op("arith.cmpi", &[a, b], &[self.i1()], &[("predicate", attribute)])?
            .ok_or_else(|| failed("arith.cmpi"))
    }

    /// `arith.cmpf` with a predicate number (`oeq` 1, `ogt` 2, `oge` 3,
    /// `olt` 4, `ole` 5, `une` 13).
    pub fn cmpf(&self, predicate: i64, a: Value<'c, '_>, b: Value<'c, '_>) -> Result<Value<'c, 'a>, Error> {
        let attribute = IntegerAttribute::new(IntegerType::new(self.context, 64).into(), predicate).into();
        self.op("arith.cmpf", &[a, b], &[self.i1()], &[("predicate", attribute)])?
            .ok_or_else(|| failed("arith.cmpf"))
    }

    /// `acc && condition` as an `i1`, or `condition` itself when there is no
    /// `acc` yet.
    pub fn and_maybe(
        &self,
        acc: Option<Value<'c, '_>>,
        condition: Value<'c, 'a>,
    ) -> Result<Value<'c, 'a>, Error> {
        match acc {
            None => Ok(condition),
            Some(acc) => self.value("arith.andi", &[acc, condition], self.i1()),
        }
    }

    /// `arith.select`.
    pub fn select(
        &self,
        c: Value<'c, '_>,
        a: Value<'c, '_>,
        b: Value<'c, '_>,
    ) -> Result<Value<'c, 'a>, Error> {
        self.value("arith.select", &[c, a, b], a.r#type())
    }

    /// The `i1` type.
    pub fn i1(&self) -> Type<'c> {
        IntegerType::new(self.context, 1).into()
    }

    /// An `scf.for` from `lower` to `upper` (index values), step 1, with no
    /// loop-carried values; returns an emitter for its body (ended by
    /// `scf.yield` through [`Self::finish`]) and the induction variable.
    pub fn for_range(
        &self,
        lower: Value<'c, '_>,
        upper: Value<'c, '_>,
    ) -> Result<(Emitter<'c, 'a>, Value<'c, 'a>), Error> {
        let (body, iv, _, _) = self.for_carried(lower, upper, &[])?;
        Ok((body, iv))
    }

    /// An `scf.for` from `lower` to `upper`, step 1, carrying `inits`;
    /// returns an emitter for its body (ended by [`Self::yield_values`] with
    /// the next values), the induction variable, the carried values inside
    /// the body and the loop's results after it.
    pub fn for_carried(
        &self,
        lower: Value<'c, '_>,
        upper: Value<'c, '_>,
        inits: &[Value<'c, '_>],
    ) -> Result<Loop<'c, 'a>, Error> {
        let one = self.index(1)?;
        self.for_step(lower, upper, one, inits)
    }

    /// As [`Self::for_carried`], with the step `step` (an index value).
    pub fn for_step(
        &self,
        lower: Value<'c, '_>,
        upper: Value<'c, '_>,
        one: Value<'c, '_>,
        inits: &[Value<'c, '_>],
    ) -> Result<Loop<'c, 'a>, Error> {
        let types: Vec<Type<'c>> = inits.iter().map(|v| v.r#type()).collect();
        let mut arguments = vec![(Type::index(self.context), self.location)];
        arguments.extend(types.iter().map(|t| (*t, self.location)));
        let region = Region::new();
        let body = region.append_block(Block::new(&arguments));
        let mut operands = vec![lower, upper, one];
        operands.extend_from_slice(inits);
        let op = OperationBuilder::new("scf.for", self.location)
            .add_operands(&operands)
            .add_results(&types)
            .add_regions([region])
            .build()
            .map_err(|_| failed("scf.for"))?;
        let op = self.block.append_operation(op);
        // SAFETY: the block and the op now belong to the function being
        // built, which outlives every use of these handles.
        let body: BlockRef<'c, 'a> = unsafe { BlockRef::from_raw(body.to_raw()) };
        let iv = body.argument(0).map_err(|_| failed("scf.for"))?.into();
        let carried = (1..=inits.len())
            .map(|i| body.argument(i).map(Into::into).map_err(|_| failed("scf.for")))
            .collect::<Result<Vec<_>, _>>()?;
        let results = (0..inits.len())
            .map(|i| {
                op.result(i)
                    // SAFETY: as above.
                    .map(|r| unsafe { Value::from_raw(r.to_raw()) })
                    .map_err(|_| failed("scf.for"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((Emitter { block: body, ..*self }, iv, carried, results))
    }

    /// Ends an `scf.for` body with `scf.yield values`.
    pub fn yield_values(&self, values: &[Value<'c, '_>]) -> Result<(), Error> {
        self.op("scf.yield", values, &[], &[]).map(|_| ())
    }

    /// An `scf.if` without results; returns an emitter for its then-block.
    pub fn if_then(&self, condition: Value<'c, '_>) -> Result<Emitter<'c, 'a>, Error> {
        let then_region = Region::new();
        let then_block = then_region.append_block(Block::new(&[]));
        let op = OperationBuilder::new("scf.if", self.location)
            .add_operands(&[condition])
            .add_regions([then_region, Region::new()])
            .build()
            .map_err(|_| failed("scf.if"))?;
        self.block.append_operation(op);
        // SAFETY: as in `for_carried`.
        let then_block: BlockRef<'c, 'a> = unsafe { BlockRef::from_raw(then_block.to_raw()) };
        Ok(Emitter {
            block: then_block,
            ..*self
        })
    }

    /// Ends an `scf` body with `scf.yield`.
    pub fn finish(&self) -> Result<(), Error> {
        self.op("scf.yield", &[], &[], &[]).map(|_| ())
    }
}
