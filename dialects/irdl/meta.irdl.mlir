// The `meta` dialect: Jittor's meta-operators plus JANUS-style guards and
// deferred state. This file is the structural half of the dialect: operand,
// result and required-attribute shapes. Everything IRDL cannot say (ranks
// against maps, kinds against element types, optional attributes, unique
// guard ids) is checked by the semantic verifier in `dialects/src/verify.rs`.
//
// IRDL ops print in MLIR's generic form; see DESIGN.md's textual contract.
irdl.dialect @meta {
  // out[o] = in[indices(o)], or overflow_value when out of bounds or when o
  // lies in any of `overflow_conditions`. Trailing `index` operands: one size
  // per `?` in the result type, then one value per map symbol.
  irdl.operation @reindex {
    %input = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %index = irdl.is index
    %map = irdl.base "#builtin.affine_map"
    irdl.operands(input: %input, dims: variadic %index)
    irdl.results(output: %output)
    irdl.attributes { "indices" = %map }
  }

  // out[o] = reduce(kind) { in[i] : indices(i) = o }, the identity where
  // nothing maps. Same trailing `index` operands as `reindex`.
  irdl.operation @reindex_reduce {
    %input = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %index = irdl.is index
    %map = irdl.base "#builtin.affine_map"
    %kind = irdl.base "#builtin.string"
    irdl.operands(input: %input, dims: variadic %index)
    irdl.results(output: %output)
    irdl.attributes { "kind" = %kind, "indices" = %map }
  }

  // Element-wise, one op per arity; `kind` names the function.
  irdl.operation @unary {
    %input = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %kind = irdl.base "#builtin.string"
    irdl.operands(input: %input)
    irdl.results(output: %output)
    irdl.attributes { "kind" = %kind }
  }

  irdl.operation @binary {
    %lhs = irdl.base "!builtin.tensor"
    %rhs = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %kind = irdl.base "#builtin.string"
    irdl.operands(lhs: %lhs, rhs: %rhs)
    irdl.results(output: %output)
    irdl.attributes { "kind" = %kind }
  }

  irdl.operation @ternary {
    %condition = irdl.base "!builtin.tensor"
    %on_true = irdl.base "!builtin.tensor"
    %on_false = irdl.base "!builtin.tensor"
    %output = irdl.base "!builtin.tensor"
    %kind = irdl.base "#builtin.string"
    irdl.operands(condition: %condition, on_true: %on_true, on_false: %on_false)
    irdl.results(output: %output)
    irdl.attributes { "kind" = %kind }
  }

  // Stops execution when `condition` is false. `id` is unique per function.
  irdl.operation @guard {
    %condition = irdl.base "!builtin.tensor"
    %id = irdl.base "#builtin.integer"
    %reason = irdl.base "#builtin.string"
    irdl.operands(condition: %condition)
    irdl.results()
    irdl.attributes { "id" = %id, "reason" = %reason }
  }

  // Reads a named piece of frontend state.
  irdl.operation @state_read {
    %value = irdl.base "!builtin.tensor"
    %name = irdl.base "#builtin.string"
    irdl.operands()
    irdl.results(value: %value)
    irdl.attributes { "name" = %name }
  }

  // Writes a named piece of frontend state; committed only when the whole
  // run succeeds.
  irdl.operation @state_write {
    %value = irdl.base "!builtin.tensor"
    %name = irdl.base "#builtin.string"
    irdl.operands(value: %value)
    irdl.results()
    irdl.attributes { "name" = %name }
  }
}
