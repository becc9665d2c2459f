func.func @f() {
  frob.op
  return
}
