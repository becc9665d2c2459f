// Expectations that all hold (see ../verify-diagnostics-upstream.mlir).
func.func @undeclared() -> i32 {
  // expected-error @+1 {{use of undeclared SSA value name}}
  return %nope : i32
}

// -----

func.func @mismatch(%a: i32, %b: i64) -> i32 {
  // expected-error-re @below {{{{[a-z]+}} of return operand {{[0-9]+}} ('i64')}}
  return %b : i64
}

// -----

func.func @fine() {
  return
}
