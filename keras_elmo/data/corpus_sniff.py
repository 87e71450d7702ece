"""What a file that is not UTF-8 text looks like: byte-order marks, NUL
patterns, compression and single-byte encodings, each with the command
that converts it.

`sniff_head(head, path)` looks at the first bytes of a (decompressed)
file and returns a description of why it is clearly not UTF-8 text, or
None. The rules, in order:

- a UTF-32 or UTF-16 byte-order mark (`FF FE 00 00`, `00 00 FE FF`,
  `FF FE`, `FE FF`);
- gzip data (`1F 8B`) in a file whose name does not end in `.gz`;
- UTF-16 without a byte-order mark: more than 30% of the bytes are NUL
  and at least 90% of the NULs sit at odd offsets (little-endian, ASCII
  text `h\\0i\\0`) or at even offsets (big-endian).

`looks_single_byte(line)` is True for a line that is not UTF-8 but reads
as Latin-1 / Windows-1252 text: no control bytes other than tab and line
ends, and no byte Windows-1252 leaves undefined. Random binary lines
almost always hold a control byte, so they do not pass.
"""

HEAD_BYTES = 4096

_ICONV = "iconv -f {src} -t UTF-8 {path} > {path}.utf8"
_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32 little-endian (byte-order mark FF FE 00 00)"),
    (b"\x00\x00\xfe\xff", "UTF-32 big-endian (byte-order mark 00 00 FE FF)"),
    (b"\xff\xfe", "UTF-16 little-endian (byte-order mark FF FE)"),
    (b"\xfe\xff", "UTF-16 big-endian (byte-order mark FE FF)"),
)
# Bytes Windows-1252 does not define.
_CP1252_UNDEFINED = frozenset(b"\x81\x8d\x8f\x90\x9d")
_ALLOWED_CONTROLS = frozenset(b"\t\r\n")


def _iconv(source, path):
    return _ICONV.format(src=source, path=path)


def sniff_head(head, path):
    """Why the file starting with `head` is not UTF-8 text, or None.

    Args:
        head: bytes, the first bytes of the file (decompressed).
        path: str, the file's name (for `.gz` and the message's command).

    Returns:
        A sentence naming the encoding it looks like and how to convert
        it, or None when nothing in the head says "not text".
    """
    for bom, name in _BOMS:
        if head.startswith(bom):
            source = name.split(" ")[0]  # iconv reads the mark itself
            return (
                f"it looks like {name}, not UTF-8; convert it with "
                f"`{_iconv(source, path)}`"
            )
    if head.startswith(b"\x1f\x8b") and not path.endswith(".gz"):
        return (
            "it is gzip-compressed data but its name does not end in .gz; "
            "rename it to end in .gz (or `gunzip` it)"
        )
    return _sniff_utf16(head, path)


def _sniff_utf16(head, path):
    nuls = head.count(0)
    if len(head) < 8 or nuls <= 0.3 * len(head):
        return None
    odd = sum(1 for i in range(1, len(head), 2) if head[i] == 0)
    for share, source in ((odd, "UTF-16LE"), (nuls - odd, "UTF-16BE")):
        if share >= 0.9 * nuls:
            return (
                f"it looks like {source} text without a byte-order mark "
                f"(every other byte is NUL), not UTF-8; convert it with "
                f"`{_iconv(source, path)}`"
            )
    return None


def looks_single_byte(line):
    """True if a non-UTF-8 line reads as Latin-1 / Windows-1252 text."""
    for byte in line:
        if byte < 0x20 and byte not in _ALLOWED_CONTROLS:
            return False
        if byte == 0x7F or byte in _CP1252_UNDEFINED:
            return False
    return True


def single_byte_hint(path):
    """The sentence for a file whose bad lines read as Latin-1 text."""
    return (
        "its lines that are not UTF-8 read as Latin-1 / Windows-1252 text; "
        f"convert it with `{_iconv('WINDOWS-1252', path)}`"
    )


def binary_hint():
    return "this looks like binary data, not sentence-per-line text"
