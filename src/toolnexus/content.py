"""``toolnexus.content``: the content-part names, for code that imports them from here (COMPAT §1).

The same objects as the top level; the implementation is `toolnexus.parts` (the part model)
and `toolnexus.llm.parts_wire` (the provider blocks). See docs/parts.md.
"""

from __future__ import annotations

from .llm.parts_wire import encode_part
from .parts import (
    MEDIA_TYPES,
    BinaryReadable,
    ContentPart,
    ContentPartError,
    PartSource,
    UnsupportedPartError,
    audio,
    decoded_len,
    describe_part,
    estimate_tokens,
    file,
    from_dict,
    get_max_part_bytes,
    image,
    is_part_dict,
    normalize_parts,
    part,
    placeholder_text,
    set_max_part_bytes,
    summarize,
    text,
    to_dict,
    validate,
)

__all__ = [
    "MEDIA_TYPES",
    "BinaryReadable",
    "ContentPart",
    "ContentPartError",
    "PartSource",
    "UnsupportedPartError",
    "audio",
    "decoded_len",
    "describe_part",
    "encode_part",
    "estimate_tokens",
    "file",
    "from_dict",
    "get_max_part_bytes",
    "image",
    "is_part_dict",
    "normalize_parts",
    "part",
    "placeholder_text",
    "set_max_part_bytes",
    "summarize",
    "text",
    "to_dict",
    "validate",
]
