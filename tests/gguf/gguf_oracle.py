"""The independent check of ggx's GGUF files and block formats: PyPI's gguf package (llama.cpp's own
reader, writer and numpy conversions) against ggx's public API, through the helper gguf_oracle.

  python gguf_oracle.py HELPER WORK_DIR

(a) Files the package writes (GGUFWriter: keys of every value type, arrays of each, tensors of every
    type both know) are read by ggx (gguf.h) with every key, type, value, tensor name, type, shape,
    offset and byte equal; a nested array, which gguf.h cannot represent, is refused by name.
(b) For every type the package dequantizes and ggx converts: rows of random blocks (with finite
    scales) and of package-quantized data dequantize to the same F32 bits in both; where the package
    quantizes, ggml_quantize_row writes the same bytes.
(c) The same files, rebuilt by ggx with its setters and written with gguf_write_to_file, are read by
    the package (GGUFReader) with every key, value and tensor equal.

Types are taken from both sides at run time: a type one side lacks is printed as skipped, by name,
so a format ggx adds is covered as soon as it exists. Any difference fails the run (exit status 1).
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as QT
from gguf import GGUFReader, GGUFValueType as VT, GGUFWriter, quants
from gguf.constants import GGML_QUANT_SIZES

RNG = np.random.default_rng(19)
FAILURES: list[str] = []


def fail(message: str) -> None:
    FAILURES.append(message)
    print("FAIL: " + message)


class Helper:
    def __init__(self, path: str, work: Path):
        self.path, self.work = path, work

    def run(self, *args: str) -> str:
        done = subprocess.run([self.path, *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"gguf_oracle {' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return done.stdout

    def convert(self, command: str, qtype: QT, n: int, data: np.ndarray, out_dtype) -> np.ndarray:
        src, dst = self.work / f"{command}.in", self.work / f"{command}.out"
        data.tofile(src)
        self.run(command, str(int(qtype)), str(n), str(src), str(dst))
        return np.fromfile(dst, dtype=out_dtype)


# ---- Metadata: the keys every file carries, with the numpy type of each GGUF value type -------------

NUMPY_OF = {VT.UINT8: np.uint8, VT.INT8: np.int8, VT.UINT16: np.uint16, VT.INT16: np.int16,
            VT.UINT32: np.uint32, VT.INT32: np.int32, VT.FLOAT32: np.float32, VT.BOOL: np.bool_,
            VT.UINT64: np.uint64, VT.INT64: np.int64, VT.FLOAT64: np.float64}
# gguf_type_name's names, which the helper prints.
GGX_NAME = {VT.UINT8: "u8", VT.INT8: "i8", VT.UINT16: "u16", VT.INT16: "i16", VT.UINT32: "u32",
            VT.INT32: "i32", VT.FLOAT32: "f32", VT.BOOL: "bool", VT.STRING: "str", VT.ARRAY: "arr",
            VT.UINT64: "u64", VT.INT64: "i64", VT.FLOAT64: "f64"}
# The helper prints floats as their bit patterns.
BITS_OF = {VT.FLOAT32: np.uint32, VT.FLOAT64: np.uint64}

F32_EDGES = [0.0, -0.0, 1.5, -3.25e-5, 1e-45, np.finfo(np.float32).max, float("inf"), float("-inf"), float("nan")]
F64_EDGES = [0.0, -0.0, 1e-300, -2.5, 5e-324, np.finfo(np.float64).max, float("inf"), float("nan")]
SCALARS = {
    VT.UINT8: [0, 1, 255], VT.INT8: [-128, -1, 127], VT.UINT16: [0, 65535], VT.INT16: [-32768, 32767],
    VT.UINT32: [0, 4000000000, 2**32 - 1], VT.INT32: [-(2**31), 7, 2**31 - 1],
    VT.UINT64: [0, 2**63, 2**64 - 1], VT.INT64: [-(2**63), -1, 2**63 - 1],
    VT.FLOAT32: F32_EDGES, VT.FLOAT64: F64_EDGES, VT.BOOL: [True, False],
}
STRINGS = ["", "hello, gguf", "naïve ✓ 模型", "tab\tquote\"backslash\\newline\n", "x" * 1000]


def metadata() -> list[tuple[str, VT, object, VT | None]]:
    """(key, value type, value, array element type) for every value type, scalar and array."""
    kvs = []
    for vt, values in SCALARS.items():
        for k, v in enumerate(values):
            kvs.append((f"scalar.{GGX_NAME[vt]}.{k}", vt, v, None))
        kvs.append((f"array.{GGX_NAME[vt]}", VT.ARRAY, values, vt))
    for k, s in enumerate(STRINGS):
        kvs.append((f"scalar.str.{k}", VT.STRING, s, None))
    kvs.append(("array.str", VT.ARRAY, STRINGS, VT.STRING))
    kvs.append(("array.one", VT.ARRAY, [42], VT.UINT64))
    return kvs


def value_bytes(vt: VT, value) -> bytes:
    """The little-endian bytes of a fixed-size value or array of them, as the file holds them."""
    return np.array(value, dtype=NUMPY_OF[vt]).tobytes()


def dumped_bytes(vt: VT, value) -> bytes:
    """The same bytes from the helper's JSON (floats given as bit patterns)."""
    return np.array(value, dtype=BITS_OF.get(vt, NUMPY_OF[vt])).tobytes()


# ---- Rows of every type: random blocks with finite values, and package-quantized data -------------

def package_can(operation, qtype: QT) -> bool:
    block, size = GGML_QUANT_SIZES[qtype]
    try:
        if operation == "dequantize":
            quants.dequantize(np.zeros(size, dtype=np.uint8), qtype)
        else:
            quants.quantize(np.zeros((1, block), dtype=np.float32), qtype)
        return True
    except NotImplementedError:
        return False


def as_bytes(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).view(np.uint8).reshape(-1)


def quantization_input(block: int, n_blocks: int) -> np.ndarray:
    """Gaussian blocks, and blocks that probe the rules: zeros, a constant, one value, exact halves,
    the largest and smallest magnitudes an F16 scale holds."""
    x = RNG.standard_normal((n_blocks, block)).astype(np.float32)
    ramp = np.linspace(-8.0, 7.5, block, dtype=np.float32)
    special = [np.zeros(block), np.full(block, 0.75), np.eye(1, block, block // 3)[0] * -5.0,
               ramp, ramp * 1e-6, ramp * 6e3, np.round(ramp) + 0.5]
    return np.concatenate([x, np.array(special, dtype=np.float32)]).astype(np.float32)


def random_blocks(qtype: QT, n_blocks: int) -> np.ndarray:
    """n_blocks blocks of random bytes whose values the package decodes as finite (so every scale
    is finite), and an all-zero block."""
    block, size = GGML_QUANT_SIZES[qtype]
    candidates = RNG.integers(0, 256, size=(4 * n_blocks, size), dtype=np.uint8)
    with np.errstate(invalid="ignore", over="ignore"):  # the NaN and Inf scales this drops
        values = quants.dequantize(candidates.reshape(-1), qtype).reshape(4 * n_blocks, block)
    kept = candidates[np.isfinite(values).all(axis=1)][:n_blocks]
    return np.concatenate([kept, np.zeros((1, size), dtype=np.uint8)])


def compare(what: str, ours: np.ndarray, theirs: np.ndarray, unit: int) -> bool:
    """Bit equality of two byte arrays, naming the first differing unit (block or value)."""
    ours, theirs = as_bytes(ours), as_bytes(theirs)
    if ours.size != theirs.size:
        fail(f"{what}: {ours.size} bytes, the package has {theirs.size}")
        return False
    differ = np.flatnonzero(ours != theirs)
    if differ.size:
        k = differ[0] // unit
        fail(f"{what}: {len(np.unique(differ // unit))} of {ours.size // unit} differ, the first at {k}: "
             f"ggx {ours[k * unit:(k + 1) * unit].tobytes().hex()} package {theirs[k * unit:(k + 1) * unit].tobytes().hex()}")
        return False
    return True


def size_mismatch(qtype: QT, info: dict | None) -> str | None:
    """Why a type is not compared when the two sides disagree on its block (the package 0.19.0 gives
    Q8_1 40 bytes, from when its two scales were F32; ggml's block_q8_1 has two F16 scales: 36)."""
    block, size = GGML_QUANT_SIZES[qtype]
    if info and (info["block"], info["bytes"]) != (block, size):
        return (f"{qtype.name}: skipped: the package's block is {block} values in {size} bytes, "
                f"ggml's and ggx's {info['block']} in {info['bytes']}")
    return None


def check_conversions(helper: Helper, ggx_types: dict) -> tuple[dict, list[str]]:
    """(b) for every type of the package's enum; returns each type's tensor bytes for the files."""
    tensor_rows, summary = {}, []
    for qtype in QT:
        info = ggx_types.get(int(qtype))
        block, size = GGML_QUANT_SIZES[qtype]
        if why := size_mismatch(qtype, info):
            summary.append(why)
            continue
        if not package_can("dequantize", qtype):
            summary.append(f"{qtype.name}: skipped: the package does not dequantize it")
            continue
        rows = random_blocks(qtype, 512)
        notes = [f"{len(rows)} random blocks"]
        if package_can("quantize", qtype):
            x = quantization_input(block, 256)
            theirs = as_bytes(quants.quantize(x, qtype))
            rows = np.concatenate([rows, theirs.reshape(-1, size)])
            notes.append(f"{len(x)} package-quantized blocks")
            if info and info["quantizes"]:
                ours = helper.convert("quantize", qtype, x.size, x, np.uint8)
                same = compare(f"{qtype.name} ggml_quantize_row", ours, theirs, size)
                notes.append("quantize byte-identical" if same else "quantize DIFFERS")
            else:
                notes.append("ggx does not quantize it")
        tensor_rows[qtype] = rows
        if not info or not info["converts"]:
            summary.append(f"{qtype.name}: skipped: ggx has no conversion for it")
            continue
        theirs = quants.dequantize(rows.reshape(-1), qtype).astype(np.float32)
        ours = helper.convert("dequantize", qtype, theirs.size, rows, np.float32)
        same = compare(f"{qtype.name} ggml_dequantize_row", ours, theirs, 4 * block)
        summary.append(f"{qtype.name}: dequantize {'bit-identical' if same else 'DIFFERS'} on "
                       + ", ".join(notes))
    return tensor_rows, summary


# ---- (a) and (c): files -------------------------------------------------------------------------

PLAIN = {QT.F32: np.float32, QT.F16: np.float16, QT.F64: np.float64, QT.I8: np.int8, QT.I16: np.int16,
         QT.I32: np.int32, QT.I64: np.int64}


def tensors(ggx_types: dict, rows: dict) -> tuple[list, list[str]]:
    """(name, type, numpy shape, data bytes) of a tensor of every type both sides take in a file."""
    out, skipped = [], []
    for qtype in QT:
        info = ggx_types.get(int(qtype))
        if not info or not info["gguf"]:
            skipped.append(f"{qtype.name}: skipped in files: gguf.h does not take it")
            continue
        if size_mismatch(qtype, info):
            skipped.append(f"{qtype.name}: skipped in files: the block sizes differ (above)")
            continue
        block, size = GGML_QUANT_SIZES[qtype]
        if qtype in PLAIN:
            dtype = PLAIN[qtype]
            values = RNG.standard_normal(24) * 1000 if np.dtype(dtype).kind == "f" else \
                RNG.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, 24, endpoint=True)
            out.append((f"plain.{qtype.name.lower()}", qtype, (2, 3, 4), as_bytes(values.astype(dtype))))
        else:  # the rows of (b), or random bytes where the package decodes none (files carry any bytes)
            data = rows[qtype][:6].reshape(-1) if qtype in rows else RNG.integers(0, 256, 6 * size, dtype=np.uint8)
            out.append((f"blocks.{qtype.name.lower()}", qtype, (3, 2 * block), data))
    out.append(("empty", QT.F32, (0, 4), np.zeros(0, dtype=np.uint8)))
    out.append(("n" * 63, QT.F32, (1, 1, 1, 2), as_bytes(np.array([1.0, -1.0], dtype=np.float32))))
    return out, skipped


def write_package_file(path: Path, kvs: list, tensor_list: list, alignment: int) -> None:
    w = GGUFWriter(path, arch="oracle")
    if alignment != 32:
        w.add_custom_alignment(alignment)
    for key, vt, value, sub in kvs:
        w.add_key_value(key, value, vt, sub_type=sub)
    for name, qtype, shape, data in tensor_list:
        if qtype in PLAIN:
            w.add_tensor(name, data.view(PLAIN[qtype]).reshape(shape))
        else:  # raw bytes, shaped as bytes: the package derives the element shape from the type
            block, size = GGML_QUANT_SIZES[qtype]
            w.add_tensor(name, data.reshape(*shape[:-1], shape[-1] // block * size), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def expected_kvs(kvs: list, alignment: int) -> list:
    """The pairs GGUFWriter writes: general.architecture, general.alignment, then ours."""
    head = [("general.architecture", VT.STRING, "oracle", None)]
    if alignment != 32:
        head.append(("general.alignment", VT.UINT32, alignment, None))
    return head + kvs


def check_ggx_reads(helper: Helper, path: Path, kvs: list, tensor_list: list) -> None:
    """(a): the helper's dump of a package-written file against what was written and where the
    package's reader finds it."""
    what = path.name
    dump = json.loads(helper.run("dump", str(path)))
    if "error" in dump:
        return fail(f"{what}: ggx refused it: {dump['error']}")
    reader = GGUFReader(path)
    for field, value in [("version", 3), ("alignment", reader.alignment), ("data_offset", reader.data_offset)]:
        if dump[field] != value:
            fail(f"{what}: {field} {dump[field]}, the package has {value}")
    keys = [kv["key"] for kv in dump["kv"]]
    if keys != [k for k, *_ in kvs]:
        return fail(f"{what}: keys {keys}, expected {[k for k, *_ in kvs]}")
    for got, (key, vt, value, sub) in zip(dump["kv"], kvs):
        element = vt if sub is None else sub
        if got["type"] != GGX_NAME[vt] or got.get("arr_type") != (GGX_NAME[sub] if sub is not None else None):
            fail(f"{what}: key {key}: type {got['type']}/{got.get('arr_type')}, expected {vt.name}/{sub}")
        elif element == VT.STRING:
            if got["value"] != value:
                fail(f"{what}: key {key}: {got['value']!r}, expected {value!r}")
        elif dumped_bytes(element, got["value"]) != value_bytes(element, value):
            fail(f"{what}: key {key}: {got['value']}, expected {value} (bits of floats)")
    if len(dump["tensors"]) != len(tensor_list):
        return fail(f"{what}: {len(dump['tensors'])} tensors, expected {len(tensor_list)}")
    for got, (name, qtype, shape, data), theirs in zip(dump["tensors"], tensor_list, reader.tensors):
        ne = list(reversed(shape)) + [1] * (4 - len(shape))
        expect = {"name": name, "type": int(qtype), "ne": ne, "offset": theirs.data_offset - reader.data_offset,
                  "size": data.size, "data": data.tobytes().hex()}
        for field, value in expect.items():
            if got[field] != value:
                shown = "(bytes)" if field == "data" else f"{got[field]}, expected {value}"
                fail(f"{what}: tensor {name}: {field} {shown}")


def check_package_reads(path: Path, kvs: list, tensor_list: list) -> None:
    """(c): the package's reader on a file ggx wrote, against what the original file held."""
    what = path.name
    reader = GGUFReader(path)
    fields = [f for f in reader.fields.values() if not f.name.startswith("GGUF.")]
    if [f.name for f in fields] != [k for k, *_ in kvs]:
        return fail(f"{what}: keys {[f.name for f in fields]}, expected {[k for k, *_ in kvs]}")
    for field, (key, vt, value, sub) in zip(fields, kvs):
        element = vt if sub is None else sub
        if field.types != ([vt] if sub is None else [vt, sub]):
            fail(f"{what}: key {key}: types {field.types}, expected {vt.name}/{sub}")
        elif element == VT.STRING:
            if field.contents() != value:
                fail(f"{what}: key {key}: {field.contents()!r}, expected {value!r}")
        elif b"".join(field.parts[i].tobytes() for i in field.data) != value_bytes(element, value):
            fail(f"{what}: key {key}: {field.contents()}, expected {value}")
    if len(reader.tensors) != len(tensor_list):
        return fail(f"{what}: {len(reader.tensors)} tensors, expected {len(tensor_list)}")
    for t, (name, qtype, shape, data) in zip(reader.tensors, tensor_list):
        ne = list(reversed(shape))
        while len(ne) > 1 and ne[-1] == 1:  # ggx, like ggml, writes ggml_n_dims dimensions
            ne.pop()
        got = (t.name, t.tensor_type, t.shape.tolist(), as_bytes(t.data).tobytes())
        if got != (name, qtype, ne, data.tobytes()):
            fail(f"{what}: tensor {name}: {got[:3]} (and its bytes), expected {(name, qtype, ne)}")


def check_files(helper: Helper, work: Path, tensor_list: list) -> None:
    for alignment in (32, 64):
        written = work / f"package_{alignment}.gguf"
        kvs = metadata()
        write_package_file(written, kvs, tensor_list, alignment)
        kvs = expected_kvs(kvs, alignment)
        check_ggx_reads(helper, written, kvs, tensor_list)
        rewritten = work / f"ggx_{alignment}.gguf"
        helper.run("rewrite", str(written), str(rewritten))
        check_package_reads(rewritten, kvs, tensor_list)
        check_ggx_reads(helper, rewritten, kvs, tensor_list)
        print(f"files (alignment {alignment}): {len(kvs)} keys and {len(tensor_list)} tensors, "
              "package -> ggx and ggx -> package")
    # Arrays of arrays are valid GGUF, but gguf.h has no way to give them (as ggml): a clear refusal.
    nested = work / "nested.gguf"
    write_package_file(nested, [("array.nested", VT.ARRAY, [[1, 2], [3]], VT.ARRAY)], [], 32)
    dump = json.loads(helper.run("dump", str(nested)))
    if "arrays of arrays are not supported by gguf.h" not in dump.get("error", ""):
        fail(f"nested.gguf: expected the refusal of arrays of arrays, got {dump}")


def main() -> int:
    helper = Helper(sys.argv[1], Path(sys.argv[2]))
    helper.work.mkdir(parents=True, exist_ok=True)
    ggx_types = {t["id"]: t for t in json.loads(helper.run("types"))}
    print("ggx converts: " + " ".join(t["name"] for t in ggx_types.values() if t["converts"]))
    rows, summary = check_conversions(helper, ggx_types)
    tensor_list, skipped = tensors(ggx_types, rows)
    check_files(helper, helper.work, tensor_list)
    known = {int(q) for q in QT}
    for line in summary + skipped:
        print(line)
    for t in ggx_types.values():
        if t["id"] not in known:
            print(f"{t['name']}: skipped: the package does not know type {t['id']}")
    print(f"gguf_oracle: {len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
