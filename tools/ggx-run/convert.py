#!/usr/bin/env python3
"""Re-quantize the linear weights of a ggx-run model file with PyPI's gguf package.

    convert.py IN.gguf OUT.gguf TYPE

Reads IN.gguf (written by `ggx-run --export` with float weights), quantizes every `<linear>.weight`
whose input size is a multiple of TYPE's block size to TYPE (a type the package quantizes: q8_0, q5_0,
q5_1, q4_0, q4_1, mxfp4, ...; F32 tensors otherwise as they are) and writes OUT.gguf with the same
metadata (ggx-dit.weight_type names TYPE). ggx-run --model OUT.gguf runs each weight in the type the
file gives it.
"""
import sys

import gguf
import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType


def copy_metadata(reader, writer, type_name):
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue  # written by GGUFWriter itself
        if name == "ggx-dit.weight_type":
            writer.add_string(name, type_name)
            continue
        value_type = field.types[0]
        sub_type = field.types[-1] if value_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, field.contents(), value_type, sub_type)


def converted(tensor, qtype):
    """The tensor's data as stored in OUT.gguf and its type."""
    values = np.asarray(tensor.data)
    block = GGML_QUANT_SIZES[qtype][0]
    in_size = values.shape[-1]
    if tensor.name.endswith(".weight") and values.ndim == 2 and in_size % block == 0:
        return gguf.quants.quantize(values.astype(np.float32), qtype), qtype
    return values, GGMLQuantizationType(tensor.tensor_type)


def main(argv):
    if len(argv) != 4:
        sys.exit(__doc__)
    src, dst, type_name = argv[1:]
    qtype = GGMLQuantizationType[type_name.upper()]
    reader = gguf.GGUFReader(src)
    writer = gguf.GGUFWriter(dst, reader.fields["general.architecture"].contents())
    copy_metadata(reader, writer, type_name.lower())
    for tensor in reader.tensors:
        data, data_type = converted(tensor, qtype)
        writer.add_tensor(tensor.name, data, raw_dtype=data_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main(sys.argv)
