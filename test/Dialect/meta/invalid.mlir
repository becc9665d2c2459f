// Every message of the meta dialect's semantic verifier, one case each.
// RUN: jitc opt %s --split-input-file --verify-diagnostics

func.func @reindex_rank_mismatch(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{'meta.reindex' op indices map has 2 results but the input has rank 1}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0, d1) -> (d0, d1)>} : (tensor<4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @reindex_dims_mismatch(%x: tensor<4xf32>) -> tensor<3x4xf32> {
  // expected-error@+1 {{'meta.reindex' op indices map has 1 dimensions but the result has rank 2}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0)>} : (tensor<4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @reindex_element_type_change(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error@+1 {{'meta.reindex' op result element type 'f64' differs from input element type 'f32'}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0)>} : (tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @reindex_missing_dynamic_size(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error@+1 {{'meta.reindex' op expects 1 index operands (1 for dynamic result sizes, 0 for map symbols) but got 0}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0)>} : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

func.func @reindex_missing_symbol(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{expects 1 index operands (0 for dynamic result sizes, 1 for map symbols) but got 0}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0)[s0] -> (d0 + s0)>} : (tensor<8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @overflow_value_wrong_type(%x: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error@+1 {{'meta.reindex' op overflow_value has type 'f64' but the element type is 'f32'}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0 - 1)>, overflow_value = 1.0 : f64} : (tensor<4xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @overflow_value_not_scalar(%x: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error@+1 {{'meta.reindex' op overflow_value must be a scalar f32 attribute, got "zero"}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0 - 1)>, overflow_value = "zero"} : (tensor<4xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @overflow_conditions_not_sets(%x: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error@+1 {{'meta.reindex' op overflow_conditions must be an array of affine_set attributes}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0 - 1)>, overflow_conditions = [1 : i64]} : (tensor<4xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @overflow_conditions_wrong_dims(%x: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error@+1 {{'meta.reindex' op overflow_conditions set 0 has 2 dimensions but the result has rank 1}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0 - 1)>, overflow_conditions = [affine_set<(d0, d1) : (d0 - 5 >= 0)>]} : (tensor<4xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @overflow_conditions_extra_symbols(%x: tensor<4xf32>) -> tensor<6xf32> {
  // expected-error@+1 {{'meta.reindex' op overflow_conditions set 0 uses 1 symbols but the indices map has 0}}
  %0 = "meta.reindex"(%x) {indices = affine_map<(d0) -> (d0 - 1)>, overflow_conditions = [affine_set<(d0)[s0] : (d0 - s0 >= 0)>]} : (tensor<4xf32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @reduce_dims_mismatch(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'meta.reindex_reduce' op indices map has 1 dimensions but the input has rank 2}}
  %0 = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0) -> (d0)>} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_results_mismatch(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'meta.reindex_reduce' op indices map has 2 results but the result has rank 1}}
  %0 = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0, d1) -> (d0, d1)>} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_unknown_kind(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'meta.reindex_reduce' op unknown kind 'mean'; expected one of add, mul, max, min, and, or}}
  %0 = "meta.reindex_reduce"(%x) {kind = "mean", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_and_on_f32(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'meta.reindex_reduce' op kind 'and' expects i1, i32 or i64 operands but got 'f32'}}
  %0 = "meta.reindex_reduce"(%x) {kind = "and", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_with_overflow_value(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'meta.reindex_reduce' op takes no overflow_value; elements that map out of bounds are dropped}}
  %0 = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0, d1) -> (d0)>, overflow_value = 0.0 : f32} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @reduce_element_type_change(%x: tensor<3x4xf32>) -> tensor<3xf64> {
  // expected-error@+1 {{'meta.reindex_reduce' op result element type 'f64' differs from input element type 'f32'}}
  %0 = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0, d1) -> (d0)>} : (tensor<3x4xf32>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}

// -----

func.func @reduce_conditions_wrong_dims(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'meta.reindex_reduce' op overflow_conditions set 0 has 1 dimensions but the input has rank 2}}
  %0 = "meta.reindex_reduce"(%x) {kind = "add", indices = affine_map<(d0, d1) -> (d0)>, overflow_conditions = [affine_set<(d0) : (d0 >= 0)>]} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @unsupported_element_type(%x: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error@+1 {{'meta.unary' op operand has unsupported element type 'f16'; expected f32, f64, i32, i64 or i1}}
  %0 = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf16>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @unary_unknown_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.unary' op unknown kind 'frobnicate'; expected one of neg, abs, exp}}
  %0 = "meta.unary"(%x) {kind = "frobnicate"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sqrt_on_i32(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error@+1 {{'meta.unary' op kind 'sqrt' expects f32 or f64 operands but got 'i32'}}
  %0 = "meta.unary"(%x) {kind = "sqrt"} : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @unary_result_type_change(%x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error@+1 {{'meta.unary' op result element type 'f64' differs from operand element type 'f32'}}
  %0 = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @unary_static_size_contradiction(%x: tensor<4xf32>) -> tensor<5xf32> {
  // expected-error@+1 {{'meta.unary' op result dimension 0 has static size 5 but the operands' has 4}}
  %0 = "meta.unary"(%x) {kind = "exp"} : (tensor<4xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

func.func @unary_rank_contradiction(%x: tensor<4xf32>) -> tensor<4x1xf32> {
  // expected-error@+1 {{'meta.unary' op result has rank 2 but the operands have rank 1}}
  %0 = "meta.unary"(%x) {kind = "neg"} : (tensor<4xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// -----

func.func @binary_unequal_shapes(%x: tensor<4xf32>, %y: tensor<5xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.binary' op operands have unequal shapes 'tensor<4xf32>' and 'tensor<5xf32>'}}
  %0 = "meta.binary"(%x, %y) {kind = "add"} : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @binary_unequal_ranks(%x: tensor<4xf32>, %y: tensor<1x4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.binary' op operands have unequal shapes 'tensor<4xf32>' and 'tensor<1x4xf32>'}}
  %0 = "meta.binary"(%x, %y) {kind = "mul"} : (tensor<4xf32>, tensor<1x4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @binary_mixed_element_types(%x: tensor<4xf32>, %y: tensor<4xi32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.binary' op operands have different element types 'f32' and 'i32'}}
  %0 = "meta.binary"(%x, %y) {kind = "add"} : (tensor<4xf32>, tensor<4xi32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @and_on_f32(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.binary' op kind 'and' expects i1, i32 or i64 operands but got 'f32'}}
  %0 = "meta.binary"(%x, %x) {kind = "and"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @add_on_i1(%x: tensor<4xi1>) -> tensor<4xi1> {
  // expected-error@+1 {{'meta.binary' op kind 'add' expects f32, f64, i32 or i64 operands but got 'i1'}}
  %0 = "meta.binary"(%x, %x) {kind = "add"} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @comparison_result_not_i1(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.binary' op kind 'lt' gives 'i1' elements but the result has 'f32'}}
  %0 = "meta.binary"(%x, %x) {kind = "lt"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @binary_unknown_kind(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.binary' op unknown kind 'hypot'}}
  %0 = "meta.binary"(%x, %x) {kind = "hypot"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_condition_not_i1(%c: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.ternary' op condition must have i1 elements but has 'f32'}}
  %0 = "meta.ternary"(%c, %x, %x) {kind = "select"} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_mixed_choices(%c: tensor<4xi1>, %x: tensor<4xf32>, %y: tensor<4xf64>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.ternary' op choices have different element types 'f32' and 'f64'}}
  %0 = "meta.ternary"(%c, %x, %y) {kind = "select"} : (tensor<4xi1>, tensor<4xf32>, tensor<4xf64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_result_type(%c: tensor<4xi1>, %x: tensor<4xf32>) -> tensor<4xf64> {
  // expected-error@+1 {{'meta.ternary' op result element type 'f64' differs from the choices' element type 'f32'}}
  %0 = "meta.ternary"(%c, %x, %x) {kind = "select"} : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @ternary_unknown_kind(%c: tensor<4xi1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.ternary' op unknown kind 'fma'; expected one of select}}
  %0 = "meta.ternary"(%c, %x, %x) {kind = "fma"} : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @guard_not_scalar(%ok: tensor<4xi1>) {
  // expected-error@+1 {{'meta.guard' op condition must be 'tensor<i1>' but is 'tensor<4xi1>'}}
  "meta.guard"(%ok) {id = 0 : i64, reason = "x"} : (tensor<4xi1>) -> ()
  return
}

// -----

func.func @guard_not_bool(%ok: tensor<i32>) {
  // expected-error@+1 {{'meta.guard' op condition must be 'tensor<i1>' but is 'tensor<i32>'}}
  "meta.guard"(%ok) {id = 0 : i64, reason = "x"} : (tensor<i32>) -> ()
  return
}

// -----

func.func @guard_duplicate_id(%ok: tensor<i1>) {
  "meta.guard"(%ok) {id = 7 : i64, reason = "first"} : (tensor<i1>) -> ()
  // expected-error@+1 {{'meta.guard' op id 7 is already used by the guard at line 293 in this function}}
  "meta.guard"(%ok) {id = 7 : i64, reason = "second"} : (tensor<i1>) -> ()
  return
}

// -----

func.func @state_empty_name() -> tensor<4xf32> {
  // expected-error@+1 {{'meta.state_read' op state name must not be empty}}
  %0 = "meta.state_read"() {name = ""} : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @state_type_mismatch(%h: tensor<16x128xf32>) -> tensor<16x256xf32> {
  %0 = "meta.state_read"() {name = "rnn.h"} : () -> tensor<16x256xf32>
  // expected-error@+1 {{'meta.state_write' op state 'rnn.h' has type 'tensor<16x128xf32>' here but 'tensor<16x256xf32>' at line 310}}
  "meta.state_write"(%h) {name = "rnn.h"} : (tensor<16x128xf32>) -> ()
  return %0 : tensor<16x256xf32>
}

// -----

func.func @result_too_large(%x: tensor<f32>) -> tensor<f32> {
  // expected-error@+1 {{'meta.reindex' op result type 'tensor<4294967296x4294967296x4294967296xf32>' is too large: its size in bytes overflows i64}}
  %b = "meta.reindex"(%x) {indices = affine_map<(d0, d1, d2) -> ()>} : (tensor<f32>) -> tensor<4294967296x4294967296x4294967296xf32>
  %s = "meta.reindex_reduce"(%b) {kind = "add", indices = affine_map<(d0, d1, d2) -> ()>} : (tensor<4294967296x4294967296x4294967296xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

func.func @upstream_result_bytes_too_large() {
  // expected-error@+1 {{'tensor.empty' op result type 'tensor<1152921504606846976xf64>' is too large: its size in bytes overflows i64}}
  %e = tensor.empty() : tensor<1152921504606846976xf64>
  return
}

// -----

// expected-error@+1 {{'func.func' op argument 0 type 'tensor<4294967296x4294967296xf32>' is too large: its size in bytes overflows i64}}
func.func @argument_too_large(%x: tensor<4294967296x4294967296xf32>) {
  return
}

// -----

// expected-error@+1 {{'func.func' op result 0 type 'tensor<?x4611686018427387904xf32>' is too large: its size in bytes overflows i64}}
func.func private @declared_result_too_large() -> tensor<?x4611686018427387904xf32>

// -----

// A size of 0 holds no element, but strides multiply the sizes around it.
// expected-error@+1 {{'func.func' op argument 0 type 'tensor<0x4611686018427387904x4xf32>' is too large: its size in bytes overflows i64}}
func.func private @empty_but_too_large(%x: tensor<0x4611686018427387904x4xf32>)

// -----

func.func @reindex_mod_by_zero(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.reindex' op indices map divides by 0 in 'd0 mod 0'; affine divisors must be positive}}
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0 mod 0)>} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @reindex_floordiv_by_negative(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.reindex' op indices map divides by -2 in 'd0 floordiv -2'; affine divisors must be positive}}
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0 floordiv -2)>} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @reduce_ceildiv_by_zero(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.reindex_reduce' op indices map divides by 0 in 'd0 ceildiv 0'; affine divisors must be positive}}
  %b = "meta.reindex_reduce"(%a) {kind = "add", indices = affine_map<(d0) -> (d0 ceildiv 0)>} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @overflow_condition_mod_by_negative(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.reindex' op overflow_conditions set 0 divides by -1 in 'd0 mod -1'; affine divisors must be positive}}
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0)>, overflow_conditions = [affine_set<(d0) : (d0 mod -1 >= 0)>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @reindex_multiply_overflows(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.reindex' op indices map overflows i64 in 'd0 * 4611686018427387904' at result index (3)}}
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0 * 4611686018427387904)>} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @reindex_overflows_one_past_the_limit(%a: tensor<4xi1>) -> tensor<4611686018427387905xi1> {
  // expected-error@+1 {{'meta.reindex' op indices map overflows i64 in 'd0 * 2' at result index (4611686018427387904)}}
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> ((d0 * 2 + 1) ceildiv 3)>} : (tensor<4xi1>) -> tensor<4611686018427387905xi1>
  return %b : tensor<4611686018427387905xi1>
}

// -----

func.func @reduce_overflows_over_input_indices(%a: tensor<4xf32>) -> tensor<1xf32> {
  // expected-error@+1 {{'meta.reindex_reduce' op indices map overflows i64 in 'd0 * 4611686018427387904' at input index (3)}}
  %b = "meta.reindex_reduce"(%a) {kind = "add", indices = affine_map<(d0) -> (d0 * 4611686018427387904)>} : (tensor<4xf32>) -> tensor<1xf32>
  return %b : tensor<1xf32>
}

// -----

func.func @overflow_condition_overflows(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error@+1 {{'meta.reindex' op overflow_conditions set 0 overflows i64 in 'd0 * 4611686018427387904' at result index (3)}}
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0)>, overflow_conditions = [affine_set<(d0) : (d0 * 4611686018427387904 >= 0)>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
