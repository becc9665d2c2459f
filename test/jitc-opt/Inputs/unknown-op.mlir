func.func @f() {
  "meta.fuse"() : () -> ()
  return
}
