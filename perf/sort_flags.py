"""The bucket sort's settings as command-line flags (perf/prove.py, perf/c2.py): each sets one of
engine/backends/gpu/msm_sort.py's module settings before any key is loaded, so A/B runs need no edits."""
from __future__ import annotations

import argparse

from script_args import curve_list, optional

# msm_sort.SORTS, read at the parse (a typo was taken as the sort, and failed in the first MSM after the key load)
SORTS = ("auto", "direct", "binned")


def add(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--sort", choices=SORTS, default=None, help="the bucket sort (msm_sort.SORT: auto, direct, binned)")
    ap.add_argument("--witness-bins", type=int, choices=(0, 1), default=None,
                    help="whether a big proof's witness sort takes the bins where granted (msm_sort.WITNESS_BINS)")
    ap.add_argument("--binned-curves", type=optional(curve_list), default=None,
                    help="comma list: the curves whose keys are granted the bins (msm_sort.BINNED_CURVES)")


def apply(args: argparse.Namespace) -> None:
    from engine.backends.gpu import msm_sort as gsort  # noqa: PLC0415

    if args.sort is not None:
        gsort.SORT = args.sort
    if args.witness_bins is not None:
        gsort.WITNESS_BINS = bool(args.witness_bins)
    if args.binned_curves is not None:
        gsort.BINNED_CURVES = frozenset(v for v in args.binned_curves.split(",") if v)
