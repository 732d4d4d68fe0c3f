"""Where footprint.plan_key's candidates end: folds and sizes past the MSM sort's 32-bit ranges (a 2^28
domain's H has no full-fold plan: n * fold reaches 2^31), and the environment's bound on the witness MSMs' window."""
from __future__ import annotations

from engine.backends.gpu.msm import NoPlanError
from engine.env_setting import config_error, integer
from engine.errors import BudgetError


# GROTH16_WITNESS_MAX_WINDOW's range: msm.plan_msm tries windows of 2 bits up to its max_c, which is at most
# footprint.MAX_WINDOW_BITS (22): 1 left it no window ("no MSM plan ... allow a smaller fold or the host tier"),
# and a bound above 22 bounds nothing.
WINDOW_BITS = (2, 22)


def witness_max_window(max_c: int) -> int:
    """max_c, or GROTH16_WITNESS_MAX_WINDOW where that is smaller (A/B measurements); a value that is not a window
    width is one ConfigError naming the variable (int() of it was a ValueError traceback under `info`)."""
    least, most = WINDOW_BITS  # (config_error imports engine.config, msgspec, only for a bad value)
    bound = integer("GROTH16_WITNESS_MAX_WINDOW", None, config_error, least=least, most=most,
                    what="the witness MSMs' largest window in bits")
    return max_c if bound is None else min(max_c, bound)


def plannable(make, *args):
    """make(*args), or None where the MSM sort's ranges hold no plan for it (msm.NoPlanError)."""
    try:
        return make(*args)
    except NoPlanError:
        return None


def no_plan_error(label: str, shape, fold, tier: str) -> BudgetError:
    """The refusal when no candidate has MSM plans at all (every fold allowed is past the sort's ranges)."""
    return BudgetError(
        f"{label}: no MSM plan for its {shape.n_wires:,} wires and {shape.domain:,}-row domain at fold {fold} on "
        f"the {tier} tier: the bucket sort needs n x fold < 2^31 points and n x windows < 2^32 entries; allow "
        f"a smaller fold or the host tier")
