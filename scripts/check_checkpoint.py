#!/usr/bin/python3
"""Verify a demhpc checkpoint's checksums independently of demhpc (h5py + numpy only), as
docs/checkpoint-format.md defines them: the integrity block (CRC-32C of HDF5's metadata, in
the file's user block), the CRC-32C of every dataset's little-endian bytes in row order
(attribute `crc32c`) and of the root attributes (`attrs_crc32c`).

    /usr/bin/python3 scripts/check_checkpoint.py output/NAME/checkpoints/ckpt_0000001000.h5

Prints one line per dataset and exits 1 if any checksum fails (0 for a version-1 file, which
has none, with a note)."""
import struct
import sys

import h5py
import numpy as np

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), bytewise table (slow but plain: ~10 MB/s)."""
    c = 0xFFFFFFFF
    t = _TABLE
    for x in data:
        c = t[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def attrs_digest(f) -> int:
    a = f.attrs
    buf = bytearray()

    def put(name, v: bytes):
        buf.extend(name.encode() + b"\0" + struct.pack("<Q", len(v)) + v)

    def text(k):
        v = a[k]
        return v.encode() if isinstance(v, str) else bytes(v).rstrip(b"\0")

    u64 = lambda k: struct.pack("<Q", int(a[k]))  # noqa: E731
    put("format_version", u64("format_version"))
    put("demhpc_version", text("demhpc_version"))
    put("step", u64("step"))
    put("time", struct.pack("<d", a["time"]))
    put("dt", struct.pack("<d", a["dt"]))
    put("reproducible", bytes([int(a["reproducible"])]))
    for k in ["n_particles", "n_contacts", "n_wall_contacts", "contact_state_len", "ranks"]:
        put(k, u64(k))
    put("grid", np.asarray(a["grid"], "<u8").tobytes())
    put("decomp_bbox_lo", np.asarray(a["decomp_bbox_lo"], "<f8").tobytes())
    put("decomp_bbox_hi", np.asarray(a["decomp_bbox_hi"], "<f8").tobytes())
    put("need_rebuild", bytes([int(a["need_rebuild"])]))
    put("n_rebuilds", u64("n_rebuilds"))
    put("scene_text", f["text/scene"][:].tobytes())
    put("scene_file", text("scene_file"))
    put("engines", f["text/engines"][:].tobytes())
    for k in ["decomp_cuts_x", "decomp_cuts_y", "decomp_cuts_z"]:
        put(k, np.asarray(a[k], "<f8").tobytes())
    return crc32c(bytes(buf))


def integrity_block(path: str) -> bool:
    """The integrity block in the file's first 4096 bytes: header checksum, zero padding, file
    length, and the CRC-32C of every byte outside the datasets' raw data (HDF5's metadata)."""
    raw = open(path, "rb").read()
    b = raw[:4096]
    if b[:16] != b"demhpc-integrity":
        return False
    n = struct.unpack_from("<I", b, 20)[0]
    end = 48 + 16 * n
    ok = crc32c(b[:end]) == struct.unpack_from("<I", b, end)[0] and not any(b[end + 4 :])
    file_len, meta_len, meta_crc = struct.unpack_from("<QQI", b, 24)
    ok = ok and file_len == len(raw)
    at, meta = 4096, bytearray()
    ranges = [struct.unpack_from("<QQ", b, 48 + 16 * k) for k in range(n)]
    for start, stop in [(o, o + ln) for o, ln in ranges] + [(len(raw), len(raw))]:
        if start > at:
            meta += raw[at:start]
        at = max(at, stop)
    return ok and len(meta) == meta_len and crc32c(bytes(meta)) == meta_crc


def main(path: str) -> int:
    ok = integrity_block(path)
    f = h5py.File(path, "r")
    if int(f.attrs["format_version"]) < 2:
        print(f"{path}: format version 1: no checksums")
        return 0
    bad = 0
    print(f"{'ok ' if ok else 'BAD'} integrity block (HDF5 metadata)")
    bad += not ok
    ok = attrs_digest(f) == int(f.attrs["attrs_crc32c"])
    print(f"{'ok ' if ok else 'BAD'} root attributes")
    bad += not ok
    names = []
    f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
    for n in sorted(names):
        d = f[n]
        raw = d[:].astype(d.dtype.newbyteorder("<")).tobytes()
        ok = crc32c(raw) == int(d.attrs["crc32c"])
        print(f"{'ok ' if ok else 'BAD'} {n}")
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
