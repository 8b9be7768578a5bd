"""Read the QR codes in a screenshot with an independent decoder (zxing-cpp), as a phone's camera would.

The page draws its QR with segno; decoding the pixels Chromium painted (not the payload the server meant)
checks what a payer's wallet really scans. PNG decoding is the standard library's (zlib and the five PNG
row filters): no imaging package just for tests.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import zxingcpp

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # PNG colour type -> channels (grey, RGB, grey+alpha, RGBA), 8-bit only


def png_grey(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and one grey byte per pixel of an 8-bit, non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in CHANNELS and not interlace, f"unsupported PNG ({depth} bit, type {colour})"
    step = CHANNELS[colour]
    raw = zlib.decompress(b"".join(chunks))
    stride = width * step
    previous = bytearray(stride)
    grey = bytearray()
    for row in range(height):
        kind, line = raw[row * (stride + 1)], bytearray(raw[row * (stride + 1) + 1:(row + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - step] if i >= step else 0
            up, corner = previous[i], previous[i - step] if i >= step else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                guess = left + up - corner
                pa, pb, pc = abs(guess - left), abs(guess - up), abs(guess - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        previous = line
        for x in range(width):
            pixel = line[x * step:x * step + step]
            grey.append(pixel[0] if step <= 2 else (pixel[0] * 299 + pixel[1] * 587 + pixel[2] * 114) // 1000)
    return width, height, bytes(grey)


def decode_qr(png: Path | bytes) -> list[str]:
    """The text of every QR code in the image."""
    width, height, grey = png_grey(png.read_bytes() if isinstance(png, Path) else png)
    image = memoryview(grey).cast("B", (height, width))
    return [code.text for code in zxingcpp.read_barcodes(image, formats=zxingcpp.BarcodeFormat.QRCode)]
