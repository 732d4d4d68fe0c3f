"""The .zkey, .wtns and .r1cs readers under a structured, seeded mutator (spec §1-§4).

Every mutant of the bundled files (truncated at and around each boundary and header field, section sizes and
counts that lie, sections dropped, doubled or reordered, header fields, primes, n8, domain sizes, coefficient
entries and points out of range, random bit flips) must either read or fail as one FormatError line that names
the file: through the reader, through `info`'s reader (in-process), and for a sample through the CLI.  A key
with a bad point never yields a written proof.  The container is parsed here independently of engine code.
"""
from __future__ import annotations

import os
import random
import struct
import threading
import tracemalloc
import warnings
from pathlib import Path

import pytest
from conftest import run_engine
from test_formats import records

from engine.algebra.curves import BLS12_381, BN254
from engine.commands.info import describe
from engine.errors import EngineError, FormatError, InputFileError
from engine.formats import read_r1cs, read_wtns, read_zkey

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "fixtures" / "tiny"
READERS = {b"zkey": read_zkey, b"wtns": read_wtns, b"r1cs": read_r1cs}
U32_EDGES = (0, 1, 3, 1 << 31, (1 << 32) - 1)
SEED = 20261205


# ---------------------------------------------------------------- the container, parsed independently

parse = records  # (magic, version, [(id, payload)]), parsed without engine code (test_formats')


def build(magic: bytes, version: int, recs, count: int | None = None, sizes: dict | None = None) -> bytes:
    """A binfile of `recs`; `count` overrides nSections, `sizes` {record index: declared size}."""
    out = [magic, struct.pack("<II", version, len(recs) if count is None else count)]
    for i, (sid, body) in enumerate(recs):
        out.append(struct.pack("<IQ", sid, (sizes or {}).get(i, len(body))) + body)
    return b"".join(out)


def with_section(raw: bytes, sid: int, edit) -> bytes:
    """raw with section `sid`'s payload replaced by edit(bytearray(payload))."""
    magic, version, recs = parse(raw)
    out = []
    for i, body in recs:
        if i == sid:
            body = bytearray(body)
            body = bytes(edit(body) or body)
        out.append((i, body))
    return build(magic, version, out)


def put(at: int, value: bytes):
    def edit(body: bytearray) -> None:
        body[at : at + len(value)] = value
    return edit


def u32(v: int) -> bytes:
    return struct.pack("<I", v)


def le(v: int, n: int = 32) -> bytes:
    return v.to_bytes(n, "little")


# ---------------------------------------------------------------- the mutator

def structural(raw: bytes):
    """Truncations around every boundary, lying sizes and counts, sections dropped, doubled, reordered."""
    magic, version, recs = parse(raw)
    bounds, off = {0, 3, 4, 8, 12}, 12
    for _, body in recs:
        bounds |= {off, off + 4, off + 12, off + 12 + len(body) // 2, off + 12 + len(body)}
        off += 12 + len(body)
    for b in sorted(bounds):
        for cut in (b - 1, b, b + 1):
            if 0 <= cut < len(raw):
                yield f"cut{cut}", raw[:cut]
    for i, (_, body) in enumerate(recs):
        for size in (len(body) + 1, len(body) - 1, 0, 1 << 62, (1 << 64) - 1, len(raw)):
            if size >= 0:
                yield f"size{i}={size}", build(magic, version, recs, sizes={i: size})
    for count in (0, len(recs) - 1, len(recs) + 1, (1 << 32) - 1):
        yield f"nsections={count}", build(magic, version, recs, count=count)
    for i in range(len(recs)):
        yield f"drop{i}", build(magic, version, recs[:i] + recs[i + 1 :])
        yield f"dup{i}", build(magic, version, recs + [recs[i]])
    yield "reversed", build(magic, version, recs[::-1])
    yield "rotated", build(magic, version, recs[1:] + recs[:1])
    for v in (0, 3, (1 << 32) - 1):
        yield f"version={v}", build(magic, v, recs)


def zkey_fields(raw: bytes):
    """Header fields, coefficient entries and points of a Groth16 zkey pushed out of range."""
    hdr = dict(parse(raw)[2])[2]
    n8q = struct.unpack_from("<I", hdr, 0)[0]
    q = int.from_bytes(hdr[4 : 4 + n8q], "little")
    at_r = 8 + n8q
    n_vars, n_public, domain = struct.unpack_from("<III", hdr, at_r + 32)
    curve = BN254 if n8q == 32 else BLS12_381
    other = BLS12_381 if curve is BN254 else BN254
    yield "n8q=48/32", with_section(raw, 2, put(0, u32(80 - n8q)))
    for v in (0, 31, (1 << 32) - 1):
        yield f"n8q={v}", with_section(raw, 2, put(0, u32(v)))
    yield "q+2", with_section(raw, 2, put(4, le(q + 2, n8q)))
    yield "r=other", with_section(raw, 2, put(at_r, le(other.r)))
    yield "r+1", with_section(raw, 2, put(at_r, le(curve.r + 1)))
    yield "n8r=48", with_section(raw, 2, put(at_r - 4, u32(48)))
    for name, k, values in (("nVars", 0, (0, 1, n_public, n_vars - 1, n_vars + 1)),
                            ("nPublic", 1, (n_vars - 1, n_vars, n_public + 1)),
                            ("domainSize", 2, (0, 3, 6, domain // 2, domain * 2, 1 << 31))):
        for v in (*values, *U32_EDGES):
            yield f"{name}={v}", with_section(raw, 2, put(at_r + 32 + 4 * k, u32(v % (1 << 32))))
    coeffs = dict(parse(raw)[2])[4]
    n_coef = struct.unpack_from("<I", coeffs, 0)[0]
    yield "nCoef+1", with_section(raw, 4, put(0, u32(n_coef + 1)))
    yield "nCoef=2^32-1", with_section(raw, 4, put(0, u32((1 << 32) - 1)))
    for k in (0, n_coef // 2, n_coef - 1):
        e = 4 + 44 * k
        for what, at, v in (("matrix", 0, 2), ("matrix", 0, 1 << 31), ("row", 4, domain), ("row", 4, (1 << 32) - 1),
                            ("wire", 8, n_vars), ("wire", 8, (1 << 32) - 1)):
            yield f"coef{k}.{what}={v}", with_section(raw, 4, put(e + at, u32(v)))
        for name, v in (("r", curve.r), ("2^256-1", (1 << 256) - 1)):
            yield f"coef{k}.value={name}", with_section(raw, 4, put(e + 12, le(v)))
    g1 = 2 * n8q
    header_points = at_r + 32 + 12
    for sid, first in ((2, header_points), (2, header_points + 2 * g1), (3, 0), (5, g1), (6, 0), (7, 0), (8, 0),
                       (9, 0)):
        for name, v in (("x+q", None), ("y+1", 1), ("x=2^max-1", (1 << (8 * n8q)) - 1)):
            def edit(body: bytearray, first=first, name=name, v=v) -> None:
                at = first + (n8q if name == "y+1" else 0)
                cur = int.from_bytes(body[at : at + n8q], "little")
                new = cur + q if name == "x+q" else cur + 1 if name == "y+1" else v
                body[at : at + n8q] = le(new % (1 << (8 * n8q)), n8q)
            yield f"point{sid}@{first}.{name}", with_section(raw, sid, edit)


def wtns_fields(raw: bytes):
    hdr = dict(parse(raw)[2])[1]
    r = int.from_bytes(hdr[4:36], "little")
    n = struct.unpack_from("<I", hdr, 36)[0]
    other = BLS12_381 if r == BN254.r else BN254
    for v in (0, 8, 31, 48, 64, (1 << 32) - 1, 1 << 31):
        yield f"n8={v}", with_section(raw, 1, put(0, u32(v)))
    yield "prime=other", with_section(raw, 1, put(4, le(other.r)))
    yield "prime+1", with_section(raw, 1, put(4, le(r + 1)))
    for v in (0, 1, n - 1, n + 1, (1 << 32) - 1):
        yield f"nWitness={v}", with_section(raw, 1, put(36, u32(v)))
    for name, v in (("r", r), ("2^256-1", (1 << 256) - 1)):
        yield f"w1={name}", with_section(raw, 2, put(32, le(v)))
    yield "values-1", with_section(raw, 2, lambda b: b[:-32])
    yield "values+1", with_section(raw, 2, lambda b: b + bytes(32))


def r1cs_fields(raw: bytes):
    hdr = dict(parse(raw)[2])[1]
    r = int.from_bytes(hdr[4:36], "little")
    other = BLS12_381 if r == BN254.r else BN254
    for v in (0, 8, 33, 48, 64, 72, (1 << 32) - 1):
        yield f"n8={v}", with_section(raw, 1, put(0, u32(v)))
    yield "prime=other", with_section(raw, 1, put(4, le(other.r)))
    yield "prime+1", with_section(raw, 1, put(4, le(r + 1)))
    for k, name in enumerate(("nWires", "nPubOut", "nPubIn", "nPrvIn")):
        for v in U32_EDGES:
            yield f"{name}={v}", with_section(raw, 1, put(36 + 4 * k, u32(v)))
    yield "nLabels=2^64-1", with_section(raw, 1, put(52, struct.pack("<Q", (1 << 64) - 1)))
    for v in U32_EDGES:
        yield f"mConstraints={v}", with_section(raw, 1, put(60, u32(v)))
    for at, v in ((0, (1 << 32) - 1), (0, 1 << 20), (4, (1 << 32) - 1), (8, (1 << 32) - 1)):
        yield f"constraints@{at}={v}", with_section(raw, 2, put(at, u32(v)))
    yield "coeff=2^256-1", with_section(raw, 2, put(8, le((1 << 256) - 1)))
    yield "labels-1", with_section(raw, 3, lambda b: b[:-8])


FIELDS = {b"zkey": zkey_fields, b"wtns": wtns_fields, b"r1cs": r1cs_fields}


def flips(raw: bytes, rng: random.Random, count: int):
    for _ in range(count):
        mod = bytearray(raw)
        k = rng.randrange(len(mod))
        mod[k] ^= 1 << rng.randrange(8)
        yield f"flip{k}", bytes(mod)


def mutants(raw: bytes, seed: int = SEED, n_flips: int = 40):
    """Every mutant of `raw` (a well-formed binfile), deterministic for a seed; no-op mutants left out."""
    rng = random.Random(seed)
    seen = {raw}
    for name, data in (*structural(raw), *FIELDS[raw[:4]](raw), *flips(raw, rng, n_flips)):
        if data not in seen:
            seen.add(data)
            yield name, data


def fails_in_one_line(fn, path) -> bool:
    """fn(path) reads (True) or raises one InputFileError line naming `path` (False); anything else fails."""
    try:
        fn(path)
    except EngineError as exc:
        msg = str(exc)
        assert isinstance(exc, InputFileError), f"{type(exc).__name__}: {msg}"
        assert "\n" not in msg and msg.startswith(f"{path}: "), msg
        return False
    return True


SOURCES = [TINY / c / n for c in ("bn128", "bls12381") for n in ("tiny.zkey", "tiny.wtns", "tiny.r1cs")]


@pytest.mark.parametrize("src", SOURCES, ids=lambda p: f"{p.parent.name}-{p.name}")
def test_every_mutant_reads_or_fails_in_one_line(tmp_path, src):
    raw = src.read_bytes()
    reader = READERS[raw[:4]]
    path = tmp_path / ("m" + src.suffix)
    count = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an r1cs coefficient >= r is reduced with a warning
        for name, data in mutants(raw):
            path.write_bytes(data)
            try:
                read_ok = fails_in_one_line(reader, path)
                info_ok = fails_in_one_line(describe, path)
            except AssertionError as exc:
                raise AssertionError(f"mutant {name}: {exc}") from None
            assert read_ok == info_ok or src.suffix == ".r1cs", name  # info reads only an r1cs's header
            count += 1
    assert count > 100


def test_bad_header_values_are_named(tmp_path):
    """The header checks a user meets most, each with its own words (not a generic "truncated")."""
    raw = (TINY / "bn128" / "tiny.zkey").read_bytes()
    p = tmp_path / "k.zkey"
    by_name = dict(zkey_fields(raw))
    for name, words in (("domainSize=3", "is not a power of two"), ("domainSize=0", "is not a power of two"),
                        ("domainSize=4", "row"), ("nPublic=7", "nPublic = 7 needs at least 8 wires"),
                        ("r=other", "is not the scalar field of bn128 (it is bls12381's)"),
                        ("q+2", "is not that of bn128 or bls12381"), ("coef0.wire=7", "wire 7"),
                        ("coef0.matrix=2", "matrix 2"), ("coef0.value=r", "not reduced modulo r")):
        p.write_bytes(by_name[name])
        with pytest.raises(FormatError) as e:
            read_zkey(p)
        assert words in str(e.value) and str(e.value).startswith(f"{p}: "), (name, str(e.value))


def test_huge_declared_sizes_are_refused_from_the_header(tmp_path):
    """A 2^62 section size, count or element count is refused before anything is allocated for it."""
    cases = []
    for src in SOURCES[:3]:
        raw = src.read_bytes()
        magic, version, recs = parse(raw)
        for i in range(len(recs)):
            cases.append((src.suffix, build(magic, version, recs, sizes={i: 1 << 62})))
        cases.append((src.suffix, build(magic, version, recs, count=(1 << 32) - 1)))
    wt = (TINY / "bn128" / "tiny.wtns").read_bytes()
    cases.append((".wtns", with_section(wt, 1, put(36, u32((1 << 32) - 1)))))
    rc = (TINY / "bn128" / "tiny.r1cs").read_bytes()
    cases.append((".r1cs", with_section(rc, 1, put(60, u32((1 << 32) - 1)))))
    tracemalloc.start()
    try:
        for k, (ext, data) in enumerate(cases):
            p = tmp_path / f"h{k}{ext}"
            p.write_bytes(data)
            tracemalloc.reset_peak()
            try:
                READERS[data[:4]](p)
            except FormatError as exc:
                assert str(exc).startswith(f"{p}: ") and "\n" not in str(exc)
            # the wtns value section's size is re-derived from nWitness when circom garbled it (spec §3)
            assert tracemalloc.get_traced_memory()[1] < 4 << 20, (k, ext)
    finally:
        tracemalloc.stop()


def test_many_section_records_are_refused_from_the_header(tmp_path):
    """A key padded with 200k empty records of an unknown id (2.4 MB) took seconds and ~60 MB to scan, linear
    in a count no writer comes near (snarkjs writes at most 10 zkey sections): refused from nSections."""
    magic, version, recs = parse((TINY / "bn128" / "tiny.zkey").read_bytes())
    p = tmp_path / "padded.zkey"
    p.write_bytes(build(magic, version, [(77, b"")] * 200_000 + recs))
    with pytest.raises(FormatError) as e:
        read_zkey(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}: ") and "\n" not in msg and "200010 sections" in msg, msg
    p.write_bytes(build(magic, version, [(77, b"x")] * 20 + recs))  # a few unknown sections are still fine
    assert read_zkey(p).n_vars == 7


def _pipe_from(tmp_path: Path, head: bytes, tail_bytes: int, name: str = "pipe"):
    """A FIFO fed by a thread with `head` then `tail_bytes` of b"y\\n"; returns (path, thread, bytes written)."""
    fifo = tmp_path / name
    os.mkfifo(fifo)
    written = [0]

    def feed() -> None:
        fd = os.open(fifo, os.O_WRONLY)
        try:
            data, chunk = head, b"y\n" * 32768
            while data or written[0] < len(head) + tail_bytes:
                try:
                    written[0] += os.write(fd, data or chunk)
                except BrokenPipeError:
                    return
                data = head[written[0]:]
        finally:
            os.close(fd)

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    return fifo, t, written


@pytest.mark.parametrize("reader", [read_zkey, read_wtns, read_r1cs])
def test_a_pipe_of_other_bytes_is_refused_from_its_first_bytes(tmp_path, reader):
    """`prove <(yes) ...`: a pipe was read to its end before its magic was looked at, an endless one without
    bound (the CLI said "out of host memory" once RAM ran out); now its first 12 bytes are enough."""
    fifo, t, written = _pipe_from(tmp_path, b"", 48 << 20)
    with pytest.raises(FormatError) as e:
        reader(fifo)
    t.join(10)
    assert str(e.value).startswith(f"{fifo}: is not a .") and "\n" not in str(e.value)
    assert written[0] < 4 << 20, written[0]


def test_a_pipe_is_read_only_to_its_last_section(tmp_path):
    """A well-formed file followed by endless bytes reads as the file (snarkjs ignores what follows the last
    record) without reading on to the end of the pipe."""
    raw = (TINY / "bn128" / "tiny.zkey").read_bytes()
    fifo, t, written = _pipe_from(tmp_path, raw, 48 << 20)
    key = read_zkey(fifo)
    t.join(10)
    assert key.n_vars == 7 and key.domain_size == 8
    assert written[0] < len(raw) + (4 << 20), written[0]
    wt = (TINY / "bn128" / "tiny.wtns").read_bytes()
    magic, version, recs = parse(wt)
    garbled = build(magic, version, recs, sizes={1: 5})  # circom's size of a >= 4 GiB section (spec §3)
    for k, (data, tail) in enumerate(((wt, 0), (wt, 48 << 20), (garbled, 0), (garbled, 48 << 20))):
        fifo, t, written = _pipe_from(tmp_path, data, tail, f"w{k}")
        if k == 3:  # after a garbled size nothing may follow the counted values, on disk or in a pipe
            with pytest.raises(FormatError, match="has 5 bytes but nWitness = 7 needs 224"):
                read_wtns(fifo)
        else:
            values = read_wtns(fifo).values
            assert values.shape == (7, 4) and values[0, 0] == 1, k
        t.join(10)
        assert written[0] < len(data) + (4 << 20), (k, written[0])


@pytest.mark.parametrize("src", SOURCES[:3], ids=lambda p: p.name)
def test_every_mutant_reads_from_a_pipe_as_from_disk(tmp_path, src):
    """A pipe is read only to its last record: each mutant must still read, or fail with the same words, as the
    file on disk does (a .wtns whose count disagrees with its values most of all)."""
    raw = src.read_bytes()
    reader = READERS[raw[:4]]

    def outcome(path):
        try:
            got = reader(path)
        except FormatError as exc:
            return str(exc).split(": ", 1)[1]
        if hasattr(got, "values"):
            return got.values.tobytes()
        return (got.n_vars, got.sha) if hasattr(got, "sha") else (got.n_wires, got.a.coeffs.tobytes())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, (name, data) in enumerate(mutants(raw, n_flips=10)):
            disk = tmp_path / f"d{src.suffix}"
            disk.write_bytes(data)
            fifo, t, _ = _pipe_from(tmp_path, data, 0, f"p{k}")
            assert outcome(fifo) == outcome(disk), name
            t.join(10)


def test_a_key_with_a_bad_point_never_yields_a_wrong_proof(tmp_path):
    """Every point mutant of both curves' keys, and keys with two points swapped (on the curve, wrong), through
    one Engine: each load or proof is one EngineError, or a proof that verifies under the untouched key (a
    coordinate written as x + q, which snarkjs reads as x, is refused: the GPU takes the raw limbs); the engine
    then still proves."""
    import asyncio  # noqa: PLC0415

    from engine import Engine, EngineConfig, verify  # noqa: PLC0415

    async def main() -> dict:
        outcome = {"refused": 0, "proved": 0}
        async with Engine(EngineConfig(backend="cpu", synthesis_workers=1)) as eng:
            for curve in ("bn128", "bls12381"):
                raw = (TINY / curve / "tiny.zkey").read_bytes()
                cases = [(n, d) for n, d in zkey_fields(raw) if n.startswith("point")]
                g1 = 64 if curve == "bn128" else 96
                for sid in (3, 5, 6, 8, 9):  # points 0 and 1 swapped: each on the curve, both wrong

                    def swap(body: bytearray) -> bytes:
                        return body[g1 : 2 * g1] + body[:g1] + body[2 * g1 :]

                    cases.append((f"swap{sid}", with_section(raw, sid, swap)))
                vk = TINY / curve / "verification_key.json"
                for k, (name, data) in enumerate(cases):
                    p = tmp_path / f"{curve}-{k}.zkey"
                    p.write_bytes(data)
                    try:
                        key = await eng.load_key(p)
                        proof = await eng.prove(key, TINY / curve / "tiny.wtns")
                    except EngineError as exc:
                        assert "\n" not in str(exc) and str(p) in str(exc), (name, str(exc))
                        outcome["refused"] += 1
                        continue
                    assert verify(vk, proof.public, proof), f"{curve} {name}: a wrong proof was returned"
                    assert ".x+q" not in name, f"{curve} {name}: a coordinate not below q was accepted"
                    outcome["proved"] += 1
                key = await eng.load_key(TINY / curve / "tiny.zkey")
                assert verify(vk, *(lambda pr: (pr.public, pr))(await eng.prove(key, TINY / curve / "tiny.wtns")))
        return outcome

    outcome = asyncio.run(main())
    assert outcome["refused"] >= 30 and outcome["proved"] >= 2, outcome


def _cli_cases(tmp: Path) -> list[tuple[str, list, int]]:
    """(name, argv, expected exit) of CLI runs on mutants: a sample, each one subprocess."""
    z, w, r = (TINY / "bn128" / n for n in ("tiny.zkey", "tiny.wtns", "tiny.r1cs"))
    zf, wf, rf = (dict(FIELDS[p.read_bytes()[:4]](p.read_bytes())) for p in (z, w, r))
    magic, version, recs = parse(z.read_bytes())
    files = {
        "huge.zkey": build(magic, version, recs, sizes={3: 1 << 62}),
        "alpha.zkey": zf["point2@84.y+1"],
        "apoint.zkey": zf["point5@64.y+1"],
        "count.wtns": wf["nWitness=8"],
        "wire.r1cs": rf["constraints@4=4294967295"],
    }
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    out = [tmp / "p.json", tmp / "pub.json"]
    return [
        ("info", ["info", tmp / "huge.zkey"], 2),
        ("export-vkey", ["export-vkey", tmp / "alpha.zkey", tmp / "vk.json"], 2),
        ("prove-alpha", ["prove", "--backend", "cpu", tmp / "alpha.zkey", w, *out], 2),
        ("prove-apoint", ["prove", "--backend", "cpu", tmp / "apoint.zkey", w, *out], 1),
        ("prove-wtns", ["prove", "--backend", "cpu", z, tmp / "count.wtns", *out], 2),
        ("setup", ["setup", "--backend", "cpu", tmp / "wire.r1cs", tmp / "k.zkey"], 2),
    ]


@pytest.mark.parametrize("case", range(6))
def test_cli_on_mutants_is_one_line_and_writes_nothing(tmp_path, case):
    name, argv, code = _cli_cases(tmp_path)[case]
    proc = run_engine(*argv)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == code, (name, proc.returncode, proc.stderr)
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in proc.stderr, (name, lines)
    assert str(tmp_path) in lines[0], lines
    made = {p.name for p in tmp_path.iterdir()} - {"huge.zkey", "alpha.zkey", "apoint.zkey", "count.wtns",
                                                  "wire.r1cs"}
    assert not made, (name, made)


def test_a_huge_wtns_field_size_is_named_without_its_prime(tmp_path):
    """A .wtns declaring 1 MiB field elements was refused with its "prime" in hex: a 2 MB error line."""
    n8 = 1 << 20
    p = tmp_path / "wide.wtns"
    p.write_bytes(build(b"wtns", 2, [(1, u32(n8) + b"\xff" * n8 + u32(1)), (2, bytes(n8))]))
    for fn in (read_wtns, describe):
        with pytest.raises(FormatError) as e:
            fn(p)
        msg = str(e.value)
        assert msg.startswith(f"{p}: ") and len(msg) < 300 and f"n8 = {n8}" in msg, msg[:400]


def test_info_on_a_terminal_device_is_refused_not_waited_on(tmp_path):
    """`info /dev/tty` waited for four bytes typed at the terminal: a device is refused by name, as the readers
    refuse it."""
    import subprocess  # noqa: PLC0415

    master, slave = os.openpty()
    try:
        tty = os.ttyname(slave)
        try:
            proc = run_engine("info", tty, timeout=15)
        except subprocess.TimeoutExpired:
            pytest.fail(f"info {tty} waited for input")
        assert proc.returncode == 2 and proc.stderr.strip() == (
            f"error: {tty}: is not a file or a pipe (a device or a socket)"), proc.stderr
    finally:
        os.close(master)
        os.close(slave)
