"""Writes a float32 .npy of the values (i % 7 - 3), i counting in row-major
order, to PATH, without numpy. SHAPE is a length (`40000`) or dimensions
joined by `x` (`64x32`).

Usage: python ramp-npy.py SHAPE PATH
"""
import array
import sys

dims, path = [int(d) for d in sys.argv[1].split("x")], sys.argv[2]
n = 1
for d in dims:
    n *= d
shape = "".join("%d," % d for d in dims) if len(dims) == 1 else ", ".join("%d" % d for d in dims)
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % shape
# Magic, version 1.0, then the header padded so the data starts 64-aligned.
pad = 64 - (10 + len(header) + 1) % 64
header = (header + " " * pad + "\n").encode("latin1")
values = array.array("f", (float(i % 7 - 3) for i in range(n)))
if sys.byteorder != "little":
    values.byteswap()
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    f.write(values.tobytes())
