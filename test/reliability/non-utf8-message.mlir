// An op name written with a byte escape that is not UTF-8 (`\ad`) makes
// MLIR's diagnostic message invalid UTF-8. Printing it used to panic
// inside MLIR's diagnostic handler (an abort; found by the parse_verify
// fuzz target). jitc keeps the part that prints and says the rest is not
// UTF-8.
// RUN: not jitc opt %s 2>&1 | FileCheck %s
// CHECK: non-utf8-message.mlir:[[@LINE+3]]:8: error: unregistered operation '... (the rest of this message is not valid UTF-8)
// CHECK: note: see current operation: %0 = "meta.state_r\AD"()
func.func @f() {
  %0 = "meta.state_r\ad"() {name = "rnn.h"} : () -> tensor<4xf32>
  return
}
