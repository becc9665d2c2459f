// Programs at the edge of the verifier's static limits still verify: tensor
// sizes up to i64::MAX bytes, index arithmetic up to i64::MAX, and maps that
// only overflow where no index reaches them or where the verifier cannot know.
// The cases past each limit are in invalid.mlir.
// RUN: jitc opt %s --split-input-file --verify-diagnostics

func.func @largest_sizes_fit(%x: tensor<1152921504606846975xf64>, %y: tensor<9223372036854775807xi1>, %z: tensor<0x2305843009213693951xf32>) {
  return
}

// -----

func.func @positive_divisors_up_to_the_limit(%a: tensor<4xi1>) -> tensor<4611686018427387904xi1> {
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> ((d0 * 2 + 1) ceildiv 3)>} : (tensor<4xi1>) -> tensor<4611686018427387904xi1>
  return %b : tensor<4611686018427387904xi1>
}

// -----

func.func @positive_divisors_in_reduce(%a: tensor<3037000499x3037000499xi1>) -> tensor<7x3xi1> {
  %b = "meta.reindex_reduce"(%a) {kind = "or", indices = affine_map<(d0, d1) -> ((d0 * 3037000499 + d1) mod 7, d1 floordiv 1012333500)>} : (tensor<3037000499x3037000499xi1>) -> tensor<7x3xi1>
  return %b : tensor<7x3xi1>
}

// -----

func.func @bounds_that_add_up_past_the_limit(%a: tensor<4xf32>) -> tensor<2xf32> {
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> ((1 - d0) * 4611686018427387904 + d0 * 4611686018427387904)>} : (tensor<4xf32>) -> tensor<2xf32>
  return %b : tensor<2xf32>
}

// -----

func.func @overflow_masked_by_condition(%a: tensor<4xf32>) -> tensor<4xf32> {
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0 * 4611686018427387904)>, overflow_conditions = [affine_set<(d0) : (d0 - 2 >= 0)>]} : (tensor<4xf32>) -> tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

func.func @overflow_over_empty_domain(%a: tensor<4xf32>) -> tensor<0xf32> {
  %b = "meta.reindex"(%a) {indices = affine_map<(d0) -> (d0 * 4611686018427387904)>} : (tensor<4xf32>) -> tensor<0xf32>
  return %b : tensor<0xf32>
}

// -----

func.func @overflow_over_dynamic_size_unknown(%a: tensor<4xf32>, %n: index) -> tensor<?xf32> {
  %b = "meta.reindex"(%a, %n) {indices = affine_map<(d0) -> (d0 * 4611686018427387904)>} : (tensor<4xf32>, index) -> tensor<?xf32>
  return %b : tensor<?xf32>
}

// -----

func.func @symbolic_divisor_checked_at_run_time(%a: tensor<4xf32>, %s: index) -> tensor<4xf32> {
  %b = "meta.reindex"(%a, %s) {indices = affine_map<(d0)[s0] -> (d0 mod s0)>} : (tensor<4xf32>, index) -> tensor<4xf32>
  return %b : tensor<4xf32>
}
