"""`python -m engine info <file> [--quiet|--json]`: what a circom/snarkjs file holds (--quiet: nothing printed on
success, as for every command: the exit code says whether the file reads as its kind).

Recognises .r1cs, .wtns, .zkey (and .ptau) and circom's circuit.wasm by their magic, and
proof.json, public.json, verification_key.json and input.json by their shape, whatever their
names.
Reads only what it shows: the r1cs header, not its constraints; the zkey's
header and coeffs, not its points.
"""
from __future__ import annotations

import argparse
import json
import os
import stat

from engine.config_flags import proofs_arg
from engine.errors import EngineError, FormatError, InputFileError, file_error
from engine.paths import closed_stream, escaped, is_pipe, shown as shown_path


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "info",
        help="summarise a .r1cs, .wtns, .zkey, .ptau, circuit.wasm, input.json, proof.json, public.json or "
             "verification_key.json",
        description="Print what a circom/snarkjs file holds: curve, constraints, wires, public signals, "
        "domain size, coefficient count, section sizes.",
    )
    p.add_argument("file", help="the file to describe (its kind is detected from its content)")
    out = p.add_mutually_exclusive_group()  # as every command's (engine/progress.py's add_output_flags)
    out.add_argument("--quiet", action="store_true",
                     help="nothing printed on success: the exit code says whether the file reads as its kind "
                          "(errors still print)")
    out.add_argument("--json", action="store_true", help="print a JSON object (on one line) instead of text")
    p.add_argument("--vram-budget", default=None, metavar="SIZE",
                   help="for a .zkey: the per-device VRAM budget to plan the key's GPU footprint for "
                   "(fold or host tier, device bytes, MSM cost; default 16GiB)")
    p.add_argument("--proofs", type=proofs_arg, default=None, metavar="N",
                   help="for a .zkey: proof working sets to leave room for beside the key (default auto: as the "
                        "engine plans by default, two, or three where two of its proofs compute at once)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if os.fspath(args.file) == "-":  # (was "no such file"; /dev/stdin is a pipe, refused below)
        raise InputFileError("-", '"-" is not standard input here, and info reads its file more than once: give '
                             'the file\'s path (./- for a file named "-")')
    if closed_stream(args.file) is not None:  # /dev/stdin under `<&-` (read as /dev/null: "not a file or a pipe")
        raise InputFileError(args.file, f"cannot read: {closed_stream(args.file)} is closed")
    if is_pipe(args.file):  # detect() took the first bytes and the reader then missed them: "not a .zkey file"
        raise InputFileError(args.file, "is a pipe, and info reads its file more than once: give the file's path")
    summary = describe(args.file)
    if summary.get("kind") == "zkey":
        summary["footprint"] = _footprint(args.file, "16GiB" if args.vram_budget is None else args.vram_budget,
                                          "auto" if args.proofs is None else args.proofs)
    else:  # they plan a key's footprint: on another file they would be ignored without a word (an empty one too)
        given = [flag for flag, value in (("--vram-budget", args.vram_budget), ("--proofs", args.proofs))
                 if value is not None]
        if given:
            raise EngineError(f"{' and '.join(given)} {'plan' if len(given) > 1 else 'plans'} a key's GPU footprint, "
                              f"but {args.file} is a {summary.get('kind')} file, not a .zkey")
    if not args.quiet:  # --quiet: the file was read and described (exit 0), as `cache list --quiet`
        print(json.dumps(summary) if args.json else render(summary))  # one line, as every --json
    return 0


# ---------------------------------------------------------------- detection

def detect(path) -> str:
    """'r1cs' | 'wtns' | 'zkey' | 'ptau' | 'wasm' | 'json' from the first bytes (errors name the file)."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # a terminal would wait for typing
                raise FormatError(name, "is not a file or a pipe (a device or a socket)")
            head = f.read(4)
    except (OSError, ValueError) as exc:
        raise file_error(name, exc) from None
    if head in (b"r1cs", b"wtns", b"zkey", b"ptau"):
        return head.decode()
    if head == b"\0asm":
        return "wasm"
    bom = head.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"))  # JSON's reader names what is wrong there
    if head.lstrip()[:1] in (b"{", b"[") or (head and head.isspace()) or bom:
        return "json"
    if not head:
        raise FormatError(name, "is empty")
    raise FormatError(name, "is not a .r1cs, .wtns, .zkey, .ptau, circuit.wasm or snarkjs JSON file")


def describe(path) -> dict:
    kind = detect(path)
    if kind == "json":
        return _describe_json(path)
    return {"r1cs": _r1cs, "wtns": _wtns, "zkey": _zkey, "ptau": _ptau, "wasm": _wasm}[kind](path)


def _sections(bf) -> list[dict]:
    return [{"id": s.id, "name": bf.names.get(s.id, ""), "offset": s.offset, "size": s.size} for s in bf.records]


# ---------------------------------------------------------------- binary files

def _r1cs(path) -> dict:
    from engine.formats.r1cs import custom_gates, prime_name, read_r1cs_header

    try:
        h, bf = read_r1cs_header(path)
    except FormatError:  # a prime no supported curve has: described as a .wtns of it is (the prime named)
        h, bf = _other_prime_header(path) or (None, None)
        if h is None:
            raise
    # the counts it shows, held against the section table (as read_r1cs does, without reading the sections):
    # a corrupt header's 2^27 constraints in a 600-byte file were shown as the circuit's
    constraints = bf.section(2)
    if 12 * h.n_constraints > constraints.size:
        raise bf.error(f"{bf.label(2)} has {constraints.size} bytes, too few for mConstraints = {h.n_constraints} "
                       "(12 bytes at least each)")
    labels = bf.optional(3)
    if labels is not None:
        bf.expect_size(labels, 8 * h.n_wires, f"nWires = {h.n_wires}")
    return {
        "file": bf.path,
        "kind": "r1cs",
        "version": bf.version,
        "curve": h.curve.name if h.curve else None,
        "prime": str(h.prime),
        "prime_name": prime_name(h.prime),
        "constraints": h.n_constraints,
        "wires": h.n_wires,
        "public_outputs": h.n_pub_out,
        "public_inputs": h.n_pub_in,
        "public_signals": h.n_pub_out + h.n_pub_in,
        "private_inputs": h.n_prv_in,
        "labels": h.n_labels,
        "custom_gates": custom_gates(bf),  # {"gates": names, "uses": n}: PLONK's; setup and prove --r1cs refuse it
        "sections": _sections(bf),
    }


def _other_prime_header(path):
    """(header, binfile) of an .r1cs whose only fault for reading is its prime (no supported curve has it: another
    of circom's, as `witness` computes for), else None (the reader's own error then stands).  The engine proves
    none of them (setup and prove refuse the file); info describes it, as it describes a .wtns of that prime."""
    from engine.algebra.curves import curve_by_scalar_prime
    from engine.formats.binfile import open_binfile
    from engine.formats.r1cs import SECTION_NAMES, R1CSHeader

    try:
        bf = open_binfile(path, "r1cs", max_version=1, names=SECTION_NAMES)
        cur = bf.cursor(bf.section(1))
        n8 = cur.u32("n8")
        if n8 == 0 or n8 % 8 or n8 > 64:
            return None
        prime = cur.bigint(n8, "the prime")
        if curve_by_scalar_prime(prime) is not None:
            return None
        n_wires, n_pub_out, n_pub_in, n_prv_in = (cur.u32(what) for what in ("nWires", "nPubOut", "nPubIn", "nPrvIn"))
        n_labels, n_constraints = cur.u64("nLabels"), cur.u32("mConstraints")
        cur.finish()
    except FormatError:
        return None
    if n_wires == 0 or 1 + n_pub_out + n_pub_in > n_wires:
        return None
    return R1CSHeader(prime, None, n_wires, n_pub_out, n_pub_in, n_prv_in, n_labels, n_constraints), bf


def _wtns(path) -> dict:
    from engine.formats.binfile import open_binfile
    from engine.formats.r1cs import prime_name
    from engine.formats.wtns import SECTION_NAMES, read_wtns
    from engine.algebra.limbs import to_ints

    w = read_wtns(path)
    bf = open_binfile(path, "wtns", min_version=2, max_version=2, names=SECTION_NAMES, lenient_last=2)
    return {
        "file": w.path,
        "kind": "wtns",
        "version": bf.version,
        "curve": w.curve.name if w.curve else None,
        "prime": str(w.prime),
        "prime_name": prime_name(w.prime),
        "witness_values": int(w.values.shape[0]),
        "w0": str(to_ints(w.values[:1])[0]),
        "sections": _sections(bf),
    }


def _wasm(path) -> dict:
    """circom's circuit.wasm: its field, witness size and inputs, as the witness calculator loads it."""
    from engine.formats.r1cs import prime_name
    from engine.witness.calculator import WasmCircuit

    c = WasmCircuit.load(path, quick=True)  # compiled by the baseline compiler, or served from the disk cache
    return {
        "file": os.fspath(path),
        "kind": "wasm",
        "circom_runtime": ".".join(map(str, c.version)),
        "curve": c.curve.name if c.curve else None,
        "prime": str(c.prime),
        "prime_name": prime_name(c.prime),
        "witness_values": c.n_witness,
        "input_values": c.n_inputs,
    }


def _zkey(path) -> dict:
    import numpy as np

    from engine.formats.binfile import open_binfile
    from engine.formats.zkey import SECTION_NAMES, mpc_summary, read_zkey

    k = read_zkey(path)
    bf = open_binfile(path, "zkey", max_version=2, names=SECTION_NAMES)
    n_a = int(np.count_nonzero(k.coeffs["matrix"] == 0)) if k.n_coef else 0
    mpc = mpc_summary(k)
    return {
        "file": k.path,
        "kind": "zkey",
        "protocol": "groth16",
        "version": k.version,
        "curve": k.curve.name,
        "vars": k.n_vars,
        "public_signals": k.n_public,
        "private_vars": k.n_vars - k.n_public - 1,
        "domain_size": k.domain_size,
        "log_domain": k.log_domain,
        "coefficients": k.n_coef,
        "coefficients_a": n_a,
        "coefficients_b": k.n_coef - n_a,
        "contributions": mpc[1] if mpc else None,
        "circuit_hash": mpc[0].hex() if mpc else None,
        "sha": k.sha.hex(),
        "sections": _sections(bf),
    }


def _ptau(path) -> dict:
    from engine.algebra.curves import curve_by_base_prime
    from engine.formats.binfile import open_binfile

    bf = open_binfile(path, "ptau", max_version=1, names={1: "header"})
    cur = bf.cursor(bf.section(1))
    n8 = cur.u32("n8")
    q = cur.bigint(n8, "q")
    power = cur.u32("power")
    curve = curve_by_base_prime(q)
    return {
        "file": bf.path,
        "kind": "ptau",
        "version": bf.version,
        "curve": curve.name if curve else None,
        "power": power,
        "sections": _sections(bf),
    }


def _footprint(path, budget: str, proofs: str | int) -> dict:
    """The key's footprint on a GPU under `budget` (engine/backends/gpu/footprint.py), or why none fits;
    `proofs` "auto": as the engine plans it under compute_slots "auto" (scheduler/compute_share.py), with
    how many of its proofs compute at once."""
    from engine.backends.gpu.footprint import KeyShape, plan_key
    from engine.config import ConfigError, parse_size
    from engine.errors import BudgetError
    from engine.formats.zkey import read_zkey
    from scheduler.compute_share import AUTO_SLOTS, plan_with_share

    budget_bytes = parse_size(budget, "--vram-budget")
    if budget_bytes == 0:  # refused as prove and serve refuse it (it planned, and said "raise vram_budget")
        raise ConfigError("--vram-budget: 0 bytes holds no key or witness (leave it out for the default, 16GiB)")
    shape, label = KeyShape.of(read_zkey(path)), os.fspath(path)
    try:
        if proofs == "auto":
            fp, take = plan_with_share(lambda n: plan_key(shape, budget_bytes, proofs=n, label=label), AUTO_SLOTS)
            computing = AUTO_SLOTS // take
        else:
            fp, computing = plan_key(shape, budget_bytes, proofs=int(proofs), label=label), None
    except BudgetError as exc:  # the budget is --vram-budget's here, not the configuration's key
        return {"budget_bytes": budget_bytes, "error": str(exc).replace("raise vram_budget", "raise --vram-budget")}
    out = {**fp.as_dict(), "summary": fp.describe()}
    if proofs != "auto" and fp.proofs_in_flight < int(proofs):  # said, not left to read off "x N"
        out["summary"] += f"; room for {fp.proofs_in_flight} of the {int(proofs)} proofs asked for"
    if computing is not None:
        out["proofs_computing"] = computing
        out["summary"] += ("; its proofs compute one at a time" if computing == 1 else
                           f"; {computing} of its proofs compute at once")
    return out


# ---------------------------------------------------------------- JSON files

def _describe_json(path) -> dict:
    from engine.formats.json import load_json, read_proof, read_public, read_vkey

    name = os.fspath(path)
    data = load_json(path)
    if isinstance(data, list):
        values = read_public(path)
        return {"file": name, "kind": "public", "public_signals": len(values), "values": [str(v) for v in values]}
    if isinstance(data, dict) and "pi_a" in data:
        proof = read_proof(path)
        return {
            "file": name,
            "kind": "proof",
            "protocol": data.get("protocol", "groth16"),
            "curve": proof.curve.name,
            "curve_named_in_file": "curve" in data,
            "pi_a_infinity": proof.pi_a is None,
            "pi_b_infinity": proof.pi_b is None,
            "pi_c_infinity": proof.pi_c is None,
        }
    if isinstance(data, dict) and ("IC" in data or "vk_alpha_1" in data):
        vk = read_vkey(path)
        return {
            "file": name,
            "kind": "verification_key",
            "protocol": "groth16",
            "curve": vk.curve.name,
            "public_signals": vk.n_public,
            "ic_points": len(vk.ic),
            "has_alphabeta": "vk_alphabeta_12" in data,
        }
    if isinstance(data, dict):  # input.json, if it reads as the witness calculator reads one
        from engine.witness.inputs import normalise_inputs
        from engine.witness.errors import WitnessInputError

        try:
            inputs = normalise_inputs(data, name)
        except WitnessInputError:
            inputs = None
        if inputs:
            return {"file": name, "kind": "inputs", "signals": len(inputs),
                    "input_values": sum(len(v) for v in inputs.values()),
                    "names": [f"{k}[{len(v)}]" if len(v) > 1 else k for k, v in inputs.items()]}
    raise FormatError(name, "is JSON but not a proof, public signals, verification key or circuit inputs")


# ---------------------------------------------------------------- text

_LABELS = {
    "custom_gates": "custom gates",
    "public_outputs": "public outputs", "public_inputs": "public inputs", "public_signals": "public signals",
    "private_inputs": "private inputs", "private_vars": "private wires", "domain_size": "domain size",
    "log_domain": "log2(domain)", "coefficients_a": "coefficients (A)", "coefficients_b": "coefficients (B)",
    "prime_name": "prime name", "circuit_hash": "circuit hash", "ic_points": "IC points", "w0": "w[0]",
    "curve_named_in_file": "curve named in file", "witness_values": "values", "input_values": "input values",
    "circom_runtime": "circom runtime", "has_alphabeta": "has vk_alphabeta_12",
    "pi_a_infinity": "pi_a at infinity", "pi_b_infinity": "pi_b at infinity", "pi_c_infinity": "pi_c at infinity",
}


def render(summary: dict) -> str:
    """Human text: `label: value` lines, then the section table for binary files."""
    lines = []
    rows = [(k, v) for k, v in summary.items() if k not in ("sections", "values", "footprint", "names")]
    width = max(len(_LABELS.get(k, k)) for k, _ in rows)
    for k, v in rows:
        text = shown_path(v) if k == "file" else _text(v)
        if k == "curve" and v is None and summary.get("prime_name"):  # a prime that no supported curve has
            name = summary["prime_name"]
            text += f" ({'prime ' + name if name != 'unknown' else 'an unknown prime'}: not bn128's or bls12381's, " \
                    "so not one this engine proves with)"
        lines.append(f"{_LABELS.get(k, k) + ':':<{width + 1}} {text}")
    if "names" in summary:
        names = summary["names"]
        lines.append(f"{'names:':<{width + 1}} {', '.join(names[:20]) + (', ...' if len(names) > 20 else '')}")
    if "values" in summary:
        vals = summary["values"]
        shown = vals[:10] + (["..."] if len(vals) > 10 else [])
        lines.append(f"{'values:':<{width + 1}} {', '.join(shown) if shown else '(none)'}")
    if "footprint" in summary:
        fp = summary["footprint"]
        lines.append(f"{'footprint:':<{width + 1}} {fp.get('summary') or fp.get('error')}")
    if "sections" in summary:
        lines.append("sections:")
        for s in summary["sections"]:
            label = f"{s['id']} ({s['name']})" if s["name"] else str(s["id"])
            lines.append(f"  {label:<22} {s['size']:>14,} bytes at offset {s['offset']:,}")
    return "\n".join(escaped(line) for line in lines)  # a file's own names: one line each, not the terminal's


def _text(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, dict) and "gates" in v:  # an .r1cs's custom gates
        uses = f"{v['uses']} use{'s' * (v['uses'] != 1)}"
        return f"{', '.join(v['gates'])} ({uses}; PLONK only: setup and prove --r1cs refuse it)"
    if isinstance(v, int):
        return f"{v:,}" if v >= 10000 else str(v)
    return str(v)

