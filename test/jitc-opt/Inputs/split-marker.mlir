func.func @first() {
  return
}
#-----
func.func @second() {
  return
}
// #---- near miss: reported, and left in its chunk
