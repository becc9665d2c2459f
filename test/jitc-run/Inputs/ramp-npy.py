"""Writes a 1-D float32 .npy of N values (i % 7 - 3) to PATH, without numpy.

Usage: python ramp-npy.py N PATH
"""
import array
import sys

n, path = int(sys.argv[1]), sys.argv[2]
header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
# Magic, version 1.0, then the header padded so the data starts 64-aligned.
pad = 64 - (10 + len(header) + 1) % 64
header = (header + " " * pad + "\n").encode("latin1")
values = array.array("f", (float(i % 7 - 3) for i in range(n)))
if sys.byteorder != "little":
    values.byteswap()
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header)
    f.write(values.tobytes())
