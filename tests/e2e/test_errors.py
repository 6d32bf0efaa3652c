# SPDX-License-Identifier: MIT
"""The report on damaged dumps made by real runs: cut short, a flipped
byte, not a dump at all.  Each fails with one line naming the file, and
the chunk and offset where that makes sense."""

import json
import shutil
import struct
import subprocess

import tahelp
from tahelp import chunks, crc32c, FILE_HEADER, CHUNK_HEADER


class ErrorsTest(tahelp.Case):

    def setUp(self):
        super().setUp()
        r = self.traced("preload", [self.prog("threads-O0")],
                        env={"TRACEAGENT_BUFFER": "4K"})
        self.dump = r.dump
        self.chunks = chunks(self.dump)
        self.assertGreater(len(self.chunks), 4)
        with open(self.dump, "rb") as fh:
            self.data = fh.read()

    def copy(self, name, data):
        path = self.path(name)
        with open(path, "wb") as fh:
            fh.write(data)
        return path

    def failing_report(self, path):
        """Both report forms fail with one error line naming the file (other
        lines may be warnings); returns the error line of the text form."""
        for opts in ((), ("--json",)):
            p = self.report_raw(path, *opts)
            self.assertNotEqual(p.returncode, 0, "report %s %s succeeded" % (opts, path))
            lines = [l for l in p.stderr.splitlines()
                     if l.strip() and not l.startswith("traceagent: %s: warning: " % path)]
            self.assertEqual(len(lines), 1, p.stderr)
            self.assertTrue(lines[0].startswith("traceagent: %s: " % path), lines[0])
        return lines[0]

    def middle_chunk(self):
        """Index and (offset, type, flags, size) of a chunk with a payload in
        the middle of the dump."""
        for i in range(len(self.chunks) // 2, len(self.chunks)):
            if self.chunks[i][3] >= 8:
                return i, self.chunks[i]
        self.fail("no chunk with a payload")

    def test_truncated_mid_chunk(self):
        i, (off, _type, _flags, size) = self.middle_chunk()
        for cut in (off + CHUNK_HEADER // 2, off + CHUNK_HEADER + size // 2):
            with self.subTest(cut=cut):
                path = self.copy("cut-%d.trace" % cut, self.data[:cut])
                msg = self.failing_report(path)
                self.assertIn("offset %d" % off, msg)
                self.assertIn("chunk %d" % i, msg)

    def test_flipped_byte(self):
        i, (off, _type, _flags, size) = self.middle_chunk()
        at = off + CHUNK_HEADER + size // 2
        data = bytearray(self.data)
        data[at] ^= 0x40
        msg = self.failing_report(self.copy("flipped.trace", bytes(data)))
        self.assertIn("chunk %d" % i, msg)
        self.assertIn("offset %d" % off, msg)
        self.assertIn("checksum", msg)

    def test_tests_reader_names_the_damage(self):
        """The tests' reader (tahelp.read_chunks: format's chunk reader,
        through tests/tools/tadumpread) reads the damage as the analyzer
        does: the chunk, its offset, what is wrong, the bytes skipped; the
        chunks around it whole."""
        i, (off, _type, _flags, size) = self.middle_chunk()
        data = bytearray(self.data)
        data[off + CHUNK_HEADER + size // 2] ^= 0x40
        path = self.copy("flipped-reader.trace", bytes(data))
        with self.assertRaises(ValueError) as e:
            tahelp.read_chunks(path)
        self.assertEqual(str(e.exception), "%s: chunk %d at offset %d: checksum mismatch"
                         % (path, i, off))
        p = subprocess.run([tahelp.DUMPREAD, path], capture_output=True, text=True,
                           timeout=tahelp.TIMEOUT)
        self.assertEqual(p.returncode, 1, p.stderr)
        lines = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual(lines[1 + i], {"error": "checksum mismatch", "code": -5, "chunk": i,
                                        "offset": off, "skipped": CHUNK_HEADER + size})
        self.assertEqual([(c["offset"], c["type"], c["flags"], c["stored"])
                          for c in lines[1:1 + i] + lines[2 + i:]],
                         self.chunks[:i] + self.chunks[i + 1:])

    def test_not_a_dump(self):
        for name, data in (("text.trace", b"hello, world\n" * 10),
                           ("elf.trace", open(self.prog("fib-O0"), "rb").read()[:4096])):
            with self.subTest(name=name):
                path = self.copy(name, data)
                msg = self.failing_report(path)
                self.assertIn("not a traceagent dump", msg)
                with self.assertRaises(ValueError) as e:
                    tahelp.read_chunks(path)
                self.assertEqual(str(e.exception), "tadumpread: %s: file header at offset 0: "
                                 "not a traceagent dump (bad magic)" % path)

    def test_other_major_version(self):
        header = bytearray(self.data[:FILE_HEADER])
        struct.pack_into("<H", header, 8, 2)
        struct.pack_into("<I", header, 28, crc32c(bytes(header[:28])))
        msg = self.failing_report(self.copy("v2.trace", bytes(header) + self.data[FILE_HEADER:]))
        self.assertIn("version", msg)

    def test_missing_file(self):
        self.failing_report(self.path("absent.trace"))

    def test_whole_copy_is_fine(self):
        path = self.path("copy.trace")
        shutil.copy(self.dump, path)
        rep = self.report(path)
        self.assert_whole(rep)


if __name__ == "__main__":
    tahelp.main()
