"""`python -m engine cache [list|clear|path]`: the GPU backend's key cache (engine/formats/key_cache.py).

`list` shows each entry with its zkey and whether it can still be served;
`clear` removes every entry (`--stale`, for both: only those whose zkey is gone
or has changed); `path` prints the directory (--quiet: nothing printed on success, as for every command; --json: one
JSON object, an error a JSON line on stderr).  The directory is --dir, else
$GROTH16_KEY_CACHE, else the default, the same rule the prover follows.
"""
from __future__ import annotations

import argparse
import json
import os
import time

from engine.paths import shown


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "cache", help="list or clear the cache of device-ready keys",
        description="The GPU backend keeps what it derives from each .zkey (the constraint matrices in the "
        "device's layout) in a cache directory, so later loads only read.  Entries are keyed by the zkey's "
        "size, modification time and sampled content, so a changed zkey is never served stale.",
    )
    p.add_argument("action", nargs="?", choices=("list", "clear", "path"), default="list")
    p.add_argument("--dir", metavar="DIR", help="the cache directory (default: $GROTH16_KEY_CACHE, else "
                   "$XDG_CACHE_HOME/groth16-engine/keys, ~/.cache/... where that is unset)")
    p.add_argument("--stale", action="store_true",
                   help="clear or list: only entries whose zkey is gone or changed")
    out = p.add_mutually_exclusive_group()  # as every command's (engine/progress.py's add_output_flags)
    out.add_argument("--quiet", action="store_true", help="nothing printed on success (errors still are)")
    out.add_argument("--json", action="store_true", help="print the result as JSON (an error as a JSON line)")
    p.set_defaults(func=run)


_MISSING = " (no such directory: nothing is cached there yet)"


def run(args: argparse.Namespace) -> int:
    from engine.errors import EngineError, InputFileError
    from engine.formats.key_cache import KeyCache, resolve_dir

    if args.dir is not None and not args.dir.strip():  # `--dir "$UNSET"` cleared the default cache
        raise EngineError("--dir is empty: name the key cache's directory, or leave --dir out for the default")
    where = resolve_dir(args.dir)
    source = "--dir" if args.dir is not None else "$GROTH16_KEY_CACHE" if os.environ.get(
        "GROTH16_KEY_CACHE", "").strip() else "the default"  # (it said --dir where the variable named it)
    if where is None:  # (it said "--dir or $GROTH16_KEY_CACHE says so", whichever it was)
        setting = f"--dir {args.dir}" if args.dir is not None else \
            f"$GROTH16_KEY_CACHE={os.environ['GROTH16_KEY_CACHE']}"
        raise EngineError(f"{setting}: the key cache is off: nothing to show")
    if os.path.exists(where) and not os.path.isdir(where):  # was "0 entries" (list) or "removed 0" (clear)
        raise InputFileError(where, f"is not a directory ({source} names the key cache's directory)")
    cache = KeyCache(where)
    exists = True
    if args.action != "path":
        try:
            os.listdir(where)
        except FileNotFoundError:  # no cache yet: nothing to list or clear (said, for a --dir with a typo: it
            exists = False         # read as an empty cache)
        except OSError as exc:  # was "0 entries" or "removed 0 file(s)", exit 0
            reason = "permission denied" if isinstance(exc, PermissionError) else exc.strerror or str(exc)
            raise InputFileError(where, f"cannot read the key cache's directory: {reason}") from None
    if args.action == "path":
        if args.stale:  # was ignored without a word
            raise EngineError("--stale picks entries to clear or list; `cache path` names the directory only")
        if not args.quiet:
            print(json.dumps({"event": "result", "dir": str(where)}) if args.json else where)
        return 0
    if args.action == "clear":
        removed, freed = cache.clear(stale_only=args.stale)
        if cache.failures:  # was "removed 0 file(s)" and exit 0, with a log line per file
            path, reason = cache.failures[0]
            raise InputFileError(where, f"could not remove {len(cache.failures)} file(s) (removed {removed}): "
                                 f"{reason} ({os.path.basename(path)} first)")
        if args.json:
            print(json.dumps({"event": "result", "dir": str(where), "exists": exists, "removed": removed,
                              "bytes": freed}))
        elif not args.quiet:
            print(f"{shown(where)}: removed {removed} file(s), {freed / 2**20:.1f} MiB{_MISSING * (not exists)}")
        return 0
    rows = []
    for info in cache.entries():
        ident = info.identity
        stale = cache.is_stale(info)
        if args.stale and not stale:  # `list --stale`: what `clear --stale` would remove (it listed everything)
            continue
        rows.append({"entry": info.path, "bytes": info.nbytes, "zkey": ident.zkey_path if ident else None,
                     "layout": ident.layout if ident else None, "stale": stale, "created": info.created})
    # a load killed while it wrote its entry left a partial one (as large as the key's): shown, or the disk it
    # takes was nowhere to be seen (`cache clear` and the next entry stored remove them)
    partial = [{"file": path, "bytes": nbytes} for path, nbytes in cache.partial()]
    if args.json:
        print(json.dumps({"event": "result", "dir": str(where), "exists": exists, "entries": rows,
                          "partial": partial}))
        return 0
    if args.quiet:  # `cache list --quiet`: the directory could be read (exit 0), as a script may want to know
        return 0
    print(f"{shown(where)}: {len(rows)} entr{'y' if len(rows) == 1 else 'ies'}, "
          f"{sum(r['bytes'] for r in rows) / 2**20:.1f} MiB{_MISSING * (not exists)}")
    for r in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created"])) if r["created"] else "?"
        state = "stale" if r["stale"] else "current"
        zkey = shown(r["zkey"]) if r["zkey"] else "(unreadable entry)"
        print(f"  {r['bytes'] / 2**20:9.1f} MiB  {when}  {state:<7}  {zkey}")
    if partial:
        print(f"  and {len(partial)} partial entr{'y' if len(partial) == 1 else 'ies'} of a load that was killed "
              f"while it wrote, {sum(p['bytes'] for p in partial) / 2**20:.1f} MiB (`cache clear` removes them)")
    return 0
