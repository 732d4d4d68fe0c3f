"""A host interpreter for the few PTX integer instructions that cuda_kernels/gen_mont_eo.py and
gen_mont_split.py emit (32-bit multiply-adds with carry, additions, subtractions, select), so the generated
chains are checked against Python integers without a GPU."""
from __future__ import annotations

M32 = 0xFFFFFFFF


def run(lines: list[str], operands: dict[int, int], n_out: int, stats: dict | None = None) -> list[int]:
    """Execute `lines` (the asm body, one instruction a line); operands maps %k -> value for the
    inputs and immediates; returns the values written to %0 .. %(n_out-1).  stats["dropped"]
    counts the carries that instructions without .cc lost."""
    regs: dict[str, int] = {}
    preds: dict[str, bool] = {}
    cf = None  # the carry flag: None until an instruction writes it

    def val(tok: str) -> int:
        if tok.startswith("%"):
            k = int(tok[1:])
            return regs[tok] if tok in regs else operands[k]
        if tok[0].isdigit():
            return int(tok, 0) & M32
        return regs[tok]  # a KeyError here is a read of a register never written

    for line in lines:
        line = line.strip().rstrip(";")
        if line in ("{", "}") or line.startswith(".reg"):
            continue
        op, rest = line.split(None, 1)
        args = [a.strip() for a in rest.split(",")]
        parts = op.split(".")
        base = parts[0]
        writes_cc = "cc" in parts
        if base in ("mad", "madc", "mul"):
            a, b = val(args[1]), val(args[2])
            prod = a * b
            word = prod & M32 if "lo" in parts else prod >> 32
            total = word + (val(args[3]) if base != "mul" else 0)
            if base == "madc":
                assert cf is not None, line
                total += cf
        elif base in ("add", "addc"):
            total = val(args[1]) + val(args[2])
            if base == "addc":
                assert cf is not None, line
                total += cf
        elif base in ("sub", "subc"):
            total = val(args[1]) - val(args[2])
            if base == "subc":
                assert cf is not None, line
                total -= cf
            if writes_cc:
                cf = 1 if total < 0 else 0  # borrow
            regs[args[0]] = total & M32
            continue
        elif base == "setp":
            assert parts[1] == "eq"
            preds[args[0]] = val(args[1]) == val(args[2])
            continue
        elif base == "selp":
            regs[args[0]] = val(args[1]) if preds[args[3]] else val(args[2])
            continue
        else:
            raise ValueError(f"unsupported instruction: {line}")
        if writes_cc:
            cf = total >> 32
            assert cf in (0, 1, 2) and (cf <= 1), line
        elif total >> 32:
            # a carry the chain drops: allowed only where the generator says it is dropped mod 2^(32n)
            if stats is not None:
                stats["dropped"] = stats.get("dropped", 0) + 1
        regs[args[0]] = total & M32
    return [regs[f"%{k}"] for k in range(n_out)]
