"""Malformed UTF-8 decoded as Java's ``new String(bytes, UTF_8)`` decodes it (header keys in
the row API and in Arrow columns, and what `kcodec dump` prints)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

import kcodec
from kcodec._java_text import java_utf8

# bytes -> the UTF-16 code units OpenJDK 17's new String(bytes, UTF_8) makes of them
JAVA_DECODES = {
    "eda080": "fffd", "edbfbf": "fffd", "eda0": "fffd", "41eda08041": "41 fffd 41",
    "eda041": "fffd 41", "ed9fbf": "d7ff", "e0": "fffd", "e080": "fffd fffd",
    "e08080": "fffd fffd fffd", "e0a0": "fffd", "e0a080": "800", "c0af": "fffd fffd",
    "c2": "fffd", "c241": "fffd 41", "e28241": "fffd 41", "e282": "fffd", "f0": "fffd",
    "f09f": "fffd", "f09f98": "fffd", "f09f9841": "fffd 41", "f09f4141": "fffd 41 41",
    "f08f8080": "fffd fffd fffd fffd", "f4908080": "fffd fffd fffd fffd",
    "f5808080": "fffd fffd fffd fffd", "f480": "fffd", "f490": "fffd fffd", "f4": "fffd",
    "80bf": "fffd fffd", "fe": "fffd", "ff41": "fffd 41", "f0908041": "fffd 41",
    "f09f9880": "d83d de00",
}
# bytes that make up UTF-8's corner cases, for random strings of them
ALPHABET = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF,
            0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF]


def utf16_units(text: str) -> str:
    raw = text.encode("utf-16-be", "surrogatepass")
    return " ".join(format(int.from_bytes(raw[i:i + 2], "big"), "x")
                    for i in range(0, len(raw), 2))


@pytest.mark.parametrize("data", sorted(JAVA_DECODES))
def test_as_java_decodes(data: str) -> None:
    assert utf16_units(java_utf8(bytes.fromhex(data))) == JAVA_DECODES[data]


def test_header_keys_in_rows_and_columns() -> None:
    pa = pytest.importorskip("pyarrow")
    keys = [bytes.fromhex(data) for data in sorted(JAVA_DECODES)] + ["ключ".encode()]
    builder = kcodec.BatchBuilder()
    builder.append(b"v", timestamp=1700000000000, headers=[(key, b"x") for key in keys])
    expected = [java_utf8(key) for key in keys]
    (record,) = next(kcodec.read_batches(builder.build()))
    assert [key for key, _ in record.headers] == expected
    table = kcodec.decode_arrow(builder.build(), include_headers=True)
    assert table.schema.field("headers").type.value_type.field("key").type == pa.string()
    assert [h["key"] for h in table.column("headers").to_pylist()[0]] == expected


DECODER = """
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
public class Decode {
  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new FileReader(args[0]));
    PrintWriter out = new PrintWriter(new FileWriter(args[1]));
    for (String line; (line = in.readLine()) != null; ) {
      String text = new String(HexFormat.of().parseHex(line), StandardCharsets.UTF_8);
      StringBuilder units = new StringBuilder();
      for (int i = 0; i < text.length(); i++)
        units.append(i == 0 ? "" : " ").append(Integer.toHexString(text.charAt(i)));
      out.println(units);
    }
    out.close();
  }
}
"""


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK (javac)")
def test_random_strings_as_the_jdk_here_decodes_them(tmp_path: Path) -> None:
    noise = random.Random(11)
    inputs = sorted({bytes(noise.choice(ALPHABET) if noise.random() < 0.8
                           else noise.randrange(256) for _ in range(noise.randint(1, 10)))
                     for _ in range(50_000)})
    (tmp_path / "Decode.java").write_text(DECODER)
    (tmp_path / "in.txt").write_text("".join(data.hex() + "\n" for data in inputs))
    subprocess.run(["javac", "Decode.java"], cwd=tmp_path, check=True, timeout=120)
    subprocess.run(["java", "-cp", ".", "Decode", "in.txt", "out.txt"], cwd=tmp_path,
                   check=True, timeout=120)
    java = (tmp_path / "out.txt").read_text().splitlines()
    assert [utf16_units(java_utf8(data)) for data in inputs] == java
